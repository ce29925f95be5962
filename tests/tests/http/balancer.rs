//! `GET /v1/admin/balancer/plan`: what the balancer's policy would do over the load picture. An
//! idle fleet is balanced; a shard carrying three times the load of each other shard, spread over
//! many vshards, gets a plan that moves one of its vshards to another shard, predicted to lower
//! its load without making the target overfull. Nothing moves.

use std::collections::HashMap;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shardgate_tests::{Backend, TestApp, eventually, expect_json, expect_problem};

shardgate_tests::on_both_engines!(a_hot_shard_gets_a_plan_that_moves_one_of_its_vshards_and_nothing_moves);

async fn plan(app: &TestApp, query: &str) -> reqwest::Response {
    app.admin(Method::GET, &format!("/v1/admin/balancer/plan{query}"), None).await
}

async fn a_hot_shard_gets_a_plan_that_moves_one_of_its_vshards_and_nothing_moves(backend: Backend) {
    let app = TestApp::spawn_with(backend, |config| {
        config.storage.load.window = Duration::from_secs(1);
        // Every read reaches its shard; any excess above the 10% threshold counts.
        config.cache.enabled = false;
        config.balancer.min_load_ms_per_s = 0.0;
    })
    .await;
    let idle = expect_json(plan(&app, "?window=1m").await, StatusCode::OK).await;
    assert!(idle["move"].is_null(), "{idle}");
    assert!(idle["reason"].as_str().unwrap().starts_with("balanced"), "{idle}");
    assert_eq!(idle["shards"].as_array().unwrap().len(), 4);
    expect_problem(plan(&app, "?window=0s").await, StatusCode::BAD_REQUEST, "invalid_query").await;

    // Tenants placed by their vshards: twelve on the first one's shard, four on each other shard.
    let mut by_shard: HashMap<String, Vec<String>> = HashMap::new();
    let mut hot = None;
    for i in 0..400 {
        let tenant = format!("t{i}");
        app.create_tenant(&tenant).await;
        let route = app.route(&tenant, "c", "k").await;
        let shard = route["shard"].as_str().unwrap().to_owned();
        let hot_shard = hot.get_or_insert_with(|| shard.clone()).clone();
        let wanted = if shard == hot_shard { 12 } else { 4 };
        let on = by_shard.entry(shard).or_default();
        if on.len() < wanted {
            on.push(tenant);
        }
        if by_shard.len() == 4 && by_shard.iter().all(|(s, t)| t.len() == if *s == hot_shard { 12 } else { 4 }) {
            break;
        }
    }
    let hot = hot.unwrap();
    assert_eq!(by_shard.values().map(Vec::len).sum::<usize>(), 24, "tenants found for every shard: {by_shard:?}");
    let hot_vshards: Vec<Value> = {
        let mut vshards = Vec::new();
        for tenant in &by_shard[&hot] {
            vshards.push(app.route(tenant, "c", "k").await["vshard"].clone());
        }
        vshards
    };
    // The same traffic per tenant: the hot shard carries three times each other's.
    for round in 0..15 {
        for tenants in by_shard.values() {
            for tenant in tenants {
                let key = format!("k{}", round % 5);
                assert!(app.put_record(tenant, "c", &key, &json!({"round": round})).await.status().is_success());
                assert_eq!(app.get_record(tenant, "c", &key).await.status(), StatusCode::OK);
            }
        }
    }
    let epoch = app.epoch().await;

    let planned = eventually(Duration::from_secs(20), async || {
        let body = expect_json(plan(&app, "?window=1m").await, StatusCode::OK).await;
        (!body["move"].is_null()).then_some(body)
    })
    .await
    .expect("a plan with a move once the load is stored");
    let chosen = &planned["move"];
    assert_eq!(chosen["kind"], "vshard", "{planned:#}");
    assert_eq!(chosen["from"], hot.as_str(), "{planned:#}");
    assert_ne!(chosen["to"], hot.as_str());
    assert!(hot_vshards.contains(&chosen["vshard"]), "one of the hot shard's vshards: {planned:#}");
    let load_of = |shards: &Value, id: &str| {
        shards.as_array().unwrap().iter().find(|s| s["shard"] == id).unwrap()["statement_ms_per_s"].as_f64().unwrap()
    };
    let before = load_of(&planned["shards"], &hot);
    let after = load_of(&chosen["predicted"], &hot);
    assert!(after < before, "the hot shard's load falls: {before} -> {after}");
    let target = chosen["to"].as_str().unwrap();
    assert!(
        load_of(&chosen["predicted"], target) <= planned["overfull_above_ms_per_s"].as_f64().unwrap(),
        "the target does not become overfull: {planned:#}"
    );
    assert!(planned["reason"].as_str().unwrap().contains("move vshard"), "{planned:#}");
    // A plan moves nothing.
    assert_eq!(app.epoch().await, epoch, "the map did not change");
}
