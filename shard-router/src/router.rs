//! [`ShardRouter`]: the catalog, the in-memory shard map and the shard pools behind one type.
//! Data-plane calls route and hand out the pool of the right shard; admin calls change the
//! catalog first and then the in-memory map, one change at a time.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;

use crate::blobs::BlobStore;
use crate::catalog::CollectionRow;
use crate::catalog::{Audit, Catalog, ShardRow, TenantChange, TenantRow};
use crate::clock::now_ms;
use crate::db::{Database, Engine, PoolConfig, Schema, server_of};
use crate::error::Error;
use crate::health::{Health, HealthReport};
use crate::ids::{CollectionName, RecordKey};
use crate::ids::{ShardId, TenantId};
use crate::map::{Distribution, Spread};
use crate::map::{
    Incarnation, MapSnapshot, Route, RouteError, ShardEntry, ShardState, TenantEntry, TenantRateLimit, Tier,
    spread_vshards,
};
use crate::records::{Layout, ListBounds, RecordAddress, RecordStore, StoredRecord, WriteCondition};
use crate::registration::{Claim, check_shard_url, claim_identity, release_identity};
use crate::shard::ShardStore;
use crate::shard::{FenceLayout, FencedShard};

/// How often the health watchdog looks at the catalog and every shard database
/// ([`ShardRouter::tick_health`]).
pub const HEALTH_TICK: Duration = Duration::from_millis(50);

/// How often a request waiting for a moving tenant's new shard looks at the catalog.
const MOVE_POLL: Duration = Duration::from_millis(5);

/// How long registering a shard may take to connect and migrate it.
const REGISTER_TIMEOUT: Duration = Duration::from_secs(15);

/// The `[storage]` configuration section.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StorageConfig {
    /// Catalog database URL (`postgres://...` or `sqlite://...`). Default: unset, which means the
    /// embedded default: a SQLite catalog at `<data_dir>/catalog.db`.
    pub catalog_url: Option<SecretString>,
    /// Shards registered at start-up if the catalog does not have them yet. On a new catalog the
    /// vshards are spread evenly over them. Default: none (and, on the embedded default,
    /// `embedded_shards` SQLite shards in `<data_dir>/shards/`).
    pub shards: Vec<ShardSeed>,
    /// How many SQLite shards the embedded default creates on first start. Default 4.
    pub embedded_shards: u16,
    /// Connection pools, per database.
    pub pool: PoolConfig,
    /// Apply catalog and shard migrations when the server starts. Default true.
    pub migrate_on_start: bool,
    /// How data moves between shards.
    pub moves: MoveConfig,
    /// How long a listing of a distributed collection waits for each shard before it answers
    /// without that shard's records (reporting it). Default 2 s.
    #[serde(with = "crate::humantime_serde")]
    pub fan_out_deadline: Duration,
}

impl Default for StorageConfig {
    fn default() -> Self {
        Self {
            catalog_url: None,
            shards: Vec::new(),
            embedded_shards: 4,
            pool: PoolConfig::default(),
            migrate_on_start: true,
            moves: MoveConfig::default(),
            fan_out_deadline: Duration::from_secs(2),
        }
    }
}

/// The `[storage.moves]` configuration section: how tenants move between shards.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MoveConfig {
    /// How long a request for a tenant in its cut-over waits for the tenant's new shard before
    /// 503 `tenant_moving`. Default 2 s.
    #[serde(with = "crate::humantime_serde")]
    pub cutover_wait: Duration,
    /// The copy's speed limit in bytes per second, so a move cannot starve the shards' regular
    /// traffic (0: no limit). Default 4 MiB/s: measured by `bench/src/bin/moves.rs` on two
    /// cores, the other tenants' p99 stays near its level before the move; unthrottled, it
    /// rises by more than half.
    pub copy_bytes_per_second: u64,
    /// How long the old copy of a moved tenant stays on its old shard (for downloads still
    /// streaming from it) before it is removed. Default 60 s.
    #[serde(with = "crate::humantime_serde")]
    pub cleanup_grace: Duration,
    /// How long an instance holds a job it runs without renewing; another instance takes over a
    /// job whose holder stopped renewing (crashed) after this. Default 5 s.
    #[serde(with = "crate::humantime_serde")]
    pub lease: Duration,
    /// A pause at every phase boundary of a move, for tests that stop an instance in a given
    /// phase. Default 0 (none).
    #[serde(with = "crate::humantime_serde")]
    pub phase_pause: Duration,
    /// On SQLite shards, how far apart the clocks of the instances (and a write's time stamp and
    /// its commit) may be: a catch-up pass takes the rows changed since the previous one began,
    /// less this. PostgreSQL shards need no margin: there a pass takes the rows of the
    /// transactions not yet committed when the previous one began. Default 1 s.
    #[serde(with = "crate::humantime_serde")]
    pub clock_margin: Duration,
    /// About how many bytes one batch of a move's first copy takes. Each batch commits on the
    /// target and the job remembers where it stands, so a copy taken over by another instance
    /// (the one running it crashed or lost the catalog) resumes after the last batch rather
    /// than from the start. Default 16 MiB: four seconds at the default pace.
    pub copy_batch_bytes: u64,
}

impl Default for MoveConfig {
    fn default() -> Self {
        Self {
            cutover_wait: Duration::from_secs(2),
            copy_bytes_per_second: 4 << 20,
            cleanup_grace: Duration::from_secs(60),
            lease: Duration::from_secs(5),
            phase_pause: Duration::ZERO,
            clock_margin: Duration::from_secs(1),
            copy_batch_bytes: 16 << 20,
        }
    }
}

/// A shard named in configuration.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardSeed {
    /// Its id.
    pub id: ShardId,
    /// Its URL (kept secret).
    pub url: SecretString,
}

/// What a request wants to do on a shard; decides which shard states let it through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reads work on `active` and `read_only` shards.
    Read,
    /// Writes work on `active` shards only.
    Write,
}

/// A registered shard with its statistics.
#[derive(Debug, Clone)]
pub struct ShardStats {
    /// The catalog row.
    pub shard: ShardRow,
    /// vshards it owns.
    pub vshards: u64,
    /// Tenants whose home it is (pinned or hashed).
    pub tenants: u64,
    /// Tenants pinned to it.
    pub pinned_tenants: u64,
    /// Live records on it; `None` when it cannot be counted (offline or unreachable).
    pub records: Option<u64>,
    /// Its database's health on this instance; `None` when no pool is open for it.
    pub health: Option<HealthReport>,
    /// Why this instance does not use it, if it does not (its database carries another shard's
    /// identity marker).
    pub problem: Option<String>,
}

/// Catalog, shard map and shard pools.
#[derive(Debug)]
pub struct ShardRouter {
    catalog: Catalog,
    map: RwLock<MapSnapshot>,
    pools: RwLock<HashMap<ShardId, Database>>,
    /// Registered shards this instance does not use, with the reason: their database carries
    /// another shard's identity marker (see [`crate::registration`]). They have no pool.
    quarantined: RwLock<HashMap<ShardId, String>>,
    /// The catalog's identity, which every shard database of it carries in its marker.
    catalog_id: String,
    pool_config: PoolConfig,
    /// Serialises admin changes so the in-memory map follows the catalog's epoch order.
    admin: tokio::sync::Mutex<()>,
    /// When a request waiting for a cut-over last refreshed the map.
    last_refresh: tokio::sync::Mutex<tokio::time::Instant>,
    /// How data moves between shards (`[storage.moves]`).
    moves: MoveConfig,
    /// `storage.fan_out_deadline`.
    fan_out_deadline: Duration,
}

