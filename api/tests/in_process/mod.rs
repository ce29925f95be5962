//! A gateway served in the test's own process (not the binary: that is `support`), and its log
//! captured in memory, for the tests in `api/tests/` that read what it wrote.

use std::io::Write;
use std::sync::{Arc, Mutex};

use shardgate_api::config::{LogConfig, LogFormat};
use shardgate_api::{Application, Config};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// An [`Application`] built from a config and served in a task until [`Served::stop`].
pub struct Served {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    stop: oneshot::Sender<()>,
    server: JoinHandle<anyhow::Result<()>>,
}

impl Served {
    /// Builds the application of `config` and serves it.
    pub async fn start(config: Config) -> Self {
        let app = Application::build(config).await.unwrap();
        let base = format!("http://127.0.0.1:{}", app.port());
        let (stop, stopped) = oneshot::channel::<()>();
        let server = tokio::spawn(app.run_until(async move {
            stopped.await.ok();
        }));
        Self { base, stop, server }
    }

    /// Stops serving and waits until the server has ended.
    pub async fn stop(self) {
        self.stop.send(()).unwrap();
        self.server.await.unwrap().unwrap();
    }
}

/// Everything logged (as text) since [`CapturedLog::install`].
#[derive(Clone, Default)]
pub struct CapturedLog(Arc<Mutex<Vec<u8>>>);

impl CapturedLog {
    /// Installs a text log at `filter` that writes here, and returns it.
    pub fn install(filter: &str) -> Self {
        let logs = Self::default();
        let log = LogConfig { filter: filter.to_owned(), format: LogFormat::Text };
        shardgate_api::observability::telemetry::init_with_writer(&log, logs.clone());
        logs
    }

    /// What was logged so far.
    pub fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

impl Write for CapturedLog {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for CapturedLog {
    type Writer = CapturedLog;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}
