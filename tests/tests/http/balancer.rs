//! The balancer through the admin API.
//!
//! `GET /v1/admin/balancer/plan`: what the balancer's policy would do over the load picture. An
//! idle fleet is balanced; a shard carrying three times the load of each other shard, spread over
//! many vshards, gets a plan that moves one of its vshards to another shard, predicted to lower
//! its load without making the target overfull. Nothing moves.
//!
//! The runs: off, it refuses to run; in `propose` mode a run records a proposal and moves
//! nothing, a later run deciding the same keeps it standing, an approval of a proposal whose
//! target may no longer receive is refused as stale (and the proposal expires), an approval of a
//! standing one starts the move, a second approval is refused; the moved vshard then cools down
//! and counts on its new shard; in `apply` mode a run starts its move itself. Mode switches and
//! approvals are audited.
//!
//! Hysteresis and limits (PostgreSQL): a pending proposal survives runs that see a near-equal
//! alternative (another vshard of the hot shard a little heavier); with one move at a time, a
//! move frees its slot at its switch, not at the end of its cleanup grace.

use std::collections::HashMap;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shardgate_tests::{Backend, TestApp, eventually, expect_json, expect_problem};

shardgate_tests::on_both_engines!(a_hot_shard_gets_a_plan_that_moves_one_of_its_vshards_and_nothing_moves);
shardgate_tests::on_both_engines!(proposals_wait_for_approval_stale_ones_are_refused_and_moved_vshards_cool_down);

async fn plan(app: &TestApp, query: &str) -> reqwest::Response {
    app.admin(Method::GET, &format!("/v1/admin/balancer/plan{query}"), None).await
}

async fn a_hot_shard_gets_a_plan_that_moves_one_of_its_vshards_and_nothing_moves(backend: Backend) {
    let app = TestApp::spawn_with(backend, |config| {
        config.storage.load.window = Duration::from_secs(1);
        // Every read reaches its shard; any excess above the 10% threshold counts.
        config.cache.enabled = false;
        config.balancer.min_load_ms_per_s = 0.0;
        // The traffic lasts seconds of the minute planned over.
        config.balancer.sustained = 0.0;
    })
    .await;
    let idle = expect_json(plan(&app, "?window=1m").await, StatusCode::OK).await;
    assert!(idle["move"].is_null(), "{idle}");
    assert!(idle["reason"].as_str().unwrap().starts_with("balanced"), "{idle}");
    assert_eq!(idle["shards"].as_array().unwrap().len(), 4);
    expect_problem(plan(&app, "?window=0s").await, StatusCode::BAD_REQUEST, "invalid_query").await;

    let (hot, hot_vshards) = skew(&app).await;
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
    // With its breaker open the hot shard neither sends nor receives.
    let breaker = async |action: &str| {
        let body = json!({"action": action, "reason": "balancer test"});
        let path = format!("/v1/admin/shards/{hot}/breaker");
        expect_json(app.admin(Method::POST, &path, Some(&body)).await, StatusCode::OK).await
    };
    breaker("force_open").await;
    let held = expect_json(plan(&app, "?window=1m").await, StatusCode::OK).await;
    assert!(held["move"].is_null(), "{held:#}");
    assert!(held["reason"].as_str().unwrap().contains("its breaker is open"), "{held:#}");
    breaker("reset").await;
    // A plan moves nothing.
    assert_eq!(app.epoch().await, epoch, "the map did not change");
}

/// One-second load windows, every read reaching its shard, any excess above the threshold
/// counting however short, a minute of load planned over, and only the runs a test asks for.
pub(crate) fn balancer_on_demand(config: &mut shardgate_api::Config) {
    config.storage.load.window = Duration::from_secs(1);
    config.cache.enabled = false;
    config.balancer.min_load_ms_per_s = 0.0;
    config.balancer.sustained = 0.0;
    config.balancer.window = Duration::from_secs(60);
    config.balancer.interval = Duration::from_secs(3600);
    config.storage.moves.cleanup_grace = Duration::from_millis(200);
}

/// Tenants placed by their vshards, twelve on one shard and four on each other one, all sent the
/// same traffic: that shard carries three times each other's load. Gives it and its tenants'
/// vshards.
pub(crate) async fn skew(app: &TestApp) -> (String, Vec<Value>) {
    let (hot, tenants) = skew_tenants(app).await;
    (hot, tenants.into_iter().map(|(_, vshard)| vshard).collect())
}

