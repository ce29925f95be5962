//! Connection hygiene: what a client can do without a token to connections and metrics. Request
//! heads that never finish and idle keep-alive connections are closed on deadlines; a crowd of
//! them beyond the connection cap does not keep new clients or the probes out; odd methods do not
//! grow `/metrics`. Each wait is bounded (10 s); no test asserts a timing.

use std::collections::BTreeSet;
use std::time::Duration;

use futures::StreamExt;
use reqwest::{Method, StatusCode};
use serde_json::json;
use shardgate_tests::{Backend, TestApp, expect_json, metric};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The longest any step of these tests waits.
const BOUND: Duration = Duration::from_secs(10);

/// A whole request for `/healthz`.
const HEALTHZ: &[u8] = b"GET /healthz HTTP/1.1\r\nHost: gateway\r\n\r\n";

/// The gateway's address, `127.0.0.1:<port>`.
fn address(app: &TestApp) -> String {
    app.base_url.trim_start_matches("http://").to_owned()
}

/// A client with no connection pool: every request opens a connection of its own, so none
/// reuses one the server closed.
fn fresh_client() -> reqwest::Client {
    reqwest::Client::builder().pool_max_idle_per_host(0).timeout(BOUND).build().unwrap()
}

/// Reads until the server closes the connection; the bytes read before. Panics if it stays open
/// for [`BOUND`].
async fn read_until_closed(stream: &mut TcpStream) -> Vec<u8> {
    let mut received = Vec::new();
    let read = tokio::time::timeout(BOUND, async {
        let mut buffer = [0u8; 4096];
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(n) => received.extend_from_slice(&buffer[..n]),
            }
        }
    })
    .await;
    assert!(read.is_ok(), "the server kept the connection open for {BOUND:?}");
    received
}

/// Reads one response with a `content-length` (the head and that many body bytes).
/// Sends `method_and_path` with `token` and the JSON `body` on a new connection; the connection
/// and the answer read off it.
async fn send_json_request(app: &TestApp, method_and_path: &str, token: &str, body: &str) -> (TcpStream, String) {
    let request = format!(
        "{method_and_path} HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(address(app)).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let answer = read_response(&mut stream).await;
    (stream, answer)
}

async fn read_response(stream: &mut TcpStream) -> String {
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    tokio::time::timeout(BOUND, async {
        loop {
            let n = stream.read(&mut buffer).await.expect("the response arrives");
            assert!(n > 0, "the connection closed before the response: {}", String::from_utf8_lossy(&received));
            received.extend_from_slice(&buffer[..n]);
            let text = String::from_utf8_lossy(&received);
            if let Some(end) = text.find("\r\n\r\n") {
                let length = text[..end]
                    .lines()
                    .find_map(|line| {
                        line.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_owned())
                    })
                    .and_then(|v| v.parse::<usize>().ok())
                    .unwrap_or(0);
                if received.len() >= end + 4 + length {
                    return;
                }
            }
        }
    })
    .await
    .expect("the response arrives within the bound");
    String::from_utf8_lossy(&received).into_owned()
}

