//! Cache-aside: hits, invalidation on write, single-flight, no stale reads across instances, and
//! Redis outages that cost no request and never bring an old value back.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::time::Duration;

use reqwest::StatusCode;
use secrecy::SecretString;
use serde_json::{Value, json};
use shardgate_api::Config;
use shardgate_tests::redis::{RedisCluster, Sentinels};
use shardgate_tests::{
    Backend, RedisServer, RunningServer, TestApp, eventually, expect_json, expect_problem, get_json, metric,
    record_path,
};

shardgate_tests::conformance!(reads_are_cached_and_every_write_invalidates);

/// Points the cache at `redis_url` with the app's own key prefix, L1 as given.
fn with_redis(config: &mut Config, redis_url: &str, prefix: &str, l1: bool) {
    config.cache.redis_url = Some(SecretString::from(redis_url.to_owned()));
    config.cache.key_prefix = prefix.to_owned();
    config.cache.l1.enabled = Some(l1);
}

async fn version_at(client: &reqwest::Client, base_url: &str, token: &str, key: &str) -> Result<i64, String> {
    let response = client
        .get(format!("{base_url}{}", record_path("acme", "hot", key)))
        .bearer_auth(token)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    match response.status() {
        StatusCode::OK => Ok(response.json::<Value>().await.map_err(|e| e.to_string())?["version"].as_i64().unwrap()),
        status => Err(format!("GET {key} answered {status}: {}", response.text().await.unwrap_or_default())),
    }
}

async fn put_version(
    client: &reqwest::Client,
    base_url: &str,
    token: &str,
    key: &str,
    n: usize,
) -> Result<i64, String> {
    let response = client
        .put(format!("{base_url}{}", record_path("acme", "hot", key)))
        .bearer_auth(token)
        .json(&json!({"n": n}))
        .send()
        .await
        .map_err(|e| e.to_string())?;
    match response.status() {
        StatusCode::OK | StatusCode::CREATED => {
            Ok(response.json::<Value>().await.map_err(|e| e.to_string())?["version"].as_i64().unwrap())
        }
        status => Err(format!("PUT {key} answered {status}: {}", response.text().await.unwrap_or_default())),
    }
}

/// `PUT url` with `token` and the JSON `value` (a record on another instance than `app`'s).
async fn put_at(client: &reqwest::Client, url: &str, token: &str, value: Value) -> reqwest::Response {
    client.put(url).bearer_auth(token).json(&value).send().await.unwrap()
}

/// The `cache` component's status in `base/readyz`: `up` or `degraded`.
async fn cache_status(client: &reqwest::Client, base: &str) -> String {
    let body: Value = client.get(format!("{base}/readyz")).send().await.unwrap().json().await.unwrap();
    body["components"]["cache"]["status"].as_str().unwrap().to_owned()
}

