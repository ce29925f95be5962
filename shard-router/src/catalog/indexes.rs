//! Index definitions and background jobs in the catalog. A definition is stored as the JSON its
//! owner (the index-tables layer) writes; the catalog only keeps it, its state and its job.

use sqlx::any::AnyRow;

use super::{Audit, Catalog, catalog_err, commit_if_changed, commit_with, require_incarnation};
use crate::error::Error;

/// An index definition row (read by the names in [`DEF_COLUMNS`]).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct IndexDefRow {
    /// Tenant.
    pub tenant: String,
    /// Collection.
    pub collection: String,
    /// Index name.
    pub name: String,
    /// The definition, JSON.
    pub definition: String,
    /// `building`, `active` or `failed`.
    pub state: String,
    /// The backfill job, while building (and after, for reference).
    pub job_id: Option<String>,
    /// Why the build failed (state `failed`), JSON written by the index-tables layer.
    pub failure: Option<String>,
    /// Creation time (ms since the Unix epoch).
    #[sqlx(rename = "created_at")]
    pub created_at_ms: i64,
    /// Last change.
    #[sqlx(rename = "updated_at")]
    pub updated_at_ms: i64,
    /// The incarnation of the tenant it was defined for: it applies to no other one.
    pub incarnation: i64,
}

/// What [`Catalog::create_index_def`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexDefInsert {
    /// The definition and its job were stored.
    Inserted,
    /// An index of that name exists on the collection: nothing was stored.
    NameTaken,
    /// The collection has as many definitions as its cap allows: nothing was stored.
    AtCap,
}

/// A background job row (read by the names in [`JOB_COLUMNS`]).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct JobRow {
    /// Job id.
    pub id: String,
    /// `index.backfill` or `index.audit`.
    pub kind: String,
    /// Tenant concerned.
    pub tenant: Option<String>,
    /// What it works on, e.g. `acme/users/by-email`.
    pub target: String,
    /// `running`, `done` or `failed`.
    pub state: String,
    /// Progress, JSON (kind-specific; holds the resume point).
    pub progress: String,
    /// Why it failed.
    pub error: Option<String>,
    /// Creation time.
    #[sqlx(rename = "created_at")]
    pub created_at_ms: i64,
    /// Last progress.
    #[sqlx(rename = "updated_at")]
    pub updated_at_ms: i64,
    /// How many times another instance took the running job over from an owner whose lease
    /// had run out (0 when it was never taken over; not written by [`Catalog::insert_job`]).
    pub handovers: i64,
}

const DEF_COLUMNS: &str =
    "tenant, collection, name, definition, state, job_id, created_at, updated_at, failure, incarnation";
/// The columns a job is recorded with.
const JOB_COLUMNS: &str = "id, kind, tenant, target, state, progress, error, created_at, updated_at";
/// The columns a job is read by: the recorded ones and what its runs add.
const JOB_READ_COLUMNS: &str = "id, kind, tenant, target, state, progress, error, created_at, updated_at, handovers";

impl Catalog {
    /// Every index definition (each instance keeps them all in memory).
    pub async fn index_defs(&self) -> Result<Vec<IndexDefRow>, Error> {
        self.all_rows(&format!("SELECT {DEF_COLUMNS} FROM index_defs ORDER BY tenant, collection, name")).await
    }

    /// Creates an index definition with its backfill job (one transaction, audited, new epoch),
    /// if its collection has fewer than `cap` definitions. The count is taken in the
    /// transaction, after the epoch's row is locked by [`Catalog::begin_change`], so concurrent
    /// definitions on one collection cannot pass the cap together. [`Error::TenantNotFound`]:
    /// the tenant is gone or is another incarnation by now.
    pub async fn create_index_def(
        &self,
        def: &IndexDefRow,
        job: &JobRow,
        cap: u32,
        audit: &Audit,
    ) -> Result<IndexDefInsert, Error> {
        self.guarded(async {
            let (mut tx, _epoch) = self.begin_change(audit).await?;
            require_incarnation(&mut tx, &def.tenant, def.incarnation).await?;
            let defined: i64 =
                sqlx::query_scalar("SELECT COUNT(*) FROM index_defs WHERE tenant = $1 AND collection = $2")
                    .bind(&def.tenant)
                    .bind(&def.collection)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(catalog_err)?;
            if defined >= i64::from(cap) {
                let taken: Option<i64> =
                    sqlx::query_scalar("SELECT 1 FROM index_defs WHERE tenant = $1 AND collection = $2 AND name = $3")
                        .bind(&def.tenant)
                        .bind(&def.collection)
                        .bind(&def.name)
                        .fetch_optional(&mut *tx)
                        .await
                        .map_err(catalog_err)?;
                return Ok(if taken.is_some() { IndexDefInsert::NameTaken } else { IndexDefInsert::AtCap });
            }
            let inserted = sqlx::query(&format!(
                "INSERT INTO index_defs ({DEF_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
             ON CONFLICT (tenant, collection, name) DO NOTHING"
            ))
            .bind(&def.tenant)
            .bind(&def.collection)
            .bind(&def.name)
            .bind(&def.definition)
            .bind(&def.state)
            .bind(def.job_id.as_deref())
            .bind(def.created_at_ms)
            .bind(def.updated_at_ms)
            .bind(def.failure.as_deref())
            .bind(def.incarnation)
            .execute(&mut *tx)
            .await
            .map_err(catalog_err)?;
            if inserted.rows_affected() == 0 {
                return Ok(IndexDefInsert::NameTaken);
            }
            insert_job(&mut tx, job).await?;
            tx.commit().await.map_err(catalog_err)?;
            Ok(IndexDefInsert::Inserted)
        })
        .await
    }

