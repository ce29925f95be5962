//! Splitting a range of a range-distributed collection
//! (`POST /v1/admin/tenants/{id}/collections/{collection}/split`): a split that keeps every key
//! on its shard changes the catalog alone; one that gives keys to another shard moves them in a
//! `range.move` job while clients write and read through two instances, with no lost write and
//! no stale read (per-key linearizability), verified copies, and the old copy removed; splits
//! that cannot be made are refused, and a cancelled one rolls back. A drain moves the ranges
//! off its shard.

use std::sync::atomic::Ordering;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shardgate_tests::records::keys_of;
use shardgate_tests::{TestApp, eventually, expect_json, expect_problem};

use crate::moves::{KEYS, Load, assert_linearizable, ended, spawn};
use crate::redistribution::seeded;

shardgate_tests::on_both_engines!(
    a_range_moves_under_load_without_a_lost_write_or_a_stale_read,
    range_splits_that_cannot_be_made_are_refused_and_a_cancelled_one_rolls_back,
    a_drain_moves_the_ranges_off_its_shard,
);

/// Clients of the tenant whose range moves (half on each instance).
const CLIENTS: usize = 8;

/// The first two shards of the map.
async fn two_shards(app: &TestApp) -> (String, String) {
    let map = app.shard_map().await;
    let ids: Vec<String> =
        map["shards"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap().to_owned()).collect();
    (ids[0].clone(), ids[1].clone())
}

async fn distribute(app: &TestApp, body: &Value) -> reqwest::Response {
    app.admin(Method::PUT, "/v1/admin/tenants/acme/collections/c", Some(body)).await
}

async fn split(app: &TestApp, at: &str, shard: &str) -> reqwest::Response {
    let body = json!({"at": at, "shard": shard});
    app.admin(Method::POST, "/v1/admin/tenants/acme/collections/c/split", Some(&body)).await
}

/// Rows of `acme`'s collection `c` on `shard` whose keys satisfy `condition`.
async fn rows_on(app: &TestApp, shard: &str, condition: &str) -> i64 {
    let url = app.shard_urls().into_iter().find(|(id, _)| id == shard).unwrap().1;
    let pool = shardgate_tests::open_shard(&url).await;
    let sql = format!("SELECT COUNT(*) FROM spread_records WHERE tenant = 'acme' AND collection = 'c' AND {condition}");
    let count: i64 = sqlx::query_scalar(&sql).fetch_one(&pool).await.unwrap();
    pool.close().await;
    count
}

