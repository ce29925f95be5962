//! Database connections for the catalog and the shards: one engine-neutral pool type (sqlx `Any`)
//! so the same SQL runs on SQLite (the embedded default) and PostgreSQL.
//!
//! What only PostgreSQL offers (binary `COPY`) goes through a second, native pool to the same
//! database ([`Database::postgres`]): small (two connections), opened lazily, used by bulk
//! paths only (the copies of `moves::copy`). `bench/src/bin/drivers.rs` compares the two drivers on the
//! point read, the upsert and the bulk copy; only the copy gained enough to be worth a second
//! pool (see `docs/ARCHITECTURE.md`).
//!
//! Both pools of a PostgreSQL database speak the TLS its URL asks for (`sslmode`, `sslrootcert`,
//! `sslcert`, `sslkey`, read as libpq reads them: [`crate::storage::pg_tls`]); a test proves it with
//! `pg_stat_ssl` for each pool.
//!
//! The SQL in this crate sticks to what both engines accept: `$n` placeholders in order,
//! `INSERT ... ON CONFLICT`, `RETURNING`, integers for booleans and times (milliseconds since the
//! Unix epoch). Keys are compared in byte order on both engines (`COLLATE "C"` on PostgreSQL).

use std::str::FromStr;
use std::time::Duration;

use std::sync::Arc;

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{AnyPool, ConnectOptions, PgPool};

use crate::error::Error;
use crate::ids::ShardId;
use crate::storage::batch::{Batches, BatchingConfig};
use crate::storage::health::{BreakerConfig, Health, ProbeConnect};
pub use crate::storage::health::{Ping, PingFailure};
use crate::storage::hosts::{Follow, Host, hosts_changed, split_hosts};
use crate::storage::meter::{Charge, LoadMeter, Sample, Work};
use crate::storage::pg_tls::{PgTls, prepare_url};
use crate::storage::replicas::{Consistency, Position, ReadFrom, ReplicaReadsConfig, Replicas, mono_ms};

/// Which database engine a URL points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    /// `sqlite://path`
    Sqlite,
    /// `postgres://...` or `postgresql://...`
    Postgres,
}

impl Engine {
    /// The engine named by a database URL's scheme.
    pub fn of_url(url: &str) -> Result<Self, Error> {
        let scheme = url.split_once(':').map(|(s, _)| s).unwrap_or_default();
        match scheme {
            "sqlite" => Ok(Engine::Sqlite),
            "postgres" | "postgresql" => Ok(Engine::Postgres),
            _ => Err(Error::InvalidDatabaseUrl(
                "the URL must start with postgres://, postgresql:// or sqlite://".to_owned(),
            )),
        }
    }

    /// Parses an engine name as stored in the catalog.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "sqlite" => Some(Engine::Sqlite),
            "postgres" => Some(Engine::Postgres),
            _ => None,
        }
    }

    /// The engine's name as shown by the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Engine::Sqlite => "sqlite",
            Engine::Postgres => "postgres",
        }
    }
}

/// Connection pool settings, one pool per database (a bulkhead: a slow shard drains only its own
/// pool).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PoolConfig {
    /// Most connections per database. Default: twice the number of CPUs (measured: on two
    /// cores, 4 connections serve 20% more reads than 16); SQLite pools use at most 4.
    pub max_connections: u32,
    /// How long a request waits for a connection before failing with 503. Default 5 s.
    #[serde(with = "humantime_serde")]
    pub acquire_timeout: Duration,
    /// Timeout of the readiness probe per database. Default 2 s.
    #[serde(with = "humantime_serde")]
    pub probe_timeout: Duration,
    /// The deadline of every statement, waiting for a connection included: a statement that
    /// takes longer fails (503), so a frozen database costs a bounded time. Default 5 s.
    #[serde(with = "humantime_serde")]
    pub statement_timeout: Duration,
    /// Most connections all shard pools on one PostgreSQL server (host and port) hold together:
    /// each pool gets an equal share (at least one, at most `max_connections`), so many shard
    /// databases on one server stay under its `max_connections`. Default 64.
    pub max_connections_per_server: u32,
    /// A connection unused this long is closed, so an idle shard gives its share back. Default
    /// 30 s.
    #[serde(with = "humantime_serde")]
    pub idle_timeout: Duration,
    /// Most statements in progress (running or waiting for a connection) per database; the next
    /// fails at once with 503 `shard_busy`. Default 256.
    pub max_in_progress: u32,
    /// The circuit breaker of each database.
    pub breaker: BreakerConfig,
}