/// How many records of `tenant` the shard database of `shard` holds.
async fn records_on(app: &TestApp, shard: &str, tenant: &str) -> i64 {
    let (_, shard_url) = app.shard_urls().into_iter().find(|(id, _)| id == shard).unwrap();
    let pool = shardgate_tests::open_shard(&shard_url).await;
    let (count,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM records WHERE tenant = $1").bind(tenant).fetch_one(&pool).await.unwrap();
    pool.close().await;
    count
}

async fn reads_are_cached_and_every_write_invalidates(app: TestApp) {
    app.create_tenant("acme").await;
    expect_json(app.put_record("acme", "hot", "k", &json!({"v": 1})).await, StatusCode::CREATED).await;
    let hits_before = metric(&app.client, app.metrics_base(), "shardgate_cache_l1_hits_total").await;
    for _ in 0..3 {
        let body = expect_json(app.get_record("acme", "hot", "k").await, StatusCode::OK).await;
        assert_eq!(body["value"], json!({"v": 1}));
    }
    let hits = metric(&app.client, app.metrics_base(), "shardgate_cache_l1_hits_total").await - hits_before;
    match app.backend() {
        // The embedded default caches in L1.
        Backend::Sqlite => assert!(hits >= 2.0, "repeated reads are served from L1 (hits: {hits})"),
        // A shared catalog without Redis could run several instances: no L1 by default.
        Backend::Postgres => assert_eq!(hits, 0.0, "no L1 without Redis on a shared catalog"),
    }

    let updated = expect_json(app.put_record("acme", "hot", "k", &json!({"v": 2})).await, StatusCode::OK).await;
    let read = expect_json(app.get_record("acme", "hot", "k").await, StatusCode::OK).await;
    assert_eq!(read, updated, "a read after a write sees the write, never the cached value");

    assert_eq!(app.delete_record("acme", "hot", "k").await.status(), StatusCode::NO_CONTENT);
    expect_problem(app.get_record("acme", "hot", "k").await, StatusCode::NOT_FOUND, "record_not_found").await;
    // Not-found is not cached: a create right after is visible at once.
    let created = expect_json(app.put_record("acme", "hot", "k", &json!({"v": 3})).await, StatusCode::CREATED).await;
    assert_eq!(created["version"], 4);
    let read = expect_json(app.get_record("acme", "hot", "k").await, StatusCode::OK).await;
    assert_eq!(read, created);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_misses_for_one_key_reads_the_shard_once() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    app.create_tenant("acme").await;
    expect_json(app.put_record("acme", "hot", "cold", &json!({"v": 1})).await, StatusCode::CREATED).await;
    // The write invalidated the key; nothing has read it since.
    let loads_before = metric(&app.client, app.metrics_base(), "shardgate_cache_loads_total").await;
    let token = app.rw_token("acme");
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..32 {
        let (client, base, token) = (app.client.clone(), app.base_url.clone(), token.clone());
        tasks.spawn(async move { version_at(&client, &base, &token, "cold").await });
    }
    while let Some(result) = tasks.join_next().await {
        assert_eq!(result.unwrap(), Ok(1));
    }
    let loads = metric(&app.client, app.metrics_base(), "shardgate_cache_loads_total").await - loads_before;
    assert_eq!(loads, 1.0, "32 concurrent misses share one shard read");
}

/// Writers and readers hammer a few keys through `servers`; every read must return at least the
/// version of every write acknowledged before the read was sent.
async fn stress_no_stale_reads(app: &TestApp, servers: Vec<String>, writers: usize, readers: usize, rounds: usize) {
    const KEYS: [&str; 3] = ["a", "b", "c"];
    let token = app.rw_token("acme");
    let acked: Arc<Vec<AtomicI64>> = Arc::new(KEYS.iter().map(|_| AtomicI64::new(0)).collect());
    let servers = Arc::new(servers);
    let reads = Arc::new(AtomicUsize::new(0));
    let writing = Arc::new(AtomicUsize::new(writers));
    let mut tasks = tokio::task::JoinSet::new();
    for w in 0..writers {
        let (client, token, acked, servers, writing) =
            (app.client.clone(), token.clone(), acked.clone(), servers.clone(), writing.clone());
        tasks.spawn(async move {
            for round in 0..rounds {
                let k = (w + round) % KEYS.len();
                let server = &servers[(w + round) % servers.len()];
                let version = put_version(&client, server, &token, KEYS[k], round).await;
                let version = version.inspect_err(|_| {
                    writing.fetch_sub(1, Ordering::SeqCst);
                })?;
                acked[k].fetch_max(version, Ordering::SeqCst);
            }
            writing.fetch_sub(1, Ordering::SeqCst);
            Ok::<(), String>(())
        });
    }
    for r in 0..readers {
        let (client, token, acked, servers, reads, writing) =
            (app.client.clone(), token.clone(), acked.clone(), servers.clone(), reads.clone(), writing.clone());
        tasks.spawn(async move {
            // Read until every writer is done.
            for round in 0.. {
                if writing.load(Ordering::SeqCst) == 0 {
                    break;
                }
                let k = (r * 7 + round) % KEYS.len();
                let server = &servers[(r + round) % servers.len()];
                let floor = acked[k].load(Ordering::SeqCst);
                if floor == 0 {
                    tokio::task::yield_now().await;
                    continue;
                }
                let seen = version_at(&client, server, &token, KEYS[k]).await?;
                reads.fetch_add(1, Ordering::Relaxed);
                if seen < floor {
                    return Err(format!(
                        "stale read of {}: version {seen} after version {floor} was acknowledged",
                        KEYS[k]
                    ));
                }
            }
            Ok(())
        });
    }
    while let Some(result) = tasks.join_next().await {
        result.unwrap().unwrap();
    }
    let reads = reads.load(Ordering::Relaxed);
    assert!(reads >= writers * rounds, "the readers read while the writers wrote ({reads} reads)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_read_on_any_instance_is_older_than_an_acknowledged_write() {
    let prefix_holder = TestApp::spawn(Backend::Sqlite).await; // only for a unique prefix
    let prefix = prefix_holder.redis_prefix();
    drop(prefix_holder);
    no_stale_reads_across_instances(|c| with_redis(c, "redis://127.0.0.1:6379", &prefix, false)).await;
}

/// The same story over `rediss://` (a Redis of the test's own that speaks TLS only, its
/// certificate from a CA named by `cache.redis_ca_file`); a record read twice is filled into
/// Redis, where it lies as a record slot, and served from it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_read_on_any_instance_is_older_than_an_acknowledged_write_over_tls() {
    let ca = shardgate_tests::TestCa::new("redis CA");
    let redis = RedisServer::start_tls(&ca).await;
    let url = redis.url();
    assert!(url.starts_with("rediss://"), "{url}");
    let app = no_stale_reads_across_instances(|c| {
        with_redis(c, &url, "tls", false);
        c.cache.redis_ca_file = Some(ca.cert_path.clone());
    })
    .await;
    let hits_before = metric(&app.client, &app.base_url, "shardgate_cache_l2_hits_total").await;
    expect_json(app.put_record("acme", "hot", "filled", &json!({"v": 1})).await, StatusCode::CREATED).await;
    // The write's end reaches Redis after its acknowledgement (the ends are sent in batches by a
    // task of their own, `WriteEnds`); until it does, its mark keeps every read on the shard and
    // nothing is filled. So the reads go on until one is served from Redis, each one checked.
    let mut hits = 0.0;
    let served_from_redis = async || {
        expect_json(app.get_record("acme", "hot", "filled").await, StatusCode::OK).await;
        hits = metric(&app.client, &app.base_url, "shardgate_cache_l2_hits_total").await - hits_before;
        (hits >= 1.0).then_some(())
    };
    let served = eventually(Duration::from_secs(5), served_from_redis).await;
    assert!(served.is_some(), "a record read again is served from Redis over TLS (l2 hits: {hits})");
    let keys = redis.cli(&["--scan", "--pattern", "tls:*:r:acme:hot:filled"]);
    let key = keys.lines().next().unwrap_or_else(|| panic!("the record is cached in Redis: {keys:?}"));
    let slot = redis.cli(&["GETRANGE", key, "0", "1"]);
    assert_eq!(slot.trim(), "e:", "a record slot (e:<version>:<body>), not a marker");

    // Invalidation over TLS: a peer holding the record in its L1 hears of a write elsewhere
    // through Redis pub/sub.
    peer_l1_hears_of_a_write(&app, "filled", 1).await;
}

/// A peer of `app` with L1 on, holding `key` (at `version`) in its L1, hears of a write of it on
/// `app` through Redis pub/sub: its next reads serve the new version within 2 s.
async fn peer_l1_hears_of_a_write(app: &TestApp, key: &str, version: i64) {
    let peer = app.spawn_peer(|c| c.cache.l1.enabled = Some(true)).await;
    let up = async || (cache_status(&app.client, &peer.base_url).await == "up").then_some(());
    assert!(eventually(Duration::from_secs(5), up).await.is_some(), "the peer subscribes");
    let token = app.rw_token("acme");
    for _ in 0..3 {
        assert_eq!(version_at(&app.client, &peer.base_url, &token, key).await, Ok(version));
    }
    let l1_hits = metric(&app.client, &peer.base_url, "shardgate_cache_l1_hits_total").await;
    assert!(l1_hits >= 1.0, "the peer serves the record from its L1 (hits: {l1_hits})");
    let next = usize::try_from(version + 1).unwrap();
    assert_eq!(put_version(&app.client, &app.base_url, &token, key, next).await, Ok(version + 1));
    let invalidated =
        async || (version_at(&app.client, &peer.base_url, &token, key).await == Ok(version + 1)).then_some(());
    assert!(eventually(Duration::from_secs(2), invalidated).await.is_some(), "the peer's L1 entry is invalidated");
    peer.stop().await;
}

/// A Redis that requires client certificates (mutual TLS) takes the one configured in
/// `cache.redis_client_cert_file`; an instance without one is refused and says so.
#[tokio::test]
async fn a_redis_requiring_client_certificates_takes_the_configured_one() {
    let ca = shardgate_tests::TestCa::new("redis CA");
    let redis = RedisServer::start_tls_requiring_client_certificates(&ca).await;
    let client = ca.issue("gateway-client", &["shardgate"]);
    let url = redis.url();
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        with_redis(c, &url, "mtls", false);
        c.cache.redis_ca_file = Some(ca.cert_path.clone());
        c.cache.redis_client_cert_file = Some(client.cert_path.clone());
        c.cache.redis_client_key_file = Some(client.key_path.clone());
    })
    .await;
    let up = async || (cache_status(&app.client, &app.base_url).await == "up").then_some(());
    assert!(eventually(Duration::from_secs(5), up).await.is_some(), "mutual TLS with the configured certificate");
    let without = app
        .spawn_peer(|c| {
            c.cache.redis_client_cert_file = None;
            c.cache.redis_client_key_file = None;
        })
        .await;
    let refused = async || {
        let body: Value =
            app.client.get(format!("{}/readyz", without.base_url)).send().await.ok()?.json().await.ok()?;
        let cache = &body["components"]["cache"];
        (cache["status"] == "degraded" && cache["error"].is_string()).then_some(())
    };
    assert!(eventually(Duration::from_secs(5), refused).await.is_some(), "no client certificate: refused");
}

