//! # shardgate-tests
//!
//! Support for the black-box HTTP tests in `tests/tests/`: spawn a real shardgate server on port 0
//! (on SQLite or on PostgreSQL), mint tokens for it, call it over HTTP and look into its shard
//! databases directly when a test needs to prove where data landed.
//!
//! Every test gets its own server, data directory and (on PostgreSQL) its own databases, which
//! are dropped when the [`TestApp`] is dropped, even when the test panics. Nothing is shared
//! between tests.
//!
//! The [`conformance!`] macro turns one `async fn story(app: TestApp)` into a test per engine, so
//! the same suite runs on both.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::header::{CONTENT_TYPE, HeaderMap};
use reqwest::{Method, StatusCode};
use secrecy::SecretString;
use serde_json::Value;
use shardgate_api::config::GatekeeperConfig;
use shardgate_api::gatekeeper_proxy::Gatekeeper;
use shardgate_api::{Application, Config};
use shardgate_gatekeeper::{IssuerConfig, KeyAlgorithm, Scope, Scopes, TokenRequest, mint_token};
use shardgate_shard_router::ShardId;
use shardgate_shard_router::router::ShardSeed;
use sqlx::Connection;
use tempfile::TempDir;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The HS256 issuer every test app trusts.
pub const ISSUER: &str = "test";
/// Its shared secret (at least 32 bytes).
pub const SECRET: &str = "shardgate-tests-hs256-secret-not-for-production-use";
/// The PostgreSQL server the `postgres` variants use (trust auth, no password).
pub const POSTGRES_SERVER: &str = "postgres://postgres@127.0.0.1:5432";
/// The ids of the four shards every test app starts with, on both engines.
pub const SEEDED_SHARDS: [&str; 4] = ["shard-0", "shard-1", "shard-2", "shard-3"];
/// Number of virtual shards.
pub const VSHARD_COUNT: u64 = 1024;

/// Characters percent-encoded in a path segment: everything but RFC 3986 unreserved characters.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');

/// Percent-encodes one path segment (a record key, for example).
pub fn encode_segment(segment: &str) -> String {
    utf8_percent_encode(segment, SEGMENT).to_string()
}

/// The database engine a test app runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The embedded default: SQLite catalog and four SQLite shards in the data directory.
    Sqlite,
    /// A PostgreSQL catalog and four PostgreSQL shards, each its own fresh database.
    Postgres,
}

