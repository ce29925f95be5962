//! `/v1/admin/shards`: registering, inspecting and retiring shards.

use reqwest::{Method, StatusCode};
use secrecy::SecretString;
use serde_json::{Value, json};
use shardgate_shard_router::ShardId;
use shardgate_shard_router::router::ShardSeed;
use shardgate_tests::{
    Backend, SEEDED_SHARDS, TestApp, expect_any_problem, expect_json, expect_problem, is_rfc3339, open_shard,
};

shardgate_tests::conformance!(
    unsafe_shard_urls_are_refused,
    one_database_is_never_two_shards,
    shard_identity_markers_are_checked_when_an_instance_opens_its_shards,
    the_four_seeded_shards_share_the_vshards_evenly,
    an_operator_registers_a_shard_pins_a_tenant_on_it_and_retires_it,
    registering_a_bad_shard_fails_without_leaking_its_url,
    shard_statistics_count_live_records_and_tenants,
    shards_in_use_or_unknown_cannot_be_deleted,
    fleet_totals_count_a_moved_tenant_once_and_shards_show_their_datas_size,
);

fn assert_shard_shape(shard: &Value, engine: &str) {
    assert!(shard["id"].is_string(), "{shard}");
    assert_eq!(shard["engine"], engine, "{shard}");
    assert!(["active", "read_only", "draining", "offline"].contains(&shard["state"].as_str().unwrap_or("")), "{shard}");
    assert!(shard["vshards"].is_u64(), "{shard}");
    assert!(shard["tenants"].is_u64(), "{shard}");
    assert!(shard["pinned_tenants"].is_u64(), "{shard}");
    assert!(shard["records"].is_u64() || shard["records"].is_null(), "{shard}");
    let connections = &shard["connections"];
    if !connections.is_null() {
        let count = |field: &str| connections[field].as_u64().unwrap_or_else(|| panic!("{field}: {shard}"));
        assert!(count("idle") <= count("open") && count("open") <= count("max") && count("max") >= 1, "{shard}");
    }
    assert!(is_rfc3339(shard["created_at"].as_str().unwrap_or("")), "{shard}");
    assert!(is_rfc3339(shard["updated_at"].as_str().unwrap_or("")), "{shard}");
}

async fn get_text(app: &TestApp, path: &str) -> String {
    let response = app.admin(Method::GET, path, None).await;
    assert_eq!(response.status(), StatusCode::OK, "GET {path}");
    response.text().await.unwrap()
}

async fn the_four_seeded_shards_share_the_vshards_evenly(app: TestApp) {
    let engine = app.backend().engine();
    let list = expect_json(app.admin(Method::GET, "/v1/admin/shards", None).await, StatusCode::OK).await;
    let items = list["items"].as_array().unwrap();
    let ids: Vec<&str> = items.iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, SEEDED_SHARDS);
    for shard in items {
        assert_shard_shape(shard, engine);
        assert_eq!(shard["state"], "active");
        assert_eq!(shard["vshards"], 256);
        assert_eq!(shard["tenants"], 0);
        assert_eq!(shard["pinned_tenants"], 0);
        let one = expect_json(
            app.admin(Method::GET, &format!("/v1/admin/shards/{}", shard["id"].as_str().unwrap()), None).await,
            StatusCode::OK,
        )
        .await;
        assert_shard_shape(&one, engine);
        assert_eq!(one["id"], shard["id"]);
        assert_eq!(one["records"], 0, "a new shard holds no records: {one}");
    }
    // No URL, path or database name of a seeded shard is shown.
    let text = get_text(&app, "/v1/admin/shards").await;
    for (id, url) in app.shard_urls() {
        assert!(!text.contains(&url), "the URL of {id} leaks: {text}");
        if let Some(db) = app.pg_database_of(&id) {
            assert!(!text.contains(&db), "the database of {id} leaks: {text}");
        }
        assert!(!text.contains(&format!("{id}.db")), "the file of {id} leaks: {text}");
        let one = get_text(&app, &format!("/v1/admin/shards/{id}")).await;
        assert!(!one.contains(&url) && !one.contains("postgres://") && !one.contains("sqlite:"), "{one}");
    }
}