impl ShardRouter {
    /// Opens the catalog (migrating it if configured), registers configured shards the catalog
    /// does not know yet, opens a pool per shard and loads the map.
    pub async fn open(config: &StorageConfig, data_dir: &Path) -> Result<Self, Error> {
        let embedded = config.catalog_url.is_none();
        let catalog_url = match &config.catalog_url {
            Some(url) => url.clone(),
            None => {
                std::fs::create_dir_all(data_dir).map_err(|e| {
                    Error::InvalidDatabaseUrl(format!("cannot create data dir {}: {e}", data_dir.display()))
                })?;
                sqlite_url(&data_dir.join("catalog.db"))
            }
        };
        let catalog_target = "the catalog (storage.catalog_url)";
        let catalog_db = Database::open(&catalog_url, &config.pool).map_err(|e| e.tls_to(catalog_target))?;
        // A TLS failure stops the start with what failed; anything else (the catalog not up
        // yet) is left to the steps below, as before.
        if catalog_db.tls().is_some()
            && let Ok(Err(e @ Error::Tls { .. })) =
                tokio::time::timeout(config.pool.acquire_timeout, catalog_db.check_connect(catalog_target)).await
        {
            return Err(e);
        }
        if config.migrate_on_start {
            catalog_db.migrate(Schema::Catalog).await?;
        }
        let catalog = Catalog::new(catalog_db);
        let catalog_id = catalog.identity().await?;
        let catalog_engine = catalog.database().engine;
        for seed in &config.shards {
            check_shard_url(&seed.url, catalog_engine).map_err(|e| match e {
                Error::UnsafeShardUrl(reason) => {
                    Error::UnsafeShardUrl(format!("storage.shards, shard {}: {reason}", seed.id))
                }
                Error::InvalidDatabaseUrl(reason) => {
                    Error::InvalidDatabaseUrl(format!("storage.shards, shard {}: {reason}", seed.id))
                }
                other => other.tls_to(format!("shard {} (storage.shards)", seed.id)),
            })?;
        }

        let registered = catalog.list_shards().await?;
        let mut seeds = config.shards.clone();
        if seeds.is_empty() && embedded && registered.is_empty() {
            let dir = data_dir.join("shards");
            std::fs::create_dir_all(&dir)
                .map_err(|e| Error::InvalidDatabaseUrl(format!("cannot create {}: {e}", dir.display())))?;
            for i in 0..config.embedded_shards {
                let id = ShardId::parse(&format!("shard-{i}")).map_err(|e| Error::Corrupt(e.to_string()))?;
                seeds.push(ShardSeed { id, url: sqlite_url(&dir.join(format!("shard-{i}.db"))) });
            }
        }
        let now = now_ms();
        let mut new_rows = Vec::new();
        for seed in &seeds {
            if registered.iter().any(|r| r.id == seed.id) {
                continue;
            }
            let (db, claim) = connect_shard(&seed.id, &seed.url, &config.pool, &catalog_id).await?;
            db.close().await;
            claim.refuse_other(&seed.id, &catalog_id, |id| registered.iter().any(|r| r.id.as_str() == id))?;
            new_rows.push(ShardRow {
                id: seed.id.clone(),
                url: seed.url.clone(),
                engine: check_shard_url(&seed.url, catalog_engine)?,
                state: ShardState::Active,
                created_at_ms: now,
                updated_at_ms: now,
            });
        }
        if !new_rows.is_empty() {
            let owners: Vec<ShardId> = spread_vshards(crate::hash::DEFAULT_VSHARD_COUNT, seeds.len())
                .into_iter()
                .map(|i| seeds[usize::from(i)].id.clone())
                .collect();
            let audit = Audit {
                actor: "system".to_owned(),
                tenant: None,
                action: "shard.bootstrap",
                target: new_rows.iter().map(|r| format!("shard:{}", r.id)).collect::<Vec<_>>().join(" "),
                request_id: "start-up".to_owned(),
            };
            catalog.bootstrap_shards(&new_rows, &owners, &audit).await?;
        }

        let mut pools = HashMap::new();
        let mut quarantined = HashMap::new();
        let rows = catalog.list_shards().await?;
        let sharing = pools_per_server(&rows);
        for shard in &rows {
            let db = Database::open(&shard.url, &pool_share(&config.pool, &shard.url, &sharing))
                .map_err(|e| e.tls_to(format!("shard {}", shard.id)))?;
            if shard.state != ShardState::Offline {
                if config.migrate_on_start
                    && let Err(e) = db.migrate(Schema::Shard).await
                {
                    tracing::warn!(shard = %shard.id, error = %e, "shard migration failed at start-up; the shard will report unready");
                }
                if let Some(reason) = check_identity_at_open(&db, shard, &catalog_id, &rows).await {
                    db.close().await;
                    quarantined.insert(shard.id.clone(), reason);
                    continue;
                }
            }
            pools.insert(shard.id.clone(), db);
        }
        let map = catalog.load_map().await?;
        tracing::info!(epoch = map.epoch, shards = map.shards.len(), tenants = map.tenants.len(), "shard map loaded");
        Ok(Self {
            catalog,
            map: RwLock::new(map),
            pools: RwLock::new(pools),
            quarantined: RwLock::new(quarantined),
            catalog_id,
            pool_config: config.pool.clone(),
            admin: tokio::sync::Mutex::new(()),
            last_refresh: tokio::sync::Mutex::new(tokio::time::Instant::now()),
            moves: config.moves.clone(),
            fan_out_deadline: config.fan_out_deadline,
        })
    }

    /// Applies catalog and shard migrations to every configured and registered database, then
    /// closes. Used by `shardgate migrate`.
    pub async fn migrate_all(config: &StorageConfig, data_dir: &Path) -> Result<Vec<String>, Error> {
        let mut config = config.clone();
        config.migrate_on_start = true;
        let router = Self::open(&config, data_dir).await?;
        let mut migrated = vec!["catalog".to_owned()];
        let pools = router.pools.read().clone();
        for (id, db) in pools {
            db.migrate(Schema::Shard)
                .await
                .map_err(|e| Error::ShardUnreachable { shard: id.clone(), reason: e.to_string() })?;
            migrated.push(format!("shard {id}"));
        }
        Ok(migrated)
    }

    /// Reloads the map from the catalog if the catalog's epoch is newer than the map's. Returns
    /// the catalog heads.
    pub async fn refresh(&self) -> Result<crate::catalog::CatalogHeads, Error> {
        let heads = self.catalog.heads().await?;
        if heads.epoch > self.map.read().epoch {
            let _guard = self.admin.lock().await;
            if heads.epoch > self.map.read().epoch {
                let map = self.catalog.load_map().await?;
                self.sync_pools(&map).await;
                tracing::info!(epoch = map.epoch, "shard map refreshed from the catalog");
                *self.map.write() = map;
            }
        }
        Ok(heads)
    }

