//! A `jwks_url` may carry credentials (`user:password@`) or a key in its query: neither is ever
//! shown, not in `/readyz` (which needs no token), nor in a fetch's `last_error`, nor in the
//! start-up banner, nor in any log line. Only scheme, host, port and path are.

use std::time::Duration;

use serde_json::Value;
use support::Process;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[expect(dead_code, reason = "this story uses part of the process harness")]
mod support;

/// The password in the key-set URLs.
const PASSWORD: &str = "pw-secret-7731";
/// The query key in the key-set URLs.
const QUERY_KEY: &str = "sekrit-9921";

/// A key server that answers every request with 500 (so the fetch fails and its error names
/// the URL), on a free loopback port; runs until the test ends.
async fn failing_key_server() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buffer = [0u8; 4096];
                let _ = stream.read(&mut buffer).await;
                let answer = "HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
                let _ = stream.write_all(answer.as_bytes()).await;
            });
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_set_url_s_credentials_and_query_are_never_shown() {
    let dir = tempfile::tempdir().unwrap();
    let answering = failing_key_server().await;
    // Nothing listens on this one: the fetch fails to connect.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = |port: u16| format!("http://keys-user:{PASSWORD}@127.0.0.1:{port}/keys?key={QUERY_KEY}");
    let config = dir.path().join("shardgate.toml");
    std::fs::write(
        &config,
        format!(
            "[[auth.issuers]]\nissuer = \"https://answering.example\"\nalgorithm = \"RS256\"\n\
             audience = [\"shardgate\"]\njwks_url = \"{}\"\n\
             jwks_fetch_timeout_secs = 2\n\n\
             [[auth.issuers]]\nissuer = \"https://closed.example\"\nalgorithm = \"RS256\"\n\
             audience = [\"shardgate\"]\njwks_url = \"{}\"\n\
             jwks_fetch_timeout_secs = 2\n",
            url(answering),
            url(closed)
        ),
    )
    .unwrap();
    let server = Process::start(
        &["serve", "--config", config.to_str().unwrap()],
        dir.path(),
        [("SHARDGATE_LOG__FILTER", "debug")],
    );
    let client = reqwest::Client::new();
    server.wait_until_ok(&client, "/healthz").await;

    // Both fetches have failed once /readyz names both errors.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    let readyz = loop {
        let body: Value = client.get(format!("{}/readyz", server.base)).send().await.unwrap().json().await.unwrap();
        let failed = |issuer: &str| body["key_sets"][issuer]["last_error"].is_string();
        if failed("https://answering.example") && failed("https://closed.example") {
            break body;
        }
        assert!(tokio::time::Instant::now() < deadline, "both fetches fail within 15 s: {body}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let shown = readyz.to_string();
    for (issuer, port) in [("https://answering.example", answering), ("https://closed.example", closed)] {
        let expected = format!("http://127.0.0.1:{port}/keys");
        assert_eq!(readyz["key_sets"][issuer]["url"], expected.as_str(), "{shown}");
        let error = readyz["key_sets"][issuer]["last_error"].as_str().unwrap();
        assert!(error.contains(&expected), "the error still names where the keys come from: {error}");
    }

    let log = server.log();
    assert!(log.contains(&format!("keys from http://127.0.0.1:{answering}/keys")), "the banner names the URL:\n{log}");
    assert!(log.contains("the issuer's key set was not fetched"), "the failures are logged:\n{log}");
    for secret in [PASSWORD, QUERY_KEY, "keys-user"] {
        assert!(!shown.contains(secret), "{secret} in /readyz: {shown}");
        assert!(!log.contains(secret), "{secret} in the banner or the log:\n{log}");
    }
}
