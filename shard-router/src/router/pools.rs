//! The connection pools of one instance to its shards: one [`Database`] per registered shard
//! this instance uses, and the registered shards it does not use (quarantined: their database
//! carries another shard's identity marker), with the reason. Pools follow the catalog's list of
//! shards, and each PostgreSQL server's connection budget is shared out among the pools on it.
//!
//! It knows the catalog (to read the shards' URLs) and the stores below; nothing of routing
//! decisions, topology changes or jobs.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use secrecy::{ExposeSecret, SecretString};

use crate::catalog::{Catalog, ShardRow};
use crate::config::ShardSeed;
use crate::error::Error;
use crate::ids::ShardId;
use crate::map::{MapSnapshot, ShardState};
use crate::storage::batch::BatchingConfig;
use crate::storage::db::{Database, Engine, PoolConfig, Schema, server_of};
use crate::storage::meter::LoadMeter;
use crate::storage::password_file::PasswordFile;
use crate::storage::registration::{
    Claim, check_same_shard, claim_identity, read_identity, release_identity, shown_database_url,
};
use crate::storage::replicas::ReplicaReadsConfig;

/// How long registering a shard may take to connect and migrate it.
pub(crate) const REGISTER_TIMEOUT: Duration = Duration::from_secs(15);

/// The shard pools of this instance.
#[derive(Debug)]
pub struct ShardPools {
    pools: RwLock<HashMap<ShardId, Database>>,
    /// Registered shards this instance does not use: their database carries another shard's
    /// identity marker (see [`crate::storage::registration`]). They have no pool, until their
    /// URL changes to one that reaches their own database.
    quarantined: RwLock<HashMap<ShardId, Quarantine>>,
    /// The catalog's identity, which every shard database of it carries in its marker.
    catalog_id: String,
    config: PoolConfig,
    /// Counts the statements of every pool, if the load picture is on.
    meter: Option<Arc<LoadMeter>>,
    /// How every pool batches point operations (`storage.batching`).
    batching: BatchingConfig,
    /// Whether and how shards read from their standbys (`storage.replica_reads`).
    replica_reads: ReplicaReadsConfig,
    /// The shards whose password is read from a file (`storage.shards[].password_file`).
    passwords: ShardPasswords,
    /// Taken to read the shards' URLs again after a database refused a password
    /// ([`ShardPools::follow_refused_password`]), so that requests refused together read the
    /// catalog once; holds when the last such read started.
    refused_password: tokio::sync::Mutex<Option<tokio::time::Instant>>,
}

/// Why a registered shard is not used, and the URL that led to the wrong database: a new URL in
/// the catalog is checked again ([`ShardPools::sync`]).
#[derive(Debug, Clone)]
pub(crate) struct Quarantine {
    /// Why (for readiness, the shard's listing and its requests' errors).
    pub(crate) reason: String,
    /// The URL it was checked at.
    pub(crate) url: SecretString,
}

/// The password files of shards (`storage.shards[].password_file`), by shard.
#[derive(Debug, Default)]
pub(crate) struct ShardPasswords(HashMap<ShardId, PasswordFile>);

impl ShardPasswords {
    /// The password files of `seeds` that name one.
    pub(crate) fn of(seeds: &[ShardSeed]) -> Self {
        Self(
            seeds
                .iter()
                .filter_map(|seed| Some((seed.id.clone(), PasswordFile::new(seed.password_file.clone()?))))
                .collect(),
        )
    }

    /// The URL to open shard `id` with: `url` with its password file's content, if it has one.
    pub(crate) fn url_for(&self, id: &ShardId, url: &SecretString) -> Result<SecretString, Error> {
        match self.0.get(id) {
            Some(file) => file.apply(url).map_err(|e| match e {
                Error::InvalidDatabaseUrl(reason) => Error::InvalidDatabaseUrl(format!("shard {id}: {reason}")),
                other => other,
            }),
            None => Ok(url.clone()),
        }
    }

    /// Whether a file holds another password than when last read.
    fn changed(&self) -> bool {
        self.0.values().filter(|file| file.changed()).count() > 0
    }
}

