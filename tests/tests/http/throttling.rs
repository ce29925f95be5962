//! Throttling: per-tenant limits by tier and by override, 429 with `Retry-After` and the
//! `RateLimit` fields, per-IP limits without a token, one limit shared by several instances through
//! Redis, and the in-process fallback when Redis does not answer.

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use secrecy::SecretString;
use serde_json::{Value, json};
use shardgate_api::Config;
use shardgate_gatekeeper::throttle::RateLimit;
use shardgate_tests::{
    Backend, RedisServer, RunningServer, TestApp, eventually, expect_json, expect_problem, metric, records_path,
};

async fn list(app: &TestApp, base_url: &str, token: &str, tenant: &str) -> reqwest::Response {
    app.client.get(format!("{base_url}{}", records_path(tenant, "docs"))).bearer_auth(token).send().await.unwrap()
}

async fn set_rate_limit(app: &TestApp, tenant: &str, limit: Value) -> Value {
    let response =
        app.admin(Method::PATCH, &format!("/v1/admin/tenants/{tenant}"), Some(&json!({"rate_limit": limit}))).await;
    expect_json(response, StatusCode::OK).await
}

fn with_redis(config: &mut Config, url: &str) {
    config.rate_limits.redis_url = Some(SecretString::from(url.to_owned()));
}

/// Waits until `base_url` takes its rate-limit decisions in Redis (it connects in the background;
/// until then it decides alone).
async fn until_limits_shared(app: &TestApp, base_url: &str) {
    let shared = async || {
        let body: Value = app.client.get(format!("{base_url}/readyz")).send().await.ok()?.json().await.ok()?;
        (body["components"]["rate_limits"]["status"] == "up").then_some(())
    };
    assert!(eventually(Duration::from_secs(5), shared).await.is_some(), "rate limits use Redis");
}

/// Sends `n` listings and counts the statuses.
async fn burst(app: &TestApp, base_url: &str, token: &str, tenant: &str, n: usize) -> (usize, usize) {
    let (mut ok, mut limited) = (0, 0);
    for _ in 0..n {
        match list(app, base_url, token, tenant).await.status() {
            StatusCode::OK => ok += 1,
            StatusCode::TOO_MANY_REQUESTS => limited += 1,
            other => panic!("unexpected {other}"),
        }
    }
    (ok, limited)
}

#[tokio::test]
async fn a_tenant_over_its_limit_gets_429_and_others_are_untouched() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    app.create_tenant("acme").await;
    app.create_tenant("bob").await;
    let tenant = set_rate_limit(&app, "acme", json!({"per_second": 1, "burst": 3})).await;
    assert_eq!(tenant["rate_limit"], json!({"per_second": 1, "burst": 3}));
    assert_eq!(tenant["effective_rate_limit"], json!({"per_second": 1, "burst": 3}));
    let (acme, bob) = (app.rw_token("acme"), app.rw_token("bob"));

    let first = list(&app, &app.base_url, &acme, "acme").await;
    assert_eq!(first.status(), StatusCode::OK);
    assert_eq!(first.headers()["ratelimit-policy"], "\"tenant\";q=3;w=3");
    assert_eq!(first.headers()["ratelimit"], "\"tenant\";r=2;t=1");
    expect_json(list(&app, &app.base_url, &acme, "acme").await, StatusCode::OK).await;
    expect_json(list(&app, &app.base_url, &acme, "acme").await, StatusCode::OK).await;
    let refused = list(&app, &app.base_url, &acme, "acme").await;
    assert_eq!(refused.headers()["retry-after"], "1");
    assert_eq!(refused.headers()["ratelimit"], "\"tenant\";r=0;t=1");
    assert_eq!(refused.headers()["ratelimit-policy"], "\"tenant\";q=3;w=3");
    let problem = expect_problem(refused, StatusCode::TOO_MANY_REQUESTS, "rate_limited").await;
    assert!(problem["detail"].as_str().unwrap().contains("tenant acme"), "{problem}");

    // Another tenant keeps its own budget (the standard tier's).
    let other = list(&app, &app.base_url, &bob, "bob").await;
    assert_eq!(other.status(), StatusCode::OK);
    assert_eq!(other.headers()["ratelimit-policy"], "\"tenant\";q=2000;w=2");

    // A token of acme aimed at bob's data still spends acme's budget (and is told nothing of bob).
    let cross = list(&app, &app.base_url, &acme, "bob").await;
    expect_problem(cross, StatusCode::TOO_MANY_REQUESTS, "rate_limited").await;

    // One request per second comes back.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    expect_json(list(&app, &app.base_url, &acme, "acme").await, StatusCode::OK).await;
    assert_eq!(metric(&app.client, &app.base_url, "shardgate_rate_limited_total").await, 2.0);
}

