//! Bulkheads: one tenant's stalled uploads (through the API or through one of its valet write
//! URLs) fill only that tenant's cap of requests in progress, so other tenants and the probes are
//! served and the greedy tenant's extra requests are refused at once with 429
//! `tenant_concurrency_limit`; the instance-wide cap stays the last line and never counts probes;
//! a stalled upload is ended after the idle limit with 408 `transfer_stalled` and stores nothing;
//! a download whose client stops reading is cut off and gives its place back.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shardgate_tests::{Backend, TestApp, eventually, expect_json, expect_problem, metric};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

/// Generous bound for what the server does in the background (no test asserts speed).
const WITHIN: Duration = Duration::from_secs(30);

/// An answer read off a raw connection.
#[derive(Debug)]
struct Answer {
    status: u16,
    head: String,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim().eq_ignore_ascii_case(name).then(|| value.trim())
        })
    }

    fn problem(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not a JSON problem ({e}): {}", self.head))
    }
}

/// A `PUT` to `target` (path and query) whose headers promise 1,000,000 bytes and whose body stops
/// after `sent` bytes: a client that stalls. The connection stays open while the stream lives.
async fn stalled_upload(app: &TestApp, target: &str, token: Option<&str>, sent: usize) -> TcpStream {
    let address = app.base_url.trim_start_matches("http://");
    let mut stream = TcpStream::connect(address).await.unwrap();
    let authorization = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    let head = format!("PUT {target} HTTP/1.1\r\nHost: {address}\r\n{authorization}Content-Length: 1000000\r\n\r\n");
    // One write, so the server has read all that was sent when it answers early (its close is
    // then a FIN, not a reset that could lose the answer).
    let mut bytes = head.into_bytes();
    bytes.resize(bytes.len() + sent, 7);
    stream.write_all(&bytes).await.unwrap();
    stream.flush().await.unwrap();
    stream
}

/// Reads one answer (head, and a body of its `Content-Length`) off `stream`; `None` if the
/// connection ends first.
async fn read_answer(mut stream: TcpStream) -> Option<Answer> {
    let mut buffer = Vec::new();
    let mut piece = [0u8; 8192];
    let end_of_head = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = stream.read(&mut piece).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&piece[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..end_of_head]).into_owned();
    let status = head.split(' ').nth(1)?.parse().ok()?;
    let mut answer = Answer { status, head, body: buffer[end_of_head..].to_vec() };
    let length: usize = answer.header("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
    while answer.body.len() < length {
        let n = stream.read(&mut piece).await.ok()?;
        if n == 0 {
            return None;
        }
        answer.body.extend_from_slice(&piece[..n]);
    }
    Some(answer)
}

/// Starts `n` stalled uploads to the targets `target(i)`, each waiting for its answer in a task.
async fn stall_many(
    app: &TestApp,
    n: usize,
    token: Option<&str>,
    target: impl Fn(usize) -> String,
) -> Vec<JoinHandle<Option<Answer>>> {
    let mut waiting = Vec::new();
    for i in 0..n {
        let stream = stalled_upload(app, &target(i), token, 1024).await;
        waiting.push(tokio::spawn(read_answer(stream)));
    }
    waiting
}

/// Waits until `refused` of `waiting` have been answered (the others hold their places, their
/// bodies unsent), then checks every answer is an immediate 429 `tenant_concurrency_limit` with
/// `Retry-After`. Returns the tasks still waiting.
async fn expect_refused(waiting: Vec<JoinHandle<Option<Answer>>>, refused: usize) -> Vec<JoinHandle<Option<Answer>>> {
    let answered = async || (waiting.iter().filter(|task| task.is_finished()).count() >= refused).then_some(());
    assert!(eventually(WITHIN, answered).await.is_some(), "{refused} uploads are refused without their bodies");
    let (answered, pending): (Vec<_>, Vec<_>) = waiting.into_iter().partition(|task| task.is_finished());
    assert_eq!(answered.len(), refused, "only the uploads beyond the cap are answered");
    for task in answered {
        let answer = task.await.unwrap().expect("an answer, not a closed connection");
        assert_eq!(answer.status, 429, "{}", answer.head);
        assert_eq!(answer.header("retry-after"), Some("1"), "{}", answer.head);
        assert_eq!(answer.header("content-type"), Some("application/problem+json"));
        assert_eq!(answer.problem()["code"], "tenant_concurrency_limit");
    }
    pending
}

