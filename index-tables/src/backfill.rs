//! The backfill job (kind [`BACKFILL_JOB`]): writes the entry of every record a new index finds
//! in its collection, page by page, with the resume point in the job's progress, then marks the
//! index active. Writes made meanwhile maintain the index themselves.
//!
//! A record the index cannot take (a value too long to index, or a value of a unique index
//! another record holds) does not stop the scan: the backfill goes on to the end, counting them
//! and keeping a sample of their keys ([`MAX_OFFENDING_KEYS`]), then marks the index `failed`
//! with the reason and the sample (in the definition and in the job). Any other error fails the
//! build too, with the error as the reason. A failed index answers no look-up; it can be
//! deleted, or built again by defining it again once the records are fixed.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use shardgate_shard_router::ShardStore;
use shardgate_shard_router::catalog::{Audit, JobRow};
use shardgate_shard_router::records::{ListBounds, RecordAddress, StoredRecord};
use shardgate_shard_router::storage::replicas::Consistency;
use shardgate_shard_router::{Access, Error as StoreError, RecordKey};

use crate::entry_store::{IndexEntry, IndexEntryStore};
use crate::error::IndexError;
use crate::registry::{BuildFailure, LiveIndex, MAX_OFFENDING_KEYS};
use crate::service::IndexTables;

/// The job kind of a backfill.
pub const BACKFILL_JOB: &str = "index.backfill";

/// How many records (or entries) a job reads per page.
pub(crate) const JOB_PAGE: u32 = 500;

/// How long a backfill waits before its scan: every instance learns a new definition within a
/// catalog poll (500 ms), so writes after the scan passed a key maintain the index themselves.
const LET_INSTANCES_LEARN: Duration = Duration::from_millis(1_200);

/// A backfill's progress, kept in its job (so a resumed backfill goes on where it stopped).
#[derive(Debug, Default, Serialize, Deserialize)]
struct Progress {
    /// The last record key done.
    after: Option<String>,
    /// Entries written.
    indexed: u64,
    /// Records whose value is too long to index.
    #[serde(default, skip_serializing_if = "is_zero")]
    too_long: u64,
    /// Records whose value of a unique index another record holds.
    #[serde(default, skip_serializing_if = "is_zero")]
    duplicates: u64,
    /// Keys of such records (at most [`MAX_OFFENDING_KEYS`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    offending_keys: Vec<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Progress {
    fn offend(&mut self, keys: impl IntoIterator<Item = String>) {
        for key in keys {
            if self.offending_keys.len() < MAX_OFFENDING_KEYS && !self.offending_keys.contains(&key) {
                self.offending_keys.push(key);
            }
        }
    }

    /// Why the build failed, if a record broke it.
    fn failure(&self) -> Option<BuildFailure> {
        let mut reasons = Vec::new();
        if self.too_long > 0 {
            reasons.push(format!(
                "{} record(s) hold a value too long to index (at most {} bytes encoded)",
                self.too_long,
                crate::value_key::MAX_VALUE_KEY_BYTES
            ));
        }
        if self.duplicates > 0 {
            reasons.push(format!(
                "{} record(s) hold a value of this unique index that another record holds",
                self.duplicates
            ));
        }
        (!reasons.is_empty())
            .then(|| BuildFailure { reason: reasons.join("; "), offending_keys: self.offending_keys.clone() })
    }

    fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{}".to_owned())
    }
}

impl IndexTables {
    /// Starts (or resumes) the backfill `job` of an index in the background. The task ends
    /// early if the service is dropped.
    pub(crate) fn spawn_backfill(self: &Arc<Self>, job: JobRow) {
        let tables = Arc::downgrade(self);
        tokio::spawn(async move {
            tokio::time::sleep(LET_INSTANCES_LEARN).await;
            let Some(tables) = tables.upgrade() else { return };
            if let Err(e) = tables.backfill(&job).await {
                tables.fail_backfill(&job, e).await;
            }
        });
    }

    async fn backfill(&self, job: &JobRow) -> Result<(), IndexError> {
        self.follow(self.router.epoch()).await?;
        let index = self.job_index(job)?;
        let mut progress: Progress = serde_json::from_str(&job.progress).unwrap_or_default();
        let vshard_count = self.router.vshard_count();
        loop {
            let page = self.records_page(&index, &progress.after).await?;
            for (vshard, record) in &page {
                let (key, entry) = match index.entry_of(record, *vshard, vshard_count) {
                    Ok(Some(found)) => found,
                    Ok(None) => continue,
                    Err(IndexError::ValueTooLong { .. }) => {
                        progress.too_long += 1;
                        progress.offend([record.key.clone()]);
                        continue;
                    }
                    Err(e) => return Err(e),
                };
                if self.write_live_entry(&index, &key, &entry, record.version).await? {
                    progress.indexed += 1;
                } else {
                    progress.duplicates += 1;
                    if progress.offending_keys.len() < MAX_OFFENDING_KEYS {
                        let holders = self.holders_of(&entry).await;
                        progress.offend(std::iter::once(record.key.clone()).chain(holders));
                    }
                }
            }
            progress.after = page.last().map(|(_, r)| r.key.clone()).or(progress.after);
            if !self.router.catalog().update_job(&job.id, "running", &progress.to_json(), None).await? {
                return Ok(()); // cancelled (the index was deleted)
            }
            if page.len() < JOB_PAGE as usize {
                return self.end_build(job, &index, &progress).await;
            }
        }
    }

