//! Jobs that move data between shards, in the catalog: their claims on what they move (one job
//! per tenant or vshard at a time), the lease of the instance running each, cancellation, and
//! the pin or vshard owner switch that ends a move's cut-over. The mover (`moves::mover`)
//! drives them.

use super::JobRow;
use super::{Audit, Catalog, RangeRow, catalog_err, claim_holder, refuse_claimed};
use crate::clock::now_ms;
use crate::error::Error;
use crate::ids::{CollectionName, ShardId, TenantId};

/// The placement a move's cut-over switches.
#[derive(Debug, Clone, Copy)]
pub enum Placement<'a> {
    /// Pin a tenant to a shard.
    Pin(&'a TenantId, &'a ShardId),
    /// Give vshards to a shard.
    Vshards(&'a [u32], &'a ShardId),
    /// Set the ranges of a tenant's range-distributed collection.
    Ranges(&'a TenantId, &'a CollectionName, &'a [RangeRow]),
    /// Set a collection's distribution.
    Distribution(&'a super::CollectionRow),
}

/// A running job's answer to its owner's heartbeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lease {
    /// The owner still holds the job; `cancel` says whether an operator asked to cancel it.
    Held {
        /// Cancellation was requested.
        cancel: bool,
    },
    /// The job is no longer this owner's (another instance took it over, or it ended).
    Lost,
}

/// What an operator's request to cancel a job found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelRequest {
    /// The job runs and will cancel (a move before its switch rolls back).
    Requested,
    /// No running job has that id (it ended, or never was).
    NotRunning,
    /// The job is a move past its switch (phase `cleanup` or `done`): the new placement is in
    /// force and the job will finish; nothing was asked of it.
    PastSwitch,
}

/// The phase in a job's stored progress, if it has one (the moves' and redistributions' do).
#[derive(serde::Deserialize)]
struct ProgressPhase {
    phase: Option<crate::catalog::phase::Phase>,
}

impl Catalog {
    /// Records a new job with its claims, in one transaction: [`Error::JobConflict`] naming the
    /// job that holds one of `subjects` already.
    pub async fn start_claiming_job(&self, job: &JobRow, subjects: &[String], audit: &Audit) -> Result<(), Error> {
        self.guarded(async {
            let mut tx = self.begin_audited(audit).await?;
            // Taken first, as every map change does: a tenant created meanwhile either committed
            // before the claims (the job sees it) or sees them (and is refused).
            sqlx::query("UPDATE shard_map SET epoch = epoch WHERE id = 1")
                .execute(&mut *tx)
                .await
                .map_err(catalog_err)?;
            for subject in subjects {
                refuse_claimed(&mut tx, subject).await?;
                let claimed =
                    sqlx::query("INSERT INTO job_claims (subject, job_id) VALUES ($1, $2) ON CONFLICT DO NOTHING")
                        .bind(subject)
                        .bind(&job.id)
                        .execute(&mut *tx)
                        .await
                        .map_err(catalog_err)?;
                if claimed.rows_affected() == 0 {
                    return Err(Error::JobConflict { subject: subject.clone(), job: "another job".to_owned() });
                }
            }
            super::indexes::insert_job(&mut tx, job).await?;
            tx.commit().await.map_err(catalog_err)
        })
        .await
    }

    /// Takes the lease of running job `id` for `owner` until `now + lease_ms`, if nobody else
    /// holds it (its lease ran out, or `owner` holds it already). Returns whether it did.
    pub async fn take_job_lease(&self, id: &str, owner: &str, lease_ms: i64) -> Result<bool, Error> {
        self.guarded(async {
            let now = now_ms();
            let statement = sqlx::query(
                "UPDATE jobs SET owner = $1, lease_until = $2, \
                 handovers = handovers + CASE WHEN owner IS NULL OR owner = $1 THEN 0 ELSE 1 END \
                 WHERE id = $3 AND state = 'running' AND (owner = $1 OR owner IS NULL OR lease_until < $4)",
            )
            .bind(owner)
            .bind(now + lease_ms)
            .bind(id)
            .bind(now);
            self.changes_one_row(statement).await
        })
        .await
    }

