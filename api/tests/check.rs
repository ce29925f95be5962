//! `shardgate check` on a restored fleet: each test builds a clean fleet through the gateway's
//! HTTP API (tenants, records under an index, a blob, a completed tenant move), stops the
//! gateway, plants one kind of inconsistency directly in the databases with SQL, as a restore
//! from backups of different moments would leave it, and runs the binary: the finding names its
//! kind and where it is, and the exit status is 1 (2 when something could not be checked). A
//! clean fleet passes with 0, also right after a completed move, and while a move waits out its
//! cleanup grace (the rows it still holds are not findings).

use std::time::Duration;

use serde_json::{Value, json};
use sqlx::{AnyConnection, Connection};
use support::{Process, finish, shardgate};

mod shared_catalog;
#[expect(dead_code, reason = "these tests use part of the process harness")]
mod support;

use shared_catalog::{Databases, token};

/// Where a fleet's databases are.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Engine {
    Sqlite,
    Postgres,
}

/// A test on each engine: `$sqlite` runs `$story(Engine::Sqlite)`, `$postgres` runs
/// `$story(Engine::Postgres)`.
macro_rules! on_each_engine {
    ($story:ident: $sqlite:ident, $postgres:ident) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $sqlite() {
            $story(Engine::Sqlite).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $postgres() {
            $story(Engine::Postgres).await;
        }
    };
}

/// A fleet built through the gateway and stopped: its data directory, the environment its
/// gateway ran with, and what the tests plant against.
struct Fleet {
    dir: tempfile::TempDir,
    envs: Vec<(String, String)>,
    databases: Option<Databases>,
    catalog_url: String,
    /// Where tenant `acme` lives (home shard and vshard).
    acme: (String, u32),
    /// Where tenant `beta` lives.
    beta: (String, u32),
    /// The shard tenant `mover` left, and the one it is pinned to now.
    moved: (String, String),
    /// The move's job id.
    move_job: String,
}