/// The value of `name{limit="<limit>"}` (a bulkhead metric).
async fn by_limit(app: &TestApp, name: &str, limit: &str) -> f64 {
    metric(&app.client, &app.base_url, &format!("{name}{{limit=\"{limit}\"}}")).await
}

/// Waits until `n` requests hold a place in tenants' bulkheads (read from `/metrics`, which
/// holds none itself).
async fn until_in_progress(app: &TestApp, n: usize) {
    let held =
        async || (by_limit(app, "shardgate_bulkhead_requests_in_progress", "tenant").await == n as f64).then_some(());
    assert!(eventually(WITHIN, held).await.is_some(), "{n} requests are in progress");
}

/// `/healthz`, `/readyz` and `/metrics` answer 200.
async fn probes_answer(app: &TestApp) {
    for path in ["/healthz", "/readyz", "/metrics"] {
        let response = app.client.get(app.url(path)).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
    }
}

/// Another tenant's record and blob calls succeed.
async fn other_tenant_is_served(app: &TestApp, tenant: &str) {
    expect_json(app.put_record(tenant, "notes", "n1", &json!({"ok": true})).await, StatusCode::CREATED).await;
    expect_json(app.get_record(tenant, "notes", "n1").await, StatusCode::OK).await;
    let token = app.rw_token(tenant);
    let blob = app
        .client
        .put(app.url(&format!("/v1/tenants/{tenant}/blobs/small")))
        .bearer_auth(&token)
        .body(vec![1u8; 10_000])
        .send()
        .await
        .unwrap();
    expect_json(blob, StatusCode::CREATED).await;
}

/// A record call of `tenant` refused by its full bulkhead.
async fn expect_tenant_refused(app: &TestApp, tenant: &str) {
    let refused = app.get_record(tenant, "notes", "n1").await;
    assert_eq!(refused.headers()["retry-after"], "1");
    let problem = expect_problem(refused, StatusCode::TOO_MANY_REQUESTS, "tenant_concurrency_limit").await;
    assert!(problem["detail"].as_str().unwrap().contains(&format!("tenant {tenant}")), "{problem}");
}

/// An instance of 32 places with 8 per tenant, whose stalled transfers are never ended (the
/// test ends them), holding tenants `greedy` and `other`; and a read-write token of `greedy`.
async fn greedy_and_other() -> (TestApp, String) {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.limits.max_concurrent_requests = 32;
        c.limits.tenant_concurrent_requests.standard = 8;
        c.limits.transfer_idle_timeout = Duration::from_secs(600);
    })
    .await;
    app.create_tenant("greedy").await;
    app.create_tenant("other").await;
    let greedy = app.rw_token("greedy");
    (app, greedy)
}

/// An instance whose tenants have one place each and whose transfers end after `idle` without
/// a byte, holding tenant `acme`; and a read-write token of `acme`.
async fn acme_with_one_place(idle: Duration) -> (TestApp, String) {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.limits.tenant_concurrent_requests.standard = 1;
        c.limits.transfer_idle_timeout = idle;
    })
    .await;
    app.create_tenant("acme").await;
    let token = app.rw_token("acme");
    (app, token)
}

/// Closes the stalled connections and waits until their places are free again and nothing of
/// their uploads is left.
async fn close_all(app: &TestApp, waiting: Vec<JoinHandle<Option<Answer>>>) {
    for task in waiting {
        task.abort();
    }
    until_in_progress(app, 0).await;
    let gone = async || (app.staged_blob_chunks().await == 0).then_some(());
    assert!(eventually(WITHIN, gone).await.is_some(), "the abandoned uploads leave no chunks");
}