/// [`skew`], giving the hot shard's tenants with their vshards.
async fn skew_tenants(app: &TestApp) -> (String, Vec<(String, Value)>) {
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
    let hot_vshards: Vec<(String, Value)> = {
        let mut vshards = Vec::new();
        for tenant in &by_shard[&hot] {
            vshards.push((tenant.clone(), app.route(tenant, "c", "k").await["vshard"].clone()));
        }
        vshards
    };
    // The same traffic per tenant: the hot shard carries three times each other's, enough
    // statements that a stalled one on a busy machine does not turn the picture around.
    let all: Vec<String> = by_shard.values().flatten().cloned().collect();
    traffic(app, &all, ROUNDS).await;
    (hot, hot_vshards)
}

/// `rounds` rounds of a write and a read for each of `tenants`, then waits until the load
/// picture holds them.
async fn traffic(app: &TestApp, tenants: &[String], rounds: u64) {
    let fleet = async || {
        let load = expect_json(app.admin(Method::GET, "/v1/admin/load?window=1m", None).await, StatusCode::OK).await;
        let request = &load["fleet"]["request"];
        (request["writes"].as_u64().unwrap_or(0), request["reads"].as_u64().unwrap_or(0))
    };
    let (writes, reads) = fleet().await;
    let before = writes.min(reads);
    for round in 0..rounds {
        for tenant in tenants {
            let key = format!("k{}", round % 5);
            assert!(app.put_record(tenant, "c", &key, &json!({"round": round})).await.status().is_success());
            assert_eq!(app.get_record(tenant, "c", &key).await.status(), StatusCode::OK);
        }
    }
    // Every window of that traffic is stored before anything plans on it (a plan over part of
    // it may see another shard as the hot one).
    let sent = before + rounds * tenants.len() as u64;
    let stored = eventually(Duration::from_secs(20), async || {
        let (writes, reads) = fleet().await;
        (writes >= sent && reads >= sent).then_some(())
    })
    .await;
    assert!(stored.is_some(), "the load of {sent} writes and reads is stored within 20 s");
}

/// Rounds of traffic the skewed tenants get.
const ROUNDS: u64 = 30;

async fn run(app: &TestApp) -> reqwest::Response {
    app.admin(Method::POST, "/v1/admin/balancer/runs", None).await
}

async fn set_mode(app: &TestApp, mode: &str) -> Value {
    expect_json(app.admin(Method::PUT, "/v1/admin/balancer/mode", Some(&json!({"mode": mode}))).await, StatusCode::OK)
        .await
}

async fn approve(app: &TestApp, id: &Value) -> reqwest::Response {
    app.admin(Method::POST, &format!("/v1/admin/balancer/proposals/{id}/approve"), None).await
}

