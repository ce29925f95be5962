//! Stopping the server and starting it again on the same data loses nothing.

use reqwest::{Method, StatusCode};
use serde_json::json;
use shardgate_tests::{TestApp, expect_json, expect_problem};

shardgate_tests::conformance!(records_tenants_and_the_shard_map_survive_a_restart);

async fn records_tenants_and_the_shard_map_survive_a_restart(mut app: TestApp) {
    app.create_tenant("acme").await;
    app.create_tenant_with(&json!({"id": "vip", "tier": "premium", "shard": "shard-3"})).await;
    for i in 0..5 {
        expect_json(app.put_record("acme", "docs", &format!("d{i}"), &json!({"i": i})).await, StatusCode::CREATED)
            .await;
    }
    app.put_record("acme", "docs", "d0", &json!("second")).await;
    assert_eq!(app.delete_record("acme", "docs", "d4").await.status(), StatusCode::NO_CONTENT);
    app.put_record("vip", "docs", "v", &json!("vip")).await;
    app.set_shard_state("shard-2", "read_only").await;

    let map = app.shard_map().await;
    let tenants = expect_json(app.admin(Method::GET, "/v1/admin/tenants", None).await, StatusCode::OK).await;
    let listing = expect_json(app.list_records("acme", "docs", "").await, StatusCode::OK).await;
    let old_url = app.base_url.clone();

    app.restart().await;
    assert_ne!(app.base_url, old_url, "a new server on a new port");

    assert_eq!(app.shard_map().await, map, "same shard map, same epoch");
    let after = expect_json(app.admin(Method::GET, "/v1/admin/tenants", None).await, StatusCode::OK).await;
    assert_eq!(after, tenants);
    let after = expect_json(app.list_records("acme", "docs", "").await, StatusCode::OK).await;
    assert_eq!(after, listing);
    let shard = expect_json(app.admin(Method::GET, "/v1/admin/shards/shard-2", None).await, StatusCode::OK).await;
    assert_eq!(shard["state"], "read_only", "shard states are persistent");

    let body = expect_json(app.get_record("acme", "docs", "d0").await, StatusCode::OK).await;
    assert_eq!((body["version"].clone(), body["value"].clone()), (json!(2), json!("second")));
    expect_problem(app.get_record("acme", "docs", "d4").await, StatusCode::NOT_FOUND, "record_not_found").await;
    let body = expect_json(app.get_record("vip", "docs", "v").await, StatusCode::OK).await;
    assert_eq!(body["value"], "vip");

    // Versions carry on where they were, also past the tombstone.
    app.set_shard_state("shard-2", "active").await;
    let body = expect_json(app.put_record("acme", "docs", "d0", &json!(3)).await, StatusCode::OK).await;
    assert_eq!(body["version"], 3);
    let body = expect_json(app.put_record("acme", "docs", "d4", &json!(3)).await, StatusCode::CREATED).await;
    assert_eq!(body["version"], 3, "created (1), deleted (2), re-created (3)");
    // And the map moves on from the old epoch.
    assert!(app.epoch().await > map["epoch"].as_i64().unwrap());
}

shardgate_tests::on_both_engines!(a_shard_removed_through_the_api_stays_removed_after_a_restart);

/// A shard drained and deleted through the API is not registered again at the next start, though
/// it is still listed in `storage.shards` (start-up skips it and warns, naming the entry to
/// delete): it holds nothing, takes no vshard and does not count in the balancer's picture.
async fn a_shard_removed_through_the_api_stays_removed_after_a_restart(backend: shardgate_tests::Backend) {
    use std::time::Duration;
    let mut app = crate::moves::spawn(backend, Duration::ZERO).await;
    app.create_tenant("acme").await;
    for i in 0..10 {
        expect_json(app.put_record("acme", "docs", &format!("d{i}"), &json!({"i": i})).await, StatusCode::CREATED)
            .await;
    }
    let drain = app.admin(Method::POST, "/v1/admin/shards/shard-3/drain", Some(&json!({}))).await;
    let drain = expect_json(drain, StatusCode::ACCEPTED).await;
    let done = crate::moves::ended(&app, drain["job"]["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    assert_eq!(done["state"], "done", "{done}");
    let deleted = shardgate_tests::eventually(Duration::from_secs(30), async || {
        let status = app.admin(Method::DELETE, "/v1/admin/shards/shard-3", None).await.status();
        (status == StatusCode::NO_CONTENT).then_some(())
    })
    .await;
    assert!(deleted.is_some(), "the drained shard can be deleted");
    let map = app.shard_map().await;

    app.restart().await;

    let listed = expect_json(app.admin(Method::GET, "/v1/admin/shards", None).await, StatusCode::OK).await;
    assert!(!listed.to_string().contains("\"shard-3\""), "the removed shard is registered again: {listed}");
    expect_problem(
        app.admin(Method::GET, "/v1/admin/shards/shard-3", None).await,
        StatusCode::NOT_FOUND,
        "shard_not_found",
    )
    .await;
    assert_eq!(app.shard_map().await, map, "the same map, the same epoch: nothing was registered");
    for i in 0..10 {
        let body = expect_json(app.get_record("acme", "docs", &format!("d{i}")).await, StatusCode::OK).await;
        assert_eq!(body["value"]["i"], i);
    }
}
