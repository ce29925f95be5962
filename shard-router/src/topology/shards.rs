//! Shards: registering, changing state, removing, and their statistics.

use secrecy::SecretString;

use super::Topology;
use crate::catalog::{Audit, ShardRow};
use crate::clock::now_ms;
use crate::error::Error;
use crate::ids::ShardId;
use crate::map::{ShardEntry, ShardState};
use crate::storage::db::PoolConnections;
use crate::storage::health::HealthReport;
use crate::storage::holdings::{ShardSize, home_records_by_tenant, shard_size};
use crate::storage::registration::{Claim, check_shard_url};
use crate::storage::shard::FencedShard;

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
    /// Live records of the tenants whose home it is (a tenant's copy left until a move's
    /// clean-up, or made before its switch, is counted where the catalog places the tenant);
    /// `None` when they cannot be counted (offline or unreachable).
    pub records: Option<u64>,
    /// Its database's size on disk (bytes); `None` when it cannot be measured.
    pub bytes: Option<u64>,
    /// The size of its data: its tables with their indexes (bytes); `None` when it cannot be
    /// measured.
    pub data_bytes: Option<u64>,
    /// Its database's health on this instance; `None` when no pool is open for it.
    pub health: Option<HealthReport>,
    /// Its pool's connections on this instance; `None` when no pool is open for it.
    pub connections: Option<PoolConnections>,
    /// Why this instance does not use it, if it does not (its database carries another shard's
    /// identity marker).
    pub problem: Option<String>,
}