impl Default for PoolConfig {
    fn default() -> Self {
        let cpus = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
        Self {
            max_connections: u32::try_from(2 * cpus).unwrap_or(16),
            acquire_timeout: Duration::from_secs(5),
            probe_timeout: Duration::from_secs(2),
            statement_timeout: Duration::from_secs(5),
            max_connections_per_server: 64,
            idle_timeout: Duration::from_secs(30),
            max_in_progress: 256,
            breaker: BreakerConfig::default(),
        }
    }
}

/// A pool to one database, with the engine it speaks.
#[derive(Debug, Clone)]
pub struct Database {
    /// The pool.
    pub pool: AnyPool,
    /// Its engine.
    pub engine: Engine,
    /// The native pool to the same database, if it is PostgreSQL (for bulk paths).
    native: Option<PgPool>,
    /// Its breaker, bulkhead and statement deadline, shared by every clone.
    health: Arc<Health>,
    /// What its URL asks of TLS, if it is PostgreSQL.
    tls: Option<Arc<PgTls>>,
    /// The instance's load meter, if its statements are counted (shards' are, the catalog's
    /// is not).
    meter: Option<Arc<LoadMeter>>,
    /// What its statements are charged to.
    charge: Charge,
    /// Its batchers of point operations, shared by every clone ([`crate::storage::batch`]).
    batches: Arc<Batches>,
    /// The URL it was opened with, so that a pool whose shard's URL changed in the catalog is
    /// told apart (and replaced).
    url: Arc<SecretString>,
    /// Its hosts, if its URL names several or a `target_session_attrs`: the pools follow the
    /// primary ([`crate::storage::hosts`]).
    follow: Option<Arc<Follow>>,
    /// Its standbys, if its URL names several hosts and `storage.replica_reads` is on
    /// ([`crate::storage::replicas`]).
    replicas: Option<Arc<Replicas<Database>>>,
}

/// A pool's connections at one moment ([`Database::connections`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolConnections {
    /// Connections open (in use or idle).
    pub open: u32,
    /// Connections open and idle.
    pub idle: u32,
    /// The most connections the pool opens.
    pub max: u32,
}

/// Connections of a database's native PostgreSQL pool: bulk copies are few and long.
const NATIVE_CONNECTIONS: u32 = 2;

/// The `application_name` of the native pool's connections, unless the URL names one.
pub const NATIVE_APPLICATION_NAME: &str = "shardgate-bulk-copy";

static CATALOG_SQLITE: Migrator = sqlx::migrate!("../migrations/catalog/sqlite");
static CATALOG_POSTGRES: Migrator = sqlx::migrate!("../migrations/catalog/postgres");
static SHARD_SQLITE: Migrator = sqlx::migrate!("../migrations/shard/sqlite");
static SHARD_POSTGRES: Migrator = sqlx::migrate!("../migrations/shard/postgres");

/// Which schema a database carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schema {
    /// Shards, tenants, pins, vshards, epoch.
    Catalog,
    /// Records (and later blobs and index entries).
    Shard,
}

impl Database {
    /// Opens a pool (lazily: the first query connects). SQLite files are created if missing and
    /// run in WAL mode with a busy timeout.
    pub fn open(url: &SecretString, config: &PoolConfig) -> Result<Self, Error> {
        Self::open_with(url, config, None)
    }

    /// This database again, with a pool sized by `config` (its connections are those of the new
    /// pool; the old pool closes when its last user drops it) and the same [`Health`].
    pub fn resized(&self, url: &SecretString, config: &PoolConfig) -> Result<Self, Error> {
        let db = Self::open_with(url, config, Some(self.health.clone()))?;
        // A database that follows its primary goes on where it is now, not at its first host.
        if let (Some(ours), Some(theirs)) = (&self.follow, &db.follow)
            && let Some(host) = theirs.start_where(ours)
        {
            point_pools(&db.pool, db.native.as_ref(), host);
        }
        let db = Self { meter: self.meter.clone(), charge: self.charge.clone(), batches: self.batches.clone(), ..db };
        Ok(match &self.replicas {
            Some(replicas) => db.reading_standbys(&replicas.config, config),
            None => db,
        })
    }

