//! A tenant move survives `kill -9` of the instance running it in every phase: before the copy,
//! mid-copy, during catch-up, between the fence and the pin switch, and during cleanup. A new
//! process on the same PostgreSQL catalog and shards takes the job over once its lease runs out
//! and finishes it; every acknowledged write is then read back, and the tenant's rows live on
//! exactly one shard. A drain (vshard moves and a tenant move, run by a rebalance job) killed
//! while its moves run is finished the same way, and so is a `range.move` (a split of a
//! range-distributed collection whose keys change shard) killed in each phase, and so is a
//! `collection.redistribute` (a non-empty collection changing its distribution).

use std::time::Duration;

use serde_json::{Value, json};
use shared_catalog::{Databases, token};
use sqlx::Connection;
use support::Process;

mod shared_catalog;
#[expect(dead_code, reason = "these tests use part of the process harness")]
mod support;

/// Where to kill the instance running the move.
#[derive(Debug, Clone, Copy)]
enum KillAt {
    BeforeCopy,
    MidCopy,
    CatchUp,
    AfterFence,
    Cleanup,
}

impl KillAt {
    /// Whether the job, as `GET /v1/admin/jobs/{id}` shows it, is where this kill belongs.
    fn reached(self, job: &Value) -> bool {
        let progress = &job["progress"];
        let phase = progress["phase"].as_str().unwrap_or_default();
        match self {
            KillAt::BeforeCopy | KillAt::MidCopy => phase == "copy",
            KillAt::CatchUp => phase == "catch_up",
            KillAt::AfterFence => phase == "cut_over" && !progress["fenced_at_ms"].is_null(),
            KillAt::Cleanup => phase == "cleanup",
        }
    }
}

/// A catalog and two shards (`s0`, `s1`) in new PostgreSQL databases, and the environment of
/// an instance on them whose moves pause at every phase boundary and copy slowly.
struct Cluster {
    databases: Databases,
    envs: Vec<(String, String)>,
}

impl Cluster {
    async fn new() -> Self {
        let databases = Databases::create("sgmc", 2).await;
        let mut envs = databases.envs(false);
        envs.extend([
            // Every phase boundary pauses, so the test can kill the instance in a phase; the copy
            // is slow enough (a megabyte takes about a second) to be killed in the middle.
            ("SHARDGATE_STORAGE__MOVES__PHASE_PAUSE".to_owned(), "700ms".to_owned()),
            ("SHARDGATE_STORAGE__MOVES__COPY_BYTES_PER_SECOND".to_owned(), "1000000".to_owned()),
            ("SHARDGATE_STORAGE__MOVES__LEASE".to_owned(), "1s".to_owned()),
            ("SHARDGATE_STORAGE__MOVES__CLEANUP_GRACE".to_owned(), "2s".to_owned()),
        ]);
        Self { databases, envs }
    }

    /// Where shard `id`'s database stands in [`Databases::names`].
    fn shard_index(id: &str) -> usize {
        if id == "s0" { 1 } else { 2 }
    }

    /// The URL of shard `id`'s database.
    fn shard_url(&self, id: &str) -> String {
        self.databases.url(Self::shard_index(id))
    }

    async fn drop_databases(self) {
        self.databases.drop_all().await;
    }

    /// An instance on the cluster with its data in `dir`, once it is ready.
    async fn serve(&self, dir: &std::path::Path, client: &reqwest::Client) -> Process {
        let process = Process::start(&["serve"], dir, self.envs.clone());
        process.wait_until_ok(client, "/readyz").await;
        process
    }
}

/// A new cluster and an instance on it (in a new data directory) that holds tenant `acme`, with
/// a client and an admin token.
struct Acme {
    client: reqwest::Client,
    admin: String,
    cluster: Cluster,
    dir: tempfile::TempDir,
    process: Process,
}

impl Acme {
    async fn start() -> Self {
        let client = reqwest::Client::new();
        let admin = token(None, "admin");
        let cluster = Cluster::new().await;
        let dir = tempfile::tempdir().unwrap();
        let process = cluster.serve(dir.path(), &client).await;
        process.create_tenant(&client, &admin, "acme").await;
        Self { client, admin, cluster, dir, process }
    }
}

