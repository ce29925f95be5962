//! When an index entry is dangling: its record, read where the record lives, does not exist, is
//! deleted, or no longer holds the entry's value, and the entry is not a fresh pending claim of
//! a write in flight. One rule ([`standing`]) for every reader: look-ups and the drift audit
//! remove dangling entries ([`crate::lookup`]); `shardgate check` reports them without
//! touching anything ([`find_dangling`]).

use std::collections::HashMap;

use shardgate_shard_router::ShardStore;
use shardgate_shard_router::db::Database;
use shardgate_shard_router::map::MapSnapshot;
use shardgate_shard_router::records::{Layout, RecordAddress, RecordRead, RecordStore};
use shardgate_shard_router::{RecordKey, ShardId};

use crate::backfill::JOB_PAGE;
use crate::entry_store::{EntryAfter, IndexEntryStore, StoredEntry};
use crate::error::IndexError;
use crate::maintenance::is_in_flight;
use crate::registry::LiveIndex;

/// What an entry is to its record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// The record holds the entry's value.
    Holds,
    /// It does not, but the entry is a fresh pending claim: its write may still be in flight.
    InFlight,
    /// It does not: the entry is dangling.
    Dangling,
}

/// What `entry` of `index` is to its record as `read` where the record lives.
pub fn standing(index: &LiveIndex, entry: &StoredEntry, read: &RecordRead) -> Standing {
    match read {
        RecordRead::Live(record) if index.value_key_of(record).as_deref() == Some(entry.value_key.as_str()) => {
            Standing::Holds
        }
        _ if is_in_flight(entry) => Standing::InFlight,
        _ => Standing::Dangling,
    }
}

/// Most dangling entries' record keys kept as examples by [`find_dangling`].
pub const DANGLING_EXAMPLES: usize = 5;

/// What [`find_dangling`] found on one shard.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Dangling {
    /// Entries of the index on the shard.
    pub entries: u64,
    /// Dangling among them.
    pub dangling: u64,
    /// Their record keys (the first [`DANGLING_EXAMPLES`]).
    pub examples: Vec<String>,
    /// Entries whose record could not be read (its shard is not in `shards`).
    pub unverified: u64,
}

/// The dangling entries of `index` on the shard `on`, found without repairing anything: each
/// entry's record is read where `map` places it, from `shards`. Pages through the entries
/// ([`JOB_PAGE`] at a time), so memory does not grow with the index.
pub async fn find_dangling(
    index: &LiveIndex,
    map: &MapSnapshot,
    on: (&ShardId, &Database),
    shards: &HashMap<ShardId, Database>,
) -> Result<Dangling, IndexError> {
    let store = IndexEntryStore::new(on.1, on.0);
    let mut found = Dangling::default();
    let mut cursor: Option<(String, String)> = None;
    loop {
        let after = cursor.as_ref().map(|(v, r)| EntryAfter { value_key: v, record_key: r });
        let page = store.scan_entries(index.scope(), after, JOB_PAGE).await?;
        for entry in &page {
            found.entries += 1;
            let read = match RecordKey::parse(&entry.record_key) {
                Ok(key) => {
                    let Ok(route) = map.route_record(index.tenant.as_str(), index.collection.as_str(), key.as_str())
                    else {
                        found.unverified += 1;
                        continue;
                    };
                    let Some(db) = shards.get(&route.shard) else {
                        found.unverified += 1;
                        continue;
                    };
                    let addr = RecordAddress { tenant: &index.tenant, collection: &index.collection, key: &key };
                    RecordStore::new(db, &route.shard).in_layout(Layout::of(&route)).read(addr).await?
                }
                Err(_) => RecordRead::Absent,
            };
            if standing(index, entry, &read) == Standing::Dangling {
                found.dangling += 1;
                if found.examples.len() < DANGLING_EXAMPLES {
                    found.examples.push(entry.record_key.clone());
                }
            }
        }
        cursor = page.last().map(|e| (e.value_key.clone(), e.record_key.clone()));
        if page.len() < JOB_PAGE as usize {
            return Ok(found);
        }
    }
}
