//! [`ShardRouter`]: routes a request to its shard and runs it there. It holds the catalog, the
//! in-memory shard map and the shard pools; it resolves a tenant, a record or a vshard to a
//! shard and its pool (refusing what the shard's state does not allow), runs reads and writes
//! there, and when a shard's fence or a move's fence refuses one, refreshes the map and waits
//! for the cut-over to end. Listings of distributed collections are planned in
//! [`crate::fanout`].
//!
//! It does not change the topology: registering shards, tenants and distributions is
//! [`crate::topology`]'s, start-up is [`startup`]'s; both change the state held here under
//! `ShardRouter::lock_admin`. It knows nothing of the jobs that move data.
//!
//! The router's room: [`ShardRouter`] here, listings across shards ([`fanout`]), the shard pools
//! ([`pools`]) and opening the router with its migrations ([`startup`]).

pub mod fanout;
pub mod pools;
pub mod startup;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::catalog::Catalog;
use crate::error::Error;
use crate::ids::{CollectionName, ShardId, TenantId};
use crate::map::quotas::{Quotas, TierQuotas};
use crate::map::{
    Distribution, Incarnation, MapSnapshot, Route, RouteError, ShardState, Spread, Strategy, TenantRateLimit, Tier,
};
use crate::pools::ShardPools;
use crate::storage::db::Database;
use crate::storage::health::Health;
use crate::storage::meter::{Charge, NO_VSHARD, Work};
use crate::storage::records::RecordAddress;
use crate::storage::replicas::mono_ms;

pub use crate::config::{MoveConfig, ShardSeed, StorageConfig};

/// How often the health watchdog looks at the catalog and every shard database
/// ([`ShardRouter::tick_health`]).
pub const HEALTH_TICK: Duration = Duration::from_millis(50);

/// How often a request waiting for a moving tenant's new shard looks at the catalog.
const MOVE_POLL: Duration = Duration::from_millis(5);

/// What a request wants to do on a shard; decides which shard states let it through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reads work on `active` and `read_only` shards.
    Read,
    /// Writes work on `active` shards only.
    Write,
}

/// Catalog, shard map and shard pools.
#[derive(Debug)]
pub struct ShardRouter {
    catalog: Catalog,
    map: RwLock<MapSnapshot>,
    pools: ShardPools,
    /// Serialises admin changes so the in-memory map follows the catalog's epoch order.
    admin: tokio::sync::Mutex<()>,
    /// When a request waiting for a cut-over last refreshed the map.
    last_refresh: tokio::sync::Mutex<tokio::time::Instant>,
    /// How data moves between shards (`[storage.moves]`).
    moves: MoveConfig,
    /// `storage.fan_out_deadline`.
    fan_out_deadline: Duration,
    /// The tiers' quotas as configured (`quotas.tiers`), for the tiers the catalog sets none of.
    tier_quotas: TierQuotas,
    /// When (`replicas::mono_ms`) the map last changed in memory: a standby serves a read only
    /// with data at least that new ([`crate::storage::replicas`]).
    map_since: AtomicU64,
}

impl ShardRouter {
    /// The router over `catalog`, `map` and `pools` as start-up opened them
    /// ([`ShardRouter::open`], in `startup.rs`).
    pub(crate) fn new(
        catalog: Catalog,
        map: MapSnapshot,
        pools: ShardPools,
        moves: MoveConfig,
        fan_out_deadline: Duration,
    ) -> Self {
        Self {
            catalog,
            map: RwLock::new(map),
            pools,
            admin: tokio::sync::Mutex::new(()),
            last_refresh: tokio::sync::Mutex::new(tokio::time::Instant::now()),
            moves,
            fan_out_deadline,
            tier_quotas: TierQuotas::DEFAULT,
            map_since: AtomicU64::new(mono_ms()),
        }
    }

    /// This router with the tiers' quotas configured in `quotas.tiers` (without: their defaults,
    /// [`TierQuotas::DEFAULT`]).
    pub fn with_tier_quotas(self, tier_quotas: TierQuotas) -> Self {
        Self { tier_quotas, ..self }
    }