#[tokio::test]
async fn tier_limits_apply_until_an_override_and_come_back_when_it_is_removed() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.rate_limits.tiers.insert("free".into(), RateLimit { per_second: 1, burst: 2 });
    })
    .await;
    app.create_tenant_with(&json!({"id": "acme", "tier": "free"})).await;
    let token = app.rw_token("acme");
    assert_eq!(burst(&app, &app.base_url, &token, "acme", 4).await, (2, 2));

    // An override raises the limit at once (the in-memory map changes with the catalog).
    let tenant = set_rate_limit(&app, "acme", json!({"per_second": 100, "burst": 50})).await;
    assert_eq!(tenant["effective_rate_limit"], json!({"per_second": 100, "burst": 50}));
    let (ok, _) = burst(&app, &app.base_url, &token, "acme", 20).await;
    assert_eq!(ok, 20);

    // `null` removes it: the free tier's limit applies again.
    let tenant = set_rate_limit(&app, "acme", Value::Null).await;
    assert_eq!(tenant["rate_limit"], Value::Null);
    assert_eq!(tenant["effective_rate_limit"], json!({"per_second": 1, "burst": 2}));
    let response = list(&app, &app.base_url, &token, "acme").await;
    assert_eq!(response.headers()["ratelimit-policy"], "\"tenant\";q=2;w=2");

    // Nonsense limits are refused and change nothing.
    for bad in [json!({"per_second": 0, "burst": 1}), json!({"per_second": 1}), json!({"per_second": -1, "burst": 1})] {
        let response = app.admin(Method::PATCH, "/v1/admin/tenants/acme", Some(&json!({"rate_limit": bad}))).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{bad}");
    }
    let audit = expect_json(app.admin(Method::GET, "/v1/admin/audit?limit=1000", None).await, StatusCode::OK).await;
    let updates = audit["items"].as_array().unwrap().iter().filter(|e| e["action"] == "tenant.update").count();
    assert_eq!(updates, 2, "each accepted change is audited, refused ones are not");
}

#[tokio::test]
async fn requests_without_a_valid_token_are_limited_per_client_ip_but_probes_never_are() {
    let app =
        TestApp::spawn_with(Backend::Sqlite, |c| c.rate_limits.anonymous = RateLimit { per_second: 1, burst: 3 }).await;
    let statuses = async |authorization: Option<&str>| {
        let mut request = app.client.get(app.url(&records_path("acme", "docs")));
        if let Some(value) = authorization {
            request = request.header("authorization", value);
        }
        request.send().await.unwrap()
    };
    for _ in 0..3 {
        assert_eq!(statuses(Some("Bearer not-a-token")).await.status(), StatusCode::UNAUTHORIZED);
    }
    let refused = statuses(None).await;
    assert_eq!(refused.headers()["ratelimit-policy"], "\"client\";q=3;w=3");
    let problem = expect_problem(refused, StatusCode::TOO_MANY_REQUESTS, "rate_limited").await;
    assert!(problem["detail"].as_str().unwrap().contains("127.0.0.1"), "{problem}");
    let docs = app.client.get(app.url("/openapi.json")).send().await.unwrap();
    assert_eq!(docs.status(), StatusCode::TOO_MANY_REQUESTS);

    for path in ["/healthz", "/readyz", "/metrics"] {
        for _ in 0..5 {
            let response = app.client.get(app.url(path)).send().await.unwrap();
            assert_eq!(response.status(), StatusCode::OK, "{path}");
            assert!(response.headers().get("ratelimit").is_none(), "{path}");
        }
    }
    // A valid token is limited by its tenant, not by the address it shares with the flood.
    app.create_tenant("acme").await;
    expect_json(statuses(Some(&format!("Bearer {}", app.rw_token("acme")))).await, StatusCode::OK).await;
}