impl ShardPools {
    /// The pools opened at start-up, and the shards left out.
    pub(crate) fn new(
        pools: HashMap<ShardId, Database>,
        quarantined: HashMap<ShardId, Quarantine>,
        catalog_id: String,
        config: PoolConfig,
        (meter, batching, replica_reads): (Option<Arc<LoadMeter>>, BatchingConfig, ReplicaReadsConfig),
        passwords: ShardPasswords,
    ) -> Self {
        let pools = pools
            .into_iter()
            .map(|(id, db)| {
                let db = db.reading_standbys(&replica_reads, &config);
                (id, prepared(db, meter.as_ref(), batching))
            })
            .collect();
        Self {
            pools: RwLock::new(pools),
            quarantined: RwLock::new(quarantined),
            catalog_id,
            config,
            meter,
            batching,
            replica_reads,
            passwords,
            refused_password: tokio::sync::Mutex::new(None),
        }
    }

    /// The URL this instance opens shard `id` with: `url` with the password of its password
    /// file, if it has one; `url` as it is (with a warning) if that file cannot be read.
    fn url_for(&self, id: &ShardId, url: &SecretString) -> SecretString {
        self.passwords.url_for(id, url).unwrap_or_else(|e| {
            tracing::warn!(shard = %id, error = %e, "cannot use the shard's password file");
            url.clone()
        })
    }

    /// On each catalog poll: if a shard's password file changed, reopens its pool with the new
    /// password (the old pool drains, see [`ShardPools::reopen_moved`]).
    pub(crate) async fn follow_password_files(&self, catalog: &Catalog) {
        if !self.passwords.changed() {
            return;
        }
        match catalog.list_shards().await {
            Ok(rows) => {
                self.reopen_moved(&rows);
            }
            Err(e) => tracing::warn!(error = %e, "cannot list shards to follow a changed password file"),
        }
    }

    /// After shard `id`'s database refused the password of a new connection: reads the shards'
    /// URLs from the catalog again, with their password files, and reopens the pool of each whose
    /// URL or password is not what it was opened with (another instance changed the URL, or the
    /// file was rotated, and this instance has not looked since; the old pool drains as in
    /// [`ShardPools::reopen_moved`]). Requests refused together read the catalog once: one that
    /// waited here while a read that started after it was refused ran takes that read's result.
    /// The caller runs the refused statement once more (it never reached the database); if the
    /// URL had not changed, it is refused again and that refusal is the answer.
    pub(crate) async fn follow_refused_password(&self, id: &ShardId, catalog: &Catalog) {
        let refused_at = tokio::time::Instant::now();
        let mut last_read = self.refused_password.lock().await;
        if last_read.is_some_and(|started| started >= refused_at) {
            return;
        }
        *last_read = Some(tokio::time::Instant::now());
        match catalog.list_shards().await {
            Ok(rows) => {
                self.reopen_moved(&rows);
            }
            Err(e) => tracing::warn!(shard = %id, error = %e, "cannot read the URL of a shard that refused a password"),
        }
    }

    /// The meter counting the statements on the shards, if the load picture is on.
    pub fn meter(&self) -> Option<&Arc<LoadMeter>> {
        self.meter.as_ref()
    }

    /// The catalog's identity, which every shard database of it carries in its marker.
    pub fn catalog_id(&self) -> &str {
        &self.catalog_id
    }

    /// The pool settings (`storage.pool`), before a server's budget is shared out.
    pub fn config(&self) -> &PoolConfig {
        &self.config
    }

    /// The pool of shard `id`; [`Error::ShardQuarantined`] if this instance does not use it.
    pub fn get(&self, id: &ShardId) -> Result<Database, Error> {
        if let Some(db) = self.pools.read().get(id) {
            return Ok(db.clone());
        }
        match self.quarantined.read().get(id) {
            Some(q) => Err(Error::ShardQuarantined { shard: id.clone(), reason: q.reason.clone() }),
            None => Err(Error::ShardNotFound(id.clone())),
        }
    }

    /// Every open pool (for `shardgate migrate`).
    pub fn all(&self) -> HashMap<ShardId, Database> {
        self.pools.read().clone()
    }

    /// Every pool of a shard in `map`, with the shard's state, in the map's order.
    pub fn with_states(&self, map: &MapSnapshot) -> Vec<(ShardId, ShardState, Database)> {
        let pools = self.pools.read();
        map.shards.iter().filter_map(|s| pools.get(&s.id).map(|db| (s.id.clone(), s.state, db.clone()))).collect()
    }