    /// This database reading from the standbys its URL names, when a read lets it
    /// ([`Database::read_where`]), if `replica_reads` is on and its URL names several hosts
    /// (else it is returned as it is). Their pools (sized by `config`, each statement within
    /// `config.probe_timeout`) connect when first used; the primary's and the standbys' WAL
    /// positions are read every `replica_reads.poll_interval` while the database is in use.
    pub fn reading_standbys(mut self, replica_reads: &ReplicaReadsConfig, config: &PoolConfig) -> Self {
        let Some(follow) = self.follow.clone() else { return self };
        let hosts = follow.hosts();
        if hosts.len() < 2 || !replica_reads.enabled {
            return self;
        }
        let standbys = hosts.into_iter().map(|host| (host.name, self.standby(host.any, config))).collect();
        let replicas = Arc::new(Replicas::new(standbys, replica_reads.clone(), config.probe_timeout));
        spawn_replica_polls(Arc::downgrade(&replicas), follow, self.pool.clone());
        self.replicas = Some(replicas);
        self
    }

    /// A database of one standby at `options`, with a breaker of its own, whose statements wait
    /// at most `config.probe_timeout`: a standby that froze costs a read that long before the
    /// primary serves it.
    fn standby(&self, options: AnyConnectOptions, config: &PoolConfig) -> Database {
        let deadline = config.statement_timeout.min(config.probe_timeout);
        let pool = AnyPoolOptions::new()
            .max_connections(config.max_connections)
            .min_connections(0)
            .idle_timeout(config.idle_timeout)
            .acquire_timeout(config.acquire_timeout.min(deadline))
            .test_before_acquire(false)
            .connect_lazy_with(options.clone());
        let health =
            Arc::new(Health::new(config.breaker.clone(), deadline, config.max_in_progress, connect_probe(options)));
        let idle = pool.clone();
        health.on_broken_connection(Arc::new(move || close_idle(&idle)));
        Database {
            pool,
            engine: Engine::Postgres,
            native: None,
            health,
            tls: self.tls.clone(),
            meter: None,
            charge: Charge::default(),
            batches: Arc::new(Batches::new(BatchingConfig::default())),
            url: self.url.clone(),
            follow: None,
            replicas: None,
        }
    }

