//! The index drift audit (job kind [`DRIFT_AUDIT_JOB`]): every record of the collection must
//! have its entry (missing ones are written) and every entry must name a record holding its
//! value (dangling ones are removed, by the rule of [`crate::dangling::standing`], which
//! `shardgate check` reports by). The counts are the job's progress and the drift metrics.

use std::sync::Arc;

use shardgate_shard_router::ShardStore;
use shardgate_shard_router::catalog::JobRow;
use shardgate_shard_router::{Access, ShardState};

use crate::backfill::JOB_PAGE;
use crate::entry_store::{EntryAfter, IndexEntryStore};
use crate::error::IndexError;
use crate::registry::LiveIndex;
use crate::service::IndexTables;

/// The job kind of a drift audit.
pub const DRIFT_AUDIT_JOB: &str = "index.audit";

impl IndexTables {
    /// Starts (or resumes) the drift audit `job` in the background. The task ends early if the
    /// service is dropped.
    pub(crate) fn spawn_drift_audit(self: &Arc<Self>, job: JobRow) {
        let tables = Arc::downgrade(self);
        tokio::spawn(async move {
            let Some(tables) = tables.upgrade() else { return };
            if let Err(e) = tables.drift_audit(&job).await {
                tables.fail_job(&job, "drift audit", e).await;
            }
        });
    }

    async fn drift_audit(&self, job: &JobRow) -> Result<(), IndexError> {
        let index = self.job_index(job)?;
        let (records, missing) = self.write_missing_entries(&index).await?;
        let (entries, dangling) = self.remove_dangling_entries(&index).await?;
        self.metrics.drift_found(missing, dangling);
        let progress =
            serde_json::json!({"records": records, "entries": entries, "missing": missing, "dangling": dangling})
                .to_string();
        self.router.catalog().update_job(&job.id, "done", &progress, None).await?;
        Ok(())
    }

    /// Every record has its entry: writes the missing ones. Returns the records read and the
    /// entries found missing.
    async fn write_missing_entries(&self, index: &LiveIndex) -> Result<(u64, u64), IndexError> {
        let vshard_count = self.router.vshard_count();
        let (mut records, mut missing) = (0u64, 0u64);
        let mut after: Option<String> = None;
        loop {
            let page = self.records_page(index, &after).await?;
            for (vshard, record) in &page {
                records += 1;
                let Ok(Some((key, entry))) = index.entry_of(record, *vshard, vshard_count) else { continue };
                let (shard, db, epoch) = self.entry_shard(entry.vshard, Access::Write)?;
                if IndexEntryStore::new(&db, &shard).routed_at(epoch).get(entry.key()).await?.is_none() {
                    missing += 1;
                    // A unique value another record holds stays theirs.
                    self.write_live_entry(index, &key, &entry, record.version).await?;
                }
            }
            after = page.last().map(|(_, r)| r.key.clone()).or(after);
            if page.len() < JOB_PAGE as usize {
                return Ok((records, missing));
            }
        }
    }

    /// Every entry names a record holding its value: removes the dangling ones (as look-ups
    /// do). Returns the entries read and the entries removed.
    async fn remove_dangling_entries(&self, index: &LiveIndex) -> Result<(u64, u64), IndexError> {
        let (mut entries, mut dangling) = (0u64, 0u64);
        for (shard, state, db) in self.router.shard_dbs() {
            if state == ShardState::Offline {
                continue;
            }
            let store = IndexEntryStore::new(&db, &shard);
            let mut cursor: Option<(String, String)> = None;
            loop {
                let after = cursor.as_ref().map(|(v, r)| EntryAfter { value_key: v, record_key: r });
                let page = store.scan_entries(index.scope(), after, JOB_PAGE).await?;
                entries += page.len() as u64;
                cursor = page.last().map(|e| (e.value_key.clone(), e.record_key.clone()));
                let full = page.len() == JOB_PAGE as usize;
                dangling += self.verify(index, page).await?.1;
                if !full {
                    break;
                }
            }
        }
        Ok((entries, dangling))
    }
}
