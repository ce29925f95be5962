//! Listing a collection. A collection distributed `tenant` is read on its tenant's home shard
//! (through the router, which follows a moving tenant). A distributed one is read on every
//! physical shard that may hold keys in the listed interval, once per shard (never once per
//! vshard), all at once, each within `storage.fan_out_deadline`; the pages merge by key. A
//! hash collection asks each shard for its share of the page first and completes the page in
//! at most one more round (`ShardRouter::fan_out`).
//!
//! Pages continue after the last key returned. Every key lives on exactly one shard, and each
//! shard is read in key order after that key, so a page neither skips nor repeats a record: the
//! one key is every shard's position. A shard that fails, is offline, or misses its deadline is
//! reported in [`Listing::failures`] and the listing goes on with the others (the caller decides
//! whether a partial answer is acceptable).

use crate::error::Error;
use crate::ids::{CollectionName, ShardId, TenantId};
use crate::map::{Distribution, MapSnapshot, ShardIndex, ShardState, Spread};
use crate::router::ShardRouter;
use crate::storage::meter::{Charge, NO_VSHARD, Work};
use crate::storage::records::{Layout, ListBounds, RecordStore, StoredRecord};
use crate::storage::replicas::{Consistency, ReadFrom};
use crate::storage::shard::ShardStore;

/// Which shards a listing reads, decided on one map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListingPlan {
    /// The collection's distribution.
    pub distribution: Distribution,
    /// The shards read, in shard-list order.
    pub shards: Vec<ShardId>,
    /// The map epoch the plan was made on.
    pub epoch: u64,
    /// What that map gives each of `shards`, in the same order. Every read of one listing asks
    /// its shard for what this one map says it holds: a shard read on a newer map than another
    /// could leave a vshard that moved between the two reads unread on both (its old shard no
    /// longer lists it, its new one was read before it had it). On one map, a shard that has
    /// since given a vshard away says so ([`Listing`] is then planned again).
    holdings: Vec<Holding>,
}

