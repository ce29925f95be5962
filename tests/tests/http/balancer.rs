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
//!
//! Load that has left, or was never served (PostgreSQL, issue 49 items 1 and 2): on two
//! instances, a hot tenant moved alone by an approved proposal takes its load along, also from
//! the windows before its move, so no run of either instance moves its old vshard (which carries
//! nothing) and no vshard move started copies nothing; a shard frozen under traffic and thawed
//! receives nothing from the runs within a window of the thaw, which show it held for its outage
//! instead of reading its frozen steps as cool.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shardgate_tests::pg_cluster::PgCluster;
use shardgate_tests::{Backend, TestApp, eventually, expect_json, expect_problem, record_path};

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
    let weighted: Vec<(String, u64)> = tenants.iter().map(|t| (t.clone(), rounds)).collect();
    traffic_via(app, &[&app.base_url], &weighted).await;
}

/// Rounds of a write and a read for each tenant of `weighted` (as many as it says), each round
/// of a tenant through the next instance of `bases` (of `app`'s fleet) in turn; then waits until
/// the load picture holds them.
async fn traffic_via(app: &TestApp, bases: &[&str], weighted: &[(String, u64)]) {
    let fleet = async || {
        // Over ten minutes, so that no traffic of the story leaves it while this waits.
        let load = expect_json(app.admin(Method::GET, "/v1/admin/load?window=10m", None).await, StatusCode::OK).await;
        let request = &load["fleet"]["request"];
        (request["writes"].as_u64().unwrap_or(0), request["reads"].as_u64().unwrap_or(0))
    };
    let (writes, reads) = fleet().await;
    let before = writes.min(reads);
    let tokens: Vec<String> = weighted.iter().map(|(tenant, _)| app.rw_token(tenant)).collect();
    // Each tenant's rounds spread evenly over the whole traffic, so that a busier moment of the
    // machine weighs on every tenant alike.
    let mut schedule: Vec<(f64, usize, u64)> = weighted
        .iter()
        .enumerate()
        .flat_map(|(i, (_, rounds))| (0..*rounds).map(move |round| ((round as f64 + 0.5) / *rounds as f64, i, round)))
        .collect();
    schedule.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    for (_, i, round) in schedule {
        let (tenant, token) = (&weighted[i].0, &tokens[i]);
        let base = bases[round as usize % bases.len()];
        let url = format!("{base}{}", record_path(tenant, "c", &format!("k{}", round % 5)));
        let put = app.client.put(&url).bearer_auth(token).json(&json!({"round": round})).send().await.unwrap();
        assert!(put.status().is_success(), "{url}: {}", put.status());
        assert_eq!(app.client.get(&url).bearer_auth(token).send().await.unwrap().status(), StatusCode::OK);
    }
    // Every window of that traffic is stored before anything plans on it (a plan over part of
    // it may see another shard as the hot one).
    let sent = before + weighted.iter().map(|(_, rounds)| rounds).sum::<u64>();
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

/// Asks for a run every 100 ms, for at most 20 s, until one's outcome is `outcome`: that run.
async fn run_until(app: &TestApp, outcome: &str) -> Option<Value> {
    eventually(Duration::from_secs(20), async || {
        let body = expect_json(run(app).await, StatusCode::OK).await;
        (body["outcome"] == outcome).then_some(body)
    })
    .await
}

/// An admin request to the instance at `base`, one of `app`'s fleet (a peer).
async fn admin_at(app: &TestApp, base: &str, method: Method, path: &str) -> reqwest::Response {
    let request = app.client.request(method, format!("{base}{path}")).bearer_auth(app.admin_token());
    request.send().await.expect("the instance answers")
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
    let proposed = run_until(&app, "proposed").await.expect("a run proposes a move once the load is stored");
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
    let proposed = run_until(&app, "proposed").await.expect("a run proposes a move once the load is stored");
    assert_eq!(proposed["proposal"], "pending", "{proposed:#}");
    // A sixth more traffic for one other hot tenant alone on its vshard: its vshard is now the
    // heaviest of the hot shard, but by less than the margin (10% of the hottest excess, about
    // 60% of one tenant's load here). Load is measured statement time, which a busy machine
    // inflates: at a third more, a CI run once saw that vshard at 1.8 times a tenant's load, past
    // the margin, and the new choice rightly replaced the proposal.
    let alone = |vshard: &Value| hot_tenants.iter().filter(|(_, v)| v == vshard).count() == 1;
    let (other, _) = hot_tenants
        .iter()
        .find(|(_, v)| *v != proposed["move"]["vshard"] && alone(v))
        .expect("another hot tenant alone on its vshard");
    traffic(&app, std::slice::from_ref(other), ROUNDS / 6).await;
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
    let first = run_until(&app, "started").await.expect("a run starts a move once the load is stored");
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

/// Rounds of traffic a tenant's unit of load is, in the stories of issue 49.
const UNIT: u64 = 30;

/// Each shard's load as `run` saw it, for the story's output.
fn loads_seen(run: &Value) -> String {
    let shards = run["shards"].as_array().map(Vec::as_slice).unwrap_or_default();
    let each: Vec<String> = shards
        .iter()
        .map(|s| {
            format!("{} {:.2}", s["shard"].as_str().unwrap_or("?"), s["statement_ms_per_s"].as_f64().unwrap_or(0.0))
        })
        .collect();
    each.join(", ")
}

/// A run's move of `vshard`, if it chose one: proposed, started or held back alike.
fn moves_vshard(run: &Value, vshard: &Value) -> bool {
    run["move"]["kind"] == "vshard" && run["move"]["vshard"] == *vshard
}

/// Issue 49, item 1, on two instances: a hot tenant alone on its vshard, most of its shard's
/// load, is moved alone by a proposal approved on the other instance. Its load then counts where
/// it is now, also for the windows from before its move, so in `apply` mode no run of either
/// instance moves (or proposes) its old vshard, which carries nothing any more; and no vshard
/// move a run starts copies nothing. Before the fix, the tenant's load of those windows stayed on
/// its old vshard, and the first run moved that vshard (copying 0 rows) to the coolest shard.
///
/// The load, in units of [`UNIT`] rounds: on the hot shard the tenant (6) and three neighbours
/// (1 each); seven tenants on another shard (1 each); nothing on the last two. The tenant goes
/// to one of those, and its traffic goes on there, lighter (1, then a fifth between runs), so
/// that the shard it left stays the hottest as long as its old windows count there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_moved_by_an_approved_proposal_is_never_followed_by_a_move_of_its_old_vshard() {
    let mut app = TestApp::spawn_with(Backend::Postgres, |config| {
        balancer_on_demand(config);
        // Every load window of the story stays in the span planned over.
        config.balancer.window = Duration::from_secs(600);
        // Overfull is well above the mean: the shard the tenant left stays overfull by its
        // neighbours and the load of the tenant's old windows (unless it counts where the
        // tenant is now), while its old vshard could go to an idle shard without making it so.
        config.balancer.threshold = 0.6;
    })
    .await;
    let peer = app.spawn_peer(|_| {}).await;
    set_mode(&app, "propose").await;
    let placed = crate::self_balancing::place(&app, "i", [4, 0, 0, 7]).await;
    let (home, hot) = (placed[0].0.clone(), placed[0].1[0].clone());
    let vshard = app.route(&hot, "c", "k").await["vshard"].clone();
    let mut weighted = vec![(hot.clone(), 6 * UNIT)];
    weighted.extend(placed[0].1[1..].iter().chain(&placed[3].1).map(|t| (t.clone(), UNIT)));
    traffic_via(&app, &[&app.base_url, &peer.base_url], &weighted).await;

    let proposed = run_until(&app, "proposed").await.expect("a run proposes a move once the load is stored");
    println!("proposed [{}] {}", loads_seen(&proposed), proposed["reason"]);
    assert_eq!(proposed["move"]["kind"], "tenant", "the hot tenant alone: {proposed:#}");
    assert_eq!(proposed["move"]["tenant"], hot.as_str(), "{proposed:#}");
    assert_eq!(proposed["move"]["from"], home.as_str(), "{proposed:#}");
    let target = proposed["move"]["to"].as_str().unwrap().to_owned();
    // Approved on the other instance.
    let path = format!("/v1/admin/balancer/proposals/{}/approve", proposed["id"]);
    let approved = expect_json(admin_at(&app, &peer.base_url, Method::POST, &path).await, StatusCode::ACCEPTED).await;
    assert_eq!(approved["job"]["kind"], "tenant.move", "{approved:#}");
    let job = crate::moves::ended(&app, approved["job"]["id"].as_str().unwrap(), Duration::from_secs(60)).await;
    assert_eq!(job["state"], "done", "{job:#}");
    // Both instances route the tenant to its new shard (each polls the catalog for the map).
    let route = format!("/v1/admin/route?tenant={hot}&collection=c&key=k");
    for base in [&app.base_url, &peer.base_url] {
        let known = eventually(Duration::from_secs(10), async || {
            let now = expect_json(admin_at(&app, base, Method::GET, &route).await, StatusCode::OK).await;
            (now["shard"] == target.as_str()).then_some(())
        })
        .await;
        assert!(known.is_some(), "{base} routes {hot} to {target}");
    }

    // In `apply` mode, with the tenant's traffic going on through both instances, runs on each
    // instance in turn (one holds the lease at a time: the first gives it up as it restarts).
    set_mode(&app, "apply").await;
    let more = |rounds: u64| vec![(hot.clone(), rounds)];
    traffic_via(&app, &[&app.base_url, &peer.base_url], &more(UNIT)).await;
    for turn in 0..2 {
        if turn == 1 {
            app.restart().await;
        }
        let base = if turn == 0 { app.base_url.clone() } else { peer.base_url.clone() };
        for _ in 0..3 {
            let ran =
                expect_json(admin_at(&app, &base, Method::POST, "/v1/admin/balancer/runs").await, StatusCode::OK).await;
            println!("run {} on {base}: {} [{}] {}", ran["id"], ran["outcome"], loads_seen(&ran), ran["reason"]);
            assert!(!moves_vshard(&ran, &vshard), "vshard {vshard} is moved, which {hot} has left: {ran:#}");
            traffic_via(&app, &[&app.base_url, &peer.base_url], &more(UNIT / 5)).await;
        }
    }

    // Every run of the story, on either instance: never the old vshard; every vshard move
    // started copied rows.
    let all = expect_json(app.admin(Method::GET, "/v1/admin/balancer?limit=200", None).await, StatusCode::OK).await;
    let runs = all["runs"].as_array().unwrap();
    let instances: std::collections::HashSet<&str> = runs.iter().filter_map(|r| r["instance"].as_str()).collect();
    assert!(instances.len() >= 2, "runs on both instances: {instances:?}");
    for ran in runs {
        assert!(!moves_vshard(ran, &vshard), "vshard {vshard} is moved, which {hot} has left: {ran:#}");
        if ran["outcome"] == "started" && ran["move"]["kind"] == "vshard" {
            let job = crate::moves::ended(&app, ran["job"].as_str().unwrap(), Duration::from_secs(60)).await;
            assert!(job["progress"]["rows_copied"].as_u64().unwrap_or(0) > 0, "a move of nothing: {job:#}");
        }
    }
}

/// The shard of the story of a freeze (the seeded shard that lives on the test's own cluster).
const FROZEN: &str = "shard-3";

/// A shard's load (ms/s) as a plan or a run shows it.
fn load_on(shards: &Value, id: &str) -> f64 {
    shards.as_array().unwrap().iter().find(|s| s["shard"] == id).unwrap()["statement_ms_per_s"].as_f64().unwrap()
}

/// One client per tenant reading its records `k0` to `k9` until stopped, pausing 20 ms after a
/// failed read (a frozen shard's are refused at once), counting those.
struct Readers {
    stop: Arc<AtomicBool>,
    clients: Vec<(String, tokio::task::JoinHandle<u64>)>,
}

impl Readers {
    fn start(app: &TestApp, tenants: &[String]) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let clients = tenants
            .iter()
            .map(|tenant| {
                let (stop, token) = (stop.clone(), app.rw_token(tenant));
                let urls: Vec<String> = (0..10).map(|k| app.url(&record_path(tenant, "c", &format!("k{k}")))).collect();
                let client = tokio::spawn(async move {
                    let http = shardgate_tests::http_client();
                    let mut failed = 0;
                    for url in urls.iter().cycle() {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        let read = http.get(url).bearer_auth(&token).send().await;
                        if !read.is_ok_and(|r| r.status() == StatusCode::OK) {
                            failed += 1;
                            tokio::time::sleep(Duration::from_millis(20)).await;
                        }
                    }
                    failed
                });
                (tenant.clone(), client)
            })
            .collect();
        Self { stop, clients }
    }

    /// Stops the clients; each tenant's failed reads.
    async fn finish(self) -> HashMap<String, u64> {
        self.stop.store(true, Ordering::Relaxed);
        let mut failed = HashMap::new();
        for (tenant, client) in self.clients {
            failed.insert(tenant, client.await.unwrap());
        }
        failed
    }
}

