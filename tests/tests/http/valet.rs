//! Valet keys: signed URLs that let a client download or upload one blob without a token. Every
//! tampered, expired, early, revoked or retired URL is refused with 403 and its own code; single
//! use holds under concurrency; downloads resume with `Range`; the signed size limit stores
//! nothing over it; key rotation and retirement; the audit log and refusal metrics.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use secrecy::SecretString;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use shardgate_tests::{Backend, RedisServer, TestApp, eventually, expect_json, expect_problem, metric, open_shard};

shardgate_tests::conformance!(
    valet_urls_download_and_upload_one_blob,
    tenant_pages_are_downloaded_never_opened,
    a_read_key_is_issued_only_for_a_blob_that_exists
);

async fn issue(app: &TestApp, token: &str, body: Value) -> Value {
    app.issue_valet_key("acme", token, &body).await
}

fn url_of(key: &Value) -> String {
    key["url"].as_str().unwrap().to_owned()
}

async fn put_blob(app: &TestApp, token: &str, path: &str, body: Vec<u8>) {
    let response =
        app.client.put(app.url(&format!("/v1/tenants/acme/blobs/{path}"))).bearer_auth(token).body(body).send().await;
    let response = response.unwrap();
    let status = response.status();
    assert!(status.is_success(), "PUT blob {path}: {status} {}", response.text().await.unwrap_or_default());
}

fn bytes(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 % 251) as u8).collect()
}

/// The URL a gateway issued, but reached through `base` (the gatekeeper's address when there is one).
fn through(app: &TestApp, url: &str) -> String {
    let path = &url[url.find("/valet/").unwrap()..];
    app.url(path)
}