/// What one map gives one shard for a listing: its state, the vshards it owns (inclusive runs;
/// hash collections) and the key intervals it holds (range collections; each from its first key
/// up to its second, excluded, `None`: to the end).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Holding {
    state: ShardState,
    runs: Vec<(u32, u32)>,
    intervals: Vec<(String, Option<String>)>,
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
    /// [`ReadFrom::Standby`] if standbys served every shard's part of it (a bounded listing),
    /// else [`ReadFrom::Primary`].
    pub read_from: ReadFrom,
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
            None => ListingPlan {
                distribution: Distribution::Tenant,
                shards: vec![home.shard],
                epoch: map.epoch,
                holdings: Vec::new(),
            },
            Some(spread) => {
                let shards = spread_shards(map, spread, bounds);
                // The vshard table's runs once for all the shards (1,024 vshards a walk).
                let runs = match spread {
                    Spread::Hash => map.vshard_runs(),
                    Spread::Range(_) => Vec::new(),
                };
                let holdings = shards.iter().map(|shard| holding(map, spread, &runs, shard)).collect();
                ListingPlan { distribution: spread.distribution(), shards, epoch: map.epoch, holdings }
            }
        }))
    }

    /// The records of `tenant`'s `collection` within `bounds`, ordered by key, at most `limit`.
    /// A collection distributed `tenant` fails whole if its shard does (as any read of its
    /// tenant); a distributed one reports the shards that failed in [`Listing::failures`]. A
    /// bounded listing (`consistency`) reads each shard's part from a standby that fits the
    /// bound, where one does ([`crate::storage::replicas`]).
    pub async fn list_records(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        bounds: &ListBounds,
        limit: u32,
        consistency: &Consistency,
    ) -> Result<Listing, Error> {
        let give_up = self.cutover_deadline();
        loop {
            let plan = self.listing_plan(tenant, collection, bounds)?;
            if plan.distribution == Distribution::Tenant {
                // Read where the tenant lives, following a tenant move; `None` when the map
                // that routes it no longer keeps the collection there (its distribution
                // changed, and the home rows said so): plan again.
                let records = self
                    .read(tenant, |route, db| async move {
                        if self.distribution_of(tenant, collection) != Distribution::Tenant {
                            return Ok(None);
                        }
                        let listed = db
                            .read_where(&route.shard, consistency, self.map_since(), |db| {
                                let shard = route.shard.clone();
                                async move { RecordStore::new(&db, &shard).list(tenant, collection, bounds, limit).await }
                            })
                            .await?;
                        Ok(Some(listed))
                    })
                    .await?;
                match records {
                    Some((records, read_from)) => {
                        return Ok(Listing { records, plan, failures: Vec::new(), read_from });
                    }
                    None => continue,
                }
            }
            let listed = Listed { tenant, collection, plan: &plan, consistency };
            let (records, mut failures, stale, read_from) = self.fan_out(listed, bounds, limit).await;
            // A shard gave away vshards this map says it owns: a vshard move switched meanwhile
            // (or the collection changed its distribution). Their records are elsewhere, which
            // this map does not read yet: read again on the new map, or (the cut-over
            // outlasting the wait) report the shard as failed.
            if !stale.is_empty() {
                if self.wait_for_cutover(give_up).await? {
                    continue;
                }
                failures.extend(
                    stale.into_iter().map(|shard| ShardFailure { shard, error: Error::TenantMoving(tenant.clone()) }),
                );
            }
            return Ok(Listing { records: merge(records, limit), plan, failures, read_from });
        }
    }

    /// Reads every shard of `plan` at once, each within the fan-out deadline: the records
    /// found (every record of the listing up to the last one returned), the shards that
    /// failed, and the shards that have moved away vshards the map gives them.
    ///
    /// A hash collection's keys are spread evenly, so each shard is first asked for its share of
    /// `limit` and a margin ([`first_quota`]), not for `limit`: at 16 shards that reads a sixth of
    /// the rows. The records up to the smallest last key of the shards that filled their quota
    /// are then complete (every shard has returned all of its keys up to there); if they are
    /// fewer than `limit`, the shards that filled their quota are asked once more, after their
    /// last key, for the number missing, which completes the page.
    async fn fan_out(
        &self,
        listed: Listed<'_>,
        bounds: &ListBounds,
        limit: u32,
    ) -> (Vec<StoredRecord>, Vec<ShardFailure>, Vec<ShardId>, ReadFrom) {
        let plan = listed.plan;
        let mut all_standby = true;
        let mut positions: Vec<Position> = plan.shards.iter().map(|_| Position::Open(None)).collect();
        let mut records = Vec::new();
        let mut failures = Vec::new();
        let mut stale = Vec::new();
        let mut quota = match plan.distribution {
            Distribution::Hash => first_quota(limit, plan.shards.len()),
            Distribution::Tenant | Distribution::Range => limit,
        };
        loop {
            let asked: Vec<usize> = (0..plan.shards.len()).filter(|&i| positions[i].is_open()).collect();
            let reads = asked.iter().map(|&i| {
                let after = positions[i].after().or(bounds.after.as_deref());
                let bounds = ListBounds { after: after.map(str::to_owned), ..bounds.clone() };
                async move { self.read_shard(listed, &bounds, quota, i).await }
            });
            for (read, i) in futures::future::join_all(reads).await.into_iter().zip(asked) {
                match read {
                    Ok(((page, moved), from)) => {
                        all_standby &= from == ReadFrom::Standby;
                        if moved && !stale.contains(&plan.shards[i]) {
                            stale.push(plan.shards[i].clone());
                        }
                        positions[i] = match page.last() {
                            Some(last) if page.len() >= quota as usize => Position::Open(Some(last.key.clone())),
                            _ => Position::Exhausted,
                        };
                        records.extend(page);
                    }
                    Err(failure) => {
                        positions[i] = Position::Failed;
                        failures.push(failure);
                    }
                }
            }
            // Every shard still open has returned its keys up to its position; the records up
            // to the smallest position are complete.
            let cut = positions.iter().filter_map(Position::after).min().map(str::to_owned);
            let read_from = if all_standby { ReadFrom::Standby } else { ReadFrom::Primary };
            let Some(cut) = cut else {
                return (records, failures, stale, read_from);
            };
            records.retain(|r| r.key <= cut);
            newest_by_key(&mut records);
            let complete = records.len();
            if complete >= limit as usize {
                return (records, failures, stale, read_from);
            }
            // The records after `cut` that were dropped are read again on the next round.
            for position in &mut positions {
                if let Position::Open(Some(after)) = position
                    && after.as_str() > cut.as_str()
                {
                    *after = cut.clone();
                }
            }
            quota = limit - u32::try_from(complete).unwrap_or(limit);
        }
    }

    /// The page of a listing on `plan`'s shard number `i`, within the fan-out deadline, and
    /// whether that shard has moved away vshards (or key ranges) `plan`'s map gives it.
    async fn read_shard(
        &self,
        listed: Listed<'_>,
        bounds: &ListBounds,
        limit: u32,
        i: usize,
    ) -> Result<((Vec<StoredRecord>, bool), ReadFrom), ShardFailure> {
        let Listed { tenant, collection, plan, consistency } = listed;
        let (shard, holding) = (&plan.shards[i], &plan.holdings[i]);
        let deadline = self.fan_out_deadline();
        let read = async {
            if holding.state == ShardState::Offline {
                return Err(Error::ShardOffline(shard.clone()));
            }
            let db = self.shard_db(shard)?.charged(Charge {
                work: Work::Request,
                vshard: NO_VSHARD,
                tenant: Some(tenant.clone()),
            });
            db.read_where(shard, consistency, self.map_since(), |db| async move {
                let store = RecordStore::new(&db, shard).in_layout(Layout::Range);
                match plan.distribution {
                    Distribution::Hash => store.list_in_vshards(tenant, collection, bounds, limit, &holding.runs).await,
                    Distribution::Tenant | Distribution::Range => {
                        store.list_in_ranges(tenant, collection, bounds, limit, &holding.intervals).await
                    }
                }
            })
            .await
        };
        match tokio::time::timeout(deadline, read).await {
            Ok(result) => result.map_err(|error| ShardFailure { shard: shard.clone(), error }),
            Err(_) => Err(ShardFailure { shard: shard.clone(), error: Error::FanOutTimeout(deadline) }),
        }
    }
}

