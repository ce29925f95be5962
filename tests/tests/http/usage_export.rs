//! Daily usage for billing (`GET /v1/admin/usage?day=`) and the valet bytes quota: the export
//! counts exactly the requests a tenant's tokens made and its valet URLs answered, the bytes of
//! their bodies (known lengths and streamed ones), its valet bytes and one hour of its storage per
//! hourly sample, taken once however many instances run; a valet transfer that would take the
//! day's valet bytes over the quota is refused before its bytes move, on every instance, and two
//! instances racing never let more through than the quota.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shardgate_api::wire::timestamps::date_of_day;
use shardgate_shard_router::Clock;
use shardgate_shard_router::usage::daily::day_of;
use shardgate_tests::{Backend, TestApp, eventually, expect_json, expect_problem, record_path};

shardgate_tests::on_both_engines!(
    the_export_counts_requests_bytes_storage_and_valet_bytes_exactly,
    valet_bytes_per_day_refuses_a_transfer_before_its_bytes_move_on_every_instance,
);

shardgate_tests::conformance!(the_export_refuses_bad_days_and_tenant_tokens);

/// The app, storing what it counts every 200 ms.
async fn spawn(backend: Backend) -> TestApp {
    TestApp::spawn_with(backend, |config| config.usage.flush_interval = Duration::from_millis(200)).await
}

/// Today by the app's clock, `YYYY-MM-DD`.
fn today(app: &TestApp) -> String {
    date_of_day(day_of(app.clock.now_ms()))
}

/// The export of `day`: its lines by tenant, and the hours sampled.
async fn export(app: &TestApp, day: &str) -> (Vec<Value>, u64) {
    let response = app.admin(Method::GET, &format!("/v1/admin/usage?day={day}"), None).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "application/x-ndjson");
    let hours = response.headers()["usage-hours-sampled"].to_str().unwrap().parse().unwrap();
    let text = response.text().await.unwrap();
    let lines = text.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    (lines, hours)
}

/// `tenant`'s line of `day`, if any.
async fn line_of(app: &TestApp, day: &str, tenant: &str) -> Option<Value> {
    export(app, day).await.0.into_iter().find(|line| line["tenant"] == tenant)
}

/// What a tenant's requests should add up to.
#[derive(Debug, Default)]
struct Sent {
    requests: u64,
    written: u64,
    read: u64,
}

impl Sent {
    /// Sends `request` (whose body is `written` bytes), counting it; answers the status and body.
    async fn send(&mut self, request: reqwest::RequestBuilder, written: usize) -> (StatusCode, Vec<u8>) {
        let response = request.send().await.unwrap();
        let status = response.status();
        let body = response.bytes().await.unwrap().to_vec();
        self.requests += 1;
        self.written += written as u64;
        self.read += body.len() as u64;
        (status, body)
    }
}