async fn valet_urls_download_and_upload_one_blob(app: TestApp) {
    app.create_tenant("acme").await;
    let token = app.rw_token("acme");
    let blob = bytes(600_000);
    put_blob(&app, &token, "docs/report.pdf", blob.clone()).await;
    let key = issue(
        &app,
        &token,
        json!({"path": "docs/report.pdf", "permission": "read", "content_disposition": "attachment; filename=\"Résumé.pdf\""}),
    )
    .await;
    assert_eq!(key["method"], "GET");
    let url = through(&app, &url_of(&key));
    let response = app.client.get(&url).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let headers = response.headers().clone();
    assert_eq!(
        headers["content-disposition"],
        "attachment; filename=\"R_sum_.pdf\"; filename*=UTF-8''R%C3%A9sum%C3%A9.pdf"
    );
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(headers["referrer-policy"], "no-referrer");
    assert_eq!(headers["cache-control"], "private");
    assert_eq!(headers["accept-ranges"], "bytes");
    assert_eq!(response.bytes().await.unwrap().as_ref(), blob.as_slice());

    // A resumed download: the first part, then the rest from where it stopped.
    let first = app.client.get(&url).header("range", "bytes=0-250000").send().await.unwrap();
    assert_eq!(first.status(), StatusCode::PARTIAL_CONTENT);
    let mut assembled = first.bytes().await.unwrap().to_vec();
    let rest = app.client.get(&url).header("range", format!("bytes={}-", assembled.len())).send().await.unwrap();
    assert_eq!(rest.status(), StatusCode::PARTIAL_CONTENT);
    assembled.extend_from_slice(&rest.bytes().await.unwrap());
    assert_eq!(hex::encode(Sha256::digest(&assembled)), hex::encode(Sha256::digest(&blob)));
    let etag = headers["etag"].to_str().unwrap().to_owned();
    let cached = app.client.get(&url).header("if-none-match", &etag).send().await.unwrap();
    assert_eq!(cached.status(), StatusCode::NOT_MODIFIED);
    // HEAD is a read; PUT is not.
    assert_eq!(app.client.head(&url).send().await.unwrap().status(), StatusCode::OK);
    let response = app.client.put(&url).body("x").send().await.unwrap();
    expect_problem(response, StatusCode::FORBIDDEN, "valet_wrong_method").await;

    // An upload URL: size and media type are the signed ones, and nothing over the size is kept.
    let upload = issue(
        &app,
        &token,
        json!({"path": "in/photo.jpg", "permission": "write", "max_size": 100000, "content_type": "image/jpeg"}),
    )
    .await;
    assert_eq!(upload["method"], "PUT");
    let upload_url = through(&app, &url_of(&upload));
    let response =
        app.client.put(&upload_url).header("content-type", "image/jpeg").body(bytes(100_001)).send().await.unwrap();
    expect_problem(response, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large").await;
    let response =
        app.client.put(&upload_url).header("content-type", "image/png").body(bytes(10)).send().await.unwrap();
    expect_problem(response, StatusCode::UNSUPPORTED_MEDIA_TYPE, "valet_content_type").await;
    let missing = app.client.get(app.url("/v1/tenants/acme/blobs/in/photo.jpg")).bearer_auth(&token).send().await;
    expect_problem(missing.unwrap(), StatusCode::NOT_FOUND, "blob_not_found").await;
    let response =
        app.client.put(&upload_url).header("content-type", "image/jpeg").body(bytes(100_000)).send().await.unwrap();
    let info = expect_json(response, StatusCode::CREATED).await;
    assert_eq!(info["sha256"], hex::encode(Sha256::digest(bytes(100_000))));
    let stored = app.client.get(app.url("/v1/tenants/acme/blobs/in/photo.jpg")).bearer_auth(&token).send().await;
    assert_eq!(stored.unwrap().bytes().await.unwrap().as_ref(), bytes(100_000).as_slice());
}

/// Replaces the value of `param` in `url`'s query.
/// A tenant-uploaded page (HTML, SVG, a script) reached by a valet URL on the gateway's origin
/// could read that origin's data if a browser opened it: it comes as an attachment under a
/// sandboxing `Content-Security-Policy`, unless the issuer signed `inline` (then sandboxed).
async fn tenant_pages_are_downloaded_never_opened(app: TestApp) {
    app.create_tenant("acme").await;
    let token = app.rw_token("acme");
    let page = b"<script>fetch('/v1/admin/tenants')</script>".to_vec();
    for (path, content_type) in
        [("p/page.html", "text/html; charset=utf-8"), ("p/logo.svg", "image/svg+xml"), ("p/app.js", "text/javascript")]
    {
        let url = app.url(&format!("/v1/tenants/acme/blobs/{path}"));
        let stored = app.client.put(url).bearer_auth(&token).header("content-type", content_type).body(page.clone());
        assert!(stored.send().await.unwrap().status().is_success());
        for method in [Method::GET, Method::HEAD] {
            let key = issue(&app, &token, json!({"path": path, "permission": "read"})).await;
            let response = app.client.request(method.clone(), through(&app, &url_of(&key))).send().await.unwrap();
            assert_eq!(response.status(), StatusCode::OK, "{method} {path}");
            let headers = response.headers();
            assert_eq!(headers["content-disposition"], "attachment", "{method} {path}");
            let policy = headers["content-security-policy"].to_str().unwrap();
            assert!(policy.contains("sandbox"), "{method} {path}: {policy}");
        }
    }
    let key =
        issue(&app, &token, json!({"path": "p/page.html", "permission": "read", "content_disposition": "inline"}))
            .await;
    let response = app.client.get(through(&app, &url_of(&key))).send().await.unwrap();
    assert_eq!(response.headers()["content-disposition"], "inline", "the issuer asked for it");
    assert!(response.headers()["content-security-policy"].to_str().unwrap().contains("sandbox"));
    assert_eq!(response.bytes().await.unwrap(), page);
    // Passive media open as before.
    put_blob(&app, &token, "p/data.bin", bytes(100)).await;
    let key = issue(&app, &token, json!({"path": "p/data.bin", "permission": "read"})).await;
    let response = app.client.get(through(&app, &url_of(&key))).send().await.unwrap();
    assert!(!response.headers().contains_key("content-disposition"), "{:?}", response.headers());
    assert!(!response.headers().contains_key("content-security-policy"));
}

fn with_param(url: &str, param: &str, value: &str) -> String {
    let (base, query) = url.split_once('?').unwrap();
    let query: Vec<String> = query
        .split('&')
        .map(|pair| if pair.split('=').next() == Some(param) { format!("{param}={value}") } else { pair.to_owned() })
        .collect();
    format!("{base}?{}", query.join("&"))
}

/// How many valet grants the catalog holds.
async fn grants_recorded(app: &TestApp) -> i64 {
    let catalog = open_shard(&app.catalog_url()).await;
    let (count,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM valet_grants").fetch_one(&catalog).await.unwrap();
    catalog.close().await;
    count
}

async fn a_read_key_is_issued_only_for_a_blob_that_exists(app: TestApp) {
    app.create_tenant("acme").await;
    let token = app.rw_token("acme");
    let post = async |body: Value| {
        let request = app.client.post(app.url("/v1/tenants/acme/valet-keys")).bearer_auth(&token).json(&body);
        request.send().await.unwrap()
    };
    // Nothing there: the same answer a download of the path gets, and nothing is recorded.
    let download = app.client.get(app.url("/v1/tenants/acme/blobs/in/f")).bearer_auth(&token).send().await.unwrap();
    expect_problem(download, StatusCode::NOT_FOUND, "blob_not_found").await;
    for _ in 0..3 {
        let response = post(json!({"path": "in/f", "permission": "read"})).await;
        expect_problem(response, StatusCode::NOT_FOUND, "blob_not_found").await;
    }
    assert_eq!(grants_recorded(&app).await, 0, "no grant for a blob that does not exist");
    // A write key may create it; then a read key opens it.
    let upload = through(
        &app,
        &url_of(&expect_json(post(json!({"path": "in/f", "permission": "write"})).await, StatusCode::CREATED).await),
    );
    assert_eq!(app.client.put(&upload).body("hello").send().await.unwrap().status(), StatusCode::CREATED);
    let key = expect_json(post(json!({"path": "in/f", "permission": "read"})).await, StatusCode::CREATED).await;
    let response = app.client.get(through(&app, &url_of(&key))).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.text().await.unwrap(), "hello");
    // Deleted, it is gone for new read keys too.
    let deleted = app.client.delete(app.url("/v1/tenants/acme/blobs/in/f")).bearer_auth(&token).send().await.unwrap();
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    let response = post(json!({"path": "in/f", "permission": "read"})).await;
    expect_problem(response, StatusCode::NOT_FOUND, "blob_not_found").await;
    assert_eq!(grants_recorded(&app).await, 2);
}

fn param<'a>(url: &'a str, name: &str) -> &'a str {
    url.split_once('?').unwrap().1.split('&').find_map(|p| p.strip_prefix(&format!("{name}="))).unwrap()
}

