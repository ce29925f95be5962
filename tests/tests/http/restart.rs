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
