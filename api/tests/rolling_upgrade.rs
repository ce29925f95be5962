//! A rolling upgrade, as docs/operations.md ("A rolling upgrade") tells an operator to do it, with
//! the binary of the previous release (scripts/previous-release.sh builds it: the tree before
//! the newest change to `migrations/`) and this tree's, on one PostgreSQL fleet with Redis:
//!
//! 1. the previous release creates the fleet at its schema and serves a tenant;
//! 2. this tree's `shardgate migrate` expands the catalog and the shards while it serves, and it
//!    keeps serving on the migrated schema;
//! 3. an instance of this tree joins: records, index look-ups and listings written through
//!    either read back through the other (the cache in Redis is shared), also across a tenant
//!    move the new instance runs;
//! 4. the previous release does not start with `migrate_on_start` against the migrated catalog
//!    (it says why), and starts with it off (the way back the guide gives);
//! 5. the old instance stops: the new one serves everything either wrote.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use shared_catalog::{Databases, token};
use sqlx::Connection;
use support::{Process, finish, finish_within, shardgate};

mod shared_catalog;
#[expect(dead_code, reason = "these tests use part of the process harness")]
mod support;

/// The previous release's `shardgate`, built by `scripts/previous-release.sh` (scripts/test.sh
/// builds it before the tests; run alone, this builds it, for at most 20 minutes). `None` when
/// the checkout has no git history to build it from (the script's exit status 3, which it
/// explains on standard error).
fn previous_release() -> Option<PathBuf> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/previous-release.sh");
    let output = finish_within(&mut Command::new(&script), Duration::from_secs(20 * 60));
    let said = String::from_utf8_lossy(&output.stderr);
    if output.status.code() == Some(3) {
        eprintln!("{said}");
        return None;
    }
    assert!(output.status.success(), "scripts/previous-release.sh failed: {said}");
    let binary = PathBuf::from(String::from_utf8(output.stdout).unwrap().trim());
    assert!(binary.is_file(), "scripts/previous-release.sh printed {}, which is no file", binary.display());
    Some(binary)
}

/// `<binary> serve --data-dir <dir>`, not started yet.
fn serve(binary: &Path, dir: &Path) -> Command {
    let mut command = Command::new(binary);
    command.arg("serve").arg("--data-dir").arg(dir);
    command
}

/// How many migrations the catalog and each shard have applied, in that order.
async fn applied(databases: &Databases) -> Vec<i64> {
    let mut counts = Vec::new();
    for i in 0..databases.names.len() {
        let mut db = sqlx::PgConnection::connect(&databases.url(i)).await.unwrap();
        let count: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM _sqlx_migrations WHERE success").fetch_one(&mut db).await.unwrap();
        counts.push(count);
        db.close().await.unwrap();
    }
    counts
}

/// Sends `request` and answers its JSON body, asserting a 2xx status (`what` names the request
/// in the failure).
async fn ok(request: reqwest::RequestBuilder, what: &str) -> Value {
    let response = request.send().await.unwrap();
    let status = response.status();
    let body = response.text().await.unwrap();
    assert!(status.is_success(), "{what}: {status} {body}");
    serde_json::from_str(&body).unwrap_or(Value::Null)
}