async fn a_range_moves_under_load_without_a_lost_write_or_a_stale_read(backend: shardgate_tests::Backend) {
    let app = spawn(backend, Duration::ZERO).await;
    let peer = app.spawn_peer(|_| {}).await;
    app.create_tenant("acme").await;
    let (from, to) = two_shards(&app).await;
    let ranges = json!({"distribution": "range", "ranges": [{"from": "", "shard": from}]});
    expect_json(distribute(&app, &ranges).await, StatusCode::OK).await;
    let token = app.rw_token("acme");
    let history = seeded(&app).await;

    // A split whose keys stay on their shard changes the catalog alone.
    let same = expect_json(split(&app, "k3", &from).await, StatusCode::OK).await;
    assert_eq!(same["ranges"], json!([{"from": "", "shard": from}, {"from": "k3", "shard": from}]), "{same}");

    let load = Load::start([&app.base_url, &peer.base_url], ("acme", &token), CLIENTS, &history);
    let (errors, refused) = (load.errors.clone(), load.refused.clone());

    tokio::time::sleep(Duration::from_millis(1000)).await;
    // The keys from "k5" on ("k5", "k50"…"k99") go to the other shard.
    let job = expect_json(split(&app, "k5", &to).await, StatusCode::ACCEPTED).await;
    assert_eq!(job["kind"], "range.move", "{job}");
    let id = job["id"].as_str().unwrap().to_owned();
    let done = ended(&app, &id, Duration::from_secs(60)).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let enough = eventually(Duration::from_secs(90), async || (history.len() >= 4_000 + KEYS).then_some(())).await;
    assert!(enough.is_some(), "only {} operations in 90 s", history.len());
    load.finish().await;

    assert_eq!(done["state"], "done", "{done}");
    let progress = &done["progress"];
    assert_eq!((progress["from"].as_str(), progress["to"].as_str()), (Some(from.as_str()), Some(to.as_str())));
    assert_eq!(progress["range"]["from"], "k5", "{progress}");
    assert_eq!(progress["checksums"]["matched"], true, "{progress}");
    assert!(progress["cutover_ms"].as_i64().is_some(), "{progress}");
    assert_eq!(errors.load(Ordering::Relaxed), 0, "unexpected answers (see the log)");
    let got = app.admin(Method::GET, "/v1/admin/tenants/acme/collections/c", None).await;
    let expected = json!([{"from": "", "shard": from}, {"from": "k3", "shard": from}, {"from": "k5", "shard": to}]);
    assert_eq!(expect_json(got, StatusCode::OK).await["ranges"], expected);
    for (key, shard) in [("k1", &from), ("k42", &from), ("k5", &to), ("k77", &to)] {
        assert_eq!(app.route("acme", "c", key).await["shard"], shard.as_str(), "{key}");
    }

    assert_linearizable(&history, KEYS);
    eprintln!(
        "{} operations, {} refused while moving, cut-over {} ms",
        history.len(),
        refused.load(Ordering::Relaxed),
        progress["cutover_ms"]
    );

    // Both instances list the same records, each key once and in order, and a listing inside
    // the moved range reads its new shard alone.
    crate::redistribution::listed_alike(&app, &peer.base_url, &token).await;
    let explain = expect_json(app.list_records("acme", "c", "start=k6&end=k7&explain=true").await, StatusCode::OK);
    assert_eq!(explain.await["explain"]["shards"], json!([to]));

    // The old copy is gone from the old shard; the keys below the split stayed there.
    assert_eq!(rows_on(&app, &from, "key >= 'k5'").await, 0, "the old shard keeps moved keys");
    assert!(rows_on(&app, &from, "key < 'k5'").await > 0);
    assert_eq!(rows_on(&app, &to, "key < 'k5'").await, 0, "the new shard took keys that did not move");
    peer.stop().await;
}

async fn range_splits_that_cannot_be_made_are_refused_and_a_cancelled_one_rolls_back(
    backend: shardgate_tests::Backend,
) {
    let app = spawn(backend, Duration::from_millis(1500)).await;
    app.create_tenant("acme").await;
    let (from, to) = two_shards(&app).await;
    // Only a range collection splits.
    expect_problem(split(&app, "m", &to).await, StatusCode::CONFLICT, "distribution_refused").await;
    let ranges = json!({"distribution": "range", "ranges": [{"from": "", "shard": from}]});
    expect_json(distribute(&app, &ranges).await, StatusCode::OK).await;
    app.put_many("acme", "c", &(0..30).map(|i| format!("k{i:02}")).collect::<Vec<_>>()).await;
    expect_problem(split(&app, "m", "no-such-shard").await, StatusCode::NOT_FOUND, "shard_not_found").await;
    expect_problem(split(&app, "bad\u{1}key", &to).await, StatusCode::BAD_REQUEST, "invalid_body").await;
    let nobody = app
        .admin(Method::POST, "/v1/admin/tenants/nobody/collections/c/split", Some(&json!({"at": "m", "shard": to})))
        .await;
    expect_problem(nobody, StatusCode::NOT_FOUND, "tenant_not_found").await;
    // Ranges that would put stored keys on another shard are not set directly.
    let moving = json!({"distribution": "range", "ranges": [{"from": "", "shard": from}, {"from": "k1", "shard": to}]});
    expect_problem(distribute(&app, &moving).await, StatusCode::CONFLICT, "distribution_refused").await;

    // The job pauses at each phase boundary: other changes of the collection and of the tenant
    // are refused while it runs, and a cancellation rolls it back.
    let job = expect_json(split(&app, "k15", &to).await, StatusCode::ACCEPTED).await;
    let id = job["id"].as_str().unwrap().to_owned();
    expect_problem(split(&app, "k20", &to).await, StatusCode::CONFLICT, "job_conflict").await;
    let same = json!({"distribution": "range", "ranges": [{"from": "", "shard": from}, {"from": "k1", "shard": from}]});
    expect_problem(distribute(&app, &same).await, StatusCode::CONFLICT, "job_conflict").await;
    let cancel = app.admin(Method::POST, &format!("/v1/admin/jobs/{id}/cancel"), None).await;
    assert_eq!(cancel.status(), StatusCode::ACCEPTED);
    let done = ended(&app, &id, Duration::from_secs(30)).await;
    assert_eq!(done["state"], "cancelled", "{done}");
    assert_eq!(done["progress"]["phase"], "rolled_back");
    assert_eq!(app.route("acme", "c", "k20").await["shard"], from.as_str(), "the keys stay where they were");
    assert_eq!(rows_on(&app, &to, "1 = 1").await, 0, "a rolled-back move leaves nothing on the target");
    let got = app.admin(Method::GET, "/v1/admin/tenants/acme/collections/c", None).await;
    assert_eq!(expect_json(got, StatusCode::OK).await["ranges"], json!([{"from": "", "shard": from}]));
    // Writes of the range work again, and a whole range may move: a split at its bound.
    assert!(app.put_record("acme", "c", "k25", &json!({"again": true})).await.status().is_success());
    let job = expect_json(split(&app, "", &to).await, StatusCode::ACCEPTED).await;
    let done = ended(&app, job["id"].as_str().unwrap(), Duration::from_secs(60)).await;
    assert_eq!(done["state"], "done", "{done}");
    let got = expect_json(app.get_record("acme", "c", "k25").await, StatusCode::OK).await;
    assert_eq!(got["value"], json!({"again": true}));
    let page = expect_json(app.list_records("acme", "c", "limit=100").await, StatusCode::OK).await;
    assert_eq!(keys_of(&page).len(), 30);
    assert_eq!(rows_on(&app, &from, "1 = 1").await, 0);
}

