//! Distributions: setting a collection's (`tenant`, `hash` or `range`) while it holds no record,
//! and settling the rows written under the old one while it changed; which shards keep a
//! collection's range (they cannot be removed).

use super::Topology;
use crate::catalog::{Audit, CollectionRow, RangeRow};
use crate::error::Error;
use crate::ids::{CollectionName, RecordKey, ShardId, TenantId};
use crate::map::{Distribution, ShardEntry, ShardState, Spread};
use crate::router::ShardRouter;
use crate::storage::db::Database;
use crate::storage::records::{Layout, ListBounds, RecordAddress, RecordStore, StoredRecord, WriteCondition};
use crate::storage::shard::{FenceLayout, FencedShard, ShardStore};

impl Topology<'_> {
    /// Sets the distribution of `row.collection` of `row.tenant` (`tenant`, `hash` or `range`
    /// with its ranges) and returns the new epoch. Only a collection that holds no record (nor
    /// tombstone) may change its distribution; ranges must name shards that take new data.
    /// Every shard's fence is raised to the new epoch, so no instance still routing on an older
    /// map writes the collection where it no longer lives; a record such an instance wrote
    /// between the check and the fence is carried over to where the collection lives now.
    pub async fn set_distribution(&self, row: &CollectionRow, audit: &Audit) -> Result<u64, Error> {
        self.router.refresh().await?;
        let _guard = self.router.lock_admin().await;
        let (old, shards) = {
            let map = self.router.read_map();
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
            let current = self.router.catalog().get_distribution(&row.tenant, &row.collection).await?;
            if current.is_some_and(|current| same_holders(&current.ranges, &row.ranges)) {
                // Bounds added or removed, every key on the shard it was on: nothing moves.
                let epoch = self.router.catalog().set_distribution(row, audit).await?;
                let map = self.router.catalog().load_map().await?;
                *self.router.write_map() = map;
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
            let db = self.router.shard_db(shard)?;
            let fenced = FencedShard::new(&db, shard);
            if let Err(e) = fenced.unfence_collection(&row.tenant, &row.collection, Some(layout), false).await {
                tracing::warn!(shard = %shard, error = %e, "could not lift an old collection fence");
            }
        }
        let epoch = self.router.catalog().set_distribution(row, audit).await?;
        let map = self.router.catalog().load_map().await?;
        *self.router.write_map() = map;
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
            let db = self.router.shard_db(shard)?;
            FencedShard::new(&db, shard).drop_range_fences(tenant, Some(collection)).await?;
            let store = RecordStore::new(&db, shard).in_layout(Layout::Range);
            for row in store.placed_rows(tenant, collection, CARRY_OVER_LIMIT).await? {
                let key = RecordKey::parse(&row.record.key).map_err(|e| Error::Corrupt(e.to_string()))?;
                let route = self.router.route_record(RecordAddress { tenant, collection, key: &key })?;
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
        self.router.with_map(|map| {
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

    /// How many rows (tombstones included) `tenant`'s `collection` holds where its
    /// distribution in this instance's map places it.
    pub async fn count_collection_rows(&self, tenant: &TenantId, collection: &CollectionName) -> Result<u64, Error> {
        let shards: Vec<ShardId> = self.router.with_map(|map| map.shards.iter().map(|s| s.id.clone()).collect());
        let distribution = self.router.distribution_of(tenant, collection);
        self.collection_rows(tenant, collection, distribution, &shards).count().await
    }

    /// The rows of `tenant`'s `collection` wherever distribution `distribution` may have put
    /// them: its home shard, or every shard.
    fn collection_rows<'a>(
        &'a self,
        tenant: &'a TenantId,
        collection: &'a CollectionName,
        distribution: Distribution,
        shards: &'a [ShardId],
    ) -> CollectionRows<'a> {
        CollectionRows { router: self.router, tenant, collection, distribution, shards }
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
                .router
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
fn same_holders(old: &[RangeRow], new: &[RangeRow]) -> bool {
    let holder = |ranges: &[RangeRow], key: &str| {
        let i = ranges.partition_point(|range| range.from.as_str() <= key).saturating_sub(1);
        ranges.get(i).map(|range| range.shard.clone())
    };
    old.iter().chain(new).all(|bound| holder(old, &bound.from) == holder(new, &bound.from))
}

/// The most records written under an old distribution while it changed that are carried over
/// per shard (a few at most: only writes routed on the old map in the moment of the change).
const CARRY_OVER_LIMIT: u32 = 10_000;

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
