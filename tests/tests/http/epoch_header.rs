//! `x-shardgate-epoch`: every routed answer (records, blobs, index look-ups, valet URLs) names
//! the shard-map epoch it was routed on, problems after routing included; it is the epoch
//! `/v1/admin/shard-map` shows, it moves on the next answer after the map changes (also for a
//! read the record cache answers), and answers that never routed do not carry it.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use secrecy::SecretString;
use serde_json::{Value, json};
use shardgate_gatekeeper::Scope;
use shardgate_tests::{Backend, TestApp, eventually, expect_json, expect_problem, metric, record_path};

shardgate_tests::conformance!(
    every_routed_answer_names_the_epoch_of_the_shard_map,
    the_next_answer_after_a_map_change_names_the_new_epoch,
    answers_that_never_routed_carry_no_epoch,
);

const EPOCH: &str = "x-shardgate-epoch";

/// The epoch a response names, parsed as the decimal u64 it must be; `None` without the header.
fn epoch_of(response: &reqwest::Response) -> Option<u64> {
    let value = response.headers().get(EPOCH)?.to_str().expect("the epoch is ASCII");
    Some(value.parse().unwrap_or_else(|e| panic!("{EPOCH}: {value:?} is not a decimal u64 ({e})")))
}

/// The epoch of `/v1/admin/shard-map` now.
async fn map_epoch(app: &TestApp) -> u64 {
    u64::try_from(app.epoch().await).expect("the epoch is not negative")
}

/// Asserts that `response` has `status` and names `epoch`; returns it for further checks.
fn routed_on(response: reqwest::Response, status: StatusCode, epoch: u64, what: &str) -> reqwest::Response {
    assert_eq!(response.status(), status, "{what}");
    assert_eq!(epoch_of(&response), Some(epoch), "{what}: {EPOCH} is the shard map's epoch");
    response
}

async fn blob(
    app: &TestApp,
    method: Method,
    token: &str,
    path: &str,
    body: Option<&'static [u8]>,
) -> reqwest::Response {
    let mut request = app.client.request(method, app.url(&format!("/v1/tenants/acme/blobs/{path}"))).bearer_auth(token);
    if let Some(body) = body {
        request = request.body(body);
    }
    request.send().await.unwrap()
}

/// The URL of a read valet key for `path`, reached through the app's own address.
async fn valet_read_url(app: &TestApp, token: &str, path: &str) -> String {
    let request = app.client.post(app.url("/v1/tenants/acme/valet-keys")).bearer_auth(token);
    let key = expect_json(
        request.json(&json!({"path": path, "permission": "read"})).send().await.unwrap(),
        StatusCode::CREATED,
    )
    .await;
    let url = key["url"].as_str().unwrap();
    app.url(&url[url.find("/valet/").unwrap()..])
}

/// Defines index `by-town` on `/town` of acme's `users` and waits until it answers look-ups.
async fn town_index(app: &TestApp, token: &str) {
    let path = "/v1/tenants/acme/collections/users/indexes/by-town";
    let created = app.client.put(app.url(path)).bearer_auth(token).json(&json!({"field": "/town"})).send().await;
    expect_json(created.unwrap(), StatusCode::CREATED).await;
    let active = async || {
        let info: Value = app.client.get(app.url(path)).bearer_auth(token).send().await.ok()?.json().await.ok()?;
        (info["state"] == "active").then_some(())
    };
    eventually(Duration::from_secs(15), active).await.expect("the backfill finishes");
}

