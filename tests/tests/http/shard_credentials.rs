//! Credentials that rotate: a shard's PostgreSQL role changes its password while writers run on
//! two instances, and `PATCH /v1/admin/shards/{id} {"url": ...}` points the shard at the new
//! one. The new URL must reach the same shard (its identity marker); no acknowledged write is
//! lost, no request fails once the change is acknowledged, both instances move their pools to
//! the new URL, and neither password shows in an answer or in the audit log.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shardgate_tests::{PgCluster, TestApp, eventually, expect_json, expect_problem, record_path};

const ROLE: &str = "rotor";
const OLD_PASSWORD: &str = "first-Secret-A1";
const NEW_PASSWORD: &str = "second-Secret-B2";
const WRONG_PASSWORD: &str = "wrong-Secret-C3";
const SHARD: &str = "shard-1";
const TENANT: &str = "rotating";

/// `postgres://rotor:<password>@127.0.0.1:<port>/<database>`.
fn role_url(cluster: &PgCluster, password: &str, database: &str) -> String {
    format!("postgres://{ROLE}:{password}@127.0.0.1:{}/{database}", cluster.port)
}

async fn patch_url(app: &TestApp, shard: &str, url: &str) -> reqwest::Response {
    app.admin(Method::PATCH, &format!("/v1/admin/shards/{shard}"), Some(&json!({ "url": url }))).await
}

/// Backends of the shard's role on the cluster, with whether each started after `since` (a
/// server timestamp as text).
async fn role_backends(cluster: &PgCluster, since: &str) -> Vec<bool> {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(&cluster.url("postgres")).await.expect("connect to the cluster");
    let rows: Vec<(bool,)> = sqlx::query_as(
        "SELECT backend_start > $1::timestamptz FROM pg_stat_activity WHERE usename = $2 AND backend_type = 'client backend'",
    )
    .bind(since)
    .bind(ROLE)
    .fetch_all(&mut conn)
    .await
    .expect("pg_stat_activity");
    conn.close().await.ok();
    rows.into_iter().map(|(after,)| after).collect()
}

async fn server_now(cluster: &PgCluster) -> String {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(&cluster.url("postgres")).await.expect("connect to the cluster");
    let (now,): (String,) = sqlx::query_as("SELECT clock_timestamp()::text").fetch_one(&mut conn).await.unwrap();
    conn.close().await.ok();
    now
}

/// One write a writer made: its key, whether it started after the URL change was acknowledged,
/// and the status it got (`None`: no answer).
type Outcome = (String, bool, Option<StatusCode>);

/// Writes records of [`TENANT`] one after another through `base` until `stop`.
async fn writer(
    client: reqwest::Client,
    base: String,
    token: String,
    name: String,
    (acknowledged, stop, acked): (Arc<AtomicBool>, Arc<AtomicBool>, Arc<AtomicUsize>),
) -> Vec<Outcome> {
    let mut outcomes = Vec::new();
    let mut i = 0;
    while !stop.load(Ordering::Acquire) {
        let key = format!("{name}-{i}");
        i += 1;
        let after = acknowledged.load(Ordering::Acquire);
        let answer = client
            .put(format!("{base}{}", record_path(TENANT, "notes", &key)))
            .bearer_auth(&token)
            .json(&json!({ "n": i }))
            .timeout(Duration::from_secs(20))
            .send()
            .await;
        let status = answer.ok().map(|r| r.status());
        if status.is_some_and(|s| s.is_success()) {
            acked.fetch_add(1, Ordering::AcqRel);
        }
        outcomes.push((key, after, status));
    }
    outcomes
}

/// Writers of [`TENANT`], one per base URL, each one write at a time, so that the pools they
/// use were opened before the password changes and need no new connection until the change.
struct Writers {
    acknowledged: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    acked: Arc<AtomicUsize>,
    tasks: tokio::task::JoinSet<Vec<Outcome>>,
}

