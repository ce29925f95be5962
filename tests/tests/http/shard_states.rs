//! Shard states decide which record requests get through.

use reqwest::StatusCode;
use serde_json::{Value, json};
use shardgate_tests::{TestApp, expect_json, expect_problem};

shardgate_tests::conformance!(
    a_read_only_shard_serves_reads_but_refuses_writes,
    an_offline_shard_refuses_everything_until_it_is_active_again,
    other_shards_keep_working_while_one_is_offline,
);

/// Creates tenant `acme`, writes `docs/d1` (version 1) and sets the tenant's home shard to
/// `state`: the home shard's id and the shard as the state change answered it.
async fn d1_on_a_home_shard_set_to(app: &TestApp, state: &str) -> (String, Value) {
    let tenant = app.create_tenant("acme").await;
    let home = tenant["shard"].as_str().unwrap().to_owned();
    app.put_record("acme", "docs", "d1", &json!(1)).await;
    let shard = app.set_shard_state(&home, state).await;
    (home, shard)
}

async fn a_read_only_shard_serves_reads_but_refuses_writes(app: TestApp) {
    let (home, shard) = d1_on_a_home_shard_set_to(&app, "read_only").await;
    assert_eq!(shard["state"], "read_only");
    assert_eq!(shard["id"], home.as_str());

    let code = "shard_read_only";
    expect_problem(app.put_record("acme", "docs", "d1", &json!(2)).await, StatusCode::SERVICE_UNAVAILABLE, code).await;
    expect_problem(app.put_record("acme", "docs", "d2", &json!(2)).await, StatusCode::SERVICE_UNAVAILABLE, code).await;
    expect_problem(app.delete_record("acme", "docs", "d1").await, StatusCode::SERVICE_UNAVAILABLE, code).await;
    let body = expect_json(app.get_record("acme", "docs", "d1").await, StatusCode::OK).await;
    assert_eq!(body["version"], 1);
    let listing = expect_json(app.list_records("acme", "docs", "").await, StatusCode::OK).await;
    assert_eq!(listing["items"].as_array().unwrap().len(), 1);

    let shard = app.set_shard_state(&home, "active").await;
    assert_eq!(shard["state"], "active");
    let body = expect_json(app.put_record("acme", "docs", "d1", &json!(2)).await, StatusCode::OK).await;
    assert_eq!(body["version"], 2);
}

async fn an_offline_shard_refuses_everything_until_it_is_active_again(app: TestApp) {
    let (home, shard) = d1_on_a_home_shard_set_to(&app, "offline").await;
    assert_eq!(shard["state"], "offline");
    let listed =
        expect_json(app.admin(reqwest::Method::GET, &format!("/v1/admin/shards/{home}"), None).await, StatusCode::OK)
            .await;
    assert_eq!(listed["state"], "offline");

    let code = "shard_offline";
    expect_problem(app.get_record("acme", "docs", "d1").await, StatusCode::SERVICE_UNAVAILABLE, code).await;
    expect_problem(app.list_records("acme", "docs", "").await, StatusCode::SERVICE_UNAVAILABLE, code).await;
    expect_problem(app.put_record("acme", "docs", "d1", &json!(2)).await, StatusCode::SERVICE_UNAVAILABLE, code).await;
    expect_problem(app.delete_record("acme", "docs", "d1").await, StatusCode::SERVICE_UNAVAILABLE, code).await;
    let route = app.route("acme", "docs", "d1").await;
    assert_eq!(route["shard_state"], "offline");

    app.set_shard_state(&home, "active").await;
    let body = expect_json(app.get_record("acme", "docs", "d1").await, StatusCode::OK).await;
    assert_eq!(body["version"], 1, "nothing changed while offline");
    let body = expect_json(app.put_record("acme", "docs", "d1", &json!(2)).await, StatusCode::OK).await;
    assert_eq!(body["version"], 2);
}

async fn other_shards_keep_working_while_one_is_offline(app: TestApp) {
    let down = app.create_tenant_with(&json!({"id": "down", "shard": "shard-1"})).await;
    let up = app.create_tenant_with(&json!({"id": "up", "shard": "shard-2"})).await;
    assert_eq!(down["shard"], "shard-1");
    assert_eq!(up["shard"], "shard-2");
    app.set_shard_state("shard-1", "offline").await;
    expect_problem(app.get_record("down", "c", "k").await, StatusCode::SERVICE_UNAVAILABLE, "shard_offline").await;
    expect_json(app.put_record("up", "c", "k", &json!(1)).await, StatusCode::CREATED).await;
    expect_json(app.get_record("up", "c", "k").await, StatusCode::OK).await;
}