/// A Redis CA file that cannot be read, or is not PEM, stops start-up with the key's name.
#[tokio::test]
async fn an_unreadable_or_non_pem_redis_ca_file_stops_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = shardgate_tests::test_config(dir.path());
    config.cache.redis_url = Some(SecretString::from("rediss://localhost:6380".to_owned()));
    config.cache.redis_ca_file = Some(dir.path().join("missing-ca.crt"));
    let error = shardgate_api::Application::build(config.clone()).await.unwrap_err().to_string();
    assert!(error.starts_with("cache.redis_ca_file: cannot read") && error.contains("missing-ca.crt"), "{error}");
    let garbage = dir.path().join("garbage.crt");
    std::fs::write(&garbage, "hello").unwrap();
    config.cache.redis_ca_file = None;
    config.rate_limits.redis_url = Some(SecretString::from("rediss://localhost:6380".to_owned()));
    config.rate_limits.redis_ca_file = Some(garbage);
    let error = shardgate_api::Application::build(config).await.unwrap_err().to_string();
    assert!(error.contains("rate_limits.redis_ca_file") && error.contains("holds no PEM certificate"), "{error}");
}

/// A `rediss://` server whose certificate the configured CA does not sign is refused: the cache
/// degrades as in a Redis outage (reads go to the shards, nothing fails) and `/readyz` says why.
#[tokio::test]
async fn a_redis_certificate_from_another_ca_is_refused_and_the_cache_says_why() {
    let ca = shardgate_tests::TestCa::new("redis CA");
    let other = shardgate_tests::TestCa::new("another CA");
    let redis = RedisServer::start_tls(&ca).await;
    let url = redis.url();
    let app = TestApp::spawn_with(Backend::Postgres, |c| {
        with_redis(c, &url, "wrong-ca", false);
        c.cache.redis_ca_file = Some(other.cert_path.clone());
    })
    .await;
    app.create_tenant("acme").await;
    expect_json(app.put_record("acme", "hot", "k", &json!({"v": 1})).await, StatusCode::CREATED).await;
    expect_json(app.get_record("acme", "hot", "k").await, StatusCode::OK).await;
    let refused = async || {
        let body: Value = app.client.get(app.url("/readyz")).send().await.ok()?.json().await.ok()?;
        let cache = &body["components"]["cache"];
        (cache["status"] == "degraded" && cache["error"].is_string()).then(|| cache["error"].to_string())
    };
    let error = eventually(Duration::from_secs(5), refused).await.expect("the cache reports why it is degraded");
    assert!(error.contains("UnknownIssuer") && error.contains("not signed by the CA of redis_ca_file"), "{error}");
    assert!(!error.contains(&url), "no URL in the error: {error}");
    assert_eq!(metric(&app.client, &app.base_url, "shardgate_cache_l2_hits_total").await, 0.0);
    assert_eq!(redis.cli(&["DBSIZE"]).trim(), "0", "nothing reached Redis");
}

