//! Building the entry a record version needs in an index, ready for the
//! [`IndexEntryStore`](crate::entry_store::IndexEntryStore).

use serde_json::value::RawValue;
use shardgate_shard_router::{CollectionName, RecordKey, TenantId};

use crate::definition::IndexDef;
use crate::entry_store::IndexEntry;
use crate::error::IndexError;
use crate::placement::entry_vshard;
use crate::value_key::ValueKey;

/// A record at one version, as index maintenance sees it.
#[derive(Debug, Clone, Copy)]
pub struct RecordVersion<'a> {
    /// Tenant.
    pub tenant: &'a TenantId,
    /// Collection.
    pub collection: &'a CollectionName,
    /// The record's key.
    pub key: &'a RecordKey,
    /// The record's vshard (where a reader of the entry finds the record).
    pub vshard: u32,
    /// The version being written (expected before the commit, committed after).
    pub version: i64,
    /// The record's JSON text.
    pub value: &'a RawValue,
}

impl IndexDef {
    /// The entry `record` has in this index under `value_key` (one of its values, from
    /// [`IndexDef::value_key`] or [`IndexDef::change`]), placed on its vshard, claimed at
    /// `now_ms`, carrying the layout's copy.
    pub fn entry(
        &self,
        record: &RecordVersion<'_>,
        value_key: &ValueKey,
        vshard_count: u32,
        now_ms: i64,
    ) -> IndexEntry {
        IndexEntry {
            tenant: record.tenant.clone(),
            collection: record.collection.clone(),
            index: self.name().as_str().to_owned(),
            value_key: value_key.as_str().to_owned(),
            record_key: record.key.clone(),
            vshard: entry_vshard(record.tenant, record.collection, self.name(), value_key, vshard_count),
            record_vshard: record.vshard,
            record_version: record.version,
            claimed_at_ms: now_ms,
            copy: self.copy(record.value),
        }
    }

    /// The entry `record` needs in this index (backfills, audits): `Ok(None)` if the record is
    /// not indexed.
    pub fn entry_for(
        &self,
        record: &RecordVersion<'_>,
        vshard_count: u32,
        now_ms: i64,
    ) -> Result<Option<IndexEntry>, IndexError> {
        Ok(self.value_key(record.value)?.map(|key| self.entry(record, &key, vshard_count, now_ms)))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::definition::Layout;
    use crate::names::{FieldPath, IndexName};

    #[test]
    fn entries_carry_placement_reference_and_copy() {
        let index = IndexDef::new(
            IndexName::parse("by_email").unwrap(),
            vec![FieldPath::parse("/email").unwrap()],
            true,
            Layout::Covering { include: vec![FieldPath::parse("/name").unwrap()] },
        )
        .unwrap();
        let (tenant, collection) = (TenantId::parse("acme").unwrap(), CollectionName::parse("customers").unwrap());
        let key = RecordKey::parse("c-1").unwrap();
        let value = serde_json::value::to_raw_value(&json!({"email": "ann@example.com", "name": "Ann"})).unwrap();
        let record =
            RecordVersion { tenant: &tenant, collection: &collection, key: &key, vshard: 5, version: 3, value: &value };
        let entry = index.entry_for(&record, 1024, 1_000).unwrap().unwrap();
        assert_eq!(entry.value_key, "sann@example.com\u{1}");
        assert_eq!(entry.vshard, 790, "the golden placement");
        assert_eq!((entry.record_vshard, entry.record_version, entry.claimed_at_ms), (5, 3, 1_000));
        assert_eq!(entry.copy.as_deref(), Some(r#"{"/name":"Ann"}"#));
        let unindexed = serde_json::value::to_raw_value(&json!({"name": "Bob"})).unwrap();
        assert!(matches!(index.entry_for(&RecordVersion { value: &unindexed, ..record }, 1024, 1_000), Ok(None)));
    }
}