#[tokio::test]
async fn junk_methods_share_one_metric_label_and_leave_the_metrics_small() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let answers: Vec<StatusCode> = futures::stream::iter(0..20_000)
        .map(|i| {
            let method = Method::from_bytes(format!("JUNK{i:05}").as_bytes()).unwrap();
            let path = if i % 2 == 0 { "/healthz".to_owned() } else { format!("/nowhere/{i}") };
            let request = app.client.request(method, app.url(&path)).send();
            async move { request.await.expect("the server answers").status() }
        })
        .buffer_unordered(8)
        .collect()
        .await;
    assert_eq!(answers.len(), 20_000);
    assert!(answers.iter().all(StatusCode::is_client_error), "every junk request gets a 4xx");

    let text = app.client.get(app.url("/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(text.len() < 100_000, "/metrics is {} bytes after 20,000 junk methods", text.len());
    assert!(!text.contains("JUNK"), "a client's method never becomes a label value");
    let samples: Vec<&str> = text.lines().filter(|line| line.starts_with("shardgate_http_requests_total{")).collect();
    assert!(
        samples.iter().any(|line| line.contains(r#"method="other",route="unauthenticated",status="405""#)),
        "an unknown method on a known route, without a token: {samples:#?}"
    );
    assert!(
        samples.iter().any(|line| line.contains(r#"method="other",route="unauthenticated",status="404""#)),
        "an unknown method on an unknown path, without a token: {samples:#?}"
    );
    assert!(!text.contains("/nowhere/"), "raw paths are not label values");
    assert!(samples.len() <= 10, "the label set stays small: {samples:#?}");
}

/// The label sets of `shardgate_http_requests_total` in the gateway's `/metrics`.
async fn request_series(app: &TestApp) -> BTreeSet<String> {
    let text = app.client.get(app.url("/metrics")).send().await.unwrap().text().await.unwrap();
    text.lines()
        .filter_map(|line| line.strip_prefix("shardgate_http_requests_total{"))
        .filter_map(|rest| rest.rsplit_once("} ").map(|(labels, _)| labels.to_owned()))
        .collect()
}

/// Every route of the API document with its parameters filled in, plus paths the API does not
/// have, breaks the path rules on, or finds too long.
async fn every_path(app: &TestApp) -> Vec<String> {
    let document: serde_json::Value =
        app.client.get(app.url("/openapi.json")).send().await.unwrap().json().await.unwrap();
    let mut paths: Vec<String> = document["paths"]
        .as_object()
        .unwrap()
        .keys()
        .map(|template| template.replace("{tenant}", "acme").replace(['{', '}'], ""))
        .collect();
    paths.extend(
        ["/nowhere", "/v1/tenants/acme/nothing/here", "/v1/tenants/Not%20Valid/blobs/x", "/v1/../admin"]
            .map(str::to_owned),
    );
    paths.push(format!("/v1/tenants/acme/blobs/{}", "x".repeat(9000)));
    paths
}

#[tokio::test]
async fn refusals_before_authentication_share_a_fixed_set_of_series() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    app.create_tenant("acme").await;
    let before = request_series(&app).await;

    let paths = every_path(&app).await;
    assert!(paths.len() > 30, "{paths:?}");
    let methods = ["GET", "HEAD", "PUT", "POST", "DELETE", "PATCH", "OPTIONS", "TRACE", "JUNK", "PROPFIND"];
    let requests: Vec<(String, &str, Option<&str>)> = paths
        .iter()
        .flat_map(|path| {
            methods
                .iter()
                .flat_map(move |method| [None, Some("not-a-token")].map(|token| (path.clone(), *method, token)))
        })
        .collect();
    let answers: Vec<StatusCode> = futures::stream::iter(requests)
        .map(|(path, method, token)| {
            let mut request = app.client.request(Method::from_bytes(method.as_bytes()).unwrap(), app.url(&path));
            if let Some(token) = token {
                request = request.bearer_auth(token);
            }
            async move { request.send().await.expect("the server answers").status() }
        })
        .buffer_unordered(8)
        .collect()
        .await;
    let refused: BTreeSet<u16> =
        answers.iter().filter(|s| s.is_client_error() || s.is_server_error()).map(StatusCode::as_u16).collect();
    assert!(answers.len() > 600 && refused.len() >= 4, "{} requests, refused with {refused:?}", answers.len());

    let after = request_series(&app).await;
    let new: Vec<&String> = after.difference(&before).collect();
    let status_of =
        |labels: &str| labels.rsplit_once("status=\"").and_then(|(_, s)| s.trim_end_matches('"').parse::<u16>().ok());
    for labels in &new {
        let error = status_of(labels).is_none_or(|status| status >= 400);
        assert!(!error || labels.contains(r#"route="unauthenticated""#), "a refusal counted under its route: {labels}");
    }
    // The anonymous flood added at most one series per method label and refusal status, plus
    // the few open routes that answered (probes, the scrape, the API document, its page).
    let unauthenticated = new.iter().filter(|labels| labels.contains(r#"route="unauthenticated""#)).count();
    assert!(unauthenticated <= 10 * refused.len(), "{new:#?}");
    assert!(new.len() <= 10 * refused.len() + 20, "{} new series: {new:#?}", new.len());

    // A verified caller's requests keep their route, refusals included.
    let token = app.rw_token("acme");
    let missing = app.client.get(app.url("/v1/tenants/acme/collections/c/records/k")).bearer_auth(&token).send();
    assert_eq!(missing.await.unwrap().status(), StatusCode::NOT_FOUND);
    let wrong = app.client.patch(app.url("/v1/tenants/acme/collections/c/records/k")).bearer_auth(&token).send();
    assert_eq!(wrong.await.unwrap().status(), StatusCode::METHOD_NOT_ALLOWED);
    let series = request_series(&app).await;
    let record = r#"route="/v1/tenants/{tenant}/collections/{collection}/records/{key}""#;
    for expected in
        [format!(r#"method="GET",{record},status="404""#), format!(r#"method="PATCH",{record},status="405""#)]
    {
        assert!(series.contains(&expected), "{expected} in {series:#?}");
    }
}

/// An instance on SQLite whose connections must send a request head within `header`, are
/// closed after `idle` without a request, and number at most `cap` (none: the default).
async fn spawn_with_deadlines(header: Duration, idle: Duration, cap: Option<usize>) -> TestApp {
    TestApp::spawn_with(Backend::Sqlite, |config| {
        if cap.is_some() {
            config.limits.max_connections = cap;
        }
        config.limits.header_read_timeout = header;
        config.limits.keep_alive_idle_timeout = idle;
    })
    .await
}

#[tokio::test]
async fn a_request_head_that_never_finishes_is_closed_at_the_header_deadline() {
    let app = spawn_with_deadlines(Duration::from_secs(1), Duration::from_secs(600), None).await;
    let mut stream = TcpStream::connect(address(&app)).await.unwrap();
    stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: gateway\r\nX-Slow: ").await.unwrap();
    let answer = read_until_closed(&mut stream).await;
    assert!(answer.is_empty(), "closed without an answer: {}", String::from_utf8_lossy(&answer));

    let mut silent = TcpStream::connect(address(&app)).await.unwrap();
    read_until_closed(&mut silent).await;

    assert_eq!(
        metric(&app.client, &app.base_url, "shardgate_connections_closed_total{reason=\"header_timeout\"}").await,
        2.0
    );
    let response = app.send(Method::GET, "/healthz", None, None, &[]).await;
    assert_eq!(response.status(), StatusCode::OK, "other clients are served");
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_at_the_idle_deadline() {
    let app = spawn_with_deadlines(Duration::from_secs(600), Duration::from_millis(500), None).await;
    let mut stream = TcpStream::connect(address(&app)).await.unwrap();
    stream.write_all(HEALTHZ).await.unwrap();
    let first = read_response(&mut stream).await;
    assert!(first.starts_with("HTTP/1.1 200"), "{first}");
    stream.write_all(HEALTHZ).await.unwrap();
    let second = read_response(&mut stream).await;
    assert!(second.starts_with("HTTP/1.1 200"), "the connection is kept alive between requests: {second}");

    let rest = read_until_closed(&mut stream).await;
    assert!(rest.is_empty(), "nothing more was sent: {}", String::from_utf8_lossy(&rest));
    assert_eq!(
        metric(&app.client, &app.base_url, "shardgate_connections_closed_total{reason=\"idle_timeout\"}").await,
        1.0
    );
}

#[tokio::test]
async fn a_slow_upload_in_progress_outlives_both_deadlines() {
    let app = spawn_with_deadlines(Duration::from_millis(500), Duration::from_millis(500), None).await;
    app.create_tenant("acme").await;
    let token = app.rw_token("acme");
    // Six pieces, the first at once (with the head), then 700 ms apart: the body takes 3.5 s,
    // seven times either deadline.
    let pieces = futures::stream::iter(0..6u8).then(|i| async move {
        if i > 0 {
            tokio::time::sleep(Duration::from_millis(700)).await;
        }
        Ok::<Vec<u8>, std::io::Error>(vec![i; 10_000])
    });
    let response = fresh_client()
        .put(app.url("/v1/tenants/acme/blobs/slow.bin"))
        .bearer_auth(&token)
        .header("content-type", "application/octet-stream")
        .body(reqwest::Body::wrap_stream(pieces))
        .send()
        .await
        .expect("the upload is answered");
    expect_json(response, StatusCode::CREATED).await;
    let blob = fresh_client().get(app.url("/v1/tenants/acme/blobs/slow.bin")).bearer_auth(&token).send().await.unwrap();
    assert_eq!(blob.status(), StatusCode::OK);
    assert_eq!(blob.bytes().await.unwrap().len(), 60_000);
}

#[tokio::test]
async fn idle_and_half_sent_connections_beyond_the_cap_do_not_keep_clients_out() {
    // Long deadlines: only the cap is at work here.
    let app = spawn_with_deadlines(Duration::from_secs(600), Duration::from_secs(600), Some(32)).await;
    app.create_tenant("acme").await;
    let token = app.rw_token("acme");
    let mut crowd = Vec::new();
    for i in 0..400 {
        let mut stream = TcpStream::connect(address(&app)).await.expect("the listen backlog takes the connection");
        if i % 2 == 1 {
            stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: gateway\r\nX-Slow: ").await.unwrap();
        }
        crowd.push(stream);
    }

    let client = fresh_client();
    let health = tokio::time::timeout(BOUND, client.get(app.url("/healthz")).send())
        .await
        .expect("/healthz answers while the crowd holds its connections")
        .expect("/healthz answers");
    assert_eq!(health.status(), StatusCode::OK);
    let put = client
        .put(app.url("/v1/tenants/acme/collections/docs/records/k"))
        .bearer_auth(&token)
        .json(&json!({"served": true}))
        .send()
        .await
        .expect("a new client is served");
    assert_eq!(put.status(), StatusCode::CREATED);
    let get = client
        .get(app.url("/v1/tenants/acme/collections/docs/records/k"))
        .bearer_auth(&token)
        .send()
        .await
        .expect("a new client is served");
    let record = expect_json(get, StatusCode::OK).await;
    assert_eq!(record["value"], json!({"served": true}), "{record}");

    let metrics = client.get(app.url("/metrics")).send().await.unwrap().text().await.unwrap();
    let open = metrics
        .lines()
        .find_map(|line| line.strip_prefix("shardgate_connections_open "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .expect("the open connections gauge");
    assert!(open <= 32.0, "never more connections open than the cap: {open}");
    let crowded_out = metrics
        .lines()
        .find_map(|line| line.strip_prefix("shardgate_connections_closed_total{reason=\"crowded_out\"} "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .expect("the crowded-out counter");
    assert!(crowded_out >= 1.0, "idle connections made room: {metrics}");
    drop(crowd);
}

#[tokio::test]
async fn at_the_cap_idle_connections_close_only_when_a_new_one_needs_room() {
    let app = spawn_with_deadlines(Duration::from_secs(600), Duration::from_secs(600), Some(2)).await;
    let mut first = TcpStream::connect(address(&app)).await.unwrap();
    let mut second = TcpStream::connect(address(&app)).await.unwrap();
    for stream in [&mut first, &mut second] {
        stream.write_all(HEALTHZ).await.unwrap();
        let answer = read_response(stream).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }
    // Both slots are held by idle keep-alive connections, well past the 100 ms grace: while no
    // other client comes, nothing needs their room and they stay open.
    tokio::time::sleep(Duration::from_millis(500)).await;
    for stream in [&mut first, &mut second] {
        stream.write_all(HEALTHZ).await.unwrap();
        let answer = read_response(stream).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "kept open at the cap: {answer}");
    }

    let client = fresh_client();
    let third = client.get(app.url("/healthz")).send().await.expect("a third client gets in");
    assert_eq!(third.status(), StatusCode::OK);
    let crowded_out =
        metric(&client, &app.base_url, r#"shardgate_connections_closed_total{reason="crowded_out"}"#).await;
    assert!(crowded_out >= 1.0, "an idle connection made room");
}

/// An answer given before the request's body was read (here 405 to a `PATCH` with a body) says
/// `Connection: close`, and the server then closes the connection: a keep-alive client learns
/// not to send its next request into it. A request whose body was read keeps the connection.
#[tokio::test]
async fn an_answer_that_leaves_the_request_body_unread_closes_the_connection_and_says_so() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let token = app.admin_token();
    let body = r#"{"action": "reset", "reason": null}"#;
    let (mut stream, answer) = send_json_request(&app, "PATCH /v1/admin/shards/shard-0/breaker", &token, body).await;
    assert!(answer.starts_with("HTTP/1.1 405"), "{answer}");
    assert!(answer.to_ascii_lowercase().contains("\r\nconnection: close\r\n"), "{answer}");
    let rest = read_until_closed(&mut stream).await;
    assert!(rest.is_empty(), "nothing more was sent: {}", String::from_utf8_lossy(&rest));

    // A body the handler read: the connection stays open for the next request.
    app.create_tenant("acme").await;
    let token = app.rw_token("acme");
    let record = r#"{"n": 1}"#;
    let (mut stream, answer) =
        send_json_request(&app, "PUT /v1/tenants/acme/collections/c/records/k", &token, record).await;
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
    assert!(!answer.to_ascii_lowercase().contains("connection: close"), "{answer}");
    stream.write_all(HEALTHZ).await.unwrap();
    let next = read_response(&mut stream).await;
    assert!(next.starts_with("HTTP/1.1 200"), "the connection is kept alive: {next}");
}