/// Polls job `job_url` on `process` until `kill` says it is where the instance dies, then
/// kills it (SIGKILL), starts a new instance and waits until the job has ended there.
async fn kill_and_resume(
    client: &reqwest::Client,
    process: Process,
    cluster: &Cluster,
    dir: &std::path::Path,
    job_url: &str,
    kill: KillAt,
    admin: &str,
) -> (Process, Value) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let job: Value = get(client, &format!("{}{job_url}", process.base), admin).await;
        if kill.reached(&job) {
            break;
        }
        assert_eq!(job["state"], "running", "{kill:?}: the job ended before it could be killed: {job}");
        assert!(tokio::time::Instant::now() < deadline, "{kill:?}: never reached: {job}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    if matches!(kill, KillAt::MidCopy) {
        // Past the pause, into the (slow) copy.
        tokio::time::sleep(Duration::from_millis(1000)).await;
    }
    drop(process);

    let process = cluster.serve(dir, client).await;
    let url = format!("{}{job_url}", process.base);
    let done = ended(client, &url, admin, 60, |job| format!("{kill:?}: not finished after the restart: {job}")).await;
    assert_eq!(done["state"], "done", "{kill:?}: {done}\n{}", process.log());
    assert_eq!(done["progress"]["checksums"]["matched"], true, "{kill:?}: {done}");
    assert_no_unknown_kind_warning(&process, kill);
    (process, done)
}

/// The instance that took a job over knew its kind: it did not warn that it was unknown.
fn assert_no_unknown_kind_warning(process: &Process, at: impl std::fmt::Debug) {
    let log = process.log();
    assert!(!log.contains("unknown job kind"), "{at:?}: a job the instance runs was called unknown:\n{log}");
}

