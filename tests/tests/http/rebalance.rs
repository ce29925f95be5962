//! A tenant move, then rebalancing vshards onto a newly registered shard (`POST /v1/admin/vshards/rebalance`) and
//! draining a shard (`POST /v1/admin/shards/{id}/drain`) while clients read and write several
//! tenants through two gateway instances: no lost write and no stale read (the histories are
//! checked for per-key linearizability), index look-ups still find every record after their
//! entries moved, nothing is left on a shard that no longer owns it, and the drained shard
//! can be deleted.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shardgate_gatekeeper::Scope;
use shardgate_tests::{TestApp, eventually, expect_json, expect_problem, record_path};

use crate::moves::{KEYS, assert_linearizable, client, ended, seeded_history, spawn};

mod sqlite {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_new_shard_takes_its_share_and_a_drained_shard_is_emptied_under_load() {
        super::a_new_shard_takes_its_share_and_a_drained_shard_is_emptied_under_load(shardgate_tests::Backend::Sqlite)
            .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_rebalance_starts_no_more_moves_and_rolls_the_running_ones_back() {
    // Every phase boundary of a move pauses, so the moves are still before their switch when
    // the cancellation comes.
    let app = spawn(shardgate_tests::Backend::Sqlite, Duration::from_millis(500)).await;
    let (url, _) = app.extra_shard_url("s-new").await;
    expect_json(post(&app, "/v1/admin/shards", json!({"id": "s-new", "url": url})).await, StatusCode::CREATED).await;
    app.create_tenant("alpha").await;
    app.put_many("alpha", "c", &(0..20).map(|i| format!("k{i}")).collect::<Vec<_>>()).await;
    let started =
        expect_json(post(&app, "/v1/admin/vshards/rebalance", json!({"parallel": 2})).await, StatusCode::ACCEPTED)
            .await;
    let id = started["job"]["id"].as_str().unwrap().to_owned();
    let running = async || {
        let job = crate::moves::job(&app, &id).await;
        (job["progress"]["running"].as_u64() == Some(2)).then_some(())
    };
    eventually(Duration::from_secs(10), running).await.expect("two moves run");
    // One rebalance at a time; the refusal says which job runs.
    let second = post(&app, "/v1/admin/vshards/rebalance", json!({})).await;
    let conflict = expect_problem(second, StatusCode::CONFLICT, "job_conflict").await;
    assert_eq!(
        conflict["detail"],
        format!("a rebalance or drain is running (job {id}); wait for it to end or cancel it"),
        "{conflict}"
    );
    let cancel = app.admin(Method::POST, &format!("/v1/admin/jobs/{id}/cancel"), None).await;
    assert_eq!(cancel.status(), StatusCode::ACCEPTED);
    let cancelled = ended(&app, &id, Duration::from_secs(60)).await;
    assert_eq!(cancelled["state"], "cancelled", "{cancelled}");
    let steps = cancelled["progress"]["steps"].as_array().unwrap();
    assert!(steps.iter().all(|s| s["state"] == "cancelled"), "{cancelled}");
    // The moves that had started rolled back: nothing moved, and every record reads back.
    let started: Vec<&Value> = steps.iter().filter(|s| s["job"].is_string()).collect();
    assert_eq!(started.len(), 2, "{cancelled}");
    for step in started {
        let moved = crate::moves::job(&app, step["job"].as_str().unwrap()).await;
        assert_eq!(moved["state"], "cancelled", "{moved}");
        assert_eq!(moved["progress"]["phase"], "rolled_back", "{moved}");
    }
    assert_eq!(vshards_per_shard(&app).await.get("s-new"), Some(&0));
    for i in 0..20 {
        assert_eq!(app.get_record("alpha", "c", &format!("k{i}")).await.status(), StatusCode::OK);
    }
    // And a new rebalance may start.
    let again = post(&app, "/v1/admin/vshards/rebalance", json!({"dry_run": true})).await;
    assert_eq!(again.status(), StatusCode::OK);
}

mod postgres {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_new_shard_takes_its_share_and_a_drained_shard_is_emptied_under_load() {
        super::a_new_shard_takes_its_share_and_a_drained_shard_is_emptied_under_load(
            shardgate_tests::Backend::Postgres,
        )
        .await;
    }
}

/// Tenants placed by their vshards (`bravo` is moved, and pinned, first); `pinned` lives on the
/// new shard by its pin.
const TENANTS: [&str; 4] = ["alpha", "bravo", "charlie", "delta"];
const PINNED: &str = "pinned";
/// Clients, half on each instance.
const CLIENTS: usize = 8;

async fn post(app: &TestApp, path: &str, body: Value) -> reqwest::Response {
    app.admin(Method::POST, path, Some(&body)).await
}

/// How many vshards each shard owns, from the shard map.
async fn vshards_per_shard(app: &TestApp) -> std::collections::BTreeMap<String, u64> {
    let map = app.shard_map().await;
    let shards = map["shards"].as_array().unwrap().iter();
    shards.map(|s| (s["id"].as_str().unwrap().to_owned(), s["vshards"].as_u64().unwrap())).collect()
}

async fn a_new_shard_takes_its_share_and_a_drained_shard_is_emptied_under_load(backend: shardgate_tests::Backend) {
    let app = spawn(backend, Duration::ZERO).await;
    let peer = app.spawn_peer(|_| {}).await;
    let (url, _) = app.extra_shard_url("s-new").await;
    let registered = post(&app, "/v1/admin/shards", json!({"id": "s-new", "url": url})).await;
    expect_json(registered, StatusCode::CREATED).await;
    for tenant in TENANTS {
        app.create_tenant(tenant).await;
    }
    app.create_tenant_with(&json!({"id": PINNED, "shard": "s-new"})).await;
    let tenants: Vec<&str> = TENANTS.iter().copied().chain([PINNED]).collect();

    // An index over the values the clients write: its entries are placed by vshards and move
    // with them.
    let manager = app.token("alpha", &[Scope::Read, Scope::Write, Scope::Manage]);
    let index = app.url("/v1/tenants/alpha/collections/c/indexes/by-v");
    let defined = app.client.put(&index).bearer_auth(&manager).json(&json!({"field": "/v"})).send().await.unwrap();
    expect_json(defined, StatusCode::CREATED).await;
    let active = async || {
        let info: Value = app.client.get(&index).bearer_auth(&manager).send().await.ok()?.json().await.ok()?;
        (info["state"] == "active").then_some(())
    };
    eventually(Duration::from_secs(15), active).await.expect("the index builds");

    let history = seeded_history(&app, &tenants).await;
    let tokens: Vec<(String, String)> = tenants.iter().map(|t| (t.to_string(), app.rw_token(t))).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let (errors, refused) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|id| {
            let base = if id % 2 == 0 { app.base_url.clone() } else { peer.base_url.clone() };
            let (history, stop, errors, refused) = (history.clone(), stop.clone(), errors.clone(), refused.clone());
            tokio::spawn(client(base, tokens.clone(), id, history, stop, errors, refused))
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(1000)).await;

    // First one tenant moves (it is pinned to its new shard from then on), then the rebalance.
    let home = app.route("bravo", "c", "k1").await["shard"].as_str().unwrap().to_owned();
    let to = app.shard_urls().into_iter().map(|(id, _)| id).find(|id| *id != home).unwrap();
    let moving = post(&app, "/v1/admin/tenants/bravo/move", json!({"to": to})).await;
    let moving = expect_json(moving, StatusCode::ACCEPTED).await;
    let moved = ended(&app, moving["id"].as_str().unwrap(), Duration::from_secs(60)).await;
    assert_eq!(moved["state"], "done", "{moved}");
    assert_eq!(app.route("bravo", "c", "k1").await["shard"], to.as_str());

    // The plan: the new shard takes its share of the vshards, moving no more than that.
    let before = vshards_per_shard(&app).await;
    assert_eq!(before.get("s-new"), Some(&0), "a newly registered shard owns nothing: {before:?}");
    let dry =
        expect_json(post(&app, "/v1/admin/vshards/rebalance", json!({"dry_run": true})).await, StatusCode::OK).await;
    assert!(dry["job"].is_null());
    let planned = dry["plan"]["vshards"].as_array().unwrap();
    // Every shard ends with ⌊1024/n⌋ or ⌈1024/n⌉ vshards.
    let n = before.len() as u64;
    let share = 1024 / n..=1024_u64.div_ceil(n);
    assert!(share.contains(&(planned.len() as u64)), "{} vshards planned for {n} shards", planned.len());
    assert!(planned.iter().all(|m| m["to"] == "s-new"), "only the new shard receives");
    for load in dry["plan"]["loads"].as_array().unwrap() {
        assert!(share.contains(&load["after"].as_u64().unwrap()), "{load}");
    }
    // By bytes, the loads are what the shards store.
    let bytes = json!({"dry_run": true, "balance": "bytes"});
    let by_bytes = expect_json(post(&app, "/v1/admin/vshards/rebalance", bytes).await, StatusCode::OK).await;
    assert_eq!(by_bytes["plan"]["balance"], "bytes");
    let stored: u64 = by_bytes["plan"]["loads"].as_array().unwrap().iter().map(|l| l["before"].as_u64().unwrap()).sum();
    assert!(stored > 0, "{by_bytes}");
    expect_problem(
        post(&app, "/v1/admin/vshards/rebalance", json!({"parallel": 0})).await,
        StatusCode::BAD_REQUEST,
        "invalid_body",
    )
    .await;

    let started =
        expect_json(post(&app, "/v1/admin/vshards/rebalance", json!({"parallel": 4})).await, StatusCode::ACCEPTED)
            .await;
    let job = started["job"]["id"].as_str().unwrap().to_owned();
    assert_eq!(started["job"]["kind"], "vshards.rebalance");
    // One rebalance at a time.
    let second = post(&app, "/v1/admin/vshards/rebalance", json!({})).await;
    expect_problem(second, StatusCode::CONFLICT, "job_conflict").await;
    let rebalanced = ended(&app, &job, Duration::from_secs(120)).await;
    assert_eq!(rebalanced["state"], "done", "{rebalanced}");
    let progress = &rebalanced["progress"];
    assert_eq!(progress["failed"], 0, "{progress}");
    assert_eq!(progress["done"].as_u64().unwrap() as usize, progress["steps"].as_array().unwrap().len());
    let after = vshards_per_shard(&app).await;
    assert_eq!(after.values().sum::<u64>(), 1024);
    assert!(after.values().all(|n| share.contains(n)), "{after:?}");
    // Every step's move compared its copy.
    for step in progress["steps"].as_array().unwrap() {
        let moved = crate::moves::job(&app, step["job"].as_str().unwrap()).await;
        assert_eq!(moved["kind"], "vshard.move");
        assert_eq!(moved["progress"]["checksums"]["matched"], true, "{moved}");
    }

    // Draining the new shard gives its vshards back and moves the tenant pinned to it.
    let dry =
        expect_json(post(&app, "/v1/admin/shards/s-new/drain", json!({"dry_run": true})).await, StatusCode::OK).await;
    assert_eq!(dry["plan"]["tenants"].as_array().unwrap().len(), 1, "{dry}");
    let map = app.shard_map().await;
    let new = map["shards"].as_array().unwrap().iter().find(|s| s["id"] == "s-new").cloned().unwrap();
    assert_eq!(new["state"], "active", "a dry run changes nothing");
    let drain =
        expect_json(post(&app, "/v1/admin/shards/s-new/drain", json!({"parallel": 4})).await, StatusCode::ACCEPTED)
            .await;
    let drain_job = drain["job"]["id"].as_str().unwrap().to_owned();
    let drained = ended(&app, &drain_job, Duration::from_secs(120)).await;
    assert_eq!(drained["state"], "done", "{drained}");
    assert_eq!(drained["progress"]["drain"], "s-new");
    let after = vshards_per_shard(&app).await;
    assert_eq!(after.get("s-new"), Some(&0), "{after:?}");
    assert_ne!(app.route(PINNED, "c", "k1").await["shard"], "s-new");
    // Nothing is left to drain: a second drain has nothing to do.
    let again = expect_json(post(&app, "/v1/admin/shards/s-new/drain", json!({})).await, StatusCode::OK).await;
    assert!(again["job"].is_null(), "{again}");

    // Traffic goes on until the history is big enough to say something.
    let enough = eventually(Duration::from_secs(90), async || (history.len() >= 10_000).then_some(())).await;
    assert!(enough.is_some(), "only {} operations in 90 s", history.len());
    stop.store(true, Ordering::Relaxed);
    for client in clients {
        client.await.unwrap();
    }
    assert_eq!(errors.load(Ordering::Relaxed), 0, "unexpected answers (see the log)");
    let operations = assert_linearizable(&history, KEYS * tenants.len());
    assert!(operations >= 10_000, "only {operations} operations");
    eprintln!("{} operations, {} refused while moving", history.len(), refused.load(Ordering::Relaxed));

    // The index finds every record of alpha by its value, wherever its entries went.
    let reader = app.rw_token("alpha");
    for i in 0..KEYS {
        let got = app.client.get(app.url(&record_path("alpha", "c", &format!("k{i}")))).bearer_auth(&reader);
        let got = got.send().await.unwrap();
        if got.status() == StatusCode::NOT_FOUND {
            continue;
        }
        let record: Value = got.json().await.unwrap();
        let value = record["value"]["v"].as_str().unwrap().to_owned();
        let found =
            app.client.get(format!("{index}/records?value={value}")).bearer_auth(&manager).send().await.unwrap();
        let found = expect_json(found, StatusCode::OK).await;
        let keys: Vec<&str> = found["items"].as_array().unwrap().iter().map(|r| r["key"].as_str().unwrap()).collect();
        assert!(keys.contains(&format!("k{i}").as_str()), "value {value} of k{i} finds {keys:?}");
    }

    // Each tenant's rows are on its home shard only.
    for (shard, url) in app.shard_urls().into_iter().chain([("s-new".to_owned(), url)]) {
        let pool = shardgate_tests::open_shard(&url).await;
        for tenant in &tenants {
            let home = app.route(tenant, "c", "k1").await["shard"].as_str().unwrap().to_owned();
            if home == shard {
                continue;
            }
            let sql = format!("SELECT COUNT(*) FROM records WHERE tenant = '{tenant}'");
            let left: i64 = sqlx::query_scalar(&sql).fetch_one(&pool).await.unwrap();
            assert_eq!(left, 0, "shard {shard} still holds {left} records of {tenant}, whose home is {home}");
        }
        pool.close().await;
    }
    // The drained shard holds nothing any more and can be deleted.
    let deleted = app.admin(Method::DELETE, "/v1/admin/shards/s-new", None).await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    peer.stop().await;
}