    /// Opens pools for shards another instance registered, closes pools of removed shards.
    async fn sync_pools(&self, map: &MapSnapshot) {
        self.quarantined.write().retain(|id, _| map.shard(id.as_str()).is_some());
        let missing: Vec<ShardId> = map
            .shards
            .iter()
            .filter(|s| !self.pools.read().contains_key(&s.id) && !self.quarantined.read().contains_key(&s.id))
            .map(|s| s.id.clone())
            .collect();
        if !missing.is_empty()
            && let Ok(rows) = self.catalog.list_shards().await
        {
            for row in rows.into_iter().filter(|r| missing.contains(&r.id)) {
                match Database::open(&row.url, &self.pool_config) {
                    Ok(db) => {
                        self.pools.write().insert(row.id, db);
                    }
                    Err(e) => tracing::warn!(shard = %row.id, error = %e, "cannot open pool for a new shard"),
                }
            }
        }
        let removed: Vec<Database> = {
            let mut pools = self.pools.write();
            let gone: Vec<ShardId> = pools.keys().filter(|id| map.shard(id.as_str()).is_none()).cloned().collect();
            gone.iter().filter_map(|id| pools.remove(id)).collect()
        };
        let changed = !missing.is_empty() || !removed.is_empty();
        for db in removed {
            db.close().await;
        }
        if changed {
            self.rebalance_pools().await;
        }
    }

    /// Gives every shard pool its share of its server's connection budget again
    /// (`storage.pool.max_connections_per_server`), after shards came or went. A pool whose share
    /// changed is replaced by one of the new size with the same health; the old one closes when
    /// the statements still using it are done.
    async fn rebalance_pools(&self) {
        let rows = match self.catalog.list_shards().await {
            Ok(rows) => rows,
            Err(e) => {
                tracing::warn!(error = %e, "cannot list shards to share out connections");
                return;
            }
        };
        let sharing = pools_per_server(&rows);
        let mut pools = self.pools.write();
        for row in rows {
            let config = pool_share(&self.pool_config, &row.url, &sharing);
            let Some(db) = pools.get(&row.id) else { continue };
            if db.engine != Engine::Postgres || db.max_connections() == config.max_connections {
                continue;
            }
            match db.resized(&row.url, &config) {
                Ok(resized) => {
                    tracing::info!(shard = %row.id, connections = config.max_connections, "shard pool resized");
                    pools.insert(row.id, resized);
                }
                Err(e) => tracing::warn!(shard = %row.id, error = %e, "cannot resize a shard pool"),
            }
        }
    }

    /// The current map epoch.
    pub fn epoch(&self) -> u64 {
        self.map.read().epoch
    }

    /// How data moves between shards.
    pub fn move_config(&self) -> &MoveConfig {
        &self.moves
    }

    /// The catalog.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// Reads the map under its lock.
    pub fn with_map<T>(&self, f: impl FnOnce(&MapSnapshot) -> T) -> T {
        f(&self.map.read())
    }

    /// Replaces the map in memory only (the catalog keeps what it holds): a test's way to have
    /// the map change at a chosen moment.
    #[cfg(test)]
    pub(crate) fn replace_map(&self, map: MapSnapshot) {
        *self.map.write() = map;
    }

    /// Routes `tenant`'s home data.
    pub fn route_tenant(&self, tenant: &TenantId) -> Result<Route, Error> {
        self.map.read().route_tenant(tenant.as_str()).map_err(route_error)
    }

    /// A tenant's tier and its own rate limit, if it exists (from memory: no catalog access).
    pub fn tenant_limits(&self, tenant: &str) -> Option<(Tier, Option<TenantRateLimit>)> {
        self.map.read().tenants.get(tenant).map(|entry| (entry.tier, entry.rate_limit))
    }

    /// Routes `tenant` and returns the shard's record store inputs if the shard's state allows
    /// `access`.
    pub fn resolve(&self, tenant: &TenantId, access: Access) -> Result<(Route, Database), Error> {
        let route = self.route_tenant(tenant)?;
        self.allowed(route, access)
    }

    /// `route` and its shard's pool, if the shard's state allows `access`.
    fn allowed(&self, route: Route, access: Access) -> Result<(Route, Database), Error> {
        match (route.shard_state, access) {
            (ShardState::Offline, _) => return Err(Error::ShardOffline(route.shard)),
            (ShardState::ReadOnly, Access::Write) => return Err(Error::ShardReadOnly(route.shard)),
            _ => {}
        }
        let db = self.shard_db(&route.shard)?;
        Ok((route, db))
    }

    /// The incarnation of `tenant` in this instance's map, if the map knows the tenant.
    pub fn known_incarnation(&self, tenant: &str) -> Option<Incarnation> {
        self.map.read().tenants.get(tenant).map(|entry| entry.incarnation)
    }

    /// The incarnation of `tenant` in this instance's map; [`Error::TenantNotFound`] if the map
    /// does not know it even after checking the catalog for a newer map once (another instance
    /// may have just created it).
    pub async fn incarnation(&self, tenant: &TenantId) -> Result<Incarnation, Error> {
        if let Some(incarnation) = self.known_incarnation(tenant.as_str()) {
            return Ok(incarnation);
        }
        self.refresh().await?;
        self.known_incarnation(tenant.as_str()).ok_or(Error::TenantNotFound)
    }

    /// Like [`ShardRouter::resolve`], but when the tenant is unknown to this instance's map, first
    /// checks the catalog for a newer map (another instance may have just created the tenant),
    /// refreshes, and tries once more.
    pub async fn resolve_fresh(&self, tenant: &TenantId, access: Access) -> Result<(Route, Database), Error> {
        match self.resolve(tenant, access) {
            Err(Error::TenantNotFound) => {
                self.refresh().await?;
                self.resolve(tenant, access)
            }
            other => other,
        }
    }

    /// Routes a write for `tenant` and runs `write` on the shard. If the shard refuses it because
    /// this instance's map is older than the shard's fence, refreshes the map from the catalog and
    /// runs it once more on the new route (which may now say the shard is read-only, or elsewhere).
    /// If the tenant is being moved off the shard (its fence there: see [`crate::mover`]), waits
    /// for the map that routes it to its new shard and runs it there, for at most
    /// `moves.cutover_wait`; then [`Error::TenantMoving`].
    pub async fn write<T, F, Fut>(&self, tenant: &TenantId, write: F) -> Result<T, Error>
    where
        F: Fn(Route, Database) -> Fut,
        Fut: std::future::Future<Output = Result<T, Error>>,
    {
        self.settled(tenant, Access::Write, write).await.map_err(Error::of_write)
    }

    /// Routes a read of `tenant` and runs `read` on the shard; if the tenant has moved off that
    /// shard since this instance's map was loaded, waits for the map that routes it to its new
    /// shard and reads there (as [`ShardRouter::write`] does).
    pub async fn read<T, F, Fut>(&self, tenant: &TenantId, read: F) -> Result<T, Error>
    where
        F: Fn(Route, Database) -> Fut,
        Fut: std::future::Future<Output = Result<T, Error>>,
    {
        self.settled(tenant, Access::Read, read).await
    }

    async fn settled<T, F, Fut>(&self, tenant: &TenantId, access: Access, op: F) -> Result<T, Error>
    where
        F: Fn(Route, Database) -> Fut,
        Fut: std::future::Future<Output = Result<T, Error>>,
    {
        self.settled_on(tenant, || self.resolve(tenant, access), op).await
    }