async fn every_routed_answer_names_the_epoch_of_the_shard_map(app: TestApp) {
    app.create_tenant("acme").await;
    let token = app.token("acme", &[Scope::Read, Scope::Write, Scope::Manage]);
    let epoch = map_epoch(&app).await;

    // Records: a write, a read from the shard and one the cache may answer, a listing.
    let put = routed_on(app.put_record("acme", "docs", "k", &json!({"v": 1})).await, StatusCode::CREATED, epoch, "PUT");
    let tag = put.headers()["etag"].to_str().unwrap().to_owned();
    routed_on(app.put_record("acme", "docs", "k", &json!({"v": 2})).await, StatusCode::OK, epoch, "PUT again");
    for read in ["GET (a miss: the write invalidated the key)", "GET again"] {
        routed_on(app.get_record("acme", "docs", "k").await, StatusCode::OK, epoch, read);
    }
    let path = record_path("acme", "docs", "k");
    let not_modified = app.send(Method::GET, &path, Some(&token), None, &[("if-none-match", "\"2\"")]).await;
    routed_on(not_modified, StatusCode::NOT_MODIFIED, epoch, "GET If-None-Match");
    routed_on(app.list_records("acme", "docs", "").await, StatusCode::OK, epoch, "list");
    // Problems given after routing carry it too.
    let stale = app.send(Method::PUT, &path, Some(&token), Some(&json!({"v": 3})), &[("if-match", &tag)]).await;
    let stale = routed_on(stale, StatusCode::PRECONDITION_FAILED, epoch, "PUT If-Match on an old version");
    expect_problem(stale, StatusCode::PRECONDITION_FAILED, "precondition_failed").await;
    routed_on(app.delete_record("acme", "docs", "k").await, StatusCode::NO_CONTENT, epoch, "DELETE");
    let gone =
        routed_on(app.get_record("acme", "docs", "k").await, StatusCode::NOT_FOUND, epoch, "GET of a deleted record");
    expect_problem(gone, StatusCode::NOT_FOUND, "record_not_found").await;

    // Blobs: upload, download, headers only, a missing one, the listing, a delete.
    routed_on(blob(&app, Method::PUT, &token, "a/b.bin", Some(b"bytes")).await, StatusCode::CREATED, epoch, "blob PUT");
    let got = routed_on(blob(&app, Method::GET, &token, "a/b.bin", None).await, StatusCode::OK, epoch, "blob GET");
    assert_eq!(got.bytes().await.unwrap().as_ref(), b"bytes");
    routed_on(blob(&app, Method::HEAD, &token, "a/b.bin", None).await, StatusCode::OK, epoch, "blob HEAD");
    let missing = routed_on(
        blob(&app, Method::GET, &token, "a/none", None).await,
        StatusCode::NOT_FOUND,
        epoch,
        "GET of no blob",
    );
    expect_problem(missing, StatusCode::NOT_FOUND, "blob_not_found").await;
    let listing = app.client.get(app.url("/v1/tenants/acme/blobs")).bearer_auth(&token).send().await.unwrap();
    routed_on(listing, StatusCode::OK, epoch, "blob listing");

    // A valet URL (issuing one records a grant; read the epoch after it).
    let url = valet_read_url(&app, &token, "a/b.bin").await;
    let epoch = map_epoch(&app).await;
    let download = routed_on(app.client.get(&url).send().await.unwrap(), StatusCode::OK, epoch, "valet GET");
    assert_eq!(download.bytes().await.unwrap().as_ref(), b"bytes");
    routed_on(blob(&app, Method::DELETE, &token, "a/b.bin", None).await, StatusCode::NO_CONTENT, epoch, "blob DELETE");

    // Index look-ups, by value and by range (defining the index changes the map: read it after).
    for (key, town) in [("u1", "Lyon"), ("u2", "Nice")] {
        expect_json(app.put_record("acme", "users", key, &json!({"town": town})).await, StatusCode::CREATED).await;
    }
    town_index(&app, &token).await;
    let epoch = map_epoch(&app).await;
    for query in ["value=Lyon", "from=A&to=Z"] {
        let url = app.url(&format!("/v1/tenants/acme/collections/users/indexes/by-town/records?{query}"));
        let found =
            routed_on(app.client.get(url).bearer_auth(&token).send().await.unwrap(), StatusCode::OK, epoch, query);
        assert!(!expect_json(found, StatusCode::OK).await["items"].as_array().unwrap().is_empty(), "{query}");
    }
}

async fn the_next_answer_after_a_map_change_names_the_new_epoch(app: TestApp) {
    app.create_tenant("acme").await;
    let token = app.rw_token("acme");
    let before = map_epoch(&app).await;
    routed_on(app.put_record("acme", "docs", "k", &json!({"v": 1})).await, StatusCode::CREATED, before, "PUT");
    routed_on(app.get_record("acme", "docs", "k").await, StatusCode::OK, before, "GET");

    // A tenant changed: a new map, named by the very next answers.
    let patched = app.admin(Method::PATCH, "/v1/admin/tenants/acme", Some(&json!({"tier": "premium"}))).await;
    expect_json(patched, StatusCode::OK).await;
    let patched = map_epoch(&app).await;
    assert!(patched > before, "a tenant change moves the epoch on ({before} → {patched})");
    routed_on(app.get_record("acme", "docs", "k").await, StatusCode::OK, patched, "GET after the PATCH");
    routed_on(
        app.put_record("acme", "docs", "k", &json!({"v": 2})).await,
        StatusCode::OK,
        patched,
        "PUT after the PATCH",
    );
    let blob = app.client.put(app.url("/v1/tenants/acme/blobs/x")).bearer_auth(&token).body("x").send().await;
    routed_on(blob.unwrap(), StatusCode::CREATED, patched, "blob PUT after the PATCH");

    // A shard registered: again.
    let (url, _) = app.extra_shard_url("extra").await;
    let registered = app.admin(Method::POST, "/v1/admin/shards", Some(&json!({"id": "extra", "url": url}))).await;
    expect_json(registered, StatusCode::CREATED).await;
    let registered = map_epoch(&app).await;
    assert!(registered > patched, "registering a shard moves the epoch on ({patched} → {registered})");
    routed_on(app.get_record("acme", "docs", "k").await, StatusCode::OK, registered, "GET after the registration");
    routed_on(app.delete_record("acme", "docs", "k").await, StatusCode::NO_CONTENT, registered, "DELETE after it");
}

