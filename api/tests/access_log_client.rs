//! The access log names each request's client (the request span's `client`) as
//! `trusted_proxies` resolve it: the address a trusted proxy forwarded, else the peer.

use in_process::{CapturedLog, Served};
use shardgate_api::Config;
use shardgate_api::config::proxies::Cidr;

mod in_process;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_lines_name_the_forwarded_client_of_a_trusted_proxy() {
    let logs = CapturedLog::install("shardgate_api=debug");
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: dir.path().to_path_buf(),
        trusted_proxies: vec![Cidr::parse("127.0.0.1/32").unwrap()],
        ..Config::default()
    };
    let served = Served::start(config).await;
    let base = &served.base;
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
    served.stop().await;

    let text = logs.text();
    let finished: Vec<&str> = text.lines().filter(|line| line.contains("request finished")).collect();
    assert_eq!(finished.len(), 2, "{text}");
    assert!(finished.iter().any(|line| line.contains("client=203.0.113.7")), "{finished:?}");
    assert!(finished.iter().any(|line| line.contains("client=127.0.0.1")), "{finished:?}");
    assert!(!text.contains("198.51.100.66"), "the client's own hop is never taken: {text}");
}