    /// Runs `read` (of shard `shard`) where `consistency` lets it: a bounded read on a standby
    /// that fits its bound, its data no older than `not_before` (`replicas::mono_ms`: when the
    /// map the read was routed on was installed), else on this database (the primary). A
    /// standby read that fails is run again here. Says which served it.
    pub async fn read_where<T, F, Fut>(
        &self,
        shard: &ShardId,
        consistency: &Consistency,
        not_before: u64,
        read: F,
    ) -> Result<(T, ReadFrom), Error>
    where
        F: Fn(Database) -> Fut,
        Fut: std::future::Future<Output = Result<T, Error>>,
    {
        if let (Consistency::Bounded(bound), Some(replicas), Some(follow)) = (consistency, &self.replicas, &self.follow)
        {
            match replicas.choose(shard, follow.current_index(), bound, not_before, mono_ms()) {
                Some(standby) => {
                    let standby = Database { meter: self.meter.clone(), charge: self.charge.clone(), ..standby };
                    match read(standby).await {
                        Ok(value) => {
                            replicas.standby_reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            return Ok((value, ReadFrom::Standby));
                        }
                        Err(e) => {
                            replicas.fallbacks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            tracing::debug!(shard = %shard, error = %e, "a standby read failed: the primary serves it");
                        }
                    }
                }
                None => {
                    replicas.primary_reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            }
        }
        Ok((read(self.clone()).await?, ReadFrom::Primary))
    }

    /// Whether it reads from standbys ([`Database::reading_standbys`]).
    pub fn reads_standbys(&self) -> bool {
        self.replicas.is_some()
    }

    /// The primary's WAL insert position now, as the token a client brings back to read its own
    /// writes from a standby ([`Position`]), asked after a write's commit. `None` unless it reads
    /// from standbys, or when the primary does not answer in time.
    pub async fn position(&self, shard: &ShardId) -> Option<Position> {
        let replicas = self.replicas.as_ref()?;
        let asked = sqlx::query_scalar::<_, i64>(PRIMARY_POSITION).fetch_one(&self.pool);
        match tokio::time::timeout(replicas.timeout, asked).await {
            Ok(Ok(lsn)) => Some(Position { shard: shard.clone(), lsn: u64::try_from(lsn).ok()? }),
            Ok(Err(e)) => {
                tracing::debug!(shard = %shard, error = %e, "cannot read the primary's WAL position");
                None
            }
            Err(_) => None,
        }
    }

    /// The bounded reads of its standbys so far: served by a standby, by the primary for want
    /// of a standby that fit, and by the primary after a standby failed. `None` unless it reads
    /// from standbys.
    pub fn standby_reads(&self) -> Option<(u64, u64, u64)> {
        let r = self.replicas.as_ref()?;
        let load = |n: &std::sync::atomic::AtomicU64| n.load(std::sync::atomic::Ordering::Relaxed);
        Some((load(&r.standby_reads), load(&r.primary_reads), load(&r.fallbacks)))
    }

    /// Opens its future connections with `url`: the same database with another password
    /// (`storage.catalog_password_file` rotated). Connections open now stay as they are; a
    /// breaker's probe uses `url` too. [`Database::opened_with`] still names the URL it was
    /// opened with.
    pub fn set_url(&self, url: &SecretString) -> Result<(), Error> {
        // A pool of its own, never connected, only to build the driver's options as `open` does
        // (it also points the probe at `url`); its pools are then forgotten.
        let fresh = Self::open_with(url, &PoolConfig::default(), Some(self.health.clone()))?;
        match (&self.follow, &fresh.follow) {
            (Some(ours), Some(theirs)) => {
                ours.take_hosts(theirs)?;
                // The host it follows now, with the new password; the probe is its own again.
                point_pools(&self.pool, self.native.as_ref(), ours.current());
                self.health.on_probe(follow_probe(ours.clone(), self.pool.clone(), self.native.clone()));
            }
            (None, None) => {
                self.pool.set_connect_options((*fresh.pool.connect_options()).clone());
                if let (Some(native), Some(fresh)) = (&self.native, &fresh.native) {
                    native.set_connect_options((*fresh.connect_options()).clone());
                }
            }
            _ => return Err(hosts_changed()),
        }
        let pools = (self.pool.clone(), self.native.clone());
        self.health
            .on_broken_connection(Arc::new(move || close_idle(&pools.0) + pools.1.as_ref().map_or(0, close_idle)));
        Ok(())
    }

    /// Whether it was opened with `url` (a shard's URL may change: `PATCH /v1/admin/shards/{id}`).
    pub fn opened_with(&self, url: &SecretString) -> bool {
        self.url.expose_secret() == url.expose_secret()
    }

    /// The most connections its pool opens.
    pub fn max_connections(&self) -> u32 {
        self.pool.options().get_max_connections()
    }

    /// Its pool's connections now: open, idle among them, and the most it opens (the native
    /// PostgreSQL pool of bulk copies is not counted).
    pub fn connections(&self) -> PoolConnections {
        PoolConnections {
            open: self.pool.size(),
            idle: u32::try_from(self.pool.num_idle()).unwrap_or(u32::MAX),
            max: self.max_connections(),
        }
    }

    fn open_with(url: &SecretString, config: &PoolConfig, health: Option<Arc<Health>>) -> Result<Self, Error> {
        sqlx::any::install_default_drivers();
        let given = url.expose_secret();
        let engine = Engine::of_url(given)?;
        // Neither the URL given nor those prepared for the driver appear in a message.
        let invalid = |e: sqlx::Error, raw: &str| {
            Error::InvalidDatabaseUrl(redact_error(&e.to_string(), url).replace(raw, "<database url>"))
        };
        let (options, native_options, tls, follow) = match engine {
            Engine::Sqlite => {
                let raw = if given.contains('?') { given.to_owned() } else { format!("{given}?mode=rwc") };
                let options = AnyConnectOptions::from_str(&raw).map_err(|e| invalid(e, &raw))?;
                (options.disable_statement_logging(), None, None, None)
            }
            Engine::Postgres => {
                // One host of a URL that names one; each, if it names several.
                let list = split_hosts(given)?;
                let mut hosts = Vec::with_capacity(list.urls.len());
                let mut tls = None;
                for (host_url, name) in list.urls.iter().zip(&list.names) {
                    let prepared = prepare_url(host_url, |var| std::env::var(var).ok())?;
                    let any = AnyConnectOptions::from_str(&prepared.url)
                        .map_err(|e| invalid(e, &prepared.url))?
                        .disable_statement_logging();
                    let native = native_options(&prepared.url).map_err(|e| invalid(e, &prepared.url))?;
                    tls.get_or_insert(prepared.tls);
                    hosts.push(Host { name: name.clone(), any, native });
                }
                let follow =
                    list.follows().then(|| Follow::new(hosts.clone(), list.target, config.breaker.probe_timeout));
                let first = hosts.swap_remove(0);
                (first.any, Some(first.native), tls.map(Arc::new), follow)
            }
        };
        let max = match engine {
            Engine::Sqlite => config.max_connections.min(4),
            Engine::Postgres => config.max_connections,
        };
        let checks = follow.clone();
        let mut pool = AnyPoolOptions::new()
            .max_connections(max)
            .min_connections(0)
            .idle_timeout(config.idle_timeout)
            .acquire_timeout(config.acquire_timeout)
            // No ping round trip before every query: a broken connection fails its query, is
            // dropped, and the next acquire opens a new one.
            .test_before_acquire(false)
            .after_connect(move |conn, _meta| {
                let checks = checks.clone();
                Box::pin(async move {
                    if engine == Engine::Sqlite {
                        use sqlx::Executor;
                        conn.execute("PRAGMA journal_mode = WAL").await?;
                        conn.execute("PRAGMA synchronous = NORMAL").await?;
                        conn.execute("PRAGMA busy_timeout = 10000").await?;
                    }
                    if let Some(follow) = checks {
                        follow.check_new(conn).await?;
                    }
                    Ok(())
                })
            });
        if let Some(follow) = &follow {
            pool = pool.before_acquire(retire_before_move(follow.clone()));
        }
        let pool = pool.connect_lazy_with(options.clone());
        let native = native_options.map(|options| {
            let native = PgPoolOptions::new()
                .max_connections(NATIVE_CONNECTIONS)
                .min_connections(0)
                .idle_timeout(config.idle_timeout)
                .acquire_timeout(config.acquire_timeout)
                .test_before_acquire(false);
            match &follow {
                Some(follow) => native.before_acquire(retire_before_move(follow.clone())),
                None => native,
            }
            .connect_lazy_with(options)
        });
        let probe: ProbeConnect = match &follow {
            Some(follow) => follow_probe(follow.clone(), pool.clone(), native.clone()),
            None => connect_probe(options.clone()),
        };
        let health = match health {
            Some(health) => {
                health.on_probe(probe);
                health
            }
            None => {
                Arc::new(Health::new(config.breaker.clone(), config.statement_timeout, config.max_in_progress, probe))
            }
        };
        if let Some(follow) = &follow {
            follow.watched_by(&health);
        }
        let pools = (pool.clone(), native.clone());
        health.on_broken_connection(Arc::new(move || close_idle(&pools.0) + pools.1.as_ref().map_or(0, close_idle)));
        let batches = Arc::new(Batches::new(BatchingConfig::default()));
        let url = Arc::new(url.clone());
        Ok(Self {
            pool,
            engine,
            native,
            health,
            tls,
            meter: None,
            charge: Charge::default(),
            batches,
            url,
            follow,
            replicas: None,
        })
    }

    /// Opens one new connection of each of its pools (the engine-neutral one and, on
    /// PostgreSQL, the native one) and closes them: a registration's first contact with a
    /// database, so that a TLS failure is reported as what it is ([`Error::Tls`], naming
    /// `target`) rather than as the text of a failed migration. Other failures are
    /// [`Error::Database`].
    pub async fn check_connect(&self, target: &str) -> Result<(), Error> {
        use sqlx::Connection;
        let described = |source: sqlx::Error| match self
            .tls
            .as_deref()
            .and_then(|tls| crate::storage::pg_tls::tls_failure(&source, tls))
        {
            Some(reason) => Error::Tls { target: target.to_owned(), reason },
            None => Error::Database { target: target.to_owned(), source },
        };
        // A database that follows its primary is checked where its primary is now.
        if let Some(follow) = &self.follow
            && let Some(host) = follow.find().await.map_err(described)?
            && follow.move_to(&host)
        {
            point_pools(&self.pool, self.native.as_ref(), host);
        }
        let options = self.pool.connect_options();
        sqlx::AnyConnection::connect_with(&options).await.map_err(described)?.close().await.map_err(described)?;
        if let Some(native) = &self.native {
            let options = native.connect_options();
            sqlx::PgConnection::connect_with(&options).await.map_err(described)?.close().await.map_err(described)?;
        }
        Ok(())
    }

    /// What its URL asks of TLS (`None` for SQLite).
    pub fn tls(&self) -> Option<&PgTls> {
        self.tls.as_deref()
    }

    /// The database's breaker, bulkhead and statement deadline: run statements through it.
    pub fn health(&self) -> &Arc<Health> {
        &self.health
    }

    /// This database with its statements counted by `meter` (as [`Work::Maintenance`] until
    /// charged otherwise).
    pub fn metered(mut self, meter: Arc<LoadMeter>) -> Self {
        self.meter = Some(meter);
        self
    }

    /// This database with its point operations batched as `config` says (by default they are:
    /// [`BatchingConfig::default`]).
    pub fn batching(mut self, config: BatchingConfig) -> Self {
        self.batches = Arc::new(Batches::new(config));
        self
    }

    /// Its batchers of point operations.
    pub fn batches(&self) -> &Arc<Batches> {
        &self.batches
    }

    /// This database with its statements charged as `charge` says.
    pub fn charged(mut self, charge: Charge) -> Self {
        self.charge = charge;
        self
    }

    /// This database with its statements charged to `work` (on no vshard and no tenant).
    pub fn working_as(self, work: Work) -> Self {
        self.charged(Charge { work, ..Charge::default() })
    }

    /// What its statements are charged to.
    pub fn charge(&self) -> &Charge {
        &self.charge
    }

    /// Counts `sample` for shard `shard`, if the database is metered.
    pub fn record(&self, shard: &ShardId, sample: Sample) {
        if let Some(meter) = &self.meter {
            meter.record(shard, &self.charge, sample);
        }
    }

    /// Whether its statements are counted.
    pub fn is_metered(&self) -> bool {
        self.meter.is_some()
    }

    /// The native pool to this database if it is PostgreSQL: for what the engine-neutral pool
    /// cannot do (binary `COPY`).
    pub fn postgres(&self) -> Option<&PgPool> {
        self.native.as_ref()
    }

    /// Closes the database's pools, waiting for their connections to be returned and closed.
    pub async fn close(&self) {
        self.pool.close().await;
        if let Some(native) = &self.native {
            native.close().await;
        }
    }

    /// Applies the migrations of `schema` for this engine.
    pub async fn migrate(&self, schema: Schema) -> Result<(), Error> {
        let migrator = match (schema, self.engine) {
            (Schema::Catalog, Engine::Sqlite) => &CATALOG_SQLITE,
            (Schema::Catalog, Engine::Postgres) => &CATALOG_POSTGRES,
            (Schema::Shard, Engine::Sqlite) => &SHARD_SQLITE,
            (Schema::Shard, Engine::Postgres) => &SHARD_POSTGRES,
        };
        migrator.run(&self.pool).await.map_err(|e| Error::Migration(e.to_string()))
    }

    /// `SELECT 1` within `timeout`: the readiness probe.
    pub async fn ping(&self, timeout: Duration) -> Result<(), Error> {
        match tokio::time::timeout(timeout, sqlx::query("SELECT 1").execute(&self.pool)).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(Error::from(e)),
            Err(_) => Err(Error::Timeout),
        }
    }