async fn an_operator_registers_a_shard_pins_a_tenant_on_it_and_retires_it(app: TestApp) {
    let engine = app.backend().engine();
    let (url, secret) = app.extra_shard_url("extra").await;
    let epoch = app.epoch().await;

    let response = app.admin(Method::POST, "/v1/admin/shards", Some(&json!({"id": "extra", "url": url}))).await;
    let status = response.status();
    let text = response.text().await.unwrap();
    assert_eq!(status, StatusCode::CREATED, "{text}");
    assert!(!text.contains(&url) && !text.contains(&secret), "the new shard's URL leaks: {text}");
    let shard: Value = serde_json::from_str(&text).unwrap();
    assert_shard_shape(&shard, engine);
    assert_eq!(shard["id"], "extra");
    assert_eq!(shard["state"], "active");
    assert_eq!(shard["vshards"], 0, "a new shard owns no vshards until a rebalance");
    assert_eq!(shard["tenants"], 0);
    assert!(app.epoch().await > epoch, "registering a shard is a shard-map change");

    for path in ["/v1/admin/shards", "/v1/admin/shards/extra", "/v1/admin/shard-map"] {
        let text = get_text(&app, path).await;
        assert!(!text.contains(&url) && !text.contains(&secret), "{path} leaks the URL: {text}");
        assert!(text.contains("extra"), "{path} lists the new shard: {text}");
    }

    // Registering it twice is a conflict.
    let response = app.admin(Method::POST, "/v1/admin/shards", Some(&json!({"id": "extra", "url": url}))).await;
    let problem = expect_problem(response, StatusCode::CONFLICT, "shard_exists").await;
    assert!(!problem.to_string().contains(&secret), "{problem}");

    // A tenant pinned to it lives there.
    let tenant = app.create_tenant_with(&json!({"id": "big", "tier": "premium", "shard": "extra"})).await;
    assert_eq!(tenant["shard"], "extra");
    assert_eq!(tenant["pinned"], true);
    expect_json(app.put_record("big", "docs", "d1", &json!({"on": "extra"})).await, StatusCode::CREATED).await;
    let route = app.route("big", "docs", "d1").await;
    assert_eq!(route["strategy"], "lookup");
    assert_eq!(route["shard"], "extra");
    let stats = expect_json(app.admin(Method::GET, "/v1/admin/shards/extra", None).await, StatusCode::OK).await;
    assert_eq!(stats["tenants"], 1, "{stats}");
    assert_eq!(stats["pinned_tenants"], 1, "{stats}");
    assert_eq!(stats["records"], 1, "{stats}");

    // In use: cannot be deleted.
    let response = app.admin(Method::DELETE, "/v1/admin/shards/extra", None).await;
    expect_problem(response, StatusCode::CONFLICT, "shard_in_use").await;

    // Once its tenant is gone it can.
    let response = app.admin(Method::DELETE, "/v1/admin/tenants/big", None).await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    let response = app.admin(Method::DELETE, "/v1/admin/shards/extra", None).await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    let response = app.admin(Method::GET, "/v1/admin/shards/extra", None).await;
    expect_problem(response, StatusCode::NOT_FOUND, "shard_not_found").await;
    let list = expect_json(app.admin(Method::GET, "/v1/admin/shards", None).await, StatusCode::OK).await;
    assert_eq!(list["items"].as_array().unwrap().len(), 4);
    let response = app.admin(Method::POST, "/v1/admin/tenants", Some(&json!({"id": "late", "shard": "extra"}))).await;
    expect_problem(response, StatusCode::UNPROCESSABLE_ENTITY, "unknown_shard").await;
}

async fn registering_a_bad_shard_fails_without_leaking_its_url(app: TestApp) {
    let post = async |body: Value| app.admin(Method::POST, "/v1/admin/shards", Some(&body)).await;

    let unreachable = "postgres://postgres:s3cret-pw@127.0.0.1:1/nope";
    let response = post(json!({"id": "far", "url": unreachable})).await;
    let problem = expect_problem(response, StatusCode::UNPROCESSABLE_ENTITY, "shard_unreachable").await;
    let text = problem.to_string();
    assert!(!text.contains("s3cret-pw") && !text.contains("127.0.0.1:1"), "the URL leaks: {text}");

    for url in ["mysql://root:s3cret-pw@db/x", "http://example.com/db", "not a url"] {
        let response = post(json!({"id": "odd", "url": url})).await;
        let problem = expect_problem(response, StatusCode::BAD_REQUEST, "invalid_database_url").await;
        assert!(!problem.to_string().contains("s3cret-pw"), "the URL leaks: {problem}");
    }

    let response = post(json!({"id": "shard-0", "url": unreachable})).await;
    expect_problem(response, StatusCode::CONFLICT, "shard_exists").await;

    for body in [json!({"id": "Bad Id", "url": unreachable}), json!({"id": "x"}), json!({"id": "x", "url": 1})] {
        expect_problem(post(body).await, StatusCode::BAD_REQUEST, "invalid_body").await;
    }
    let response = post(json!({"id": "x", "url": unreachable, "extra": true})).await;
    expect_problem(response, StatusCode::BAD_REQUEST, "invalid_body").await;

    let list = expect_json(app.admin(Method::GET, "/v1/admin/shards", None).await, StatusCode::OK).await;
    assert_eq!(list["items"].as_array().unwrap().len(), 4, "nothing was registered: {list}");
}

