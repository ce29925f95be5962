//! Tenants: creating (optionally pinned), changing, and deleting with every record and blob.

use super::Topology;
use crate::catalog::{Audit, TenantChange, TenantRow};
use crate::clock::now_ms;
use crate::error::Error;
use crate::ids::{ShardId, TenantId};
use crate::map::{Incarnation, TenantEntry, TenantRateLimit, Tier};
use crate::router::{Access, route_error};
use crate::storage::blobs::BlobStore;
use crate::storage::records::{Layout, RecordStore};
use crate::storage::shard::{FencedShard, ShardStore};

impl Topology<'_> {
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
        let _guard = self.router.lock_admin().await;
        let (entry, home) = {
            let map = self.router.read_map();
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
        let db = self.router.shard_db(&home.shard)?;
        RecordStore::new(&db, &home.shard).purge_tenant(&id).await?;
        BlobStore::new(&db, &home.shard).purge_tenant(&id).await?;
        // A fence an earlier tenant of this id left when it moved off this shard is not the new
        // tenant's.
        FencedShard::new(&db, &home.shard).clear_fences(crate::storage::shard::MoveSubject::Tenant(&id)).await?;
        let now = now_ms();
        let row = TenantRow {
            id: id.clone(),
            name,
            tier,
            pinned_shard: pin,
            rate_limit,
            quotas: None,
            incarnation: 0,
            created_at_ms: now,
            updated_at_ms: now,
        };
        // An unpinned tenant may not appear in a vshard while a job moves it.
        let unclaimed =
            (home.strategy == crate::map::Strategy::Hash).then(|| crate::catalog::vshard_subject(home.vshard));
        let epoch = self.router.catalog().insert_tenant(&row, unclaimed.as_deref(), audit).await?;
        let incarnation = Incarnation { id: epoch, created_at_ms: now };
        let mut map = self.router.write_map();
        map.tenants.insert(crate::map::TenantKey::from(id.as_str()), TenantEntry { incarnation, ..entry });
        map.epoch = epoch;
        Ok(TenantRow { incarnation: epoch, ..row })
    }

    /// Changes a tenant's name, tier, rate limit and/or quotas.
    pub async fn update_tenant(&self, id: &TenantId, change: &TenantChange, audit: &Audit) -> Result<TenantRow, Error> {
        let _guard = self.router.lock_admin().await;
        let (row, epoch) = self.router.catalog().update_tenant(id, change, now_ms(), audit).await?;
        let mut map = self.router.write_map();
        if let Some(entry) = map.tenants.get_mut(id.as_str()) {
            entry.tier = row.tier;
            entry.rate_limit = row.rate_limit;
        }
        map.quotas.set_tenant(id.as_str(), row.quotas);
        map.epoch = epoch;
        Ok(row)
    }

    /// Deletes a tenant and every record and blob it has on its home shard; returns how many
    /// records were removed.
    ///
    /// The records and blobs go first, so a failure there leaves the tenant in place and the call
    /// can be repeated. Then the tenant leaves the catalog (a new epoch), the home shard's fence is
    /// raised to that epoch so instances still routing on a map that has the tenant cannot write
    /// there, and whatever they wrote in between is swept. If that sweep fails, the leftovers are
    /// swept when a tenant of the same id is created again (see [`Topology::create_tenant`]).
    pub async fn delete_tenant(&self, id: &TenantId, audit: &Audit) -> Result<u64, Error> {
        let _guard = self.router.lock_admin().await;
        let subject = crate::catalog::tenant_subject(id);
        if let Some(job) = self.router.catalog().job_claiming(&subject).await? {
            return Err(Error::JobConflict { subject, job });
        }
        let (route, db) = self.router.resolve(id, Access::Write)?;
        if route.strategy == crate::map::Strategy::Hash {
            let subject = crate::catalog::vshard_subject(route.vshard);
            if let Some(job) = self.router.catalog().job_claiming(&subject).await? {
                return Err(Error::JobConflict { subject, job });
            }
        }
        let store = RecordStore::new(&db, &route.shard);
        let blobs = BlobStore::new(&db, &route.shard);
        // Records of its distributed collections may be on any shard.
        let spread: Vec<ShardId> = self.router.with_map(|map| {
            if map.spread.contains_key(id.as_str()) {
                map.shards.iter().map(|s| s.id.clone()).collect()
            } else {
                Vec::new()
            }
        });
        let mut purged = store.purge_tenant(id).await?;
        for shard in &spread {
            let db = self.router.shard_db(shard)?;
            purged += RecordStore::new(&db, shard).in_layout(Layout::Range).purge_tenant(id).await?;
            FencedShard::new(&db, shard).drop_range_fences(id, None).await?;
        }
        blobs.purge_tenant(id).await?;
        let epoch = self.router.catalog().delete_tenant(id, audit).await?;
        {
            let mut map = self.router.write_map();
            map.tenants.remove(id.as_str());
            map.spread.remove(id.as_str());
            map.quotas.set_tenant(id.as_str(), None);
            map.epoch = epoch;
        }
        let sweep = async {
            store.raise_fence(epoch).await?;
            blobs.purge_tenant(id).await?;
            store.purge_tenant(id).await
        };
        for shard in &spread {
            self.raise_fence_on(shard, epoch).await;
            let swept = match self.router.shard_db(shard) {
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
