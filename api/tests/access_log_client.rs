//! The access log names each request's client (the request span's `client`) as
//! `trusted_proxies` resolve it: the address a trusted proxy forwarded, else the peer.

use std::io::Write;
use std::sync::{Arc, Mutex};

use shardgate_api::config::proxies::Cidr;
use shardgate_api::config::{LogConfig, LogFormat};
use shardgate_api::{Application, Config};

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_lines_name_the_forwarded_client_of_a_trusted_proxy() {
    let logs = Captured::default();
    let log = LogConfig { filter: "shardgate_api=debug".to_owned(), format: LogFormat::Text };
    shardgate_api::observability::telemetry::init_with_writer(&log, logs.clone());
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: dir.path().to_path_buf(),
        trusted_proxies: vec![Cidr::parse("127.0.0.1/32").unwrap()],
        ..Config::default()
    };
    let app = Application::build(config).await.unwrap();
    let base = format!("http://127.0.0.1:{}", app.port());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(app.run_until(async move {
        stopped.await.ok();
    }));
    let client = reqwest::Client::new();
    let forwarded = client
        .get(format!("{base}/v1/tenants/acme/collections/c/records/forwarded"))
        .header("x-forwarded-for", "198.51.100.66, 203.0.113.7")
        .send()
        .await
        .unwrap();
    assert_eq!(forwarded.status(), 401);
    let direct = client.get(format!("{base}/v1/tenants/acme/collections/c/records/direct")).send().await.unwrap();
    assert_eq!(direct.status(), 401);
    stop.send(()).unwrap();
    server.await.unwrap().unwrap();

    let text = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    let finished: Vec<&str> = text.lines().filter(|line| line.contains("request finished")).collect();
    assert_eq!(finished.len(), 2, "{text}");
    assert!(finished.iter().any(|line| line.contains("client=203.0.113.7")), "{finished:?}");
    assert!(finished.iter().any(|line| line.contains("client=127.0.0.1")), "{finished:?}");
    assert!(!text.contains("198.51.100.66"), "the client's own hop is never taken: {text}");
}
