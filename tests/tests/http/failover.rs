//! Shards that follow their primary: a shard's URL names a PostgreSQL primary and its streaming
//! standby (`pg_basebackup`, clusters of the test's own) with `target_session_attrs=read-write`.
//! The primary is killed under write load and the standby promoted: the gateway writes again on
//! its own, answers every request meanwhile, and loses no acknowledged write (synchronous
//! replication). The catalog's URL follows its primary likewise. Every wait is bounded.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use secrecy::SecretString;
use serde_json::{Value, json};
use shardgate_tests::pg_cluster::PgCluster;
use shardgate_tests::{Backend, TestApp, encode_segment, eventually, expect_json, record_path};

/// How long the gateway may take to write again once a standby is promoted (measured: see
/// docs/operations.md, "Standbys and failover").
const WRITES_AGAIN_WITHIN: Duration = Duration::from_secs(10);

/// No request may take longer than this, whatever the shard does.
const ANSWERED_WITHIN: Duration = Duration::from_secs(20);

/// `postgres://postgres@127.0.0.1:<a>,127.0.0.1:<b>/<database>?target_session_attrs=read-write`.
fn url_of(hosts: &[&PgCluster], database: &str) -> String {
    let hosts: Vec<String> = hosts.iter().map(|c| format!("127.0.0.1:{}", c.port)).collect();
    format!("postgres://postgres@{}/{database}?target_session_attrs=read-write", hosts.join(","))
}

/// One write of the load: its key, its status (`None`: no answer within [`ANSWERED_WITHIN`]),
/// its problem code, and when it was answered.
#[derive(Debug, Clone)]
struct Write {
    key: String,
    status: Option<StatusCode>,
    code: Option<String>,
    at: Instant,
}

/// How long a test of this file may take in all.
const TEST_WITHIN: Duration = Duration::from_secs(180);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_promoted_standby_takes_the_writes_and_no_acknowledged_write_is_lost() {
    let run = promoted_standby_takes_the_writes();
    tokio::time::timeout(TEST_WITHIN, run).await.expect("the test ends within its bound");
}