/// Issue 49, item 2: a shard carrying a hot share of the load, next to another overfull shard,
/// is frozen under read traffic for 15 s (every process of its PostgreSQL cluster stopped), then
/// thawed. The runs after the thaw, within a window, propose nothing onto it and show it held
/// for its outage: the steps of the freeze read as its average over the others, not as cool.
/// Before the fix, the freeze's steps (refused statements, taking no time) made it the coolest
/// shard of the window, and the first run after the thaw proposed a vshard of the overfull shard
/// onto it.
///
/// One client per tenant: five tenants on the shard that freezes, five on another, three on
/// each other one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_that_thaws_after_a_freeze_receives_nothing_for_a_window() {
    let cluster = PgCluster::start().await;
    let url = cluster.create_database("thawing_shard").await;
    let app = TestApp::spawn_with_shard_at(FROZEN, url, |config| {
        balancer_on_demand(config);
        config.balancer.window = Duration::from_secs(30);
        // The freeze is found out fast, so the statements it catches add little to the window.
        config.storage.pool.breaker.stall_after = Duration::from_millis(100);
        config.storage.pool.breaker.probe_timeout = Duration::from_millis(200);
    })
    .await;
    set_mode(&app, "propose").await;
    let shards = crate::self_balancing::shards(&app).await;
    let overfull = shards.iter().find(|s| *s != FROZEN).unwrap().clone();
    let wanted = std::array::from_fn(|i| if [FROZEN, overfull.as_str()].contains(&shards[i].as_str()) { 5 } else { 3 });
    let placed = crate::self_balancing::place(&app, "f", wanted).await;
    let tenants: Vec<String> = placed.iter().flat_map(|(_, t)| t.clone()).collect();
    for tenant in &tenants {
        let keys: Vec<String> = (0..10).map(|k| format!("k{k}")).collect();
        app.put_many(tenant, "c", &keys).await;
    }
    let readers = Readers::start(&app, &tenants);
    // It carries a hot share before it freezes.
    let hot = eventually(Duration::from_secs(30), async || {
        let plan = expect_json(plan(&app, "?window=5s").await, StatusCode::OK).await;
        (load_on(&plan["shards"], FROZEN) > plan["mean_statement_ms_per_s"].as_f64().unwrap()).then_some(())
    })
    .await;
    assert!(hot.is_some(), "{FROZEN} carries more than the mean within 30 s");

    cluster.freeze();
    tokio::time::sleep(Duration::from_secs(15)).await;
    cluster.thaw();
    let shard = format!("/v1/admin/shards/{FROZEN}");
    let back = eventually(Duration::from_secs(20), async || {
        let shard = expect_json(app.admin(Method::GET, &shard, None).await, StatusCode::OK).await;
        (shard["breaker"]["state"] == "closed").then_some(())
    })
    .await;
    assert!(back.is_some(), "{FROZEN} serves again within 20 s of the thaw");

    // Runs over four successive spans, every one of them checked.
    let mut until = Value::Null;
    for _ in 0..4 {
        let next = eventually(Duration::from_secs(10), async || {
            let ran = expect_json(run(&app).await, StatusCode::OK).await;
            println!("run {}: {} [{}] {}", ran["id"], ran["outcome"], loads_seen(&ran), ran["reason"]);
            assert_ne!(ran["move"]["to"], FROZEN, "a move onto the shard that just thawed: {ran:#}");
            let thawed = ran["shards"].as_array().unwrap().iter().find(|s| s["shard"] == FROZEN).unwrap();
            let why = thawed["held"].as_str().unwrap_or_default();
            assert!(why.contains("outage"), "{FROZEN} is held for its outage: {ran:#}");
            (ran["until"] != until).then(|| ran["until"].clone())
        })
        .await;
        until = next.expect("a run over a new span within 10 s");
    }
    let failed = readers.finish().await;
    let on_frozen = &placed.iter().find(|(s, _)| s == FROZEN).unwrap().1;
    assert!(on_frozen.iter().all(|t| failed[t] > 0), "the freeze refused its tenants' reads: {failed:?}");
}