async fn the_export_counts_requests_bytes_storage_and_valet_bytes_exactly(backend: Backend) {
    let app = spawn(backend).await;
    // The hour the app started in is sampled before anything is stored.
    let started = today(&app);
    let sampled =
        eventually(Duration::from_secs(10), async || (export(&app, &started).await.1 >= 1).then_some(())).await;
    assert!(sampled.is_some(), "the first flush samples the hour");
    app.create_tenant("acme").await;
    app.create_tenant("bob").await;
    let token = app.rw_token("acme");
    let mut acme = Sent::default();

    for key in 0..5 {
        let value = json!({"n": key, "pad": "x".repeat(key * 10)});
        let body = serde_json::to_vec(&value).unwrap();
        let put = app.client.put(app.url(&record_path("acme", "notes", &key.to_string())));
        let request = put.bearer_auth(&token).header("content-type", "application/json").body(body.clone());
        assert_eq!(acme.send(request, body.len()).await.0, StatusCode::CREATED);
    }
    for key in ["0", "3", "missing"] {
        let get = app.client.get(app.url(&record_path("acme", "notes", key))).bearer_auth(&token);
        acme.send(get, 0).await;
    }
    // A blob of declared length, one streamed without, and a download (streamed back).
    let blob = |path: &str| app.client.put(app.url(&format!("/v1/tenants/acme/blobs/{path}"))).bearer_auth(&token);
    assert_eq!(acme.send(blob("a.bin").body(vec![1u8; 3000]), 3000).await.0, StatusCode::CREATED);
    let pieces: Vec<Result<Vec<u8>, std::io::Error>> = (0..10).map(|_| Ok(vec![2u8; 200])).collect();
    let streamed = blob("b.bin").body(reqwest::Body::wrap_stream(futures::stream::iter(pieces)));
    assert_eq!(acme.send(streamed, 2000).await.0, StatusCode::CREATED);
    let download = app.client.get(app.url("/v1/tenants/acme/blobs/a.bin")).bearer_auth(&token);
    let (status, bytes) = acme.send(download, 0).await;
    assert_eq!((status, bytes.len()), (StatusCode::OK, 3000));
    // Another tenant's token on acme's data is bob's request, not acme's.
    let bobs = app.client.get(app.url(&record_path("acme", "notes", "0"))).bearer_auth(app.rw_token("bob"));
    assert_eq!(bobs.send().await.unwrap().status(), StatusCode::NOT_FOUND);
    // A valet key, then a download through it: a request, and valet bytes rather than bytes read.
    let key_body = serde_json::to_vec(&json!({"path": "a.bin", "permission": "read"})).unwrap();
    let issue = app.client.post(app.url("/v1/tenants/acme/valet-keys")).bearer_auth(&token);
    let issue = issue.header("content-type", "application/json").body(key_body.clone());
    let (status, key) = acme.send(issue, key_body.len()).await;
    assert_eq!(status, StatusCode::CREATED);
    let key: Value = serde_json::from_slice(&key).unwrap();
    let valet = app.client.get(key["url"].as_str().unwrap()).send().await.unwrap();
    assert_eq!(valet.bytes().await.unwrap().len(), 3000);

    let day = today(&app);
    let expected = json!({
        "day": day, "tenant": "acme", "storage_byte_hours": 0, "requests": acme.requests + 1,
        "bytes_read": acme.read, "bytes_written": acme.written, "valet_bytes": 3000,
    });
    // Streamed bodies are counted when they end, a moment after the client has them.
    let seen = eventually(Duration::from_secs(10), async || {
        let line = line_of(&app, &day, "acme").await?;
        (line["storage_byte_hours"] == 0 && line == expected).then_some(())
    })
    .await;
    assert!(seen.is_some(), "expected {expected}, exported {:?}", line_of(&app, &day, "acme").await);
    let bob = line_of(&app, &day, "bob").await.expect("bob made a request");
    assert_eq!((bob["requests"].clone(), bob["valet_bytes"].clone()), (json!(1), json!(0)), "{bob}");

    // An hour later one sample adds an hour of what acme stores, however many instances run.
    let peer = app.spawn_peer(|config| config.usage.flush_interval = Duration::from_millis(200)).await;
    let stored = expect_json(app.admin(Method::GET, "/v1/admin/tenants/acme/usage", None).await, StatusCode::OK).await;
    let bytes = stored["usage"]["record_bytes"].as_u64().unwrap() + stored["usage"]["blob_bytes"].as_u64().unwrap();
    assert!(bytes > 5000, "{stored}");
    let before = export(&app, &today(&app)).await.1;
    app.clock.advance(Duration::from_secs(3600));
    let later = today(&app);
    let sampled = eventually(Duration::from_secs(10), async || {
        let line = line_of(&app, &later, "acme").await?;
        (line["storage_byte_hours"] == bytes).then_some(())
    })
    .await;
    assert!(sampled.is_some(), "{:?}", line_of(&app, &later, "acme").await);
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let line = line_of(&app, &later, "acme").await.unwrap();
    assert_eq!(line["storage_byte_hours"], bytes, "the hour is counted once: {line}");
    let hours = export(&app, &later).await.1;
    assert_eq!(hours, if later == day { before + 1 } else { 1 });
    drop(peer);
}