const PHASES: [KillAt; 5] = [KillAt::BeforeCopy, KillAt::MidCopy, KillAt::CatchUp, KillAt::AfterFence, KillAt::Cleanup];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_killed_in_any_phase_is_finished_by_the_next_instance() {
    let Acme { client, admin, cluster, dir, mut process } = Acme::start().await;
    // Minted after the tenant exists (a token older than its tenant is refused).
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let tenant = token(Some("acme"), "read write");
    let blob = client
        .put(format!("{}/v1/tenants/acme/blobs/big.bin", process.base))
        .bearer_auth(&tenant)
        .body(vec![3u8; 1_000_000])
        .send()
        .await
        .unwrap();
    assert_eq!(blob.status(), 201, "{}", blob.text().await.unwrap_or_default());
    // The last acknowledged value of every key.
    let mut expected = std::collections::BTreeMap::new();

    for (round, kill) in PHASES.into_iter().enumerate() {
        for i in 0..30 {
            let key = format!("k{i}");
            let value = json!({"round": round, "i": i});
            put(&client, &process, &tenant, &format!("c/records/{key}"), &value, kill).await;
            expected.insert(key, value);
        }
        let route: Value =
            get(&client, &format!("{}/v1/admin/route?tenant=acme&collection=c&key=k0", process.base), &admin).await;
        let (from, to) = if route["shard"] == "s0" { ("s0", "s1") } else { ("s1", "s0") };
        let request = client.post(format!("{}/v1/admin/tenants/acme/move", process.base)).bearer_auth(&admin);
        let job = accepted(request.json(&json!({"to": to})), &format!("{kill:?}: starting the move")).await;
        let job_url = job_path(&job);

        let (resumed, _) = kill_and_resume(&client, process, &cluster, dir.path(), &job_url, kill, &admin).await;
        process = resumed;
        let route: Value =
            get(&client, &format!("{}/v1/admin/route?tenant=acme&collection=c&key=k0", process.base), &admin).await;
        assert_eq!(route["shard"], to, "{kill:?}: the tenant is on its new shard");

        // Every acknowledged write reads back, the blob came along, and the tenant's rows are on
        // one shard only.
        for (key, value) in &expected {
            let got: Value =
                get(&client, &format!("{}/v1/tenants/acme/collections/c/records/{key}", process.base), &tenant).await;
            assert_eq!(&got["value"], value, "{kill:?}: {key}");
        }
        let blob = client
            .get(format!("{}/v1/tenants/acme/blobs/big.bin", process.base))
            .bearer_auth(&tenant)
            .send()
            .await
            .unwrap();
        assert_eq!(blob.status(), 200, "{kill:?}: the blob");
        assert_eq!(blob.bytes().await.unwrap().len(), 1_000_000, "{kill:?}: the blob's bytes");
        let mut shard = sqlx::PgConnection::connect(&cluster.shard_url(from)).await.unwrap();
        let left: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM records WHERE tenant = 'acme'")
            .fetch_one(&mut shard)
            .await
            .unwrap();
        assert_eq!(left, 0, "{kill:?}: the old shard {from} still holds the tenant's records");
        shard.close().await.unwrap();
    }

    // A drain killed while its vshard moves run: the next instance takes the drain and its
    // moves over and finishes them.
    let request = client.post(format!("{}/v1/admin/shards/s1/drain", process.base)).bearer_auth(&admin);
    let drain = accepted(request.json(&json!({"parallel": 4})), "starting the drain").await;
    let job_url = format!("{}/v1/admin/jobs/{}", process.base, drain["job"]["id"].as_str().unwrap());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let job: Value = get(&client, &job_url, &admin).await;
        if job["progress"]["running"].as_u64().unwrap_or(0) > 0 {
            break;
        }
        assert_eq!(job["state"], "running", "the drain ended before it could be killed: {job}");
        assert!(tokio::time::Instant::now() < deadline, "no step of the drain started: {job}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Into the steps' phases.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    drop(process);
    process = cluster.serve(dir.path(), &client).await;
    let job_url = job_url.replace(&job_url[..job_url.find("/v1/").unwrap()], &process.base);
    let drained =
        ended(&client, &job_url, &admin, 120, |job| format!("the drain did not finish after the restart: {job}")).await;
    assert_eq!(drained["state"], "done", "{drained}\n{}", process.log());
    assert_no_unknown_kind_warning(&process, "the drain");
    let map: Value = get(&client, &format!("{}/v1/admin/shard-map", process.base), &admin).await;
    let s1 = map["shards"].as_array().unwrap().iter().find(|s| s["id"] == "s1").cloned().unwrap();
    assert_eq!(s1["vshards"], 0, "{map}");
    for (key, value) in &expected {
        let got: Value =
            get(&client, &format!("{}/v1/tenants/acme/collections/c/records/{key}", process.base), &tenant).await;
        assert_eq!(&got["value"], value, "after the drain: {key}");
    }
    drop(process);
    cluster.drop_databases().await;
}

/// A split whose keys change shard (`range.move`) killed in each phase: the next instance
/// finishes it, every acknowledged write reads back, and the moved keys' rows are left only on
/// the shard that holds their range now.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_range_move_killed_in_any_phase_is_finished_by_the_next_instance() {
    let Acme { client, admin, cluster, dir, mut process } = Acme::start().await;
    let ranges = json!({"distribution": "range", "ranges": [{"from": "", "shard": "s0"}]});
    let set = client
        .put(format!("{}/v1/admin/tenants/acme/collections/r", process.base))
        .bearer_auth(&admin)
        .json(&ranges)
        .send()
        .await
        .unwrap();
    assert_eq!(set.status(), 200, "{}", set.text().await.unwrap_or_default());
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let tenant = token(Some("acme"), "read write");
    // About a megabyte above the bound `m`, so that the copy takes about a second.
    let padding = "p".repeat(20_000);
    let mut expected = std::collections::BTreeMap::new();

    for (round, kill) in PHASES.into_iter().enumerate() {
        for i in 0..60 {
            let key = format!("{}{i:02}", if i % 4 == 0 { "c" } else { "x" });
            let value = json!({"round": round, "i": i, "padding": padding});
            put(&client, &process, &tenant, &format!("r/records/{key}"), &value, kill).await;
            expected.insert(key, value);
        }
        // The keys from `m` on go back and forth between the shards.
        let (from, to) = if round % 2 == 0 { ("s0", "s1") } else { ("s1", "s0") };
        let request = client.post(format!("{}/v1/admin/tenants/acme/collections/r/split", process.base));
        let request = request.bearer_auth(&admin).json(&json!({"at": "m", "shard": to}));
        let job_url = job_path(&accepted(request, &format!("{kill:?}: starting the range move")).await);
        let (resumed, done) = kill_and_resume(&client, process, &cluster, dir.path(), &job_url, kill, &admin).await;
        process = resumed;
        assert_eq!(done["kind"], "range.move", "{done}");

        let route: Value =
            get(&client, &format!("{}/v1/admin/route?tenant=acme&collection=r&key=x00", process.base), &admin).await;
        assert_eq!(route["shard"], to, "{kill:?}: the range is on its new shard: {route}");
        let route: Value =
            get(&client, &format!("{}/v1/admin/route?tenant=acme&collection=r&key=c00", process.base), &admin).await;
        assert_eq!(route["shard"], "s0", "{kill:?}: the keys below the bound stay: {route}");
        for (key, value) in &expected {
            let got: Value =
                get(&client, &format!("{}/v1/tenants/acme/collections/r/records/{key}", process.base), &tenant).await;
            assert_eq!(&got["value"], value, "{kill:?}: {key}");
        }
        for (shard, holds) in [(from, false), (to, true)] {
            let mut db = sqlx::PgConnection::connect(&cluster.shard_url(shard)).await.unwrap();
            let moved: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM spread_records WHERE tenant = 'acme' AND collection = 'r' AND key >= 'm'",
            )
            .fetch_one(&mut db)
            .await
            .unwrap();
            let want = if holds { 45 } else { 0 };
            assert_eq!(moved, want, "{kill:?}: rows of the moved keys on {shard}");
            db.close().await.unwrap();
        }
    }
    drop(process);
    cluster.drop_databases().await;
}

