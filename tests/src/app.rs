//! [`TestApp`]: a server of a test's own, with its data directory and (on PostgreSQL) its own
//! databases, optionally behind a standalone gatekeeper; restartable, with peers on the same
//! storage.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use secrecy::SecretString;
use shardgate_api::Config;
use shardgate_api::config::GatekeeperConfig;
use shardgate_shard_router::ShardId;
use shardgate_shard_router::router::ShardSeed;
use tempfile::TempDir;

use crate::backend::{Backend, PgDatabases, SEEDED_SHARDS};
use crate::clock::TestClock;
use crate::http::http_client;
use crate::server::RunningServer;
use crate::tokens::hs256_issuer;

/// A server of its own for one test, with helpers to call it.
#[derive(Debug)]
pub struct TestApp {
    /// `http://127.0.0.1:<port>`.
    pub base_url: String,
    /// An HTTP client (no redirects followed, no default headers).
    pub client: reqwest::Client,
    /// The clock of this app's servers: move it forward instead of sleeping.
    pub clock: Arc<TestClock>,
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

    /// A fresh server on PostgreSQL whose seeded shard `shard` lives in the database at `url`
    /// (say, on a cluster the test starts, stops and freezes itself); `customize` may change the
    /// rest of the configuration before it starts.
    pub async fn spawn_with_shard_at(shard: &str, url: String, customize: impl FnOnce(&mut Config)) -> Self {
        Self::spawn_with(Backend::Postgres, |config| {
            let seed = config.storage.shards.iter_mut().find(|s| s.id.as_str() == shard).expect("a seeded shard");
            seed.url = SecretString::from(url);
            customize(config);
        })
        .await
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
                    config.storage.shards.push(ShardSeed {
                        id: ShardId::parse(id).unwrap(),
                        url: SecretString::from(url.clone()),
                        password_file: None,
                    });
                    urls.push(((*id).to_owned(), url));
                }
                urls
            }
        };
        customize(&mut config);
        let clock = Arc::new(TestClock::default());
        let server = RunningServer::start(config.clone(), clock.clone()).await;
        Self {
            clock,
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
        Self::spawn_via_gatekeeper_with(backend, |_| {}).await
    }

    /// [`TestApp::spawn_via_gatekeeper`] with the backend's configuration changed by `tune`
    /// first (the gatekeeper takes its `auth`, `rate_limits`, `limits`, `cors`, `trusted_proxies`,
    /// `proxy_protocol` and `forwarded_header`).
    pub async fn spawn_via_gatekeeper_with(backend: Backend, tune: impl FnOnce(&mut Config)) -> Self {
        let secret = format!("internal-test-secret-{}", uuid::Uuid::new_v4().simple());
        let mut app = Self::spawn_with(backend, |config| {
            tune(config);
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
            tls: None,
            upstream: Some(backend_url.clone()),
            upstream_ca_file: None,
            data_dir: self.data_dir.path().to_path_buf(),
            internal: self.config.internal.clone(),
            auth: self.config.auth.clone(),
            rate_limits: self.config.rate_limits.clone(),
            limits: self.config.limits.clone(),
            cors: self.config.cors.clone(),
            // The backend's admin listener is its own; the gatekeeper forwards the admin plane.
            admin: shardgate_api::config::AdminListenerConfig::default(),
            trusted_proxies: self.config.trusted_proxies.clone(),
            proxy_protocol: self.config.proxy_protocol,
            forwarded_header: self.config.forwarded_header,
            log: self.config.log.clone(),
            telemetry: self.config.telemetry.clone(),
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

    /// The catalog database's URL, for direct access (the embedded SQLite catalog unless one was
    /// configured).
    pub fn catalog_url(&self) -> String {
        use secrecy::ExposeSecret;
        match &self.config.storage.catalog_url {
            Some(url) => url.expose_secret().to_owned(),
            None => format!("sqlite://{}/catalog.db", self.data_dir().display()),
        }
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
        RunningServer::start(config, self.clock.clone()).await
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
        let server = self.spawn_peer(|_| {}).await;
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
    // Stories page through distributed collections far faster than a tenant's fan-out budget
    // allows; the budget has a story of its own (`distribution.rs`).
    config.limits.tenant_fan_out_shard_reads_per_second = 0;
    config
}