    /// The scan is over: the index goes active, or failed if a record broke it; so does its job.
    async fn end_build(&self, job: &JobRow, index: &LiveIndex, progress: &Progress) -> Result<(), IndexError> {
        let failure = progress.failure();
        let failure_json = failure.as_ref().map(serde_json::to_string).transpose().map_err(IndexError::Encoding)?;
        self.end_index_build(job, index, failure_json.as_deref()).await?;
        let (state, error) = match &failure {
            None => ("done", None),
            Some(failure) => ("failed", Some(failure.reason.as_str())),
        };
        self.router.catalog().update_job(&job.id, state, &progress.to_json(), error).await?;
        self.follow(self.router.refresh().await?.epoch).await?;
        Ok(())
    }

    /// Marks `index` active (`failure` `None`) or failed, if its build is still `job`'s.
    async fn end_index_build(&self, job: &JobRow, index: &LiveIndex, failure: Option<&str>) -> Result<(), IndexError> {
        let audit = Audit {
            actor: "system".into(),
            tenant: Some(index.tenant.to_string()),
            action: if failure.is_none() { "index.active" } else { "index.failed" },
            target: format!("index:{}", job.target),
            request_id: job.id.clone(),
            client_request_id: None,
            client_address: None,
        };
        let (tenant, collection, name) = (index.tenant.as_str(), index.collection.as_str(), index.def.name().as_str());
        self.router.catalog().end_index_build(tenant, collection, name, &job.id, failure, &audit).await?;
        Ok(())
    }

    /// A backfill stopped by `error`: its index is marked failed with the error as the reason,
    /// then the job. If even that fails (the catalog is down), the job stays `running` and is
    /// resumed at the next start.
    async fn fail_backfill(&self, job: &JobRow, error: IndexError) {
        tracing::error!(job = job.id, error = %error, "index backfill failed");
        let reason = self.failure_text(error);
        if let Ok(index) = self.job_index(job) {
            let failure = BuildFailure { reason: reason.clone(), offending_keys: Vec::new() };
            let marked = match serde_json::to_string(&failure) {
                Ok(json) => self.end_index_build(job, &index, Some(&json)).await,
                Err(e) => Err(IndexError::Encoding(e)),
            };
            if let Err(e) = marked {
                tracing::error!(job = job.id, error = %e, "could not mark the index failed; the backfill resumes at the next start");
                return;
            }
        }
        self.job_failed(job, &reason).await;
        if let Ok(heads) = self.router.refresh().await {
            let _ = self.follow(heads.epoch).await;
        }
    }

    /// Keys of the records whose entries hold `entry`'s value (other than `entry`'s record): who
    /// a failed unique claim collided with. Empty if they cannot be read.
    async fn holders_of(&self, entry: &IndexEntry) -> Vec<String> {
        let found = async {
            let (shard, db, _) = self.entry_shard(entry.vshard, Access::Read)?;
            IndexEntryStore::new(&db, &shard).lookup_eq(entry.scope(), &entry.value_key, None, 3).await
        }
        .await;
        found
            .map(|entries| {
                entries.into_iter().map(|e| e.record_key).filter(|k| k != entry.record_key.as_str()).collect()
            })
            .unwrap_or_default()
    }

    /// The page of `index`'s collection after record key `after`, each record with the vshard
    /// its route names (the tenant's, or for a distributed collection the record's own). A
    /// distributed collection is read on all its shards; a shard that does not answer fails
    /// the page (a backfill or audit must see every record).
    pub(crate) async fn records_page(
        &self,
        index: &LiveIndex,
        after: &Option<String>,
    ) -> Result<Vec<(u32, StoredRecord)>, IndexError> {
        let bounds = ListBounds { after: after.clone(), ..ListBounds::default() };
        let mut listing =
            self.router.list_records(&index.tenant, &index.collection, &bounds, JOB_PAGE, &Consistency::Strong).await?;
        if let Some(failure) = listing.failures.pop() {
            return Err(failure.error.into());
        }
        listing
            .records
            .into_iter()
            .map(|record| {
                let key = RecordKey::parse(&record.key).map_err(|e| StoreError::Corrupt(e.to_string()))?;
                let addr = RecordAddress { tenant: &index.tenant, collection: &index.collection, key: &key };
                Ok((self.router.route_record(addr)?.vshard, record))
            })
            .collect()
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
