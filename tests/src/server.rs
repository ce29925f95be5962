//! A server running in a task of the test's runtime: the gateway or a standalone gatekeeper,
//! built on port 0 and stopped gracefully (or aborted on drop).

use std::sync::Arc;
use std::time::Duration;

use shardgate_api::config::GatekeeperConfig;
use shardgate_api::{Application, Config, Gatekeeper};
use tokio::sync::oneshot;

use crate::clock::TestClock;
use tokio::task::JoinHandle;

/// A running server, stoppable.
#[derive(Debug)]
pub struct RunningServer {
    /// `http://127.0.0.1:<port>`, or `https://localhost:<port>` with TLS.
    pub base_url: String,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<anyhow::Result<()>>>,
}

impl RunningServer {
    /// Builds the application from `config` (which binds the listener) and runs it in a task
    /// until [`RunningServer::stop`] or drop.
    pub async fn start(config: Config, clock: Arc<TestClock>) -> Self {
        let https = config.tls.is_some();
        let app = Application::build_with_clock(config, clock).await.expect("the application builds");
        let port = app.port();
        let (shutdown, signal) = shutdown_signal();
        Self::running(https, port, shutdown, tokio::spawn(app.run_until(signal)))
    }

    /// A standalone gatekeeper (`shardgate gatekeeper`) with `config`, in a task.
    pub async fn start_gatekeeper(config: GatekeeperConfig) -> Self {
        let https = config.tls.is_some();
        let gatekeeper = Gatekeeper::build(config).await.expect("the gatekeeper builds");
        let port = gatekeeper.local_addr().port();
        let (shutdown, signal) = shutdown_signal();
        Self::running(https, port, shutdown, tokio::spawn(gatekeeper.run_until(signal)))
    }

    fn running(https: bool, port: u16, shutdown: oneshot::Sender<()>, task: JoinHandle<anyhow::Result<()>>) -> Self {
        // With TLS, the name the test certificates carry (`TestCa::issue(.., &["localhost", ..])`).
        let base_url = if https { format!("https://localhost:{port}") } else { format!("http://127.0.0.1:{port}") };
        Self { base_url, shutdown: Some(shutdown), task: Some(task) }
    }

    /// Asks the server to shut down gracefully and waits until it has.
    pub async fn stop(mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            shutdown.send(()).ok();
        }
        if let Some(task) = self.task.take() {
            let outcome = tokio::time::timeout(Duration::from_secs(10), task)
                .await
                .expect("the server stops within 10 s")
                .expect("the server task does not panic");
            outcome.expect("the server shuts down cleanly");
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// A sender and the future a server runs until: it ends on a send or when the sender is dropped.
fn shutdown_signal() -> (oneshot::Sender<()>, impl Future<Output = ()> + Send + 'static) {
    let (shutdown, signal) = oneshot::channel::<()>();
    (shutdown, async move {
        signal.await.ok();
    })
}

/// A port that was free a moment ago (for listeners a test must name before they start).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}