impl Writers {
    /// Starts a writer through each of `bases`, named `<prefix><i>`, and waits until they have
    /// made `warm` writes.
    async fn start(app: &TestApp, bases: &[&String], prefix: &str, warm: usize) -> Self {
        let mut writers = Self {
            acknowledged: Arc::new(AtomicBool::new(false)),
            stop: Arc::new(AtomicBool::new(false)),
            acked: Arc::new(AtomicUsize::new(0)),
            tasks: tokio::task::JoinSet::new(),
        };
        let token = app.rw_token(TENANT);
        for (i, base) in bases.iter().enumerate() {
            let flags = (writers.acknowledged.clone(), writers.stop.clone(), writers.acked.clone());
            let name = format!("{prefix}{i}");
            writers.tasks.spawn(writer(app.client.clone(), (*base).clone(), token.clone(), name, flags));
        }
        let warmed =
            eventually(Duration::from_secs(20), async || (writers.acked.load(Ordering::Acquire) >= warm).then_some(()))
                .await;
        assert!(warmed.is_some(), "the writers made {warm} writes");
        writers
    }

    /// Marks the writes from now on as made after the change was acknowledged.
    fn acknowledge(&self) {
        self.acknowledged.store(true, Ordering::Release);
    }

    /// Waits, for at most 15 s, until `more` further writes are acknowledged and every
    /// connection of the role on `cluster` is one opened after `rotated_at` (the old pools
    /// drained and closed), and there are some.
    async fn assert_moved_to_new_connections(&self, cluster: &PgCluster, rotated_at: &str, more: usize) {
        let acked_at_change = self.acked.load(Ordering::Acquire);
        let moved = eventually(Duration::from_secs(15), async || {
            let backends = role_backends(cluster, rotated_at).await;
            let more = self.acked.load(Ordering::Acquire) >= acked_at_change + more;
            (more && !backends.is_empty() && backends.iter().all(|after| *after)).then_some(())
        })
        .await;
        assert!(
            moved.is_some(),
            "connections opened with the old password remain: {:?}",
            role_backends(cluster, rotated_at).await
        );
    }

    /// Stops the writers: every write they made.
    async fn stop(mut self) -> Vec<Outcome> {
        self.stop.store(true, Ordering::Release);
        let mut outcomes = Vec::new();
        while let Some(done) = self.tasks.join_next().await {
            outcomes.extend(done.expect("a writer ends"));
        }
        outcomes
    }
}