impl Fleet {
    /// Builds a fleet on `engine`, its moves waiting `grace` before removing the old copy;
    /// `wait_for` is the move's phase to wait for before the gateway is stopped (`done`, or
    /// `cleanup` to stop it within the grace).
    async fn build(engine: Engine, grace: &str, wait_for: &str) -> Self {
        sqlx::any::install_default_drivers();
        let dir = tempfile::tempdir().unwrap();
        let databases = match engine {
            Engine::Sqlite => None,
            Engine::Postgres => Some(Databases::create("sgck", 2).await),
        };
        let mut envs = match &databases {
            Some(databases) => databases.envs(false),
            None => vec![(
                "SHARDGATE_AUTH__ISSUERS".to_owned(),
                "[{issuer=\"crash\",algorithm=\"HS256\",secret=\"process-test-secret-0123456789abcdef\",\
                 allow_any_audience=true}]"
                    .to_owned(),
            )],
        };
        envs.push(("SHARDGATE_STORAGE__MOVES__CLEANUP_GRACE".to_owned(), grace.to_owned()));
        let catalog_url = match &databases {
            Some(databases) => databases.url(0),
            None => format!("sqlite://{}", dir.path().join("catalog.db").display()),
        };
        let gateway = Process::start(&["serve"], dir.path(), envs.clone());
        let client = reqwest::Client::new();
        gateway.wait_until_ok(&client, "/readyz").await;
        let admin = token(None, "admin");
        for tenant in ["acme", "beta", "mover"] {
            gateway.create_tenant(&client, &admin, tenant).await;
        }
        let acme = token(Some("acme"), "read write manage");
        let base = &gateway.base;
        let index = client
            .put(format!("{base}/v1/tenants/acme/collections/users/indexes/by-town"))
            .bearer_auth(&acme)
            .json(&json!({"field": "/town"}))
            .send()
            .await
            .unwrap();
        assert_eq!(index.status(), 201, "defining the index");
        let by_town = format!("{base}/v1/tenants/acme/collections/users/indexes/by-town");
        json_until(&client, &by_town, &acme, 15, |info| info["state"] == "active")
            .await
            .expect("the index becomes active");
        for (tenant, key, town) in
            [("acme", "u1", "Oslo"), ("acme", "u2", "Bergen"), ("beta", "b1", "x"), ("mover", "m1", "y")]
        {
            let put = client
                .put(format!("{base}/v1/tenants/{tenant}/collections/users/records/{key}"))
                .bearer_auth(token(Some(tenant), "read write"))
                .json(&json!({"town": town}))
                .send()
                .await
                .unwrap();
            assert_eq!(put.status(), 201, "writing {tenant}/{key}");
        }
        let blob = client
            .put(format!("{base}/v1/tenants/acme/blobs/docs/a.txt"))
            .bearer_auth(&acme)
            .header("content-type", "text/plain")
            .body("hello")
            .send()
            .await
            .unwrap();
        assert!(blob.status().is_success(), "storing a blob: {}", blob.status());

        let route = async |tenant: &str| {
            let route = gateway
                .get_json(&client, &format!("/v1/admin/route?tenant={tenant}&collection=users&key=k"), &admin)
                .await;
            (route["shard"].as_str().unwrap().to_owned(), u32::try_from(route["vshard"].as_u64().unwrap()).unwrap())
        };
        let (acme_home, beta_home) = (route("acme").await, route("beta").await);
        let (mover_home, _) = route("mover").await;
        let map = gateway.get_json(&client, "/v1/admin/shard-map", &admin).await;
        let to = map["shards"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_owned())
            .find(|id| *id != mover_home)
            .expect("a second shard");
        let started: Value = client
            .post(format!("{base}/v1/admin/tenants/mover/move"))
            .bearer_auth(&admin)
            .json(&json!({"to": to}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let job = started["id"].as_str().unwrap_or_else(|| panic!("a move job: {started}")).to_owned();
        json_until(&client, &format!("{base}/v1/admin/jobs/{job}"), &admin, 30, |job| {
            job["progress"]["phase"] == wait_for
        })
        .await
        .unwrap_or_else(|| panic!("the move reaches its {wait_for} phase"));
        drop(gateway);
        Self {
            dir,
            envs,
            databases,
            catalog_url,
            acme: acme_home,
            beta: beta_home,
            moved: (mover_home, to),
            move_job: job,
        }
    }

    /// `shardgate check --json` on the fleet: its exit status and report.
    fn check(&self) -> (i32, Value) {
        self.check_with(&[])
    }

    /// [`Fleet::check`] with more arguments.
    fn check_with(&self, more: &[&str]) -> (i32, Value) {
        let args: Vec<&str> = ["check", "--json"].into_iter().chain(more.iter().copied()).collect();
        let output = finish(shardgate(&args, self.dir.path()).envs(self.envs.clone()));
        let stdout = String::from_utf8_lossy(&output.stdout);
        let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
            panic!("check --json prints JSON ({e}): {stdout}\nstderr: {}", String::from_utf8_lossy(&output.stderr))
        });
        (output.status.code().expect("an exit status"), report)
    }

    /// Runs `sql` (statements separated by `;`) on the catalog.
    async fn on_catalog(&self, sql: &str) {
        run_sql(&self.catalog_url, sql).await;
    }

    /// The URL the catalog registers for `shard`.
    async fn shard_url(&self, shard: &str) -> String {
        connected(&self.catalog_url, async |conn| {
            sqlx::query_scalar("SELECT url FROM shards WHERE id = $1").bind(shard).fetch_one(conn).await.unwrap()
        })
        .await
    }

    /// Runs `sql` (statements separated by `;`) on `shard`'s database.
    async fn on_shard(&self, shard: &str, sql: &str) {
        run_sql(&self.shard_url(shard).await, sql).await;
    }

    /// The shard ids the catalog registers.
    async fn shard_ids(&self) -> Vec<String> {
        connected(&self.catalog_url, async |conn| {
            sqlx::query_scalar("SELECT id FROM shards ORDER BY id").fetch_all(conn).await.unwrap()
        })
        .await
    }