/// What a fan-out lists: `tenant`'s `collection` on the shards of `plan`.
#[derive(Clone, Copy)]
struct Listed<'a> {
    tenant: &'a TenantId,
    collection: &'a CollectionName,
    plan: &'a ListingPlan,
    /// How fresh the listing must be: a bounded one may read standbys.
    consistency: &'a Consistency,
}

/// What `map` gives `shard` for a listing of a collection spread by `spread`, `runs` being the
/// map's vshard runs ([`MapSnapshot::vshard_runs`]) for a hash collection.
fn holding(map: &MapSnapshot, spread: &Spread, runs: &[(u32, u32, ShardIndex)], shard: &ShardId) -> Holding {
    let index = map.shard_index(shard.as_str());
    let state = index.map_or(ShardState::Offline, |i| map.shards[usize::from(i)].state);
    let runs = runs.iter().filter(|run| Some(run.2) == index).map(|&(first, last, _)| (first, last)).collect();
    let intervals = match spread {
        Spread::Range(ranges) => ranges
            .iter()
            .enumerate()
            .filter(|(_, range)| Some(range.shard) == index)
            .map(|(i, range)| (range.from.clone(), ranges.get(i + 1).map(|next| next.from.clone())))
            .collect(),
        Spread::Hash => Vec::new(),
    };
    Holding { state, runs, intervals }
}

/// Where a listing stands on one shard.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Position {
    /// The shard may hold more keys after this one (`None`: not read yet).
    Open(Option<String>),
    /// The shard returned every key it holds in the listing's interval.
    Exhausted,
    /// The shard failed; it is reported and not read again.
    Failed,
}

impl Position {
    fn is_open(&self) -> bool {
        matches!(self, Self::Open(_))
    }

    /// The last key read of a shard that may hold more.
    fn after(&self) -> Option<&str> {
        match self {
            Self::Open(after) => after.as_deref(),
            Self::Exhausted | Self::Failed => None,
        }
    }
}

/// How many records a listing first asks each of `shards` shards of a hash collection for:
/// the even share of `limit` plus three standard deviations of it (the keys of an interval
/// land on a shard about as a Poisson count), and two; never more than `limit`.
fn first_quota(limit: u32, shards: usize) -> u32 {
    let share = f64::from(limit) / shards.max(1) as f64;
    let quota = (share + 3.0 * share.sqrt()).ceil() as u32 + 2;
    quota.clamp(1, limit.max(1))
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
    newest_by_key(&mut records);
    records.truncate(limit as usize);
    records
}