    /// The registered shards this instance does not use, with the reason (for readiness).
    pub fn quarantined(&self) -> Vec<(ShardId, String)> {
        let mut shards: Vec<_> = self.quarantined.read().iter().map(|(id, q)| (id.clone(), q.reason.clone())).collect();
        shards.sort();
        shards
    }

    /// Why this instance does not use shard `id`, if it does not.
    pub fn problem(&self, id: &ShardId) -> Option<String> {
        self.quarantined.read().get(id).map(|q| q.reason.clone())
    }

    /// Puts quarantined shard `id` to use at `url`, which was checked to reach its own database
    /// ([`ShardPools::check_same_database`]): a pool is opened there. Whether it was quarantined
    /// and now has a pool.
    pub(crate) fn lift_quarantine(&self, id: &ShardId, url: &SecretString) -> bool {
        if !self.quarantined.read().contains_key(id) {
            return false;
        }
        match Database::open(&self.url_for(id, url), &self.config) {
            Ok(db) => {
                self.pools.write().insert(id.clone(), self.prepared(db));
                self.quarantined.write().remove(id);
                tracing::info!(shard = %id, "shard put to use: its new URL reaches its own database");
                true
            }
            Err(e) => {
                tracing::warn!(shard = %id, error = %e, "cannot open a pool for a shard at its new URL");
                false
            }
        }
    }

    /// Checks again each quarantined shard whose URL in `rows` is not the one it was quarantined
    /// at, and puts it to use if the new URL reaches its own database. Whether one was.
    async fn recheck_quarantined(&self, rows: &[ShardRow]) -> bool {
        let changed: Vec<&ShardRow> = {
            let quarantined = self.quarantined.read();
            rows.iter()
                .filter(|row| {
                    quarantined.get(&row.id).is_some_and(|q| q.url.expose_secret() != row.url.expose_secret())
                })
                .collect()
        };
        let mut lifted = false;
        for row in changed {
            match self.check_same_database(&row.id, &row.url).await {
                Ok(()) => lifted |= self.lift_quarantine(&row.id, &row.url),
                Err(e) => {
                    let reason = e.to_string();
                    tracing::warn!(shard = %row.id, error = %reason, "a quarantined shard's new URL does not reach its own database either");
                    if let Some(q) = self.quarantined.write().get_mut(&row.id) {
                        *q = Quarantine { reason, url: row.url.clone() };
                    }
                }
            }
        }
        lifted
    }

    /// One look at the health of every shard database.
    pub fn tick(&self) {
        for db in self.pools.read().values() {
            db.health().tick();
        }
    }

    /// Adds the pool of a newly registered shard.
    pub(crate) fn insert(&self, id: ShardId, db: Database) {
        self.pools.write().insert(id, self.prepared(db));
    }

    /// Forgets an unregistered shard; returns its pool, if it had one.
    pub(crate) fn remove(&self, id: &ShardId) -> Option<Database> {
        self.quarantined.write().remove(id);
        self.pools.write().remove(id)
    }

    /// Opens a shard database to register it as `id` (see [`connect_shard`]).
    pub(crate) async fn connect(&self, id: &ShardId, url: &SecretString) -> Result<(Database, Claim), Error> {
        connect_shard(id, &self.url_for(id, url), &self.config, &self.catalog_id).await
    }

    /// Checks that `url` reaches shard `id`'s own database, before the catalog points the shard
    /// at it: the URL is opened as a registration opens one (TLS as it asks, first contact on
    /// its own so that a TLS failure is told as one) and the database must carry `id`'s identity
    /// marker of this catalog ([`Error::ShardIdentityMismatch`] otherwise). Nothing is written
    /// to it.
    pub(crate) async fn check_same_database(&self, id: &ShardId, url: &SecretString) -> Result<(), Error> {
        let unreachable = |reason: String| Error::ShardUnreachable {
            shard: id.clone(),
            reason: reason.replace(url.expose_secret(), "<url>"),
        };
        let target = format!("shard {id}");
        let config = PoolConfig { max_connections: 1, ..self.config.clone() };
        let db = Database::open(&self.passwords.url_for(id, url)?, &config).map_err(|e| e.tls_to(&target))?;
        let check = async {
            db.check_connect(&target).await?;
            read_identity(&db, id).await
        };
        let outcome = tokio::time::timeout(REGISTER_TIMEOUT, check).await;
        db.close().await;
        match outcome {
            Ok(Ok(found)) => check_same_shard(found.as_ref(), id, &self.catalog_id),
            Ok(Err(e @ Error::Tls { .. })) => Err(e),
            Ok(Err(e)) => Err(unreachable(e.to_string())),
            Err(_) => Err(unreachable("timed out connecting".to_owned())),
        }
    }

