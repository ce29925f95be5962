//! Blobs: streamed in and out in chunks, a SHA-256 `ETag`, conditional writes, single ranges,
//! listing, path rules, tier size limits, nothing left behind by a failed upload, and cold
//! downloads that read each window of chunks from the shard once, however many run at once; a
//! blob whose chunk rows are damaged answers 500 `blob_damaged` before any header of a download.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use shardgate_tests::{Backend, TestApp, expect_json, expect_problem, metric};

shardgate_tests::conformance!(
    blobs_round_trip_with_ranges_and_conditions,
    blob_paths_and_listing,
    a_burst_of_cold_downloads_reads_each_window_once,
    a_blob_with_a_missing_or_short_chunk_answers_a_problem_not_a_truncated_200
);

/// Bytes that differ everywhere (so a misplaced chunk shows).
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[i % 4] ^ seed).collect()
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

async fn put_blob(
    app: &TestApp,
    token: &str,
    path: &str,
    body: Vec<u8>,
    headers: &[(&str, &str)],
) -> reqwest::Response {
    let mut request = app.client.put(app.url(&format!("/v1/tenants/acme/blobs/{path}"))).bearer_auth(token).body(body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.unwrap()
}

async fn get_blob(app: &TestApp, token: &str, path: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut request = app.client.get(app.url(&format!("/v1/tenants/acme/blobs/{path}"))).bearer_auth(token);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.unwrap()
}

async fn blobs_round_trip_with_ranges_and_conditions(app: TestApp) {
    app.create_tenant("acme").await;
    let token = app.rw_token("acme");
    // 2.7 chunks of 256 KiB.
    let bytes = pattern(700_000, 7);
    let digest = sha256_hex(&bytes);
    let etag = format!("\"{digest}\"");
    let created =
        put_blob(&app, &token, "docs/report.bin", bytes.clone(), &[("content-type", "application/pdf")]).await;
    assert_eq!(created.headers()["etag"], etag.as_str());
    let info = expect_json(created, StatusCode::CREATED).await;
    assert_eq!(info["size"], 700_000);
    assert_eq!(info["sha256"], digest);
    assert_eq!(info["content_type"], "application/pdf");

    let whole = get_blob(&app, &token, "docs/report.bin", &[]).await;
    assert_eq!(whole.status(), StatusCode::OK);
    assert_eq!(whole.headers()["etag"], etag.as_str());
    assert_eq!(whole.headers()["accept-ranges"], "bytes");
    assert_eq!(whole.headers()["content-type"], "application/pdf");
    assert_eq!(whole.bytes().await.unwrap().as_ref(), bytes.as_slice());

    // Ranges across chunk boundaries, open-ended and suffix ranges.
    for (range, expected) in [
        ("bytes=0-0", 0..1),
        ("bytes=262000-524400", 262_000..524_401),
        ("bytes=699990-", 699_990..700_000),
        ("bytes=-10", 699_990..700_000),
        ("bytes=500000-999999999", 500_000..700_000),
    ] {
        let response = get_blob(&app, &token, "docs/report.bin", &[("range", range)]).await;
        assert_eq!(response.status(), StatusCode::PARTIAL_CONTENT, "{range}");
        let content_range = format!("bytes {}-{}/700000", expected.start, expected.end - 1);
        assert_eq!(response.headers()["content-range"], content_range.as_str(), "{range}");
        assert_eq!(response.bytes().await.unwrap().as_ref(), &bytes[expected.clone()], "{range}");
    }
    for unsatisfiable in ["bytes=700000-", "bytes=-0", "bytes=5-2"] {
        let response = get_blob(&app, &token, "docs/report.bin", &[("range", unsatisfiable)]).await;
        assert_eq!(response.headers()["content-range"], "bytes */700000", "{unsatisfiable}");
        expect_problem(response, StatusCode::RANGE_NOT_SATISFIABLE, "range_not_satisfiable").await;
    }
    // A stale If-Range gets the whole blob.
    let response = get_blob(&app, &token, "docs/report.bin", &[("range", "bytes=0-9"), ("if-range", "\"old\"")]).await;
    assert_eq!(response.status(), StatusCode::OK);
    // Conditional GET and HEAD.
    let response = get_blob(&app, &token, "docs/report.bin", &[("if-none-match", &etag)]).await;
    assert_eq!(response.status(), StatusCode::NOT_MODIFIED);
    let head =
        app.client.head(app.url("/v1/tenants/acme/blobs/docs/report.bin")).bearer_auth(&token).send().await.unwrap();
    assert_eq!(head.status(), StatusCode::OK);
    assert_eq!(head.headers()["content-length"], "700000");
    assert_eq!(head.headers()["etag"], etag.as_str());

    // Conditional overwrites: a wrong If-Match and a create-only write change nothing.
    let other = pattern(10, 9);
    let response = put_blob(&app, &token, "docs/report.bin", other.clone(), &[("if-match", "\"0000\"")]).await;
    expect_problem(response, StatusCode::PRECONDITION_FAILED, "precondition_failed").await;
    let response = put_blob(&app, &token, "docs/report.bin", other.clone(), &[("if-none-match", "*")]).await;
    expect_problem(response, StatusCode::PRECONDITION_FAILED, "precondition_failed").await;
    let response = get_blob(&app, &token, "docs/report.bin", &[]).await;
    assert_eq!(response.bytes().await.unwrap().as_ref(), bytes.as_slice(), "the old blob is intact");
    // The right If-Match replaces it (200), with the new ETag.
    let response = put_blob(&app, &token, "docs/report.bin", other.clone(), &[("if-match", &etag)]).await;
    let info = expect_json(response, StatusCode::OK).await;
    assert_eq!(info["sha256"], sha256_hex(&other));
    assert_eq!(info["content_type"], "application/octet-stream");
    assert_eq!(info["version"], 2);
    // The old blob's chunks were read (and cached) above; the new blob is what a reader gets.
    let response = get_blob(&app, &token, "docs/report.bin", &[]).await;
    assert_eq!(response.bytes().await.unwrap().as_ref(), other.as_slice());

    // Delete: a stale If-Match is refused, then the blob goes.
    let path = app.url("/v1/tenants/acme/blobs/docs/report.bin");
    let response = app.client.delete(&path).bearer_auth(&token).header("if-match", &etag).send().await.unwrap();
    expect_problem(response, StatusCode::PRECONDITION_FAILED, "precondition_failed").await;
    let response = app.client.delete(&path).bearer_auth(&token).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    expect_problem(get_blob(&app, &token, "docs/report.bin", &[]).await, StatusCode::NOT_FOUND, "blob_not_found").await;
    let response = app.client.delete(&path).bearer_auth(&token).send().await.unwrap();
    expect_problem(response, StatusCode::NOT_FOUND, "blob_not_found").await;

    // An empty blob is a blob.
    let response = put_blob(&app, &token, "empty", Vec::new(), &[]).await;
    let info = expect_json(response, StatusCode::CREATED).await;
    assert_eq!(info["sha256"], sha256_hex(&[]));
    let response = get_blob(&app, &token, "empty", &[]).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.bytes().await.unwrap().is_empty());
}