/// A cluster that asks for passwords, with role [`ROLE`] (its password [`OLD_PASSWORD`]) and its
/// database `rot`.
async fn cluster_with_role() -> PgCluster {
    let cluster = PgCluster::start_with_passwords().await;
    cluster.execute(&format!("CREATE ROLE {ROLE} LOGIN PASSWORD '{OLD_PASSWORD}'")).await;
    cluster.execute(&format!("CREATE DATABASE rot OWNER {ROLE}")).await;
    cluster
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rotated_password_is_taken_by_patching_the_shard_url_under_load_on_every_instance() {
    let cluster = cluster_with_role().await;
    cluster.execute("CREATE DATABASE other_db").await;
    let app = TestApp::spawn_with_shard_at(SHARD, role_url(&cluster, OLD_PASSWORD, "rot"), |_| {}).await;
    let peer = app.spawn_peer(|_| {}).await;
    app.create_tenant_with(&json!({ "id": TENANT, "shard": SHARD })).await;

    // Refusals change nothing and never show the password given.
    let unknown = patch_url(&app, "shard-9", &role_url(&cluster, OLD_PASSWORD, "rot")).await;
    expect_problem(unknown, StatusCode::NOT_FOUND, "shard_not_found").await;
    let refusals = [
        (role_url(&cluster, WRONG_PASSWORD, "rot"), StatusCode::UNPROCESSABLE_ENTITY, "shard_unreachable"),
        (role_url(&cluster, OLD_PASSWORD, "other_db"), StatusCode::CONFLICT, "shard_identity_mismatch"),
        (
            format!("postgres://{ROLE}:{WRONG_PASSWORD}@127.0.0.1:1/rot"),
            StatusCode::UNPROCESSABLE_ENTITY,
            "shard_unreachable",
        ),
        (format!("mysql://{ROLE}:{WRONG_PASSWORD}@127.0.0.1/rot"), StatusCode::BAD_REQUEST, "invalid_database_url"),
        (
            format!("postgres://{ROLE}:{WRONG_PASSWORD}@127.0.0.1/rot?sslmode=allow"),
            StatusCode::BAD_REQUEST,
            "invalid_database_url",
        ),
    ];
    for (url, status, code) in refusals {
        let problem = expect_problem(patch_url(&app, SHARD, &url).await, status, code).await;
        let text = problem.to_string();
        assert!(!text.contains(WRONG_PASSWORD) && !text.contains(OLD_PASSWORD), "{code}: a password shows: {text}");
    }
    let empty = app.admin(Method::PATCH, &format!("/v1/admin/shards/{SHARD}"), Some(&json!({}))).await;
    expect_problem(empty, StatusCode::BAD_REQUEST, "invalid_body").await;

    // Writers on both instances, two each.
    let token = app.rw_token(TENANT);
    let bases = [&app.base_url, &peer.base_url, &app.base_url, &peer.base_url];
    let writers = Writers::start(&app, &bases, "w", 100).await;

    let rotated_at = server_now(&cluster).await;
    cluster.execute(&format!("ALTER ROLE {ROLE} PASSWORD '{NEW_PASSWORD}'")).await;
    let changed = patch_url(&app, SHARD, &role_url(&cluster, NEW_PASSWORD, "rot")).await;
    let shard = expect_json(changed, StatusCode::OK).await;
    writers.acknowledge();
    let text = shard.to_string();
    assert!(!text.contains(NEW_PASSWORD) && !text.contains(OLD_PASSWORD), "a password shows: {text}");
    assert_eq!(shard["state"], "active");

    // Both instances move to the new URL: every connection of the role is one opened after the
    // rotation (the old pools drained and closed), and there are some.
    writers.assert_moved_to_new_connections(&cluster, &rotated_at, 100).await;

    let outcomes = writers.stop().await;
    let after: Vec<&Outcome> = outcomes.iter().filter(|(_, after, _)| *after).collect();
    assert!(after.len() >= 100, "writes after the change: {}", after.len());
    let failed: Vec<&&Outcome> = after.iter().filter(|(_, _, s)| !s.is_some_and(|s| s.is_success())).collect();
    assert!(
        failed.is_empty(),
        "{} writes failed after the change was acknowledged: {:?}",
        failed.len(),
        &failed[..failed.len().min(5)]
    );

    // Every acknowledged write is there, read through either instance.
    let written: Vec<&String> =
        outcomes.iter().filter(|(_, _, s)| s.is_some_and(|s| s.is_success())).map(|(k, _, _)| k).collect();
    for (i, key) in written.iter().enumerate() {
        let base = if i % 2 == 0 { &app.base_url } else { &peer.base_url };
        let read = app
            .client
            .get(format!("{base}{}", record_path(TENANT, "notes", key)))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(read.status(), StatusCode::OK, "acknowledged write {key} is missing");
    }

    // The audit log names the change, without a password.
    let audit = expect_json(app.admin(Method::GET, "/v1/admin/audit?limit=100", None).await, StatusCode::OK).await;
    let text = audit.to_string();
    for password in [OLD_PASSWORD, NEW_PASSWORD, WRONG_PASSWORD] {
        assert!(!text.contains(password), "the audit log shows a password: {text}");
    }
    let items = audit["items"].as_array().expect("audit items");
    let change: Vec<&Value> = items.iter().filter(|e| e["action"] == "shard.url").collect();
    assert_eq!(change.len(), 1, "one URL change audited: {items:?}");
    let target = change[0]["target"].as_str().unwrap();
    assert_eq!(target, format!("shard:{SHARD} postgres://{ROLE}@127.0.0.1:{}/rot", cluster.port));
    peer.stop().await;
}

/// An instance that must open a connection to the shard after another instance changed the
/// shard's URL, before its own next look at the catalog: the shard refuses the old password,
/// and the instance takes the new URL from the catalog and serves the request there.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_refused_password_sends_an_instance_to_the_catalog_for_the_shards_new_url() {
    let cluster = cluster_with_role().await;
    // Idle connections close at once, so that the next write must open one.
    let app = TestApp::spawn_with_shard_at(SHARD, role_url(&cluster, OLD_PASSWORD, "rot"), |config| {
        config.storage.pool.idle_timeout = Duration::from_millis(100);
    })
    .await;
    let peer = app.spawn_peer(|_| {}).await;
    app.create_tenant_with(&json!({ "id": TENANT, "shard": SHARD })).await;
    let token = app.rw_token(TENANT);
    let put = async |base: &str, key: &str| {
        let url = format!("{base}{}", record_path(TENANT, "notes", key));
        app.client.put(url).bearer_auth(&token).json(&json!({ "k": key })).send().await.unwrap()
    };

    // Three rotations. The peer's write follows each acknowledgement within milliseconds, far
    // sooner than its next catalog poll (twice a second) most of the time: its pool, opened
    // with the old password, must open a connection, and the shard refuses it (a 500 once).
    for (round, password) in [NEW_PASSWORD, "third-Secret-D4", "fourth-Secret-E5"].into_iter().enumerate() {
        let before = put(&peer.base_url, &format!("before-{round}")).await;
        assert!(before.status().is_success(), "round {round}: {}", before.text().await.unwrap());
        // No connection of the role is left open (a timestamp before any backend's start).
        let idle = eventually(Duration::from_secs(10), async || {
            role_backends(&cluster, "-infinity").await.is_empty().then_some(())
        })
        .await;
        assert!(idle.is_some(), "round {round}: the pools keep their connections");
        cluster.execute(&format!("ALTER ROLE {ROLE} PASSWORD '{password}'")).await;
        expect_json(patch_url(&app, SHARD, &role_url(&cluster, password, "rot")).await, StatusCode::OK).await;
        let after = put(&peer.base_url, &format!("after-{round}")).await;
        assert_eq!(after.status(), StatusCode::CREATED, "round {round}: {}", after.text().await.unwrap());
    }
    peer.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_shards_password_file_is_read_again_when_it_changes_without_a_restart() {
    let cluster = cluster_with_role().await;
    let secrets = tempfile::tempdir().unwrap();
    let file = secrets.path().join("shard-1-password");
    std::fs::write(&file, format!("{OLD_PASSWORD}\n")).unwrap();
    // The URL carries no password: the file gives it, and the catalog never holds it.
    let url = format!("postgres://{ROLE}@127.0.0.1:{}/rot", cluster.port);
    let password_file = file.clone();
    let app = TestApp::spawn_with_shard_at(SHARD, url, move |config| {
        let seed = config.storage.shards.iter_mut().find(|s| s.id.as_str() == SHARD).unwrap();
        seed.password_file = Some(password_file);
    })
    .await;
    app.create_tenant_with(&json!({ "id": TENANT, "shard": SHARD })).await;

    let writers = Writers::start(&app, &[&app.base_url, &app.base_url], "f", 50).await;

    // A Secret's rotation: the role's password, then the mounted file (replaced, as the
    // kubelet swaps a Secret's files), and no call to the gateway.
    let rotated_at = server_now(&cluster).await;
    cluster.execute(&format!("ALTER ROLE {ROLE} PASSWORD '{NEW_PASSWORD}'")).await;
    let staged = secrets.path().join(".staged");
    std::fs::write(&staged, format!("{NEW_PASSWORD}\n")).unwrap();
    std::fs::rename(&staged, &file).unwrap();
    writers.acknowledge();

    writers.assert_moved_to_new_connections(&cluster, &rotated_at, 50).await;
    let outcomes = writers.stop().await;
    let failed: Vec<&Outcome> = outcomes.iter().filter(|(_, _, s)| !s.is_some_and(|s| s.is_success())).collect();
    assert!(failed.is_empty(), "{} writes failed: {:?}", failed.len(), &failed[..failed.len().min(5)]);

    let catalog = shardgate_tests::open_shard(&app.catalog_url()).await;
    let (stored,): (String,) =
        sqlx::query_as("SELECT url FROM shards WHERE id = $1").bind(SHARD).fetch_one(&catalog).await.unwrap();
    assert!(!stored.contains(OLD_PASSWORD) && !stored.contains(NEW_PASSWORD), "the catalog holds a password");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_catalogs_password_file_is_read_again_when_it_changes_without_a_restart() {
    let cluster = PgCluster::start_with_passwords().await;
    cluster.execute(&format!("CREATE ROLE {ROLE} LOGIN PASSWORD '{OLD_PASSWORD}'")).await;
    cluster.execute(&format!("CREATE DATABASE cat OWNER {ROLE}")).await;
    let secrets = tempfile::tempdir().unwrap();
    let file = secrets.path().join("catalog-password");
    std::fs::write(&file, OLD_PASSWORD).unwrap();
    let url = format!("postgres://{ROLE}@127.0.0.1:{}/cat", cluster.port);
    let password_file = file.clone();
    let app = TestApp::spawn_with(shardgate_tests::Backend::Postgres, move |config| {
        config.storage.catalog_url = Some(secrecy::SecretString::from(url));
        config.storage.catalog_password_file = Some(password_file);
    })
    .await;
    app.create_tenant("before").await;

    let rotated_at = server_now(&cluster).await;
    cluster.execute(&format!("ALTER ROLE {ROLE} PASSWORD '{NEW_PASSWORD}'")).await;
    let staged = secrets.path().join(".staged");
    std::fs::write(&staged, format!("{NEW_PASSWORD}\n")).unwrap();
    std::fs::rename(&staged, &file).unwrap();
    // The catalog's connections end (a failover, say): every new one needs the new password.
    cluster
        .execute(&format!(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{ROLE}' AND pid <> pg_backend_pid()"
        ))
        .await;

    let mut attempt = 0;
    let created = eventually(Duration::from_secs(15), async || {
        attempt += 1;
        let body = json!({ "id": format!("after-{attempt}") });
        let response = app.admin(Method::POST, "/v1/admin/tenants", Some(&body)).await;
        (response.status() == StatusCode::CREATED).then_some(())
    })
    .await;
    assert!(created.is_some(), "no tenant could be created after the rotation ({attempt} attempts)");
    let backends = role_backends(&cluster, &rotated_at).await;
    assert!(!backends.is_empty() && backends.iter().all(|after| *after), "{backends:?}");
    let listed = expect_json(app.admin(Method::GET, "/v1/admin/tenants", None).await, StatusCode::OK).await;
    assert!(listed.to_string().contains("before"), "{listed}");
}

/// The `cache` component's status in `/readyz`: `up` or `degraded`.
async fn cache_status(app: &TestApp) -> String {
    let body: Value = app.client.get(app.url("/readyz")).send().await.unwrap().json().await.unwrap();
    body["components"]["cache"]["status"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_redis_password_file_is_read_again_when_it_changes_without_a_restart() {
    let redis = shardgate_tests::RedisServer::start().await;
    redis.cli(&["CONFIG", "SET", "requirepass", OLD_PASSWORD]);
    let secrets = tempfile::tempdir().unwrap();
    let file = secrets.path().join("redis-password");
    std::fs::write(&file, format!("{OLD_PASSWORD}\n")).unwrap();
    let (url, password_file) = (redis.url(), file.clone());
    let app = TestApp::spawn_with(shardgate_tests::Backend::Sqlite, move |config| {
        config.cache.redis_url = Some(secrecy::SecretString::from(url));
        config.cache.redis_password_file = Some(password_file);
    })
    .await;
    let up = eventually(Duration::from_secs(10), async || (cache_status(&app).await == "up").then_some(())).await;
    assert!(up.is_some(), "the cache connects with the file's password: {}", cache_status(&app).await);
    app.create_tenant(TENANT).await;
    let put = app.put_record(TENANT, "notes", "k", &json!({"a": 1})).await;
    assert_eq!(put.status(), StatusCode::CREATED);

    // The Secret rotates: Redis's password, then the file; then Redis drops every client (a
    // failover, say), so the gateway must connect again, with the new password.
    redis.cli(&["-a", OLD_PASSWORD, "--no-auth-warning", "CONFIG", "SET", "requirepass", NEW_PASSWORD]);
    let staged = secrets.path().join(".staged");
    std::fs::write(&staged, NEW_PASSWORD).unwrap();
    std::fs::rename(&staged, &file).unwrap();
    redis.cli(&["-a", NEW_PASSWORD, "--no-auth-warning", "CLIENT", "KILL", "TYPE", "normal"]);
    redis.cli(&["-a", NEW_PASSWORD, "--no-auth-warning", "CLIENT", "KILL", "TYPE", "pubsub"]);

    // Redis is used again, over a connection authenticated with the new password: a read
    // fills the shared cache.
    redis.cli(&["-a", NEW_PASSWORD, "--no-auth-warning", "FLUSHALL"]);
    let filled = eventually(Duration::from_secs(15), async || {
        assert_eq!(app.get_record(TENANT, "notes", "k").await.status(), StatusCode::OK);
        let keys = redis.cli(&["-a", NEW_PASSWORD, "--no-auth-warning", "--scan", "--pattern", "*:r:rotating:notes:k"]);
        (!keys.trim().is_empty()).then_some(())
    })
    .await;
    assert!(filled.is_some(), "the cache did not connect again with the new password: {}", cache_status(&app).await);
    assert_eq!(cache_status(&app).await, "up");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_new_url_is_checked_for_tls_as_a_registration_is() {
    use shardgate_tests::{PgTlsSetup, TestCa};
    let ca = TestCa::new("shardgate rotation CA");
    let stranger = TestCa::new("a CA nobody trusts");
    let cluster =
        PgCluster::start_tls(PgTlsSetup { ca: &ca, names: &["localhost"], tls_only: true, client_cert: false }).await;
    cluster.create_database("tls_rot").await;
    let app = TestApp::spawn(shardgate_tests::Backend::Sqlite).await;
    let registered = cluster.gateway_url("localhost", "tls_rot", "sslmode=require");
    let body = json!({ "id": "tls-rot", "url": registered });
    expect_json(app.admin(Method::POST, "/v1/admin/shards", Some(&body)).await, StatusCode::CREATED).await;

    let verify = |ca: &TestCa| format!("sslmode=verify-full&sslrootcert={}", ca.cert_path.display());
    for (url, expected) in [
        (cluster.gateway_url("localhost", "tls_rot", &verify(&stranger)), "certificate"),
        (cluster.gateway_url("127.0.0.1", "tls_rot", &verify(&ca)), "127.0.0.1"),
        (cluster.gateway_url("localhost", "tls_rot", "sslmode=disable"), "only over tls"),
    ] {
        let problem = expect_problem(
            patch_url(&app, "tls-rot", &url).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "shard_tls_failed",
        )
        .await;
        let detail = problem["detail"].as_str().unwrap();
        assert!(detail.starts_with("TLS to shard tls-rot failed: "), "{detail}");
        assert!(detail.to_lowercase().contains(expected), "expected {expected:?} in {detail:?}");
    }
    let verified = cluster.gateway_url("localhost", "tls_rot", &verify(&ca));
    expect_json(patch_url(&app, "tls-rot", &verified).await, StatusCode::OK).await;
    app.create_tenant_with(&json!({ "id": "tls-tenant", "shard": "tls-rot" })).await;
    let put = app.put_record("tls-tenant", "notes", "k", &json!({ "a": 1 })).await;
    assert_eq!(put.status(), StatusCode::CREATED);
    let audit =
        expect_json(app.admin(Method::GET, "/v1/admin/audit?action=shard.url", None).await, StatusCode::OK).await;
    let targets: Vec<&str> = audit["items"].as_array().unwrap().iter().map(|e| e["target"].as_str().unwrap()).collect();
    assert_eq!(targets, [format!("shard:tls-rot postgres://gateway@localhost:{}/tls_rot", cluster.port)], "{audit}");
}