/// Sets `tenant`'s own quotas.
async fn set_quotas(app: &TestApp, tenant: &str, quotas: Value) {
    let body = json!({"quotas": quotas});
    let patched = app.admin(Method::PATCH, &format!("/v1/admin/tenants/{tenant}"), Some(&body)).await;
    expect_json(patched, StatusCode::OK).await;
}

/// A valet key's URL for `path` of acme with `permission`.
async fn valet_url(app: &TestApp, path: &str, permission: &str) -> String {
    let key =
        app.issue_valet_key("acme", &app.rw_token("acme"), &json!({"path": path, "permission": permission})).await;
    key["url"].as_str().unwrap().to_owned()
}

/// What acme's own usage says of its valet bytes today.
async fn valet_quota(app: &TestApp) -> Value {
    let own = app.client.get(app.url("/v1/tenants/acme/usage")).bearer_auth(app.rw_token("acme"));
    expect_json(own.send().await.unwrap(), StatusCode::OK).await["quotas"]["valet_bytes_per_day"].clone()
}

async fn valet_bytes_per_day_refuses_a_transfer_before_its_bytes_move_on_every_instance(backend: Backend) {
    let app = spawn(backend).await;
    let peer = app.spawn_peer(|_| {}).await;
    app.create_tenant("acme").await;
    set_quotas(&app, "acme", json!({"valet_bytes_per_day": 1000})).await;
    let stored = app.client.put(app.url("/v1/tenants/acme/blobs/b.bin")).bearer_auth(app.rw_token("acme"));
    assert_eq!(stored.body(vec![9u8; 100]).send().await.unwrap().status(), StatusCode::CREATED);
    let here = valet_url(&app, "b.bin", "read").await;
    let there = here.replacen(&app.base_url, &peer.base_url, 1);
    assert_ne!(here, there);
    // The peer follows the quota.
    let peer_sees = eventually(Duration::from_secs(10), async || {
        let url = format!("{}/v1/tenants/acme/usage", peer.base_url);
        let own = shardgate_tests::get_json(&app.client, &url, &app.rw_token("acme")).await;
        (own["quotas"]["valet_bytes_per_day"]["limit"] == 1000).then_some(())
    })
    .await;
    assert!(peer_sees.is_some());

    // 16 downloads of 100 bytes race on two instances: exactly 10 fit the day's 1000 bytes.
    let downloads = (0..16).map(|i| {
        let url = if i % 2 == 0 { here.clone() } else { there.clone() };
        let client = app.client.clone();
        async move {
            let response = client.get(url).send().await.unwrap();
            let status = response.status();
            let body = response.bytes().await.unwrap();
            (status, body)
        }
    });
    let answers = futures::future::join_all(downloads).await;
    let served = answers.iter().filter(|(status, body)| *status == StatusCode::OK && body.len() == 100).count();
    let refused: Vec<Value> = answers
        .iter()
        .filter(|(status, _)| *status == StatusCode::CONFLICT)
        .map(|(_, body)| serde_json::from_slice(body).unwrap())
        .collect();
    assert_eq!((served, refused.len()), (10, 6), "{answers:?}");
    for problem in &refused {
        assert_eq!(problem["code"], "quota_exceeded", "{problem}");
        assert_eq!(problem["quota"]["name"], "valet_bytes_per_day", "{problem}");
        assert_eq!(
            (problem["quota"]["limit"].clone(), problem["quota"]["requested"].clone()),
            (json!(1000), json!(100))
        );
    }
    assert_eq!(valet_quota(&app).await, json!({"limit": 1000, "used": 1000}));

    // Raised: a range counts its own bytes; a declared upload is taken up front; a streamed one
    // as it arrives, and refused (nothing stored) once it would cross the quota.
    set_quotas(&app, "acme", json!({"valet_bytes_per_day": 1500})).await;
    let range = app.client.get(&here).header("range", "bytes=0-49").send().await.unwrap();
    assert_eq!(range.status(), StatusCode::PARTIAL_CONTENT);
    assert_eq!(range.bytes().await.unwrap().len(), 50);
    let upload = valet_url(&app, "up/declared", "write").await;
    let declared = app.client.put(&upload).body(vec![1u8; 300]).send().await.unwrap();
    assert_eq!(declared.status(), StatusCode::CREATED);
    assert_eq!(valet_quota(&app).await, json!({"limit": 1500, "used": 1350}));
    let too_big = valet_url(&app, "up/streamed", "write").await;
    let pieces: Vec<Result<Vec<u8>, std::io::Error>> = (0..10).map(|_| Ok(vec![2u8; 20])).collect();
    let streamed = app.client.put(&too_big).body(reqwest::Body::wrap_stream(futures::stream::iter(pieces)));
    let problem = expect_problem(streamed.send().await.unwrap(), StatusCode::CONFLICT, "quota_exceeded").await;
    assert_eq!(problem["quota"]["name"], "valet_bytes_per_day", "{problem}");
    let gone = app.client.get(app.url("/v1/tenants/acme/blobs/up/streamed")).bearer_auth(app.rw_token("acme"));
    assert_eq!(gone.send().await.unwrap().status(), StatusCode::NOT_FOUND, "nothing of it is stored");
    // What the refused upload reserved and did not keep is given back (it received at most
    // the 150 bytes that fitted).
    let given_back = eventually(Duration::from_secs(10), async || {
        let used = valet_quota(&app).await["used"].as_u64()?;
        (1350..=1500).contains(&used).then_some(used)
    })
    .await;
    assert!(given_back.is_some(), "{}", valet_quota(&app).await);
    let fits = valet_url(&app, "up/small", "write").await;
    let pieces: Vec<Result<Vec<u8>, std::io::Error>> = (0..5).map(|_| Ok(vec![3u8; 4])).collect();
    let small = app.client.put(&fits).body(reqwest::Body::wrap_stream(futures::stream::iter(pieces)));
    let small = small.send().await.unwrap();
    let used_now = valet_quota(&app).await["used"].as_u64().unwrap();
    if used_now + 20 <= 1500 {
        assert_eq!(small.status(), StatusCode::CREATED);
    }
    // The export names the day's valet bytes; a stored quota-free tenant's valet bytes count too.
    let line = line_of(&app, &today(&app), "acme").await.unwrap();
    assert_eq!(line["valet_bytes"], valet_quota(&app).await["used"], "{line}");
}

