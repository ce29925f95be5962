//! An instance killed (`kill -9`) after a record write committed on its shard and before it
//! invalidated the cache leaves no stale copy behind: the other instance (with Redis and its own
//! L1) serves the committed version at once, before and after the write's mark expires, and a
//! conditional write on the version it reads succeeds. The crash is placed exactly with a fault
//! point (`api/src/server/fault_points.rs`): `record_committed`, before the write is answered,
//! and `write_end_queued`, after it was answered with the end of its mark in Redis not yet sent.

use std::time::Duration;

use serde_json::{Value, json};
use shared_catalog::{Databases, token};
use support::Process;

mod shared_catalog;
#[expect(dead_code, reason = "these tests use part of the process harness")]
mod support;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_killed_between_commit_and_invalidation_leaves_no_stale_read() {
    killed_at("record_committed", "sgcc").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_killed_after_answering_a_write_whose_end_it_had_not_sent_leaves_no_stale_read() {
    killed_at("write_end_queued", "sgce").await;
}

/// Instance A is killed at fault point `point` during a write of version 2 (answered or not, as
/// the point has it); B must serve version 2 from then on.
async fn killed_at(point: &str, databases: &str) {
    let databases = Databases::create(databases, 1).await;
    let mut envs = databases.envs(true);
    // Short, so that the test also reads after the dead instance's mark expired.
    envs.push(("SHARDGATE_CACHE__WRITE_MARK_TTL".to_owned(), "2s".to_owned()));
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let client = reqwest::Client::new();
    // A stops dead once a record write has committed; B keeps an L1 of its own besides Redis.
    let mut armed = envs.clone();
    armed.push(("SHARDGATE_FAULT_POINT".to_owned(), point.to_owned()));
    let a = Process::start(&["serve"], dirs[0].path(), armed);
    a.wait_until_ok(&client, "/readyz").await;
    let mut with_l1 = envs.clone();
    with_l1.push(("SHARDGATE_CACHE__L1__ENABLED".to_owned(), "true".to_owned()));
    let b = Process::start(&["serve"], dirs[1].path(), with_l1);
    b.wait_until_ok(&client, "/readyz").await;
    b.create_tenant(&client, &token(None, "admin"), "acme").await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let tenant = token(Some("acme"), "read write");
    let record = "/v1/tenants/acme/collections/c/records/k";

    let put = client.put(format!("{}{record}", b.base)).bearer_auth(&tenant).json(&json!({"v": 1})).send().await;
    assert_eq!(put.unwrap().status(), 201);
    // Cached in Redis and in B's L1.
    for process in [&a, &b, &a, &b] {
        let got = read(&client, process, record, &tenant).await;
        assert_eq!(got["version"], 1, "{got}");
    }

    // A commits version 2 and stops before its invalidation (`record_committed`), or answers it
    // and stops before the end of its mark reaches Redis (`write_end_queued`); then it is killed.
    let pending =
        tokio::spawn(client.put(format!("{}{record}", a.base)).bearer_auth(&tenant).json(&json!({"v": 2})).send());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !a.log().contains("fault point reached") {
        assert!(tokio::time::Instant::now() < deadline, "A never reached its fault point:\n{}", a.log());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    if point == "write_end_queued" {
        let answered = pending.await.unwrap().expect("A answers the write before sending its end");
        assert_eq!(answered.status(), 200);
        drop(a);
    } else {
        drop(a);
        assert!(pending.await.unwrap().is_err(), "the killed instance answered the write");
    }

    // B serves the committed version from the first read on, while A's mark lives and after it
    // expired (the reads then fill the caches again).
    let until = tokio::time::Instant::now() + Duration::from_millis(3500);
    let mut reads = 0;
    while tokio::time::Instant::now() < until {
        let got = read(&client, &b, record, &tenant).await;
        assert_eq!((&got["version"], &got["value"]), (&json!(2), &json!({"v": 2})), "read {reads} after the crash");
        reads += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The recovery after an unknown outcome: read, then write with If-Match on the version read.
    let put = client
        .put(format!("{}{record}", b.base))
        .bearer_auth(&tenant)
        .header("If-Match", "\"2\"")
        .json(&json!({"v": 3}))
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), 200, "{}", put.text().await.unwrap_or_default());
    let got = read(&client, &b, record, &tenant).await;
    assert_eq!(got["version"], 3, "{got}");

    drop(b);
    databases.drop_all().await;
}

async fn read(client: &reqwest::Client, process: &Process, record: &str, token: &str) -> Value {
    let response = client.get(format!("{}{record}", process.base)).bearer_auth(token).send().await.unwrap();
    assert_eq!(response.status(), 200, "GET through {}", process.base);
    response.json().await.unwrap()
}
