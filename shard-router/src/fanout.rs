//! Listing a collection. A collection distributed `tenant` is read on its tenant's home shard
//! (through the router, which follows a moving tenant). A distributed one is read on every
//! physical shard that may hold keys in the listed interval, once per shard (never once per
//! vshard), all at once, each within `storage.fan_out_deadline`; the pages merge by key.
//!
//! Pages continue after the last key returned. Every key lives on exactly one shard, and each
//! shard is read in key order after that key, so a page neither skips nor repeats a record: the
//! one key is every shard's position. A shard that fails, is offline, or misses its deadline is
//! reported in [`Listing::failures`] and the listing goes on with the others (the caller decides
//! whether a partial answer is acceptable).

use crate::error::Error;
use crate::ids::{CollectionName, ShardId, TenantId};
use crate::map::{Distribution, MapSnapshot, ShardState, Spread};
use crate::records::{Layout, ListBounds, RecordStore, StoredRecord};
use crate::router::ShardRouter;
use crate::shard::ShardStore;

/// Which shards a listing reads, decided on one map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListingPlan {
    /// The collection's distribution.
    pub distribution: Distribution,
    /// The shards read, in shard-list order.
    pub shards: Vec<ShardId>,
    /// The map epoch the plan was made on.
    pub epoch: u64,
}

/// A shard a listing could not read.
#[derive(Debug)]
pub struct ShardFailure {
    /// The shard.
    pub shard: ShardId,
    /// Why: the shard's error, or [`Error::FanOutTimeout`].
    pub error: Error,
}

/// One listing's records and how its shards answered.
#[derive(Debug)]
pub struct Listing {
    /// At most the requested number of records, ordered by key.
    pub records: Vec<StoredRecord>,
    /// The plan it ran.
    pub plan: ListingPlan,
    /// The shards that did not answer.
    pub failures: Vec<ShardFailure>,
}

impl ShardRouter {
    /// The shards a listing of `tenant`'s `collection` within `bounds` reads.
    pub fn listing_plan(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        bounds: &ListBounds,
    ) -> Result<ListingPlan, Error> {
        let home = self.route_tenant(tenant)?;
        Ok(self.with_map(|map| match map.spread_of(tenant.as_str(), collection.as_str()) {
            None => ListingPlan { distribution: Distribution::Tenant, shards: vec![home.shard], epoch: map.epoch },
            Some(spread) => ListingPlan {
                distribution: spread.distribution(),
                shards: spread_shards(map, spread, bounds),
                epoch: map.epoch,
            },
        }))
    }

    /// The records of `tenant`'s `collection` within `bounds`, ordered by key, at most `limit`.
    /// A collection distributed `tenant` fails whole if its shard does (as any read of its
    /// tenant); a distributed one reports the shards that failed in [`Listing::failures`].
    pub async fn list_records(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        bounds: &ListBounds,
        limit: u32,
    ) -> Result<Listing, Error> {
        let mut plan = self.listing_plan(tenant, collection, bounds)?;
        if plan.distribution == Distribution::Tenant {
            let records = self
                .read(tenant, |route, db| async move {
                    RecordStore::new(&db, &route.shard).list(tenant, collection, bounds, limit).await
                })
                .await?;
            return Ok(Listing { records, plan, failures: Vec::new() });
        }
        let give_up = self.cutover_deadline();
        loop {
            let (records, mut failures, stale) = self.fan_out(tenant, collection, bounds, limit, &plan).await;
            // A shard gave away vshards this map says it owns: a vshard move switched meanwhile.
            // Their records are on the new owner, which this map does not read yet: read again
            // on the new map, or (the cut-over outlasting the wait) report the shard as failed.
            if !stale.is_empty() {
                if self.wait_for_cutover(give_up).await? {
                    plan = self.listing_plan(tenant, collection, bounds)?;
                    continue;
                }
                failures.extend(
                    stale.into_iter().map(|shard| ShardFailure { shard, error: Error::TenantMoving(tenant.clone()) }),
                );
            }
            return Ok(Listing { records: merge(records, limit), plan, failures });
        }
    }