async fn the_export_refuses_bad_days_and_tenant_tokens(app: TestApp) {
    app.create_tenant("acme").await;
    let today_day = day_of(app.clock.now_ms());
    for (day, says) in [
        ("2026-02-30".to_owned(), "YYYY-MM-DD"),
        ("yesterday".to_owned(), "YYYY-MM-DD"),
        (date_of_day(today_day + 1), "after today"),
        (date_of_day(today_day - 400), "older than the usage kept"),
    ] {
        let answer = app.admin(Method::GET, &format!("/v1/admin/usage?day={day}"), None).await;
        let problem = expect_problem(answer, StatusCode::BAD_REQUEST, "invalid_query").await;
        assert!(problem["detail"].as_str().unwrap().contains(says), "{day}: {problem}");
    }
    let missing = app.admin(Method::GET, "/v1/admin/usage", None).await;
    expect_problem(missing, StatusCode::BAD_REQUEST, "invalid_query").await;
    // The oldest day kept answers (empty); a tenant's token is no admin's.
    let (lines, _) = export(&app, &date_of_day(today_day - 399)).await;
    assert!(lines.is_empty(), "{lines:?}");
    let tenants = app.client.get(app.url(&format!("/v1/admin/usage?day={}", today(&app))));
    let refused = tenants.bearer_auth(app.rw_token("acme")).send().await.unwrap();
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
}