async fn answers_that_never_routed_carry_no_epoch(app: TestApp) {
    app.create_tenant("acme").await;
    expect_json(app.put_record("acme", "docs", "k", &json!({"v": 1})).await, StatusCode::CREATED).await;
    let path = record_path("acme", "docs", "k");
    let no_token = app.send(Method::GET, &path, None, None, &[]).await;
    assert_eq!(no_token.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(epoch_of(&no_token), None, "401: refused before routing");
    let bad_token = app.send(Method::GET, &path, Some("not-a-token"), None, &[]).await;
    assert_eq!(bad_token.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(epoch_of(&bad_token), None, "401: refused before routing");
    let read_only = app.token("acme", &[Scope::Read]);
    let forbidden = app.send(Method::PUT, &path, Some(&read_only), Some(&json!({"v": 2})), &[]).await;
    assert_eq!(forbidden.status(), StatusCode::FORBIDDEN);
    assert_eq!(epoch_of(&forbidden), None, "403: refused before routing");
    let bad_json = app.put_raw(&path, &app.rw_token("acme"), "application/json", "{").await;
    assert_eq!(bad_json.status(), StatusCode::BAD_REQUEST);
    assert_eq!(epoch_of(&bad_json), None, "400 of the body: refused before routing");
    for probe in ["/healthz", "/readyz"] {
        let response = app.client.get(app.url(probe)).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{probe}");
        assert_eq!(epoch_of(&response), None, "{probe} routes nothing");
    }
    let admin = app.admin(Method::GET, "/v1/admin/shard-map", None).await;
    assert_eq!(admin.status(), StatusCode::OK);
    assert_eq!(epoch_of(&admin), None, "admin calls route nothing");
}

/// A read the record cache answers without touching the shard names the epoch of the map the
/// instance routed it on: after a map change, the new one. On SQLite the embedded default
/// caches in L1; on PostgreSQL the cache is Redis (with a key prefix of this test's own).
async fn a_cached_read_names_the_epoch_it_was_routed_on(app: TestApp) {
    app.create_tenant("acme").await;
    expect_json(app.put_record("acme", "hot", "k", &json!({"v": 1})).await, StatusCode::CREATED).await;
    expect_json(app.get_record("acme", "hot", "k").await, StatusCode::OK).await; // fills the cache
    let patched = app.admin(Method::PATCH, "/v1/admin/tenants/acme", Some(&json!({"tier": "premium"}))).await;
    expect_json(patched, StatusCode::OK).await;
    let epoch = map_epoch(&app).await;
    let loads = metric(&app.client, app.metrics_base(), "shardgate_cache_loads_total").await;
    routed_on(app.get_record("acme", "hot", "k").await, StatusCode::OK, epoch, "a cached GET after a map change");
    let loaded = metric(&app.client, app.metrics_base(), "shardgate_cache_loads_total").await - loads;
    assert_eq!(loaded, 0.0, "the cache answered the read: the shard was not read");
}

mod a_cached_read_names_the_epoch_it_was_routed_on {
    use super::*;

    #[tokio::test]
    async fn sqlite() {
        super::a_cached_read_names_the_epoch_it_was_routed_on(TestApp::spawn(Backend::Sqlite).await).await;
    }

    #[tokio::test]
    async fn postgres_with_redis() {
        let prefix = format!("sg-epoch-{}", uuid::Uuid::new_v4().simple());
        let app = TestApp::spawn_with(Backend::Postgres, |config| {
            config.cache.redis_url = Some(SecretString::from("redis://127.0.0.1:6379".to_owned()));
            config.cache.key_prefix = prefix;
        })
        .await;
        super::a_cached_read_names_the_epoch_it_was_routed_on(app).await;
    }
}
