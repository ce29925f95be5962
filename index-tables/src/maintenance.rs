//! Index maintenance around a record write, without distributed transactions: the caller asks
//! [`IndexTables::prepare_write`] before the record's write and hands the result to
//! [`IndexTables::finish_write`] after it.
//!
//! - Before the write, the entry of each new value is written `pending` on its index shard (a
//!   unique value is claimed: another record holding it is [`IndexError::UniqueViolation`]).
//! - After the write committed, the new entries go live and the old values' entries go; after
//!   it failed, the pending entries go. A failure in between leaves at most an extra entry,
//!   never a missing one: look-ups verify every entry against its record.

use std::sync::Arc;

use serde_json::value::RawValue;
use shardgate_shard_router::ShardStore;
use shardgate_shard_router::records::{Layout, RecordAddress, RecordRead, RecordStore};
use shardgate_shard_router::{
    Access, CollectionName, Database, Error as StoreError, RecordKey, Route, TenantId, now_ms,
};

use crate::entry_store::{Claim, EntryKey, EntryState, IndexEntry, IndexEntryStore, StoredEntry};
use crate::error::IndexError;
use crate::placement::entry_vshard;
use crate::record_entry::RecordVersion;
use crate::registry::LiveIndex;
use crate::service::IndexTables;
use crate::value_key::ValueKey;

/// A pending claim younger than this is a write in flight: it blocks a unique value and is not
/// repaired away.
const IN_FLIGHT_MS: i64 = 30_000;

/// Whether `entry` may belong to a write still in flight (a fresh pending claim).
pub(crate) fn is_in_flight(entry: &StoredEntry) -> bool {
    entry.state == EntryState::Pending && now_ms() - entry.claimed_at_ms < IN_FLIGHT_MS
}

/// What a record write does to its collection's indexes, prepared before the write by
/// [`IndexTables::prepare_write`]; hand it to [`IndexTables::finish_write`] after.
#[derive(Debug)]
#[must_use = "finish_write makes the entries live, or removes them"]
pub struct IndexedWrite {
    /// `None` when the collection has no index.
    prepared: Option<Prepared>,
}

#[derive(Debug)]
struct Prepared {
    /// The record's new value (`None`: a delete).
    new: Option<Box<RawValue>>,
    record_key: RecordKey,
    written: Vec<PendingEntry>,
    removals: Vec<(Arc<LiveIndex>, ValueKey)>,
}

/// An entry written before a record commit, to be made live (or removed) after.
#[derive(Debug)]
struct PendingEntry {
    index: Arc<LiveIndex>,
    entry: IndexEntry,
}

/// Whether the record an entry names holds the entry's value.
#[derive(Debug, PartialEq, Eq)]
enum Holds {
    Yes,
    /// Not now, but a fresh pending claim: its write may be about to commit.
    InFlight,
    No,
}

/// The record's current value and version, if it exists.
async fn current_value(
    db: &Database,
    route: &Route,
    addr: RecordAddress<'_>,
) -> Result<Option<(Box<RawValue>, i64)>, IndexError> {
    Ok(match RecordStore::new(db, &route.shard).in_layout(Layout::of(route)).read(addr).await? {
        RecordRead::Live(record) => Some((record.value, record.version)),
        RecordRead::Gone(_) | RecordRead::Absent => None,
    })
}

impl IndexTables {
    /// Before a write of `new` (`None`: a delete) to the record at `addr`: if its collection has
    /// indexes, reads the record's current value and writes the new values' entries (pending),
    /// claiming unique values. Errors: [`IndexError::UniqueViolation`] if another record holds
    /// a unique value, [`IndexError::ValueTooLong`] if a value is too long to index, or the
    /// store's. `new` is JSON the api checked against the record rules; fields are read from its
    /// text (numbers exactly), never from a re-parsed value.
    pub async fn prepare_write(
        &self,
        addr: RecordAddress<'_>,
        new: Option<&RawValue>,
    ) -> Result<IndexedWrite, IndexError> {
        let indexes = self.collection_indexes(addr.tenant.as_str(), addr.collection.as_str());
        if indexes.is_empty() {
            return Ok(IndexedWrite { prepared: None });
        }
        let count = indexes.len();
        shardgate_shard_router::in_trace_span!(
            tracing::trace_span!("index.prepare", indexes = count),
            self.prepare_entries(addr, new, indexes)
        )
    }