impl Backend {
    /// The `engine` string the admin API reports for shards of this backend.
    pub fn engine(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

/// A running server, stoppable.
#[derive(Debug)]
pub struct RunningServer {
    /// `http://127.0.0.1:<port>`.
    pub base_url: String,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<anyhow::Result<()>>>,
}

impl RunningServer {
    /// Builds the application from `config` (which binds the listener) and runs it in a task
    /// until [`RunningServer::stop`] or drop.
    pub async fn start(config: Config) -> Self {
        let app = Application::build(config).await.expect("the application builds");
        let base_url = format!("http://127.0.0.1:{}", app.port());
        let (shutdown, signal) = oneshot::channel::<()>();
        let task = tokio::spawn(app.run_until(async move {
            // Either an explicit stop or the sender being dropped ends the server.
            signal.await.ok();
        }));
        Self { base_url, shutdown: Some(shutdown), task: Some(task) }
    }

    /// A standalone gatekeeper (`shardgate gatekeeper`) with `config`, in a task.
    pub async fn start_gatekeeper(config: GatekeeperConfig) -> Self {
        let gatekeeper = Gatekeeper::build(config).await.expect("the gatekeeper builds");
        let base_url = format!("http://127.0.0.1:{}", gatekeeper.local_addr().port());
        let (shutdown, signal) = oneshot::channel::<()>();
        let task = tokio::spawn(gatekeeper.run_until(async move {
            signal.await.ok();
        }));
        Self { base_url, shutdown: Some(shutdown), task: Some(task) }
    }

    /// Asks the server to shut down gracefully and waits until it has.
    pub async fn stop(mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            shutdown.send(()).ok();
        }
        if let Some(task) = self.task.take() {
            let outcome = tokio::time::timeout(Duration::from_secs(10), task)
                .await
                .expect("the server stops within 10 s")
                .expect("the server task does not panic");
            outcome.expect("the server shuts down cleanly");
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// PostgreSQL databases created for one test; dropped (with `FORCE`) on drop, from a thread of
/// its own so that it happens even while a test panics inside an async runtime.
#[derive(Debug, Default)]
pub struct PgDatabases {
    names: Mutex<Vec<String>>,
}

impl PgDatabases {
    /// Creates a database with a fresh unique name ending in `suffix` and returns its URL.
    pub async fn create(&self, prefix: &str, suffix: &str) -> String {
        let name = format!("{prefix}_{suffix}");
        self.names.lock().unwrap().push(name.clone());
        let mut conn = sqlx::PgConnection::connect(&format!("{POSTGRES_SERVER}/postgres"))
            .await
            .expect("PostgreSQL at 127.0.0.1:5432 accepts connections");
        sqlx::query(&format!("CREATE DATABASE \"{name}\"")).execute(&mut conn).await.expect("create database");
        conn.close().await.ok();
        format!("{POSTGRES_SERVER}/{name}")
    }

    /// Drops one database now (to simulate an outage).
    pub async fn drop_now(&self, name: &str) {
        let mut conn = sqlx::PgConnection::connect(&format!("{POSTGRES_SERVER}/postgres")).await.unwrap();
        sqlx::query(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)")).execute(&mut conn).await.unwrap();
        conn.close().await.ok();
    }
}

impl Drop for PgDatabases {
    fn drop(&mut self) {
        let names = std::mem::take(&mut *self.names.lock().unwrap_or_else(|e| e.into_inner()));
        if names.is_empty() {
            return;
        }
        let cleanup = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async move {
                let Ok(mut conn) = sqlx::PgConnection::connect(&format!("{POSTGRES_SERVER}/postgres")).await else {
                    eprintln!("cannot connect to PostgreSQL to drop test databases {names:?}");
                    return;
                };
                for name in names {
                    if let Err(e) = sqlx::query(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
                        .execute(&mut conn)
                        .await
                    {
                        eprintln!("cannot drop test database {name}: {e}");
                    }
                }
                conn.close().await.ok();
            });
        });
        cleanup.join().ok();
    }
}

/// A server of its own for one test, with helpers to call it.
#[derive(Debug)]
pub struct TestApp {
    /// `http://127.0.0.1:<port>`.
    pub base_url: String,
    /// An HTTP client (no redirects followed, no default headers).
    pub client: reqwest::Client,
    backend: Backend,
    shard_urls: Vec<(String, String)>,
    db_prefix: String,
    config: Config,
    /// The backend's own URL when a gatekeeper stands in front (`base_url` is the gatekeeper's).
    backend_url: Option<String>,
    // Field order is drop order: the servers stop before their databases and directory go.
    gatekeeper: Option<RunningServer>,
    server: Option<RunningServer>,
    pg: PgDatabases,
    data_dir: TempDir,
}

impl TestApp {
    /// A fresh server on `backend` with the default test configuration.
    pub async fn spawn(backend: Backend) -> Self {
        Self::spawn_with(backend, |_| {}).await
    }

    /// A fresh server on `backend`; `customize` may change the configuration before it starts.
    pub async fn spawn_with(backend: Backend, customize: impl FnOnce(&mut Config)) -> Self {
        let data_dir = tempfile::tempdir().expect("temp dir");
        let db_prefix = format!("sg_{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
        let pg = PgDatabases::default();
        let mut config = test_config(data_dir.path());
        // Rate-limit buckets in Redis are this app's own (peers share them on purpose).
        config.rate_limits.key_prefix = format!("{db_prefix}-rl");
        let shard_urls = match backend {
            Backend::Sqlite => SEEDED_SHARDS
                .iter()
                .enumerate()
                .map(|(i, id)| {
                    let path = data_dir.path().join("shards").join(format!("shard-{i}.db"));
                    ((*id).to_owned(), format!("sqlite://{}", path.display()))
                })
                .collect(),
            Backend::Postgres => {
                let catalog = pg.create(&db_prefix, "cat").await;
                config.storage.catalog_url = Some(SecretString::from(catalog));
                let mut urls = Vec::new();
                for (i, id) in SEEDED_SHARDS.iter().enumerate() {
                    let url = pg.create(&db_prefix, &format!("s{i}")).await;
                    config
                        .storage
                        .shards
                        .push(ShardSeed { id: ShardId::parse(id).unwrap(), url: SecretString::from(url.clone()) });
                    urls.push(((*id).to_owned(), url));
                }
                urls
            }
        };
        customize(&mut config);
        let server = RunningServer::start(config.clone()).await;
        Self {
            base_url: server.base_url.clone(),
            client: http_client(),
            backend,
            shard_urls,
            db_prefix,
            config,
            backend_url: None,
            gatekeeper: None,
            server: Some(server),
            pg,
            data_dir,
        }
    }

    /// A fresh trusted backend on `backend` behind a standalone gatekeeper; `base_url` is the
    /// gatekeeper's, [`TestApp::backend_url`] the backend's.
    pub async fn spawn_via_gatekeeper(backend: Backend) -> Self {
        let secret = format!("internal-test-secret-{}", uuid::Uuid::new_v4().simple());
        let mut app = Self::spawn_with(backend, |config| {
            config.trusted = true;
            config.internal.secret = Some(SecretString::from(secret.clone()));
        })
        .await;
        app.start_gatekeeper().await;
        app
    }

    async fn start_gatekeeper(&mut self) {
        let backend_url = self.server.as_ref().expect("the backend runs").base_url.clone();
        let config = GatekeeperConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            upstream: Some(backend_url.clone()),
            data_dir: self.data_dir.path().to_path_buf(),
            internal: self.config.internal.clone(),
            auth: self.config.auth.clone(),
            rate_limits: self.config.rate_limits.clone(),
            limits: self.config.limits.clone(),
            cors: self.config.cors.clone(),
            log: self.config.log.clone(),
        };
        let gatekeeper = RunningServer::start_gatekeeper(config).await;
        self.base_url = gatekeeper.base_url.clone();
        self.backend_url = Some(backend_url);
        self.gatekeeper = Some(gatekeeper);
    }

    /// Where the gateway's own metrics are scraped: the backend's when a gatekeeper stands in
    /// front (probes and metrics need no internal credential), else the gateway's.
    pub fn metrics_base(&self) -> &str {
        self.backend_url.as_deref().unwrap_or(&self.base_url)
    }

    /// The trusted backend's URL, when this app runs behind a gatekeeper.
    pub fn backend_url(&self) -> Option<&str> {
        self.backend_url.as_deref()
    }

    /// Which engine this app runs on.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The data directory of this app.
    pub fn data_dir(&self) -> &Path {
        self.data_dir.path()
    }

    /// `(shard id, database URL)` of the four seeded shards, for direct database access.
    pub fn shard_urls(&self) -> Vec<(String, String)> {
        self.shard_urls.clone()
    }

    /// The PostgreSQL database name of a seeded shard (`None` on SQLite).
    pub fn pg_database_of(&self, shard: &str) -> Option<String> {
        let index = SEEDED_SHARDS.iter().position(|s| *s == shard)?;
        (self.backend == Backend::Postgres).then(|| format!("{}_s{index}", self.db_prefix))
    }

    /// Drops a PostgreSQL database of this app now (simulates an outage).
    pub async fn drop_pg_database(&self, name: &str) {
        self.pg.drop_now(name).await;
    }

    /// A URL for one more, empty shard database: a new SQLite file in the data directory, or a
    /// new PostgreSQL database (dropped with the app). Returns `(url, secret part)` where the
    /// secret part is what must never show up in a response (the path or the database name).
    pub async fn extra_shard_url(&self, name: &str) -> (String, String) {
        match self.backend {
            Backend::Sqlite => {
                let path: PathBuf = self.data_dir.path().join(format!("{name}.db"));
                let path = path.display().to_string();
                (format!("sqlite://{path}"), path)
            }
            Backend::Postgres => {
                let db = format!("{}_{}", self.db_prefix, name.replace('-', "_"));
                let url = self.pg.create(&self.db_prefix, &name.replace('-', "_")).await;
                (url, db)
            }
        }
    }

    /// `base_url` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    /// A token for the platform administrator (scope `admin`, no tenant).
    pub fn admin_token(&self) -> String {
        mint(None, &[Scope::Admin], Duration::from_secs(600))
    }

    /// A token bound to `tenant` with `scopes`.
    pub fn token(&self, tenant: &str, scopes: &[Scope]) -> String {
        mint(Some(tenant), scopes, Duration::from_secs(600))
    }

    /// A token bound to `tenant` with `read` and `write`.
    pub fn rw_token(&self, tenant: &str) -> String {
        self.token(tenant, &[Scope::Read, Scope::Write])
    }

    /// Sends a request with an optional bearer token, JSON body and extra headers.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<&Value>,
        headers: &[(&str, &str)],
    ) -> reqwest::Response {
        let mut request = self.client.request(method, self.url(path));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.send().await.expect("the server answers")
    }

    /// An admin-token request.
    pub async fn admin(&self, method: Method, path: &str, body: Option<&Value>) -> reqwest::Response {
        let token = self.admin_token();
        self.send(method, path, Some(&token), body, &[]).await
    }

    /// `POST /v1/admin/tenants {"id": id}`; asserts 201 and returns the tenant.
    pub async fn create_tenant(&self, id: &str) -> Value {
        self.create_tenant_with(&serde_json::json!({ "id": id })).await
    }

    /// `POST /v1/admin/tenants` with `body`; asserts 201 and returns the tenant.
    pub async fn create_tenant_with(&self, body: &Value) -> Value {
        let response = self.admin(Method::POST, "/v1/admin/tenants", Some(body)).await;
        expect_json(response, StatusCode::CREATED).await
    }

    /// The current shard map.
    pub async fn shard_map(&self) -> Value {
        expect_json(self.admin(Method::GET, "/v1/admin/shard-map", None).await, StatusCode::OK).await
    }

    /// The shard map's epoch.
    pub async fn epoch(&self) -> i64 {
        self.shard_map().await["epoch"].as_i64().expect("epoch is an integer")
    }

    /// `GET /v1/admin/route` for one record; asserts 200.
    pub async fn route(&self, tenant: &str, collection: &str, key: &str) -> Value {
        let path = format!(
            "/v1/admin/route?tenant={}&collection={}&key={}",
            encode_segment(tenant),
            encode_segment(collection),
            encode_segment(key)
        );
        expect_json(self.admin(Method::GET, &path, None).await, StatusCode::OK).await
    }

    /// `PATCH /v1/admin/shards/{id} {"state": state}`; asserts 200 and returns the shard.
    pub async fn set_shard_state(&self, shard: &str, state: &str) -> Value {
        let body = serde_json::json!({ "state": state });
        let response = self.admin(Method::PATCH, &format!("/v1/admin/shards/{shard}"), Some(&body)).await;
        expect_json(response, StatusCode::OK).await
    }

    /// `PUT` a record with a read/write token of `tenant`.
    pub async fn put_record(&self, tenant: &str, collection: &str, key: &str, value: &Value) -> reqwest::Response {
        let token = self.rw_token(tenant);
        self.send(Method::PUT, &record_path(tenant, collection, key), Some(&token), Some(value), &[]).await
    }

    /// `GET` a record with a read/write token of `tenant`.
    pub async fn get_record(&self, tenant: &str, collection: &str, key: &str) -> reqwest::Response {
        let token = self.rw_token(tenant);
        self.send(Method::GET, &record_path(tenant, collection, key), Some(&token), None, &[]).await
    }

    /// `DELETE` a record with a read/write token of `tenant`.
    pub async fn delete_record(&self, tenant: &str, collection: &str, key: &str) -> reqwest::Response {
        let token = self.rw_token(tenant);
        self.send(Method::DELETE, &record_path(tenant, collection, key), Some(&token), None, &[]).await
    }

    /// Lists a collection with a read/write token of `tenant`; `query` is appended verbatim.
    pub async fn list_records(&self, tenant: &str, collection: &str, query: &str) -> reqwest::Response {
        let token = self.rw_token(tenant);
        let path = format!("{}?{query}", records_path(tenant, collection));
        self.send(Method::GET, &path, Some(&token), None, &[]).await
    }

    /// Puts many records concurrently (a few at a time); asserts each is created.
    pub async fn put_many(&self, tenant: &str, collection: &str, keys: &[String]) {
        let token = self.rw_token(tenant);
        let mut tasks = tokio::task::JoinSet::new();
        for chunk in keys.chunks(keys.len().div_ceil(8).max(1)) {
            let client = self.client.clone();
            let base = self.base_url.clone();
            let token = token.clone();
            let paths: Vec<(String, String)> =
                chunk.iter().map(|k| (k.clone(), record_path(tenant, collection, k))).collect();
            tasks.spawn(async move {
                for (key, path) in paths {
                    let response = client
                        .put(format!("{base}{path}"))
                        .bearer_auth(&token)
                        .json(&serde_json::json!({ "k": key }))
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(response.status(), StatusCode::CREATED, "PUT {path}");
                }
            });
        }
        while let Some(done) = tasks.join_next().await {
            done.unwrap();
        }
    }

    /// The configuration the server was started with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Another gateway instance on the same catalog, shards (and Redis, if configured), with
    /// its own port, pools and in-process state; `customize` may change its configuration.
    pub async fn spawn_peer(&self, customize: impl FnOnce(&mut Config)) -> RunningServer {
        let mut config = self.config.clone();
        config.listen = "127.0.0.1:0".parse().unwrap();
        customize(&mut config);
        RunningServer::start(config).await
    }

    /// A unique Redis key prefix for this app's cache.
    pub fn redis_prefix(&self) -> String {
        format!("{}-cache", self.db_prefix)
    }

    /// Stops the server gracefully and starts a new one with the same configuration (same data
    /// directory and databases, a new port).
    pub async fn restart(&mut self) {
        if let Some(gatekeeper) = self.gatekeeper.take() {
            gatekeeper.stop().await;
        }
        if let Some(server) = self.server.take() {
            server.stop().await;
        }
        let mut config = self.config.clone();
        config.listen = "127.0.0.1:0".parse().unwrap();
        let server = RunningServer::start(config).await;
        self.base_url = server.base_url.clone();
        self.server = Some(server);
        if self.backend_url.is_some() {
            self.start_gatekeeper().await;
        }
    }
}

/// The configuration every test app starts from: port 0, the data directory, the HS256 test
/// issuer, the default limits.
pub fn test_config(data_dir: &Path) -> Config {
    let mut config =
        Config { listen: "127.0.0.1:0".parse().unwrap(), data_dir: data_dir.to_path_buf(), ..Config::default() };
    config.auth.issuers = vec![hs256_issuer()];
    config
}

/// The HS256 issuer configuration of [`ISSUER`].
pub fn hs256_issuer() -> IssuerConfig {
    IssuerConfig {
        issuer: ISSUER.into(),
        algorithm: Some(KeyAlgorithm::HS256),
        algorithms: vec![],
        audience: vec![],
        secret: Some(SecretString::from(SECRET)),
        public_key_pem: None,
        public_key_file: None,
        jwks_file: None,
    }
}

/// Mints an HS256 token of [`ISSUER`].
pub fn mint(tenant: Option<&str>, scopes: &[Scope], ttl: Duration) -> String {
    let request = TokenRequest {
        issuer: ISSUER.into(),
        subject: "tester".into(),
        tenant: tenant.map(str::to_owned),
        scopes: Scopes::of(scopes),
        ttl,
    };
    mint_token(&SecretString::from(SECRET), &request).expect("mint token")
}

/// A plain HTTP client.
pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// `/v1/tenants/{tenant}/collections/{collection}/records/{key}` with the key percent-encoded.
pub fn record_path(tenant: &str, collection: &str, key: &str) -> String {
    format!("{}/{}", records_path(tenant, collection), encode_segment(key))
}

/// `/v1/tenants/{tenant}/collections/{collection}/records`.
pub fn records_path(tenant: &str, collection: &str) -> String {
    format!("/v1/tenants/{tenant}/collections/{collection}/records")
}

/// At most the first 600 characters of `text`, for assertion messages.
pub fn clip(text: &str) -> String {
    match text.char_indices().nth(600) {
        Some((end, _)) => format!("{}… ({} bytes)", &text[..end], text.len()),
        None => text.to_owned(),
    }
}

/// Asserts the status and that the body is JSON; returns it.
pub async fn expect_json(response: reqwest::Response, status: StatusCode) -> Value {
    let actual = response.status();
    let url = response.url().to_string();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap();
    assert_eq!(actual, status, "{url}: unexpected status; body: {}", clip(&text));
    assert_request_id(&headers, &url);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{url}: body is not JSON ({e}): {}", clip(&text)))
}

/// Asserts that the response is an RFC 9457 problem with `status` and `code`; returns the body.
pub async fn expect_problem(response: reqwest::Response, status: StatusCode, code: &str) -> Value {
    let problem = expect_any_problem(response, status).await;
    assert_eq!(problem["code"], code, "unexpected problem code: {problem}");
    problem
}

/// Asserts that the response is a problem with `status` (any code); returns the body.
pub async fn expect_any_problem(response: reqwest::Response, status: StatusCode) -> Value {
    let actual = response.status();
    let url = response.url().to_string();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap();
    assert_eq!(actual, status, "{url}: unexpected status; body: {}", clip(&text));
    let problem = assert_problem_shape(&headers, &text, &url);
    assert_eq!(problem["status"], status.as_u16(), "{url}: the problem's status is the response's: {problem}");
    problem
}

/// Asserts that a response (headers and text) is a well-formed problem; returns it parsed.
pub fn assert_problem_shape(headers: &HeaderMap, text: &str, url: &str) -> Value {
    assert_request_id(headers, url);
    let content_type = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    assert!(
        content_type.starts_with("application/problem+json"),
        "{url}: content-type is {content_type:?}, not application/problem+json; body: {}",
        clip(text)
    );
    let problem: Value =
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{url}: problem is not JSON ({e}): {}", clip(text)));
    for field in ["type", "title", "code", "detail"] {
        assert!(problem[field].is_string(), "{url}: problem lacks string `{field}`: {problem}");
    }
    assert!(problem["status"].is_u64(), "{url}: problem lacks numeric `status`: {problem}");
    problem
}

/// Asserts the `x-request-id` header is present and not empty.
pub fn assert_request_id(headers: &HeaderMap, url: &str) {
    let id = headers.get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or_default();
    assert!(!id.is_empty(), "{url}: response lacks x-request-id");
}

/// The `ETag` header of a response.
pub fn etag(response: &reqwest::Response) -> Option<String> {
    response.headers().get("etag").and_then(|v| v.to_str().ok()).map(str::to_owned)
}

/// Asserts 401 with a `WWW-Authenticate: Bearer...` challenge and a `missing_token` or
/// `invalid_token` code; returns the code.
pub async fn expect_unauthorized(response: reqwest::Response) -> String {
    let challenge =
        response.headers().get("www-authenticate").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let url = response.url().to_string();
    let problem = expect_any_problem(response, StatusCode::UNAUTHORIZED).await;
    assert!(challenge.starts_with("Bearer"), "{url}: WWW-Authenticate is {challenge:?}");
    let code = problem["code"].as_str().unwrap().to_owned();
    assert!(code == "missing_token" || code == "invalid_token", "{url}: unexpected 401 code {code}");
    code
}

/// Retries `check` every 100 ms for up to `within`, until it returns `Some`.
pub async fn eventually<T>(within: Duration, mut check: impl AsyncFnMut() -> Option<T>) -> Option<T> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if let Some(value) = check().await {
            return Some(value);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Opens a shard database directly (read access for placement checks).
pub async fn open_shard(url: &str) -> sqlx::AnyPool {
    sqlx::any::install_default_drivers();
    sqlx::pool::PoolOptions::<sqlx::Any>::new()
        .max_connections(1)
        .connect(url)
        .await
        .unwrap_or_else(|e| panic!("cannot open shard database: {e}"))
}

/// Whether `text` looks like an RFC 3339 timestamp (`YYYY-MM-DDTHH:MM:SS...` with a zone).
pub fn is_rfc3339(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() >= 20
        && bytes[4] == b'-'
        && bytes[7] == b'-'
        && (bytes[10] == b'T' || bytes[10] == b't')
        && bytes[13] == b':'
        && bytes[16] == b':'
        && (text.ends_with('Z') || text.ends_with('z') || text[19..].contains(['+', '-']))
}

/// A key that orders UTC RFC 3339 timestamps (`...Z`) chronologically even when their fractional
/// seconds have different numbers of digits (`33.37Z` vs `33.371Z`).
pub fn rfc3339_order_key(text: &str) -> String {
    let body = text.trim_end_matches(['Z', 'z']);
    let (seconds, fraction) = body.split_once('.').unwrap_or((body, ""));
    format!("{seconds}.{fraction:0<9}")
}

/// Generates, for each `async fn name(app: TestApp)`, a module `name` with a `sqlite` and a
/// `postgres` test, each on a fresh app of that backend.
#[macro_export]
macro_rules! conformance {
    ($($story:ident),+ $(,)?) => {$(
        mod $story {
            #[tokio::test]
            async fn sqlite() {
                super::$story($crate::TestApp::spawn($crate::Backend::Sqlite).await).await;
            }

            #[tokio::test]
            async fn postgres() {
                super::$story($crate::TestApp::spawn($crate::Backend::Postgres).await).await;
            }

            /// Through a standalone gatekeeper in front of a trusted backend (SQLite).
            #[tokio::test]
            async fn via_gatekeeper() {
                super::$story($crate::TestApp::spawn_via_gatekeeper($crate::Backend::Sqlite).await).await;
            }
        }
    )+};
}

/// The value of a Prometheus counter or gauge line `name` (summed over label sets) at
/// `base_url/metrics`.
pub async fn metric(client: &reqwest::Client, base_url: &str, name: &str) -> f64 {
    let text = client.get(format!("{base_url}/metrics")).send().await.unwrap().text().await.unwrap();
    text.lines()
        .filter(|line| line.starts_with(name) && matches!(line.as_bytes().get(name.len()), Some(b' ' | b'{')))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// A Redis server of a test's own, on a free port, so the test can stop, pause and restart it.
#[derive(Debug)]
pub struct RedisServer {
    /// Its port.
    pub port: u16,
    child: Option<std::process::Child>,
}

impl RedisServer {
    /// Starts `redis-server` on a free port (no persistence) and waits until it answers.
    pub async fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut server = Self { port, child: None };
        server.launch().await;
        server
    }

    /// `redis://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    async fn launch(&mut self) {
        let child = std::process::Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("redis-server is installed");
        self.child = Some(child);
        for _ in 0..100 {
            if tokio::net::TcpStream::connect(("127.0.0.1", self.port)).await.is_ok() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("redis-server did not start on port {}", self.port);
    }

    fn signal(&self, signal: &str) {
        if let Some(child) = &self.child {
            let status = std::process::Command::new("kill").args([signal, &child.id().to_string()]).status().unwrap();
            assert!(status.success(), "kill {signal} failed");
        }
    }

    /// Freezes the server (SIGSTOP): connections stay open, nothing answers, data is kept.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Thaws a paused server (SIGCONT), with its data.
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    /// Kills the server (its data is gone).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts a fresh server on the same port.
    pub async fn restart(&mut self) {
        self.stop();
        self.launch().await;
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.resume();
        self.stop();
    }
}