/// The keys of a page of records (a listing or an index look-up).
fn keys(page: &Value) -> Vec<String> {
    page["items"].as_array().expect("a page has items").iter().map(|r| r["key"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_of_the_previous_release_keeps_serving_beside_one_that_migrated() {
    let Some(previous) = previous_release() else {
        eprintln!("NOT RUN: no git history to build the previous release from");
        return;
    };
    let databases = Databases::create("sgup", 2).await;
    let mut envs = databases.envs(true);
    // A move's source rows are removed 2 s after its switch, not a minute.
    envs.push(("SHARDGATE_STORAGE__MOVES__CLEANUP_GRACE".to_owned(), "2s".to_owned()));
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let client = reqwest::Client::new();
    let admin = token(None, "admin");
    let records =
        |process: &Process, key: &str| format!("{}/v1/tenants/acme/collections/c/records/{key}", process.base);
    let index = |process: &Process| format!("{}/v1/tenants/acme/collections/c/indexes/by-n", process.base);

    // 1. The previous release creates the fleet at its schema.
    let old = Process::start_command(serve(&previous, dirs[0].path()), envs.clone());
    old.wait_until_ok(&client, "/readyz").await;
    let before = applied(&databases).await;
    old.create_tenant(&client, &admin, "acme").await;
    // Signed once the tenant exists (a token dated before its tenant is refused).
    let tenant = token(Some("acme"), "read write manage");
    ok(client.put(index(&old)).bearer_auth(&tenant).json(&json!({"field": "/n"})), "defining by-n").await;
    let deadline = Instant::now() + Duration::from_secs(15);
    while ok(client.get(index(&old)).bearer_auth(&tenant), "the index").await["state"] != "active" {
        assert!(Instant::now() < deadline, "by-n was not built within 15 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for i in 0..6 {
        let put = client.put(records(&old, &format!("k{i}"))).bearer_auth(&tenant).json(&json!({"n": i}));
        ok(put, "a write through the previous release").await;
    }

    // 2. This tree's migrations, run while the previous release serves.
    let migrated = finish(shardgate(&["migrate"], dirs[1].path()).envs(envs.clone()));
    assert!(migrated.status.success(), "shardgate migrate: {}", String::from_utf8_lossy(&migrated.stderr));
    let after = applied(&databases).await;
    assert!(
        after.iter().zip(&before).all(|(a, b)| a >= b) && after != before,
        "this tree's migrations should expand the previous release's schema ({before:?} applied before, \
         {after:?} after): scripts/previous-release.sh should build a tree from before the newest migration"
    );
    let got = ok(client.get(records(&old, "k0")).bearer_auth(&tenant), "a read through the previous release").await;
    assert_eq!(got["value"], json!({"n": 0}));
    let put = client.put(records(&old, "k6")).bearer_auth(&tenant).json(&json!({"n": 6}));
    ok(put, "a write through the previous release on the migrated schema").await;

    // 3. An instance of this tree joins; each reads what the other wrote.
    let new = Process::start(&["serve"], dirs[1].path(), envs.clone());
    new.wait_until_ok(&client, "/readyz").await;
    let mut expected: Vec<Value> = (0..7).map(|i| json!({"n": i})).collect();
    for round in 0..14usize {
        let (writer, reader) = if round % 2 == 0 { (&new, &old) } else { (&old, &new) };
        let i = round % expected.len();
        let value = json!({"n": 100 + round});
        let written =
            ok(client.put(records(writer, &format!("k{i}"))).bearer_auth(&tenant).json(&value), "a write").await;
        expected[i] = value;
        for _ in 0..2 {
            // Twice: the second read may come from Redis.
            let got = ok(client.get(records(reader, &format!("k{i}"))).bearer_auth(&tenant), "a read").await;
            assert_eq!(
                got["version"], written["version"],
                "k{i} through {} after a write through {}",
                reader.base, writer.base
            );
            assert_eq!(got["value"], expected[i]);
        }
        let url = format!("{}/records?value={}", index(reader), 100 + round);
        let found = ok(client.get(url).bearer_auth(&tenant), "an index look-up").await;
        assert_eq!(
            keys(&found),
            [format!("k{i}")],
            "by-n through {} after a write through {}",
            reader.base,
            writer.base
        );
    }
    let listing = |process: &Process| format!("{}/v1/tenants/acme/collections/c/records", process.base);
    let all: Vec<String> = (0..7).map(|i| format!("k{i}")).collect();
    assert_eq!(keys(&ok(client.get(listing(&old)).bearer_auth(&tenant), "a listing").await), all);
    assert_eq!(keys(&ok(client.get(listing(&new)).bearer_auth(&tenant), "a listing").await), all);

    // A tenant move run by the new instance; the old one follows the new map.
    let route = format!("{}/v1/admin/route?tenant=acme&collection=c&key=k0", new.base);
    let from = ok(client.get(&route).bearer_auth(&admin), "the route").await["shard"].clone();
    let to = if from == "s0" { "s1" } else { "s0" };
    let moving = client.post(format!("{}/v1/admin/tenants/acme/move", new.base)).bearer_auth(&admin);
    let job = ok(moving.json(&json!({"to": to})), "starting a move").await;
    let job_url = format!("{}/v1/admin/jobs/{}", new.base, job["id"].as_str().unwrap());
    let deadline = Instant::now() + Duration::from_secs(60);
    let job = loop {
        let job = ok(client.get(&job_url).bearer_auth(&admin), "the move").await;
        if job["state"] != "running" {
            break job;
        }
        assert!(Instant::now() < deadline, "the move did not end within 60 s: {job}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(job["state"], "done", "{job}");
    for process in [&old, &new] {
        for (i, value) in expected.iter().enumerate() {
            let got =
                ok(client.get(records(process, &format!("k{i}"))).bearer_auth(&tenant), "a read after the move").await;
            assert_eq!(&got["value"], value, "k{i} through {} after the move", process.base);
        }
        let put = client.put(records(process, "after-move")).bearer_auth(&tenant).json(&json!({"by": process.base}));
        ok(put, "a write after the move").await;
    }

    // 4. The previous release refuses the migrated catalog with migrate_on_start, and serves
    // with it off.
    let refused = finish(serve(&previous, dirs[2].path()).args(["--listen", "127.0.0.1:0"]).envs(envs.clone()));
    let said = format!("{}{}", String::from_utf8_lossy(&refused.stdout), String::from_utf8_lossy(&refused.stderr));
    assert!(!refused.status.success(), "the previous release started with migrate_on_start on a migrated catalog");
    assert!(said.contains("migration"), "the refusal says which migration it does not know: {said}");
    let mut back_envs = envs.clone();
    back_envs.push(("SHARDGATE_STORAGE__MIGRATE_ON_START".to_owned(), "false".to_owned()));
    let back = Process::start_command(serve(&previous, dirs[2].path()), back_envs);
    back.wait_until_ok(&client, "/readyz").await;
    let got = ok(client.get(records(&back, "after-move")).bearer_auth(&tenant), "a read through the way back").await;
    assert_eq!(got["value"], json!({"by": new.base}));
    drop(back);

    // 5. The old instance is replaced: the new one serves all either wrote.
    drop(old);
    for (i, value) in expected.iter().enumerate() {
        let got = ok(client.get(records(&new, &format!("k{i}"))).bearer_auth(&tenant), "a read").await;
        assert_eq!(&got["value"], value, "k{i}");
    }
    drop(new);
    databases.drop_all().await;
}