    /// Runs `read` on a connection to `shard`'s database.
    async fn read_shard<T>(&self, shard: &str, read: impl AsyncFnOnce(&mut AnyConnection) -> T) -> T {
        connected(&self.shard_url(shard).await, read).await
    }

    async fn drop_databases(self) {
        if let Some(databases) = self.databases {
            databases.drop_all().await;
        }
    }
}

/// Connects to the database at `url`, runs `work` on the connection and closes it.
async fn connected<T>(url: &str, work: impl AsyncFnOnce(&mut AnyConnection) -> T) -> T {
    let mut conn = AnyConnection::connect(url).await.unwrap();
    let done = work(&mut conn).await;
    conn.close().await.unwrap();
    done
}

async fn run_sql(url: &str, sql: &str) {
    connected(url, async |conn| {
        for statement in sql.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            sqlx::query(statement).execute(&mut *conn).await.unwrap_or_else(|e| panic!("{statement}: {e}"));
        }
    })
    .await;
}

/// Asks `GET url` with the bearer token `token` every 100 ms until its JSON answer is `done`,
/// for at most `seconds` (a failed request is asked again); `None` when it never was.
async fn json_until(
    client: &reqwest::Client,
    url: &str,
    token: &str,
    seconds: u64,
    done: impl Fn(&Value) -> bool,
) -> Option<Value> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(seconds);
    loop {
        if let Ok(response) = client.get(url).bearer_auth(token).send().await
            && let Ok(answer) = response.json::<Value>().await
            && done(&answer)
        {
            return Some(answer);
        }
        if tokio::time::Instant::now() > deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The findings of `report` of `kind`.
fn of_kind<'a>(report: &'a Value, kind: &str) -> Vec<&'a Value> {
    report["findings"].as_array().unwrap().iter().filter(|f| f["kind"] == kind).collect()
}

/// Asserts that `report` has a finding of `kind` at `place` (every field given must match), with
/// what it found and what to do; returns it.
fn assert_finding<'a>(report: &'a Value, kind: &str, place: Value) -> &'a Value {
    let found = of_kind(report, kind)
        .into_iter()
        .find(|f| place.as_object().unwrap().iter().all(|(k, v)| &f["where"][k] == v))
        .unwrap_or_else(|| panic!("no {kind} finding at {place}: {report:#}"));
    assert!(!found["found"].as_str().unwrap().is_empty() && !found["action"].as_str().unwrap().is_empty());
    found
}