    /// Reads every shard of `plan` at once, each within the fan-out deadline: the records
    /// found, the shards that failed, and the shards that have moved away vshards the map gives
    /// them.
    async fn fan_out(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        bounds: &ListBounds,
        limit: u32,
        plan: &ListingPlan,
    ) -> (Vec<StoredRecord>, Vec<ShardFailure>, Vec<ShardId>) {
        let deadline = self.fan_out_deadline();
        let by_vshard = plan.distribution == Distribution::Hash;
        let reads = plan.shards.iter().map(|shard| async move {
            let read = async {
                let (state, runs) = self.with_map(|map| {
                    let index = map.shard_index(shard.as_str());
                    let state = index.map(|i| map.shards[usize::from(i)].state);
                    let runs: Vec<(u32, u32)> = map
                        .vshard_runs()
                        .into_iter()
                        .filter(|run| Some(run.2) == index)
                        .map(|(first, last, _)| (first, last))
                        .collect();
                    (state, runs)
                });
                if state == Some(ShardState::Offline) {
                    return Err(Error::ShardOffline(shard.clone()));
                }
                let db = self.shard_db(shard)?;
                let store = RecordStore::new(&db, shard).in_layout(Layout::Range);
                if !by_vshard {
                    return Ok((store.list(tenant, collection, bounds, limit).await?, false));
                }
                let records = store.list_in_vshards(tenant, collection, bounds, limit, &runs).await?;
                Ok((records, store.moved_any_of(&runs).await?))
            };
            match tokio::time::timeout(deadline, read).await {
                Ok(result) => result.map_err(|error| ShardFailure { shard: shard.clone(), error }),
                Err(_) => Err(ShardFailure { shard: shard.clone(), error: Error::FanOutTimeout(deadline) }),
            }
        });
        let mut records = Vec::new();
        let mut failures = Vec::new();
        let mut stale = Vec::new();
        for (read, shard) in futures::future::join_all(reads).await.into_iter().zip(&plan.shards) {
            match read {
                Ok((page, moved)) => {
                    records.extend(page);
                    if moved {
                        stale.push(shard.clone());
                    }
                }
                Err(failure) => failures.push(failure),
            }
        }
        (records, failures, stale)
    }
}

/// The shards that may hold keys of a distributed collection within `bounds`.
fn spread_shards(map: &MapSnapshot, spread: &Spread, bounds: &ListBounds) -> Vec<ShardId> {
    let lower = [bounds.start.as_deref(), bounds.prefix.as_deref(), bounds.after.as_deref()]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or("");
    let prefix_end = bounds.prefix.as_ref().map(|p| format!("{p}\u{10FFFF}"));
    let upper = [bounds.end.as_deref(), prefix_end.as_deref()].into_iter().flatten().min();
    map.spread_shards(spread, lower, upper).into_iter().map(|index| map.shards[usize::from(index)].id.clone()).collect()
}

/// The first `limit` records of the shards' pages by key; a key found twice (never, unless a
/// copy is read mid-move) counts once, at its newest version.
fn merge(mut records: Vec<StoredRecord>, limit: u32) -> Vec<StoredRecord> {
    records.sort_by(|a, b| a.key.cmp(&b.key).then(b.version.cmp(&a.version)));
    records.dedup_by(|later, kept| later.key == kept.key);
    records.truncate(limit as usize);
    records
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(key: &str, version: i64) -> StoredRecord {
        StoredRecord {
            key: key.to_owned(),
            version,
            updated_at_ms: 0,
            value: serde_json::value::RawValue::from_string("1".to_owned()).unwrap(),
        }
    }

    #[test]
    fn pages_merge_by_key_once_each() {
        let merged = merge(vec![record("b", 1), record("a", 1), record("c", 2), record("b", 3)], 2);
        let keys: Vec<(&str, i64)> = merged.iter().map(|r| (r.key.as_str(), r.version)).collect();
        assert_eq!(keys, vec![("a", 1), ("b", 3)]);
    }
}