    /// [`IndexTables::prepare_write`] for a collection with `indexes`.
    async fn prepare_entries(
        &self,
        addr: RecordAddress<'_>,
        new: Option<&RawValue>,
        indexes: Vec<Arc<LiveIndex>>,
    ) -> Result<IndexedWrite, IndexError> {
        let (route, db) = self.router.resolve_record_fresh(addr, Access::Write).await?;
        let old = current_value(&db, &route, addr).await?;
        let new: Option<Box<RawValue>> = new.map(ToOwned::to_owned);
        let mut prepared =
            Prepared { new: None, record_key: addr.key.clone(), written: Vec::new(), removals: Vec::new() };
        let expected_version = old.as_ref().map_or(1, |(_, version)| version + 1);
        let vshard_count = self.router.vshard_count();
        for index in indexes {
            let change = index.def.change(old.as_ref().map(|(v, _)| &**v), new.as_deref())?;
            if let Some(old_key) = change.remove {
                prepared.removals.push((index.clone(), old_key));
            }
            let (Some(new_key), Some(value)) = (change.write, new.as_deref()) else { continue };
            let record = RecordVersion {
                tenant: addr.tenant,
                collection: addr.collection,
                key: addr.key,
                vshard: route.vshard,
                version: expected_version,
                value,
            };
            let entry = index.def.entry(&record, &new_key, vshard_count, now_ms());
            if let Err(e) = self.write_pending(&index, &entry, addr).await {
                self.abandon(prepared.written).await;
                return Err(e);
            }
            prepared.written.push(PendingEntry { index, entry });
        }
        prepared.new = new;
        Ok(IndexedWrite { prepared: Some(prepared) })
    }

    /// After the record write: if it `committed` at a version, the new entries go live and the
    /// old values' entries go; if it failed, the pending entries go. Failures here are logged,
    /// never returned: look-ups verify and repair what is left.
    pub async fn finish_write(&self, write: IndexedWrite, committed: Result<i64, &StoreError>) {
        let Some(prepared) = write.prepared else { return };
        let span = tracing::trace_span!("index.finish", committed = committed.is_ok());
        let finish = async {
            match committed {
                Ok(version) => self.complete(prepared, version).await,
                Err(_) => self.abandon(prepared.written).await,
            }
        };
        tracing::Instrument::instrument(finish, span).await
    }

    /// Writes `entry` as pending (claiming its value in a unique index) on the shard of its
    /// vshard. If the vshard is moving off that shard (its fence refuses the write), waits for
    /// the map that places it on its new shard and writes there, for at most
    /// `moves.cutover_wait`; then [`StoreError::TenantMoving`].
    async fn write_pending(
        &self,
        index: &LiveIndex,
        entry: &IndexEntry,
        addr: RecordAddress<'_>,
    ) -> Result<(), IndexError> {
        let give_up = self.router.cutover_deadline();
        loop {
            let (shard, db, epoch) = self.entry_shard(entry.vshard, Access::Write)?;
            let store = IndexEntryStore::new(&db, &shard).routed_at(epoch);
            let written = if index.def.is_unique() {
                self.claim(index, &store, entry, addr).await
            } else {
                store.put_pending(entry).await.map(|_| ())
            };
            match written {
                Err(IndexError::Store(StoreError::VshardFenced { .. })) => {
                    if !self.router.wait_for_cutover(give_up).await? {
                        return Err(StoreError::TenantMoving(addr.tenant.clone()).into());
                    }
                }
                other => return other,
            }
        }
    }

