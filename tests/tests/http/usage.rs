//! A tenant's usage (`GET /v1/admin/tenants/{id}/usage`, `GET /v1/tenants/{tenant}/usage`): kept
//! by the shards in the same transaction as every write, it equals a count of the live rows read
//! straight from the shard databases, after concurrent mixed writes (records of a home, an
//! indexed and a hash-distributed collection, overwrites bigger and smaller, deletes,
//! re-creations, blob uploads, replacements and deletes), and through a tenant's move: counted on
//! its new shard only, also while the old copy waits for its clean-up; and after 10,000 mixed
//! requests, a tenant move and a rebalance onto a new shard. Another tenant's token is refused as
//! for any of its data.

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shardgate_gatekeeper::Scope;
use shardgate_tests::{TestApp, eventually, expect_json, expect_problem, record_path};

shardgate_tests::conformance!(a_tenant_reads_its_own_usage_and_no_other_tenants);

shardgate_tests::on_both_engines!(
    usage_equals_the_live_rows_after_concurrent_mixed_writes,
    usage_moves_with_its_tenant_and_never_counts_the_old_copy,
    usage_counts_a_moving_range_and_a_redistributed_collection_once,
    usage_equals_the_rows_after_ten_thousand_mixed_writes_a_move_and_a_rebalance,
    the_background_audit_finds_usage_that_disagrees_with_the_rows_and_repairs_it,
);

/// Live records and their bytes, live blobs and their bytes, live index entries.
type Counts = [u64; 5];

fn counts(usage: &Value) -> Counts {
    ["records", "record_bytes", "blobs", "blob_bytes", "index_entries"]
        .map(|field| usage[field].as_u64().unwrap_or_else(|| panic!("{field} in {usage}")))
}

/// The five counts of `tenant`'s live rows in a shard database, as columns of a `SELECT`.
fn counts_sql(tenant: &str) -> String {
    // `octet_length` on both engines: PostgreSQL's, and SQLite's since 3.43.
    format!(
        "CAST((SELECT COUNT(*) FROM records WHERE tenant = '{tenant}' AND deleted = 0) \
           + (SELECT COUNT(*) FROM spread_records WHERE tenant = '{tenant}' AND deleted = 0) AS BIGINT), \
         CAST((SELECT COALESCE(SUM(octet_length(value)), 0) FROM records WHERE tenant = '{tenant}' AND deleted = 0) \
           + (SELECT COALESCE(SUM(octet_length(value)), 0) FROM spread_records \
              WHERE tenant = '{tenant}' AND deleted = 0) AS BIGINT), \
         CAST((SELECT COUNT(*) FROM blobs WHERE tenant = '{tenant}' AND deleted = 0) AS BIGINT), \
         CAST((SELECT COALESCE(SUM(size), 0) FROM blobs WHERE tenant = '{tenant}' AND deleted = 0) AS BIGINT), \
         CAST((SELECT COUNT(*) FROM index_entries WHERE tenant = '{tenant}' AND state = 'live') AS BIGINT)"
    )
}

/// What `tenant`'s live rows on each shard add up to, read from the shard databases themselves
/// (shards holding nothing of it are left out).
async fn rows_by_shard(app: &TestApp, tenant: &str) -> BTreeMap<String, Counts> {
    let sql = format!("SELECT (SELECT shard_id FROM shard_identity WHERE id = 1), {}", counts_sql(tenant));
    let rows: Vec<(String, i64, i64, i64, i64, i64)> = app.rows_on_every_shard(&sql).await;
    rows.into_iter()
        .map(|(shard, a, b, c, d, e)| (shard, [a, b, c, d, e].map(|n| u64::try_from(n).unwrap())))
        .filter(|(_, counted)| *counted != [0; 5])
        .collect()
}

fn sum(parts: impl IntoIterator<Item = Counts>) -> Counts {
    parts.into_iter().fold([0; 5], |mut total, part| {
        for (t, p) in total.iter_mut().zip(part) {
            *t += p;
        }
        total
    })
}