    /// Runs `op` on what `resolve` routes to, routing again after a refresh when the shard's
    /// fence or a move's fence refuses it (see [`ShardRouter::write`]).
    async fn settled_on<T, R, F, Fut>(&self, tenant: &TenantId, resolve: R, op: F) -> Result<T, Error>
    where
        R: Fn() -> Result<(Route, Database), Error>,
        F: Fn(Route, Database) -> Fut,
        Fut: std::future::Future<Output = Result<T, Error>>,
    {
        let give_up = self.cutover_deadline();
        let (mut route, mut db) = match resolve() {
            Err(Error::TenantNotFound) => {
                self.refresh().await?;
                resolve()?
            }
            other => other?,
        };
        let mut refreshed = false;
        loop {
            match op(route, db).await {
                Err(Error::StaleMap(shard)) if !refreshed => {
                    tracing::info!(shard = %shard, epoch = self.epoch(), "write refused by the shard fence; refreshing the map");
                    refreshed = true;
                    self.refresh().await?;
                }
                Err(
                    Error::TenantFenced { .. }
                    | Error::TenantMoved { .. }
                    | Error::VshardFenced { .. }
                    | Error::RangeFenced { .. }
                    | Error::CollectionFenced { .. },
                ) => {
                    if !self.wait_for_cutover(give_up).await? {
                        return Err(Error::TenantMoving(tenant.clone()));
                    }
                }
                other => return other,
            }
            (route, db) = resolve()?;
        }
    }

    /// The distribution of `tenant`'s `collection` in this instance's map.
    pub fn distribution_of(&self, tenant: &TenantId, collection: &CollectionName) -> Distribution {
        self.map
            .read()
            .spread_of(tenant.as_str(), collection.as_str())
            .map_or(Distribution::Tenant, Spread::distribution)
    }

    /// Routes the record at `addr`: to its tenant's home shard, or where its collection's
    /// distribution places it.
    pub fn route_record(&self, addr: RecordAddress<'_>) -> Result<Route, Error> {
        self.map
            .read()
            .route_record(addr.tenant.as_str(), addr.collection.as_str(), addr.key.as_str())
            .map_err(route_error)
    }

    /// Routes the record at `addr` and returns the shard's pool if its state allows `access`.
    pub fn resolve_record(&self, addr: RecordAddress<'_>, access: Access) -> Result<(Route, Database), Error> {
        let route = self.route_record(addr)?;
        self.allowed(route, access)
    }

    /// [`ShardRouter::resolve_record`], checking the catalog for a newer map once when the
    /// tenant is unknown (as [`ShardRouter::resolve_fresh`] does).
    pub async fn resolve_record_fresh(
        &self,
        addr: RecordAddress<'_>,
        access: Access,
    ) -> Result<(Route, Database), Error> {
        match self.resolve_record(addr, access) {
            Err(Error::TenantNotFound) => {
                self.refresh().await?;
                self.resolve_record(addr, access)
            }
            other => other,
        }
    }