#[tokio::test]
async fn two_instances_share_one_tenant_limit_through_redis() {
    let redis = RedisServer::start().await;
    let url = redis.url();
    share_one_tenant_limit(|c| with_redis(c, &url)).await;
}

/// The same shared limit over `rediss://`, the server's certificate from a CA named by
/// `rate_limits.redis_ca_file`.
#[tokio::test]
async fn two_instances_share_one_tenant_limit_through_redis_over_tls() {
    let ca = shardgate_tests::TestCa::new("redis CA");
    let redis = RedisServer::start_tls(&ca).await;
    let url = redis.url();
    share_one_tenant_limit(|c| {
        with_redis(c, &url);
        c.rate_limits.redis_ca_file = Some(ca.cert_path.clone());
    })
    .await;
    assert!(!redis.cli(&["--scan", "--pattern", "*-rl:t:*:acme"]).trim().is_empty(), "the bucket lives in Redis");
}

/// The shared limit through Sentinel, before and after the master fails over: the limits find
/// the new master by themselves, and the two instances share the tenant's limit again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_share_one_tenant_limit_through_sentinel_across_a_failover() {
    let mut master = RedisServer::start().await;
    let replica = RedisServer::start_replica_of(&master).await;
    let sentinels = shardgate_tests::redis::Sentinels::start(&master, 1).await;
    let url = sentinels.url();
    let (app, peer) = share_one_tenant_limit(|c| with_redis(c, &url)).await;

    master.stop();
    let promoted = async || (sentinels.master_port() == Some(replica.port)).then_some(());
    assert!(shardgate_tests::eventually(Duration::from_secs(30), promoted).await.is_some(), "a failover");
    until_limits_shared(&app, &app.base_url).await;
    until_limits_shared(&app, &peer.base_url).await;
    tokio::time::sleep(Duration::from_secs(5)).await; // the bucket refills completely
    limit_is_shared(&app, &peer.base_url).await;
    assert!(
        !replica.cli(&["--scan", "--pattern", "*-rl:t:*:acme"]).trim().is_empty(),
        "the bucket is on the new master"
    );
}

/// Two instances share one tenant's limit through a Redis Cluster, before and after the master
/// of the bucket's slot dies and its replica takes over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_share_one_tenant_limit_through_a_cluster_across_a_failover() {
    let mut cluster = shardgate_tests::redis::RedisCluster::start().await;
    let url = cluster.url();
    let (app, peer) = share_one_tenant_limit(|c| with_redis(c, &url)).await;
    let bucket = cluster
        .live_nodes()
        .find_map(|n| n.cli(&["--scan", "--pattern", "*-rl:t:*:acme"]).lines().next().map(str::to_owned))
        .expect("the tenant's bucket is in the cluster");
    let (master, replicas) = cluster.serving(&bucket).expect("a master serves the bucket's slot");
    let m = cluster.index_of(master);
    cluster.nodes[m].stop();
    let promoted = async || (cluster.serving(&bucket).map(|(port, _)| port) == Some(replicas[0])).then_some(());
    assert!(shardgate_tests::eventually(Duration::from_secs(30), promoted).await.is_some(), "a failover");
    until_limits_shared(&app, &app.base_url).await;
    until_limits_shared(&app, &peer.base_url).await;
    tokio::time::sleep(Duration::from_secs(5)).await; // the bucket refills completely
    limit_is_shared(&app, &peer.base_url).await;
}