#[tokio::test]
async fn stalled_uploads_of_one_tenant_fill_only_its_own_bulkhead() {
    let (app, greedy) = greedy_and_other().await;

    // 30 uploads that stop sending: 8 hold the tenant's places, 22 are refused at once.
    let waiting = stall_many(&app, 30, Some(&greedy), |i| format!("/v1/tenants/greedy/blobs/stalled/{i}")).await;
    let waiting = expect_refused(waiting, 22).await;
    assert_eq!(waiting.len(), 8);
    until_in_progress(&app, 8).await;

    // Every other request of the greedy tenant is refused at once too; nobody else notices.
    expect_tenant_refused(&app, "greedy").await;
    other_tenant_is_served(&app, "other").await;
    probes_answer(&app).await;
    assert_eq!(by_limit(&app, "shardgate_bulkhead_refusals_total", "tenant").await, 23.0);
    assert_eq!(by_limit(&app, "shardgate_bulkhead_refusals_total", "global").await, 0.0);

    close_all(&app, waiting).await;
    expect_json(app.put_record("greedy", "notes", "n1", &json!({"back": true})).await, StatusCode::CREATED).await;
    let listing = app.send(Method::GET, "/v1/tenants/greedy/blobs", Some(&greedy), None, &[]).await;
    assert_eq!(expect_json(listing, StatusCode::OK).await["items"], json!([]), "no stalled upload became visible");
}

#[tokio::test]
async fn a_tier_cap_above_the_instances_cap_still_leaves_room_for_other_tenants() {
    // The standard tier's cap (256 by default) is far above the instance's cap: a tenant may
    // still hold at most half of the instance (4 of 8).
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.limits.max_concurrent_requests = 8;
        c.limits.transfer_idle_timeout = Duration::from_secs(600);
    })
    .await;
    app.create_tenant("greedy").await;
    app.create_tenant("other").await;
    let greedy = app.rw_token("greedy");

    // 6 uploads that stop sending: 4 hold the tenant's places, 2 are refused at once.
    let waiting = stall_many(&app, 6, Some(&greedy), |i| format!("/v1/tenants/greedy/blobs/stalled/{i}")).await;
    let waiting = expect_refused(waiting, 2).await;
    until_in_progress(&app, 4).await;

    let refused = app.get_record("greedy", "notes", "n1").await;
    let problem = expect_problem(refused, StatusCode::TOO_MANY_REQUESTS, "tenant_concurrency_limit").await;
    assert!(problem["detail"].as_str().unwrap().contains("tenant greedy"), "{problem}");
    other_tenant_is_served(&app, "other").await;
    probes_answer(&app).await;
    assert_eq!(by_limit(&app, "shardgate_bulkhead_refusals_total", "global").await, 0.0, "nobody was shed");

    close_all(&app, waiting).await;
}

#[tokio::test]
async fn a_full_instance_sheds_the_rest_but_probes_still_answer() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.limits.max_concurrent_requests = 16;
        c.limits.tenant_concurrent_requests.standard = 8;
        c.limits.transfer_idle_timeout = Duration::from_secs(600);
    })
    .await;
    for tenant in ["t0", "t1", "late"] {
        app.create_tenant(tenant).await;
    }
    let mut waiting = Vec::new();
    for tenant in ["t0", "t1"] {
        let token = app.rw_token(tenant);
        waiting.extend(stall_many(&app, 8, Some(&token), |i| format!("/v1/tenants/{tenant}/blobs/s/{i}")).await);
    }
    until_in_progress(&app, 16).await;

    // The instance's cap is the last line: 503 `overloaded` at once for everyone else...
    let shed = app.get_record("late", "notes", "n1").await;
    assert_eq!(shed.headers()["retry-after"], "1");
    expect_problem(shed, StatusCode::SERVICE_UNAVAILABLE, "overloaded").await;
    assert_eq!(by_limit(&app, "shardgate_bulkhead_refusals_total", "global").await, 1.0);
    // ...but probes and metrics are never counted against it.
    for _ in 0..3 {
        probes_answer(&app).await;
    }
    assert!(waiting.iter().all(|task| !task.is_finished()), "the stalled uploads are still held");

    close_all(&app, waiting).await;
    expect_problem(app.get_record("late", "notes", "n1").await, StatusCode::NOT_FOUND, "record_not_found").await;
}

