//! The backfill job (kind [`BACKFILL_JOB`]): writes the entry of every record a new index finds
//! in its collection, page by page, with the resume point in the job's progress, then marks the
//! index active. Writes made meanwhile maintain the index themselves.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use shardgate_shard_router::ShardStore;
use shardgate_shard_router::catalog::{Audit, JobRow};
use shardgate_shard_router::records::{ListBounds, RecordAddress, RecordStore, StoredRecord};
use shardgate_shard_router::{Access, RecordKey, Route};

use crate::entry_store::{IndexEntry, IndexEntryStore};
use crate::error::IndexError;
use crate::registry::LiveIndex;
use crate::service::IndexTables;

/// The job kind of a backfill.
pub const BACKFILL_JOB: &str = "index.backfill";

/// How many records (or entries) a job reads per page.
pub(crate) const JOB_PAGE: u32 = 500;

/// How long a backfill waits before its scan: every instance learns a new definition within a
/// catalog poll (500 ms), so writes after the scan passed a key maintain the index themselves.
const LET_INSTANCES_LEARN: Duration = Duration::from_millis(1_200);

impl IndexTables {
    /// Starts (or resumes) the backfill `job` of an index in the background. The task ends
    /// early if the service is dropped.
    pub(crate) fn spawn_backfill(self: &Arc<Self>, job: JobRow) {
        let tables = Arc::downgrade(self);
        tokio::spawn(async move {
            tokio::time::sleep(LET_INSTANCES_LEARN).await;
            let Some(tables) = tables.upgrade() else { return };
            if let Err(e) = tables.backfill(&job).await {
                tables.fail_job(&job, "backfill", e).await;
            }
        });
    }

    async fn backfill(&self, job: &JobRow) -> Result<(), IndexError> {
        self.follow(self.router.epoch()).await?;
        let index = self.job_index(job)?;
        let (tenant, collection, name) = (index.tenant.as_str(), index.collection.as_str(), index.def.name().as_str());
        let progress: Value = serde_json::from_str(&job.progress).unwrap_or(Value::Null);
        let mut after = progress["after"].as_str().map(str::to_owned);
        let mut indexed = progress["indexed"].as_u64().unwrap_or(0);
        let vshard_count = self.router.vshard_count();
        loop {
            let (route, page) = self.records_page(&index, &after).await?;
            for record in &page {
                let Some((key, entry)) = index.entry_of(record, route.vshard, vshard_count)? else { continue };
                if !self.write_live_entry(&index, &key, &entry, record.version).await? {
                    return Err(IndexError::DuplicateValue { record_key: record.key.clone() });
                }
                indexed += 1;
            }
            after = page.last().map(|r| r.key.clone()).or(after);
            let progress = serde_json::json!({"after": after, "indexed": indexed}).to_string();
            if !self.router.catalog().update_job(&job.id, "running", &progress, None).await? {
                return Ok(()); // cancelled (the index was deleted)
            }
            if page.len() < JOB_PAGE as usize {
                let audit = Audit {
                    actor: "system".into(),
                    tenant: Some(index.tenant.to_string()),
                    action: "index.active",
                    target: format!("index:{}", job.target),
                    request_id: job.id.clone(),
                };
                self.router.catalog().set_index_state(tenant, collection, name, "active", &audit).await?;
                self.router.catalog().update_job(&job.id, "done", &progress, None).await?;
                self.follow(self.router.refresh().await?.epoch).await?;
                return Ok(());
            }
        }
    }

    /// The page of `index`'s collection after record key `after`, with the route it was read on.
    pub(crate) async fn records_page(
        &self,
        index: &LiveIndex,
        after: &Option<String>,
    ) -> Result<(Route, Vec<StoredRecord>), IndexError> {
        let (route, db) = self.router.resolve(&index.tenant, Access::Read)?;
        let bounds = ListBounds { after: after.clone(), ..ListBounds::default() };
        let page =
            RecordStore::new(&db, &route.shard).list(&index.tenant, &index.collection, &bounds, JOB_PAGE).await?;
        Ok((route, page))
    }

    /// Writes `entry` live for record `key`, which holds its value at `version`. In a unique
    /// index the value is claimed first: false (nothing written) if the claim fails.
    pub(crate) async fn write_live_entry(
        &self,
        index: &LiveIndex,
        key: &RecordKey,
        entry: &IndexEntry,
        version: i64,
    ) -> Result<bool, IndexError> {
        let (shard, db, epoch) = self.entry_shard(entry.vshard, Access::Write)?;
        let store = IndexEntryStore::new(&db, &shard).routed_at(epoch);
        if index.def.is_unique() {
            let addr = RecordAddress { tenant: &index.tenant, collection: &index.collection, key };
            if self.claim(index, &store, entry, addr).await.is_err() {
                return Ok(false);
            }
            store.mark_live(entry.key(), version, entry.copy.as_deref()).await?;
        } else {
            store.put_live(entry).await?;
        }
        Ok(true)
    }
}
