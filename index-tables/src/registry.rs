//! The index definitions every instance keeps in memory ([`IndexRegistry`]), reloaded from the
//! catalog when the shard map's epoch moves, and one index as this instance knows it
//! ([`LiveIndex`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::RwLock;
use shardgate_shard_router::catalog::{Catalog, IndexDefRow};
use shardgate_shard_router::records::StoredRecord;
use shardgate_shard_router::{CollectionName, RecordKey, TenantId, now_ms};

use crate::definition::IndexDef;
use crate::entry_store::{IndexEntry, IndexScope};
use crate::error::IndexError;
use crate::record_entry::RecordVersion;
use crate::value_key::ValueKey;

/// Whether an index answers look-ups yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexState {
    /// Its backfill runs: writes maintain it, look-ups get [`IndexError::IndexBuilding`].
    Building,
    /// Complete.
    Active,
    /// Its build failed ([`LiveIndex::failure`] says why): look-ups get
    /// [`IndexError::IndexFailed`]; writes still maintain it, so a retry only needs a new
    /// backfill.
    Failed,
}

/// The most record keys a failed build names.
pub const MAX_OFFENDING_KEYS: usize = 10;

/// Why an index's build failed, as the catalog keeps it (JSON) and the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BuildFailure {
    /// What went wrong, for an operator.
    pub reason: String,
    /// Keys of records that broke the build (at most [`MAX_OFFENDING_KEYS`]): values too long to
    /// index, or values of a unique index that more than one record holds (each of them).
    pub offending_keys: Vec<String>,
}

/// One index as this instance knows it.
#[derive(Debug, Clone)]
pub struct LiveIndex {
    /// Tenant.
    pub tenant: TenantId,
    /// Collection.
    pub collection: CollectionName,
    /// The definition.
    pub def: IndexDef,
    /// Building, active or failed.
    pub state: IndexState,
    /// Why its build failed (state [`IndexState::Failed`]).
    pub failure: Option<BuildFailure>,
    /// Its backfill job.
    pub job_id: Option<String>,
    /// Creation time (ms).
    pub created_at_ms: i64,
    /// The incarnation of the tenant it was defined for: it applies to no other one.
    pub incarnation: u64,
}

impl LiveIndex {
    /// The index a catalog row defines; `None` if the row cannot be read.
    pub fn from_row(row: &IndexDefRow) -> Option<Self> {
        let (Ok(def), Ok(tenant), Ok(collection), Ok(incarnation)) = (
            serde_json::from_str::<IndexDef>(&row.definition),
            TenantId::parse(&row.tenant),
            CollectionName::parse(&row.collection),
            u64::try_from(row.incarnation),
        ) else {
            return None;
        };
        let state = match row.state.as_str() {
            "active" => IndexState::Active,
            "failed" => IndexState::Failed,
            _ => IndexState::Building,
        };
        let failure = row.failure.as_deref().and_then(|f| serde_json::from_str::<BuildFailure>(f).ok());
        Some(LiveIndex {
            tenant,
            collection,
            def,
            state,
            failure,
            job_id: row.job_id.clone(),
            created_at_ms: row.created_at_ms,
            incarnation,
        })
    }

    /// The index's scope in the entry store.
    pub fn scope(&self) -> IndexScope<'_> {
        IndexScope { tenant: &self.tenant, collection: &self.collection, index: self.def.name().as_str() }
    }

    /// What its jobs name as their target: `tenant/collection/index`.
    pub fn target(&self) -> String {
        format!("{}/{}/{}", self.tenant, self.collection, self.def.name())
    }

    /// [`IndexError::IndexBuilding`] while the backfill runs, [`IndexError::IndexFailed`] once
    /// it failed.
    pub fn ready_for_lookups(&self) -> Result<(), IndexError> {
        match self.state {
            IndexState::Active => Ok(()),
            IndexState::Building => Err(IndexError::IndexBuilding),
            IndexState::Failed => Err(IndexError::IndexFailed {
                reason: self.failure.as_ref().map_or_else(|| "unknown".to_owned(), |f| f.reason.clone()),
            }),
        }
    }

    /// The value key `record` holds in this index now, if any.
    pub(crate) fn value_key_of(&self, record: &StoredRecord) -> Option<String> {
        self.def.value_key(&record.value).ok().flatten().map(ValueKey::into_string)
    }

    /// The entry a stored record needs in this index (`None`: the record is not indexed), for
    /// backfills and drift audits.
    pub(crate) fn entry_of(
        &self,
        record: &StoredRecord,
        record_vshard: u32,
        vshard_count: u32,
    ) -> Result<Option<(RecordKey, IndexEntry)>, IndexError> {
        let Ok(key) = RecordKey::parse(&record.key) else { return Ok(None) };
        let version = RecordVersion {
            tenant: &self.tenant,
            collection: &self.collection,
            key: &key,
            vshard: record_vshard,
            version: record.version,
            value: &record.value,
        };
        let entry = self.def.entry_for(&version, vshard_count, now_ms())?;
        Ok(entry.map(|entry| (key, entry)))
    }
}

/// The indexes of each tenant's collections (nested, so a record write looks its collection up
/// without allocating).
type ByCollection = HashMap<String, HashMap<String, Vec<Arc<LiveIndex>>>>;

/// The index definitions of every tenant collection, reloaded when the map epoch moves.
#[derive(Debug, Default)]
pub struct IndexRegistry {
    by_collection: RwLock<ByCollection>,
    loaded_epoch: AtomicU64,
}

impl IndexRegistry {
    /// Reloads the definitions from `catalog` if the map epoch moved since the last load.
    pub async fn follow(&self, catalog: &Catalog, epoch: u64) -> Result<(), IndexError> {
        if self.loaded_epoch.load(Ordering::Acquire) == epoch && epoch != 0 {
            return Ok(());
        }
        let rows = catalog.index_defs().await?;
        let mut by_collection = ByCollection::new();
        for row in rows {
            let Some(index) = LiveIndex::from_row(&row) else {
                tracing::error!(tenant = row.tenant, index = row.name, "unreadable index definition in the catalog");
                continue;
            };
            by_collection.entry(row.tenant).or_default().entry(row.collection).or_default().push(Arc::new(index));
        }
        *self.by_collection.write() = by_collection;
        self.loaded_epoch.store(epoch, Ordering::Release);
        Ok(())
    }

    /// The indexes of a collection of `tenant` in incarnation `incarnation`. Definitions of an
    /// earlier incarnation, which this instance may hold until its next reload, are left out.
    pub fn for_collection(&self, tenant: &str, incarnation: u64, collection: &str) -> Vec<Arc<LiveIndex>> {
        let by_collection = self.by_collection.read();
        let Some(indexes) = by_collection.get(tenant).and_then(|c| c.get(collection)) else { return Vec::new() };
        indexes.iter().filter(|i| i.incarnation == incarnation).cloned().collect()
    }
}