    /// [`Database::ping`] for readiness probes, which anyone may send without limit: callers at
    /// the same time wait for one ping, and its outcome is reused for `reuse`, so a flood of
    /// probes costs the database at most one `SELECT 1` per `reuse`.
    pub async fn shared_ping(&self, timeout: Duration, reuse: Duration) -> Ping {
        let mut last = self.health.last_ping.lock().await;
        // An outcome is not reused once the breaker has changed state since: statements failed
        // (or succeeded) after it, and the answer must say what the database does now.
        let breaker = self.health.state();
        if let Some((at, ping, then)) = *last
            && at.elapsed() < reuse
            && then == breaker
        {
            return ping;
        }
        let started = std::time::Instant::now();
        let result = self.ping(timeout).await;
        self.health.pings.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let ping = match result {
            Ok(()) => Ping { latency_ms, failure: None },
            Err(e) => {
                tracing::warn!(error = %e, "readiness probe failed");
                let failure = if e.is_unavailable() { PingFailure::Unreachable } else { PingFailure::QueryFailed };
                Ping { latency_ms, failure: Some(failure) }
            }
        };
        *last = Some((std::time::Instant::now(), ping, self.health.state()));
        ping
    }

    /// How many pings [`Database::shared_ping`] has sent.
    pub fn pings(&self) -> u64 {
        self.health.pings.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Closes the connections idle in `pool` now (each one is taken as a statement would take it,
/// and closed instead of returned); returns how many. Connections in use are left alone.
fn close_idle<DB: sqlx::Database>(pool: &sqlx::Pool<DB>) -> usize {
    let mut closed = 0;
    for _ in 0..pool.num_idle() {
        let Some(mut connection) = pool.try_acquire() else { break };
        connection.close_on_drop();
        closed += 1;
    }
    closed
}

/// The options of a database's native pool ([`Database::postgres`]) from the URL prepared for
/// the driver.
fn native_options(prepared: &str) -> Result<PgConnectOptions, sqlx::Error> {
    // A bulk copy reads a whole tenant: on one core, so that it cannot take every core of the
    // shard from its traffic.
    let options = PgConnectOptions::from_str(prepared)?;
    // Named (unless the URL names its connections), so that operators tell bulk copies apart in
    // pg_stat_activity.
    let options = match options.get_application_name() {
        Some(_) => options,
        None => options.application_name(NATIVE_APPLICATION_NAME),
    };
    Ok(options.options([("max_parallel_workers_per_gather", "0")]).disable_statement_logging())
}

/// A pool's check before a statement takes a pooled connection, for a database that follows its
/// primary: a connection opened before the pools last moved to another host leads to the former
/// one, and is closed instead.
fn retire_before_move<C: Send + 'static>(
    follow: Arc<Follow>,
) -> impl for<'c> Fn(
    &'c mut C,
    sqlx::pool::PoolConnectionMetadata,
) -> futures::future::BoxFuture<'c, Result<bool, sqlx::Error>>
+ Send
+ Sync
+ 'static {
    move |_conn, meta| {
        let keep = !follow.opened_before_move(meta.age);
        Box::pin(async move { Ok(keep) })
    }
}