    /// The tiers' quotas as configured (the catalog's, set through the admin API, win).
    pub fn configured_tier_quotas(&self) -> &TierQuotas {
        &self.tier_quotas
    }

    /// The quotas `tenant`'s writes are held to: its tier's (set through the admin API, else
    /// configured) with its own overrides applied. From the map alone (no catalog query, no
    /// allocation): it runs on every write. [`Error::TenantNotFound`] if the map does not know
    /// the tenant.
    pub fn tenant_quotas(&self, tenant: &TenantId) -> Result<Quotas, Error> {
        let map = self.map.read();
        let entry = map.tenants.get(tenant.as_str()).ok_or(Error::TenantNotFound)?;
        Ok(map.quotas.of_tenant(tenant.as_str(), entry.tier, &self.tier_quotas))
    }

    /// Takes the lock that serialises changes of the map (admin changes and refreshes), so that
    /// the in-memory map follows the catalog's epoch order.
    pub(crate) async fn lock_admin(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.admin.lock().await
    }

    /// The map, read-locked.
    pub(crate) fn read_map(&self) -> RwLockReadGuard<'_, MapSnapshot> {
        self.map.read()
    }

    /// The map, write-locked: for a topology change, under [`ShardRouter::lock_admin`].
    pub(crate) fn write_map(&self) -> RwLockWriteGuard<'_, MapSnapshot> {
        let map = self.map.write();
        self.map_since.store(mono_ms(), Ordering::Release);
        map
    }

    /// `storage.replica_reads` as configured.
    pub fn replica_reads(&self) -> &crate::storage::replicas::ReplicaReadsConfig {
        self.pools.replica_reads()
    }

    /// When (`replicas::mono_ms`) the map this instance routes on last changed: what a standby
    /// must have replayed up to before it serves a read routed on it (a standby of a shard
    /// that just took a tenant over may not hold the copy yet).
    pub fn map_since(&self) -> u64 {
        self.map_since.load(Ordering::Acquire)
    }

    /// The shard pools.
    pub fn pools(&self) -> &ShardPools {
        &self.pools
    }

    /// Reloads the map from the catalog if the catalog's epoch is newer than the map's, after
    /// following the password files (the catalog's, then the shards'). Returns the catalog heads.
    pub async fn refresh(&self) -> Result<crate::catalog::CatalogHeads, Error> {
        self.catalog.follow_password_file();
        self.pools.follow_password_files(&self.catalog).await;
        let heads = self.catalog.heads().await?;
        if heads.epoch > self.map.read().epoch {
            let _guard = self.admin.lock().await;
            if heads.epoch > self.map.read().epoch {
                let map = self.catalog.load_map().await?;
                self.pools.sync(&map, &self.catalog).await;
                tracing::info!(epoch = map.epoch, "shard map refreshed from the catalog");
                *self.write_map() = map;
            }
        }
        Ok(heads)
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
        self.allowed(route, access).map(|(route, db)| charged(route, db, tenant))
    }

    /// `route` and its shard's pool, if the shard's state allows `access`.
    fn allowed(&self, route: Route, access: Access) -> Result<(Route, Database), Error> {
        // The routing decision, as a span of the request's trace (made only when traces are on).
        let _routed = tracing::trace_span!(
            "route",
            shard = %route.shard,
            vshard = route.vshard,
            epoch = route.epoch,
            strategy = ?route.strategy
        )
        .entered();
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
    /// If the tenant is being moved off the shard (its fence there, raised by a move job), waits
    /// for the map that routes it to its new shard and runs it there, for at most
    /// `moves.cutover_wait`; then [`Error::TenantMoving`]. If the shard's database refuses the
    /// password of a new connection (it was rotated, and another instance took the new URL with
    /// `PATCH /v1/admin/shards/{id}` since this one last polled the catalog), reads the shard's
    /// URL again, reopening its pool if it changed, and runs `write` once more, from the start as
    /// after a fence's refusal (the refused statement never reached the database).
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
    /// fence or a move's fence refuses it, or after the shard's new URL was read when its
    /// database refused a password (see [`ShardRouter::write`]).
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
        let (mut refreshed, mut reconnected) = (false, false);
        loop {
            match op(route, db).await {
                Err(Error::StaleMap(shard)) if !refreshed => {
                    tracing::info!(shard = %shard, epoch = self.epoch(), "write refused by the shard fence; refreshing the map");
                    refreshed = true;
                    self.refresh().await?;
                }
                Err(e) if e.is_authentication_failure() && !reconnected => {
                    reconnected = true;
                    // Nothing of the refused attempt is kept across `op`'s await (it would make
                    // every request's future larger): the shard is routed again here, and the
                    // catalog read is boxed.
                    let shard = resolve()?.0.shard;
                    Box::pin(self.pools.follow_refused_password(&shard, &self.catalog)).await;
                    tracing::info!(shard = %shard, "the shard refused a password; running again with its URL in the catalog");
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

    /// What `work` on shard `id` answers within `storage.pool.probe_timeout`; `None` (and a
    /// warning that it could not `what`) when it fails or does not answer in time.
    pub(crate) async fn within_probe<T>(
        &self,
        id: &ShardId,
        what: &str,
        work: impl std::future::Future<Output = Result<T, Error>>,
    ) -> Option<T> {
        match tokio::time::timeout(self.pools.config().probe_timeout, work).await {
            Ok(Ok(value)) => Some(value),
            Ok(Err(e)) => {
                tracing::warn!(shard = %id, error = %e, "could not {what}");
                None
            }
            Err(_) => {
                tracing::warn!(shard = %id, "could not {what} in time");
                None
            }
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
        self.allowed(route, access).map(|(route, db)| charged(route, db, addr.tenant))
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
        let db = match db.is_metered() {
            true => db.charged(Charge {
                work: Work::Request,
                vshard: i32::try_from(vshard).unwrap_or(NO_VSHARD),
                tenant: None,
            }),
            false => db,
        };
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
        self.pools.get(id)
    }

    /// The registered shards this instance does not use, with the reason (for readiness).
    pub fn quarantined_shards(&self) -> Vec<(ShardId, String)> {
        self.pools.quarantined()
    }

    /// The health (breaker, bulkhead) of shard `id`'s database on this instance.
    pub fn shard_health(&self, id: &ShardId) -> Result<Arc<Health>, Error> {
        Ok(self.shard_db(id)?.health().clone())
    }

    /// One look at the health of the catalog and every shard database: the watchdog calls it every
    /// [`HEALTH_TICK`] (see [`crate::storage::health`]).
    pub fn tick_health(&self) {
        self.catalog.database().health().tick();
        self.pools.tick();
    }

    /// Every shard pool with the shard's state, for readiness probes.
    pub fn shard_dbs(&self) -> Vec<(ShardId, ShardState, Database)> {
        self.pools.with_states(&self.map.read())
    }
}

pub(crate) fn route_error(e: RouteError) -> Error {
    match e {
        RouteError::UnknownTenant => Error::TenantNotFound,
        RouteError::NoShards(_) => Error::NoShards,
    }
}

/// `db` with its statements charged to a request of `tenant` on `route`: to the vshard that
/// placed the data, or to none for a pinned tenant's home data and ranges (see
/// [`crate::storage::meter`]).
fn charged(route: Route, db: Database, tenant: &TenantId) -> (Route, Database) {
    if !db.is_metered() {
        return (route, db);
    }
    let vshard = match route.strategy {
        Strategy::Hash | Strategy::RecordHash => i32::try_from(route.vshard).unwrap_or(NO_VSHARD),
        Strategy::Lookup | Strategy::Range => NO_VSHARD,
    };
    let db = db.charged(Charge { work: Work::Request, vshard, tenant: Some(tenant.clone()) });
    (route, db)
}