async fn promoted_standby_takes_the_writes() {
    let primary = PgCluster::start_primary().await;
    primary.create_database("failover_shard").await;
    let standby = PgCluster::start_standby_of(&primary).await;
    primary.make_replication_synchronous().await;
    let app = TestApp::spawn_with_shard_at("shard-3", url_of(&[&primary, &standby], "failover_shard"), |_| {}).await;
    app.create_tenant_with(&json!({"id": "ha", "shard": "shard-3"})).await;
    let token = app.rw_token("ha");

    let writes = Arc::new(Mutex::new(Vec::<Write>::new()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut writers = tokio::task::JoinSet::new();
    for w in 0..4 {
        let (client, base, token, writes, stop) =
            (app.client.clone(), app.base_url.clone(), token.clone(), writes.clone(), stop.clone());
        writers.spawn(async move {
            for n in 0.. {
                if stop.load(std::sync::atomic::Ordering::SeqCst) {
                    break;
                }
                let key = format!("w{w}-{n}");
                let put = client
                    .put(format!("{base}{}", record_path("ha", "docs", &key)))
                    .bearer_auth(&token)
                    .json(&json!({"w": w, "n": n}))
                    .send();
                let (status, code) = match tokio::time::timeout(ANSWERED_WITHIN, put).await {
                    Ok(Ok(response)) => {
                        let status = response.status();
                        let body: Value = response.json().await.unwrap_or(Value::Null);
                        (Some(status), body["code"].as_str().map(str::to_owned))
                    }
                    Ok(Err(e)) => panic!("PUT {key}: the connection failed: {e}"),
                    Err(_) => (None, None),
                };
                let failed = status.is_none_or(|s| !s.is_success());
                writes.lock().unwrap().push(Write { key, status, code, at: Instant::now() });
                if failed {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        });
    }
    let acknowledged = || writes.lock().unwrap().iter().filter(|w| w.status.is_some_and(|s| s.is_success())).count();
    assert!(
        eventually(Duration::from_secs(10), async || (acknowledged() >= 20).then_some(())).await.is_some(),
        "writes go through before the failover"
    );

    primary.kill();
    // No host is read-write for a while: requests fail fast, none hangs.
    tokio::time::sleep(Duration::from_secs(1)).await;
    standby.promote();
    let promoted = Instant::now();
    let wrote_again = eventually(WRITES_AGAIN_WITHIN + Duration::from_secs(5), async || {
        writes
            .lock()
            .unwrap()
            .iter()
            .find(|w| w.at > promoted && w.status.is_some_and(|s| s.is_success()))
            .map(|w| w.at)
    })
    .await
    .expect("the gateway writes on the promoted standby");
    let took = wrote_again - promoted;
    eprintln!("writes again {took:?} after the promotion");
    assert!(took <= WRITES_AGAIN_WITHIN, "writes again within {WRITES_AGAIN_WITHIN:?}, not {took:?}");
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    while let Some(result) = writers.join_next().await {
        result.unwrap();
    }

    let writes = writes.lock().unwrap().clone();
    let unanswered: Vec<&Write> = writes.iter().filter(|w| w.status.is_none()).collect();
    assert!(unanswered.is_empty(), "every request is answered within {ANSWERED_WITHIN:?}: {unanswered:?}");
    // Refused before it was sent (503), or cut off on the dying primary (504
    // `write_outcome_unknown`: never acknowledged, so never counted as lost); nothing else.
    let odd: Vec<&Write> = writes
        .iter()
        .filter(|w| match w.status {
            Some(s) if s.is_success() || s == StatusCode::SERVICE_UNAVAILABLE => false,
            Some(StatusCode::GATEWAY_TIMEOUT) => w.code.as_deref() != Some("write_outcome_unknown"),
            _ => true,
        })
        .collect();
    assert!(odd.is_empty(), "a write fails only with 503, or 504 when cut off, while no primary serves: {odd:?}");
    let failed = writes.iter().filter(|w| w.status != Some(StatusCode::CREATED)).count();
    eprintln!("{} writes, {failed} refused during the failover", writes.len());

    // Every acknowledged write is on the new primary (read back by pages: a read per record
    // would meet the tenant's rate limit).
    let mut stored = HashMap::new();
    let mut cursor: Option<String> = None;
    for _ in 0..1000 {
        let query = match &cursor {
            Some(c) => format!("limit=1000&cursor={}", encode_segment(c)),
            None => "limit=1000".to_owned(),
        };
        let page = expect_json(app.list_records("ha", "docs", &query).await, StatusCode::OK).await;
        for item in page["items"].as_array().expect("a page's items") {
            stored.insert(item["key"].as_str().unwrap().to_owned(), item["value"].clone());
        }
        match &page["next_cursor"] {
            Value::String(next) => cursor = Some(next.clone()),
            _ => break,
        }
    }
    for write in writes.iter().filter(|w| w.status == Some(StatusCode::CREATED)) {
        let (w, n) = write.key.trim_start_matches('w').split_once('-').unwrap();
        let expected = json!({"w": w.parse::<u64>().unwrap(), "n": n.parse::<u64>().unwrap()});
        assert_eq!(stored.get(&write.key), Some(&expected), "acknowledged write {} is on the new primary", write.key);
    }
    let closed = async || {
        let shard = expect_json(app.admin(Method::GET, "/v1/admin/shards/shard-3", None).await, StatusCode::OK).await;
        (shard["breaker"]["state"] == "closed").then_some(())
    };
    assert!(eventually(Duration::from_secs(5), closed).await.is_some(), "the shard's breaker is closed again");
}

/// A URL that lists a standby first: the gateway finds the primary behind it from the start,
/// and a statement never runs on the standby.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_whose_first_host_is_a_standby_writes_on_the_primary() {
    tokio::time::timeout(TEST_WITHIN, standby_first()).await.expect("the test ends within its bound");
}

async fn standby_first() {
    let primary = PgCluster::start_primary().await;
    primary.create_database("standby_first").await;
    let standby = PgCluster::start_standby_of(&primary).await;
    let app = TestApp::spawn_with_shard_at("shard-3", url_of(&[&standby, &primary], "standby_first"), |_| {}).await;
    app.create_tenant_with(&json!({"id": "ha", "shard": "shard-3"})).await;
    for n in 0..5 {
        let status = if n == 0 { StatusCode::CREATED } else { StatusCode::OK };
        let written = expect_json(app.put_record("ha", "docs", "d", &json!({"n": n})).await, status).await;
        assert_eq!(written["value"]["n"], n);
    }
    let read = expect_json(app.get_record("ha", "docs", "d").await, StatusCode::OK).await;
    assert_eq!(read["value"]["n"], 4);
}

/// The catalog's URL names a primary and its standby likewise: once the primary is killed and
/// the standby promoted, admin changes are written again, and what was written before is there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_catalog_follows_its_promoted_standby() {
    tokio::time::timeout(TEST_WITHIN, catalog_follows()).await.expect("the test ends within its bound");
}

async fn catalog_follows() {
    let primary = PgCluster::start_primary().await;
    primary.create_database("failover_catalog").await;
    let standby = PgCluster::start_standby_of(&primary).await;
    primary.make_replication_synchronous().await;
    let url = url_of(&[&primary, &standby], "failover_catalog");
    let app = TestApp::spawn_with(Backend::Postgres, |config| {
        config.storage.catalog_url = Some(SecretString::from(url));
    })
    .await;
    app.create_tenant("before").await;

    primary.kill();
    standby.promote();
    let promoted = Instant::now();
    let created = async || {
        let response = app.admin(Method::POST, "/v1/admin/tenants", Some(&json!({"id": "after"}))).await;
        let status = response.status();
        // 409: an earlier try that was answered 503 or 504 did commit.
        let done = status.is_success() || status == StatusCode::CONFLICT;
        let waiting = [StatusCode::SERVICE_UNAVAILABLE, StatusCode::GATEWAY_TIMEOUT].contains(&status);
        assert!(
            done || waiting,
            "an admin change fails only with 503 or 504 while the catalog moves: {status} {}",
            response.text().await.unwrap_or_default()
        );
        done.then_some(())
    };
    assert!(eventually(WRITES_AGAIN_WITHIN, created).await.is_some(), "the catalog takes changes again");
    eprintln!("the catalog took a change {:?} after the promotion", promoted.elapsed());
    for tenant in ["before", "after"] {
        expect_json(app.admin(Method::GET, &format!("/v1/admin/tenants/{tenant}"), None).await, StatusCode::OK).await;
    }
    expect_json(app.put_record("after", "docs", "d", &json!({"n": 1})).await, StatusCode::CREATED).await;
}