/// The primary's WAL insert position: every write acknowledged before it was asked lies at or
/// before it.
const PRIMARY_POSITION: &str = "SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint";

/// A standby's replay position, and whether it is a standby at all.
const STANDBY_POSITION: &str = "SELECT pg_is_in_recovery(), (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint";

/// Reads the primary's and the standbys' WAL positions every `poll_interval` until the database
/// is dropped (its [`Replicas`] with it).
fn spawn_replica_polls(replicas: std::sync::Weak<Replicas<Database>>, follow: Arc<Follow>, primary: AnyPool) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        tracing::warn!("no runtime to read the standbys' positions on: reads stay on the primary");
        return;
    };
    runtime.spawn(async move {
        let every = match replicas.upgrade() {
            Some(r) => r.config.poll_interval.max(Duration::from_millis(1)),
            None => return,
        };
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Some(replicas) = replicas.upgrade() else { return };
            poll_replicas(&replicas, &follow, &primary).await;
        }
    });
}

/// One reading of the primary's insert position and every standby's replay position, at once.
async fn poll_replicas(replicas: &Replicas<Database>, follow: &Follow, primary: &AnyPool) {
    let current = follow.current_index();
    let asked = mono_ms();
    let timeout = replicas.timeout;
    let position = tokio::time::timeout(timeout, sqlx::query_scalar::<_, i64>(PRIMARY_POSITION).fetch_one(primary));
    let standbys = futures::future::join_all(replicas.others(current).map(|(index, standby)| async move {
        let asked = sqlx::query_as::<_, (bool, Option<i64>)>(STANDBY_POSITION).fetch_one(&standby.db.pool);
        let replayed = match tokio::time::timeout(timeout, asked).await {
            Ok(Ok((true, Some(lsn)))) => u64::try_from(lsn).ok(),
            Ok(Ok(_)) => None,
            Ok(Err(e)) => {
                tracing::debug!(host = %standby.name, error = %e, "a standby did not say its replay position");
                None
            }
            Err(_) => None,
        };
        (index, replayed)
    }));
    let (position, standbys) = tokio::join!(position, standbys);
    if let Ok(Ok(lsn)) = position
        && let Ok(lsn) = u64::try_from(lsn)
    {
        replicas.sampled_primary(current, asked, lsn);
    }
    for (index, replayed) in standbys {
        replicas.sampled_standby(index, replayed);
    }
}