#[tokio::test]
async fn every_tampered_or_stale_url_is_refused_with_its_own_code() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    app.create_tenant("acme").await;
    app.create_tenant("bob").await;
    let token = app.rw_token("acme");
    put_blob(&app, &token, "a/b", bytes(10)).await;
    put_blob(&app, &token, "other", bytes(10)).await;
    let bob = app.rw_token("bob");
    let response = app.client.put(app.url("/v1/tenants/bob/blobs/a/b")).bearer_auth(&bob).body("bob").send().await;
    assert!(response.unwrap().status().is_success());
    let url = url_of(&issue(&app, &token, json!({"path": "a/b", "permission": "read"})).await);
    assert_eq!(app.client.get(&url).send().await.unwrap().status(), StatusCode::OK, "the control works");
    let upload = url_of(&issue(&app, &token, json!({"path": "a/b", "permission": "write", "max_size": 5})).await);

    let sig = param(&url, "sg-sig").to_owned();
    let exp: u64 = param(&url, "sg-exp").parse().unwrap();
    let nbf: u64 = param(&url, "sg-nbf").parse().unwrap();
    let swap_path = |to: &str| url.replacen("/valet/acme/a/b?", &format!("/valet/{to}?"), 1);
    let cases: Vec<(&str, String, &str)> = vec![
        ("expiry moved", with_param(&url, "sg-exp", &(exp + 60).to_string()), "valet_bad_signature"),
        ("not-before moved", with_param(&url, "sg-nbf", &(nbf - 60).to_string()), "valet_bad_signature"),
        ("permission", with_param(&url, "sg-perm", "write"), "valet_wrong_method"),
        ("grant id", with_param(&url, "sg-grant", &"0".repeat(32)), "valet_bad_signature"),
        ("key id", with_param(&url, "sg-kid", "k000000000000"), "valet_unknown_key"),
        ("signature", with_param(&url, "sg-sig", &sig.replacen(&sig[..4], "AAAA", 1)), "valet_bad_signature"),
        ("constraint added", format!("{url}&sg-once=1"), "valet_bad_signature"),
        ("duplicate parameter", format!("{url}&sg-exp={exp}"), "valet_malformed"),
        ("unknown parameter", format!("{url}&sg-admin=1"), "valet_malformed"),
        ("version", with_param(&url, "sg-v", "2"), "valet_malformed"),
        ("no signature", url.replace(&format!("&sg-sig={sig}"), ""), "valet_malformed"),
        ("another blob", swap_path("acme/other"), "valet_bad_signature"),
        ("another tenant's blob", swap_path("bob/a/b"), "valet_bad_signature"),
        ("encoded slash", swap_path("acme/a%2Fb"), "valet_bad_signature"),
        ("dot segment", swap_path("acme/a/../a/b"), "valet_malformed"),
        ("encoded dot segment", swap_path("acme/a/%2e%2e/a/b"), "valet_malformed"),
        ("upload key used to read", upload.clone(), "valet_wrong_method"),
    ];
    let mut failures = Vec::new();
    for (what, tampered, code) in &cases {
        let response = raw_get(&app, tampered).await;
        if response.0 != 403 || !response.1.contains(&format!("\"code\":\"{code}\"")) {
            failures.push(format!("{what}: expected 403 {code}, got {} {}", response.0, response.1));
        }
    }
    // The upload constraints are signed too.
    let with_ct = url_of(
        &issue(
            &app,
            &token,
            json!({"path": "a/b", "permission": "write", "max_size": 5, "content_type": "text/plain"}),
        )
        .await,
    );
    for (what, tampered) in [
        ("max size raised", with_param(&upload, "sg-max", "5000000")),
        ("max size removed", upload.replace("&sg-max=5", "")),
        ("media type changed", with_param(&with_ct, "sg-ct", "image%2Fpng")),
        ("disposition added", format!("{upload}&sg-cd=inline")),
    ] {
        let response = app.client.put(&tampered).header("content-type", "image/png").body("x").send().await.unwrap();
        let status = response.status();
        let text = response.text().await.unwrap();
        if status != StatusCode::FORBIDDEN || !text.contains("\"code\":\"valet_bad_signature\"") {
            failures.push(format!("{what}: expected 403 valet_bad_signature, got {status} {text}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // Expired: a one-second key, a little later. (Expiry has no grace.)
    let short = url_of(&issue(&app, &token, json!({"path": "a/b", "permission": "read", "expires_in": 1})).await);
    app.clock.advance(Duration::from_millis(2_100));
    expect_problem(app.client.get(&short).send().await.unwrap(), StatusCode::FORBIDDEN, "valet_expired").await;

    // Revoked: refused at once.
    let key = issue(&app, &token, json!({"path": "a/b", "permission": "read"})).await;
    let revoked = url_of(&key);
    assert_eq!(app.client.get(&revoked).send().await.unwrap().status(), StatusCode::OK);
    let id = key["id"].as_str().unwrap();
    let response =
        app.client.delete(app.url(&format!("/v1/tenants/acme/valet-keys/{id}"))).bearer_auth(&token).send().await;
    assert_eq!(response.unwrap().status(), StatusCode::NO_CONTENT);
    expect_problem(app.client.get(&revoked).send().await.unwrap(), StatusCode::FORBIDDEN, "valet_revoked").await;
    // Bob cannot revoke acme's keys (nor learn they exist).
    let response =
        app.client.delete(app.url(&format!("/v1/tenants/bob/valet-keys/{id}"))).bearer_auth(&bob).send().await;
    expect_problem(response.unwrap(), StatusCode::NOT_FOUND, "valet_key_not_found").await;

    // Not yet valid, and valid under clock skew: URLs signed with the catalog's current key.
    let (signed_early, signed_skewed) = craft(&app).await;
    expect_problem(app.client.get(&signed_early).send().await.unwrap(), StatusCode::FORBIDDEN, "valet_not_yet_valid")
        .await;
    assert_eq!(app.client.get(&signed_skewed).send().await.unwrap().status(), StatusCode::OK, "clock skew");

    // Refusals are counted and audited (valet requests within the audit writer's flush).
    assert!(metric(&app.client, &app.base_url, "shardgate_valet_refusals_total").await >= cases.len() as f64);
    let expected = ["valet.issue", "valet.download", "valet.refused", "valet.revoke"];
    let actions = eventually(Duration::from_secs(10), async || {
        let actions = audit_actions(&app).await;
        expected.iter().all(|action| actions.iter().any(|a| a == action)).then_some(actions)
    })
    .await;
    assert!(actions.is_some(), "{expected:?} are all audited: {:?}", audit_actions(&app).await);
}

/// The action and target of every entry of the audit log, oldest first.
async fn audit_entries(app: &TestApp) -> Vec<(String, String)> {
    let mut entries = Vec::new();
    let mut query = "limit=1000".to_owned();
    loop {
        let page =
            expect_json(app.admin(Method::GET, &format!("/v1/admin/audit?{query}"), None).await, StatusCode::OK).await;
        let items = page["items"].as_array().unwrap();
        entries.extend(
            items.iter().map(|e| (e["action"].as_str().unwrap().to_owned(), e["target"].as_str().unwrap().to_owned())),
        );
        match page["next_cursor"].as_str() {
            Some(cursor) if !items.is_empty() => query = format!("limit=1000&cursor={cursor}"),
            _ => return entries,
        }
    }
}

/// The action of every entry of the audit log, oldest first.
async fn audit_actions(app: &TestApp) -> Vec<String> {
    audit_entries(app).await.into_iter().map(|(action, _)| action).collect()
}

/// The `valet.refused` rows among `entries`: how many, and how many refusals they account for
/// (a row of its own is one; a minute's summary row, `<n> more <code> refusals ...`, is `n`).
fn refusal_rows(entries: &[(String, String)]) -> (usize, u64) {
    let rows: Vec<&String> = entries.iter().filter(|(action, _)| action == "valet.refused").map(|(_, t)| t).collect();
    let accounted = rows
        .iter()
        .map(|target| match target.split_once(" more ") {
            Some((n, _)) if n.bytes().all(|b| b.is_ascii_digit()) => n.parse::<u64>().unwrap(),
            _ => 1,
        })
        .sum();
    (rows.len(), accounted)
}

/// Tenant `acme` with a blob at `path` of `len` bytes; a read-write token of `acme`.
async fn acme_with_blob(app: &TestApp, path: &str, len: usize) -> String {
    app.create_tenant("acme").await;
    let token = app.rw_token("acme");
    put_blob(app, &token, path, bytes(len)).await;
    token
}

/// Tenant `acme` with a blob `popular` of `len` bytes; a valet URL that reads it, and the same
/// URL with a signature that does not match.
async fn popular_blob_urls(app: &TestApp, len: usize) -> (String, String) {
    let token = acme_with_blob(app, "popular", len).await;
    let url = through(app, &url_of(&issue(app, &token, json!({"path": "popular", "permission": "read"})).await));
    let sig = param(&url, "sg-sig").to_owned();
    let forged = with_param(&url, "sg-sig", &sig.replacen(&sig[..4], "AAAA", 1));
    (url, forged)
}

#[tokio::test]
async fn every_valet_request_of_a_burst_reaches_the_audit_log() {
    let app = TestApp::spawn(Backend::Postgres).await;
    let (url, forged) = popular_blob_urls(&app, 3000).await;
    // Within the anonymous burst of the test configuration (100), so none is throttled.
    let (downloads, refusals) = (80, 15);
    let requests = (0..downloads + refusals).map(|i| {
        let client = app.client.clone();
        // The refused ones carry a signature that does not match.
        let url = if i < downloads { url.clone() } else { forged.clone() };
        tokio::spawn(async move { client.get(url).send().await.unwrap().status() })
    });
    let requests: Vec<_> = requests.collect();
    for (i, request) in requests.into_iter().enumerate() {
        let expected = if i < downloads { StatusCode::OK } else { StatusCode::FORBIDDEN };
        assert_eq!(request.await.unwrap(), expected);
    }
    // Every download has its row; the refusals are sampled, and once their minute is over they
    // are all accounted for.
    app.clock.advance(Duration::from_secs(61));
    let count = |entries: &[(String, String)], action: &str| entries.iter().filter(|(a, _)| a == action).count();
    let all_there = eventually(Duration::from_secs(10), async || {
        let entries = audit_entries(&app).await;
        (count(&entries, "valet.download") == downloads && refusal_rows(&entries).1 == refusals as u64).then_some(())
    })
    .await;
    let entries = audit_entries(&app).await;
    assert!(
        all_there.is_some(),
        "{} downloads audited and {:?} refusal rows (rows, refusals accounted for)",
        count(&entries, "valet.download"),
        refusal_rows(&entries)
    );
    assert_eq!(metric(&app.client, &app.base_url, "shardgate_valet_audit_dropped_total").await, 0.0);
}

#[tokio::test]
async fn anonymous_refusals_are_all_counted_but_sampled_in_the_audit_log() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (url, forged) = popular_blob_urls(&app, 300).await;
    let unsigned = url.split_once('?').unwrap().0.to_owned();
    let counted = metric(&app.client, &app.base_url, "shardgate_valet_refusals_total").await;
    // Two reasons, 60 refusals from a client without any credential (within the anonymous burst).
    for _ in 0..40 {
        let response = app.client.get(&forged).send().await.unwrap();
        expect_problem(response, StatusCode::FORBIDDEN, "valet_bad_signature").await;
    }
    for _ in 0..20 {
        expect_problem(app.client.get(&unsigned).send().await.unwrap(), StatusCode::FORBIDDEN, "valet_malformed").await;
    }
    let refused = metric(&app.client, &app.base_url, "shardgate_valet_refusals_total").await - counted;
    assert_eq!(refused, 60.0, "every refusal is counted in the metrics");
    // The audit log holds one row per reason and minute (two minutes, if the burst crossed one),
    // not one per refusal.
    let first_rows = eventually(Duration::from_secs(10), async || {
        let (rows, _) = refusal_rows(&audit_entries(&app).await);
        (rows >= 2).then_some(rows)
    })
    .await;
    assert!(first_rows.is_some_and(|rows| rows <= 4), "{:?}", refusal_rows(&audit_entries(&app).await));
    // Once the minute is over, one row per reason counts the rest: all 60 are accounted for.
    app.clock.advance(Duration::from_secs(61));
    let accounted = eventually(Duration::from_secs(10), async || {
        let entries = audit_entries(&app).await;
        (refusal_rows(&entries).1 == 60).then_some(entries)
    })
    .await;
    let entries = accounted.unwrap_or_default();
    assert!(!entries.is_empty(), "60 refusals accounted for: {:?}", refusal_rows(&audit_entries(&app).await));
    let (rows, _) = refusal_rows(&entries);
    assert!(rows <= 8, "at most two rows per reason and minute: {rows}");
    assert!(
        entries.iter().any(|(_, target)| target.contains("more valet_bad_signature refusals")),
        "a summary row names its reason: {entries:?}"
    );
}

/// GET `url` exactly as written (clients normalise `..` away); returns status and body.
async fn raw_get(app: &TestApp, url: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let address = app.base_url.trim_start_matches("http://").to_owned();
    let target = &url[url.find("/valet/").unwrap()..];
    let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    let request = format!("GET {target} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response).await;
    let status = response.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, response)
}

/// Two URLs for `acme/a/b` signed with the current key read from the catalog: one valid only
/// from a minute from now, and one issued "a minute from now" by a server whose clock is ahead
/// (its not-before is that time minus the 5-minute skew allowance).
async fn craft(app: &TestApp) -> (String, String) {
    use shardgate_valet::{Constraints, Grant, GrantId, GrantRequest, KeyId, Permission, SigningKey};
    let pool = shardgate_tests::open_shard(&app.catalog_url()).await;
    let (id, secret): (String, String) =
        sqlx::query_as("SELECT id, secret FROM valet_keys WHERE state = 'current'").fetch_one(&pool).await.unwrap();
    let key =
        SigningKey::from_parts(KeyId::parse(&id).unwrap(), <[u8; 32]>::try_from(hex::decode(secret).unwrap()).unwrap());
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let mut urls = Vec::new();
    for not_before in [now + 60, now + 60 - 300] {
        let grant_id = GrantId::generate();
        let grant = Grant::new(
            GrantRequest {
                permission: Permission::Read,
                tenant: "acme".into(),
                path: "a/b".into(),
                not_before,
                expires_at: now + 600,
                grant_id: grant_id.clone(),
                constraints: Constraints::default(),
            },
            &key,
        )
        .unwrap();
        sqlx::query(
            "INSERT INTO valet_grants (id, tenant, path, permission, key_id, not_before, expires_at, single_use, \
             created_at, incarnation) SELECT $1, 'acme', 'a/b', 'read', $2, $3, $4, 0, $5, incarnation \
             FROM tenants WHERE id = 'acme'",
        )
        .bind(grant_id.as_str())
        .bind(&id)
        .bind(not_before as i64)
        .bind((now + 600) as i64)
        .bind((now * 1000) as i64)
        .execute(&pool)
        .await
        .unwrap();
        urls.push(app.url(&format!("/valet/acme/a/b?{}", grant.to_query(&key))));
    }
    pool.close().await;
    (urls.remove(0), urls.remove(0))
}

#[tokio::test]
async fn a_single_use_url_works_exactly_once_under_concurrent_use() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let token = acme_with_blob(&app, "once", 1000).await;
    let url = url_of(&issue(&app, &token, json!({"path": "once", "permission": "read", "single_use": true})).await);
    let attempts: Vec<_> = (0..12)
        .map(|_| {
            let (client, url) = (app.client.clone(), url.clone());
            tokio::spawn(async move { client.get(url).send().await.unwrap().status() })
        })
        .collect();
    let mut statuses = Vec::new();
    for attempt in attempts {
        statuses.push(attempt.await.unwrap());
    }
    assert_eq!(statuses.iter().filter(|s| **s == StatusCode::OK).count(), 1, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == StatusCode::FORBIDDEN).count(), 11, "{statuses:?}");
    expect_problem(app.client.get(&url).send().await.unwrap(), StatusCode::FORBIDDEN, "valet_used").await;
}