/// A change of a non-empty collection's distribution (`collection.redistribute`) killed in each
/// phase: the next instance finishes it, every acknowledged write reads back, and the
/// collection's rows are left only in the table of its new layout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redistribution_killed_in_any_phase_is_finished_by_the_next_instance() {
    let Acme { client, admin, cluster, dir, mut process } = Acme::start().await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let tenant = token(Some("acme"), "read write");
    // About a megabyte, so that the copy takes about a second.
    let padding = "p".repeat(20_000);
    let mut expected = std::collections::BTreeMap::new();
    let range = json!({"distribution": "range", "ranges": [{"from": "", "shard": "s0"}, {"from": "m", "shard": "s1"}]});
    let steps = [
        json!({"distribution": "hash"}),
        json!({"distribution": "tenant"}),
        range,
        json!({"distribution": "tenant"}),
        json!({"distribution": "hash"}),
    ];

    for (round, (kill, to)) in PHASES.into_iter().zip(steps).enumerate() {
        for i in 0..50 {
            let key = format!("{}{i:02}", if i % 2 == 0 { "c" } else { "x" });
            let value = json!({"round": round, "i": i, "padding": padding});
            put(&client, &process, &tenant, &format!("d/records/{key}"), &value, kill).await;
            expected.insert(key, value);
        }
        let request = client.put(format!("{}/v1/admin/tenants/acme/collections/d", process.base)).bearer_auth(&admin);
        let started = accepted(request.json(&to), &format!("{kill:?}: starting the redistribution to {to}")).await;
        let job_url = job_path(&started);
        let (resumed, done) = kill_and_resume(&client, process, &cluster, dir.path(), &job_url, kill, &admin).await;
        process = resumed;
        assert_eq!(done["kind"], "collection.redistribute", "{done}");

        let got: Value = get(&client, &format!("{}/v1/admin/tenants/acme/collections/d", process.base), &admin).await;
        assert_eq!(got["distribution"], to["distribution"], "{kill:?}: {got}");
        for (key, value) in &expected {
            let got: Value =
                get(&client, &format!("{}/v1/tenants/acme/collections/d/records/{key}", process.base), &tenant).await;
            assert_eq!(&got["value"], value, "{kill:?}: {key}");
        }
        let (kept, left) =
            if to["distribution"] == "tenant" { ("records", "spread_records") } else { ("spread_records", "records") };
        let mut rows = std::collections::HashMap::new();
        for shard in ["s0", "s1"] {
            let mut db = sqlx::PgConnection::connect(&cluster.shard_url(shard)).await.unwrap();
            for table in [kept, left] {
                let sql = format!("SELECT COUNT(*) FROM {table} WHERE tenant = 'acme' AND collection = 'd'");
                let count: i64 = sqlx::query_scalar(&sql).fetch_one(&mut db).await.unwrap();
                *rows.entry(table).or_insert(0) += count;
            }
            db.close().await.unwrap();
        }
        assert_eq!((rows[kept], rows[left]), (50, 0), "{kill:?}: rows in {kept} and {left}");
    }
    drop(process);
    cluster.drop_databases().await;
}

