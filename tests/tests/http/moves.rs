//! Moving a tenant to another shard while its traffic flows (`POST /v1/admin/tenants/{id}/move`):
//! clients writing and reading through two gateway instances see no lost write and no stale
//! read (their histories are checked for per-key linearizability), other tenants are served
//! throughout, the copy is verified by checksums, the old copy is removed after the grace
//! period, a move can be refused, cancelled and rolled back, and its progress shows the pace its
//! copy kept.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use shardgate_tests::linearizability::{DeleteRequest, GetRequest, Pending, PutRequest, Request};
use shardgate_tests::{History, TestApp, Verdict, eventually, expect_json, expect_problem, record_path};

shardgate_tests::on_both_engines!(
    a_tenant_moves_under_load_without_a_lost_write_or_a_stale_read,
    moves_that_cannot_be_made_are_refused_and_a_cancelled_move_rolls_back,
    a_blob_replaced_just_before_the_cut_over_moves_in_its_new_version,
    a_move_past_its_switch_refuses_a_cancellation_and_finishes,
    a_moves_progress_reports_the_pace_it_chose,
    a_moves_progress_counts_its_rows_from_the_start_and_its_lag_by_what_changed,
    a_moves_copy_reports_progress_within_a_batch_and_can_be_cancelled_there,
);

/// Keys the load test spreads its clients over.
pub(crate) const KEYS: usize = 100;
/// Clients of the moving tenant (half on each instance) and of a bystander tenant.
const CLIENTS: usize = 12;

pub(crate) async fn spawn(backend: shardgate_tests::Backend, pause: Duration) -> TestApp {
    TestApp::spawn_with(backend, |config| {
        // Two instances share the shards; without Redis an in-process cache would be stale
        // across them, which is not what this test is about.
        config.cache.l1.enabled = Some(false);
        config.storage.moves.cleanup_grace = Duration::from_millis(500);
        config.storage.moves.cutover_wait = Duration::from_secs(5);
        config.storage.moves.phase_pause = pause;
        config.storage.moves.lease = Duration::from_secs(2);
    })
    .await
}

/// An instance whose moves pause 1.5 s at every phase boundary, holding tenant `acme` with
/// records `k0`…`k19` in collection `c`; and `acme`'s shard with another one.
async fn slow_mover_with_acme(backend: shardgate_tests::Backend) -> (TestApp, (String, String)) {
    let app = spawn(backend, Duration::from_millis(1500)).await;
    app.create_tenant("acme").await;
    let shards = another_shard(&app, "acme").await;
    app.put_many("acme", "c", &(0..20).map(|i| format!("k{i}")).collect::<Vec<_>>()).await;
    (app, shards)
}

/// A shard other than `tenant`'s home.
async fn another_shard(app: &TestApp, tenant: &str) -> (String, String) {
    let home = app.route(tenant, "c", "k").await["shard"].as_str().unwrap().to_owned();
    let map = app.shard_map().await;
    let other = map["shards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .find(|id| *id != home)
        .expect("a second shard");
    (home, other)
}

async fn start_move(app: &TestApp, tenant: &str, to: &str) -> Value {
    let started =
        app.admin(reqwest::Method::POST, &format!("/v1/admin/tenants/{tenant}/move"), Some(&json!({"to": to}))).await;
    expect_json(started, StatusCode::ACCEPTED).await
}

pub(crate) async fn job(app: &TestApp, id: &str) -> Value {
    let got = app.admin(reqwest::Method::GET, &format!("/v1/admin/jobs/{id}"), None).await;
    expect_json(got, StatusCode::OK).await
}

/// Waits (bounded) for job `id` to leave `running`; returns it.
pub(crate) async fn ended(app: &TestApp, id: &str, within: Duration) -> Value {
    eventually(within, async || {
        let job = job(app, id).await;
        (job["state"] != "running").then_some(job)
    })
    .await
    .unwrap_or_else(|| panic!("job {id} still running after {within:?}"))
}

/// Clients of one tenant, half on each of two instances, recording one history.
pub(crate) struct Load {
    /// Set to stop the clients.
    pub(crate) stop: Arc<AtomicBool>,
    /// Unexpected answers.
    pub(crate) errors: Arc<AtomicU64>,
    /// Requests refused with 503 (not applied).
    pub(crate) refused: Arc<AtomicU64>,
    clients: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    /// Starts `clients` clients of `tenant` (id and token) through the two `bases`.
    pub(crate) fn start(bases: [&str; 2], tenant: (&str, &str), clients: usize, history: &History) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let (errors, refused) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let clients = (0..clients)
            .map(|id| {
                tokio::spawn(client(
                    bases[id % 2].to_owned(),
                    vec![(tenant.0.to_owned(), tenant.1.to_owned())],
                    id,
                    history.clone(),
                    stop.clone(),
                    errors.clone(),
                    refused.clone(),
                ))
            })
            .collect();
        Self { stop, errors, refused, clients }
    }

    /// Stops the clients and waits for them.
    pub(crate) async fn finish(self) {
        self.stop.store(true, Ordering::Relaxed);
        for client in self.clients {
            client.await.unwrap();
        }
    }
}