/// Shard statements that read blob chunks, as the gateway counts them.
async fn chunk_reads(app: &TestApp) -> f64 {
    metric(&app.client, app.metrics_base(), "shardgate_blob_chunk_reads_total").await
}

async fn a_burst_of_cold_downloads_reads_each_window_once(app: TestApp) {
    app.create_tenant("acme").await;
    let token = app.rw_token("acme");
    // Ten chunks of 256 KiB, the last one short: windows of 1 MiB are chunks 0..4, 4..8 and 8..10.
    let bytes = pattern(10 * 256 * 1024 - 1000, 3);
    let created = put_blob(&app, &token, "cold/big.bin", bytes.clone(), &[]).await;
    assert_eq!(created.status(), StatusCode::CREATED);
    assert_eq!(chunk_reads(&app).await, 0.0, "uploads read no chunks");

    let downloads = (0..8).map(|_| async {
        let response = get_blob(&app, &token, "cold/big.bin", &[]).await;
        assert_eq!(response.status(), StatusCode::OK);
        response.bytes().await.unwrap()
    });
    for body in futures::future::join_all(downloads).await {
        assert!(body.as_ref() == bytes.as_slice(), "every download gets the whole blob");
    }
    assert_eq!(chunk_reads(&app).await, 3.0, "one statement per window, however many downloads wanted it");

    // Cached chunks are not read again: a range across windows, and a valet download.
    let response = get_blob(&app, &token, "cold/big.bin", &[("range", "bytes=1000000-2200000")]).await;
    assert_eq!(response.status(), StatusCode::PARTIAL_CONTENT);
    assert!(response.bytes().await.unwrap().as_ref() == &bytes[1_000_000..=2_200_000]);
    let body = json!({"path": "cold/big.bin", "permission": "read"});
    let url = app.issue_valet_key("acme", &token, &body).await["url"].as_str().unwrap().to_owned();
    let response = app.client.get(app.url(&url[url.find("/valet/").unwrap()..])).send().await.unwrap();
    assert!(response.bytes().await.unwrap().as_ref() == bytes.as_slice());
    assert_eq!(chunk_reads(&app).await, 3.0);

    // A new version is cold again: its chunks are read once more, a window per statement.
    let replaced = pattern(5 * 256 * 1024, 4);
    assert_eq!(put_blob(&app, &token, "cold/big.bin", replaced.clone(), &[]).await.status(), StatusCode::OK);
    let response = get_blob(&app, &token, "cold/big.bin", &[]).await;
    assert!(response.bytes().await.unwrap().as_ref() == replaced.as_slice());
    assert_eq!(chunk_reads(&app).await, 5.0, "chunks 0..4 and 4..5 of the new upload");
}