    /// Opens pools for shards another instance registered (`catalog` lists their URLs), closes
    /// pools of removed shards, and reopens the pools of shards whose URL changed.
    pub(crate) async fn sync(&self, map: &MapSnapshot, catalog: &Catalog) {
        self.quarantined.write().retain(|id, _| map.shard(id.as_str()).is_some());
        let missing: Vec<ShardId> = map
            .shards
            .iter()
            .filter(|s| !self.pools.read().contains_key(&s.id) && !self.quarantined.read().contains_key(&s.id))
            .map(|s| s.id.clone())
            .collect();
        let mut changed = false;
        // Read on every change of the map, which is when a URL may have changed.
        match catalog.list_shards().await {
            Ok(rows) => {
                for row in rows.iter().filter(|r| missing.contains(&r.id)) {
                    match Database::open(&self.url_for(&row.id, &row.url), &self.config) {
                        Ok(db) => {
                            self.pools.write().insert(row.id.clone(), self.prepared(db));
                            changed = true;
                        }
                        Err(e) => tracing::warn!(shard = %row.id, error = %e, "cannot open pool for a new shard"),
                    }
                }
                changed |= self.reopen_moved(&rows);
                changed |= self.recheck_quarantined(&rows).await;
            }
            Err(e) => tracing::warn!(error = %e, "cannot list shards to follow the catalog"),
        }
        let removed: Vec<Database> = {
            let mut pools = self.pools.write();
            let gone: Vec<ShardId> = pools.keys().filter(|id| map.shard(id.as_str()).is_none()).cloned().collect();
            gone.iter().filter_map(|id| pools.remove(id)).collect()
        };
        changed |= !removed.is_empty();
        for db in removed {
            db.close().await;
        }
        if changed {
            self.rebalance(catalog).await;
        }
    }

    /// Replaces the pool of every shard of `rows` whose URL is not the one its pool was opened
    /// with (`PATCH /v1/admin/shards/{id}` changed it) by a pool to the new URL, with the same
    /// health, batchers and meter. The old pool is drained, not cut: statements that hold or
    /// wait for one of its connections finish on it, and it closes when its last user drops it;
    /// every statement that starts after the swap takes the new pool. Returns whether one was
    /// replaced.
    pub(crate) fn reopen_moved(&self, rows: &[ShardRow]) -> bool {
        let sharing = pools_per_server(rows);
        let mut replaced = false;
        let mut pools = self.pools.write();
        for row in rows {
            let Some(db) = pools.get(&row.id) else { continue };
            let url = self.url_for(&row.id, &row.url);
            if db.opened_with(&url) {
                continue;
            }
            match db.resized(&url, &pool_share(&self.config, &row.url, &sharing)) {
                Ok(reopened) => {
                    tracing::info!(shard = %row.id, url = %shown_database_url(&row.url), "shard pool reopened: its URL or password changed");
                    pools.insert(row.id.clone(), reopened);
                    replaced = true;
                }
                Err(e) => tracing::warn!(shard = %row.id, error = %e, "cannot reopen a shard pool at its new URL"),
            }
        }
        replaced
    }