/// One client: random puts, gets and deletes of the keys `k0`…`k99` of `tenants` (id and
/// token of each) through `base`, recorded in `history` under `tenant/key`, until `stop`.
/// Answers that say the request was not applied (503 `tenant_moving`) are left out of the
/// history, answers whose outcome is unknown (504, transport errors) are recorded as such, and
/// anything else unexpected is counted.
pub(crate) async fn client(
    base: String,
    tenants: Vec<(String, String)>,
    id: usize,
    history: History,
    stop: Arc<AtomicBool>,
    errors: Arc<AtomicU64>,
    refused: Arc<AtomicU64>,
) {
    let http = shardgate_tests::http_client();
    let mut seed = (id as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut seq = 0u64;
    while !stop.load(Ordering::Relaxed) {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let (tenant, token) = &tenants[((seed >> 40) % tenants.len() as u64) as usize];
        let record = format!("k{}", seed % KEYS as u64);
        let url = format!("{base}{}", record_path(tenant, "c", &record));
        let key = format!("{tenant}/{record}");
        match (seed >> 20) % 10 {
            0..=3 => {
                seq += 1;
                let value = format!("c{id}-{seq}");
                let pending = history.invoke(key.clone(), PutRequest { value: value.clone() });
                match http.put(&url).bearer_auth(token).json(&json!({ "v": value })).send().await {
                    Ok(r) if r.status().is_success() => pending.ok(),
                    answer => not_applied("PUT", &key, answer, pending, &errors, &refused),
                }
            }
            4 => {
                let pending = history.invoke(key.clone(), DeleteRequest);
                match http.delete(&url).bearer_auth(token).send().await {
                    Ok(r) if r.status() == StatusCode::NO_CONTENT => pending.ok(true),
                    Ok(r) if r.status() == StatusCode::NOT_FOUND => pending.ok(false),
                    answer => not_applied("DELETE", &key, answer, pending, &errors, &refused),
                }
            }
            _ => {
                let pending = history.invoke(key.clone(), GetRequest);
                match http.get(&url).bearer_auth(token).send().await {
                    Ok(r) if r.status() == StatusCode::OK => {
                        let body: Value = r.json().await.unwrap();
                        pending.ok(Some(body["value"]["v"].as_str().unwrap().to_owned()));
                    }
                    Ok(r) if r.status() == StatusCode::NOT_FOUND => pending.ok(None),
                    Ok(r) => {
                        if r.status() != StatusCode::SERVICE_UNAVAILABLE {
                            errors.fetch_add(1, Ordering::Relaxed);
                            eprintln!("GET {key}: {}", r.status());
                        } else {
                            refused.fetch_add(1, Ordering::Relaxed);
                        }
                        pending.refused();
                    }
                    Err(_) => pending.refused(),
                }
            }
        }
    }
}

/// Writes `initial` to the keys `k0`…`k99` of collection `c` of every one of `tenants` and
/// starts a history with those writes, so that every key is used in the check.
pub(crate) async fn seeded_history(app: &TestApp, tenants: &[impl AsRef<str>]) -> History {
    let history = History::new();
    for tenant in tenants {
        for i in 0..KEYS {
            let put = app.put_record(tenant.as_ref(), "c", &format!("k{i}"), &json!({"v": "initial"})).await;
            assert!(put.status().is_success(), "{}", put.status());
            history.invoke(format!("{}/k{i}", tenant.as_ref()), PutRequest { value: "initial".to_owned() }).ok();
        }
    }
    history
}

/// Checks `history` (for at most 60 s), asserts that it is linearizable and used `keys` keys,
/// and answers how many operations it holds.
pub(crate) fn assert_linearizable(history: &History, keys: usize) -> usize {
    match history.check(Duration::from_secs(60)) {
        Verdict::Linearizable { keys: used, operations } => {
            assert_eq!(used, keys, "every key was used");
            operations
        }
        verdict => panic!("{verdict}"),
    }
}

/// A write's answer other than its success, recorded: 503 (`tenant_moving`) was not applied and
/// is counted as refused; 504 and transport errors leave the outcome unknown; anything else is
/// unknown too, and counted as an error.
fn not_applied<R: Request>(
    method: &str,
    key: &str,
    answer: reqwest::Result<reqwest::Response>,
    pending: Pending<'_, R>,
    errors: &AtomicU64,
    refused: &AtomicU64,
) {
    match answer {
        Ok(r) if r.status() == StatusCode::SERVICE_UNAVAILABLE => {
            refused.fetch_add(1, Ordering::Relaxed);
            pending.refused();
        }
        Ok(r) if r.status() == StatusCode::GATEWAY_TIMEOUT => pending.unknown(),
        Ok(r) => {
            errors.fetch_add(1, Ordering::Relaxed);
            eprintln!("{method} {key}: {}", r.status());
            pending.unknown();
        }
        Err(_) => pending.unknown(),
    }
}

async fn a_tenant_moves_under_load_without_a_lost_write_or_a_stale_read(backend: shardgate_tests::Backend) {
    let app = spawn(backend, Duration::ZERO).await;
    let peer = app.spawn_peer(|_| {}).await;
    app.create_tenant("acme").await;
    app.create_tenant("bystander").await;
    let (from, to) = another_shard(&app, "acme").await;
    let token = app.rw_token("acme");
    // Data before the move: records of both tenants and a blob.
    for i in 0..KEYS {
        let put = app.put_record("acme", "c", &format!("k{i}"), &json!({"v": "initial"})).await;
        assert!(put.status().is_success());
    }
    let blob =
        app.client.put(app.url("/v1/tenants/acme/blobs/photos/cat.bin")).bearer_auth(&token).body(vec![7u8; 300_000]);
    assert_eq!(blob.send().await.unwrap().status(), StatusCode::CREATED);
    let history = History::new();
    // The initial writes completed before any client started: they are part of the history.
    for i in 0..KEYS {
        history.invoke(format!("acme/k{i}"), PutRequest { value: "initial".to_owned() }).ok();
    }

    let load = Load::start([&app.base_url, &peer.base_url], ("acme", &token), CLIENTS, &history);
    let (stop, errors, refused) = (load.stop.clone(), load.errors.clone(), load.refused.clone());
    // A bystander on the same shards, served throughout.
    let bystander = {
        let (base, token, stop) = (app.base_url.clone(), app.rw_token("bystander"), stop.clone());
        tokio::spawn(async move {
            let http = shardgate_tests::http_client();
            let (mut ok, mut failed) = (0u64, 0u64);
            while !stop.load(Ordering::Relaxed) {
                let url = format!("{base}{}", record_path("bystander", "c", &format!("b{}", ok % 10)));
                match http.put(&url).bearer_auth(&token).json(&json!({"n": ok})).send().await {
                    Ok(r) if r.status().is_success() => ok += 1,
                    _ => failed += 1,
                }
            }
            (ok, failed)
        })
    };

    tokio::time::sleep(Duration::from_millis(1500)).await;
    let job = start_move(&app, "acme", &to).await;
    let id = job["id"].as_str().unwrap().to_owned();
    assert_eq!(job["kind"], "tenant.move");
    let done = ended(&app, &id, Duration::from_secs(60)).await;
    // Traffic goes on after the switch (stale maps, the cleanup) until the history is big enough
    // to say something, however slow the machine.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let enough = eventually(Duration::from_secs(90), async || (history.len() >= 10_000 + KEYS).then_some(())).await;
    assert!(enough.is_some(), "only {} operations in 90 s", history.len());
    load.finish().await;
    let (bystander_ok, bystander_failed) = bystander.await.unwrap();

    assert_eq!(done["state"], "done", "{done}");
    let progress = &done["progress"];
    assert_eq!(progress["phase"], "done");
    assert_eq!(progress["from"], from.as_str());
    assert_eq!(progress["to"], to.as_str());
    assert_eq!(progress["checksums"]["matched"], true, "{progress}");
    assert!(progress["rows_copied"].as_u64().unwrap() >= KEYS as u64, "{progress}");
    assert!(progress["cutover_ms"].as_i64().is_some(), "{progress}");
    assert_eq!(progress["pace"]["adaptive"], true, "{progress}");
    assert_eq!(app.route("acme", "c", "k1").await["shard"], to.as_str());
    assert_eq!(errors.load(Ordering::Relaxed), 0, "unexpected answers (see the log)");
    assert_eq!(bystander_failed, 0, "the bystander tenant was refused ({bystander_ok} writes served)");
    assert!(bystander_ok > 0);

    let operations = history.len();
    let checked = assert_linearizable(&history, KEYS);
    assert!(checked >= 10_000, "only {checked} operations: too few to say much");
    eprintln!(
        "{operations} operations over {KEYS} keys, {} refused while moving, cut-over {} ms",
        refused.load(Ordering::Relaxed),
        progress["cutover_ms"]
    );

    // Every record reads the same through both instances, and the blob came along.
    for i in (0..KEYS).step_by(7) {
        let path = record_path("acme", "c", &format!("k{i}"));
        let a = app.client.get(app.url(&path)).bearer_auth(&token).send().await.unwrap();
        let b = app.client.get(format!("{}{path}", peer.base_url)).bearer_auth(&token).send().await.unwrap();
        assert_eq!(a.status(), b.status());
        if a.status() == StatusCode::OK {
            let (a, b): (Value, Value) = (a.json().await.unwrap(), b.json().await.unwrap());
            assert_eq!(a, b);
        }
    }
    let blob =
        app.client.get(app.url("/v1/tenants/acme/blobs/photos/cat.bin")).bearer_auth(&token).send().await.unwrap();
    assert_eq!(blob.status(), StatusCode::OK);
    assert_eq!(blob.bytes().await.unwrap().as_ref(), vec![7u8; 300_000].as_slice());
    // The old copy is gone from the source after the grace period.
    let source = app.shard_urls().into_iter().find(|(id, _)| *id == from).unwrap().1;
    let pool = shardgate_tests::open_shard(&source).await;
    let left: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM records WHERE tenant = 'acme'").fetch_one(&pool).await.unwrap();
    assert_eq!(left, 0, "the source still holds the moved tenant's records");
    let blobs_left: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM blob_chunks WHERE upload_id IN (SELECT upload_id FROM blob_uploads WHERE tenant = 'acme')")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(blobs_left, 0, "the source still holds the moved tenant's blob chunks");
    pool.close().await;
    peer.stop().await;
}

async fn moves_that_cannot_be_made_are_refused_and_a_cancelled_move_rolls_back(backend: shardgate_tests::Backend) {
    let (app, (from, to)) = slow_mover_with_acme(backend).await;
    let post = async |body: Value| app.admin(reqwest::Method::POST, "/v1/admin/tenants/acme/move", Some(&body)).await;
    expect_problem(post(json!({"to": from})).await, StatusCode::CONFLICT, "move_refused").await;
    expect_problem(post(json!({"to": "no-such-shard"})).await, StatusCode::NOT_FOUND, "shard_not_found").await;
    let nobody = app.admin(reqwest::Method::POST, "/v1/admin/tenants/nobody/move", Some(&json!({"to": to}))).await;
    expect_problem(nobody, StatusCode::NOT_FOUND, "tenant_not_found").await;

    // The move pauses at each phase boundary: a second move and a delete of the tenant are
    // refused while it runs, and a cancellation rolls it back.
    let job = start_move(&app, "acme", &to).await;
    let id = job["id"].as_str().unwrap().to_owned();
    let second = expect_problem(post(json!({"to": to})).await, StatusCode::CONFLICT, "job_conflict").await;
    let busy = format!("tenant acme is being moved by job {id}; wait for it to end or cancel it");
    assert_eq!(second["detail"], busy.as_str(), "{second}");
    let delete = app.admin(reqwest::Method::DELETE, "/v1/admin/tenants/acme", None).await;
    expect_problem(delete, StatusCode::CONFLICT, "job_conflict").await;
    let cancel = app.admin(reqwest::Method::POST, &format!("/v1/admin/jobs/{id}/cancel"), None).await;
    assert_eq!(cancel.status(), StatusCode::ACCEPTED);
    let done = ended(&app, &id, Duration::from_secs(30)).await;
    assert_eq!(done["state"], "cancelled", "{done}");
    assert_eq!(done["progress"]["phase"], "rolled_back");
    assert_eq!(app.route("acme", "c", "k1").await["shard"], from.as_str(), "the tenant stays where it was");
    let target = app.shard_urls().into_iter().find(|(id, _)| *id == to).unwrap().1;
    let pool = shardgate_tests::open_shard(&target).await;
    let copied: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM records WHERE tenant = 'acme'").fetch_one(&pool).await.unwrap();
    assert_eq!(copied, 0, "a rolled-back move leaves nothing on the target");
    pool.close().await;
    // Writes work again, and a new move may start.
    assert!(app.put_record("acme", "c", "after", &json!({"ok": true})).await.status().is_success());
    let missing = app.admin(reqwest::Method::POST, "/v1/admin/jobs/nope/cancel", None).await;
    expect_problem(missing, StatusCode::NOT_FOUND, "job_not_found").await;

    // A finished move leaves a fence on the old shard; a new tenant of the same id placed there
    // later is not bound by it.
    let job = start_move(&app, "acme", &to).await;
    let done = ended(&app, job["id"].as_str().unwrap(), Duration::from_secs(60)).await;
    assert_eq!(done["state"], "done", "{done}");
    let deleted = app.admin(reqwest::Method::DELETE, "/v1/admin/tenants/acme", None).await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    app.create_tenant_with(&json!({"id": "acme", "shard": from})).await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let token = app.rw_token("acme");
    let put = app.client.put(app.url(&record_path("acme", "c", "again"))).bearer_auth(&token).json(&json!({"n": 1}));
    assert_eq!(put.send().await.unwrap().status(), StatusCode::CREATED, "the re-created tenant writes on {from}");
}

async fn a_moves_progress_reports_the_pace_it_chose(backend: shardgate_tests::Backend) {
    let app = spawn(backend, Duration::ZERO).await;
    app.create_tenant("acme").await;
    let (home, other) = another_shard(&app, "acme").await;
    app.put_many("acme", "c", &(0..20).map(|i| format!("k{i}")).collect::<Vec<_>>()).await;
    let defaults = shardgate_shard_router::MoveConfig::default();
    let (floor, ceiling) = (defaults.pace_floor_bytes_per_second, defaults.copy_bytes_per_second);

    let job = start_move(&app, "acme", &other).await;
    let done = ended(&app, job["id"].as_str().unwrap(), Duration::from_secs(30)).await;
    assert_eq!(done["state"], "done", "{done}");
    let pace = &done["progress"]["pace"];
    assert_eq!(pace["adaptive"], true, "adaptive by default: {pace}");
    assert_eq!(pace["ceiling_bytes_per_second"], ceiling, "{pace}");
    let now = pace["bytes_per_second"].as_u64().unwrap();
    assert!((floor..=ceiling).contains(&now), "between the floor and the ceiling: {pace}");
    let changes = pace["changes"].as_array().unwrap();
    assert!(!changes.is_empty(), "the pace it started at is the first change: {pace}");
    assert!(changes.iter().all(|c| (floor..=ceiling).contains(&c[1].as_u64().unwrap())), "{pace}");
    assert!(changes.windows(2).all(|w| w[0][0].as_i64() <= w[1][0].as_i64()), "in time order: {pace}");
    assert_eq!(changes.last().unwrap()[1], now, "the last change is the pace now: {pace}");

    // An instance configured with a fixed pace moves the tenant back at the ceiling throughout.
    let fixed = app.spawn_peer(|config| config.storage.moves.adaptive_pace = false).await;
    let back = app
        .client
        .post(format!("{}/v1/admin/tenants/acme/move", fixed.base_url))
        .bearer_auth(app.admin_token())
        .json(&json!({"to": home}))
        .send()
        .await
        .unwrap();
    let back = expect_json(back, StatusCode::ACCEPTED).await;
    let done = ended(&app, back["id"].as_str().unwrap(), Duration::from_secs(30)).await;
    assert_eq!(done["state"], "done", "{done}");
    let pace = &done["progress"]["pace"];
    assert_eq!(pace["adaptive"], false, "{pace}");
    assert_eq!(pace["bytes_per_second"], ceiling, "{pace}");
    assert_eq!(pace["changes"].as_array().unwrap().len(), 1, "a fixed pace never changes: {pace}");
    fixed.stop().await;
}

async fn a_move_past_its_switch_refuses_a_cancellation_and_finishes(backend: shardgate_tests::Backend) {
    let (app, (_, to)) = slow_mover_with_acme(backend).await;
    let started = start_move(&app, "acme", &to).await;
    let id = started["id"].as_str().unwrap().to_owned();

    // The move pauses at each phase boundary: once it has switched the pin (phase `cleanup`),
    // an operator's cancellation is refused, saying why.
    let switched = eventually(Duration::from_secs(60), async || {
        let job = job(&app, &id).await;
        assert_eq!(job["state"], "running", "{job}");
        (job["progress"]["phase"] == "cleanup").then_some(())
    })
    .await;
    assert!(switched.is_some(), "the move reaches its cleanup phase");
    let cancel = app.admin(reqwest::Method::POST, &format!("/v1/admin/jobs/{id}/cancel"), None).await;
    let problem = expect_problem(cancel, StatusCode::CONFLICT, "job_past_cancel").await;
    let detail = problem["detail"].as_str().unwrap();
    assert!(detail.contains(&id) && detail.contains("past its switch") && detail.contains("will finish"), "{problem}");

    // The job finishes as it said, on the new shard.
    let done = ended(&app, &id, Duration::from_secs(60)).await;
    assert_eq!(done["state"], "done", "{done}");
    assert_eq!(done["progress"]["phase"], "done");
    assert_eq!(app.route("acme", "c", "k1").await["shard"], to.as_str());
    expect_json(app.get_record("acme", "c", "k1").await, StatusCode::OK).await;
    // Asking again once it ended is a no-op, as for any ended job.
    let again = app.admin(reqwest::Method::POST, &format!("/v1/admin/jobs/{id}/cancel"), None).await;
    assert_eq!(again.status(), StatusCode::ACCEPTED);
}

/// A long read on the source shard (another move's paced copy out, a report) that began before
/// the fence does not hold the cut-over: only statements that may write the tenant are waited
/// for. The move ends `done` while the read is still running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_over_does_not_wait_for_a_long_read_on_the_source() {
    let app = spawn(shardgate_tests::Backend::Postgres, Duration::ZERO).await;
    app.create_tenant("acme").await;
    for i in 0..20 {
        expect_json(app.put_record("acme", "c", &format!("k{i}"), &json!({"i": i})).await, StatusCode::CREATED).await;
    }
    let (home, other) = another_shard(&app, "acme").await;
    let (_, source_url) = app.shard_urls().into_iter().find(|(id, _)| *id == home).unwrap();
    let source = shardgate_tests::open_shard(&source_url).await;
    let reader = {
        // Its own pool: the read holds its connection.
        let reading = shardgate_tests::open_shard(&source_url).await;
        tokio::spawn(async move { sqlx::query("SELECT pg_sleep(60)").execute(&reading).await })
    };
    let sleeping = "SELECT COUNT(*) FROM pg_stat_activity WHERE state = 'active' AND query = 'SELECT pg_sleep(60)'";
    let started = eventually(Duration::from_secs(10), async || {
        let (n,): (i64,) = sqlx::query_as(sleeping).fetch_one(&source).await.unwrap();
        (n == 1).then_some(())
    })
    .await;
    assert!(started.is_some(), "the long read runs on {home}");

    let moving = start_move(&app, "acme", &other).await;
    let done = ended(&app, moving["id"].as_str().unwrap(), Duration::from_secs(30)).await;
    assert_eq!(done["state"], "done", "{done}");
    let (still,): (i64,) = sqlx::query_as(sleeping).fetch_one(&source).await.unwrap();
    assert_eq!(still, 1, "the move ended while the read that began before its fence still ran");
    assert_eq!(app.route("acme", "c", "k0").await["shard"], other.as_str());
    for i in 0..20 {
        let read = expect_json(app.get_record("acme", "c", &format!("k{i}")).await, StatusCode::OK).await;
        assert_eq!(read["value"], json!({"i": i}));
    }
    sqlx::query("SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(60)'")
        .execute(&source)
        .await
        .unwrap();
    assert!(reader.await.unwrap().is_err(), "the read was cancelled");
    source.close().await;
}

