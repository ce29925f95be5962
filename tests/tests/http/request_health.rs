//! Request health (`GET /v1/admin/health/requests`): what two instances answered, per route
//! template and per shard, in one-second windows flushed to the catalog and summed.
//!
//! Traffic on two routes (a record's and a collection's listing) of one tenant, some of it
//! through a second instance on the same catalog, some of it refused while the tenant's shard is
//! offline (503, errors) or missing (404, not errors): the route series count every answer and
//! its errors, both instances' windows merged; the shard series counts only the requests that
//! were routed to the shard (the offline refusals never were). A bad span is a 422
//! `invalid_span`; a tenant's token is refused with 403. `/metrics` counts no row dropped and no
//! request left uncounted.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shardgate_gatekeeper::Scope;
use shardgate_tests::records::record_path;
use shardgate_tests::{Backend, TestApp, eventually, expect_json, expect_problem};

const RECORD_ROUTE: &str = "/v1/tenants/{tenant}/collections/{collection}/records/{key}";
const LISTING_ROUTE: &str = "/v1/tenants/{tenant}/collections/{collection}/records";

shardgate_tests::on_both_engines!(request_health_counts_what_each_route_and_shard_answered_on_every_instance);

async fn request_health_counts_what_each_route_and_shard_answered_on_every_instance(backend: Backend) {
    let app = TestApp::spawn_with(backend, |config| {
        config.storage.load.window = Duration::from_secs(1);
        config.cache.enabled = false;
    })
    .await;
    let home = app.create_tenant("acme").await["shard"].as_str().unwrap().to_owned();
    let peer = app.spawn_peer(|_| {}).await;

    // The record route: 6 writes here, 4 through the peer, 3 reads of missing records (404: a
    // client's mistake, not an error), then 2 reads refused while the shard is offline (503).
    for i in 0..6 {
        expect_json(app.put_record("acme", "docs", &format!("d{i}"), &json!(i)).await, StatusCode::CREATED).await;
    }
    let token = app.rw_token("acme");
    for i in 0..4 {
        let url = format!("{}{}", peer.base_url, record_path("acme", "docs", &format!("p{i}")));
        let response = app.client.put(url).bearer_auth(&token).json(&json!(i)).send().await.unwrap();
        expect_json(response, StatusCode::CREATED).await;
    }
    for i in 0..3 {
        expect_problem(
            app.get_record("acme", "docs", &format!("missing{i}")).await,
            StatusCode::NOT_FOUND,
            "record_not_found",
        )
        .await;
    }
    // The listing route: 4 listings, then 1 refused while the shard is offline.
    for _ in 0..4 {
        expect_json(app.list_records("acme", "docs", "").await, StatusCode::OK).await;
    }
    app.set_shard_state(&home, "offline").await;
    for _ in 0..2 {
        expect_problem(app.get_record("acme", "docs", "d1").await, StatusCode::SERVICE_UNAVAILABLE, "shard_offline")
            .await;
    }
    expect_problem(app.list_records("acme", "docs", "").await, StatusCode::SERVICE_UNAVAILABLE, "shard_offline").await;
    app.set_shard_state(&home, "active").await;

    // Every window closes and is flushed within a couple of seconds; both instances' are summed.
    let by_route = eventually(Duration::from_secs(30), async || {
        let view = health(&app, "?span=5m&by=route").await;
        let record = series(&view, RECORD_ROUTE)?;
        let listing = series(&view, LISTING_ROUTE)?;
        (record["requests"] == 15 && listing["requests"] == 5).then_some(view)
    })
    .await
    .unwrap_or_else(|| panic!("both routes counted: {}", health_text(&app)));
    assert_eq!(by_route["by"], "route");
    assert_eq!(by_route["instances"], 2, "both instances' windows: {by_route}");
    let record = series(&by_route, RECORD_ROUTE).unwrap();
    assert_eq!(record["errors"], 2, "the 503s are errors, the 404s are not: {record}");
    assert!((record["error_rate"].as_f64().unwrap() - 2.0 / 15.0).abs() < 1e-9, "{record}");
    assert!(record["p50_ms"].as_f64().unwrap() > 0.0 && record["p99_ms"].as_f64() >= record["p50_ms"].as_f64());
    let points = record["points"].as_array().unwrap();
    let summed: u64 = points.iter().map(|p| p["requests"].as_u64().unwrap()).sum();
    assert_eq!(summed, 15, "the points add up to the total");
    let listing = series(&by_route, LISTING_ROUTE).unwrap();
    assert_eq!((listing["errors"].as_u64(), listing["error_rate"].as_f64()), (Some(1), Some(0.2)), "{listing}");

    // By shard: the routed requests only (the offline refusals were never routed), no errors.
    let by_shard = health(&app, "?span=5m&by=shard").await;
    assert_eq!(by_shard["by"], "shard");
    let shard = series(&by_shard, &home).unwrap_or_else(|| panic!("the home shard's series: {by_shard}"));
    assert_eq!((shard["requests"].as_u64(), shard["errors"].as_u64()), (Some(17), Some(0)), "{shard}");
    let names: Vec<&str> = by_shard["series"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, [home.as_str()], "no other shard served the tenant");

    // A span the windows cannot give, or not a span at all: 422 saying what is allowed.
    for bad in ["?span=banana", "?span=30d", "?span=10ms"] {
        let problem = expect_problem(
            app.admin(Method::GET, &format!("/v1/admin/health/requests{bad}"), None).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_span",
        )
        .await;
        assert!(problem["detail"].as_str().unwrap().starts_with("span: "), "{problem}");
    }
    expect_problem(
        app.admin(Method::GET, "/v1/admin/health/requests?by=tenant", None).await,
        StatusCode::BAD_REQUEST,
        "invalid_query",
    )
    .await;
    // Only admins.
    let tenant = app.token("acme", &[Scope::Read, Scope::Write, Scope::Manage]);
    let refused = app.send(Method::GET, "/v1/admin/health/requests", Some(&tenant), None, &[]).await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    // Nothing was lost, and /metrics says so.
    let text = app.client.get(format!("{}/metrics", app.metrics_base())).send().await.unwrap().text().await.unwrap();
    for line in ["shardgate_request_windows_dropped_total 0", "shardgate_request_health_unplaced_total 0"] {
        assert!(text.lines().any(|l| l == line), "{line} in /metrics");
    }
    drop(peer);
}

async fn health(app: &TestApp, query: &str) -> Value {
    expect_json(app.admin(Method::GET, &format!("/v1/admin/health/requests{query}"), None).await, StatusCode::OK).await
}

fn health_text(app: &TestApp) -> String {
    format!("(see GET {}/v1/admin/health/requests?span=5m)", app.base_url)
}

fn series<'a>(view: &'a Value, name: &str) -> Option<&'a Value> {
    view["series"].as_array()?.iter().find(|s| s["name"] == name)
}