    /// Ends the build of an index by its backfill `job`: `active` when `failure` is `None`,
    /// else `failed` with `failure` (JSON). Only while the index is `building` by that job (a
    /// job of a deleted, re-created or retried index changes nothing): whether it changed. New
    /// epoch.
    pub async fn end_index_build(
        &self,
        tenant: &str,
        collection: &str,
        name: &str,
        job: &str,
        failure: Option<&str>,
        audit: &Audit,
    ) -> Result<bool, Error> {
        self.guarded(async {
            let (tx, _epoch) = self.begin_change(audit).await?;
            let statement = sqlx::query(
                "UPDATE index_defs SET state = $1, failure = $2, updated_at = $3 \
                 WHERE tenant = $4 AND collection = $5 AND name = $6 AND job_id = $7 AND state = 'building'",
            )
            .bind(if failure.is_some() { "failed" } else { "active" })
            .bind(failure)
            .bind(crate::clock::now_ms())
            .bind(tenant)
            .bind(collection)
            .bind(name)
            .bind(job);
            commit_if_changed(tx, statement).await
        })
        .await
    }

    /// Builds a `failed` index again: it becomes `building` with the new backfill `job` (one
    /// transaction, audited, new epoch). `Ok(false)`: it is not (or no longer) `failed`.
    pub async fn restart_index_build(
        &self,
        tenant: &str,
        collection: &str,
        name: &str,
        job: &JobRow,
        audit: &Audit,
    ) -> Result<bool, Error> {
        self.guarded(async {
            let (mut tx, _epoch) = self.begin_change(audit).await?;
            let restarted = sqlx::query(
                "UPDATE index_defs SET state = 'building', failure = NULL, job_id = $1, updated_at = $2 \
                 WHERE tenant = $3 AND collection = $4 AND name = $5 AND state = 'failed'",
            )
            .bind(&job.id)
            .bind(job.created_at_ms)
            .bind(tenant)
            .bind(collection)
            .bind(name)
            .execute(&mut *tx)
            .await
            .map_err(catalog_err)?;
            if restarted.rows_affected() == 0 {
                return Ok(false);
            }
            insert_job(&mut tx, job).await?;
            tx.commit().await.map_err(catalog_err)?;
            Ok(true)
        })
        .await
    }

    /// Removes an index definition. `Ok(None)`: no such index. New epoch.
    pub async fn delete_index_def(
        &self,
        tenant: &str,
        collection: &str,
        name: &str,
        audit: &Audit,
    ) -> Result<Option<IndexDefRow>, Error> {
        self.guarded(async {
            let (mut tx, _epoch) = self.begin_change(audit).await?;
            let row: Option<IndexDefRow> = sqlx::query_as(&format!(
                "SELECT {DEF_COLUMNS} FROM index_defs WHERE tenant = $1 AND collection = $2 AND name = $3"
            ))
            .bind(tenant)
            .bind(collection)
            .bind(name)
            .fetch_optional(&mut *tx)
            .await
            .map_err(catalog_err)?;
            let Some(row) = row else { return Ok(None) };
            let statement = sqlx::query("DELETE FROM index_defs WHERE tenant = $1 AND collection = $2 AND name = $3")
                .bind(tenant)
                .bind(collection)
                .bind(name);
            commit_with(tx, statement).await?;
            Ok(Some(row))
        })
        .await
    }