/// A blob replaced just before the cut-over (after the settled comparison, before the fence):
/// the pass before the fence takes the new upload and the blob row, and the old upload, still
/// live on the target, is retired there before that pass is compared, so the comparison
/// matches and the cut-over copies and compares only its last delta (records compared as they
/// are copied, `rows:` digests) instead of comparing everything. The new version is what the
/// target serves.
async fn a_blob_replaced_just_before_the_cut_over_moves_in_its_new_version(backend: shardgate_tests::Backend) {
    let (app, (_, to)) = slow_mover_with_acme(backend).await;
    let token = app.rw_token("acme");
    let blob = app.url("/v1/tenants/acme/blobs/photos/cat.bin");
    let put = |bytes: Vec<u8>| app.client.put(&blob).bearer_auth(&token).body(bytes).send();
    assert_eq!(put(vec![1u8; 70_000]).await.unwrap().status(), StatusCode::CREATED);

    let moving = start_move(&app, "acme", &to).await;
    let id = moving["id"].as_str().unwrap().to_owned();
    // The move pauses before each phase: the pause before the cut-over is the moment.
    let before_the_fence = eventually(Duration::from_secs(30), async || {
        let progress = job(&app, &id).await["progress"].clone();
        (progress["phase"] == "cut_over" && progress["fenced_at_ms"].is_null()).then_some(())
    })
    .await;
    assert!(before_the_fence.is_some(), "the move never paused before its cut-over");
    assert_eq!(put(vec![2u8; 90_000]).await.unwrap().status(), StatusCode::OK);

    let done = ended(&app, &id, Duration::from_secs(60)).await;
    assert_eq!(done["state"], "done", "{done}");
    let progress = &done["progress"];
    assert_eq!(progress["settled"]["matched"], true, "{progress}");
    let checksums = progress["checksums"]["tables"].as_array().unwrap();
    let records = checksums.iter().find(|table| table[0] == "records").expect("records compared");
    assert!(
        records[1]["digest"].as_str().unwrap().starts_with("rows:"),
        "the cut-over compared everything instead of its last delta: {progress}"
    );
    assert_eq!(app.route("acme", "c", "k0").await["shard"], to.as_str());
    let read = app.client.get(&blob).bearer_auth(&token).send().await.unwrap();
    assert_eq!(read.status(), StatusCode::OK);
    assert_eq!(read.bytes().await.unwrap().as_ref(), vec![2u8; 90_000].as_slice());
}