/// The probe of a database with one host: a new connection that answers `SELECT 1`.
fn connect_probe(options: AnyConnectOptions) -> ProbeConnect {
    Arc::new(move || {
        let options = options.clone();
        let probe: futures::future::BoxFuture<'static, Result<(), sqlx::Error>> = Box::pin(async move {
            use sqlx::Connection;
            let mut conn = sqlx::AnyConnection::connect_with(&options).await?;
            sqlx::query("SELECT 1").execute(&mut conn).await?;
            conn.close().await
        });
        probe
    })
}

/// Points a database's pools at `host`: their new connections go there.
fn point_pools(pool: &AnyPool, native: Option<&PgPool>, host: Host) {
    pool.set_connect_options(host.any);
    if let Some(native) = native {
        native.set_connect_options(host.native);
    }
}

/// The probe of a database that follows its primary: looks for the host that will do
/// ([`Follow::find`]) and, if it moved, points both pools there and closes their idle
/// connections (to the former host).
fn follow_probe(follow: Arc<Follow>, pool: AnyPool, native: Option<PgPool>) -> ProbeConnect {
    Arc::new(move || {
        let (follow, pool, native) = (follow.clone(), pool.clone(), native.clone());
        let probe: futures::future::BoxFuture<'static, Result<(), sqlx::Error>> = Box::pin(async move {
            if let Some(host) = follow.find().await?
                && follow.move_to(&host)
            {
                point_pools(&pool, native.as_ref(), host);
                close_idle(&pool);
                if let Some(native) = &native {
                    close_idle(native);
                }
            }
            Ok(())
        });
        probe
    })
}

