//! [`IndexTables`]: the Index Table pattern as one service over a [`ShardRouter`]. The caller
//! holds one per instance; its work is spread by room: `maintenance.rs` (record writes),
//! `lookup.rs`, `lifecycle.rs` (definitions and jobs), `backfill.rs` and `drift_audit.rs`.

use std::sync::Arc;

use serde_json::value::RawValue;

use prometheus_client::registry::Registry;
use shardgate_shard_router::ShardStore;
use shardgate_shard_router::catalog::JobRow;
use shardgate_shard_router::{Access, Database, ShardId, ShardRouter, ShardState, TenantId};

use crate::entry_store::IndexEntryStore;
use crate::error::IndexError;
use crate::metrics::IndexMetrics;
use crate::registry::{IndexRegistry, LiveIndex};

/// The text a failed job records as its error, chosen by the caller (who knows what may be shown
/// to an operator: the API uses the detail of the problem the error becomes).
pub type JobFailureText = fn(IndexError) -> String;

/// Index definitions, entries, look-ups and jobs of every tenant.
#[derive(Debug)]
pub struct IndexTables {
    pub(crate) router: Arc<ShardRouter>,
    pub(crate) registry: IndexRegistry,
    pub(crate) metrics: IndexMetrics,
    job_failure_text: JobFailureText,
}

impl IndexTables {
    /// The service over `router`, with its metrics registered into `metrics`. Load the
    /// definitions with [`IndexTables::follow`] before serving.
    pub fn new(router: Arc<ShardRouter>, metrics: &mut Registry, job_failure_text: JobFailureText) -> Self {
        Self { router, registry: IndexRegistry::default(), metrics: IndexMetrics::register(metrics), job_failure_text }
    }

    /// Reloads the definitions from the catalog if the map epoch moved since the last load.
    pub async fn follow(&self, epoch: u64) -> Result<(), IndexError> {
        self.registry.follow(self.router.catalog(), epoch).await
    }

    /// The indexes of `tenant`'s `collection`: those defined for the tenant's incarnation in this
    /// instance's map (none if the map does not know the tenant). A deleted tenant's definitions
    /// never apply to a new tenant of the same id, even before this instance reloads them.
    pub(crate) fn collection_indexes(&self, tenant: &str, collection: &str) -> Vec<Arc<LiveIndex>> {
        let Some(incarnation) = self.router.known_incarnation(tenant) else { return Vec::new() };
        self.registry.for_collection(tenant, incarnation.id, collection)
    }

    /// How many indexes `tenant`'s `collection` has: the most entries one of its record writes
    /// can add.
    pub fn index_count(&self, tenant: &str, collection: &str) -> u64 {
        self.collection_indexes(tenant, collection).len() as u64
    }

    /// How many entries a write turning the record's `old` value into `new` adds to `tenant`'s
    /// index entries (an index where the record had no entry and will have one).
    pub fn entries_added(
        &self,
        tenant: &str,
        collection: &str,
        old: Option<&RawValue>,
        new: &RawValue,
    ) -> Result<u64, IndexError> {
        let mut added = 0;
        for index in self.collection_indexes(tenant, collection) {
            added += u64::from(index.def.adds_entry(old, new)?);
        }
        Ok(added)
    }

    /// One index, if this instance knows it.
    pub fn find(&self, tenant: &str, collection: &str, name: &str) -> Option<Arc<LiveIndex>> {
        self.collection_indexes(tenant, collection).into_iter().find(|i| i.def.name().as_str() == name)
    }

    /// One index; [`IndexError::IndexNotFound`] if this instance does not know it.
    pub fn index(&self, tenant: &str, collection: &str, name: &str) -> Result<Arc<LiveIndex>, IndexError> {
        self.find(tenant, collection, name).ok_or(IndexError::IndexNotFound)
    }

    /// Removes every index entry of `tenant`, which are spread over every shard (offline shards
    /// are skipped). Returns how many were removed.
    pub async fn purge_tenant(&self, tenant: &TenantId) -> Result<u64, IndexError> {
        let mut purged = 0;
        for (shard, state, db) in self.router.shard_dbs() {
            if state != ShardState::Offline {
                purged += IndexEntryStore::new(&db, &shard).purge_tenant(tenant).await?;
            }
        }
        Ok(purged)
    }

    /// How many live index entries `tenant` has on every shard, and the shards that could not
    /// be counted (offline, or failing: their part is missing).
    pub async fn count_tenant_entries(&self, tenant: &TenantId) -> (u64, Vec<ShardId>) {
        let shards = self.router.shard_dbs();
        let counted = futures::future::join_all(shards.iter().map(|(shard, state, db)| async move {
            if *state == ShardState::Offline {
                return None;
            }
            IndexEntryStore::new(db, shard).count_tenant(tenant).await.ok()
        }))
        .await;
        let mut total = 0;
        let mut missing = Vec::new();
        for ((shard, _, _), count) in shards.iter().zip(counted) {
            match count {
                Some(count) => total += count,
                None => missing.push(shard.clone()),
            }
        }
        (total, missing)
    }

    /// The shard owning `vshard` (where the entries placed by it live), its pool and the map
    /// epoch, if the shard's state allows `access`.
    pub(crate) fn entry_shard(&self, vshard: u32, access: Access) -> Result<(ShardId, Database, u64), IndexError> {
        Ok(self.router.resolve_vshard(vshard, access)?)
    }

    /// The index a job works on (its target is `tenant/collection/index`).
    pub(crate) fn job_index(&self, job: &JobRow) -> Result<Arc<LiveIndex>, IndexError> {
        let mut parts = job.target.splitn(3, '/');
        let (Some(tenant), Some(collection), Some(name)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(IndexError::InvalidJobTarget { job: job.id.clone(), target: job.target.clone() });
        };
        self.find(tenant, collection, name).ok_or_else(|| IndexError::JobIndexGone { job: job.id.clone() })
    }

    /// Records that `job` (a `what`) failed with `error`.
    pub(crate) async fn fail_job(&self, job: &JobRow, what: &'static str, error: IndexError) {
        tracing::error!(job = job.id, error = %error, "index {what} failed");
        let text = self.failure_text(error);
        self.job_failed(job, &text).await;
    }

    /// The text an operator sees for a job's `error` (the caller's [`JobFailureText`]).
    pub(crate) fn failure_text(&self, error: IndexError) -> String {
        (self.job_failure_text)(error)
    }

    /// Records that `job` failed, saying why in `text`.
    pub(crate) async fn job_failed(&self, job: &JobRow, text: &str) {
        let _ = self.router.catalog().update_job(&job.id, "failed", &job.progress, Some(text)).await;
    }
}
