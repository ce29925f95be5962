//! A client too slow to send its request body gets 408 `body_timeout` (nothing was done), never
//! the 504 of a gateway that was slow itself.

use std::time::Duration;

use reqwest::StatusCode;
use shardgate_tests::{Backend, TestApp};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[tokio::test]
async fn a_body_that_arrives_too_slowly_is_a_408_and_nothing_is_stored() {
    let app =
        TestApp::spawn_with(Backend::Sqlite, |config| config.limits.request_timeout = Duration::from_secs(1)).await;
    app.create_tenant("acme").await;
    let address = app.base_url.trim_start_matches("http://").to_owned();
    let mut stream = TcpStream::connect(&address).await.unwrap();
    let path = shardgate_tests::record_path("acme", "docs", "slow");
    let head = format!(
        "PUT {path} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\n\
         Content-Length: 40\r\n\r\n{{\"a\":",
        app.rw_token("acme")
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    // The rest of the body never comes.
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut answer)).await;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    assert!(read.is_ok(), "the gateway answers and closes: {answer}");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("application/problem+json") && answer.contains("\"body_timeout\""), "{answer}");
    assert_eq!(app.get_record("acme", "docs", "slow").await.status(), StatusCode::NOT_FOUND);
}
