//! The `shardgate` binary in a Kubernetes pod: a Service named `shardgate` makes Kubernetes set
//! `SHARDGATE_PORT`, `SHARDGATE_SERVICE_HOST` and friends in every pod of its namespace. The
//! gateway starts anyway and names the variables it ignores.

use std::io::Read;
use std::process::Stdio;
use std::time::Duration;

mod support;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubernetes_service_variables_are_reported_and_do_not_stop_the_gateway() {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = support::shardgate(&["serve", "--listen", &format!("127.0.0.1:{port}")], dir.path())
        .env("SHARDGATE_LOG__FILTER", "warn")
        .env("SHARDGATE_PORT", "tcp://10.96.0.12:8080")
        .env("SHARDGATE_PORT_8080_TCP_PROTO", "tcp")
        .env("SHARDGATE_SERVICE_HOST", "10.96.0.12")
        .env("SHARDGATE_SERVICE_PORT", "8080")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the shardgate binary starts");
    let client = reqwest::Client::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let ready = loop {
        if let Ok(response) = client.get(format!("http://127.0.0.1:{port}/readyz")).send().await
            && response.status().is_success()
        {
            break true;
        }
        if tokio::time::Instant::now() > deadline || child.try_wait().unwrap().is_some() {
            break false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    child.kill().ok();
    child.wait().unwrap();
    // Logs go to standard output.
    let mut logs = String::new();
    child.stdout.take().unwrap().read_to_string(&mut logs).unwrap();
    assert!(ready, "the gateway serves despite the variables: {logs}");
    for variable in
        ["SHARDGATE_PORT", "SHARDGATE_PORT_8080_TCP_PROTO", "SHARDGATE_SERVICE_HOST", "SHARDGATE_SERVICE_PORT"]
    {
        assert!(logs.contains(variable), "a warning names {variable}: {logs}");
    }
}
