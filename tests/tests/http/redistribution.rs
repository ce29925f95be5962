//! Changing the distribution of a collection that holds records
//! (`PUT /v1/admin/tenants/{id}/collections/{collection}` between `tenant` and `hash` or
//! `range`): the records move to the new layout in a `collection.redistribute` job while
//! clients write and read through two instances, with no lost write and no stale read
//! (per-key linearizability), both layouts compared, and the old rows removed; changes that
//! cannot be made are refused, and a cancelled one rolls back.

use std::sync::atomic::Ordering;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shardgate_tests::linearizability::PutRequest;
use shardgate_tests::records::keys_of;
use shardgate_tests::{History, TestApp, eventually, expect_json, expect_problem};

use crate::moves::{KEYS, Load, assert_linearizable, ended, spawn};

shardgate_tests::on_both_engines!(
    a_collection_changes_distribution_under_load_without_a_lost_write_or_a_stale_read,
    redistributions_that_cannot_be_made_are_refused_and_a_cancelled_one_rolls_back,
);

/// Clients of the tenant whose collection changes (half on each instance).
const CLIENTS: usize = 8;

async fn distribute(app: &TestApp, body: &Value) -> reqwest::Response {
    app.admin(Method::PUT, "/v1/admin/tenants/acme/collections/c", Some(body)).await
}

/// Rows of `acme`'s collection `c` in `table` on every shard.
async fn rows_in(app: &TestApp, table: &str) -> i64 {
    let mut rows = 0;
    for (_, url) in app.shard_urls() {
        let pool = shardgate_tests::open_shard(&url).await;
        let sql = format!("SELECT COUNT(*) FROM {table} WHERE tenant = 'acme' AND collection = 'c'");
        rows += sqlx::query_scalar::<_, i64>(&sql).fetch_one(&pool).await.unwrap();
        pool.close().await;
    }
    rows
}

/// Writes the keys `k0`…`k99` of `acme`'s `c` the load clients use; the history that begins
/// with those writes.
pub(crate) async fn seeded(app: &TestApp) -> History {
    for i in 0..KEYS {
        let put = app.put_record("acme", "c", &format!("k{i}"), &json!({"v": "initial"})).await;
        assert!(put.status().is_success());
    }
    let history = History::new();
    for i in 0..KEYS {
        history.invoke(format!("acme/k{i}"), PutRequest { value: "initial".to_owned() }).ok();
    }
    history
}

/// Starts a redistribution to `body` and waits (bounded) for its job to end; returns the job.
async fn redistributed(app: &TestApp, body: &Value) -> Value {
    let job = expect_json(distribute(app, body).await, StatusCode::ACCEPTED).await;
    assert_eq!(job["kind"], "collection.redistribute", "{job}");
    ended(app, job["id"].as_str().unwrap(), Duration::from_secs(90)).await
}

/// Both instances (the second at `peer`) list the same records of `acme`'s `c`, from every
/// shard, each key once and in key order; returns the keys.
pub(crate) async fn listed_alike(app: &TestApp, peer: &str, token: &str) -> Vec<String> {
    let listings = [app.list_records("acme", "c", "limit=1000").await, {
        let url = format!("{peer}/v1/tenants/acme/collections/c/records?limit=1000");
        app.client.get(url).bearer_auth(token).send().await.unwrap()
    }];
    let mut listed = Vec::new();
    for listing in listings {
        let page = expect_json(listing, StatusCode::OK).await;
        if let Some(shards) = page.get("_shards") {
            assert_eq!(shards["failed"], 0, "{page}");
        }
        listed.push(keys_of(&page));
    }
    assert_eq!(listed[0], listed[1], "both instances list the same");
    let mut sorted = listed[0].clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(listed[0], sorted, "in order, each key once");
    listed.swap_remove(0)
}