async fn proposals_wait_for_approval_stale_ones_are_refused_and_moved_vshards_cool_down(backend: Backend) {
    let app = TestApp::spawn_with(backend, balancer_on_demand).await;
    // Without a token, and with a tenant's token, nothing of it answers.
    let mode = json!({"mode": "apply"});
    let anonymous = app.client.put(app.url("/v1/admin/balancer/mode")).json(&mode).send().await.unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    let tenant = app.token("st", &[shardgate_gatekeeper::Scope::Manage]);
    for (method, path) in [(Method::PUT, "/v1/admin/balancer/mode"), (Method::POST, "/v1/admin/balancer/runs")] {
        let refused = app.client.request(method, app.url(path)).bearer_auth(&tenant).json(&mode).send().await.unwrap();
        assert_eq!(refused.status(), StatusCode::FORBIDDEN, "{path}");
    }
    let status = expect_json(app.admin(Method::GET, "/v1/admin/balancer", None).await, StatusCode::OK).await;
    assert_eq!(status["mode"], "off", "{status}");
    assert_eq!(status["runs"], json!([]));
    expect_problem(run(&app).await, StatusCode::CONFLICT, "balancer_off").await;
    expect_problem(
        app.admin(Method::PUT, "/v1/admin/balancer/mode", Some(&json!({"mode": "sometimes"}))).await,
        StatusCode::BAD_REQUEST,
        "invalid_body",
    )
    .await;
    let switched = set_mode(&app, "propose").await;
    assert_eq!(switched["mode"], "propose");
    assert!(switched["mode_switched_by"].is_string(), "{switched}");

    // Which shard sends is the plan test's business: here, whichever the runs choose.
    skew(&app).await;
    let epoch = app.epoch().await;
    let proposed = eventually(Duration::from_secs(20), async || {
        let body = expect_json(run(&app).await, StatusCode::OK).await;
        (body["outcome"] == "proposed").then_some(body)
    })
    .await
    .expect("a run proposes a move once the load is stored");
    assert_eq!(proposed["proposal"], "pending", "{proposed:#}");
    assert_eq!(proposed["move"]["kind"], "vshard", "{proposed:#}");
    assert!(proposed["job"].is_null());
    assert_eq!(app.epoch().await, epoch, "a proposal moves nothing");
    // The same decision again: the proposal stands, no second one.
    let again = expect_json(run(&app).await, StatusCode::OK).await;
    assert_eq!(again["outcome"], "proposed", "{again:#}");
    assert!(again["proposal"].is_null(), "{again:#}");
    assert!(again["reason"].as_str().unwrap().contains(&format!("still proposed as proposal {}", proposed["id"])));
    let status = expect_json(app.admin(Method::GET, "/v1/admin/balancer", None).await, StatusCode::OK).await;
    assert_eq!(status["proposals"].as_array().unwrap().len(), 1, "{status:#}");
    assert_eq!(status["proposals"][0]["id"], proposed["id"]);
    assert_eq!(status["runs"][0]["id"], again["id"], "newest first");

    expect_problem(approve(&app, &json!("nine")).await, StatusCode::NOT_FOUND, "proposal_not_found").await;
    expect_problem(approve(&app, &json!(999_999)).await, StatusCode::NOT_FOUND, "proposal_not_found").await;
    expect_problem(approve(&app, &again["id"]).await, StatusCode::CONFLICT, "proposal_settled").await;

    // Its target may no longer receive: the proposal is stale.
    let target = proposed["move"]["to"].as_str().unwrap().to_owned();
    app.set_shard_state(&target, "read_only").await;
    let stale = expect_problem(approve(&app, &proposed["id"]).await, StatusCode::CONFLICT, "proposal_stale").await;
    assert!(stale["detail"].as_str().unwrap().contains("has changed"), "{stale}");
    expect_problem(approve(&app, &proposed["id"]).await, StatusCode::CONFLICT, "proposal_settled").await;
    assert_eq!(app.epoch().await, epoch + 1, "only the shard's state changed");
    app.set_shard_state(&target, "active").await;

    let standing = expect_json(run(&app).await, StatusCode::OK).await;
    assert_eq!(standing["proposal"], "pending", "a new proposal: {standing:#}");
    let approved = expect_json(approve(&app, &standing["id"]).await, StatusCode::ACCEPTED).await;
    assert_eq!(approved["proposal"]["proposal"], "approved", "{approved:#}");
    assert_eq!(approved["job"]["kind"], "vshard.move");
    let job = approved["job"]["id"].as_str().unwrap().to_owned();
    assert_eq!(approved["proposal"]["job"], job.as_str());
    expect_problem(approve(&app, &standing["id"]).await, StatusCode::CONFLICT, "proposal_settled").await;
    let job_now = async || {
        expect_json(app.admin(Method::GET, &format!("/v1/admin/jobs/{job}"), None).await, StatusCode::OK).await
    };
    let Some(done) = eventually(Duration::from_secs(60), async || {
        let job = job_now().await;
        (job["state"] != "running").then_some(job)
    })
    .await
    else {
        panic!("the move ends: {:#}", job_now().await);
    };
    assert_eq!(done["state"], "done", "{done:#}");
    let moved = &standing["move"]["vshard"];
    let from = standing["move"]["from"].as_str().unwrap();
    let vshard = moved.as_u64().unwrap();
    let map = app.shard_map().await;
    let owner = map["vshard_ranges"].as_array().unwrap().iter().find_map(|r| {
        (r["first"].as_u64().unwrap() <= vshard && vshard <= r["last"].as_u64().unwrap()).then(|| r["shard"].clone())
    });
    assert_eq!(owner, Some(standing["move"]["to"].clone()), "the vshard moved where proposed");

    // Now in apply mode: its moved vshard cools down, and counts on its new shard.
    set_mode(&app, "apply").await;
    let applied = expect_json(run(&app).await, StatusCode::OK).await;
    assert_eq!(applied["mode"], "apply");
    assert_ne!(applied["move"]["vshard"], *moved, "the moved vshard cools down: {applied:#}");
    let load_of = |shards: &Value, id: &str| {
        shards.as_array().unwrap().iter().find(|s| s["shard"] == id).unwrap()["statement_ms_per_s"].as_f64().unwrap()
    };
    assert!(
        load_of(&applied["shards"], from) < load_of(&standing["shards"], from),
        "the moved vshard's load counts on its new shard: {applied:#}"
    );
    if applied["outcome"] == "started" {
        assert!(applied["job"].is_string(), "{applied:#}");
    } else {
        assert!(["balanced", "nothing", "held"].contains(&applied["outcome"].as_str().unwrap()), "{applied:#}");
    }
    let audit = expect_json(app.admin(Method::GET, "/v1/admin/audit?limit=1000", None).await, StatusCode::OK).await;
    let actions: Vec<&str> = audit["items"].as_array().unwrap().iter().filter_map(|e| e["action"].as_str()).collect();
    for action in ["balancer.mode", "balancer.approve", "balancer.move"] {
        assert!(actions.contains(&action), "{action} audited: {actions:?}");
    }
}