#[tokio::test]
async fn rotation_keeps_old_urls_until_their_key_is_retired_on_every_instance() {
    let app = TestApp::spawn(Backend::Postgres).await;
    app.create_tenant("acme").await;
    let peer = app.spawn_peer(|_| {}).await;
    let token = app.rw_token("acme");
    put_blob(&app, &token, "f", bytes(100)).await;
    let old = issue(&app, &token, json!({"path": "f", "permission": "read"})).await;
    let old_url = url_of(&old);
    let on_peer = |url: &str| format!("{}{}", peer.base_url, &url[url.find("/valet/").unwrap()..]);

    let rotated =
        expect_json(app.admin(Method::POST, "/v1/admin/valet/signing-keys/rotate", None).await, StatusCode::CREATED)
            .await;
    assert_ne!(rotated["id"], old["key_id"]);
    let new = issue(&app, &token, json!({"path": "f", "permission": "read"})).await;
    assert_eq!(new["key_id"], rotated["id"]);
    for url in [&old_url, &url_of(&new)] {
        assert_eq!(app.client.get(on_peer(url)).send().await.unwrap().status(), StatusCode::OK, "{url}");
    }
    let keys = expect_json(app.admin(Method::GET, "/v1/admin/valet/signing-keys", None).await, StatusCode::OK).await;
    assert!(!keys.to_string().contains("secret"), "secrets never leave the catalog: {keys}");

    // The current key cannot be retired; the old one can, and its URLs die: at once on the
    // instance that retired it, on the peer (no Redis here to push the news) within the bound
    // of docs/valet-keys.md, one catalog poll or `FRESH`.
    let current = rotated["id"].as_str().unwrap();
    let response = app.admin(Method::DELETE, &format!("/v1/admin/valet/signing-keys/{current}"), None).await;
    expect_problem(response, StatusCode::CONFLICT, "signing_key_current").await;
    let old_key = old["key_id"].as_str().unwrap();
    let retired = app.admin(Method::DELETE, &format!("/v1/admin/valet/signing-keys/{old_key}"), None).await;
    assert_eq!(expect_json(retired, StatusCode::OK).await["state"], "retired");
    expect_problem(app.client.get(&old_url).send().await.unwrap(), StatusCode::FORBIDDEN, "valet_key_retired").await;
    refused_on_peer_within_the_bound(&app, &on_peer(&old_url), "valet_key_retired").await;
    assert_eq!(app.client.get(on_peer(&url_of(&new))).send().await.unwrap().status(), StatusCode::OK);

    // Revocation through one instance holds on the other.
    let id = new["id"].as_str().unwrap();
    let response =
        app.client.delete(app.url(&format!("/v1/tenants/acme/valet-keys/{id}"))).bearer_auth(&token).send().await;
    assert_eq!(response.unwrap().status(), StatusCode::NO_CONTENT);
    expect_problem(app.client.get(url_of(&new)).send().await.unwrap(), StatusCode::FORBIDDEN, "valet_revoked").await;
    refused_on_peer_within_the_bound(&app, &on_peer(&url_of(&new)), "valet_revoked").await;
}