async fn a_collection_changes_distribution_under_load_without_a_lost_write_or_a_stale_read(
    backend: shardgate_tests::Backend,
) {
    let app = spawn(backend, Duration::ZERO).await;
    let peer = app.spawn_peer(|_| {}).await;
    // Premium: the clients run as fast as the shards answer, beyond a standard tenant's rate.
    app.create_tenant_with(&json!({"id": "acme", "tier": "premium"})).await;
    let token = app.rw_token("acme");
    let history = seeded(&app).await;
    let map = app.shard_map().await;
    let shards: Vec<String> =
        map["shards"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap().to_owned()).collect();
    let load = Load::start([&app.base_url, &peer.base_url], ("acme", &token), CLIENTS, &history);
    let (errors, refused) = (load.errors.clone(), load.refused.clone());

    // `tenant` -> `hash` -> `tenant` -> `range`, each while the clients write and read.
    let ranges = json!([{"from": "", "shard": shards[0]}, {"from": "k5", "shard": shards[1]}]);
    let steps = [
        (json!({"distribution": "hash"}), "spread_records", "records"),
        (json!({"distribution": "tenant"}), "records", "spread_records"),
        (json!({"distribution": "range", "ranges": ranges}), "spread_records", "records"),
    ];
    let mut cutovers = Vec::new();
    for (body, new_table, old_table) in &steps {
        tokio::time::sleep(Duration::from_millis(700)).await;
        let done = redistributed(&app, body).await;
        assert_eq!(done["state"], "done", "{done}");
        let progress = &done["progress"];
        assert_eq!(progress["to"]["distribution"], body["distribution"], "{progress}");
        assert_eq!(progress["checksums"]["matched"], true, "{progress}");
        assert_eq!(progress["settled"]["matched"], true, "compared before the fence: {progress}");
        let pace = &progress["pace"];
        assert_eq!(pace["adaptive"], true, "its passes keep an adaptive pace: {progress}");
        assert!(pace["changes"].as_array().is_some_and(|changes| !changes.is_empty()), "{progress}");
        // Under the fence only the last delta, compared as it was copied.
        let compared = progress["checksums"]["tables"][0][0].as_str().unwrap_or_default();
        assert!(compared.ends_with("(last delta)"), "{progress}");
        let (source, target) = (&progress["checksums"]["tables"][0][1], &progress["checksums"]["tables"][0][2]);
        assert_eq!(source, target, "{progress}");

        cutovers.push(progress["cutover_ms"].as_i64().expect("a cut-over time"));
        // The new distribution is in effect; the old rows are gone after the grace period.
        let got =
            expect_json(app.admin(Method::GET, "/v1/admin/tenants/acme/collections/c", None).await, StatusCode::OK);
        assert_eq!(got.await["distribution"], body["distribution"]);
        assert!(rows_in(&app, new_table).await >= KEYS as i64, "the rows live in {new_table}");
        assert_eq!(rows_in(&app, old_table).await, 0, "the old rows are removed from {old_table}");
    }
    let enough = eventually(Duration::from_secs(90), async || (history.len() >= 3_000 + KEYS).then_some(())).await;
    assert!(enough.is_some(), "only {} operations in 90 s", history.len());
    load.finish().await;

    assert_eq!(errors.load(Ordering::Relaxed), 0, "unexpected answers (see the log)");
    for (key, shard, strategy) in
        [("k1", &shards[0], "range"), ("k42", &shards[0], "range"), ("k77", &shards[1], "range")]
    {
        let route = app.route("acme", "c", key).await;
        assert_eq!((route["shard"].as_str(), route["strategy"].as_str()), (Some(shard.as_str()), Some(strategy)));
    }
    assert_linearizable(&history, KEYS);
    eprintln!(
        "{} operations, {} refused while moving, cut-overs {cutovers:?} ms",
        history.len(),
        refused.load(Ordering::Relaxed)
    );
    let listed = listed_alike(&app, &peer.base_url, &token).await;
    assert!(!listed.is_empty());
    peer.stop().await;
}