    /// Gives every shard pool its share of its server's connection budget again
    /// (`storage.pool.max_connections_per_server`), after shards came or went. A pool whose share
    /// changed is replaced by one of the new size with the same health; the old one closes when
    /// the statements still using it are done.
    pub(crate) async fn rebalance(&self, catalog: &Catalog) {
        let rows = match catalog.list_shards().await {
            Ok(rows) => rows,
            Err(e) => {
                tracing::warn!(error = %e, "cannot list shards to share out connections");
                return;
            }
        };
        let sharing = pools_per_server(&rows);
        let mut pools = self.pools.write();
        for row in rows {
            let config = pool_share(&self.config, &row.url, &sharing);
            let Some(db) = pools.get(&row.id) else { continue };
            if db.engine != Engine::Postgres || db.max_connections() == config.max_connections {
                continue;
            }
            match db.resized(&self.url_for(&row.id, &row.url), &config) {
                Ok(resized) => {
                    tracing::info!(shard = %row.id, connections = config.max_connections, "shard pool resized");
                    pools.insert(row.id, resized);
                }
                Err(e) => tracing::warn!(shard = %row.id, error = %e, "cannot resize a shard pool"),
            }
        }
    }

    /// Erases shard `id`'s identity marker from its database, so the database may be registered
    /// again under any id. Best effort: if it fails, the database can be registered again under
    /// `id` only.
    pub(crate) async fn release_marker(&self, db: &Database, id: &ShardId) {
        match tokio::time::timeout(self.config.probe_timeout, release_identity(db, id, &self.catalog_id)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(shard = %id, error = %e, "could not erase the shard's identity marker"),
            Err(_) => tracing::warn!(shard = %id, "erasing the shard's identity marker timed out"),
        }
    }
}

/// `db`, batching as `batching` says and counted by `meter` if there is one.
fn prepared(db: Database, meter: Option<&Arc<LoadMeter>>, batching: BatchingConfig) -> Database {
    let db = db.batching(batching);
    match meter {
        Some(meter) => db.metered(meter.clone()),
        None => db,
    }
}

impl ShardPools {
    /// `storage.replica_reads` as configured.
    pub fn replica_reads(&self) -> &ReplicaReadsConfig {
        &self.replica_reads
    }

    /// `db`, a shard's pool, as this instance uses it: reading from its standbys if they are on,
    /// batched and metered.
    fn prepared(&self, db: Database) -> Database {
        prepared(db.reading_standbys(&self.replica_reads, &self.config), self.meter.as_ref(), self.batching)
    }
}

/// How many shard pools each PostgreSQL server holds.
pub(crate) fn pools_per_server(rows: &[ShardRow]) -> HashMap<String, usize> {
    let mut sharing = HashMap::new();
    for server in rows.iter().filter_map(|row| server_of(&row.url)) {
        *sharing.entry(server).or_insert(0) += 1;
    }
    sharing
}

/// The pool settings of the shard at `url`: its share of its server's budget.
pub(crate) fn pool_share(config: &PoolConfig, url: &SecretString, sharing: &HashMap<String, usize>) -> PoolConfig {
    match server_of(url).and_then(|server| sharing.get(&server).copied()) {
        Some(pools) => config.share_of_server(pools),
        None => config.clone(),
    }
}

/// Opens a shard database to register it as `id`: checks it answers, applies the shard
/// migrations and claims it with the identity marker `(catalog_id, id)` (see
/// [`crate::storage::registration`]); the caller decides what another marker means.
pub(crate) async fn connect_shard(
    id: &ShardId,
    url: &SecretString,
    pool: &PoolConfig,
    catalog_id: &str,
) -> Result<(Database, Claim), Error> {
    let unreachable = |reason: String| Error::ShardUnreachable {
        shard: id.clone(),
        reason: reason.replace(url.expose_secret(), "<url>"),
    };
    let target = format!("shard {id}");
    let db = Database::open(url, pool).map_err(|e| e.tls_to(&target))?;
    let connect = async {
        // First contact on its own, so that a TLS failure is told as one (a migration's error
        // is text only).
        db.check_connect(&target).await?;
        db.migrate(Schema::Shard).await?;
        claim_identity(&db, id, catalog_id).await
    };
    let outcome = tokio::time::timeout(REGISTER_TIMEOUT, connect).await;
    match outcome {
        Ok(Ok(claim)) => Ok((db, claim)),
        Ok(Err(e @ Error::Tls { .. })) => {
            db.close().await;
            Err(e)
        }
        Ok(Err(e)) => {
            db.close().await;
            Err(unreachable(e.to_string()))
        }
        Err(_) => {
            db.close().await;
            Err(unreachable("timed out connecting and migrating".to_owned()))
        }
    }
}
