//! The life of an index: defining it (its backfill job starts), deleting it (its entries go in
//! the background), starting a drift audit, and resuming the jobs a restart interrupted.

use std::sync::Arc;

use shardgate_shard_router::ShardStore;
use shardgate_shard_router::catalog::{Audit, IndexDefInsert, IndexDefRow, JobRow};
use shardgate_shard_router::{CollectionName, Error as StoreError, Incarnation, TenantId, now_ms};

use crate::backfill::BACKFILL_JOB;
use crate::definition::IndexDef;
use crate::drift_audit::DRIFT_AUDIT_JOB;
use crate::entry_store::IndexEntryStore;
use crate::error::IndexError;
use crate::registry::{IndexState, LiveIndex};
use crate::service::IndexTables;

/// How many entries of a deleted index one statement deletes.
const DELETE_BATCH: u32 = 1000;

/// What defining an index did.
#[derive(Debug)]
pub enum Defined {
    /// An index with this very definition exists already: nothing changed.
    Existing(Arc<LiveIndex>),
    /// The index is new; it is building and its backfill job runs.
    Created(LiveIndex),
    /// The index existed with this definition but its build had failed: it is building again,
    /// with a new backfill job.
    Retried(Arc<LiveIndex>),
}

fn new_job_id() -> String {
    format!("job-{}", uuid::Uuid::new_v4().simple())
}

/// A new backfill job `id` of `index`, starting at the collection's first record.
fn backfill_job(id: String, index: &LiveIndex, now: i64) -> JobRow {
    JobRow {
        id,
        kind: BACKFILL_JOB.into(),
        tenant: Some(index.tenant.to_string()),
        target: index.target(),
        state: "running".into(),
        progress: r#"{"after":null,"indexed":0}"#.into(),
        error: None,
        created_at_ms: now,
        updated_at_ms: now,
        handovers: 0,
    }
}

impl IndexTables {
    /// Defines `def` on `collection` of `tenant` (in incarnation `incarnation`: the one the
    /// caller was authorized for) and starts its backfill. The same definition again is
    /// [`Defined::Existing`], or, if its build failed, [`Defined::Retried`] (a new backfill
    /// starts: the way to build a failed index again once its records are fixed); another one
    /// under the name is [`IndexError::IndexExists`]; a tenant gone or created again meanwhile is
    /// the store's `TenantNotFound`. A new name on a collection that has `cap` definitions
    /// already is [`IndexError::IndexLimitReached`] (the catalog counts them in the transaction
    /// that would store it, so racing definitions cannot pass the cap); an existing name is
    /// answered as above at the cap too. The caller announces the catalog change to other
    /// instances (unless nothing changed).
    pub async fn define(
        self: &Arc<Self>,
        tenant: &TenantId,
        incarnation: Incarnation,
        collection: &CollectionName,
        def: IndexDef,
        cap: u32,
        audit: &Audit,
    ) -> Result<Defined, IndexError> {
        let existing = self.registry.for_collection(tenant.as_str(), incarnation.id, collection.as_str());
        if let Some(existing) = existing.into_iter().find(|i| i.def.name() == def.name()) {
            if existing.def != def {
                return Err(IndexError::IndexExists);
            }
            if existing.state == IndexState::Failed {
                return self.retry(existing, audit).await;
            }
            return Ok(Defined::Existing(existing));
        }
        let stored_incarnation = i64::try_from(incarnation.id).map_err(|_| StoreError::TenantNotFound)?;
        let now = now_ms();
        let job_id = new_job_id();
        let row = IndexDefRow {
            tenant: tenant.to_string(),
            collection: collection.to_string(),
            name: def.name().as_str().to_owned(),
            definition: serde_json::to_string(&def).map_err(IndexError::Encoding)?,
            state: "building".into(),
            job_id: Some(job_id.clone()),
            created_at_ms: now,
            updated_at_ms: now,
            failure: None,
            incarnation: stored_incarnation,
        };
        let index = LiveIndex {
            tenant: tenant.clone(),
            collection: collection.clone(),
            def,
            state: IndexState::Building,
            failure: None,
            job_id: Some(job_id.clone()),
            created_at_ms: now,
            incarnation: incarnation.id,
        };
        let job = backfill_job(job_id, &index, now);
        match self.router.catalog().create_index_def(&row, &job, cap, audit).await? {
            IndexDefInsert::Inserted => {}
            IndexDefInsert::NameTaken => return Err(IndexError::IndexExists),
            IndexDefInsert::AtCap => return Err(IndexError::IndexLimitReached { cap }),
        }
        self.follow(self.router.refresh().await?.epoch).await?;
        self.spawn_backfill(job);
        Ok(Defined::Created(index))
    }