async fn shard_statistics_count_live_records_and_tenants(app: TestApp) {
    let tenant = app.create_tenant("acme").await;
    let home = tenant["shard"].as_str().unwrap().to_owned();
    for key in ["a", "b", "c", "d"] {
        expect_json(app.put_record("acme", "docs", key, &json!(1)).await, StatusCode::CREATED).await;
    }
    app.put_record("acme", "docs", "a", &json!(2)).await;
    assert_eq!(app.delete_record("acme", "docs", "d").await.status(), StatusCode::NO_CONTENT);

    let stats =
        expect_json(app.admin(Method::GET, &format!("/v1/admin/shards/{home}"), None).await, StatusCode::OK).await;
    assert_eq!(stats["tenants"], 1, "{stats}");
    assert_eq!(stats["pinned_tenants"], 0, "{stats}");
    assert_eq!(stats["records"], 3, "three live records (one deleted): {stats}");
    // Its pool on this instance: connections were opened for the writes and the counts.
    assert_shard_shape(&stats, app.backend().engine());
    assert!(stats["connections"]["open"].as_u64().unwrap() >= 1, "{stats}");
    if app.backend() == Backend::Sqlite {
        assert!(stats["connections"]["max"].as_u64().unwrap() <= 4, "SQLite pools open at most 4: {stats}");
    }
    for other in SEEDED_SHARDS.iter().filter(|s| **s != home) {
        let stats =
            expect_json(app.admin(Method::GET, &format!("/v1/admin/shards/{other}"), None).await, StatusCode::OK).await;
        assert_eq!(stats["tenants"], 0, "{stats}");
        assert_eq!(stats["records"], 0, "{stats}");
    }
}

async fn shards_in_use_or_unknown_cannot_be_deleted(app: TestApp) {
    for shard in SEEDED_SHARDS {
        let response = app.admin(Method::DELETE, &format!("/v1/admin/shards/{shard}"), None).await;
        expect_problem(response, StatusCode::CONFLICT, "shard_in_use").await;
    }
    let response = app.admin(Method::GET, "/v1/admin/shards/nowhere", None).await;
    expect_problem(response, StatusCode::NOT_FOUND, "shard_not_found").await;
    let response = app.admin(Method::DELETE, "/v1/admin/shards/nowhere", None).await;
    expect_problem(response, StatusCode::NOT_FOUND, "shard_not_found").await;
    let response = app.admin(Method::PATCH, "/v1/admin/shards/nowhere", Some(&json!({"state": "offline"}))).await;
    expect_problem(response, StatusCode::NOT_FOUND, "shard_not_found").await;
    let response = app.admin(Method::PATCH, "/v1/admin/shards/shard-0", Some(&json!({"state": "sleeping"}))).await;
    expect_any_problem(response, StatusCode::BAD_REQUEST).await;
    let list = expect_json(app.admin(Method::GET, "/v1/admin/shards", None).await, StatusCode::OK).await;
    assert!(list["items"].as_array().unwrap().iter().all(|s| s["state"] == "active"), "{list}");
}