#[tokio::test]
async fn stalled_uploads_through_one_valet_write_url_fill_only_its_tenants_bulkhead() {
    let (app, greedy) = greedy_and_other().await;
    let key = app.issue_valet_key("greedy", &greedy, &json!({"path": "drop/box", "permission": "write"})).await;
    let url = key["url"].as_str().unwrap();
    let target = url[url.find("/valet/").unwrap()..].to_owned();

    // Anyone holding the URL can start uploads and stall them: they take the tenant's places only.
    let waiting = stall_many(&app, 20, None, |_| target.clone()).await;
    let waiting = expect_refused(waiting, 12).await;
    until_in_progress(&app, 8).await;

    expect_tenant_refused(&app, "greedy").await;
    other_tenant_is_served(&app, "other").await;
    probes_answer(&app).await;
    // The valet refusals are counted and audited like any other.
    assert_eq!(metric(&app.client, &app.base_url, "shardgate_valet_refusals_total").await, 12.0);

    close_all(&app, waiting).await;
    let blob = app.send(Method::GET, "/v1/tenants/greedy/blobs/drop/box", Some(&greedy), None, &[]).await;
    expect_problem(blob, StatusCode::NOT_FOUND, "blob_not_found").await;
}

#[tokio::test]
async fn a_stalled_upload_is_ended_after_the_idle_limit_and_stores_nothing() {
    let (app, token) = acme_with_one_place(Duration::from_millis(500)).await;
    // More than one chunk arrives (and is staged) before the client stalls.
    let stream = stalled_upload(&app, "/v1/tenants/acme/blobs/cut", Some(&token), 300_000).await;
    let answer = tokio::time::timeout(WITHIN, read_answer(stream)).await.expect("answered").expect("an answer");
    assert_eq!(answer.status, 408, "{}", answer.head);
    assert_eq!(answer.problem()["code"], "transfer_stalled");
    assert_eq!(
        metric(&app.client, &app.base_url, "shardgate_stalled_transfers_total{direction=\"upload\"}").await,
        1.0
    );

    let gone = async || (app.staged_blob_chunks().await == 0).then_some(());
    assert!(eventually(WITHIN, gone).await.is_some(), "the stalled upload's chunks are gone");
    let blob = app.send(Method::GET, "/v1/tenants/acme/blobs/cut", Some(&token), None, &[]).await;
    expect_problem(blob, StatusCode::NOT_FOUND, "blob_not_found").await;
    // The tenant's only place is free again.
    let stored =
        app.client.put(app.url("/v1/tenants/acme/blobs/cut")).bearer_auth(&token).body(vec![3u8; 1000]).send().await;
    expect_json(stored.unwrap(), StatusCode::CREATED).await;
}

#[tokio::test]
async fn a_download_whose_client_stops_reading_is_cut_off_and_frees_its_place() {
    let (app, token) = acme_with_one_place(Duration::from_secs(1)).await;
    // Larger than every buffer between the server and a client that reads nothing.
    let size = 24 * 1024 * 1024;
    let stored =
        app.client.put(app.url("/v1/tenants/acme/blobs/big")).bearer_auth(&token).body(vec![5u8; size]).send().await;
    expect_json(stored.unwrap(), StatusCode::CREATED).await;

    let address = app.base_url.trim_start_matches("http://").to_owned();
    let mut stream = TcpStream::connect(&address).await.unwrap();
    let request =
        format!("GET /v1/tenants/acme/blobs/big HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {token}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut received = vec![0u8; 4096];
    let n = stream.read(&mut received).await.unwrap();
    assert!(received[..n].starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&received[..n]));

    // The client reads no more: after the idle limit the download gives its place back.
    let cut = async || {
        let stalled = metric(&app.client, &app.base_url, "shardgate_stalled_transfers_total{direction=\"download\"}");
        (stalled.await == 1.0).then_some(())
    };
    assert!(eventually(WITHIN, cut).await.is_some(), "the stalled download is cut off");
    until_in_progress(&app, 0).await;
    expect_json(app.put_record("acme", "notes", "n1", &json!({"served": true})).await, StatusCode::CREATED).await;

    // What the client reads now ends before the blob does.
    let mut rest = Vec::new();
    let read = tokio::time::timeout(WITHIN, stream.read_to_end(&mut rest)).await.expect("the connection ends");
    assert!(read.is_err() || n + rest.len() < size, "the download was cut short");
}