/// Batches of more than one operation the shards were sent (writes and conditional writes).
async fn batches_of_more_than_one(app: &TestApp) -> f64 {
    let text = app.client.get(format!("{}/metrics", app.metrics_base())).send().await.unwrap().text().await.unwrap();
    let samples = |family: &str, also: &str| -> f64 {
        text.lines()
            .filter(|line| line.starts_with(family) && line.contains(also) && !line.contains("kind=\"read\""))
            .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    samples("shardgate_shard_batch_size_count", "") - samples("shardgate_shard_batch_size_bucket", "le=\"1.0\"")
}

async fn admin_usage(app: &TestApp, tenant: &str) -> Value {
    expect_json(app.admin(Method::GET, &format!("/v1/admin/tenants/{tenant}/usage"), None).await, StatusCode::OK).await
}

/// [`rows_by_shard`] over the seeded shards and the extra shard at `extra_url`.
async fn rows_with_extra(app: &TestApp, tenant: &str, extra_url: &str) -> BTreeMap<String, Counts> {
    let mut rows = rows_by_shard(app, tenant).await;
    let sql = format!("SELECT {}", counts_sql(tenant));
    let pool = shardgate_tests::backend::open_shard(extra_url).await;
    let (a, b, c, d, e): (i64, i64, i64, i64, i64) = sqlx::query_as(&sql).fetch_one(&pool).await.unwrap();
    pool.close().await;
    let counted = [a, b, c, d, e].map(|n| u64::try_from(n).unwrap());
    if counted != [0; 5] {
        rows.insert("s-new".to_owned(), counted);
    }
    rows
}

/// The admin answer's parts, by shard.
fn parts(usage: &Value) -> BTreeMap<String, Counts> {
    usage["shards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|part| (part["shard"].as_str().unwrap().to_owned(), counts(&part["usage"])))
        .collect()
}

/// Gives acme an index of `people` by `/town` and a hash-distributed `events`; acme's token to
/// read, write and manage.
async fn index_people_and_hash_events(app: &TestApp) -> String {
    let manager = app.token("acme", &[Scope::Read, Scope::Write, Scope::Manage]);
    let index = app.url("/v1/tenants/acme/collections/people/indexes/by-town");
    let defined = app.client.put(index.as_str()).bearer_auth(&manager).json(&json!({"field": "/town"})).send().await;
    assert_eq!(defined.unwrap().status(), StatusCode::CREATED);
    let spread = app
        .admin(Method::PUT, "/v1/admin/tenants/acme/collections/events", Some(&json!({"distribution": "hash"})))
        .await;
    expect_json(spread, StatusCode::OK).await;
    manager
}

/// A JSON value of about `len` bytes.
fn padded(town: &str, len: usize) -> Value {
    json!({"town": town, "pad": "p".repeat(len)})
}

async fn usage_equals_the_live_rows_after_concurrent_mixed_writes(backend: shardgate_tests::Backend) {
    // One batch of a kind in flight per shard: the writes that meet queue and leave together.
    let app = TestApp::spawn_with(backend, |config| config.storage.batching.max_in_flight = 1).await;
    app.create_tenant("acme").await;
    app.create_tenant("bob").await;
    let manager = index_people_and_hash_events(&app).await;
    let empty = admin_usage(&app, "acme").await;
    assert_eq!(counts(&empty["usage"]), [0; 5], "{empty}");
    assert_eq!((empty["shards"].clone(), empty["complete"].clone()), (json!([]), json!(true)), "{empty}");

    // Clients at once (so that the shards batch their writes): puts of growing and shrinking
    // values, deletes and re-creations over a few keys of three collections.
    let writers: Vec<_> = (0..16)
        .map(|w| {
            let (client, token) = (app.client.clone(), manager.clone());
            let base = app.url("");
            tokio::spawn(async move {
                for i in 0..24usize {
                    let collection = ["people", "things", "events"][(w + i) % 3];
                    let key = format!("k{}", (w * 5 + i * 3) % 16);
                    let url = format!("{}{}", base.trim_end_matches('/'), record_path("acme", collection, &key));
                    let request = if i % 5 == 4 {
                        client.delete(&url)
                    } else {
                        let town = ["Oslo", "Rome", "Lima"][(w + i) % 3];
                        client.put(&url).json(&padded(town, (w * 37 + i * 11) % 300))
                    };
                    let answer = request.bearer_auth(&token).send().await.unwrap();
                    let status = answer.status();
                    assert!(status.is_success() || status == StatusCode::NOT_FOUND, "{collection}/{key}: {status}");
                }
            })
        })
        .collect();
    for writer in writers {
        tokio::time::timeout(Duration::from_secs(60), writer).await.unwrap().unwrap();
    }
    // Blobs: uploaded, replaced by bigger and smaller content, deleted.
    let blob = |path: &str| app.url(&format!("/v1/tenants/acme/blobs/{path}"));
    for (path, len) in [("a.bin", 3000), ("b.bin", 500), ("a.bin", 70_000), ("c.bin", 10), ("b.bin", 20)] {
        let stored = app.client.put(blob(path)).bearer_auth(&manager).body(vec![7u8; len]).send().await.unwrap();
        assert!(stored.status().is_success(), "{path}: {}", stored.status());
    }
    let deleted = app.client.delete(blob("c.bin")).bearer_auth(&manager).send().await.unwrap();
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    // Another tenant's data is its own.
    assert!(app.put_record("bob", "people", "x", &json!({"town": "Oslo"})).await.status().is_success());

    // Index entries of the last writes may still be switching from pending to live.
    let settled = eventually(Duration::from_secs(15), async || {
        let (usage, rows) = (admin_usage(&app, "acme").await, rows_by_shard(&app, "acme").await);
        (counts(&usage["usage"]) == sum(rows.values().copied())).then_some((usage, rows))
    })
    .await;
    let batched = batches_of_more_than_one(&app).await;
    assert!(batched > 0.0, "some of the writes met in batches");
    let Some((usage, rows)) = settled else {
        let (usage, rows) = (admin_usage(&app, "acme").await, rows_by_shard(&app, "acme").await);
        panic!("acme's usage {usage:#} is not what its rows add up to: {rows:?}");
    };
    let total = counts(&usage["usage"]);
    assert!(total[0] > 0 && total[4] > 0, "records and index entries are counted: {usage:#}");
    assert_eq!((total[2], total[3]), (2, 70_000 + 20), "a.bin and b.bin as last written: {usage:#}");
    assert_eq!(parts(&usage), rows, "each shard's part is what its rows add up to: {usage:#}");
    assert!(rows.len() > 1, "the hash collection and the index entries reach several shards: {rows:?}");
    assert_eq!((usage["tenant"].clone(), usage["complete"].clone()), (json!("acme"), json!(true)));
    assert_eq!(usage["unreachable_shards"], json!([]));
    let bob = admin_usage(&app, "bob").await;
    assert_eq!(counts(&bob["usage"]), sum(rows_by_shard(&app, "bob").await.into_values()), "{bob}");
    assert_eq!(bob["usage"]["records"], 1);
}

async fn a_tenant_reads_its_own_usage_and_no_other_tenants(app: TestApp) {
    app.create_tenant("acme").await;
    app.create_tenant("bob").await;
    let token = app.rw_token("acme");
    for (key, len) in [("a", 10), ("b", 200), ("c", 30)] {
        assert!(app.put_record("acme", "things", key, &padded("Oslo", len)).await.status().is_success());
    }
    assert!(app.delete_record("acme", "things", "c").await.status().is_success());
    let url = app.url("/v1/tenants/acme/blobs/a.bin");
    let stored = app.client.put(url).bearer_auth(&token).body(vec![7u8; 1234]).send().await.unwrap();
    assert!(stored.status().is_success(), "{}", stored.status());
    let usage = admin_usage(&app, "acme").await;
    assert_eq!(counts(&usage["usage"]), sum(rows_by_shard(&app, "acme").await.into_values()), "{usage:#}");
    assert_eq!((usage["usage"]["records"].clone(), usage["usage"]["blob_bytes"].clone()), (json!(2), json!(1234)));

    // The tenant reads its own usage with a `read` token; no shard is named.
    let own = app.client.get(app.url("/v1/tenants/acme/usage")).bearer_auth(app.token("acme", &[Scope::Read]));
    let own = expect_json(own.send().await.unwrap(), StatusCode::OK).await;
    let quotas = &usage["quotas"];
    assert_eq!(own, json!({"tenant": "acme", "usage": usage["usage"], "complete": true, "quotas": quotas}));
    // Another tenant's token is told the tenant does not exist; an admin token is not a
    // tenant's; an unknown tenant is 404 for the admin too.
    let bobs = app.client.get(app.url("/v1/tenants/acme/usage")).bearer_auth(app.token("bob", &[Scope::Read]));
    expect_problem(bobs.send().await.unwrap(), StatusCode::NOT_FOUND, "tenant_not_found").await;
    let admins = app.client.get(app.url("/v1/tenants/acme/usage")).bearer_auth(app.admin_token());
    expect_problem(admins.send().await.unwrap(), StatusCode::FORBIDDEN, "missing_tenant_claim").await;
    let ghost = app.admin(Method::GET, "/v1/admin/tenants/ghost/usage", None).await;
    expect_problem(ghost, StatusCode::NOT_FOUND, "tenant_not_found").await;
    let unauthenticated = app.client.get(app.url("/v1/tenants/acme/usage")).send().await.unwrap();
    assert_eq!(unauthenticated.status(), StatusCode::UNAUTHORIZED);
}

async fn usage_moves_with_its_tenant_and_never_counts_the_old_copy(backend: shardgate_tests::Backend) {
    let app = TestApp::spawn_with(backend, |config| {
        // Long enough to look at the old copy between the switch and its removal.
        config.storage.moves.cleanup_grace = Duration::from_secs(3);
        config.storage.moves.lease = Duration::from_secs(2);
    })
    .await;
    app.create_tenant("acme").await;
    let token = app.rw_token("acme");
    let keys: Vec<String> = (0..40).map(|i| format!("k{i}")).collect();
    app.put_many("acme", "c", &keys).await;
    for key in ["k1", "k2", "k3"] {
        assert!(app.delete_record("acme", "c", key).await.status().is_success());
    }
    assert!(app.put_record("acme", "c", "k4", &padded("Oslo", 900)).await.status().is_success());
    for (path, len) in [("a.bin", 5000), ("b.bin", 40)] {
        let url = app.url(&format!("/v1/tenants/acme/blobs/{path}"));
        let stored = app.client.put(url).bearer_auth(&token).body(vec![1u8; len]).send().await.unwrap();
        assert!(stored.status().is_success(), "{}", stored.status());
    }
    let before = rows_by_shard(&app, "acme").await;
    let from = app.route("acme", "c", "k").await["shard"].as_str().unwrap().to_owned();
    assert_eq!(before.keys().collect::<Vec<_>>(), [&from], "all of acme is on its home shard: {before:?}");
    let usage = admin_usage(&app, "acme").await;
    assert_eq!(parts(&usage), before, "{usage:#}");
    let to = app.shard_map().await["shards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .find(|id| *id != from)
        .unwrap();

    let started = app.admin(Method::POST, "/v1/admin/tenants/acme/move", Some(&json!({"to": to}))).await;
    let id = expect_json(started, StatusCode::ACCEPTED).await["id"].as_str().unwrap().to_owned();
    let job = async |app: &TestApp| {
        expect_json(app.admin(Method::GET, &format!("/v1/admin/jobs/{id}"), None).await, StatusCode::OK).await
    };
    // Switched, the old copy not yet removed: the usage is the new shard's, once.
    let switched = eventually(Duration::from_secs(60), async || {
        let job = job(&app).await;
        assert_eq!(job["state"], "running", "{job}");
        (job["progress"]["phase"] == "cleanup").then_some(())
    })
    .await;
    assert!(switched.is_some(), "the move switches");
    // The switch and the job's new phase are one catalog commit; the instance's map follows it
    // right after (the mover refreshes it), and the usage is counted where that map places acme.
    let routed = async || (app.route("acme", "c", "k").await["shard"] == to.as_str()).then_some(());
    assert!(eventually(Duration::from_secs(5), routed).await.is_some(), "the instance routes acme to {to}");
    let (usage, rows) = (admin_usage(&app, "acme").await, rows_by_shard(&app, "acme").await);
    assert_eq!(parts(&usage), BTreeMap::from([(to.clone(), before[&from])]), "{usage:#}");
    assert_eq!(rows.get(&to), Some(&before[&from]), "the new copy is whole: {rows:?}");
    if job(&app).await["progress"]["phase"] == "cleanup" {
        assert_eq!(rows.get(&from), Some(&before[&from]), "the old copy waits for its clean-up: {rows:?}");
    }

    // Done: the old copy is gone, and so is its usage; writes go on counting on the new shard.
    let ended = eventually(Duration::from_secs(60), async || {
        let job = job(&app).await;
        (job["state"] != "running").then_some(job)
    })
    .await
    .expect("the move ends");
    assert_eq!(ended["state"], "done", "{ended:#}");
    assert!(app.delete_record("acme", "c", "k5").await.status().is_success());
    assert!(app.put_record("acme", "c", "new", &padded("Rome", 50)).await.status().is_success());
    let (usage, rows) = (admin_usage(&app, "acme").await, rows_by_shard(&app, "acme").await);
    assert_eq!(rows.keys().collect::<Vec<_>>(), [&to], "acme's rows are on its new shard only: {rows:?}");
    assert_eq!(parts(&usage), rows, "{usage:#}");
    assert_eq!(counts(&usage["usage"])[0], before[&from][0], "one record deleted, one created");
}

/// Runs job `started` (its 202 answer) to its end, reading acme's usage over and over meanwhile:
/// it never differs from `before`, though at some moment the rows of both copies were there.
async fn usage_holds_through(app: &TestApp, started: reqwest::Response, before: Counts) -> Value {
    let id = expect_json(started, StatusCode::ACCEPTED).await["id"].as_str().unwrap().to_owned();
    let path = format!("/v1/admin/jobs/{id}");
    let mut both_copies = false;
    let ended = eventually(Duration::from_secs(90), async || {
        let usage = admin_usage(app, "acme").await;
        assert_eq!(counts(&usage["usage"]), before, "the usage holds while job {id} runs: {usage:#}");
        let rows = sum(rows_by_shard(app, "acme").await.into_values());
        both_copies |= rows[0] > before[0];
        let job = expect_json(app.admin(Method::GET, &path, None).await, StatusCode::OK).await;
        (job["state"] != "running").then_some(job)
    })
    .await
    .unwrap_or_else(|| panic!("job {id} still running"));
    assert_eq!(ended["state"], "done", "{ended:#}");
    assert!(both_copies, "job {id} was seen with both copies of the rows in place");
    ended
}

/// A range moving to another shard, and a collection changing its distribution, are counted once
/// while both copies of their rows exist (the copy before its switch, the old copy until its
/// clean-up), and where the map places them once they are done.
async fn usage_counts_a_moving_range_and_a_redistributed_collection_once(backend: shardgate_tests::Backend) {
    // Each phase boundary pauses 1.5 s: time to read the usage with both copies in place.
    let app = crate::moves::spawn(backend, Duration::from_millis(1500)).await;
    app.create_tenant("acme").await;
    let map = app.shard_map().await;
    let shards: Vec<String> =
        map["shards"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap().to_owned()).collect();
    let (from, to) = (&shards[0], &shards[1]);
    let ranges = json!({"distribution": "range", "ranges": [{"from": "", "shard": from}]});
    let distributed = app.admin(Method::PUT, "/v1/admin/tenants/acme/collections/c", Some(&ranges)).await;
    expect_json(distributed, StatusCode::OK).await;
    app.put_many("acme", "c", &(0..30).map(|i| format!("k{i:02}")).collect::<Vec<_>>()).await;
    let before = counts(&admin_usage(&app, "acme").await["usage"]);
    assert_eq!(before[0], 30);

    let split = json!({"at": "k15", "shard": to});
    let started = app.admin(Method::POST, "/v1/admin/tenants/acme/collections/c/split", Some(&split)).await;
    usage_holds_through(&app, started, before).await;
    let (usage, rows) = (admin_usage(&app, "acme").await, rows_by_shard(&app, "acme").await);
    assert_eq!(parts(&usage), rows, "each range counts on its shard: {usage:#}");
    assert_eq!(rows.len(), 2, "{rows:?}");

    // Back to the tenant's home shard, from both ranges.
    let home = json!({"distribution": "tenant"});
    let started = app.admin(Method::PUT, "/v1/admin/tenants/acme/collections/c", Some(&home)).await;
    usage_holds_through(&app, started, before).await;
    let (usage, rows) = (admin_usage(&app, "acme").await, rows_by_shard(&app, "acme").await);
    assert_eq!(parts(&usage), rows, "{usage:#}");
    assert_eq!(counts(&usage["usage"]), before);
}

/// Ends when job `id` has ended within `within`; its last view.
async fn job_ended(app: &TestApp, id: &str, within: Duration) -> Value {
    let path = format!("/v1/admin/jobs/{id}");
    eventually(within, async || {
        let job = expect_json(app.admin(Method::GET, &path, None).await, StatusCode::OK).await;
        (job["state"] != "running").then_some(job)
    })
    .await
    .unwrap_or_else(|| panic!("job {id} still running after {within:?}"))
}

async fn usage_equals_the_rows_after_ten_thousand_mixed_writes_a_move_and_a_rebalance(
    backend: shardgate_tests::Backend,
) {
    const WRITERS: usize = 16;
    const PER_WRITER: usize = 625;
    // Not a test of throttling: 16 clients may well go faster than a tenant's default rate.
    let app = TestApp::spawn_with(backend, |config| config.rate_limits.enabled = false).await;
    app.create_tenant("acme").await;
    let manager = index_people_and_hash_events(&app).await;

    // 10,000 requests from 16 clients at once: record puts growing and shrinking over 200 keys
    // of a home, an indexed and a hash-distributed collection, deletes, and every 25th a blob
    // upload, replacement or delete.
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (client, token, base) = (app.client.clone(), manager.clone(), app.url(""));
            let base = base.trim_end_matches('/').to_owned();
            tokio::spawn(async move {
                for i in 0..PER_WRITER {
                    let n = w * PER_WRITER + i;
                    let request = if n.is_multiple_of(25) {
                        let url = format!("{base}/v1/tenants/acme/blobs/b{}.bin", n % 40);
                        if n.is_multiple_of(75) {
                            client.delete(&url)
                        } else {
                            client.put(&url).body(vec![3u8; (n * 7) % 5000])
                        }
                    } else {
                        let collection = ["people", "things", "events"][n % 3];
                        let url = format!("{base}{}", record_path("acme", collection, &format!("k{}", (n * 13) % 200)));
                        if n % 6 == 5 {
                            client.delete(&url)
                        } else {
                            let town = ["Oslo", "Rome", "Lima", "Pune"][(n / 3) % 4];
                            client.put(&url).json(&padded(town, (n * 31) % 400))
                        }
                    };
                    let response = request.bearer_auth(&token).send().await.unwrap();
                    let status = response.status();
                    if !(status.is_success() || status == StatusCode::NOT_FOUND) {
                        panic!("request {n}: {status} {}", response.text().await.unwrap());
                    }
                }
            })
        })
        .collect();
    for writer in writers {
        tokio::time::timeout(Duration::from_secs(300), writer).await.expect("the writers finish").unwrap();
    }
    let settled = async |extra: Option<&str>| {
        let mut last = None;
        let agreed = eventually(Duration::from_secs(20), async || {
            let usage = admin_usage(&app, "acme").await;
            let rows = match extra {
                Some(url) => rows_with_extra(&app, "acme", url).await,
                None => rows_by_shard(&app, "acme").await,
            };
            let agree = parts(&usage) == rows && counts(&usage["usage"]) == sum(rows.values().copied());
            last = Some((usage, rows.clone()));
            agree.then_some(rows)
        })
        .await;
        agreed.unwrap_or_else(|| panic!("acme's usage is not what its rows add up to: {last:#?}"))
    };
    let written = settled(None).await;
    let total = sum(written.values().copied());
    assert!(total.iter().all(|n| *n > 0), "every part is counted: {total:?}");

    // A move of the tenant: its home data counts on its new shard only.
    let from = app.route("acme", "things", "k1").await["shard"].as_str().unwrap().to_owned();
    let to = app.shard_urls().into_iter().map(|(id, _)| id).find(|id| *id != from).unwrap();
    let moving = app.admin(Method::POST, "/v1/admin/tenants/acme/move", Some(&json!({"to": to}))).await;
    let moving = expect_json(moving, StatusCode::ACCEPTED).await;
    let moved = job_ended(&app, moving["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    assert_eq!(moved["state"], "done", "{moved:#}");
    let after_move = settled(None).await;
    assert_eq!(sum(after_move.values().copied()), total, "nothing gained or lost: {after_move:?}");

    // A rebalance onto a new shard: the vshards it takes carry the hashed records and index
    // entries they place.
    let (url, _) = app.extra_shard_url("s-new").await;
    let registered = app.admin(Method::POST, "/v1/admin/shards", Some(&json!({"id": "s-new", "url": url}))).await;
    expect_json(registered, StatusCode::CREATED).await;
    let started = app.admin(Method::POST, "/v1/admin/vshards/rebalance", Some(&json!({"parallel": 4}))).await;
    let started = expect_json(started, StatusCode::ACCEPTED).await;
    let rebalanced = job_ended(&app, started["job"]["id"].as_str().unwrap(), Duration::from_secs(240)).await;
    assert_eq!(rebalanced["state"], "done", "{rebalanced:#}");
    let after_rebalance = settled(Some(&url)).await;
    assert!(after_rebalance.contains_key("s-new"), "the new shard holds a part: {after_rebalance:?}");
    assert_eq!(sum(after_rebalance.values().copied()), total, "nothing gained or lost: {after_rebalance:?}");
}

/// A counter of `/metrics`, summed over its series (0 when absent).
async fn counter(app: &TestApp, name: &str) -> f64 {
    let text = app.client.get(format!("{}/metrics", app.metrics_base())).send().await.unwrap().text().await.unwrap();
    text.lines()
        .filter(|line| line.starts_with(name) && !line.starts_with('#'))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

async fn the_background_audit_finds_usage_that_disagrees_with_the_rows_and_repairs_it(
    backend: shardgate_tests::Backend,
) {
    let app = TestApp::spawn_with(backend, |config| {
        config.usage.audit.interval = Duration::from_secs(1);
        config.usage.audit.repair = true;
    })
    .await;
    app.create_tenant("acme").await;
    for key in ["a", "b", "c"] {
        assert!(app.put_record("acme", "things", key, &padded("Oslo", 20)).await.status().is_success());
    }
    let runs = eventually(Duration::from_secs(20), async || {
        (counter(&app, "shardgate_usage_audit_runs_total").await >= 1.0).then_some(())
    })
    .await;
    assert!(runs.is_some(), "an audit runs every second");
    assert_eq!(counter(&app, "shardgate_usage_audit_disagreements_total").await, 0.0, "kept usage agrees");

    // Kept usage edited by hand (as a restore of `tenant_usage` from another moment would).
    let edited: Vec<(String,)> = app
        .rows_on_every_shard("UPDATE tenant_usage SET records = records + 5 WHERE tenant = 'acme' RETURNING tenant")
        .await;
    assert!(!edited.is_empty());
    assert_ne!(admin_usage(&app, "acme").await["usage"]["records"], 3);
    let repaired = eventually(Duration::from_secs(20), async || {
        let usage = admin_usage(&app, "acme").await;
        (usage["usage"]["records"] == 3).then_some(())
    })
    .await;
    assert!(repaired.is_some(), "the audit rewrites the kept usage: {}", admin_usage(&app, "acme").await);
    assert!(counter(&app, "shardgate_usage_audit_disagreements_total").await >= 1.0);
    assert!(counter(&app, "shardgate_usage_audit_repairs_total").await >= 1.0);
    assert_eq!(counts(&admin_usage(&app, "acme").await["usage"]), sum(rows_by_shard(&app, "acme").await.into_values()));
}