async fn blob_paths_and_listing(app: TestApp) {
    app.create_tenant("acme").await;
    app.create_tenant("bob").await;
    let token = app.rw_token("acme");
    for path in ["b/2", "a/1", "a/2", "a%2F3", "c%20d/%E2%9C%93"] {
        expect_json(put_blob(&app, &token, path, b"x".to_vec(), &[]).await, StatusCode::CREATED).await;
    }
    let page = |query: &str| {
        let url = app.url(&format!("/v1/tenants/acme/blobs{query}"));
        let token = token.clone();
        let client = app.client.clone();
        async move { expect_json(client.get(url).bearer_auth(token).send().await.unwrap(), StatusCode::OK).await }
    };
    let paths = |page: &Value| -> Vec<String> {
        page["items"].as_array().unwrap().iter().map(|i| i["path"].as_str().unwrap().to_owned()).collect()
    };
    // `%2F` is a separator like `/`: "a%2F3" is the blob "a/3".
    assert_eq!(paths(&page("?prefix=a/").await), ["a/1", "a/2", "a/3"]);
    let first = page("?limit=2").await;
    assert_eq!(paths(&first), ["a/1", "a/2"]);
    let cursor = first["next_cursor"].as_str().unwrap();
    let rest = page(&format!("?limit=10&cursor={cursor}")).await;
    assert_eq!(paths(&rest), ["a/3", "b/2", "c d/✓"]);
    assert!(rest["next_cursor"].is_null());

    // Bad paths are 400, whatever the method.
    for bad in ["a//b", "a/%00", "a/%zz", "%FF"] {
        let response = put_blob(&app, &token, bad, b"x".to_vec(), &[]).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{bad}");
    }
    let long = "x".repeat(1025);
    let response = put_blob(&app, &token, &long, b"x".to_vec(), &[]).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);

    // Another tenant's token sees nothing of acme's blobs.
    let bob = app.rw_token("bob");
    let response = app.client.get(app.url("/v1/tenants/acme/blobs/a/1")).bearer_auth(&bob).send().await.unwrap();
    expect_problem(response, StatusCode::NOT_FOUND, "tenant_not_found").await;
    let response = app.client.get(app.url("/v1/tenants/bob/blobs")).bearer_auth(&bob).send().await.unwrap();
    assert_eq!(expect_json(response, StatusCode::OK).await["items"], json!([]));
    // A read-only token cannot write.
    let reader = app.token("acme", &[shardgate_gatekeeper::Scope::Read]);
    let response = put_blob(&app, &reader, "a/9", b"x".to_vec(), &[]).await;
    expect_problem(response, StatusCode::FORBIDDEN, "insufficient_scope").await;
}

