//! Reads from standbys (`storage.replica_reads`): a shard's URL names its primary and a
//! streaming standby (clusters of the test's own, the standby held back by
//! `recovery_min_apply_delay`). Under write load a bounded read is never older than its bound,
//! a read that brings back a write's position token never older than that write, and with the
//! standby frozen or killed the reads fall back to the primary, each answered. Every wait is
//! bounded.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};
use shardgate_tests::pg_cluster::PgCluster;
use shardgate_tests::{Backend, TestApp, expect_json, record_path};

/// How long a test of this file may take in all.
const TEST_WITHIN: Duration = Duration::from_secs(180);

/// How far the standby is held behind the primary.
const APPLY_DELAY: Duration = Duration::from_secs(2);

/// No request may take longer than this, whatever the standby does.
const ANSWERED_WITHIN: Duration = Duration::from_secs(10);

/// One bounded read: when it was sent, the counter it saw (`None`: 404), and what served it.
#[derive(Debug, Clone)]
struct Read {
    sent: Instant,
    max_lag: Duration,
    seen: Option<u64>,
    from: String,
}

/// `GET` of `key` with `x-shardgate-consistency` set to `consistency` (and `position`, if any):
/// its status, the record's `n` and `x-shardgate-read-from`.
async fn read(
    client: &reqwest::Client,
    url: &str,
    token: &str,
    consistency: &str,
    position: Option<&str>,
) -> (StatusCode, Option<u64>, String) {
    let mut request = client.get(url).bearer_auth(token).header("x-shardgate-consistency", consistency);
    if let Some(position) = position {
        request = request.header("x-shardgate-position", position);
    }
    let response = tokio::time::timeout(ANSWERED_WITHIN, request.send())
        .await
        .unwrap_or_else(|_| panic!("a read is answered within {ANSWERED_WITHIN:?}"))
        .expect("the read is sent");
    let status = response.status();
    let from = response.headers().get("x-shardgate-read-from").map(|v| v.to_str().unwrap().to_owned());
    let body: Value = response.json().await.unwrap_or(Value::Null);
    (status, body["value"]["n"].as_u64(), from.unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bounded_reads_from_a_lagging_standby_are_never_older_than_their_bound_or_the_write_they_bring_back() {
    tokio::time::timeout(TEST_WITHIN, bounded_reads()).await.expect("the test ends within its bound");
}

async fn bounded_reads() {
    let primary = PgCluster::start_primary().await;
    primary.create_database("replica_reads").await;
    let standby = PgCluster::start_standby_of(&primary).await;
    standby.reconfigure(&format!("recovery_min_apply_delay = '{}ms'\n", APPLY_DELAY.as_millis()));
    let url = format!(
        "postgres://postgres@127.0.0.1:{},127.0.0.1:{}/replica_reads?target_session_attrs=read-write",
        primary.port, standby.port
    );
    let app = TestApp::spawn_with_shard_at("shard-3", url, |config| {
        config.storage.replica_reads.enabled = true;
        config.storage.replica_reads.poll_interval = Duration::from_millis(50);
        config.storage.pool.probe_timeout = Duration::from_secs(1);
        // Every read reaches the shard: the record cache would answer most of them.
        config.cache.enabled = false;
    })
    .await;
    let unlimited = json!({"per_second": 1_000_000, "burst": 1_000_000});
    app.create_tenant_with(&json!({"id": "rr", "shard": "shard-3", "rate_limit": unlimited})).await;
    let token = app.rw_token("rr");
    let counter_url = format!("{}{}", app.base_url, record_path("rr", "docs", "counter"));

    // One writer counts up; each acknowledged value is noted with when it was acknowledged.
    let acked = Arc::new(Mutex::new(Vec::<(u64, Instant)>::new()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (client, url, token, acked, stop) =
            (app.client.clone(), counter_url.clone(), token.clone(), acked.clone(), stop.clone());
        tokio::spawn(async move {
            for n in 1.. {
                if stop.load(std::sync::atomic::Ordering::SeqCst) {
                    break;
                }
                let put = client.put(&url).bearer_auth(&token).json(&json!({"n": n})).send();
                let response = tokio::time::timeout(ANSWERED_WITHIN, put).await.expect("a write is answered").unwrap();
                assert!(response.status().is_success(), "write {n}: {}", response.status());
                assert!(response.headers().contains_key("x-shardgate-position"), "a write names its position");
                acked.lock().unwrap().push((n, Instant::now()));
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    };
    // The newest value acknowledged before `at`.
    let newest_before =
        |at: Instant| acked.lock().unwrap().iter().filter(|(_, when)| *when < at).map(|(n, _)| *n).max().unwrap_or(0);

    let first_acked = shardgate_tests::eventually(Duration::from_secs(10), async || {
        (!acked.lock().unwrap().is_empty()).then_some(())
    });
    assert!(first_acked.await.is_some(), "the first write is acknowledged");

    // Readers with a tight and a loose bound, for a while.
    let reads = Arc::new(Mutex::new(Vec::<Read>::new()));
    let mut readers = tokio::task::JoinSet::new();
    for max_lag in [Duration::from_millis(500), Duration::from_secs(5)] {
        let (client, url, token, reads) = (app.client.clone(), counter_url.clone(), token.clone(), reads.clone());
        readers.spawn(async move {
            let consistency = format!("bounded; max-lag={}ms", max_lag.as_millis());
            let until = Instant::now() + Duration::from_secs(8);
            while Instant::now() < until {
                let sent = Instant::now();
                let (status, seen, from) = read(&client, &url, &token, &consistency, None).await;
                assert_eq!(status, StatusCode::OK, "a bounded read of a record written before it");
                reads.lock().unwrap().push(Read { sent, max_lag, seen, from });
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        });
    }

    // Meanwhile: a record written and read back at once, without and with its position token.
    let mut own_stale_from_standby = 0;
    let mut own_reads = 0;
    let started = Instant::now();
    for k in 0..40 {
        let url = format!("{}{}", app.base_url, record_path("rr", "own", &format!("k{k}")));
        let put = app.client.put(&url).bearer_auth(&token).json(&json!({"n": k})).send().await.unwrap();
        assert_eq!(put.status(), StatusCode::CREATED);
        let position = put.headers()["x-shardgate-position"].to_str().unwrap().to_owned();
        assert!(position.starts_with("shard-3:"), "the token names the shard written: {position}");
        // The primary has the record: a 404 can only be a standby's, within the bound.
        let (status, _, _) = read(&app.client, &url, &token, "bounded; max-lag=5s", None).await;
        if status == StatusCode::NOT_FOUND {
            own_stale_from_standby += 1;
        }
        let (status, seen, from) = read(&app.client, &url, &token, "bounded; max-lag=5s", Some(&position)).await;
        assert_eq!((status, seen), (StatusCode::OK, Some(k)), "a read with the write's token sees it (from {from})");
        own_reads += 1;
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    eprintln!("{own_reads} reads with their write's token, {own_stale_from_standby} without it missed the record");
    assert!(
        own_stale_from_standby > 0,
        "without the token a standby {APPLY_DELAY:?} behind misses a record just written (else this test shows nothing)"
    );
    while let Some(result) = readers.join_next().await {
        result.unwrap();
    }
    assert!(started.elapsed() < Duration::from_secs(60));

    // Every bounded read saw at least what was acknowledged `max_lag` before it was sent.
    let reads = reads.lock().unwrap().clone();
    let mut stale_within_bound = 0;
    for r in &reads {
        let floor = newest_before(r.sent - r.max_lag);
        let seen = r.seen.unwrap_or(0);
        assert!(
            seen >= floor,
            "a read bounded by {:?} from the {} saw {seen}, but {floor} was acknowledged {:?} before it",
            r.max_lag,
            r.from,
            r.max_lag
        );
        if r.from == "standby" && seen < newest_before(r.sent) {
            stale_within_bound += 1;
        }
    }
    let by = |lag: Duration, from: &str| reads.iter().filter(|r| r.max_lag == lag && r.from == from).count();
    let (tight, loose) = (Duration::from_millis(500), Duration::from_secs(5));
    eprintln!(
        "bounded by 500 ms: {} from the standby, {} from the primary; by 5 s: {} from the standby, {} from the primary; {stale_within_bound} older than the newest write",
        by(tight, "standby"),
        by(tight, "primary"),
        by(loose, "standby"),
        by(loose, "primary"),
    );
    assert_eq!(by(tight, "standby"), 0, "a standby {APPLY_DELAY:?} behind serves no read bounded by 500 ms");
    assert!(by(loose, "standby") > 0, "the standby serves reads bounded by 5 s");
    assert!(stale_within_bound > 0, "some standby reads were older than the newest write (the standby does lag)");

    // `/metrics` counts them by what served them.
    let text = app.client.get(format!("{}/metrics", app.metrics_base())).send().await.unwrap().text().await.unwrap();
    let served = |by: &str| {
        let series = format!("shardgate_shard_bounded_reads_total{{shard=\"shard-3\",served_by=\"{by}\"}} ");
        text.lines().find_map(|line| line.strip_prefix(series.as_str())?.trim().parse::<f64>().ok()).unwrap_or(-1.0)
    };
    assert!(served("standby") >= by(loose, "standby") as f64, "standby reads counted: {}", served("standby"));
    assert!(served("primary") >= by(tight, "primary") as f64, "primary reads counted: {}", served("primary"));
    assert!(served("primary_after_standby_failed") >= 0.0, "the fallbacks have a series");

    // A bounded listing is served by the standby too, and holds what was written 5 s before.
    tokio::time::sleep(APPLY_DELAY + Duration::from_millis(500)).await;
    let listing = app
        .client
        .get(format!("{}/v1/tenants/rr/collections/own/records?limit=100", app.base_url))
        .bearer_auth(&token)
        .header("x-shardgate-consistency", "bounded; max-lag=5s")
        .send()
        .await
        .unwrap();
    assert_eq!(listing.headers()["x-shardgate-read-from"], "standby");
    let page = expect_json(listing, StatusCode::OK).await;
    assert_eq!(page["items"].as_array().unwrap().len(), 40, "{page}");

    // The standby frozen, then killed: bounded reads are answered by the primary.
    for (what, act) in [("frozen", 0), ("killed", 1)] {
        if act == 0 {
            standby.freeze();
        } else {
            standby.thaw();
            standby.kill();
        }
        let since = Instant::now();
        let mut last_from = String::new();
        while since.elapsed() < Duration::from_secs(4) {
            let sent = Instant::now();
            let (status, seen, from) = read(&app.client, &counter_url, &token, "bounded; max-lag=5s", None).await;
            assert_eq!(status, StatusCode::OK, "the standby {what}: a bounded read is answered");
            assert!(seen.unwrap() >= newest_before(sent - Duration::from_secs(5)));
            last_from = from;
        }
        assert_eq!(last_from, "primary", "the standby {what}: the primary serves the reads");
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    writer.await.unwrap();
}

/// Without standbys (the embedded default here), a bounded read is the primary's and a write
/// names no position; a malformed header is refused with a clear problem.
#[tokio::test]
async fn without_standbys_a_bounded_read_is_the_primarys_and_bad_headers_are_refused() {
    let app = TestApp::spawn_with(Backend::Sqlite, events_bounded).await;
    bounded_reads_without_standbys(app).await;
}

/// Through the standalone gatekeeper likewise: the consistency and position headers reach the
/// backend, and what served the read reaches the client (other `x-shardgate-` headers of a
/// client are dropped).
#[tokio::test]
async fn through_the_gatekeeper_the_headers_of_bounded_reads_pass_both_ways() {
    let app = TestApp::spawn_via_gatekeeper_with(Backend::Sqlite, events_bounded).await;
    bounded_reads_without_standbys(app).await;
}

/// The cache off (every read reaches the shard), and reads of `events` bounded by default.
fn events_bounded(config: &mut shardgate_api::Config) {
    config.cache.enabled = false;
    config.storage.replica_reads.collections.insert("events".to_owned(), Duration::from_secs(2));
}

async fn bounded_reads_without_standbys(app: TestApp) {
    app.create_tenant("plain").await;
    let token = app.rw_token("plain");
    let url = format!("{}{}", app.base_url, record_path("plain", "docs", "a"));
    let put = app.client.put(&url).bearer_auth(&token).json(&json!({"n": 1})).send().await.unwrap();
    assert_eq!(put.status(), StatusCode::CREATED);
    assert!(!put.headers().contains_key("x-shardgate-position"), "no standbys, no position");
    let (status, seen, from) = read(&app.client, &url, &token, "bounded", Some("shard-0:0/1")).await;
    assert_eq!((status, seen, from.as_str()), (StatusCode::OK, Some(1), "primary"));
    let strong = app.client.get(&url).bearer_auth(&token).send().await.unwrap();
    assert!(!strong.headers().contains_key("x-shardgate-read-from"), "a strong read says nothing of it");
    // A collection bounded by default: a read without the header is a bounded one, `strong`
    // is not.
    let event = format!("{}{}", app.base_url, record_path("plain", "events", "e"));
    let put = app.client.put(&event).bearer_auth(&token).json(&json!({"n": 2})).send().await.unwrap();
    assert_eq!(put.status(), StatusCode::CREATED);
    let by_default = app.client.get(&event).bearer_auth(&token).send().await.unwrap();
    assert_eq!(by_default.headers()["x-shardgate-read-from"], "primary", "bounded by default");
    let (status, seen, from) = read(&app.client, &event, &token, "strong", None).await;
    assert_eq!((status, seen, from.as_str()), (StatusCode::OK, Some(2), ""), "`strong` overrides the default");
    for (header, value) in [
        ("x-shardgate-consistency", "eventual"),
        ("x-shardgate-consistency", "bounded; max-lag=0s"),
        ("x-shardgate-consistency", "bounded; max-lag=10m"),
    ] {
        let refused = app.client.get(&url).bearer_auth(&token).header(header, value).send().await.unwrap();
        let problem = expect_json(refused, StatusCode::BAD_REQUEST).await;
        assert_eq!(problem["code"], "invalid_header", "{value}");
        assert!(problem["detail"].as_str().unwrap().contains("x-shardgate-consistency"), "{problem}");
    }
    let refused = app
        .client
        .get(format!("{}/v1/tenants/plain/collections/docs/records", app.base_url))
        .bearer_auth(&token)
        .header("x-shardgate-consistency", "bounded")
        .header("x-shardgate-position", "not a token")
        .send()
        .await
        .unwrap();
    let problem = expect_json(refused, StatusCode::BAD_REQUEST).await;
    assert!(problem["detail"].as_str().unwrap().contains("x-shardgate-position"), "{problem}");
}