/// Sorts `records` by key and keeps each key once, at its newest version.
fn newest_by_key(records: &mut Vec<StoredRecord>) {
    records.sort_by(|a, b| a.key.cmp(&b.key).then(b.version.cmp(&a.version)));
    records.dedup_by(|later, kept| later.key == kept.key);
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
    fn each_shard_is_first_asked_for_its_share_and_a_margin() {
        assert_eq!(first_quota(101, 1), 101, "one shard is asked for the whole page");
        assert_eq!(first_quota(101, 2), 74);
        assert_eq!(first_quota(101, 16), 16, "a sixth of the rows at 16 shards");
        assert_eq!(first_quota(2, 16), 2);
        assert_eq!(first_quota(0, 0), 1, "never nothing");
        for shards in 1..=64 {
            let quota = first_quota(1000, shards);
            assert!(quota as usize * shards >= 1000, "{shards} shards can fill a page in one round");
        }
    }

    /// A listing planned on one map reads every shard on that map, even when the map changes
    /// before its reads: had the vshards of the plan's first shard switched to its second
    /// meanwhile, reading each shard on the live map would ask the first for none of them and
    /// the second for rows it does not have yet, and those keys would be missing, unnoticed.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_shard_of_a_listing_is_read_on_the_map_it_was_planned_on() {
        use crate::catalog::{Audit, CollectionRow};
        use crate::router::StorageConfig;
        use crate::storage::records::{RecordAddress, WriteCondition};
        use crate::topology::Topology;

        let dir = tempfile::tempdir().unwrap();
        let router = ShardRouter::open(&StorageConfig::default(), dir.path()).await.unwrap();
        let audit = Audit {
            actor: "test".into(),
            tenant: Some("acme".into()),
            action: "test",
            target: "tenant:acme".into(),
            request_id: "r".into(),
            client_request_id: None,
            client_address: None,
        };
        let tenant = TenantId::parse("acme").unwrap();
        let collection = CollectionName::parse("events").unwrap();
        Topology::of(&router)
            .create_tenant(tenant.clone(), "Acme".into(), crate::map::Tier::Standard, None, None, &audit)
            .await
            .unwrap();
        let row = CollectionRow {
            tenant: tenant.clone(),
            collection: collection.clone(),
            distribution: Distribution::Hash,
            ranges: Vec::new(),
            created_at_ms: 0,
            updated_at_ms: 0,
        };
        Topology::of(&router).set_distribution(&row, &audit).await.unwrap();
        let value = serde_json::value::RawValue::from_string("1".to_owned()).unwrap();
        let keys: Vec<String> = (0..200).map(|i| format!("k{i:03}")).collect();
        for key in &keys {
            let key = crate::ids::RecordKey::parse(key).unwrap();
            let addr = RecordAddress { tenant: &tenant, collection: &collection, key: &key };
            let route = router.route_record(addr).unwrap();
            let db = router.shard_db(&route.shard).unwrap();
            let store = RecordStore::new(&db, &route.shard).in_layout(Layout::of(&route));
            store.put(addr, route.vshard, &value, &WriteCondition::Always, 1).await.unwrap();
        }

        let bounds = ListBounds::default();
        let plan = router.listing_plan(&tenant, &collection, &bounds).unwrap();
        assert!(plan.shards.len() >= 2, "{plan:?}");
        let mut map = router.with_map(Clone::clone);
        let (first, second) = (map.shard_index(plan.shards[0].as_str()), map.shard_index(plan.shards[1].as_str()));
        for owner in &mut map.vshards {
            if Some(*owner) == first {
                *owner = second.unwrap();
            }
        }
        map.epoch += 1;
        *router.write_map() = map; // in memory only: the catalog keeps what it holds

        let listed =
            Listed { tenant: &tenant, collection: &collection, plan: &plan, consistency: &Consistency::Strong };
        let (records, failures, stale, _) = router.fan_out(listed, &bounds, 1000).await;
        assert!(failures.is_empty() && stale.is_empty(), "{failures:?} {stale:?}");
        let listed: Vec<String> = merge(records, 1000).into_iter().map(|r| r.key).collect();
        assert_eq!(listed, keys, "every key, once");
    }

    #[test]
    fn pages_merge_by_key_once_each() {
        let merged = merge(vec![record("b", 1), record("a", 1), record("c", 2), record("b", 3)], 2);
        let keys: Vec<(&str, i64)> = merged.iter().map(|r| (r.key.as_str(), r.version)).collect();
        assert_eq!(keys, vec![("a", 1), ("b", 3)]);
    }
}