#[tokio::test]
async fn a_blob_over_the_tier_limit_is_refused_and_leaves_nothing() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| c.blobs.max_size_free = 300_000).await;
    app.create_tenant_with(&json!({"id": "acme", "tier": "free"})).await;
    let token = app.rw_token("acme");
    let response = put_blob(&app, &token, "big", pattern(300_001, 1), &[]).await;
    expect_problem(response, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large").await;
    // Without a declared length, the limit is enforced while streaming.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = (0..10).map(|i| Ok(pattern(50_000, i))).collect();
    let response = app
        .client
        .put(app.url("/v1/tenants/acme/blobs/streamed"))
        .bearer_auth(&token)
        .body(reqwest::Body::wrap_stream(futures::stream::iter(chunks)))
        .send()
        .await
        .unwrap();
    expect_problem(response, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large").await;
    expect_problem(get_blob(&app, &token, "streamed", &[]).await, StatusCode::NOT_FOUND, "blob_not_found").await;
    expect_json(put_blob(&app, &token, "fits", pattern(300_000, 1), &[]).await, StatusCode::CREATED).await;
    assert_eq!(app.staged_blob_chunks().await, 0, "the refused uploads left no chunks");
}

#[tokio::test]
async fn an_interrupted_upload_leaves_nothing_behind() {
    use tokio::io::AsyncWriteExt;
    let app = TestApp::spawn(Backend::Sqlite).await;
    app.create_tenant("acme").await;
    let token = app.rw_token("acme");
    let address = app.base_url.trim_start_matches("http://").to_owned();
    let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    let head = format!(
        "PUT /v1/tenants/acme/blobs/cut HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {token}\r\n\
         Content-Length: 1000000\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(&pattern(600_000, 3)).await.unwrap();
    stream.flush().await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    drop(stream);
    let gone = async || (app.staged_blob_chunks().await == 0).then_some(());
    assert!(shardgate_tests::eventually(std::time::Duration::from_secs(5), gone).await.is_some());
    expect_problem(get_blob(&app, &token, "cut", &[]).await, StatusCode::NOT_FOUND, "blob_not_found").await;
    let response = app.send(Method::GET, "/v1/tenants/acme/blobs", Some(&token), None, &[]).await;
    assert_eq!(expect_json(response, StatusCode::OK).await["items"], json!([]));
}

/// Runs `sql` (a statement with `RETURNING`) on every shard; how many rows it touched.
async fn damage_chunks(app: &TestApp, sql: &str) -> usize {
    app.rows_on_every_shard::<(i64,)>(sql).await.len()
}

/// What every download of a damaged blob answers: GET, a range within a chunk that is still
/// there, `If-None-Match` and HEAD alike, 500 `blob_damaged` naming the blob, never a 200 cut off.
async fn assert_damaged(app: &TestApp, token: &str, path: &str) {
    for headers in [&[][..], &[("range", "bytes=0-9")][..], &[("if-none-match", "\"other\"")][..]] {
        let response = get_blob(app, token, path, headers).await;
        let problem = expect_problem(response, StatusCode::INTERNAL_SERVER_ERROR, "blob_damaged").await;
        let detail = problem["detail"].as_str().unwrap();
        assert!(detail.contains(path) && detail.contains("acme"), "the problem names the blob: {problem}");
    }
    let url = app.url(&format!("/v1/tenants/acme/blobs/{path}"));
    let head = app.client.head(url).bearer_auth(token).send().await.unwrap();
    assert_eq!(head.status(), StatusCode::INTERNAL_SERVER_ERROR, "HEAD agrees with GET");
}

async fn a_blob_with_a_missing_or_short_chunk_answers_a_problem_not_a_truncated_200(app: TestApp) {
    app.create_tenant("acme").await;
    let token = app.rw_token("acme");
    // Three chunks each: 256 KiB, 256 KiB and the rest.
    for path in ["hole.bin", "short.bin", "whole.bin"] {
        let created = put_blob(&app, &token, path, pattern(700_000, 5), &[]).await;
        assert_eq!(created.status(), StatusCode::CREATED, "{path}");
    }
    let of =
        |path: &str| format!("upload_id IN (SELECT upload_id FROM blobs WHERE tenant = 'acme' AND path = '{path}')");
    let sql = format!("DELETE FROM blob_chunks WHERE seq = 1 AND {} RETURNING seq", of("hole.bin"));
    assert_eq!(damage_chunks(&app, &sql).await, 1, "one chunk row deleted");
    let sql = format!(
        "UPDATE blob_chunks SET data = substr(data, 1, 10) WHERE seq = 2 AND {} RETURNING seq",
        of("short.bin")
    );
    assert_eq!(damage_chunks(&app, &sql).await, 1, "one chunk row shortened");

    assert_damaged(&app, &token, "hole.bin").await;
    assert_damaged(&app, &token, "short.bin").await;
    // A whole blob beside them is served as ever.
    let response = get_blob(&app, &token, "whole.bin", &[]).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.bytes().await.unwrap().as_ref() == pattern(700_000, 5).as_slice());
}
