//! A sick shard fails fast for its own tenants and for no one else: the per-shard circuit
//! breaker, tried with a shard on a PostgreSQL cluster of the test's own that is killed (`kill -9`),
//! restarted, frozen (SIGSTOP of every process) and thawed. Every wait is bounded.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use secrecy::SecretString;
use serde_json::{Value, json};
use shardgate_api::Config;
use shardgate_tests::pg_cluster::PgCluster;
use shardgate_tests::{Backend, TestApp, eventually, expect_json, expect_problem, metric};

/// An app whose `shard-3` lives on `cluster`, with tenant `sick` pinned there and tenant `well`
/// on `shard-0`, each holding `docs/d1`; `customize` may change its configuration.
async fn app_with_a_shard_on(cluster: &PgCluster, customize: impl FnOnce(&mut Config)) -> TestApp {
    let url = cluster.create_database("sick_shard").await;
    let app = TestApp::spawn_with_shard_at("shard-3", url, customize).await;
    app.create_tenant_with(&json!({"id": "sick", "shard": "shard-3"})).await;
    app.create_tenant_with(&json!({"id": "well", "shard": "shard-0"})).await;
    for tenant in ["sick", "well"] {
        expect_json(app.put_record(tenant, "docs", "d1", &json!({"n": 1})).await, StatusCode::CREATED).await;
    }
    app
}

/// [`app_with_a_shard_on`] with statement and request deadlines far away, so only the breaker
/// can end what waits on the shard.
async fn app_breaker_alone_ends_waits_on(cluster: &PgCluster) -> TestApp {
    app_with_a_shard_on(cluster, |config| {
        config.storage.pool.statement_timeout = Duration::from_secs(120);
        config.limits.request_timeout = Duration::from_secs(120);
    })
    .await
}

/// The shard as `GET /v1/admin/shards/{id}` shows it.
async fn shard(app: &TestApp, id: &str) -> Value {
    expect_json(app.admin(Method::GET, &format!("/v1/admin/shards/{id}"), None).await, StatusCode::OK).await
}

/// Asserts that `sick`'s read is refused by an open breaker, naming the shard, with `Retry-After`.
async fn assert_refused_by_the_breaker(app: &TestApp) {
    let response = app.get_record("sick", "docs", "d1").await;
    let retry_after: u64 = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .expect("a Retry-After in seconds");
    assert!(retry_after >= 1);
    let problem = expect_problem(response, StatusCode::SERVICE_UNAVAILABLE, "shard_unavailable").await;
    let detail = problem["detail"].as_str().unwrap();
    assert!(detail.contains("shard-3") && detail.contains("circuit breaker"), "{problem}");
}