    /// Builds the failed `index` again: a new backfill job, the index `building` again. If
    /// another request did it first, that build is the answer.
    async fn retry(self: &Arc<Self>, index: Arc<LiveIndex>, audit: &Audit) -> Result<Defined, IndexError> {
        let job = backfill_job(new_job_id(), &index, now_ms());
        let (tenant, collection, name) = (index.tenant.as_str(), index.collection.as_str(), index.def.name().as_str());
        let restarted = self.router.catalog().restart_index_build(tenant, collection, name, &job, audit).await?;
        self.follow(self.router.refresh().await?.epoch).await?;
        if restarted {
            self.spawn_backfill(job);
        }
        let now = self.index(tenant, collection, name)?;
        Ok(if restarted { Defined::Retried(now) } else { Defined::Existing(now) })
    }

    /// Deletes `index`: its definition at once (a backfill still running stops), its entries in
    /// the background. [`IndexError::IndexNotFound`] if another request deleted it first. The
    /// caller announces the catalog change to other instances.
    pub async fn delete(&self, index: Arc<LiveIndex>, audit: &Audit) -> Result<(), IndexError> {
        let catalog = self.router.catalog();
        let (tenant, collection, name) = (index.tenant.as_str(), index.collection.as_str(), index.def.name().as_str());
        if catalog.delete_index_def(tenant, collection, name, audit).await?.is_none() {
            return Err(IndexError::IndexNotFound);
        }
        if let Some(job) = &index.job_id {
            // Stops a backfill still running.
            let _ = catalog.update_job(job, "cancelled", "{}", Some("the index was deleted")).await;
        }
        self.follow(self.router.refresh().await?.epoch).await?;
        let router = self.router.clone();
        tokio::spawn(async move {
            for (shard, _, db) in router.shard_dbs() {
                if let Err(e) = IndexEntryStore::new(&db, &shard).delete_index(index.scope(), DELETE_BATCH).await {
                    tracing::warn!(shard = %shard, error = %e, "could not delete a removed index's entries");
                }
            }
        });
        Ok(())
    }

    /// Starts a drift audit of `index`; returns its job.
    pub async fn start_drift_audit(self: &Arc<Self>, index: &LiveIndex, audit: &Audit) -> Result<JobRow, IndexError> {
        let now = now_ms();
        let job = JobRow {
            id: new_job_id(),
            kind: DRIFT_AUDIT_JOB.into(),
            tenant: Some(index.tenant.to_string()),
            target: index.target(),
            state: "running".into(),
            progress: "{}".into(),
            error: None,
            created_at_ms: now,
            updated_at_ms: now,
            handovers: 0,
        };
        self.router.catalog().insert_job(&job, audit).await?;
        self.spawn_drift_audit(job.clone());
        Ok(job)
    }

    /// Resumes a job left running by an earlier process, if it is an index job; false if its
    /// kind is not one of this crate's.
    pub fn resume_job(self: &Arc<Self>, job: JobRow) -> bool {
        match job.kind.as_str() {
            BACKFILL_JOB => self.spawn_backfill(job),
            DRIFT_AUDIT_JOB => self.spawn_drift_audit(job),
            _ => return false,
        }
        true
    }
}