/// A pending proposal stands while it is still valid and within the margin of the best choice:
/// more traffic for another of the hot shard's tenants (its vshard now a little better a choice
/// than the proposed one) does not replace it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_proposal_survives_runs_that_see_a_near_equal_alternative() {
    let app = TestApp::spawn_with(Backend::Postgres, balancer_on_demand).await;
    set_mode(&app, "propose").await;
    let (_, hot_tenants) = skew_tenants(&app).await;
    let proposed = eventually(Duration::from_secs(20), async || {
        let body = expect_json(run(&app).await, StatusCode::OK).await;
        (body["outcome"] == "proposed").then_some(body)
    })
    .await
    .expect("a run proposes a move once the load is stored");
    assert_eq!(proposed["proposal"], "pending", "{proposed:#}");
    // A third more traffic for one other hot tenant alone on its vshard: its vshard is now the
    // heaviest of the hot shard, but by less than the margin (10% of the hottest excess, about
    // 60% of one tenant's load here).
    let alone = |vshard: &Value| hot_tenants.iter().filter(|(_, v)| v == vshard).count() == 1;
    let (other, _) = hot_tenants
        .iter()
        .find(|(_, v)| *v != proposed["move"]["vshard"] && alone(v))
        .expect("another hot tenant alone on its vshard");
    traffic(&app, std::slice::from_ref(other), ROUNDS / 3).await;
    for _ in 0..3 {
        let again = expect_json(run(&app).await, StatusCode::OK).await;
        assert_eq!(again["outcome"], "proposed", "{again:#}");
        assert!(again["proposal"].is_null(), "no second proposal: {again:#}");
        let standing = format!("still proposed as proposal {}", proposed["id"]);
        assert!(again["reason"].as_str().unwrap().contains(&standing), "{again:#}");
        for field in ["kind", "vshard", "from", "to"] {
            assert_eq!(again["move"][field], proposed["move"][field], "the proposed move stands: {again:#}");
        }
    }
    let status = expect_json(app.admin(Method::GET, "/v1/admin/balancer", None).await, StatusCode::OK).await;
    assert_eq!(status["proposals"].as_array().unwrap().len(), 1, "{status:#}");
    assert_eq!(status["proposals"][0]["id"], proposed["id"]);
}

/// With one move at a time, a move frees its slot at its switch: the next run starts the next
/// move while the first cleans up its source (a grace far longer than the test).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_balancer_move_frees_its_slot_at_its_switch_not_after_its_cleanup_grace() {
    let app = TestApp::spawn_with(Backend::Postgres, |config| {
        balancer_on_demand(config);
        config.balancer.max_concurrent_moves = 1;
        config.storage.moves.cleanup_grace = Duration::from_secs(600);
    })
    .await;
    set_mode(&app, "apply").await;
    skew(&app).await;
    let first = eventually(Duration::from_secs(20), async || {
        let body = expect_json(run(&app).await, StatusCode::OK).await;
        (body["outcome"] == "started").then_some(body)
    })
    .await
    .expect("a run starts a move once the load is stored");
    let job = first["job"].as_str().unwrap().to_owned();
    let cleaning = eventually(Duration::from_secs(60), async || {
        let path = format!("/v1/admin/jobs/{job}");
        let job = expect_json(app.admin(Method::GET, &path, None).await, StatusCode::OK).await;
        (job["progress"]["phase"] == "cleanup").then_some(job)
    })
    .await;
    assert!(cleaning.is_some(), "the move reaches its cleanup within 60 s");
    let next = expect_json(run(&app).await, StatusCode::OK).await;
    assert_eq!(next["outcome"], "started", "the first move's slot is free at its switch: {next:#}");
    assert_ne!(next["move"], first["move"], "{next:#}");
}