/// Asserts that `url` (on a peer that may hold a cached check of its grant) is refused with
/// `code` within the documented bound after a revocation or retirement was acknowledged, and is
/// never served again after that.
async fn refused_on_peer_within_the_bound(app: &TestApp, url: &str, code: &str) {
    let bound = shardgate_api::valet::checks::FRESH + Duration::from_millis(500);
    let refused = eventually(bound, async || {
        let status = app.client.get(url).send().await.unwrap().status();
        (status == StatusCode::FORBIDDEN).then_some(())
    })
    .await;
    assert!(refused.is_some(), "the peer refuses {url} within {bound:?}");
    for _ in 0..3 {
        expect_problem(app.client.get(url).send().await.unwrap(), StatusCode::FORBIDDEN, code).await;
    }
}

#[tokio::test]
async fn issuing_checks_scope_lifetime_and_constraints() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    app.create_tenant("acme").await;
    put_blob(&app, &app.rw_token("acme"), "x", bytes(1)).await;
    let reader = app.token("acme", &[shardgate_gatekeeper::Scope::Read]);
    issue(&app, &reader, json!({"path": "x", "permission": "read"})).await;
    let post = |token: String, body: Value| {
        let request = app.client.post(app.url("/v1/tenants/acme/valet-keys")).bearer_auth(token).json(&body);
        async move { request.send().await.unwrap() }
    };
    let response = post(reader.clone(), json!({"path": "x", "permission": "write"})).await;
    expect_problem(response, StatusCode::FORBIDDEN, "insufficient_scope").await;
    let writer = app.rw_token("acme");
    for bad in [
        json!({"path": "x", "permission": "delete"}),
        json!({"path": "x", "permission": "read", "expires_in": 0}),
        json!({"path": "x", "permission": "read", "expires_in": 3601}),
        json!({"path": "a//b", "permission": "read"}),
        json!({"path": "../x", "permission": "read"}),
        json!({"path": "x", "permission": "read", "max_size": 10}),
        json!({"path": "x", "permission": "write", "content_disposition": "inline"}),
        json!({"path": "x", "permission": "read", "content_disposition": "evil\r\nSet-Cookie: a=b"}),
    ] {
        assert_eq!(post(writer.clone(), bad.clone()).await.status(), StatusCode::BAD_REQUEST, "{bad}");
    }
    let response = app
        .client
        .post(app.url("/v1/tenants/acme/valet-keys"))
        .bearer_auth(app.rw_token("bob"))
        .json(&json!({"path": "x", "permission": "read"}))
        .send()
        .await
        .unwrap();
    expect_problem(response, StatusCode::NOT_FOUND, "tenant_not_found").await;
}