    /// [`ShardRouter::write`] for the record at `addr`, routed to where it is placed.
    pub async fn write_record<T, F, Fut>(&self, addr: RecordAddress<'_>, write: F) -> Result<T, Error>
    where
        F: Fn(Route, Database) -> Fut,
        Fut: std::future::Future<Output = Result<T, Error>>,
    {
        self.settled_on(addr.tenant, || self.resolve_record(addr, Access::Write), write).await.map_err(Error::of_write)
    }

    /// [`ShardRouter::read`] for the record at `addr`, routed to where it is placed.
    pub async fn read_record<T, F, Fut>(&self, addr: RecordAddress<'_>, read: F) -> Result<T, Error>
    where
        F: Fn(Route, Database) -> Fut,
        Fut: std::future::Future<Output = Result<T, Error>>,
    {
        self.settled_on(addr.tenant, || self.resolve_record(addr, Access::Read), read).await
    }

    /// Until when a request that meets a move's fence now may wait for the cut-over to end
    /// (`moves.cutover_wait` from now).
    pub fn cutover_deadline(&self) -> tokio::time::Instant {
        tokio::time::Instant::now() + self.moves.cutover_wait
    }

    /// For a request that met a move's fence: false once `give_up` has passed; else waits a
    /// moment, loads the map if no other waiting request did just now, and returns true (the
    /// caller routes again and retries).
    pub async fn wait_for_cutover(&self, give_up: tokio::time::Instant) -> Result<bool, Error> {
        if tokio::time::Instant::now() >= give_up {
            return Ok(false);
        }
        tokio::time::sleep(MOVE_POLL).await;
        self.refresh_coalesced().await?;
        Ok(true)
    }

    /// [`ShardRouter::refresh`], unless one ran in the last [`MOVE_POLL`]: requests waiting for a
    /// cut-over share the catalog reads.
    async fn refresh_coalesced(&self) -> Result<(), Error> {
        let mut last = self.last_refresh.lock().await;
        if last.elapsed() >= MOVE_POLL {
            self.refresh().await?;
            *last = tokio::time::Instant::now();
        }
        Ok(())
    }

    /// The shard owning `vshard` (where an index entry placed by it lives), its pool and the map
    /// epoch, if the shard's state allows `access`.
    pub fn resolve_vshard(&self, vshard: u32, access: Access) -> Result<(ShardId, Database, u64), Error> {
        let (shard, state, epoch) = {
            let map = self.map.read();
            let index = *map.vshards.get(vshard as usize).ok_or(Error::NoShards)?;
            let entry = &map.shards[usize::from(index)];
            (entry.id.clone(), entry.state, map.epoch)
        };
        match (state, access) {
            (ShardState::Offline, _) => return Err(Error::ShardOffline(shard)),
            (ShardState::ReadOnly, Access::Write) => return Err(Error::ShardReadOnly(shard)),
            _ => {}
        }
        let db = self.shard_db(&shard)?;
        Ok((shard, db, epoch))
    }

    /// The number of vshards.
    pub fn vshard_count(&self) -> u32 {
        self.map.read().vshard_count
    }

    /// How long a listing of a distributed collection waits for each shard.
    pub fn fan_out_deadline(&self) -> Duration {
        self.fan_out_deadline
    }

    /// The pool of shard `id`; [`Error::ShardQuarantined`] if this instance does not use it.
    pub fn shard_db(&self, id: &ShardId) -> Result<Database, Error> {
        if let Some(db) = self.pools.read().get(id) {
            return Ok(db.clone());
        }
        match self.quarantined.read().get(id) {
            Some(reason) => Err(Error::ShardQuarantined { shard: id.clone(), reason: reason.clone() }),
            None => Err(Error::ShardNotFound(id.clone())),
        }
    }

    /// The registered shards this instance does not use, with the reason (for readiness).
    pub fn quarantined_shards(&self) -> Vec<(ShardId, String)> {
        let mut shards: Vec<_> = self.quarantined.read().iter().map(|(id, r)| (id.clone(), r.clone())).collect();
        shards.sort();
        shards
    }

    /// The health (breaker, bulkhead) of shard `id`'s database on this instance.
    pub fn shard_health(&self, id: &ShardId) -> Result<Arc<Health>, Error> {
        Ok(self.shard_db(id)?.health().clone())
    }

    /// One look at the health of the catalog and every shard database: the watchdog calls it every
    /// [`HEALTH_TICK`] (see [`crate::health`]).
    pub fn tick_health(&self) {
        self.catalog.database().health().tick();
        for db in self.pools.read().values() {
            db.health().tick();
        }
    }

    /// Every shard pool with the shard's state, for readiness probes.
    pub fn shard_dbs(&self) -> Vec<(ShardId, ShardState, Database)> {
        let map = self.map.read();
        let pools = self.pools.read();
        map.shards.iter().filter_map(|s| pools.get(&s.id).map(|db| (s.id.clone(), s.state, db.clone()))).collect()
    }

    /// Registers a shard by URL: checks the URL ([`check_shard_url`]), connects, migrates,
    /// writes the shard's identity marker into the database (refused if it carries another
    /// one), then records it in the catalog. The first shard of an empty catalog takes every
    /// vshard.
    pub async fn register_shard(&self, id: ShardId, url: SecretString, audit: &Audit) -> Result<ShardRow, Error> {
        let engine =
            check_shard_url(&url, self.catalog.database().engine).map_err(|e| e.tls_to(format!("shard {id}")))?;
        let _guard = self.admin.lock().await;
        if self.map.read().shard(id.as_str()).is_some() {
            return Err(Error::ShardExists(id));
        }
        let (db, claim) = connect_shard(&id, &url, &self.pool_config, &self.catalog_id).await?;
        let registered = |other: &str| self.map.read().shard(other).is_some();
        if let Err(e) = claim.refuse_other(&id, &self.catalog_id, registered) {
            db.close().await;
            return Err(e);
        }
        let now = now_ms();
        let row =
            ShardRow { id: id.clone(), url, engine, state: ShardState::Active, created_at_ms: now, updated_at_ms: now };
        let (epoch, took_vshards) = match self.catalog.insert_shard(&row, true, audit).await {
            Ok(inserted) => inserted,
            Err(e) => {
                if claim == Claim::Written {
                    self.release_marker(&db, &id).await;
                }
                db.close().await;
                return Err(e);
            }
        };
        self.pools.write().insert(id.clone(), db);
        self.rebalance_pools().await;
        let mut map = self.map.write();
        map.shards.push(ShardEntry { id, state: ShardState::Active });
        if took_vshards {
            let index = (map.shards.len() - 1) as u16;
            map.vshards = vec![index; map.vshard_count as usize];
        }
        map.epoch = epoch;
        Ok(row)
    }

    /// One shard with statistics.
    pub async fn shard_stats(&self, id: &ShardId) -> Result<ShardStats, Error> {
        self.stats_of(|row| &row.id == id).await?.pop().ok_or_else(|| Error::ShardNotFound(id.clone()))
    }

    /// Every registered shard with statistics, ordered by id.
    pub async fn all_shard_stats(&self) -> Result<Vec<ShardStats>, Error> {
        self.stats_of(|_| true).await
    }

    /// Statistics of the shards `wanted` picks: one catalog read and one pass over the tenant
    /// directory for all of them, then the record counts concurrently.
    async fn stats_of(&self, wanted: impl Fn(&ShardRow) -> bool) -> Result<Vec<ShardStats>, Error> {
        let rows: Vec<ShardRow> = self.catalog.list_shards().await?.into_iter().filter(|r| wanted(r)).collect();
        let counts: Vec<(u64, u64, u64)> = self.with_map(|map| {
            let vshards = map.vshards_per_shard();
            let tenants = map.tenants_per_shard();
            rows.iter()
                .map(|row| match map.shard_index(row.id.as_str()) {
                    Some(i) => {
                        let pinned = map.tenants.values().filter(|t| t.pin == Some(i)).count();
                        (vshards[usize::from(i)] as u64, tenants[usize::from(i)] as u64, pinned as u64)
                    }
                    None => (0, 0, 0),
                })
                .collect()
        });
        let records = futures::future::join_all(rows.iter().map(|row| self.count_records(row))).await;
        Ok(rows
            .into_iter()
            .zip(counts)
            .zip(records)
            .map(|((shard, (vshards, tenants, pinned_tenants)), records)| ShardStats {
                health: self.shard_db(&shard.id).ok().map(|db| db.health().report()),
                problem: self.quarantined.read().get(&shard.id).cloned(),
                shard,
                vshards,
                tenants,
                pinned_tenants,
                records,
            })
            .collect())
    }

    /// Live records on a shard; `None` when it is offline or does not answer in time.
    async fn count_records(&self, shard: &ShardRow) -> Option<u64> {
        if shard.state == ShardState::Offline {
            return None;
        }
        let db = self.shard_db(&shard.id).ok()?;
        let store = RecordStore::new(&db, &shard.id);
        match tokio::time::timeout(self.pool_config.probe_timeout, store.count_live()).await {
            Ok(Ok(count)) => Some(count),
            Ok(Err(e)) => {
                tracing::warn!(shard = %shard.id, error = %e, "could not count records");
                None
            }
            Err(_) => None,
        }
    }

    /// Changes a shard's state; requests see it at once.
    pub async fn set_shard_state(&self, id: &ShardId, state: ShardState, audit: &Audit) -> Result<(), Error> {
        let _guard = self.admin.lock().await;
        let epoch = self.catalog.set_shard_state(id, state, now_ms(), audit).await?;
        if !matches!(state, ShardState::Active | ShardState::Draining) {
            // Instances still routing on older maps must not write here any more.
            match self.shard_db(id) {
                Ok(db) => {
                    let shard = FencedShard::new(&db, id);
                    let fence = shard.raise_fence(epoch);
                    match tokio::time::timeout(self.pool_config.probe_timeout, fence).await {
                        Ok(Ok(())) => {}
                        Ok(Err(e)) => tracing::warn!(shard = %id, error = %e, "could not raise the shard fence"),
                        Err(_) => tracing::warn!(shard = %id, "raising the shard fence timed out"),
                    }
                }
                Err(e) => tracing::warn!(shard = %id, error = %e, "no pool to raise the shard fence"),
            }
        }
        let mut map = self.map.write();
        if let Some(index) = map.shard_index(id.as_str()) {
            map.shards[usize::from(index)].state = state;
        }
        map.epoch = epoch;
        Ok(())
    }

    /// Unregisters a shard that owns no vshard and no pinned tenant, and closes its pool.
    pub async fn remove_shard(&self, id: &ShardId, audit: &Audit) -> Result<(), Error> {
        let _guard = self.admin.lock().await;
        if let Some(held) = self.range_kept_on(|shard| &shard.id == id) {
            return Err(Error::ShardHoldsRange(held));
        }
        self.catalog.delete_shard(id, audit).await?;
        // Indexes shift when a shard leaves the list: reload rather than patch.
        let map = self.catalog.load_map().await?;
        *self.map.write() = map;
        self.quarantined.write().remove(id);
        let db = self.pools.write().remove(id);
        if let Some(db) = db {
            self.release_marker(&db, id).await;
            db.close().await;
        }
        self.rebalance_pools().await;
        Ok(())
    }

    /// Erases shard `id`'s identity marker from its database, so the database may be registered
    /// again under any id. Best effort: if it fails, the database can be registered again under
    /// `id` only.
    async fn release_marker(&self, db: &Database, id: &ShardId) {
        match tokio::time::timeout(self.pool_config.probe_timeout, release_identity(db, id, &self.catalog_id)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(shard = %id, error = %e, "could not erase the shard's identity marker"),
            Err(_) => tracing::warn!(shard = %id, "erasing the shard's identity marker timed out"),
        }
    }

    /// Creates a tenant, optionally pinned to `pin`.
    pub async fn create_tenant(
        &self,
        id: TenantId,
        name: String,
        tier: Tier,
        rate_limit: Option<TenantRateLimit>,
        pin: Option<ShardId>,
        audit: &Audit,
    ) -> Result<TenantRow, Error> {
        let _guard = self.admin.lock().await;
        let (entry, home) = {
            let map = self.map.read();
            if map.tenants.contains_key(id.as_str()) {
                return Err(Error::TenantExists(id));
            }
            let pin_index = match &pin {
                Some(shard) => Some(map.shard_index(shard.as_str()).ok_or_else(|| Error::UnknownShard(shard.clone()))?),
                None => None,
            };
            // The incarnation is the creating change's epoch, known once the catalog committed.
            let entry =
                TenantEntry { pin: pin_index, tier, rate_limit, incarnation: Incarnation::default(), spread: false };
            let home = map.route_entry(id.as_str(), &entry).map_err(route_error)?;
            (entry, home)
        };
        // Rows a deleted tenant of the same id may have left behind (written by an instance on an
        // old map while it was being deleted) must not become the new tenant's data.
        let db = self.shard_db(&home.shard)?;
        RecordStore::new(&db, &home.shard).purge_tenant(&id).await?;
        BlobStore::new(&db, &home.shard).purge_tenant(&id).await?;
        // A fence an earlier tenant of this id left when it moved off this shard is not the new
        // tenant's.
        FencedShard::new(&db, &home.shard).clear_fences(crate::shard::MoveSubject::Tenant(&id)).await?;
        let now = now_ms();
        let row = TenantRow {
            id: id.clone(),
            name,
            tier,
            pinned_shard: pin,
            rate_limit,
            incarnation: 0,
            created_at_ms: now,
            updated_at_ms: now,
        };
        // An unpinned tenant may not appear in a vshard while a job moves it.
        let unclaimed =
            (home.strategy == crate::map::Strategy::Hash).then(|| crate::catalog::vshard_subject(home.vshard));
        let epoch = self.catalog.insert_tenant(&row, unclaimed.as_deref(), audit).await?;
        let incarnation = Incarnation { id: epoch, created_at_ms: now };
        let mut map = self.map.write();
        map.tenants.insert(crate::map::TenantKey::from(id.as_str()), TenantEntry { incarnation, ..entry });
        map.epoch = epoch;
        Ok(TenantRow { incarnation: epoch, ..row })
    }

    /// Changes a tenant's name, tier and/or rate limit.
    pub async fn update_tenant(&self, id: &TenantId, change: &TenantChange, audit: &Audit) -> Result<TenantRow, Error> {
        let _guard = self.admin.lock().await;
        let (row, epoch) = self.catalog.update_tenant(id, change, now_ms(), audit).await?;
        let mut map = self.map.write();
        if let Some(entry) = map.tenants.get_mut(id.as_str()) {
            entry.tier = row.tier;
            entry.rate_limit = row.rate_limit;
        }
        map.epoch = epoch;
        Ok(row)
    }

    /// Sets the distribution of `row.collection` of `row.tenant` (`tenant`, `hash` or `range`
    /// with its ranges) and returns the new epoch. Only a collection that holds no record (nor
    /// tombstone) may change its distribution; ranges must name shards that take new data. Every shard's fence is raised to the new epoch, so no instance still routing on an
    /// older map writes the collection where it no longer lives; a record such an instance wrote
    /// between the check and the fence is carried over to where the collection lives now.
    pub async fn set_distribution(&self, row: &CollectionRow, audit: &Audit) -> Result<u64, Error> {
        self.refresh().await?;
        let _guard = self.admin.lock().await;
        let (old, shards) = {
            let map = self.map.read();
            if !map.tenants.contains_key(row.tenant.as_str()) {
                return Err(Error::TenantNotFound);
            }
            for range in &row.ranges {
                match map.shard(range.shard.as_str()) {
                    None => return Err(Error::UnknownShard(range.shard.clone())),
                    Some(shard) if shard.state != ShardState::Active => {
                        return Err(Error::DistributionRefused(format!(
                            "shard {} is {} and takes no new data",
                            range.shard,
                            shard.state.as_str()
                        )));
                    }
                    Some(_) => {}
                }
            }
            let old = map.spread_of(row.tenant.as_str(), row.collection.as_str()).map(Spread::distribution);
            (old.unwrap_or(Distribution::Tenant), map.shards.iter().map(|s| s.id.clone()).collect::<Vec<_>>())
        };
        if old == Distribution::Range && row.distribution == Distribution::Range {
            let current = self.catalog.get_distribution(&row.tenant, &row.collection).await?;
            if current.is_some_and(|current| same_holders(&current.ranges, &row.ranges)) {
                // Bounds added or removed, every key on the shard it was on: nothing moves.
                let epoch = self.catalog.set_distribution(row, audit).await?;
                let map = self.catalog.load_map().await?;
                *self.map.write() = map;
                return Ok(epoch);
            }
        }
        let old_layout = self.collection_rows(&row.tenant, &row.collection, old, &shards);
        if old_layout.count().await? > 0 {
            return Err(Error::DistributionRefused(format!(
                "collection {} holds records (or tombstones) distributed `{}`; a range-distributed collection's \
                 keys change shard with a split (POST /v1/admin/tenants/{}/collections/{}/split), and a non-empty \
                 collection changes between `hash` and `range` by way of `tenant` (two changes, each a job)",
                row.collection,
                old.as_str(),
                row.tenant,
                row.collection
            )));
        }
        if old == Distribution::Tenant {
            // Left over from an earlier tenant of the same id: no map routes there now.
            self.collection_rows(&row.tenant, &row.collection, Distribution::Hash, &shards).purge().await?;
        }
        // Fences an earlier change of the collection's distribution left over its rows in the
        // new layout: the collection starts anew there (nothing routes to it yet).
        let layout = if row.distribution == Distribution::Tenant { FenceLayout::Home } else { FenceLayout::Spread };
        for shard in &shards {
            let db = self.shard_db(shard)?;
            let fenced = FencedShard::new(&db, shard);
            if let Err(e) = fenced.unfence_collection(&row.tenant, &row.collection, Some(layout), false).await {
                tracing::warn!(shard = %shard, error = %e, "could not lift an old collection fence");
            }
        }
        let epoch = self.catalog.set_distribution(row, audit).await?;
        let map = self.catalog.load_map().await?;
        *self.map.write() = map;
        for shard in &shards {
            self.raise_fence_on(shard, epoch).await;
        }
        if old == Distribution::Tenant || row.distribution == Distribution::Tenant {
            // The old rows are in another table than the new ones: carry over, then drop all.
            let raced = old_layout.live_records().await?;
            if !raced.is_empty() {
                tracing::warn!(
                    tenant = %row.tenant, collection = %row.collection, records = raced.len(),
                    "records were written under the old distribution while it changed; carrying them over"
                );
                self.carry_over(&row.tenant, &row.collection, raced).await?;
            }
            old_layout.purge().await?;
        } else {
            // Old and new rows share `spread_records`, where writes on the new map have begun:
            // only the rows the new distribution does not place where they are may go.
            self.settle_spread_rows(&row.tenant, &row.collection, &shards).await?;
        }
        Ok(epoch)
    }

    /// After `tenant`'s `collection` changed between `hash` and `range` (or between ranges
    /// with other holders) while it was empty: every row in `spread_records` was written
    /// either on the new map, where it belongs, or on the old one in the moment before the
    /// fences rose. Each row the new distribution places on another shard is carried over
    /// there (unless a newer write created the key there meanwhile) and removed; a row on the
    /// right shard with the old layout's vshard tag is retagged. Old range fences are dropped:
    /// a distribution set anew starts without.
    async fn settle_spread_rows(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        shards: &[ShardId],
    ) -> Result<(), Error> {
        for shard in shards {
            let db = self.shard_db(shard)?;
            FencedShard::new(&db, shard).drop_range_fences(tenant, Some(collection)).await?;
            let store = RecordStore::new(&db, shard).in_layout(Layout::Range);
            for row in store.placed_rows(tenant, collection, CARRY_OVER_LIMIT).await? {
                let key = RecordKey::parse(&row.record.key).map_err(|e| Error::Corrupt(e.to_string()))?;
                let route = self.route_record(RecordAddress { tenant, collection, key: &key })?;
                let here = RecordStore::new(&db, shard).in_layout(Layout::of(&route));
                if route.shard == *shard {
                    if row.tag != here.tag(route.vshard) {
                        here.retag(tenant, collection, &row.record.key, route.vshard).await?;
                    }
                    continue;
                }
                tracing::warn!(
                    tenant = %tenant, collection = %collection, key = row.record.key, from = %shard, to = %route.shard,
                    "a record was written under the old distribution while it changed; carrying it over"
                );
                if !row.deleted {
                    self.carry_over(tenant, collection, vec![row.record.clone()]).await?;
                }
                here.remove(tenant, collection, &row.record.key).await?;
            }
        }
        Ok(())
    }

    /// Why the shards `on` picks cannot be deleted, if a range of a range-distributed
    /// collection lives on one of them (a drain or a split moves it away first).
    pub fn range_kept_on(&self, on: impl Fn(&ShardEntry) -> bool) -> Option<String> {
        self.with_map(|map| {
            for (tenant, collections) in &map.spread {
                for (collection, spread) in collections {
                    let Spread::Range(bounds) = spread else { continue };
                    for bound in bounds.iter() {
                        let shard = &map.shards[usize::from(bound.shard)];
                        if on(shard) {
                            return Some(format!(
                                "collection {collection} of tenant {tenant} keeps its range from {:?} on shard {}; \
                                 drain the shard or split the range onto another shard first",
                                bound.from, shard.id
                            ));
                        }
                    }
                }
            }
            None
        })
    }

    /// Raises shard `id`'s fence to `epoch`, within the probe timeout; a failure is logged
    /// (the shard is down, so nothing writes there either).
    async fn raise_fence_on(&self, id: &ShardId, epoch: u64) {
        match self.shard_db(id) {
            Ok(db) => {
                let shard = FencedShard::new(&db, id);
                match tokio::time::timeout(self.pool_config.probe_timeout, shard.raise_fence(epoch)).await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => tracing::warn!(shard = %id, error = %e, "could not raise the shard fence"),
                    Err(_) => tracing::warn!(shard = %id, "raising the shard fence timed out"),
                }
            }
            Err(e) => tracing::warn!(shard = %id, error = %e, "no pool to raise the shard fence"),
        }
    }

    /// The rows of `tenant`'s `collection` wherever distribution `distribution` may have put
    /// them: its home shard, or every shard.
    /// How many rows (tombstones included) `tenant`'s `collection` holds where its
    /// distribution in this instance's map places it.
    pub async fn count_collection_rows(&self, tenant: &TenantId, collection: &CollectionName) -> Result<u64, Error> {
        let shards: Vec<ShardId> = self.with_map(|map| map.shards.iter().map(|s| s.id.clone()).collect());
        let distribution = self.distribution_of(tenant, collection);
        self.collection_rows(tenant, collection, distribution, &shards).count().await
    }

    fn collection_rows<'r>(
        &'r self,
        tenant: &'r TenantId,
        collection: &'r CollectionName,
        distribution: Distribution,
        shards: &'r [ShardId],
    ) -> CollectionRows<'r> {
        CollectionRows { router: self, tenant, collection, distribution, shards }
    }

    /// Writes `records` where the collection lives now, unless a newer write created the key
    /// there meanwhile.
    async fn carry_over(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        records: Vec<StoredRecord>,
    ) -> Result<(), Error> {
        for record in records {
            let key = RecordKey::parse(&record.key).map_err(|e| Error::Corrupt(e.to_string()))?;
            let addr = RecordAddress { tenant, collection, key: &key };
            let written = self
                .write_record(addr, |route, db| {
                    let value = &record.value;
                    async move {
                        RecordStore::new(&db, &route.shard)
                            .routed_at(route.epoch)
                            .in_layout(Layout::of(&route))
                            .put(addr, route.vshard, value, &WriteCondition::Absent, record.updated_at_ms)
                            .await
                    }
                })
                .await;
            match written {
                Ok(_) | Err(Error::PreconditionFailed) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Deletes a tenant and every record and blob it has on its home shard; returns how many
    /// records were removed.
    ///
    /// The records and blobs go first, so a failure there leaves the tenant in place and the call
    /// can be repeated. Then the tenant leaves the catalog (a new epoch), the home shard's fence is
    /// raised to that epoch so instances still routing on a map that has the tenant cannot write
    /// there, and whatever they wrote in between is swept. If that sweep fails, the leftovers are
    /// swept when a tenant of the same id is created again (see [`ShardRouter::create_tenant`]).
    pub async fn delete_tenant(&self, id: &TenantId, audit: &Audit) -> Result<u64, Error> {
        let _guard = self.admin.lock().await;
        let subject = crate::catalog::tenant_subject(id);
        if let Some(job) = self.catalog.job_claiming(&subject).await? {
            return Err(Error::JobConflict { subject, job });
        }
        let (route, db) = self.resolve(id, Access::Write)?;
        if route.strategy == crate::map::Strategy::Hash {
            let subject = crate::catalog::vshard_subject(route.vshard);
            if let Some(job) = self.catalog.job_claiming(&subject).await? {
                return Err(Error::JobConflict { subject, job });
            }
        }
        let store = RecordStore::new(&db, &route.shard);
        let blobs = BlobStore::new(&db, &route.shard);
        // Records of its distributed collections may be on any shard.
        let spread: Vec<ShardId> = self.with_map(|map| {
            if map.spread.contains_key(id.as_str()) {
                map.shards.iter().map(|s| s.id.clone()).collect()
            } else {
                Vec::new()
            }
        });
        let mut purged = store.purge_tenant(id).await?;
        for shard in &spread {
            let db = self.shard_db(shard)?;
            purged += RecordStore::new(&db, shard).in_layout(Layout::Range).purge_tenant(id).await?;
            FencedShard::new(&db, shard).drop_range_fences(id, None).await?;
        }
        blobs.purge_tenant(id).await?;
        let epoch = self.catalog.delete_tenant(id, audit).await?;
        {
            let mut map = self.map.write();
            map.tenants.remove(id.as_str());
            map.spread.remove(id.as_str());
            map.epoch = epoch;
        }
        let sweep = async {
            store.raise_fence(epoch).await?;
            blobs.purge_tenant(id).await?;
            store.purge_tenant(id).await
        };
        for shard in &spread {
            self.raise_fence_on(shard, epoch).await;
            let swept = match self.shard_db(shard) {
                Ok(db) => RecordStore::new(&db, shard).in_layout(Layout::Range).purge_tenant(id).await,
                Err(e) => Err(e),
            };
            match swept {
                Ok(swept) => purged += swept,
                Err(e) => {
                    tracing::warn!(tenant = %id, shard = %shard, error = %e, "could not sweep the deleted tenant's distributed records")
                }
            }
        }
        match sweep.await {
            Ok(swept) => purged += swept,
            Err(e) => tracing::warn!(
                tenant = %id, shard = %route.shard, error = %e,
                "could not fence and sweep the deleted tenant's shard; leftovers are swept if the id is reused"
            ),
        }
        Ok(purged)
    }
}

/// The rows of one collection under one distribution, on the shards it may use.
struct CollectionRows<'r> {
    router: &'r ShardRouter,
    tenant: &'r TenantId,
    collection: &'r CollectionName,
    distribution: Distribution,
    shards: &'r [ShardId],
}

impl CollectionRows<'_> {
    /// The stores that may hold the rows.
    fn stores(&self) -> Result<Vec<(ShardId, Database, Layout)>, Error> {
        let home = match self.distribution {
            Distribution::Tenant => Some(self.router.route_tenant(self.tenant)?.shard),
            Distribution::Hash | Distribution::Range => None,
        };
        let layout = if home.is_some() { Layout::Home } else { Layout::Range };
        self.shards
            .iter()
            .filter(|id| home.as_ref().is_none_or(|home| home == *id))
            .map(|id| Ok((id.clone(), self.router.shard_db(id)?, layout)))
            .collect()
    }

    /// How many rows (tombstones included) there are.
    async fn count(&self) -> Result<u64, Error> {
        let mut rows = 0;
        for (id, db, layout) in self.stores()? {
            rows += RecordStore::new(&db, &id).in_layout(layout).count_collection(self.tenant, self.collection).await?;
        }
        Ok(rows)
    }

    /// The live records (at most a page of [`CARRY_OVER_LIMIT`] per shard).
    async fn live_records(&self) -> Result<Vec<StoredRecord>, Error> {
        let mut records = Vec::new();
        for (id, db, layout) in self.stores()? {
            let store = RecordStore::new(&db, &id).in_layout(layout);
            records.extend(store.list(self.tenant, self.collection, &ListBounds::default(), CARRY_OVER_LIMIT).await?);
        }
        Ok(records)
    }

    /// Removes every row, and every range fence (a distribution set anew starts without).
    async fn purge(&self) -> Result<(), Error> {
        for (id, db, layout) in self.stores()? {
            RecordStore::new(&db, &id).in_layout(layout).purge_collection(self.tenant, self.collection).await?;
            if layout == Layout::Range {
                FencedShard::new(&db, &id).drop_range_fences(self.tenant, Some(self.collection)).await?;
            }
        }
        Ok(())
    }
}