async fn unsafe_shard_urls_are_refused(app: TestApp) {
    let post = async |id: &str, url: &str| {
        app.admin(Method::POST, "/v1/admin/shards", Some(&json!({"id": id, "url": url}))).await
    };
    // In-memory SQLite: each pooled connection would be an empty database of its own.
    for url in ["sqlite::memory:", "sqlite://:memory:", "sqlite://?mode=memory", "sqlite://file::memory:?cache=shared"]
    {
        let problem =
            expect_problem(post("mem", url).await, StatusCode::UNPROCESSABLE_ENTITY, "unsafe_shard_url").await;
        assert!(problem["detail"].as_str().unwrap().contains("in-memory"), "{problem}");
    }
    // A SQLite file under a PostgreSQL catalog would be a different file on every instance's host.
    let file = app.data_dir().join("local-shard.db");
    let response = post("local", &format!("sqlite://{}", file.display())).await;
    if app.backend() == Backend::Postgres {
        let problem = expect_problem(response, StatusCode::UNPROCESSABLE_ENTITY, "unsafe_shard_url").await;
        assert!(problem["detail"].as_str().unwrap().contains("SQLite catalog"), "{problem}");
        assert!(!file.exists(), "nothing was created on the gateway's host");
    } else {
        expect_json(response, StatusCode::CREATED).await;
    }
    let list = expect_json(app.admin(Method::GET, "/v1/admin/shards", None).await, StatusCode::OK).await;
    let ids: Vec<&str> = list["items"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert!(!ids.contains(&"mem"), "{list}");
}

/// Another URL for the same database: a different spelling of the SQLite path, or the same
/// PostgreSQL database with a connection parameter.
fn alias_of(url: &str) -> String {
    match url.rsplit_once('/') {
        Some((dir, file)) if url.starts_with("sqlite:") => format!("{dir}/./{file}"),
        _ => format!("{url}?application_name=alias"),
    }
}

async fn one_database_is_never_two_shards(app: TestApp) {
    let post = async |id: &str, url: &str| {
        app.admin(Method::POST, "/v1/admin/shards", Some(&json!({"id": id, "url": url}))).await
    };
    let (url, secret) = app.extra_shard_url("extra").await;
    expect_json(post("extra", &url).await, StatusCode::CREATED).await;

    // The same database under another id, even by another URL, is refused: it carries a marker.
    for (id, other) in [("twin", url.clone()), ("alias", alias_of(&url))] {
        let problem = expect_problem(post(id, &other).await, StatusCode::CONFLICT, "shard_database_claimed").await;
        let detail = problem["detail"].as_str().unwrap();
        assert!(detail.contains("shard extra of this catalog"), "{problem}");
        assert!(!detail.contains(&secret), "the URL leaks: {problem}");
    }
    // So is a seeded shard's database (seeded shards carry their marker from the start).
    let (_, seeded) = app.shard_urls().into_iter().next().unwrap();
    let problem = expect_problem(post("copy", &seeded).await, StatusCode::CONFLICT, "shard_database_claimed").await;
    assert!(problem["detail"].as_str().unwrap().contains("shard shard-0"), "{problem}");

    // Removing a shard erases its marker: the database may become a shard again, under any id.
    let response = app.admin(Method::DELETE, "/v1/admin/shards/extra", None).await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    let again = expect_json(post("renamed", &alias_of(&url)).await, StatusCode::CREATED).await;
    assert_eq!(again["id"], "renamed");
    let list = expect_json(app.admin(Method::GET, "/v1/admin/shards", None).await, StatusCode::OK).await;
    let ids: Vec<&str> = list["items"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["renamed", "shard-0", "shard-1", "shard-2", "shard-3"]);
}

async fn shard_identity_markers_are_checked_when_an_instance_opens_its_shards(mut app: TestApp) {
    app.create_tenant_with(&json!({"id": "one", "shard": "shard-1"})).await;
    app.create_tenant_with(&json!({"id": "zero", "shard": "shard-0"})).await;
    expect_json(app.put_record("one", "docs", "d1", &json!({"n": 1})).await, StatusCode::CREATED).await;
    let urls: std::collections::HashMap<String, String> = app.shard_urls().into_iter().collect();
    // shard-0 as a deployment from before markers has it: none. shard-1's URL now leads to a
    // database that says it is shard-2 (a restore or a DNS change gone wrong).
    let zero = open_shard(&urls["shard-0"]).await;
    sqlx::query("DELETE FROM shard_identity").execute(&zero).await.unwrap();
    let one = open_shard(&urls["shard-1"]).await;
    sqlx::query("UPDATE shard_identity SET shard_id = 'shard-2'").execute(&one).await.unwrap();
    app.restart().await;

    // shard-0 got its marker back and serves; shard-1 is not used, and says why.
    let marker: (String,) = sqlx::query_as("SELECT shard_id FROM shard_identity").fetch_one(&zero).await.unwrap();
    assert_eq!(marker.0, "shard-0");
    expect_json(app.put_record("zero", "docs", "d1", &json!({"n": 0})).await, StatusCode::CREATED).await;
    let stats = expect_json(app.admin(Method::GET, "/v1/admin/shards/shard-1", None).await, StatusCode::OK).await;
    assert!(stats["problem"].as_str().unwrap().contains("shard shard-2"), "{stats}");
    assert!(stats["breaker"].is_null() && stats["records"].is_null(), "{stats}");
    assert!(stats["connections"].is_null(), "no pool is open for it: {stats}");
    let healthy = expect_json(app.admin(Method::GET, "/v1/admin/shards/shard-0", None).await, StatusCode::OK).await;
    assert!(healthy["problem"].is_null(), "{healthy}");
    assert!(healthy["connections"]["max"].as_u64().unwrap() >= 1, "{healthy}");
    let problem =
        expect_problem(app.get_record("one", "docs", "d1").await, StatusCode::SERVICE_UNAVAILABLE, "shard_unavailable")
            .await;
    assert!(problem["detail"].as_str().unwrap().contains("shard-1 is not used"), "{problem}");
    let ready: Value =
        app.client.get(format!("{}/readyz", app.metrics_base())).send().await.unwrap().json().await.unwrap();
    assert_eq!(ready["status"], "ready", "one shard down does not make the instance unready: {ready}");
    assert_eq!(ready["components"]["shard-1"]["status"], "down", "{ready}");

    // The operator finds shard-1's own database (here: the same one, its marker put right) and
    // points the shard at it: this instance puts it to use at once, and an instance that was
    // already running when it did does so on its next look at the catalog (a peer speaks to
    // clients directly: not behind the gatekeeper).
    let peer = match app.backend_url() {
        None => Some(app.spawn_peer(|_| {}).await),
        Some(_) => None,
    };
    let d1 = shardgate_tests::record_path("one", "docs", "d1");
    let on_peer = |peer: &shardgate_tests::server::RunningServer| {
        app.client.get(format!("{}{d1}", peer.base_url)).bearer_auth(app.rw_token("one")).send()
    };
    if let Some(peer) = &peer {
        assert_eq!(on_peer(peer).await.unwrap().status(), StatusCode::SERVICE_UNAVAILABLE);
    }
    sqlx::query("UPDATE shard_identity SET shard_id = 'shard-1'").execute(&one).await.unwrap();
    let own = if app.backend() == Backend::Postgres {
        format!("{}?application_name=shard-1-found", urls["shard-1"])
    } else {
        format!("{}?mode=rw", urls["shard-1"])
    };
    let patched = app.admin(Method::PATCH, "/v1/admin/shards/shard-1", Some(&json!({"url": own}))).await;
    expect_json(patched, StatusCode::OK).await;
    let record = expect_json(app.get_record("one", "docs", "d1").await, StatusCode::OK).await;
    assert_eq!(record["value"], json!({"n": 1}), "{record}");
    let stats = expect_json(app.admin(Method::GET, "/v1/admin/shards/shard-1", None).await, StatusCode::OK).await;
    assert!(stats["problem"].is_null() && stats["connections"]["max"].as_u64() >= Some(1), "{stats}");
    if let Some(peer) = peer {
        let served = shardgate_tests::eventually(std::time::Duration::from_secs(30), async || {
            (on_peer(&peer).await.unwrap().status() == StatusCode::OK).then_some(())
        })
        .await;
        assert!(served.is_some(), "the peer puts shard-1 to use after the URL changed");
        peer.stop().await;
    }
    zero.close().await;
    one.close().await;
}

#[tokio::test]
async fn unsafe_seeded_shards_stop_the_start_up() {
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let app = TestApp::spawn(backend).await;
        let mut urls = vec!["sqlite::memory:".to_owned()];
        if backend == Backend::Postgres {
            urls.push(format!("sqlite://{}", app.data_dir().join("seeded.db").display()));
        }
        for url in urls {
            let mut config = app.config().clone();
            config.listen = "127.0.0.1:0".parse().unwrap();
            config.storage.shards.push(ShardSeed {
                id: ShardId::parse("seeded").unwrap(),
                url: SecretString::from(url.clone()),
                password_file: None,
            });
            let Err(error) = shardgate_api::Application::build(config).await else {
                panic!("{backend:?} {url}: the start-up is refused");
            };
            let text = format!("{error:#}");
            assert!(text.contains("storage.shards, shard seeded"), "{backend:?} {url}: {text}");
        }
        assert!(!app.data_dir().join("seeded.db").exists());
    }
}