    /// Renews `owner`'s lease of running job `id` until `now + lease_ms`, without touching its
    /// progress: [`Lease::Lost`] if another instance holds it now or it ended.
    pub async fn renew_job_lease(&self, id: &str, owner: &str, lease_ms: i64) -> Result<Lease, Error> {
        self.keep_job_lease(id, owner, lease_ms, None).await
    }

    /// Stores a running job's progress and renews `owner`'s lease.
    pub async fn heartbeat_job(&self, id: &str, owner: &str, progress: &str, lease_ms: i64) -> Result<Lease, Error> {
        self.keep_job_lease(id, owner, lease_ms, Some(progress)).await
    }

    /// Renews `owner`'s lease of running job `id` until `now + lease_ms`, storing its
    /// `progress` if given: [`Lease::Lost`] if another instance holds it now or it ended.
    async fn keep_job_lease(
        &self,
        id: &str,
        owner: &str,
        lease_ms: i64,
        progress: Option<&str>,
    ) -> Result<Lease, Error> {
        self.guarded(async {
            let now = now_ms();
            let stored = if progress.is_some() { ", progress = $4, updated_at = $5" } else { "" };
            let sql = format!(
                "UPDATE jobs SET lease_until = $1{stored} WHERE id = $2 AND owner = $3 AND state = 'running' \
                 RETURNING cancel_requested"
            );
            let mut renewal = sqlx::query_scalar(&sql).bind(now + lease_ms).bind(id).bind(owner);
            if let Some(progress) = progress {
                renewal = renewal.bind(progress).bind(now);
            }
            let cancel: Option<i64> = renewal.fetch_optional(&self.db.pool).await.map_err(catalog_err)?;
            Ok(cancel.map_or(Lease::Lost, |c| Lease::Held { cancel: c != 0 }))
        })
        .await
    }