/// Two instances with the Redis `customize` configures share one tenant's limit (within the
/// bound in docs/operations.md, "Rate limits"), every decision taken in Redis. Returns the app
/// and its peer.
async fn share_one_tenant_limit(customize: impl FnOnce(&mut Config)) -> (TestApp, RunningServer) {
    let app = TestApp::spawn_with(Backend::Sqlite, customize).await;
    app.create_tenant("acme").await;
    let peer = app.spawn_peer(|_| {}).await;
    until_limits_shared(&app, &app.base_url).await;
    until_limits_shared(&app, &peer.base_url).await;
    set_rate_limit(&app, "acme", json!({"per_second": 2, "burst": 10})).await;
    let token = app.rw_token("acme");
    // The peer learns the override with its next catalog poll.
    let learned = async || {
        let response = list(&app, &peer.base_url, &token, "acme").await;
        (response.headers().get("ratelimit-policy")?.to_str().ok()? == "\"tenant\";q=10;w=5").then_some(())
    };
    assert!(shardgate_tests::eventually(Duration::from_secs(5), learned).await.is_some());
    tokio::time::sleep(Duration::from_secs(5)).await; // the bucket refills completely
    limit_is_shared(&app, &peer.base_url).await;
    (app, peer)
}

/// 40 requests of `acme` (limit 2 per second, burst 10) alternately to `app` and the instance at
/// `peer`: they admit together what one limit allows, every decision taken in Redis.
async fn limit_is_shared(app: &TestApp, peer: &str) {
    let token = app.rw_token("acme");
    let local = async || {
        metric(&app.client, &app.base_url, "shardgate_rate_limit_local_decisions_total").await
            + metric(&app.client, peer, "shardgate_rate_limit_local_decisions_total").await
    };
    let local_before = local().await;
    let started = Instant::now();
    let (mut admitted, mut refused) = (0, 0);
    for i in 0..40 {
        let base = if i % 2 == 0 { app.base_url.as_str() } else { peer };
        match list(app, base, &token, "acme").await.status() {
            StatusCode::OK => admitted += 1,
            StatusCode::TOO_MANY_REQUESTS => refused += 1,
            other => panic!("unexpected {other}"),
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    // The bound of docs/operations.md ("Rate limits"): burst plus what the rate refilled
    // meanwhile, plus at most one lease per instance (admissions leased from Redis and spent
    // later). Each instance alone would have admitted 10.
    let lease = RateLimit { per_second: 2, burst: 10 }.lease_size() as f64;
    let bound = 10.0 + (2.0 * elapsed).ceil() + 2.0 * lease;
    assert!(admitted as f64 <= bound, "admitted {admitted} > {bound} in {elapsed:.2} s");
    assert!(admitted >= 10, "the burst is admitted: {admitted}");
    assert_eq!(admitted + refused, 40);
    assert_eq!(local().await, local_before, "every decision was taken in Redis");
}

#[tokio::test]
async fn without_redis_each_instance_limits_alone_and_keeps_answering() {
    let redis = RedisServer::start().await;
    let url = redis.url();
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        with_redis(c, &url);
        c.rate_limits.tiers.insert("standard".into(), RateLimit { per_second: 1, burst: 5 });
    })
    .await;
    app.create_tenant("acme").await;
    until_limits_shared(&app, &app.base_url).await;
    let token = app.rw_token("acme");
    expect_json(list(&app, &app.base_url, &token, "acme").await, StatusCode::OK).await;

    redis.pause();
    let started = Instant::now();
    let (ok, limited) = burst(&app, &app.base_url, &token, "acme", 10).await;
    assert!(started.elapsed() < Duration::from_secs(2), "a frozen Redis costs one short timeout, not one per request");
    assert_eq!(ok + limited, 10);
    assert!((5..=7).contains(&ok), "the limit still holds in this process: {ok} admitted");
    // All but what was left of the instance's lease (admissions Redis granted before it froze).
    let lease = RateLimit { per_second: 1, burst: 5 }.lease_size() as f64;
    assert!(metric(&app.client, &app.base_url, "shardgate_rate_limit_local_decisions_total").await >= 10.0 - lease);
    let body: Value = app.client.get(app.url("/readyz")).send().await.unwrap().json().await.unwrap();
    assert_eq!(body["components"]["rate_limits"]["status"], "degraded");
    assert_eq!(body["status"], "ready", "a frozen Redis does not make the instance unready");
    redis.resume();
}