/// `well` reads and writes as usual.
async fn assert_others_unaffected(app: &TestApp, round: i64) {
    expect_json(app.get_record("well", "docs", "d1").await, StatusCode::OK).await;
    let status = if round == 0 { StatusCode::CREATED } else { StatusCode::OK };
    let written = expect_json(app.put_record("well", "docs", "d2", &json!({"round": round})).await, status).await;
    assert_eq!(written["value"]["round"], round);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_shard_fails_fast_for_its_tenants_only_and_serves_again_once_back() {
    let cluster = PgCluster::start().await;
    let app = app_with_a_shard_on(&cluster, |_| {}).await;
    assert_eq!(shard(&app, "shard-3").await["breaker"]["state"], "closed");

    cluster.kill();
    // The first requests fail (a broken connection, a refused one); the breaker opens on them.
    let opened = eventually(Duration::from_secs(10), async || {
        let response = app.get_record("sick", "docs", "d1").await;
        let status = response.status();
        let body = response.text().await.unwrap();
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "a dead shard's request gets 503: {body}");
        (shard(&app, "shard-3").await["breaker"]["state"] == "open").then_some(())
    })
    .await;
    assert!(opened.is_some(), "the breaker opens once the shard's database is gone");
    for round in 0..5 {
        assert_refused_by_the_breaker(&app).await;
        assert_others_unaffected(&app, round).await;
    }
    let write = app.put_record("sick", "docs", "d1", &json!({"n": 2})).await;
    expect_problem(write, StatusCode::SERVICE_UNAVAILABLE, "shard_unavailable").await;

    // Readiness names the shard but the instance stays ready: it serves everyone else.
    let ready = expect_json(app.send(Method::GET, "/readyz", None, None, &[]).await, StatusCode::OK).await;
    assert_eq!(ready["components"]["shard-3"]["status"], "down", "{ready}");
    assert_eq!(ready["components"]["shard-3"]["breaker"], "open", "{ready}");
    assert_eq!(ready["components"]["shard-0"]["status"], "up", "{ready}");
    let state = |s: &str| format!("shardgate_shard_breaker_state{{shard=\"shard-3\",state=\"{s}\"}}");
    assert_eq!(metric(&app.client, app.metrics_base(), &state("open")).await, 1.0);
    assert!(
        metric(&app.client, app.metrics_base(), "shardgate_shard_breaker_opens_total{shard=\"shard-3\"}").await >= 1.0
    );
    assert_eq!(
        metric(&app.client, app.metrics_base(), "shardgate_shard_breaker_opens_total{shard=\"shard-0\"}").await,
        0.0
    );

    cluster.restart();
    let back = eventually(Duration::from_secs(10), async || {
        let response = app.get_record("sick", "docs", "d1").await;
        (response.status() == StatusCode::OK).then_some(())
    })
    .await;
    assert!(back.is_some(), "the shard serves again once its database is back");
    assert_eq!(shard(&app, "shard-3").await["breaker"]["state"], "closed");
    let written = expect_json(app.put_record("sick", "docs", "d1", &json!({"n": 3})).await, StatusCode::OK).await;
    assert_eq!(written["value"]["n"], 3, "nothing acknowledged was lost, and writes work again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_shard_is_detected_and_its_waiting_requests_end_instead_of_hanging() {
    let cluster = PgCluster::start().await;
    let app = app_breaker_alone_ends_waits_on(&cluster).await;

    cluster.freeze();
    // Requests already waiting on the frozen database end when the breaker opens.
    let waiting: Vec<_> = (0..4)
        .map(|_| {
            let (client, url) = (app.client.clone(), app.url(&shardgate_tests::record_path("sick", "docs", "d1")));
            let token = app.rw_token("sick");
            tokio::spawn(async move { client.get(url).bearer_auth(token).send().await })
        })
        .collect();
    for request in waiting {
        let response = tokio::time::timeout(Duration::from_secs(30), request)
            .await
            .expect("a request to a frozen shard ends")
            .unwrap()
            .expect("the request is answered");
        let problem = expect_problem(response, StatusCode::SERVICE_UNAVAILABLE, "shard_unavailable").await;
        assert!(problem["detail"].as_str().unwrap().contains("circuit breaker"), "{problem}");
    }
    let breaker = shard(&app, "shard-3").await["breaker"].clone();
    assert_eq!(breaker["state"], "open", "{breaker}");
    for round in 0..5 {
        assert_refused_by_the_breaker(&app).await;
        assert_others_unaffected(&app, round).await;
    }

    cluster.thaw();
    let back = eventually(Duration::from_secs(10), async || {
        (app.get_record("sick", "docs", "d1").await.status() == StatusCode::OK).then_some(())
    })
    .await;
    assert!(back.is_some(), "the shard serves again once thawed");
}

#[tokio::test]
async fn an_operator_forces_a_breaker_open_and_resets_it_with_an_audit_trail() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let tenant = app.create_tenant("acme").await;
    let home = tenant["shard"].as_str().unwrap().to_owned();
    expect_json(app.put_record("acme", "docs", "d1", &json!(1)).await, StatusCode::CREATED).await;
    let path = format!("/v1/admin/shards/{home}/breaker");

    let body = json!({"action": "force_open", "reason": "disk swap"});
    let forced = expect_json(app.admin(Method::POST, &path, Some(&body)).await, StatusCode::OK).await;
    assert_eq!(forced["breaker"]["state"], "forced_open", "{forced}");
    assert!(forced["breaker"]["reason"].as_str().unwrap().contains("disk swap"), "{forced}");
    let problem = expect_problem(
        app.get_record("acme", "docs", "d1").await,
        StatusCode::SERVICE_UNAVAILABLE,
        "shard_unavailable",
    )
    .await;
    assert!(problem["detail"].as_str().unwrap().contains("disk swap"), "{problem}");

    let reset = json!({"action": "reset"});
    let closed = expect_json(app.admin(Method::POST, &path, Some(&reset)).await, StatusCode::OK).await;
    assert_eq!(closed["breaker"]["state"], "closed");
    expect_json(app.get_record("acme", "docs", "d1").await, StatusCode::OK).await;

    let log = expect_json(app.admin(Method::GET, "/v1/admin/audit", None).await, StatusCode::OK).await;
    let actions: Vec<&str> = log["items"].as_array().unwrap().iter().filter_map(|e| e["action"].as_str()).collect();
    assert!(actions.contains(&"shard.breaker.force_open") && actions.contains(&"shard.breaker.reset"), "{log}");

    // Bad commands are 4xx problems, never a change.
    let unknown = app.admin(Method::POST, &path, Some(&json!({"action": "explode"}))).await;
    assert!(unknown.status().is_client_error());
    let missing = app.admin(Method::POST, "/v1/admin/shards/no-such-shard/breaker", Some(&body)).await;
    expect_problem(missing, StatusCode::NOT_FOUND, "shard_not_found").await;
    let tenant_token = app.rw_token("acme");
    let refused = app.client.post(app.url(&path)).bearer_auth(tenant_token).json(&body).send().await.unwrap();
    assert!(matches!(refused.status(), StatusCode::FORBIDDEN | StatusCode::UNAUTHORIZED), "a tenant cannot do it");
    expect_json(app.get_record("acme", "docs", "d1").await, StatusCode::OK).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_catalog_costs_a_bounded_time_and_leaves_the_data_path_serving() {
    let cluster = PgCluster::start().await;
    let catalog = cluster.create_database("frozen_catalog").await;
    // Deadlines far away, so only the catalog's own breaker can end what waits on it.
    let app = TestApp::spawn_with(Backend::Postgres, |config| {
        config.storage.catalog_url = Some(SecretString::from(catalog));
        config.storage.pool.statement_timeout = Duration::from_secs(120);
        config.limits.request_timeout = Duration::from_secs(120);
    })
    .await;
    app.create_tenant("acme").await;
    expect_json(app.put_record("acme", "docs", "d1", &json!({"n": 1})).await, StatusCode::CREATED).await;

    cluster.freeze();
    // Admin changes need the catalog: they end with 503 `catalog_unavailable` and `Retry-After`
    // instead of hanging on the frozen database.
    let late = json!({"id": "late"});
    let create = app.admin(Method::POST, "/v1/admin/tenants", Some(&late));
    let response =
        tokio::time::timeout(Duration::from_secs(30), create).await.expect("an admin change on a frozen catalog ends");
    assert!(response.headers().contains_key("retry-after"), "{:?}", response.headers());
    let problem = expect_problem(response, StatusCode::SERVICE_UNAVAILABLE, "catalog_unavailable").await;
    assert!(problem["detail"].as_str().unwrap().contains("catalog"), "{problem}");
    // Once the breaker is open, catalog reads are refused at once too.
    let list = app.admin(Method::GET, "/v1/admin/tenants", None);
    let response = tokio::time::timeout(Duration::from_secs(30), list).await.expect("a catalog read ends");
    let problem = expect_problem(response, StatusCode::SERVICE_UNAVAILABLE, "catalog_unavailable").await;
    assert!(problem["detail"].as_str().unwrap().contains("circuit breaker"), "{problem}");

    // Tenants keep reading and writing: routing works from the map every instance holds.
    expect_json(app.get_record("acme", "docs", "d1").await, StatusCode::OK).await;
    expect_json(app.put_record("acme", "docs", "d1", &json!({"n": 2})).await, StatusCode::OK).await;
    // The instance stays ready (it serves tenants), and says the catalog is degraded.
    let ready = tokio::time::timeout(Duration::from_secs(30), app.send(Method::GET, "/readyz", None, None, &[]))
        .await
        .expect("readiness answers");
    let ready = expect_json(ready, StatusCode::OK).await;
    assert_eq!(ready["components"]["catalog"]["status"], "degraded", "{ready}");
    assert_eq!(ready["components"]["catalog"]["breaker"], "open", "{ready}");
    let open = metric(&app.client, app.metrics_base(), "shardgate_catalog_breaker_state{state=\"open\"}").await;
    assert_eq!(open, 1.0);

    cluster.thaw();
    let back = eventually(Duration::from_secs(10), async || {
        let response = app.admin(Method::POST, "/v1/admin/tenants", Some(&late)).await;
        (response.status() == StatusCode::CREATED).then_some(())
    })
    .await;
    assert!(back.is_some(), "admin changes work again once the catalog is thawed");
    let read = expect_json(app.get_record("acme", "docs", "d1").await, StatusCode::OK).await;
    assert_eq!(read["value"]["n"], 2, "the write made while the catalog was frozen is kept");
    let closed = metric(&app.client, app.metrics_base(), "shardgate_catalog_breaker_state{state=\"closed\"}").await;
    assert_eq!(closed, 1.0);
    assert!(metric(&app.client, app.metrics_base(), "shardgate_catalog_breaker_opens_total").await >= 1.0);
}

/// Asserts `response` is 504 `write_outcome_unknown`: the write may or may not have been applied,
/// and the detail says how to go on.
async fn assert_outcome_unknown(response: reqwest::Response) {
    let problem = expect_problem(response, StatusCode::GATEWAY_TIMEOUT, "write_outcome_unknown").await;
    let detail = problem["detail"].as_str().unwrap();
    assert!(detail.contains("may or may not have been applied") && detail.contains("If-Match"), "{problem}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_cut_off_by_a_frozen_shard_says_its_outcome_is_unknown() {
    let cluster = PgCluster::start().await;
    let app = app_breaker_alone_ends_waits_on(&cluster).await;
    cluster.freeze();
    let value = json!({"n": 2});
    let write = app.put_record("sick", "docs", "d1", &value);
    let response = tokio::time::timeout(Duration::from_secs(30), write).await.expect("the write ends");
    assert_outcome_unknown(response).await;
    // A write refused before it was sent is no mystery: the open breaker's 503.
    let refused = app.put_record("sick", "docs", "d1", &json!({"n": 3})).await;
    expect_problem(refused, StatusCode::SERVICE_UNAVAILABLE, "shard_unavailable").await;
    cluster.thaw();

    // The safe way on: read what is there, then write with If-Match on its version.
    let current = eventually(Duration::from_secs(10), async || {
        let response = app.get_record("sick", "docs", "d1").await;
        if response.status() != StatusCode::OK {
            return None;
        }
        Some(response.headers()["etag"].to_str().unwrap().to_owned())
    })
    .await
    .expect("the shard serves again");
    let url = app.url(&shardgate_tests::record_path("sick", "docs", "d1"));
    let retried = app
        .client
        .put(url)
        .bearer_auth(app.rw_token("sick"))
        .header("if-match", current)
        .json(&json!({"n": 4}))
        .send()
        .await
        .unwrap();
    assert_eq!(expect_json(retried, StatusCode::OK).await["value"]["n"], 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_past_the_request_deadline_says_its_outcome_is_unknown() {
    let cluster = PgCluster::start().await;
    // No breaker and a far statement deadline: only the request deadline ends the write.
    let app = app_with_a_shard_on(&cluster, |config| {
        config.storage.pool.breaker.enabled = false;
        config.storage.pool.statement_timeout = Duration::from_secs(120);
        config.limits.request_timeout = Duration::from_secs(1);
    })
    .await;
    cluster.freeze();
    let value = json!({"n": 2});
    let write = app.put_record("sick", "docs", "d1", &value);
    let response = tokio::time::timeout(Duration::from_secs(30), write).await.expect("the write ends");
    assert_outcome_unknown(response).await;
    // A read past the deadline is a plain timeout.
    let read = tokio::time::timeout(Duration::from_secs(30), app.get_record("sick", "docs", "d1")).await.unwrap();
    expect_problem(read, StatusCode::GATEWAY_TIMEOUT, "request_timeout").await;
    cluster.thaw();
}

/// Reads `sick`'s record from many clients at once until the shard's pool holds at least
/// `connections` connections (bounded).
async fn fill_the_pool(app: &TestApp, cluster: &PgCluster, connections: i64) {
    let filled = eventually(Duration::from_secs(20), async || {
        let reads = (0..16).map(|_| app.get_record("sick", "docs", "d1"));
        for response in futures::future::join_all(reads).await {
            assert_eq!(response.status(), StatusCode::OK);
        }
        (cluster.connections().await >= connections).then_some(())
    })
    .await;
    assert!(filled.is_some(), "the shard's pool opens {connections} connections");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_shards_database_restarts_one_broken_connection_retires_the_others() {
    let cluster = PgCluster::start().await;
    // The first failure (a dead connection) makes the breaker probe the database with a new
    // connection of its own; a probe that misses its deadline (500 ms by default) opens the
    // breaker, as it must for a frozen database. On a busy machine a fresh connection to a
    // PostgreSQL that just restarted can take longer than that, and every later write was then
    // refused by the open breaker (six 503s, under load only). This story is about retiring
    // broken connections, not about how fast a probe answers: the probe gets ample time here.
    let app = app_with_a_shard_on(&cluster, |config| {
        config.storage.pool.max_connections = 4;
        config.storage.pool.breaker.probe_timeout = Duration::from_secs(30);
    })
    .await;
    fill_the_pool(&app, &cluster, 3).await;

    // The operator restarts the shard's PostgreSQL: every pooled connection is dead now.
    cluster.fast_restart();
    // Writes are never retried, so the first one, on a dead connection, may fail; it proves the
    // pool's connections broken, and every later write gets a new one.
    let mut outcomes = Vec::new();
    for n in 0..6 {
        let response = app.put_record("sick", "docs", "d1", &json!({"n": 10 + n})).await;
        let status = response.status();
        outcomes.push((status, response.text().await.unwrap()));
    }
    let failed: Vec<usize> = (0..outcomes.len()).filter(|&i| !outcomes[i].0.is_success()).collect();
    if !(failed.is_empty() || failed == [0]) {
        let breaker = shard(&app, "shard-3").await["breaker"].clone();
        panic!("only the first write may fail: {outcomes:#?}\nthe breaker: {breaker}");
    }
    let read = expect_json(app.get_record("sick", "docs", "d1").await, StatusCode::OK).await;
    assert_eq!(read["value"]["n"], 15, "the last write is there");
    assert_eq!(shard(&app, "shard-3").await["breaker"]["state"], "closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_pinned_to_a_healthy_shard_is_created_while_another_shard_is_down() {
    let cluster = PgCluster::start().await;
    let app = app_with_a_shard_on(&cluster, |_| {}).await;
    // An id used once already: its earlier tenant may have left index entries on any shard.
    app.create_tenant_with(&json!({"id": "reused", "shard": "shard-0"})).await;
    let deleted = app.admin(Method::DELETE, "/v1/admin/tenants/reused", None).await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);

    cluster.stop();
    // A new tenant on shard-0 needs nothing of shard-3.
    let created = app.admin(Method::POST, "/v1/admin/tenants", Some(&json!({"id": "fresh", "shard": "shard-0"}))).await;
    let tenant = expect_json(created, StatusCode::CREATED).await;
    assert_eq!(tenant["shard"], "shard-0", "{tenant}");
    let written = expect_json(app.put_record("fresh", "docs", "d1", &json!({"n": 1})).await, StatusCode::CREATED).await;
    assert_eq!(written["value"]["n"], 1);
    // The id used before waits for every shard: what its earlier tenant left must go first.
    let again = app.admin(Method::POST, "/v1/admin/tenants", Some(&json!({"id": "reused", "shard": "shard-0"}))).await;
    expect_problem(again, StatusCode::SERVICE_UNAVAILABLE, "shard_unavailable").await;

    cluster.restart();
    let back = eventually(Duration::from_secs(15), async || {
        let created =
            app.admin(Method::POST, "/v1/admin/tenants", Some(&json!({"id": "reused", "shard": "shard-0"}))).await;
        (created.status() == StatusCode::CREATED).then_some(())
    })
    .await;
    assert!(back.is_some(), "the used id is created again once every shard answers");
}