async fn redistributions_that_cannot_be_made_are_refused_and_a_cancelled_one_rolls_back(
    backend: shardgate_tests::Backend,
) {
    let app = spawn(backend, Duration::from_millis(1500)).await;
    app.create_tenant("acme").await;
    let keys: Vec<String> = (0..30).map(|i| format!("k{i:02}")).collect();
    app.put_many("acme", "c", &keys).await;
    assert_eq!(app.delete_record("acme", "c", "k07").await.status(), StatusCode::NO_CONTENT);

    // Ranges must name known, active shards, as for an empty collection.
    let unknown = json!({"distribution": "range", "ranges": [{"from": "", "shard": "shard-9"}]});
    expect_problem(distribute(&app, &unknown).await, StatusCode::UNPROCESSABLE_ENTITY, "unknown_shard").await;

    // The job pauses at each phase boundary: other changes of the collection and of the tenant
    // are refused while it runs; a cancellation rolls it back.
    let job = expect_json(distribute(&app, &json!({"distribution": "hash"})).await, StatusCode::ACCEPTED).await;
    let id = job["id"].as_str().unwrap().to_owned();
    expect_problem(distribute(&app, &json!({"distribution": "tenant"})).await, StatusCode::CONFLICT, "job_conflict")
        .await;
    let map = app.shard_map().await;
    let other = map["shards"][1]["id"].as_str().unwrap().to_owned();
    let moved = app.admin(Method::POST, "/v1/admin/tenants/acme/move", Some(&json!({"to": other}))).await;
    expect_problem(moved, StatusCode::CONFLICT, "job_conflict").await;
    let cancel = app.admin(Method::POST, &format!("/v1/admin/jobs/{id}/cancel"), None).await;
    assert_eq!(cancel.status(), StatusCode::ACCEPTED);
    let done = ended(&app, &id, Duration::from_secs(30)).await;
    assert_eq!(done["state"], "cancelled", "{done}");
    assert_eq!(done["progress"]["phase"], "rolled_back");
    let got = app.admin(Method::GET, "/v1/admin/tenants/acme/collections/c", None).await;
    assert_eq!(expect_json(got, StatusCode::OK).await, json!({"distribution": "tenant"}));
    assert_eq!(rows_in(&app, "spread_records").await, 0, "a rolled-back job leaves nothing in the new layout");
    assert_eq!(app.route("acme", "c", "k01").await["strategy"], "hash", "the tenant's home shard");
    // Reads and writes of the collection work again.
    expect_json(app.put_record("acme", "c", "k01", &json!({"again": true})).await, StatusCode::OK).await;
    let page = expect_json(app.list_records("acme", "c", "limit=100").await, StatusCode::OK).await;
    assert_eq!(keys_of(&page).len(), 29);

    // Then it runs to the end; the tombstone moves too (its version carries on).
    let done = redistributed(&app, &json!({"distribution": "hash"})).await;
    assert_eq!(done["state"], "done", "{done}");
    // Nothing was written while it ran: every row was compared before the fence, none under it.
    let progress = &done["progress"];
    let (settled, fenced) = (&progress["settled"], &progress["checksums"]);
    assert_eq!((settled["matched"].as_bool(), fenced["matched"].as_bool()), (Some(true), Some(true)), "{progress}");
    assert_eq!(settled["tables"][0][1]["rows"], 30, "{progress}");
    assert_eq!(settled["tables"][0][1], settled["tables"][0][2], "{progress}");
    // Its progress said what the first pass would take: every row, the tombstone too, and their
    // bytes; the passes copied that much at least.
    let count = |field: &str| progress[field].as_u64().unwrap_or_else(|| panic!("{field}: {progress}"));
    assert_eq!(count("rows_to_copy"), 30, "{progress}");
    assert!(count("bytes_to_copy") > 30 * "k00".len() as u64, "{progress}");
    assert!(count("rows_copied") >= count("rows_to_copy"), "{progress}");
    assert!(count("bytes_copied") >= count("bytes_to_copy"), "{progress}");
    assert_eq!((fenced["tables"][0][1]["rows"].as_u64(), fenced["tables"][0][2]["rows"].as_u64()), (Some(0), Some(0)));
    assert_eq!(rows_in(&app, "spread_records").await, 30, "every row, the tombstone too");
    assert_eq!(rows_in(&app, "records").await, 0);
    let got = expect_json(app.get_record("acme", "c", "k01").await, StatusCode::OK).await;
    assert_eq!((got["value"].clone(), got["version"].clone()), (json!({"again": true}), json!(2)));
    expect_problem(app.get_record("acme", "c", "k07").await, StatusCode::NOT_FOUND, "record_not_found").await;
    let recreated = app.put_record("acme", "c", "k07", &json!(7)).await;
    let recreated = expect_json(recreated, StatusCode::CREATED).await;
    assert_eq!(recreated["version"], 3, "a deleted key's version goes on from its tombstone");
    assert_eq!(app.route("acme", "c", "k01").await["strategy"], "record_hash");
    // A non-empty hash collection does not become `range` directly.
    let ranges = json!({"distribution": "range", "ranges": [{"from": "", "shard": other}]});
    expect_problem(distribute(&app, &ranges).await, StatusCode::CONFLICT, "distribution_refused").await;
    // Setting what is in effect changes nothing.
    expect_json(distribute(&app, &json!({"distribution": "hash"})).await, StatusCode::OK).await;
}
