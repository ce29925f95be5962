//! Look-ups: an equality look-up reads one index shard, a range look-up every shard holding
//! entries (merged in value order). Every candidate is verified against its record, so a stale
//! entry never produces a wrong answer; one whose record does not hold the value (and that is
//! not a fresh in-flight claim) is removed on the spot, only if it is still as read.

use std::ops::Bound;

use shardgate_shard_router::ShardStore;
use shardgate_shard_router::records::{Layout, RecordAddress, RecordRead, RecordStore, StoredRecord};
use shardgate_shard_router::{Access, Error as StoreError, RecordKey, ShardState};

use crate::dangling::{Standing, standing};
use crate::entry_store::{EntryAfter, IndexEntryStore, StoredEntry};
use crate::error::IndexError;
use crate::merge::merge_pages;
use crate::placement::entry_vshard;
use crate::registry::LiveIndex;
use crate::service::IndexTables;
use crate::value_key::ValueKey;

/// What to look up.
#[derive(Debug)]
pub enum Lookup {
    /// One value (one index shard).
    Eq(ValueKey),
    /// Values in `[from, to)` (every shard holding entries, merged).
    Range {
        /// Lowest value (inclusive).
        from: Option<ValueKey>,
        /// Highest value (exclusive).
        to: Option<ValueKey>,
    },
}

/// A page of look-up results.
#[derive(Debug)]
pub struct Found {
    /// The records that hold the value now, in (value, key) order.
    pub records: Vec<StoredRecord>,
    /// Where the next page starts: (value key, record key) of the last entry scanned.
    pub next: Option<(String, String)>,
    /// Index shards the look-up queried.
    pub shards_queried: usize,
}

impl IndexTables {
    /// Runs a look-up in `index`, strictly after `after` (value key, record key), at most
    /// `limit` entries, and verifies every candidate against its record.
    pub async fn lookup(
        &self,
        index: &LiveIndex,
        what: &Lookup,
        after: Option<(String, String)>,
        limit: u32,
    ) -> Result<Found, IndexError> {
        let scope = index.scope();
        let (entries, next, shards_queried) = match what {
            Lookup::Eq(value) => {
                let vshard =
                    entry_vshard(&index.tenant, &index.collection, index.def.name(), value, self.router.vshard_count());
                let after_key = after.as_ref().filter(|(v, _)| v == value.as_str()).map(|(_, r)| r.as_str());
                let give_up = self.router.cutover_deadline();
                let mut entries = loop {
                    let (shard, db, _) = self.entry_shard(vshard, Access::Read)?;
                    let counter = self.metrics.lookup_statements_on(&shard);
                    let store = IndexEntryStore::new(&db, &shard).counting(counter.inner());
                    let entries = store.lookup_eq(scope, value.as_str(), after_key, limit + 1).await?;
                    // Nothing, because the vshard moved off that shard since this map was loaded:
                    // look on the shard of the newer map.
                    if entries.is_empty() && store.vshard_moved(vshard).await? {
                        if self.router.wait_for_cutover(give_up).await? {
                            continue;
                        }
                        return Err(StoreError::TenantMoving(index.tenant.clone()).into());
                    }
                    break entries;
                };
                let next = if entries.len() > limit as usize {
                    entries.truncate(limit as usize);
                    entries.last().map(|e| (e.value_key.clone(), e.record_key.clone()))
                } else {
                    None
                };
                (entries, next, 1)
            }
            Lookup::Range { from, to } => {
                let from = from.as_ref().map_or(Bound::Unbounded, |v| Bound::Included(v.as_str()));
                let to = to.as_ref().map_or(Bound::Unbounded, |v| Bound::Excluded(v.as_str()));
                let shards: Vec<_> =
                    self.router.shard_dbs().into_iter().filter(|(_, state, _)| *state != ShardState::Offline).collect();
                let pages = futures::future::try_join_all(shards.iter().map(|(shard, _, db)| {
                    let after = after.as_ref().map(|(v, r)| EntryAfter { value_key: v, record_key: r });
                    let counter = self.metrics.lookup_statements_on(shard);
                    async move {
                        let store = IndexEntryStore::new(db, shard).counting(counter.inner());
                        store.lookup_range(scope, from, to, after, limit + 1).await
                    }
                }))
                .await?;
                let merged = merge_pages(pages, limit);
                let next = merged.next.map(|c| (c.value_key, c.record_key));
                (merged.entries, next, shards.len())
            }
        };
        let (records, _) = self.verify(index, entries).await?;
        Ok(Found { records, next, shards_queried })
    }

    /// Reads each candidate's record (in parallel, from the tenant's home shard) and keeps
    /// those that hold the entry's value now; repairs the others. Returns the records kept and
    /// how many entries were removed.
    pub(crate) async fn verify(
        &self,
        index: &LiveIndex,
        entries: Vec<StoredEntry>,
    ) -> Result<(Vec<StoredRecord>, u64), IndexError> {
        // Each record where it lives: the tenant's home shard, or where its collection's
        // distribution places it.
        let reads = futures::future::try_join_all(entries.iter().map(|entry| async move {
            let Ok(key) = RecordKey::parse(&entry.record_key) else { return Ok(RecordRead::Absent) };
            let addr = RecordAddress { tenant: &index.tenant, collection: &index.collection, key: &key };
            let (route, db) = self.router.resolve_record(addr, Access::Read)?;
            RecordStore::new(&db, &route.shard).in_layout(Layout::of(&route)).read(addr).await
        }))
        .await?;
        let mut found = Vec::with_capacity(entries.len());
        let mut repaired = 0;
        for (entry, read) in entries.iter().zip(reads) {
            match standing(index, entry, &read) {
                Standing::Holds => {
                    if let RecordRead::Live(record) = read {
                        found.push(record);
                    }
                }
                Standing::Dangling => {
                    if self.repair(index, entry).await {
                        repaired += 1;
                    }
                }
                Standing::InFlight => {}
            }
        }
        Ok((found, repaired))
    }

    /// Removes an entry whose record no longer holds its value (only if it is still as read).
    /// Returns whether it did.
    async fn repair(&self, index: &LiveIndex, entry: &StoredEntry) -> bool {
        let result = async {
            let (shard, db, _) = self.entry_shard(entry.vshard, Access::Write)?;
            IndexEntryStore::new(&db, &shard).remove_if_unchanged(index.scope(), entry).await
        }
        .await;
        match result {
            Ok(true) => {
                self.metrics.repaired();
                if ValueKey::is_legacy_number(&entry.value_key) {
                    // Its record's entry is under the exact key only if written since the upgrade.
                    tracing::warn!(
                        index = %index.def.name(),
                        record = entry.record_key,
                        "removed an entry keyed by the double encoding of numbers: this index was built before exact \
                         numbers; run an index audit (POST /v1/admin/index-audits) to re-key it"
                    );
                } else {
                    tracing::info!(index = %index.def.name(), record = entry.record_key, "removed a stale index entry");
                }
                true
            }
            Ok(false) => false,
            Err(e) => {
                tracing::warn!(index = %index.def.name(), error = %e, "could not repair a stale index entry");
                false
            }
        }
    }
}