async fn a_drain_moves_the_ranges_off_its_shard(backend: shardgate_tests::Backend) {
    let app = spawn(backend, Duration::ZERO).await;
    app.create_tenant("acme").await;
    let (first, second) = two_shards(&app).await;
    let ranges =
        json!({"distribution": "range", "ranges": [{"from": "", "shard": first}, {"from": "m", "shard": second}]});
    expect_json(distribute(&app, &ranges).await, StatusCode::OK).await;
    let keys: Vec<String> = (0..20).flat_map(|i| [format!("a{i:02}"), format!("n{i:02}")]).collect();
    app.put_many("acme", "c", &keys).await;
    let delete = app.admin(Method::DELETE, &format!("/v1/admin/shards/{second}"), None).await;
    expect_problem(delete, StatusCode::CONFLICT, "shard_in_use").await;

    let drain = app.admin(Method::POST, &format!("/v1/admin/shards/{second}/drain"), Some(&json!({}))).await;
    let drain = expect_json(drain, StatusCode::ACCEPTED).await;
    let planned = drain["plan"]["ranges"].as_array().unwrap().clone();
    assert_eq!(planned.len(), 1, "{drain}");
    let (range, to) = (&planned[0], planned[0]["to"].as_str().unwrap().to_owned());
    assert_eq!((range["tenant"].as_str(), range["collection"].as_str()), (Some("acme"), Some("c")), "{range}");
    assert_eq!((range["from_key"].as_str(), range["from"].as_str()), (Some("m"), Some(second.as_str())), "{range}");
    assert_ne!(to, second);
    let done = ended(&app, drain["job"]["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    assert_eq!(done["state"], "done", "{done}");

    let got = app.admin(Method::GET, "/v1/admin/tenants/acme/collections/c", None).await;
    let expected = json!([{"from": "", "shard": first}, {"from": "m", "shard": to}]);
    assert_eq!(expect_json(got, StatusCode::OK).await["ranges"], expected);
    let page = expect_json(app.list_records("acme", "c", "limit=100").await, StatusCode::OK).await;
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys_of(&page), sorted);
    assert_eq!(rows_on(&app, &second, "1 = 1").await, 0, "the drained shard keeps records of the range");
    let deleted = app.admin(Method::DELETE, &format!("/v1/admin/shards/{second}"), None).await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
}