/// A move's progress says from its first answer how many rows and bytes its copy takes (the
/// first line of a client following it is never "0 of 0"); `lag_rows` counts the rows changed
/// since the copy's snapshot, not the rows the copy took (nothing is written during this move:
/// the catch-up starts 0 rows behind); once the placement has switched, the job (still running,
/// removing the old copy) says so: phase `cleanup`, with `switched_at_ms` and the `epoch`.
async fn a_moves_progress_counts_its_rows_from_the_start_and_its_lag_by_what_changed(
    backend: shardgate_tests::Backend,
) {
    let app = TestApp::spawn_with(backend, |config| {
        config.cache.l1.enabled = Some(false);
        // The move pauses at each phase boundary, long enough to be seen there.
        config.storage.moves.phase_pause = Duration::from_secs(2);
        config.storage.moves.cleanup_grace = Duration::from_secs(60);
        config.storage.moves.lease = Duration::from_secs(2);
    })
    .await;
    app.create_tenant("acme").await;
    let (_, to) = another_shard(&app, "acme").await;
    app.put_many("acme", "c", &(0..40).map(|i| format!("k{i}")).collect::<Vec<_>>()).await;

    let started = start_move(&app, "acme", &to).await;
    let id = started["id"].as_str().unwrap().to_owned();
    let progress = &started["progress"];
    assert_eq!(progress["phase"], "copy", "{started:#}");
    assert_eq!(progress["rows_to_copy"], 40, "the rows to copy are known from the first answer: {started:#}");
    assert!(progress["bytes_to_copy"].as_u64().is_some_and(|b| b > 0), "{started:#}");

    let catching_up = eventually(Duration::from_secs(60), async || {
        let job = job(&app, &id).await;
        assert_eq!(job["state"], "running", "{job:#}");
        (job["progress"]["phase"] == "catch_up").then_some(job)
    })
    .await
    .expect("the move pauses before its catch-up");
    let progress = &catching_up["progress"];
    assert_eq!(progress["rows_copied"], 40, "{catching_up:#}");
    assert_eq!(
        progress["lag_rows"], 0,
        "nothing changed since the copy began, so the target is not behind: {catching_up:#}"
    );

    // The switch's transaction records the phase and `switched_at_ms`; the epoch it made is
    // stored with the job's next progress write, a moment later.
    let switched = eventually(Duration::from_secs(60), async || {
        let job = job(&app, &id).await;
        (job["progress"]["phase"] == "cleanup" && job["progress"]["epoch"].is_u64()).then_some(job)
    })
    .await
    .expect("the move switches");
    assert_eq!(switched["state"], "running", "the old copy is still to be removed: {switched:#}");
    assert!(switched["progress"]["switched_at_ms"].is_i64(), "{switched:#}");
    assert_eq!(app.route("acme", "c", "k1").await["shard"], to.as_str());
}