    /// Claims a unique value for `addr`'s record.
    pub(crate) async fn claim(
        &self,
        index: &LiveIndex,
        store: &IndexEntryStore<'_>,
        entry: &IndexEntry,
        addr: RecordAddress<'_>,
    ) -> Result<(), IndexError> {
        let violation = || IndexError::UniqueViolation { index: index.def.name().to_string() };
        let mut attempt = store.claim_unique(entry).await?;
        for _ in 0..3 {
            let held = match attempt {
                Claim::Won => return Ok(()),
                Claim::Held(held) => held,
            };
            if held.record_key == addr.key.as_str() {
                // Our own record's claim (a rewrite with the same value): ours to update.
                store.put_pending(entry).await?;
                return Ok(());
            }
            if self.holds_value(index, addr.tenant, addr.collection, &held).await? != Holds::No {
                return Err(violation());
            }
            attempt = store.take_over(&held, entry).await?;
        }
        Err(violation())
    }

    /// Whether the record an entry names holds the entry's value now (or may be about to: a
    /// fresh pending claim).
    async fn holds_value(
        &self,
        index: &LiveIndex,
        tenant: &TenantId,
        collection: &CollectionName,
        entry: &StoredEntry,
    ) -> Result<Holds, IndexError> {
        let Ok(key) = RecordKey::parse(&entry.record_key) else { return Ok(Holds::No) };
        let addr = RecordAddress { tenant, collection, key: &key };
        let (route, db) = self.router.resolve_record(addr, Access::Read)?;
        let read = RecordStore::new(&db, &route.shard).in_layout(Layout::of(&route)).read(addr).await?;
        if let RecordRead::Live(record) = read
            && index.value_key_of(&record) == Some(entry.value_key.clone())
        {
            return Ok(Holds::Yes);
        }
        Ok(if is_in_flight(entry) { Holds::InFlight } else { Holds::No })
    }

    /// After the record committed at `version`: the new entries go live, the old values' go.
    async fn complete(&self, prepared: Prepared, version: i64) {
        for PendingEntry { index, entry } in prepared.written {
            let result = async {
                let (shard, db, _) = self.entry_shard(entry.vshard, Access::Write)?;
                let copy = prepared.new.as_deref().and_then(|v| index.def.copy(v));
                IndexEntryStore::new(&db, &shard).mark_live(entry.key(), version, copy.as_deref()).await?;
                Ok::<_, IndexError>(())
            }
            .await;
            if let Err(e) = result {
                tracing::warn!(index = %index.def.name(), error = %e, "index entry left pending; look-ups verify it");
            }
        }
        let vshard_count = self.router.vshard_count();
        for (index, old_key) in prepared.removals {
            let vshard = entry_vshard(&index.tenant, &index.collection, index.def.name(), &old_key, vshard_count);
            let result = async {
                let (shard, db, _) = self.entry_shard(vshard, Access::Write)?;
                let key = EntryKey {
                    scope: index.scope(),
                    value_key: old_key.as_str(),
                    record_key: prepared.record_key.as_str(),
                };
                IndexEntryStore::new(&db, &shard).remove(key, version).await?;
                Ok::<_, IndexError>(())
            }
            .await;
            if let Err(e) = result {
                tracing::warn!(index = %index.def.name(), error = %e, "old index entry left; look-ups repair it");
            }
        }
    }

    /// After a record write failed: its pending entries go (look-ups would drop them anyway).
    async fn abandon(&self, written: Vec<PendingEntry>) {
        for PendingEntry { entry, .. } in written {
            if let Ok((shard, db, _)) = self.entry_shard(entry.vshard, Access::Write) {
                let _ = IndexEntryStore::new(&db, &shard).remove(entry.key(), entry.record_version).await;
            }
        }
    }
}