/// Bytes that do not compress, random UUIDs end to end (a blob of one repeated byte would take
/// a few bytes in PostgreSQL's TOAST).
fn noise(len: usize) -> Vec<u8> {
    std::iter::repeat_with(|| *uuid::Uuid::new_v4().as_bytes()).flatten().take(len).collect()
}

/// The records of every shard, added up as the console's fleet totals do.
async fn fleet_records(app: &TestApp) -> (u64, Value) {
    let list = expect_json(app.admin(Method::GET, "/v1/admin/shards", None).await, StatusCode::OK).await;
    let total = list["items"].as_array().unwrap().iter().map(|s| s["records"].as_u64().unwrap_or(0)).sum();
    (total, list)
}

/// A shard shows the size of its data (its tables and their indexes: `data_bytes`) beside its
/// database's (`bytes`, which an empty PostgreSQL database makes several MiB); and the fleet's
/// totals count a tenant once, where the catalog places it: while a moved tenant's old copy
/// waits out the cleanup grace on its old shard (`storage.moves.cleanup_grace`, 60 s here), only
/// its new home counts its records.
async fn fleet_totals_count_a_moved_tenant_once_and_shards_show_their_datas_size(app: TestApp) {
    let list = expect_json(app.admin(Method::GET, "/v1/admin/shards", None).await, StatusCode::OK).await;
    for shard in list["items"].as_array().unwrap() {
        let (data, all) = (shard["data_bytes"].as_u64(), shard["bytes"].as_u64());
        let (data, all) = (data.unwrap_or_else(|| panic!("data_bytes: {shard}")), all.unwrap());
        assert!(data <= all, "the data is part of the database: {shard}");
        if app.backend() == Backend::Postgres {
            assert!(data < 1 << 20, "an empty shard holds little data, whatever its database's size: {shard}");
        }
    }
    let tenant = app.create_tenant("acme").await;
    let home = tenant["shard"].as_str().unwrap().to_owned();
    let data_of = async |id: &str| {
        let shard =
            expect_json(app.admin(Method::GET, &format!("/v1/admin/shards/{id}"), None).await, StatusCode::OK).await;
        shard["data_bytes"].as_u64().unwrap_or_else(|| panic!("data_bytes: {shard}"))
    };
    let empty = data_of(&home).await;
    let blob = app
        .client
        .put(app.url("/v1/tenants/acme/blobs/noise.bin"))
        .bearer_auth(app.rw_token("acme"))
        .body(noise(600_000))
        .send()
        .await
        .unwrap();
    assert!(blob.status().is_success(), "{}", blob.status());
    for key in ["a", "b", "c", "d", "e"] {
        expect_json(app.put_record("acme", "docs", key, &json!(1)).await, StatusCode::CREATED).await;
    }
    let held = data_of(&home).await;
    assert!(held >= empty + 500_000, "the blob's bytes show in the data's size: {empty} then {held}");
    assert_eq!(fleet_records(&app).await.0, 5);

    let to = SEEDED_SHARDS.iter().find(|s| **s != home).unwrap();
    let job = app.admin(Method::POST, "/v1/admin/tenants/acme/move", Some(&json!({"to": to}))).await;
    let id = expect_json(job, StatusCode::ACCEPTED).await["id"].as_str().unwrap().to_owned();
    let switched = shardgate_tests::eventually(std::time::Duration::from_secs(60), async || {
        let job =
            expect_json(app.admin(Method::GET, &format!("/v1/admin/jobs/{id}"), None).await, StatusCode::OK).await;
        assert_eq!(job["state"], "running", "{job}");
        (job["progress"]["phase"] == "cleanup").then_some(job)
    })
    .await;
    assert!(switched.is_some(), "the move switches and waits out its cleanup grace");
    // The instance counts by the shard map it holds, which learns of the switch a moment after
    // the job says `cleanup` (on a loaded machine, after a few reads): at every moment the
    // tenant counts once, and soon on its new shard.
    let on = |list: &Value, id: &str| {
        list["items"].as_array().unwrap().iter().find(|s| s["id"] == id).unwrap()["records"].clone()
    };
    let moved = shardgate_tests::eventually(std::time::Duration::from_secs(30), async || {
        let (total, list) = fleet_records(&app).await;
        assert_eq!(total, 5, "the moved tenant counts once during its cleanup grace: {list:#}");
        ((on(&list, &home), on(&list, to)) == (json!(0), json!(5))).then_some(())
    })
    .await;
    assert!(moved.is_some(), "the moved tenant's records count on its new shard, not its old one");
}