impl Topology<'_> {
    /// Registers a shard by URL: checks the URL ([`check_shard_url`]), connects, migrates,
    /// writes the shard's identity marker into the database (refused if it carries another
    /// one), then records it in the catalog. The first shard of an empty catalog takes every
    /// vshard.
    pub async fn register_shard(&self, id: ShardId, url: SecretString, audit: &Audit) -> Result<ShardRow, Error> {
        let engine = check_shard_url(&url, self.router.catalog().database().engine)
            .map_err(|e| e.tls_to(format!("shard {id}")))?;
        let _guard = self.router.lock_admin().await;
        if self.router.read_map().shard(id.as_str()).is_some() {
            return Err(Error::ShardExists(id));
        }
        let (db, claim) = self.router.pools().connect(&id, &url).await?;
        let registered = |other: &str| self.router.read_map().shard(other).is_some();
        if let Err(e) = claim.refuse_other(&id, self.router.pools().catalog_id(), registered) {
            db.close().await;
            return Err(e);
        }
        let now = now_ms();
        let row =
            ShardRow { id: id.clone(), url, engine, state: ShardState::Active, created_at_ms: now, updated_at_ms: now };
        let (epoch, took_vshards) = match self.router.catalog().insert_shard(&row, true, audit).await {
            Ok(inserted) => inserted,
            Err(e) => {
                if claim == Claim::Written {
                    self.router.pools().release_marker(&db, &id).await;
                }
                db.close().await;
                return Err(e);
            }
        };
        self.router.pools().insert(id.clone(), db);
        self.router.pools().rebalance(self.router.catalog()).await;
        let mut map = self.router.write_map();
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

    /// Statistics of the shards `wanted` picks: one catalog read, the shards measured
    /// concurrently, then one read of the shard map for all of them. The counts and the record
    /// totals come from that one map, so a tenant whose move switches while the shards are being
    /// measured counts once, on whichever shard that map places it.
    async fn stats_of(&self, wanted: impl Fn(&ShardRow) -> bool) -> Result<Vec<ShardStats>, Error> {
        let rows: Vec<ShardRow> =
            self.router.catalog().list_shards().await?.into_iter().filter(|r| wanted(r)).collect();
        let measured = futures::future::join_all(rows.iter().map(|row| self.measure(row))).await;
        let counted: Vec<((u64, u64, u64), Option<u64>)> = self.router.with_map(|map| {
            let vshards = map.vshards_per_shard();
            let tenants = map.tenants_per_shard();
            rows.iter()
                .zip(&measured)
                .map(|(row, (by_tenant, _))| {
                    let placed_here = |tenant: &str| map.route_tenant(tenant).is_ok_and(|route| route.shard == row.id);
                    let records = by_tenant.as_ref().map(|by_tenant| {
                        by_tenant.iter().filter(|(tenant, _)| placed_here(tenant)).map(|(_, n)| n).sum()
                    });
                    let counts = match map.shard_index(row.id.as_str()) {
                        Some(i) => {
                            let pinned = map.tenants.values().filter(|t| t.pin == Some(i)).count();
                            (vshards[usize::from(i)] as u64, tenants[usize::from(i)] as u64, pinned as u64)
                        }
                        None => (0, 0, 0),
                    };
                    (counts, records)
                })
                .collect()
        });
        Ok(rows
            .into_iter()
            .zip(counted)
            .zip(measured)
            .map(|((shard, ((vshards, tenants, pinned_tenants), records)), (_, size))| {
                let db = self.router.shard_db(&shard.id).ok();
                ShardStats {
                    health: db.as_ref().map(|db| db.health().report()),
                    connections: db.as_ref().map(|db| db.connections()),
                    problem: self.router.pools().problem(&shard.id),
                    shard,
                    vshards,
                    tenants,
                    pinned_tenants,
                    records,
                    bytes: size.map(|s| s.bytes),
                    data_bytes: size.map(|s| s.data_bytes),
                }
            })
            .collect())
    }

    /// The live records of each tenant whose home data a shard holds, and its sizes; each `None`
    /// when the shard is offline or does not answer in time. The caller keeps the rows of the
    /// tenants the catalog places here, leaving out the old copy of a moved tenant until its
    /// clean-up and the copy a move is making, so that totals over the fleet count each tenant
    /// once.
    async fn measure(&self, shard: &ShardRow) -> (Option<Vec<(String, u64)>>, Option<ShardSize>) {
        if shard.state == ShardState::Offline {
            return (None, None);
        }
        let Ok(db) = self.router.shard_db(&shard.id) else { return (None, None) };
        let fenced = FencedShard::new(&db, &shard.id);
        let by_tenant = self.within_probe(&shard.id, "count records", home_records_by_tenant(&fenced));
        let size = self.within_probe(&shard.id, "measure the database", shard_size(&fenced));
        futures::join!(by_tenant, size)
    }

    /// Changes a shard's state; requests see it at once.
    pub async fn set_shard_state(&self, id: &ShardId, state: ShardState, audit: &Audit) -> Result<(), Error> {
        let _guard = self.router.lock_admin().await;
        let epoch = self.router.catalog().set_shard_state(id, state, now_ms(), audit).await?;
        if !matches!(state, ShardState::Active | ShardState::Draining) {
            // Instances still routing on older maps must not write here any more.
            self.raise_fence_on(id, epoch).await;
        }
        let mut map = self.router.write_map();
        if let Some(index) = map.shard_index(id.as_str()) {
            map.shards[usize::from(index)].state = state;
        }
        map.epoch = epoch;
        Ok(())
    }

    /// Points a registered shard at a new URL: the same database reached another way (a rotated
    /// password, a new host name or TLS setting). The URL is checked as a registration checks
    /// one ([`check_shard_url`], same engine), and must reach the shard's own database: one that
    /// carries this shard's identity marker ([`Error::ShardIdentityMismatch`] otherwise). Then
    /// the catalog stores it (moving the epoch on, so other instances follow on their next
    /// refresh) and this instance's pool is reopened at it; the old pool drains (see
    /// [`crate::pools::ShardPools::reopen_moved`]). Nothing changes if a check fails.
    pub async fn change_shard_url(&self, id: &ShardId, url: SecretString, audit: &Audit) -> Result<ShardRow, Error> {
        let engine = check_shard_url(&url, self.router.catalog().database().engine)
            .map_err(|e| e.tls_to(format!("shard {id}")))?;
        let _guard = self.router.lock_admin().await;
        let rows = self.router.catalog().list_shards().await?;
        let Some(row) = rows.iter().find(|r| &r.id == id) else { return Err(Error::ShardNotFound(id.clone())) };
        if row.engine != engine {
            return Err(Error::ShardIdentityMismatch {
                shard: id.clone(),
                found: format!("the URL names a {} database and the shard is {}", engine.as_str(), row.engine.as_str()),
            });
        }
        self.router.pools().check_same_database(id, &url).await?;
        let now = now_ms();
        let epoch = self.router.catalog().set_shard_url(id, &url, now, audit).await?;
        let rows: Vec<ShardRow> = rows
            .into_iter()
            .map(|r| if &r.id == id { ShardRow { url: url.clone(), updated_at_ms: now, ..r } } else { r })
            .collect();
        self.router.pools().reopen_moved(&rows);
        if self.router.pools().lift_quarantine(id, &url) {
            self.router.pools().rebalance(self.router.catalog()).await;
        }
        self.router.write_map().epoch = epoch;
        Ok(rows.into_iter().find(|r| &r.id == id).expect("the shard is in the list"))
    }

    /// Unregisters a shard that owns no vshard and no pinned tenant, and closes its pool.
    pub async fn remove_shard(&self, id: &ShardId, audit: &Audit) -> Result<(), Error> {
        let _guard = self.router.lock_admin().await;
        if let Some(held) = self.range_kept_on(|shard| &shard.id == id) {
            return Err(Error::ShardHoldsRange(held));
        }
        self.router.catalog().delete_shard(id, audit).await?;
        // Indexes shift when a shard leaves the list: reload rather than patch.
        let map = self.router.catalog().load_map().await?;
        *self.router.write_map() = map;
        let db = self.router.pools().remove(id);
        if let Some(db) = db {
            self.router.pools().release_marker(&db, id).await;
            db.close().await;
        }
        self.router.pools().rebalance(self.router.catalog()).await;
        Ok(())
    }
}