    /// One job.
    pub async fn job(&self, id: &str) -> Result<Option<JobRow>, Error> {
        self.guarded(async {
            sqlx::query_as(&format!("SELECT {JOB_READ_COLUMNS} FROM jobs WHERE id = $1"))
                .bind(id)
                .fetch_optional(&self.db.pool)
                .await
                .map_err(catalog_err)
        })
        .await
    }

    /// Jobs still running (to resume after a restart).
    pub async fn running_jobs(&self) -> Result<Vec<JobRow>, Error> {
        self.all_rows(&format!("SELECT {JOB_READ_COLUMNS} FROM jobs WHERE state = 'running' ORDER BY created_at")).await
    }

    /// Up to `limit` jobs, newest first (by creation, then id), of `state` and `kind` when given,
    /// created before the job `before` (its creation time and id: the listing's cursor).
    pub async fn list_jobs(
        &self,
        state: Option<&str>,
        kind: Option<&str>,
        before: Option<(i64, &str)>,
        limit: u32,
    ) -> Result<Vec<JobRow>, Error> {
        let (before_at, before_id) = before.unwrap_or((i64::MAX, ""));
        self.guarded(async {
            sqlx::query_as(&format!(
                "SELECT {JOB_READ_COLUMNS} FROM jobs \
                 WHERE ($1 IS NULL OR state = $1) AND ($2 IS NULL OR kind = $2) \
                 AND (created_at < $3 OR (created_at = $3 AND id < $4) OR $5) \
                 ORDER BY created_at DESC, id DESC LIMIT $6"
            ))
            .bind(state)
            .bind(kind)
            .bind(before_at)
            .bind(before_id)
            .bind(before.is_none())
            .bind(i64::from(limit))
            .fetch_all(&self.db.pool)
            .await
            .map_err(catalog_err)
        })
        .await
    }

    /// How many jobs there are of each kind in each state: `(kind, state, jobs)`.
    pub async fn count_jobs(&self) -> Result<Vec<(String, String, u64)>, Error> {
        self.guarded(async {
            let rows: Vec<(String, String, i64)> =
                sqlx::query_as("SELECT kind, state, COUNT(*) FROM jobs GROUP BY kind, state")
                    .fetch_all(&self.db.pool)
                    .await
                    .map_err(catalog_err)?;
            Ok(rows.into_iter().map(|(kind, state, jobs)| (kind, state, u64::try_from(jobs).unwrap_or(0))).collect())
        })
        .await
    }

    /// Every row `sql` (a statement without parameters) selects, read by its columns' names.
    async fn all_rows<T>(&self, sql: &str) -> Result<Vec<T>, Error>
    where
        T: for<'r> sqlx::FromRow<'r, AnyRow> + Send + Unpin,
    {
        self.guarded(async { sqlx::query_as(sql).fetch_all(&self.db.pool).await.map_err(catalog_err) }).await
    }

    /// Records a job (one that is not created with an index).
    pub async fn insert_job(&self, job: &JobRow, audit: &Audit) -> Result<(), Error> {
        self.guarded(async {
            let mut tx = self.begin_audited(audit).await?;
            insert_job(&mut tx, job).await?;
            tx.commit().await.map_err(catalog_err)
        })
        .await
    }

    /// Stores a job's progress (and state, error), only while it is `running`. Returns whether
    /// it was still running.
    pub async fn update_job(&self, id: &str, state: &str, progress: &str, error: Option<&str>) -> Result<bool, Error> {
        self.guarded(async {
        let statement = sqlx::query(
            "UPDATE jobs SET state = $1, progress = $2, error = $3, updated_at = $4 WHERE id = $5 AND state = 'running'",
        )
        .bind(state)
        .bind(progress)
        .bind(error)
        .bind(crate::clock::now_ms())
        .bind(id);
        self.changes_one_row(statement).await
        })
        .await
    }
}

pub(super) async fn insert_job(tx: &mut sqlx::Transaction<'static, sqlx::Any>, job: &JobRow) -> Result<(), Error> {
    sqlx::query(&format!("INSERT INTO jobs ({JOB_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"))
        .bind(&job.id)
        .bind(&job.kind)
        .bind(job.tenant.as_deref())
        .bind(&job.target)
        .bind(&job.state)
        .bind(&job.progress)
        .bind(job.error.as_deref())
        .bind(job.created_at_ms)
        .bind(job.updated_at_ms)
        .execute(&mut **tx)
        .await
        .map_err(catalog_err)?;
    Ok(())
}