/// The PostgreSQL server (`host:port`) a database URL points at (its first host, if it names
/// several); `None` for SQLite or a URL that does not parse (then no server budget applies).
pub fn server_of(url: &SecretString) -> Option<String> {
    if Engine::of_url(url.expose_secret()).ok()? != Engine::Postgres {
        return None;
    }
    let hosts = split_hosts(url.expose_secret()).ok()?;
    let parsed = url::Url::parse(hosts.urls.first()?).ok()?;
    Some(format!("{}:{}", parsed.host_str().unwrap_or("localhost"), parsed.port().unwrap_or(5432)))
}

impl PoolConfig {
    /// These settings for one of `sharing` shard pools on one server: an equal share of
    /// `max_connections_per_server`, at least one connection, at most `max_connections`.
    pub fn share_of_server(&self, sharing: usize) -> Self {
        let sharing = u32::try_from(sharing.max(1)).unwrap_or(u32::MAX);
        let share = (self.max_connections_per_server / sharing).clamp(1, self.max_connections.max(1));
        Self { max_connections: share, ..self.clone() }
    }
}

/// Removes the URL (which may hold a password) from a driver error message.
fn redact_error(message: &str, url: &SecretString) -> String {
    message.replace(url.expose_secret(), "<database url>")
}

/// Serde support for `Duration` fields written as `"5s"`, `"250ms"`, `"1h"`.
pub use crate::humantime_serde;

/// Declares each scenario `async fn name(fixture)` of a test file as two tests, `sqlite::name` and
/// `postgres::name`, each given the fixture built by its engine's expression (evaluated in the
/// test file's scope and awaited). For the test suites of this crate and the crates above it;
/// not part of the API.
///
/// ```ignore
/// on_both_engines!(sqlite: TestDb::sqlite(), postgres: TestDb::postgres("sg_blobs"); round_trip, purge);
/// ```
#[doc(hidden)]
#[macro_export]
macro_rules! on_both_engines {
    (sqlite: $sqlite:expr, postgres: $postgres:expr; $($scenario:ident),* $(,)?) => {
        mod sqlite {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $scenario() {
                    super::$scenario($sqlite.await).await;
                }
            )*
        }
        mod postgres {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $scenario() {
                    super::$scenario($postgres.await).await;
                }
            )*
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn readiness_pings_are_shared_by_concurrent_callers_and_reused_for_a_while() {
        let dir = tempfile::tempdir().unwrap();
        let url = SecretString::from(format!("sqlite://{}", dir.path().join("ping.db").display()));
        let db = Database::open(&url, &PoolConfig::default()).unwrap();
        let reuse = Duration::from_millis(200);
        let pings = futures::future::join_all((0..50).map(|_| db.shared_ping(Duration::from_secs(2), reuse))).await;
        assert!(pings.iter().all(|p| p.failure.is_none()), "{pings:?}");
        assert_eq!(db.pings(), 1, "fifty concurrent probes, one ping");
        db.clone().shared_ping(Duration::from_secs(2), reuse).await;
        assert_eq!(db.pings(), 1, "a clone shares the outcome");
        tokio::time::sleep(reuse).await;
        db.shared_ping(Duration::from_secs(2), reuse).await;
        assert_eq!(db.pings(), 2, "an outcome older than `reuse` is not reused");
    }

    /// A success taken before the breaker opened says nothing of the database now: the next
    /// probe pings again (a frozen catalog read `up` in `/readyz` for up to a second otherwise).
    #[tokio::test]
    async fn a_ping_is_not_reused_once_the_breaker_changed_state() {
        let dir = tempfile::tempdir().unwrap();
        let url = SecretString::from(format!("sqlite://{}", dir.path().join("ping.db").display()));
        let db = Database::open(&url, &PoolConfig::default()).unwrap();
        let (timeout, reuse) = (Duration::from_secs(2), Duration::from_secs(60));
        db.shared_ping(timeout, reuse).await;
        db.health().force(true, "a test");
        db.shared_ping(timeout, reuse).await;
        assert_eq!(db.pings(), 2, "the breaker opened after the first ping");
        db.shared_ping(timeout, reuse).await;
        assert_eq!(db.pings(), 2, "while it stays open, the outcome is reused");
    }
}