/// A move's first copy reports its progress as it goes, not only when a batch of
/// `moves.copy_batch_bytes` ends: at a pace of 500 bytes per second the batch of the tenant's
/// 600 records (about 40 kB) takes over a minute, yet the job shows the rows and bytes copied
/// so far, fewer than the whole, within seconds; a cancellation is seen there too, and the move
/// rolls back.
async fn a_moves_copy_reports_progress_within_a_batch_and_can_be_cancelled_there(backend: shardgate_tests::Backend) {
    let app = TestApp::spawn_with(backend, |config| {
        config.cache.l1.enabled = Some(false);
        config.storage.moves.adaptive_pace = false;
        config.storage.moves.copy_bytes_per_second = 500;
        config.storage.moves.lease = Duration::from_secs(2);
    })
    .await;
    app.create_tenant("acme").await;
    let (_, to) = another_shard(&app, "acme").await;
    app.put_many("acme", "c", &(0..600).map(|i| format!("k{i:04}")).collect::<Vec<_>>()).await;

    let started = start_move(&app, "acme", &to).await;
    let id = started["id"].as_str().unwrap().to_owned();
    let moving = eventually(Duration::from_secs(30), async || {
        let job = job(&app, &id).await;
        assert_eq!(job["state"], "running", "{job:#}");
        job["progress"]["rows_copied"].as_u64().is_some_and(|rows| rows > 0).then_some(job)
    })
    .await
    .expect("the job shows no progress within the first batch of its copy");
    let progress = &moving["progress"];
    assert_eq!(progress["phase"], "copy", "{moving:#}");
    assert!(progress["first_copy"]["after"].is_null(), "still in the first batch: {moving:#}");
    let (copied, total) = (progress["bytes_copied"].as_u64().unwrap(), progress["bytes_to_copy"].as_u64().unwrap());
    assert!(copied < total, "part of the batch: {moving:#}");
    assert!(progress["rows_copied"].as_u64().unwrap() < 600, "{moving:#}");

    let cancel = app.admin(reqwest::Method::POST, &format!("/v1/admin/jobs/{id}/cancel"), None).await;
    assert_eq!(cancel.status(), StatusCode::ACCEPTED);
    let cancelled = ended(&app, &id, Duration::from_secs(30)).await;
    assert_eq!(cancelled["state"], "cancelled", "{cancelled:#}");
    assert_eq!(app.route("acme", "c", "k0001").await["shard"], started["progress"]["from"]);
}