/// Whether every key lives on the same shard under both lists of ranges (each ascending, the
/// first from `""`): the holders agree at every bound of either list.
fn same_holders(old: &[crate::catalog::RangeRow], new: &[crate::catalog::RangeRow]) -> bool {
    let holder = |ranges: &[crate::catalog::RangeRow], key: &str| {
        let i = ranges.partition_point(|range| range.from.as_str() <= key).saturating_sub(1);
        ranges.get(i).map(|range| range.shard.clone())
    };
    old.iter().chain(new).all(|bound| holder(old, &bound.from) == holder(new, &bound.from))
}

/// The most records written under an old distribution while it changed that are carried over
/// per shard (a few at most: only writes routed on the old map in the moment of the change).
const CARRY_OVER_LIMIT: u32 = 10_000;

fn route_error(e: RouteError) -> Error {
    match e {
        RouteError::UnknownTenant => Error::TenantNotFound,
        RouteError::NoShards(_) => Error::NoShards,
    }
}

/// A `sqlite://` URL for a file path.
pub fn sqlite_url(path: &Path) -> SecretString {
    let path: PathBuf = path.to_path_buf();
    SecretString::from(format!("sqlite://{}", path.display()))
}

/// How many shard pools each PostgreSQL server holds.
fn pools_per_server(rows: &[ShardRow]) -> HashMap<String, usize> {
    let mut sharing = HashMap::new();
    for server in rows.iter().filter_map(|row| server_of(&row.url)) {
        *sharing.entry(server).or_insert(0) += 1;
    }
    sharing
}