/// A move whose copy takes about six times the job lease, with two instances running: the
/// instance running it keeps its lease (renewed apart from its progress saves) and finishes it
/// with no handover. Then, moving back, the lease is taken from the instance running the move
/// mid-copy: its copy statements on the source end at once, and the instance that takes the job
/// over resumes the copy after the last batch instead of copying everything again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_whose_copy_outlasts_its_lease_keeps_one_owner_and_resumes_when_taken_over() {
    let cluster = Cluster::new().await;
    let mut envs: Vec<(String, String)> =
        cluster.envs.iter().filter(|(key, _)| !key.ends_with("PHASE_PAUSE")).cloned().collect();
    // Batches of about a blob, so that a copy taken over mid-way has batches behind it.
    envs.push(("SHARDGATE_STORAGE__MOVES__COPY_BATCH_BYTES".to_owned(), "1048576".to_owned()));
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let client = reqwest::Client::new();
    let admin = token(None, "admin");
    let a = Process::start(&["serve"], dirs[0].path(), envs.clone());
    let b = Process::start(&["serve"], dirs[1].path(), envs.clone());
    a.wait_until_ok(&client, "/readyz").await;
    b.wait_until_ok(&client, "/readyz").await;
    a.create_tenant(&client, &admin, "acme").await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let tenant = token(Some("acme"), "read write");
    // Six megabytes of blobs: at 1 MB/s the copy takes about six leases (1 s).
    for i in 0..6u8 {
        let put = client
            .put(format!("{}/v1/tenants/acme/blobs/b{i}.bin", a.base))
            .bearer_auth(&tenant)
            .body(vec![i; 1_000_000])
            .send()
            .await
            .unwrap();
        assert_eq!(put.status(), 201, "{}", put.text().await.unwrap_or_default());
    }
    put(&client, &a, &tenant, "c/records/k", &json!({"kept": true}), KillAt::MidCopy).await;
    let route: Value = get(&client, &format!("{}/v1/admin/route?tenant=acme&collection=c&key=k", a.base), &admin).await;
    let (from, to) = if route["shard"] == "s0" { ("s0", "s1") } else { ("s1", "s0") };

    // Nothing disturbs the first move: the instance that started it finishes it.
    let job_url = move_tenant(&client, &a, &admin, to).await;
    let done = finished(&client, &b, &job_url, &admin).await;
    assert_eq!(done["state"], "done", "{done}\n{}\n{}", a.log(), b.log());
    assert_eq!(done["handovers"], 0, "the job changed hands: {done}\n{}\n{}", a.log(), b.log());
    assert_eq!(done["progress"]["checksums"]["matched"], true, "{done}");
    let whole = done["progress"]["bytes_copied"].as_u64().unwrap();
    assert!(whole >= 6_000_000, "{done}");

    // Moving back, the lease is taken from the instance running the move half-way through the copy.
    let job_url = move_tenant(&client, &b, &admin, from).await;
    let id = job_url.rsplit('/').next().unwrap().to_owned();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let job: Value = get(&client, &format!("{}{job_url}", a.base), &admin).await;
        let copied = job["progress"]["bytes_copied"].as_u64().unwrap_or(0);
        if job["progress"]["phase"] == "copy" && copied >= whole / 2 {
            break;
        }
        assert_eq!(job["progress"]["phase"], "copy", "the copy ended before half of it was seen saved: {job}");
        assert!(tokio::time::Instant::now() < deadline, "the copy saved no progress half-way: {job}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut catalog = sqlx::PgConnection::connect(&cluster.databases.url(0)).await.unwrap();
    let now_ms =
        i64::try_from(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis()).unwrap();
    sqlx::query("UPDATE jobs SET owner = 'intruder', lease_until = $1 WHERE id = $2")
        .bind(now_ms + 2_500)
        .bind(&id)
        .execute(&mut catalog)
        .await
        .unwrap();
    // Within a renewal (a third of the lease) the instance finds the lease gone and its copy
    // statements end on the source, and none starts again while the intruder holds the job.
    let source = cluster.databases.names[Cluster::shard_index(to)].clone();
    let copies = "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = $1 AND state = 'active' \
                  AND query ILIKE 'COPY (SELECT%'";
    let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
    loop {
        let running: i64 = sqlx::query_scalar(copies).bind(&source).fetch_one(&mut catalog).await.unwrap();
        if running == 0 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{running} copies still run on {to} after the lease was taken\n{}\n{}",
            a.log(),
            b.log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_millis(150)).await;
        let running: i64 = sqlx::query_scalar(copies).bind(&source).fetch_one(&mut catalog).await.unwrap();
        assert_eq!(running, 0, "a copy began again while another instance held the job");
    }
    catalog.close().await.unwrap();

    // Once the intruder's lease runs out, an instance takes the job over and resumes the copy.
    let done = finished(&client, &a, &job_url, &admin).await;
    assert_eq!(done["state"], "done", "{done}\n{}\n{}", a.log(), b.log());
    assert_eq!(done["handovers"], 1, "{done}");
    assert_eq!(done["progress"]["checksums"]["matched"], true, "{done}");
    let copied = done["progress"]["bytes_copied"].as_u64().unwrap();
    // A copy started again from zero would have copied at least one and a half times the whole.
    assert!(copied < whole + whole / 4, "the copy began again: {copied} bytes of {whole}: {done}");
    for i in 0..6u8 {
        let got =
            client.get(format!("{}/v1/tenants/acme/blobs/b{i}.bin", b.base)).bearer_auth(&tenant).send().await.unwrap();
        assert_eq!(got.status(), 200);
        assert_eq!(got.bytes().await.unwrap(), vec![i; 1_000_000], "blob b{i}");
    }
    let record: Value = get(&client, &format!("{}/v1/tenants/acme/collections/c/records/k", b.base), &tenant).await;
    assert_eq!(record["value"], json!({"kept": true}));
    drop((a, b));
    cluster.drop_databases().await;
}