    /// Ends `owner`'s job `id` as `state` (`done`, `failed`, `cancelled`) and releases its claims.
    pub async fn end_job(
        &self,
        id: &str,
        owner: &str,
        state: &str,
        progress: &str,
        error: Option<&str>,
    ) -> Result<bool, Error> {
        self.guarded(async {
            let mut tx = self.db.pool.begin().await.map_err(catalog_err)?;
            let end = sqlx::query(
                "UPDATE jobs SET state = $1, progress = $2, error = $3, updated_at = $4, owner = NULL \
                 WHERE id = $5 AND owner = $6 AND state = 'running'",
            )
            .bind(state)
            .bind(progress)
            .bind(error)
            .bind(now_ms());
            if !update_owned_job(&mut tx, end, id, owner).await? {
                return Ok(false);
            }
            sqlx::query("DELETE FROM job_claims WHERE job_id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await
                .map_err(catalog_err)?;
            tx.commit().await.map_err(catalog_err)?;
            Ok(true)
        })
        .await
    }

    /// Asks running job `id` to cancel, unless it is a move past its switch. Race-free against
    /// the switch, which stores the `cleanup` phase in the transaction that switches the
    /// placement: the request is stored only if the progress is still the one it read (else it
    /// reads again), so a switch that commits meanwhile makes it [`CancelRequest::PastSwitch`].
    pub async fn request_job_cancel(&self, id: &str, audit: &Audit) -> Result<CancelRequest, Error> {
        self.guarded(async {
            let mut tx = self.begin_audited(audit).await?;
            loop {
                let progress: Option<String> =
                    sqlx::query_scalar("SELECT progress FROM jobs WHERE id = $1 AND state = 'running'")
                        .bind(id)
                        .fetch_optional(&mut *tx)
                        .await
                        .map_err(catalog_err)?;
                let Some(progress) = progress else { return Ok(CancelRequest::NotRunning) };
                let phase = serde_json::from_str::<ProgressPhase>(&progress).ok().and_then(|p| p.phase);
                if matches!(phase, Some(crate::catalog::phase::Phase::Cleanup | crate::catalog::phase::Phase::Done)) {
                    return Ok(CancelRequest::PastSwitch);
                }
                let asked = sqlx::query(
                    "UPDATE jobs SET cancel_requested = 1 WHERE id = $1 AND state = 'running' AND progress = $2",
                )
                .bind(id)
                .bind(&progress)
                .execute(&mut *tx)
                .await
                .map_err(catalog_err)?;
                if asked.rows_affected() == 1 {
                    tx.commit().await.map_err(catalog_err)?;
                    return Ok(CancelRequest::Requested);
                }
                // Its runner stored new progress meanwhile (PostgreSQL): look again.
            }
        })
        .await
    }

    /// Whether job `id` asked to be cancelled.
    pub async fn job_cancel_requested(&self, id: &str) -> Result<bool, Error> {
        self.guarded(async {
            let cancel: Option<i64> = sqlx::query_scalar("SELECT cancel_requested FROM jobs WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.db.pool)
                .await
                .map_err(catalog_err)?;
            Ok(cancel.unwrap_or(0) != 0)
        })
        .await
    }

    /// The job claiming `subject`, if any.
    pub async fn job_claiming(&self, subject: &str) -> Result<Option<String>, Error> {
        self.guarded(claim_holder(&self.db.pool, subject)).await
    }

    /// Switches `placement` (a new epoch) as the cut-over of `owner`'s move job `id`, storing
    /// the job's `progress` in the same transaction: either both happen or neither.
    pub async fn switch_placement(
        &self,
        placement: Placement<'_>,
        id: &str,
        owner: &str,
        progress: &str,
        audit: &Audit,
    ) -> Result<u64, Error> {
        self.guarded(async {
            let (mut tx, epoch) = self.begin_change(audit).await?;
            let store = sqlx::query(
                "UPDATE jobs SET progress = $1, updated_at = $2 WHERE id = $3 AND owner = $4 AND state = 'running'",
            )
            .bind(progress)
            .bind(now_ms());
            if !update_owned_job(&mut tx, store, id, owner).await? {
                return Err(Error::JobLost(id.to_owned()));
            }
            match placement {
                Placement::Pin(tenant, to) => {
                    sqlx::query("DELETE FROM tenant_pins WHERE tenant = $1")
                        .bind(tenant.as_str())
                        .execute(&mut *tx)
                        .await
                        .map_err(catalog_err)?;
                    sqlx::query("INSERT INTO tenant_pins (tenant, shard) VALUES ($1, $2)")
                        .bind(tenant.as_str())
                        .bind(to.as_str())
                        .execute(&mut *tx)
                        .await
                        .map_err(catalog_err)?;
                }
                Placement::Vshards(vshards, to) => {
                    for vshard in vshards {
                        let moved = sqlx::query("UPDATE vshards SET shard = $1 WHERE vshard = $2")
                            .bind(to.as_str())
                            .bind(i64::from(*vshard))
                            .execute(&mut *tx)
                            .await
                            .map_err(catalog_err)?;
                        if moved.rows_affected() != 1 {
                            return Err(Error::Corrupt(format!("vshard {vshard} is not in the vshard table")));
                        }
                    }
                }
                Placement::Ranges(tenant, collection, ranges) => {
                    let ranges = serde_json::to_string(ranges).map_err(|e| Error::Corrupt(e.to_string()))?;
                    let set = sqlx::query(
                        "UPDATE collection_distributions SET ranges = $1, updated_at = $2 \
                         WHERE tenant = $3 AND collection = $4 AND distribution = 'range'",
                    )
                    .bind(ranges)
                    .bind(now_ms())
                    .bind(tenant.as_str())
                    .bind(collection.as_str())
                    .execute(&mut *tx)
                    .await
                    .map_err(catalog_err)?;
                    if set.rows_affected() != 1 {
                        return Err(Error::Corrupt(format!(
                            "collection {collection} of tenant {tenant} is no longer distributed `range`"
                        )));
                    }
                }
                Placement::Distribution(row) => super::collections::write_distribution(&mut tx, row).await?,
            }
            tx.commit().await.map_err(catalog_err)?;
            Ok(epoch)
        })
        .await
    }
}

/// Runs `update` (an `UPDATE jobs ... WHERE id = $n AND owner = $n+1 AND state = 'running'`, its
/// other parameters bound) in `tx` for `owner`'s job `id`: false when the job does not run under
/// `owner` any more (it ended, or another instance took it over).
async fn update_owned_job<'q>(
    tx: &mut sqlx::AnyConnection,
    update: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    id: &'q str,
    owner: &'q str,
) -> Result<bool, Error> {
    let done = update.bind(id).bind(owner).execute(tx).await.map_err(catalog_err)?;
    Ok(done.rows_affected() != 0)
}