fn now_ms() -> i64 {
    i64::try_from(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_fleet_passes_right_after_a_completed_move_and_an_unreachable_shard_is_exit_2() {
    let fleet = Fleet::build(Engine::Sqlite, "100ms", "done").await;
    let (status, report) = fleet.check();
    assert_eq!(status, 0, "{report:#}");
    assert_eq!(report["clean"], true);
    assert_eq!(report["shards_checked"], 4);
    // The move left a `moved` fence on the shard the tenant left, on purpose: not a finding.
    let (from, _) = &fleet.moved;
    let fences: Vec<String> = fleet
        .read_shard(from, async |conn| {
            sqlx::query_scalar("SELECT state FROM tenant_fences WHERE tenant = 'mover'").fetch_all(conn).await.unwrap()
        })
        .await;
    assert_eq!(fences, ["moved"], "the move's fence stays on the shard it left");

    // A shard whose database is gone: reported, the others still checked, exit 2.
    std::fs::remove_file(fleet.dir.path().join("shards/shard-3.db")).unwrap();
    let (status, report) = fleet.check();
    assert_eq!(status, 2, "{report:#}");
    assert_finding(&report, "shard_unreachable", json!({"shard": "shard-3"}));
    assert_eq!(report["shards_checked"], 3);
    assert!(!fleet.dir.path().join("shards/shard-3.db").exists(), "check creates no database");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_a_move_still_holds_within_its_cleanup_grace_are_not_findings() {
    let fleet = Fleet::build(Engine::Sqlite, "1h", "cleanup").await;
    let (from, _) = &fleet.moved;
    let left: i64 = fleet
        .read_shard(from, async |conn| {
            sqlx::query_scalar("SELECT COUNT(*) FROM records WHERE tenant = 'mover'").fetch_one(conn).await.unwrap()
        })
        .await;
    assert_eq!(left, 1, "the old copy is still on the shard the tenant left");
    let (status, report) = fleet.check();
    assert_eq!(status, 0, "the running move ({}) holds them: {report:#}", fleet.move_job);

    // Without the job (a catalog restored from after the move, its cleanup never run), they are.
    fleet.on_catalog(&format!("UPDATE jobs SET state = 'done' WHERE id = '{}'", fleet.move_job)).await;
    let (status, report) = fleet.check();
    assert_eq!(status, 1, "{report:#}");
    assert_finding(&report, "rows_of_moved_tenant", json!({"shard": from, "tenant": "mover", "table": "records"}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_markers_missing_of_another_catalog_or_another_shard_are_found() {
    let fleet = Fleet::build(Engine::Sqlite, "100ms", "done").await;
    fleet.on_shard("shard-0", "DELETE FROM shard_identity").await;
    fleet.on_shard("shard-1", "UPDATE shard_identity SET catalog_id = 'another-catalog'").await;
    fleet.on_shard("shard-2", "UPDATE shard_identity SET shard_id = 'shard-3'").await;
    let (status, report) = fleet.check();
    assert_eq!(status, 1, "{report:#}");
    assert_finding(&report, "identity_missing", json!({"shard": "shard-0", "table": "shard_identity"}));
    assert_finding(&report, "identity_other_catalog", json!({"shard": "shard-1"}));
    assert_finding(&report, "identity_other_shard", json!({"shard": "shard-2"}));
    assert_eq!(report["findings"].as_array().unwrap().len(), 3, "nothing else: {report:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_registered_shards_that_are_one_database_are_found() {
    let fleet = Fleet::build(Engine::Sqlite, "100ms", "done").await;
    let url = fleet.shard_url("shard-1").await;
    fleet.on_catalog(&format!("UPDATE shards SET url = '{url}' WHERE id = 'shard-0'")).await;
    let (status, report) = fleet.check();
    assert_eq!(status, 1, "{report:#}");
    let shared = assert_finding(&report, "identity_shared_database", json!({"shard": "shard-0"}));
    assert!(shared["found"].as_str().unwrap().contains("shard-0, shard-1"), "{shared}");
}

/// Rows of a vshard on a shard the catalog does not map it to; then a vshard mapped to a shard
/// the catalog does not register (the map cannot be read: exit 2).
async fn vshard_ownership(engine: Engine) {
    let fleet = Fleet::build(engine, "100ms", "done").await;
    let (home, vshard) = fleet.acme.clone();
    let elsewhere = fleet.shard_ids().await.into_iter().find(|id| *id != home).unwrap();
    let now = now_ms();
    fleet
        .on_shard(
            &elsewhere,
            &format!(
                "INSERT INTO records (tenant, collection, key, vshard, version, updated_at, deleted, value, live_since) \
                 VALUES ('acme', 'users', 'stray', {vshard}, 1, {now}, 0, '{{}}', 1)"
            ),
        )
        .await;
    let (status, report) = fleet.check();
    assert_eq!(status, 1, "{report:#}");
    assert_finding(
        &report,
        "rows_off_vshard_owner",
        json!({"shard": elsewhere, "tenant": "acme", "vshard": vshard, "table": "records"}),
    );
    assert_eq!(report["findings"].as_array().unwrap().len(), 1, "nothing else: {report:#}");

    let sql = match engine {
        Engine::Sqlite => "PRAGMA foreign_keys = OFF; UPDATE vshards SET shard = 'ghost' WHERE vshard = 7",
        Engine::Postgres => {
            "ALTER TABLE vshards DROP CONSTRAINT vshards_shard_fkey; UPDATE vshards SET shard = 'ghost' WHERE vshard = 7"
        }
    };
    fleet.on_catalog(sql).await;
    let (status, report) = fleet.check();
    assert_eq!(status, 2, "the map cannot be loaded, so the shards are not checked: {report:#}");
    assert_finding(&report, "vshard_owner_unregistered", json!({"shard": "ghost", "vshard": 7}));
    fleet.drop_databases().await;
}

on_each_engine!(
    vshard_ownership:
    rows_off_their_vshard_owner_are_found_on_sqlite,
    rows_off_their_vshard_owner_are_found_on_postgres
);

/// A frozen fence without its job, a moved fence on the owner, a write fence ahead of the
/// catalog.
async fn fences(engine: Engine) {
    let fleet = Fleet::build(engine, "100ms", "done").await;
    let (beta_home, _) = fleet.beta.clone();
    let (acme_home, acme_vshard) = fleet.acme.clone();
    fleet
        .on_shard(
            &beta_home,
            "INSERT INTO tenant_fences (tenant, state, job_id, since) VALUES ('beta', 'frozen', 'lost-job', 1)",
        )
        .await;
    fleet
        .on_shard(
            &acme_home,
            &format!(
                "INSERT INTO vshard_fences (vshard, state, job_id, since) VALUES ({acme_vshard}, 'moved', 'old-job', 1)"
            ),
        )
        .await;
    let other = fleet.shard_ids().await.into_iter().find(|id| *id != acme_home).unwrap();
    fleet.on_shard(&other, "UPDATE shard_fence SET epoch = 1000000 WHERE id = 1").await;
    let (status, report) = fleet.check();
    assert_eq!(status, 1, "{report:#}");
    assert_finding(
        &report,
        "fence_without_job",
        json!({"shard": beta_home, "tenant": "beta", "table": "tenant_fences"}),
    );
    assert_finding(
        &report,
        "fence_on_owner",
        json!({"shard": acme_home, "vshard": acme_vshard, "table": "vshard_fences"}),
    );
    assert_finding(&report, "write_fence_ahead", json!({"shard": other, "table": "shard_fence"}));
    assert_eq!(report["findings"].as_array().unwrap().len(), 3, "the completed move's fence is not one: {report:#}");
    fleet.drop_databases().await;
}

on_each_engine!(
    fences:
    fences_no_running_job_holds_are_found_on_sqlite,
    fences_no_running_job_holds_are_found_on_postgres
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_of_moved_unknown_and_earlier_tenants_are_found() {
    let fleet = Fleet::build(Engine::Sqlite, "100ms", "done").await;
    let (from, _) = fleet.moved.clone();
    let (beta_home, beta_vshard) = fleet.beta.clone();
    let now = now_ms();
    let insert = |tenant: &str, vshard: u32, updated: i64| {
        format!(
            "INSERT INTO records (tenant, collection, key, vshard, version, updated_at, deleted, value, live_since) \
             VALUES ('{tenant}', 'users', 'planted', {vshard}, 1, {updated}, 0, '{{}}', 1)"
        )
    };
    // The moved tenant's old copy, restored from a backup of before the move.
    let mover_vshard: i64 = fleet
        .read_shard(&fleet.moved.1, async |conn| {
            sqlx::query_scalar("SELECT vshard FROM records WHERE tenant = 'mover'").fetch_one(conn).await.unwrap()
        })
        .await;
    fleet.on_shard(&from, &insert("mover", u32::try_from(mover_vshard).unwrap(), now)).await;
    // A tenant the catalog does not know, on beta's shard, in beta's vshard.
    fleet.on_shard(&beta_home, &insert("ghost", beta_vshard, now)).await;
    // A row of an earlier tenant called beta, written long before this beta was created.
    fleet.on_shard(&beta_home, &insert("beta", beta_vshard, 1_000).replace("'planted'", "'older'")).await;
    let (status, report) = fleet.check();
    assert_eq!(status, 1, "{report:#}");
    assert_finding(&report, "rows_of_moved_tenant", json!({"shard": from, "tenant": "mover", "table": "records"}));
    assert_finding(
        &report,
        "rows_of_unknown_tenant",
        json!({"shard": beta_home, "tenant": "ghost", "table": "records"}),
    );
    assert_finding(
        &report,
        "rows_of_earlier_incarnation",
        json!({"shard": beta_home, "tenant": "beta", "vshard": beta_vshard, "table": "records"}),
    );
    assert_eq!(report["findings"].as_array().unwrap().len(), 3, "nothing else: {report:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_entries_without_records_are_found_by_the_drift_audits_rule() {
    let fleet = Fleet::build(Engine::Sqlite, "100ms", "done").await;
    let (home, _) = fleet.acme.clone();
    // The record was restored from a backup of before it was written; its entry from after.
    fleet.on_shard(&home, "DELETE FROM records WHERE tenant = 'acme' AND key = 'u1'").await;
    let mut entry_shard = None;
    for id in fleet.shard_ids().await {
        let n: i64 = fleet
            .read_shard(&id, async |conn| {
                sqlx::query_scalar("SELECT COUNT(*) FROM index_entries WHERE tenant = 'acme' AND record_key = 'u1'")
                    .fetch_one(conn)
                    .await
                    .unwrap()
            })
            .await;
        if n > 0 {
            entry_shard = Some(id);
        }
    }
    let entry_shard = entry_shard.expect("u1 has an index entry");
    let (status, report) = fleet.check();
    assert_eq!(status, 1, "{report:#}");
    let found = assert_finding(
        &report,
        "index_entry_without_record",
        json!({"shard": entry_shard, "tenant": "acme", "table": "index_entries"}),
    );
    assert!(found["found"].as_str().unwrap().contains("u1"), "{found}");
    assert!(found["action"].as_str().unwrap().contains("index-audits"), "{found}");
    assert_eq!(report["findings"].as_array().unwrap().len(), 1, "u2's entry holds: {report:#}");

    // The text report says the same for people.
    let text = finish(shardgate(&["check"], fleet.dir.path()).envs(fleet.envs.clone()));
    assert_eq!(text.status.code(), Some(1));
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("index_entry_without_record  shard="), "{text}");
    assert!(text.contains("  do:    "), "{text}");
}

/// A blob whose chunk rows are short or missing (a shard restored from a backup taken while its
/// chunks were being written or collected).
async fn damaged_blobs(engine: Engine) {
    let fleet = Fleet::build(engine, "100ms", "done").await;
    let (home, vshard) = fleet.acme.clone();
    let chunks_of_the_blob =
        "upload_id IN (SELECT upload_id FROM blobs WHERE tenant = 'acme' AND path = 'docs/a.txt' AND deleted = 0)";
    fleet
        .on_shard(&home, &format!("UPDATE blob_chunks SET data = substr(data, 1, 2) WHERE {chunks_of_the_blob}"))
        .await;
    let (status, report) = fleet.check();
    assert_eq!(status, 1, "{report:#}");
    let short = assert_finding(
        &report,
        "blob_damaged",
        json!({"shard": home, "tenant": "acme", "vshard": vshard, "table": "blob_chunks"}),
    );
    assert!(short["found"].as_str().unwrap().contains("docs/a.txt"), "{short}");
    assert!(short["found"].as_str().unwrap().contains("1 of the wrong length"), "{short}");
    assert_eq!(report["findings"].as_array().unwrap().len(), 1, "nothing else: {report:#}");

    fleet.on_shard(&home, &format!("DELETE FROM blob_chunks WHERE {chunks_of_the_blob}")).await;
    let (status, report) = fleet.check();
    assert_eq!(status, 1, "{report:#}");
    let missing = assert_finding(&report, "blob_damaged", json!({"shard": home, "tenant": "acme"}));
    assert!(missing["found"].as_str().unwrap().contains("0 of its 1 chunks"), "{missing}");
    fleet.drop_databases().await;
}

/// Usage kept on a shard that is not what the rows add up to (edited by hand, or restored apart
/// from the rows): found, and rewritten from the rows by `--repair-usage`.
async fn usage_that_disagrees_with_the_rows(engine: Engine) {
    let fleet = Fleet::build(engine, "100ms", "done").await;
    let (home, _) = fleet.acme.clone();
    let (status, report) = fleet.check();
    assert_eq!(status, 0, "a fleet written through the gateway keeps its usage exact: {report:#}");
    fleet
        .on_shard(
            &home,
            "UPDATE tenant_usage SET records = records + 5, blob_bytes = blob_bytes + 7 WHERE tenant = 'acme'",
        )
        .await;
    let (status, report) = fleet.check();
    assert_eq!(status, 1, "{report:#}");
    let found =
        assert_finding(&report, "usage_disagrees", json!({"shard": home, "tenant": "acme", "table": "tenant_usage"}));
    assert!(found["action"].as_str().unwrap().contains("--repair-usage"), "{found}");
    assert_eq!(report["findings"].as_array().unwrap().len(), 1, "nothing else: {report:#}");

    let (status, report) = fleet.check_with(&["--repair-usage"]);
    assert_eq!(status, 0, "repaired, then clean: {report:#}");
    let (status, report) = fleet.check();
    assert_eq!(status, 0, "and it stays so: {report:#}");
}

on_each_engine!(
    usage_that_disagrees_with_the_rows:
    usage_that_disagrees_with_the_rows_is_found_and_repaired_on_sqlite,
    usage_that_disagrees_with_the_rows_is_found_and_repaired_on_postgres
);

on_each_engine!(
    damaged_blobs:
    blobs_with_short_or_missing_chunks_are_found_on_sqlite,
    blobs_with_short_or_missing_chunks_are_found_on_postgres
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_restored_from_another_shards_backup_is_one_finding_with_its_consequences_nested() {
    let fleet = Fleet::build(Engine::Sqlite, "100ms", "done").await;
    // Shard `source` (acme's home, with rows, an index's entries and a blob) is restored into
    // shard `wrong`'s place.
    let (source, _) = fleet.acme.clone();
    let wrong = fleet.shard_ids().await.into_iter().find(|id| *id != source).unwrap();
    let shards = fleet.dir.path().join("shards");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(shards.join(format!("{wrong}.db{suffix}")));
    }
    let target = shards.join(format!("{wrong}.db"));
    fleet.on_shard(&source, &format!("VACUUM INTO '{}'", target.display())).await;

    let (status, report) = fleet.check();
    assert_eq!(status, 1, "{report:#}");
    let cause = assert_finding(&report, "identity_other_shard", json!({"shard": wrong}));
    let consequences = cause["consequences"].as_array().unwrap_or_else(|| panic!("nested consequences: {cause:#}"));
    assert!(
        consequences.iter().any(|f| f["kind"] == "rows_off_vshard_owner" && f["where"]["tenant"] == "acme"),
        "acme's rows on {wrong} are a consequence: {cause:#}"
    );
    for consequence in consequences {
        assert_eq!(consequence["where"]["shard"], wrong.as_str(), "only findings on {wrong}: {consequence}");
        assert!(!consequence["found"].as_str().unwrap().is_empty() && consequence["consequences"].is_null());
    }
    let top_level = report["findings"].as_array().unwrap();
    assert!(
        top_level.iter().all(|f| f["where"]["shard"] != wrong.as_str() || f["kind"] == "identity_other_shard"),
        "no finding on {wrong} stands beside its cause: {report:#}"
    );
    assert_eq!(report["consequences"], consequences.len(), "the report counts them: {report:#}");

    // The text report indents them under their cause.
    let text = finish(shardgate(&["check"], fleet.dir.path()).envs(fleet.envs.clone()));
    let text = String::from_utf8_lossy(&text.stdout);
    let cause_line = text.lines().position(|l| l.starts_with("identity_other_shard")).expect("the cause");
    assert!(text.lines().skip(cause_line).any(|l| l.starts_with("    rows_off_vshard_owner  shard=")), "{text}");
    assert!(text.contains("consequences of it"), "{text}");
}