/// Starts moving tenant `acme` to shard `to` through `process`; the job's URL.
async fn move_tenant(client: &reqwest::Client, process: &Process, admin: &str, to: &str) -> String {
    let request = client.post(format!("{}/v1/admin/tenants/acme/move", process.base)).bearer_auth(admin);
    job_path(&accepted(request.json(&json!({"to": to})), &format!("starting the move to {to}")).await)
}

/// Sends `request`, an operator's request that starts a job, asserts that it was accepted (202;
/// `what` names it in the failure) and answers its body.
async fn accepted(request: reqwest::RequestBuilder, what: &str) -> Value {
    let started = request.send().await.unwrap();
    assert_eq!(started.status(), 202, "{what}");
    started.json().await.unwrap()
}

/// `/v1/admin/jobs/{id}` of the job a 202 answer started.
fn job_path(job: &Value) -> String {
    format!("/v1/admin/jobs/{}", job["id"].as_str().unwrap())
}

/// Polls job `job_url` on `process` until it is no longer running (at most 60 s).
async fn finished(client: &reqwest::Client, process: &Process, job_url: &str, admin: &str) -> Value {
    let url = format!("{}{job_url}", process.base);
    ended(client, &url, admin, 60, |job| format!("not finished within 60 s: {job}\n{}", process.log())).await
}

/// Polls the job at `url` every 100 ms until it is no longer running, for at most `secs`
/// seconds (`late` says what failed then).
async fn ended(client: &reqwest::Client, url: &str, admin: &str, secs: u64, late: impl Fn(&Value) -> String) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let job: Value = get(client, url, admin).await;
        if job["state"] != "running" {
            return job;
        }
        assert!(tokio::time::Instant::now() < deadline, "{}", late(&job));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Writes `value` at `path` (below tenant `acme`'s collections) and checks it was taken.
async fn put(client: &reqwest::Client, process: &Process, token: &str, path: &str, value: &Value, kill: KillAt) {
    let url = format!("{}/v1/tenants/acme/collections/{path}", process.base);
    let put = client.put(url).bearer_auth(token).json(value).send().await.unwrap();
    assert!(put.status().is_success(), "{kill:?}: PUT {path}: {}", put.status());
}

async fn get(client: &reqwest::Client, url: &str, token: &str) -> Value {
    let response = client.get(url).bearer_auth(token).send().await.unwrap();
    let status = response.status();
    let body = response.text().await.unwrap();
    assert!(status.is_success(), "GET {url}: {status} {body}");
    serde_json::from_str(&body).unwrap()
}