/// Writers and readers through two instances sharing the Redis `customize` configures (L1 off):
/// no read is older than an acknowledged write, and the stress went through Redis.
async fn no_stale_reads_across_instances(customize: impl FnOnce(&mut Config)) -> TestApp {
    let app = TestApp::spawn_with(Backend::Postgres, customize).await;
    let peer = app.spawn_peer(|_| {}).await;
    app.create_tenant("acme").await;
    let token = app.rw_token("acme");
    let mut last = Value::Null;
    let known = eventually(Duration::from_secs(2), async || {
        last = get_json(&app.client, &format!("{}{}", peer.base_url, record_path("acme", "hot", "a")), &token).await;
        (last["code"] == "record_not_found").then_some(())
    });
    assert!(known.await.is_some(), "the peer learns the new tenant: {last}");
    let up = async |base: &str| {
        let up = async || (cache_status(&app.client, base).await == "up").then_some(());
        assert!(eventually(Duration::from_secs(5), up).await.is_some(), "{base} connects to Redis");
    };
    up(&app.base_url).await;
    up(&peer.base_url).await;
    let servers = vec![app.base_url.clone(), peer.base_url.clone()];
    stress_no_stale_reads(&app, servers, 4, 8, 60).await;
    let l2_hits = metric(&app.client, &app.base_url, "shardgate_cache_l2_hits_total").await
        + metric(&app.client, &peer.base_url, "shardgate_cache_l2_hits_total").await;
    assert!(l2_hits > 0.0, "the stress went through Redis (l2 hits: {l2_hits})");
    peer.stop().await;
    app
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_read_through_l1_is_older_than_an_acknowledged_write() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    app.create_tenant("acme").await;
    stress_no_stale_reads(&app, vec![app.base_url.clone()], 4, 8, 60).await;
    assert!(metric(&app.client, &app.base_url, "shardgate_cache_l1_hits_total").await > 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_outage_fails_no_request_and_never_brings_an_old_value_back() {
    let mut redis = RedisServer::start().await;
    let redis_url = redis.url();
    let app = TestApp::spawn_with(Backend::Postgres, |c| with_redis(c, &redis_url, "outage", false)).await;
    // The peer keeps an L1 too: it must drop it when the generation moves on.
    let peer = app.spawn_peer(|c| c.cache.l1.enabled = Some(true)).await;
    app.create_tenant("acme").await;
    let token = app.rw_token("acme");
    let (client, a, b) = (app.client.clone(), app.base_url.clone(), peer.base_url.clone());
    assert!(
        eventually(Duration::from_secs(5), async || (cache_status(&client, &a).await == "up").then_some(()))
            .await
            .is_some()
    );

    // v1 is cached in Redis (read through both instances).
    assert_eq!(put_version(&client, &a, &token, "k", 1).await, Ok(1));
    assert_eq!(version_at(&client, &a, &token, "k").await, Ok(1));
    assert_eq!(version_at(&client, &b, &token, "k").await, Ok(1));

    // Redis freezes: it keeps v1 but answers nothing. Writes and reads keep succeeding.
    redis.pause();
    assert_eq!(put_version(&client, &a, &token, "k", 2).await, Ok(2), "a write succeeds while Redis is frozen");
    assert_eq!(version_at(&client, &a, &token, "k").await, Ok(2), "the writer reads its write at once");
    // The peer learns the new cache generation from the catalog within one poll (500 ms): the
    // documented bound while invalidations cannot reach Redis.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    for _ in 0..5 {
        assert_eq!(version_at(&client, &a, &token, "k").await, Ok(2), "while frozen, on the writer");
        assert_eq!(version_at(&client, &b, &token, "k").await, Ok(2), "while frozen, on the peer after a poll");
    }
    let status = client.get(format!("{a}/readyz")).send().await.unwrap().status();
    assert_eq!(status, StatusCode::OK, "a degraded cache does not make the instance unready");
    assert_eq!(cache_status(&client, &a).await, "degraded");

    // Redis thaws with v1 still in it: nobody may serve v1 again.
    redis.resume();
    assert!(
        eventually(Duration::from_secs(5), async || (cache_status(&client, &a).await == "up").then_some(()))
            .await
            .is_some(),
        "the cache is up again within 5 s of Redis thawing"
    );
    for _ in 0..10 {
        assert_eq!(version_at(&client, &a, &token, "k").await, Ok(2), "after the thaw, on the writer");
        assert_eq!(version_at(&client, &b, &token, "k").await, Ok(2), "after the thaw, on the peer");
    }

    // Redis dies mid-run under load: no request fails; it comes back empty and is used again.
    let failures = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut load = tokio::task::JoinSet::new();
    for i in 0..4 {
        let (client, token, failures) = (client.clone(), token.clone(), failures.clone());
        let base = if i % 2 == 0 { a.clone() } else { b.clone() };
        load.spawn(async move {
            for n in 0..60 {
                let failure = if n % 4 == 0 {
                    put_version(&client, &base, &token, "load", n).await.err()
                } else {
                    version_at(&client, &base, &token, "load").await.err().filter(|e| !e.contains("404"))
                };
                if let Some(failure) = failure {
                    failures.lock().unwrap().push(format!("request {n} to {base}: {failure}"));
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        });
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    redis.stop();
    tokio::time::sleep(Duration::from_millis(300)).await;
    redis.restart().await;
    while load.join_next().await.is_some() {}
    assert_eq!(*failures.lock().unwrap(), Vec::<String>::new(), "no request failed while Redis went away");
    for (instance, name) in [(&b, "the peer's"), (&a, "the first instance's")] {
        let up = async || (cache_status(&client, instance).await == "up").then_some(());
        assert!(eventually(Duration::from_secs(5), up).await.is_some(), "{name} cache is up again within 5 s");
    }
    let hits_before = metric(&client, &a, "shardgate_cache_l2_hits_total").await;
    for _ in 0..3 {
        assert_eq!(version_at(&client, &a, &token, "k").await, Ok(2));
    }
    let hits = metric(&client, &a, "shardgate_cache_l2_hits_total").await - hits_before;
    assert!(hits >= 1.0, "after reconnecting by itself the gateway uses Redis again");
    peer.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_instance_learns_a_new_shard_map_within_a_second() {
    let app = TestApp::spawn(Backend::Postgres).await;
    let peer = app.spawn_peer(|_| {}).await;
    let epoch_before = app.epoch().await;
    app.create_tenant("late").await;
    let token = app.rw_token("late");
    let started = std::time::Instant::now();
    let seen = eventually(Duration::from_secs(1), async || {
        let body = get_json(&app.client, &format!("{}{}", peer.base_url, record_path("late", "c", "k")), &token).await;
        (body["code"] == "record_not_found").then_some(())
    })
    .await;
    assert!(seen.is_some(), "the peer routes the new tenant within a second (waited {:?})", started.elapsed());
    let admin = app.admin_token();
    let map = get_json(&app.client, &format!("{}/v1/admin/shard-map", peer.base_url), &admin).await;
    assert!(map["epoch"].as_i64().unwrap() > epoch_before);
    peer.stop().await;
}

/// A gateway on PostgreSQL without Redis and a peer of it (which hears of map changes only by
/// polling, so it may be briefly behind), after the first write of a new tenant's record through
/// the peer.
struct WrittenThroughPeer {
    app: TestApp,
    peer: RunningServer,
    /// A read/write token of the tenant.
    token: String,
    /// The record `c/k` of the tenant, on the peer.
    url: String,
    /// The shard the gateway's route names for that record.
    shard: String,
}

/// Spawns both instances (so both know the map), creates `tenant` through the gateway (so the
/// peer's map is now old) and puts `value` at `c/k` through the peer: asserts 201 (`why`).
async fn first_write_through_a_peer(tenant: &str, value: Value, why: &str) -> WrittenThroughPeer {
    let app = TestApp::spawn(Backend::Postgres).await;
    let peer = app.spawn_peer(|_| {}).await;
    app.create_tenant(tenant).await;
    let token = app.rw_token(tenant);
    let url = format!("{}{}", peer.base_url, record_path(tenant, "c", "k"));
    let first = put_at(&app.client, &url, &token, value).await;
    assert_eq!(first.status(), StatusCode::CREATED, "{why}");
    let shard = app.route(tenant, "c", "k").await["shard"].as_str().unwrap().to_owned();
    WrittenThroughPeer { app, peer, token, url, shard }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_created_through_one_instance_is_usable_through_another_at_once() {
    let why = "an unknown tenant makes the instance check the catalog once";
    let WrittenThroughPeer { app, peer, shard, .. } = first_write_through_a_peer("fresh", json!({"x": 1}), why).await;
    assert_eq!(records_on(&app, &shard, "fresh").await, 1, "the write landed on the shard the route names");
    peer.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_on_an_old_map_cannot_write_to_a_shard_that_stopped_taking_writes() {
    let why = "the peer takes the first write";
    let WrittenThroughPeer { app, peer, token, url, shard } =
        first_write_through_a_peer("acme", json!({"v": 1}), why).await;

    // Read-only through the first instance; the peer writes right away, before its next poll.
    app.set_shard_state(&shard, "read_only").await;
    let refused = put_at(&app.client, &url, &token, json!({"v": 2})).await;
    expect_problem(refused, StatusCode::SERVICE_UNAVAILABLE, "shard_read_only").await;
    let delete = app.client.delete(&url).bearer_auth(&token).send().await.unwrap();
    expect_problem(delete, StatusCode::SERVICE_UNAVAILABLE, "shard_read_only").await;
    let read = expect_json(app.get_record("acme", "c", "k").await, StatusCode::OK).await;
    assert_eq!(read["value"], json!({"v": 1}), "the refused writes changed nothing");

    // Active again: the peer takes writes again once it has the new map (within a poll).
    app.set_shard_state(&shard, "active").await;
    let accepted = eventually(Duration::from_secs(1), async || {
        let response = put_at(&app.client, &url, &token, json!({"v": 3})).await;
        (response.status() == StatusCode::OK).then_some(())
    });
    assert!(accepted.await.is_some(), "the peer writes again within a second of the shard becoming active");
    peer.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_on_an_old_map_cannot_write_for_a_deleted_tenant() {
    let WrittenThroughPeer { app, peer, token, url, shard } =
        first_write_through_a_peer("gone", json!({"v": 1}), "the peer knows the tenant").await;

    let deleted = app.admin(reqwest::Method::DELETE, "/v1/admin/tenants/gone", None).await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    // The peer still has the tenant in its map: the shard's fence turns it away.
    let late = put_at(&app.client, &url, &token, json!({"v": 2})).await;
    expect_problem(late, StatusCode::NOT_FOUND, "tenant_not_found").await;

    assert_eq!(records_on(&app, &shard, "gone").await, 0, "nothing of the deleted tenant is left on its shard");

    // A new tenant with the same id starts empty.
    app.create_tenant("gone").await;
    expect_problem(app.get_record("gone", "c", "k").await, StatusCode::NOT_FOUND, "record_not_found").await;
    peer.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_dependency_costs_a_timeout_and_excess_load_is_shed() {
    let redis = RedisServer::start().await;
    let redis_url = redis.url();
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        with_redis(c, &redis_url, "hung", false);
        // Redis operations may take long; the request deadline and the concurrency limit bound it.
        c.cache.redis_timeout = Duration::from_secs(20);
        // Long enough that the hung requests are still in progress when the third one comes,
        // however loaded the machine is.
        c.limits.request_timeout = Duration::from_secs(8);
        c.limits.max_concurrent_requests = 2;
    })
    .await;
    app.create_tenant("acme").await;
    let token = app.rw_token("acme");
    let (client, base) = (app.client.clone(), app.base_url.clone());
    let ready = async || (cache_status(&client, &base).await == "up").then_some(());
    assert!(eventually(Duration::from_secs(5), ready).await.is_some());
    assert_eq!(put_version(&client, &base, &token, "k", 1).await, Ok(1));

    // A tenant may hold at most half of the instance: two tenants fill it.
    app.create_tenant("beta").await;
    let beta = app.rw_token("beta");

    redis.pause();
    let url = format!("{base}{}", record_path("acme", "hot", "k"));
    let hung: Vec<_> = [(url.clone(), token.clone()), (format!("{base}{}", record_path("beta", "hot", "k")), beta)]
        .into_iter()
        .map(|(url, token)| {
            let client = client.clone();
            tokio::spawn(async move { client.get(url).bearer_auth(token).send().await.unwrap() })
        })
        .collect();
    // Both hung requests hold their places (no guess of how long their admission takes).
    let admitted = async || (metric(&client, &base, "shardgate_http_requests_in_flight").await == 2.0).then_some(());
    assert!(eventually(Duration::from_secs(5), admitted).await.is_some(), "the two hung requests are in progress");
    // Refused at once: a request that waited for a place would end as a 504 when the hung ones
    // time out, not as a 503 `overloaded`.
    let shed = client.get(&url).bearer_auth(&token).send().await.unwrap();
    assert_eq!(shed.headers()["retry-after"], "1");
    expect_problem(shed, StatusCode::SERVICE_UNAVAILABLE, "overloaded").await;
    for request in hung {
        let response = request.await.unwrap();
        expect_problem(response, StatusCode::GATEWAY_TIMEOUT, "request_timeout").await;
    }
    redis.resume();
}

/// With Redis frozen every write's invalidation fails; the cache generation moves on once when
/// the outage begins, not once per write (a catalog write each), and no read after the thaw is
/// older than a write made during the outage.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_outage_moves_the_cache_generation_on_once_not_per_write() {
    let redis = RedisServer::start().await;
    let redis_url = redis.url();
    let app = TestApp::spawn_with(Backend::Postgres, |c| with_redis(c, &redis_url, "one-move", false)).await;
    app.create_tenant("acme").await;
    let (client, base, token) = (app.client.clone(), app.base_url.clone(), app.rw_token("acme"));
    let up = async || (cache_status(&client, &base).await == "up").then_some(());
    assert!(eventually(Duration::from_secs(5), up).await.is_some(), "the cache connects to Redis");
    let catalog = shardgate_tests::open_shard(&app.catalog_url()).await;
    let generation = async || {
        let (generation,): (i64,) =
            sqlx::query_as("SELECT cache_generation FROM shard_map WHERE id = 1").fetch_one(&catalog).await.unwrap();
        generation
    };
    let before = generation().await;

    redis.pause();
    let mut last = std::collections::BTreeMap::new();
    for n in 0..40 {
        let key = format!("k{}", n % 5);
        let version = put_version(&client, &base, &token, &key, n).await.expect("writes succeed while Redis is frozen");
        last.insert(key, version);
    }
    let moved = generation().await - before;
    assert_eq!(moved, 1, "40 writes during one outage moved the cache generation on {moved} times");

    redis.resume();
    assert!(eventually(Duration::from_secs(5), up).await.is_some(), "the cache is up again after the thaw");
    for (key, version) in &last {
        assert_eq!(version_at(&client, &base, &token, key).await, Ok(*version), "no older value after the thaw");
    }
    catalog.close().await;
}

/// A `rediss://` server whose certificate the configured CA does not sign: the very first
/// `/readyz` after start-up already says why the cache is degraded (the start waits for the
/// first connection attempt, bounded), not only a later one.
#[tokio::test]
async fn the_first_readyz_names_a_refused_redis_certificate() {
    let ca = shardgate_tests::TestCa::new("redis CA");
    let other = shardgate_tests::TestCa::new("another CA");
    let redis = RedisServer::start_tls(&ca).await;
    let url = redis.url();
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        with_redis(c, &url, "first-probe", false);
        c.cache.redis_ca_file = Some(other.cert_path.clone());
    })
    .await;
    let body: Value = app.client.get(app.url("/readyz")).send().await.unwrap().json().await.unwrap();
    let cache = &body["components"]["cache"];
    assert_eq!(cache["status"], "degraded", "{body}");
    let error = cache["error"].as_str().unwrap_or_else(|| panic!("the first /readyz names no error: {body}"));
    assert!(error.contains("UnknownIssuer"), "{error}");
}

/// Redis behind Sentinel: a master, its replica and three sentinels of the test's own. Two
/// instances find the master through the sentinels, and no read on either is older than an
/// acknowledged write. Then a write is acknowledged whose invalidation the replica never gets,
/// and the master is killed: reads go on while the sentinels promote the replica, none is
/// served the version before the write from it (the cache generation moves on with the master),
/// and once the failover is done the cache (and the shared rate limits) work on the new master.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_sentinel_the_cache_follows_a_failover_and_no_read_is_stale() {
    let run = sentinel_failover();
    tokio::time::timeout(Duration::from_secs(180), run).await.expect("the test ends within three minutes");
}

async fn sentinel_failover() {
    let mut master = RedisServer::start().await;
    let replica = RedisServer::start_replica_of(&master).await;
    let sentinels = Sentinels::start(&master, 1).await;
    let url = sentinels.url();
    let app = no_stale_reads_across_instances(|c| with_redis(c, &url, "sentinel", false)).await;
    let token = app.rw_token("acme");
    let (client, base) = (&app.client, app.base_url.as_str());

    // `x` at version 1 is cached on the master and replicated.
    assert_eq!(put_version(client, base, &token, "x", 1).await, Ok(1));
    let slot_on = |server: &RedisServer| {
        let key = server.cli(&["--scan", "--pattern", "sentinel:*:r:acme:hot:x"]);
        key.lines().next().map(|key| server.cli(&["GET", key]))
    };
    let replicated = async || {
        assert_eq!(version_at(client, base, &token, "x").await, Ok(1));
        slot_on(&replica).filter(|slot| slot.starts_with("e:1:")).map(|_| ())
    };
    assert!(eventually(Duration::from_secs(5), replicated).await.is_some(), "x at 1 is cached on both servers");
    // Version 2 is acknowledged while the replica hears nothing (frozen, its link cut by the
    // master): the write's end (a marker) reaches the master only, which dies before it
    // replicates it.
    replica.pause();
    master.cli(&["CLIENT", "KILL", "TYPE", "replica"]);
    assert_eq!(put_version(client, base, &token, "x", 2).await, Ok(2));
    let ended = async || slot_on(&master).filter(|slot| slot.starts_with("m:2")).map(|_| ());
    assert!(eventually(Duration::from_secs(5), ended).await.is_some(), "the write's end reached the master");
    master.stop();
    replica.resume();
    assert!(slot_on(&replica).is_some_and(|slot| slot.starts_with("e:1:")), "the replica still caches x at 1");

    // Reads go on through the failover, and none may be served version 1 from the new master.
    let promoted = async || (sentinels.master_port() == Some(replica.port)).then_some(());
    let ready = async || {
        let body: Value = client.get(format!("{base}/readyz")).send().await.ok()?.json().await.ok()?;
        let up = |c: &str| body["components"][c]["status"] == "up";
        (sentinels.master_port() == Some(replica.port) && up("cache") && up("rate_limits")).then_some(())
    };
    let reads = async {
        let mut reads = 0;
        loop {
            assert_eq!(version_at(client, base, &token, "x").await, Ok(2), "read {reads} during the failover");
            reads += 1;
            if ready().await.is_some() {
                return reads;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let (reads, promoted) = tokio::join!(
        tokio::time::timeout(Duration::from_secs(40), reads),
        eventually(Duration::from_secs(30), promoted)
    );
    assert!(promoted.is_some(), "the sentinels promote the replica");
    let reads = reads.expect("the cache and the limits use the new master within 40 s");
    cache_works_after_the_failover(&app, reads).await;
}

/// After a failover (`reads` made during it): `x` reads as version 2, no read is stale under the
/// stress, and a record read again is served from Redis.
async fn cache_works_after_the_failover(app: &TestApp, reads: usize) {
    let token = app.rw_token("acme");
    let (client, base) = (&app.client, app.base_url.as_str());
    for _ in 0..5 {
        assert_eq!(version_at(client, base, &token, "x").await, Ok(2), "after the failover ({reads} reads during it)");
    }
    stress_no_stale_reads(app, vec![app.base_url.clone()], 2, 4, 30).await;
    let hits_before = metric(client, base, "shardgate_cache_l2_hits_total").await;
    let served_from_redis = async || {
        assert_eq!(version_at(client, base, &token, "x").await, Ok(2));
        let hits = metric(client, base, "shardgate_cache_l2_hits_total").await - hits_before;
        (hits >= 1.0).then_some(())
    };
    assert!(
        eventually(Duration::from_secs(10), served_from_redis).await.is_some(),
        "reads are served from Redis after the failover"
    );
}

/// The cache through a Redis Cluster (three masters with a replica each): two instances read
/// nothing stale, and an instance's L1 hears of writes elsewhere through the cluster. Then the
/// master of a cached record dies holding the marker of its acknowledged write, which its
/// replica never received: when the replica takes over, no read is served the entry it still
/// holds, and the cache works on the new master.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_a_cluster_the_cache_follows_a_failover_and_no_read_is_stale() {
    let run = cluster_failover();
    tokio::time::timeout(Duration::from_secs(180), run).await.expect("the test ends within three minutes");
}

async fn cluster_failover() {
    let mut cluster = RedisCluster::start().await;
    let url = cluster.url();
    let app = no_stale_reads_across_instances(|c| with_redis(c, &url, "cluster", false)).await;
    let token = app.rw_token("acme");
    let (client, base) = (&app.client, app.base_url.as_str());
    // Invalidations published through the cluster reach a peer subscribed on any node.
    assert_eq!(put_version(client, base, &token, "y", 0).await, Ok(1));
    peer_l1_hears_of_a_write(&app, "y", 1).await;

    // `x` at version 1 is cached on its master and replicated.
    assert_eq!(put_version(client, base, &token, "x", 1).await, Ok(1));
    let cached_key = async || {
        assert_eq!(version_at(client, base, &token, "x").await, Ok(1));
        let found = cluster.live_nodes().find_map(|n| {
            let keys = n.cli(&["--scan", "--pattern", "cluster:*:r:acme:hot:x"]);
            keys.lines().next().map(str::to_owned)
        })?;
        let (master, _) = cluster.serving(&found)?;
        let node = &cluster.nodes[cluster.index_of(master)];
        node.cli(&["GET", &found]).starts_with("e:1:").then_some(found)
    };
    let key = eventually(Duration::from_secs(5), cached_key).await.expect("x at 1 is cached");
    let (master, replicas) = cluster.serving(&key).expect("a master serves x's slot");
    let (m, r) = (cluster.index_of(master), cluster.index_of(replicas[0]));
    assert_eq!(cluster.nodes[m].cli(&["WAIT", "1", "5000"]).trim(), "1", "the replica has x at 1");

    // Version 2 is acknowledged while the replica hears nothing (frozen, its link cut by the
    // master): the write's end (a marker) reaches the master only, which dies before it
    // replicates it.
    cluster.nodes[r].pause();
    cluster.nodes[m].cli(&["CLIENT", "KILL", "TYPE", "replica"]);
    assert_eq!(put_version(client, base, &token, "x", 2).await, Ok(2));
    let ended = async || cluster.nodes[m].cli(&["GET", &key]).starts_with("m:2").then_some(());
    assert!(eventually(Duration::from_secs(5), ended).await.is_some(), "the write's end reached the master");
    cluster.nodes[m].stop();
    cluster.nodes[r].resume();

    // Reads go on through the failover, and none may be served version 1 from the new master.
    let promoted = async || (cluster.serving(&key).map(|(port, _)| port) == Some(replicas[0])).then_some(());
    let ready = async || {
        let body: Value = client.get(format!("{base}/readyz")).send().await.ok()?.json().await.ok()?;
        (body["components"]["cache"]["status"] == "up").then_some(())
    };
    let reads = async {
        let mut reads = 0;
        let mut promoted_seen = false;
        loop {
            assert_eq!(version_at(client, base, &token, "x").await, Ok(2), "read {reads} during the failover");
            reads += 1;
            promoted_seen = promoted_seen || promoted().await.is_some();
            if promoted_seen && ready().await.is_some() {
                return reads;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let reads = tokio::time::timeout(Duration::from_secs(60), reads)
        .await
        .expect("the replica is promoted and the cache uses the cluster again within 60 s");
    cache_works_after_the_failover(&app, reads).await;
}