/// The pool settings of the shard at `url`: its share of its server's budget.
fn pool_share(config: &PoolConfig, url: &SecretString, sharing: &HashMap<String, usize>) -> PoolConfig {
    match server_of(url).and_then(|server| sharing.get(&server).copied()) {
        Some(pools) => config.share_of_server(pools),
        None => config.clone(),
    }
}

/// Opens a shard database to register it as `id`: checks it answers, applies the shard
/// migrations and claims it with the identity marker `(catalog_id, id)` (see
/// [`crate::registration`]); the caller decides what another marker means.
async fn connect_shard(
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

/// At start-up, checks that registered shard `shard`'s database carries its identity marker,
/// writing it if the database has none (a shard registered before markers existed). Returns
/// why the shard must not be used if the database carries another shard's marker; a database
/// that cannot be checked now (unreachable) is used, with a warning.
async fn check_identity_at_open(
    db: &Database,
    shard: &ShardRow,
    catalog_id: &str,
    rows: &[ShardRow],
) -> Option<String> {
    let claim = match tokio::time::timeout(REGISTER_TIMEOUT, claim_identity(db, &shard.id, catalog_id)).await {
        Ok(Ok(claim)) => claim,
        Ok(Err(e)) => {
            tracing::warn!(shard = %shard.id, error = %e, "could not check the shard's identity marker at start-up");
            return None;
        }
        Err(_) => {
            tracing::warn!(shard = %shard.id, "checking the shard's identity marker timed out at start-up");
            return None;
        }
    };
    if claim == Claim::Written {
        tracing::info!(shard = %shard.id, "wrote the identity marker of a shard registered before markers existed");
    }
    let registered = |id: &str| rows.iter().any(|r| r.id.as_str() == id);
    let Err(e) = claim.refuse_other(&shard.id, catalog_id, registered) else { return None };
    let reason = match e {
        Error::ShardDatabaseClaimed { holder, .. } => format!("its database is already {holder}"),
        other => other.to_string(),
    };
    tracing::error!(shard = %shard.id, reason, "shard not used: its database carries another shard's identity marker");
    Some(reason)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::ranges_of;

    #[test]
    fn ranges_keep_their_holders_when_bounds_only_split_or_join_a_shards_keys() {
        let old = ranges_of(&[("", "s0"), ("m", "s1")]);
        assert!(same_holders(&old, &ranges_of(&[("", "s0"), ("f", "s0"), ("m", "s1"), ("t", "s1")])));
        assert!(same_holders(&ranges_of(&[("", "s0"), ("f", "s0"), ("m", "s1")]), &old));
        assert!(!same_holders(&old, &ranges_of(&[("", "s0"), ("l", "s1")])), "the key l changes shard");
        assert!(!same_holders(&old, &ranges_of(&[("", "s0"), ("m", "s2")])));
        assert!(!same_holders(&old, &ranges_of(&[("", "s0")])));
    }
}