#[tokio::test]
async fn the_valet_endpoint_can_have_a_listener_of_its_own() {
    let port = shardgate_tests::free_port();
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.valet.listen = Some(format!("127.0.0.1:{port}").parse().unwrap());
    })
    .await;
    let token = acme_with_blob(&app, "f", 1000).await;
    let key = issue(&app, &token, json!({"path": "f", "permission": "read"})).await;
    let url = url_of(&key);
    assert!(url.starts_with(&format!("http://127.0.0.1:{port}/valet/acme/f?")), "URLs name the valet listener: {url}");
    let response = app.client.get(&url).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.bytes().await.unwrap().len(), 1000);
    // Only valet URLs (and a liveness probe) are served there.
    let valet_base = format!("http://127.0.0.1:{port}");
    let api = app.client.get(format!("{valet_base}/v1/tenants/acme/blobs/f")).bearer_auth(&token).send().await;
    expect_problem(api.unwrap(), StatusCode::NOT_FOUND, "not_found").await;
    assert_eq!(app.client.get(format!("{valet_base}/healthz")).send().await.unwrap().status(), StatusCode::OK);
    // A browser on any origin may fetch a range.
    let preflight = app
        .client
        .request(Method::OPTIONS, &url)
        .header("origin", "https://app.example")
        .header("access-control-request-method", "GET")
        .header("access-control-request-headers", "range")
        .send()
        .await
        .unwrap();
    assert_eq!(preflight.headers()["access-control-allow-origin"], "https://app.example");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revocation_reaches_a_peer_holding_its_check_with_redis_up_and_frozen() {
    let redis = RedisServer::start().await;
    let redis_url = redis.url();
    let app = TestApp::spawn_with(Backend::Postgres, |c| {
        c.cache.redis_url = Some(SecretString::from(redis_url.clone()));
        c.cache.key_prefix = "valet-revocation".into();
    })
    .await;
    let peer = app.spawn_peer(|_| {}).await;
    let token = acme_with_blob(&app, "f", 10).await;
    let on_peer = |url: &str| format!("{}{}", peer.base_url, &url[url.find("/valet/").unwrap()..]);
    let keys: Vec<Value> = [
        issue(&app, &token, json!({"path": "f", "permission": "read"})).await,
        issue(&app, &token, json!({"path": "f", "permission": "read"})).await,
    ]
    .into();
    for key in &keys {
        // Downloaded twice through the peer: its check is cached there.
        for _ in 0..2 {
            assert_eq!(app.client.get(on_peer(&url_of(key))).send().await.unwrap().status(), StatusCode::OK);
        }
    }
    let revoke = async |key: &Value| {
        let id = key["id"].as_str().unwrap();
        let response =
            app.client.delete(app.url(&format!("/v1/tenants/acme/valet-keys/{id}"))).bearer_auth(&token).send().await;
        assert_eq!(response.unwrap().status(), StatusCode::NO_CONTENT);
    };

    // Redis up: the revoking instance announces the change and the peer drops its checks.
    revoke(&keys[0]).await;
    refused_on_peer_within_the_bound(&app, &on_peer(&url_of(&keys[0])), "valet_revoked").await;

    // Redis frozen: the revocation is still acknowledged, and the peer learns of it from the
    // catalog at its next poll.
    redis.pause();
    revoke(&keys[1]).await;
    refused_on_peer_within_the_bound(&app, &on_peer(&url_of(&keys[1])), "valet_revoked").await;
    redis.resume();
    peer.stop().await;
}

#[tokio::test]
async fn a_deleted_tenants_urls_do_not_open_a_new_tenant_of_the_same_name() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let token = acme_with_blob(&app, "f", 10).await;
    let old = url_of(&issue(&app, &token, json!({"path": "f", "permission": "read"})).await);
    assert_eq!(app.client.get(&old).send().await.unwrap().status(), StatusCode::OK);

    let deleted = app.admin(Method::DELETE, "/v1/admin/tenants/acme", None).await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    app.create_tenant("acme").await;
    // The first tenant's token predates the new one once a second has turned, so the new
    // tenant's blob is written with a token of its own.
    put_blob(&app, &app.rw_token("acme"), "f", bytes(20)).await;
    expect_problem(app.client.get(&old).send().await.unwrap(), StatusCode::FORBIDDEN, "valet_revoked").await;
}
