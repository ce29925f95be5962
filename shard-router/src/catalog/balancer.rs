//! The catalog's side of the balancer (`crate::balance::runner`): its runtime mode, the lease of
//! the one instance that runs it, and the record of every run (its decision, and the proposal
//! or the move it made).

use sqlx::any::AnyRow;

use super::phase::Phase;
use super::{Audit, Catalog, catalog_err, column};
use crate::clock::now_ms;
use crate::error::Error;

/// The balancer's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BalancerRow {
    /// The mode an operator switched it to; `None`: the configured one.
    pub mode: Option<String>,
    /// Who switched it.
    pub mode_by: Option<String>,
    /// When (ms since the Unix epoch).
    pub mode_at_ms: Option<i64>,
    /// The instance holding the lease, if any.
    pub owner: Option<String>,
    /// Until when (ms since the Unix epoch).
    pub lease_until: Option<i64>,
}

/// One run of the balancer, as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRow {
    /// Increasing id (a proposal's id).
    pub id: i64,
    /// When it ran (ms since the Unix epoch).
    pub at_ms: i64,
    /// The instance that ran it.
    pub instance: String,
    /// The mode it ran in.
    pub mode: String,
    /// What came of it (`balanced`, `nothing`, `held`, `proposed`, `started`, `failed`).
    pub outcome: String,
    /// Why, in words.
    pub reason: String,
    /// Its inputs and the policy's decision (JSON).
    pub decision: String,
    /// The job claim of what it chose to move (`vshard:7`, `tenant:acme`), if it chose.
    pub subject: Option<String>,
    /// Where to.
    pub to_shard: Option<String>,
    /// A proposal's state: `pending`, `approved`, `expired` or `failed`.
    pub proposal: Option<String>,
    /// Why a proposal was settled as it was.
    pub settled: Option<String>,
    /// When.
    pub settled_at_ms: Option<i64>,
    /// The move job it (or the approval of its proposal) started.
    pub job: Option<String>,
}

const RUN_COLUMNS: &str =
    "id, at_ms, instance, mode, outcome, reason, decision, subject, to_shard, proposal, settled, settled_at_ms, job";

fn read_run(row: &AnyRow) -> Result<RunRow, Error> {
    Ok(RunRow {
        id: column(row, 0)?,
        at_ms: column(row, 1)?,
        instance: column(row, 2)?,
        mode: column(row, 3)?,
        outcome: column(row, 4)?,
        reason: column(row, 5)?,
        decision: column(row, 6)?,
        subject: column(row, 7)?,
        to_shard: column(row, 8)?,
        proposal: column(row, 9)?,
        settled: column(row, 10)?,
        settled_at_ms: column(row, 11)?,
        job: column(row, 12)?,
    })
}

/// How many runs are kept: the oldest beyond them are deleted as new ones are recorded.
const KEPT_RUNS: i64 = 1_000;

impl Catalog {
    /// The balancer's row.
    pub async fn balancer(&self) -> Result<BalancerRow, Error> {
        self.guarded(async {
            let row = sqlx::query("SELECT mode, mode_by, mode_at_ms, owner, lease_until FROM balancer WHERE id = 1")
                .fetch_one(&self.db.pool)
                .await
                .map_err(catalog_err)?;
            Ok(BalancerRow {
                mode: column(&row, 0)?,
                mode_by: column(&row, 1)?,
                mode_at_ms: column(&row, 2)?,
                owner: column(&row, 3)?,
                lease_until: column(&row, 4)?,
            })
        })
        .await
    }

    /// Switches the balancer to `mode` (`None`: back to the configured one), recording `audit`
    /// in the same transaction.
    pub async fn set_balancer_mode(&self, mode: Option<&str>, audit: &Audit) -> Result<(), Error> {
        self.guarded(async {
            let mut tx = self.begin_audited(audit).await?;
            sqlx::query("UPDATE balancer SET mode = $1, mode_by = $2, mode_at_ms = $3 WHERE id = 1")
                .bind(mode)
                .bind(&audit.actor)
                .bind(now_ms())
                .execute(&mut *tx)
                .await
                .map_err(catalog_err)?;
            tx.commit().await.map_err(catalog_err)
        })
        .await
    }

    /// Takes (or renews) the balancer's lease for `owner` until `now + lease_ms`, if nobody
    /// else holds it. Returns whether `owner` holds it now.
    pub async fn take_balancer_lease(&self, owner: &str, lease_ms: i64) -> Result<bool, Error> {
        self.guarded(async {
            let now = now_ms();
            let done = sqlx::query(
                "UPDATE balancer SET owner = $1, lease_until = $2 \
                 WHERE id = 1 AND (owner = $1 OR owner IS NULL OR lease_until < $3)",
            )
            .bind(owner)
            .bind(now + lease_ms)
            .bind(now)
            .execute(&self.db.pool)
            .await
            .map_err(catalog_err)?;
            Ok(done.rows_affected() == 1)
        })
        .await
    }

    /// Gives up `owner`'s lease (an instance shutting down), so another takes it at once.
    pub async fn release_balancer_lease(&self, owner: &str) -> Result<(), Error> {
        self.guarded(async {
            sqlx::query("UPDATE balancer SET owner = NULL, lease_until = NULL WHERE id = 1 AND owner = $1")
                .bind(owner)
                .execute(&self.db.pool)
                .await
                .map_err(catalog_err)?;
            Ok(())
        })
        .await
    }

    /// Records a run (its `id` is ignored) and returns its id; deletes the oldest runs beyond
    /// the last [`KEPT_RUNS`].
    pub async fn record_balancer_run(&self, run: &RunRow) -> Result<i64, Error> {
        self.guarded(async {
            let mut tx = self.db.pool.begin().await.map_err(catalog_err)?;
            let id: i64 = sqlx::query_scalar(
                "INSERT INTO balancer_runs (at_ms, instance, mode, outcome, reason, decision, subject, to_shard, \
                 proposal, settled, settled_at_ms, job) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) \
                 RETURNING id",
            )
            .bind(run.at_ms)
            .bind(&run.instance)
            .bind(&run.mode)
            .bind(&run.outcome)
            .bind(&run.reason)
            .bind(&run.decision)
            .bind(run.subject.as_deref())
            .bind(run.to_shard.as_deref())
            .bind(run.proposal.as_deref())
            .bind(run.settled.as_deref())
            .bind(run.settled_at_ms)
            .bind(run.job.as_deref())
            .fetch_one(&mut *tx)
            .await
            .map_err(catalog_err)?;
            // A pending proposal is kept whatever its age: it is settled, never dropped.
            sqlx::query("DELETE FROM balancer_runs WHERE id <= $1 AND (proposal IS NULL OR proposal <> 'pending')")
                .bind(id - KEPT_RUNS)
                .execute(&mut *tx)
                .await
                .map_err(catalog_err)?;
            tx.commit().await.map_err(catalog_err)?;
            Ok(id)
        })
        .await
    }

    /// The last `limit` runs, newest first.
    pub async fn balancer_runs(&self, limit: u32) -> Result<Vec<RunRow>, Error> {
        self.guarded(async {
            let rows = sqlx::query(&format!("SELECT {RUN_COLUMNS} FROM balancer_runs ORDER BY id DESC LIMIT $1"))
                .bind(i64::from(limit))
                .fetch_all(&self.db.pool)
                .await
                .map_err(catalog_err)?;
            rows.iter().map(read_run).collect()
        })
        .await
    }

    /// Run `id`, if it is recorded.
    pub async fn balancer_run(&self, id: i64) -> Result<Option<RunRow>, Error> {
        self.guarded(async {
            let row = sqlx::query(&format!("SELECT {RUN_COLUMNS} FROM balancer_runs WHERE id = $1"))
                .bind(id)
                .fetch_optional(&self.db.pool)
                .await
                .map_err(catalog_err)?;
            row.as_ref().map(read_run).transpose()
        })
        .await
    }

    /// The pending proposals, oldest first.
    pub async fn pending_proposals(&self) -> Result<Vec<RunRow>, Error> {
        self.guarded(async {
            let rows =
                sqlx::query(&format!("SELECT {RUN_COLUMNS} FROM balancer_runs WHERE proposal = 'pending' ORDER BY id"))
                    .fetch_all(&self.db.pool)
                    .await
                    .map_err(catalog_err)?;
            rows.iter().map(read_run).collect()
        })
        .await
    }

    /// Settles proposal `id` from state `from` (`pending`, or `approved` for an approval whose
    /// move could not start) as `state` (`approved`, `expired`, `failed`) because of `why`,
    /// with the job it started, if any, recording `audit` in the same transaction if given.
    /// Returns `false` if it was not in state `from` (another approval or run settled it first).
    pub async fn settle_proposal(
        &self,
        id: i64,
        (from, state): (&str, &str),
        why: &str,
        job: Option<&str>,
        audit: Option<&Audit>,
    ) -> Result<bool, Error> {
        self.guarded(async {
            let mut tx = match audit {
                Some(audit) => self.begin_audited(audit).await?,
                None => self.db.pool.begin().await.map_err(catalog_err)?,
            };
            let done = sqlx::query(
                "UPDATE balancer_runs SET proposal = $1, settled = $2, settled_at_ms = $3, job = COALESCE($4, job) \
                 WHERE id = $5 AND proposal = $6",
            )
            .bind(state)
            .bind(why)
            .bind(now_ms())
            .bind(job)
            .bind(id)
            .bind(from)
            .execute(&mut *tx)
            .await
            .map_err(catalog_err)?;
            if done.rows_affected() != 1 {
                return Ok(false);
            }
            tx.commit().await.map_err(catalog_err)?;
            Ok(true)
        })
        .await
    }

    /// The runs whose move job (started by the run or by the approval of its proposal) began
    /// at or after `since_ms`, or is still running: the moves cooling down and in flight.
    pub async fn balancer_moves(&self, since_ms: i64) -> Result<Vec<BalancerMove>, Error> {
        let columns = RUN_COLUMNS.split(", ").map(|c| format!("r.{c}")).collect::<Vec<_>>().join(", ");
        self.guarded(async {
            let rows = sqlx::query(&format!(
                "SELECT {columns}, j.state, j.progress FROM balancer_runs r JOIN jobs j ON j.id = r.job \
                 WHERE j.state = 'running' OR COALESCE(r.settled_at_ms, r.at_ms) >= $1 ORDER BY r.id"
            ))
            .bind(since_ms)
            .fetch_all(&self.db.pool)
            .await
            .map_err(catalog_err)?;
            rows.iter()
                .map(|row| {
                    let progress: Option<String> = column(row, 14)?;
                    let phase =
                        progress.and_then(|p| serde_json::from_str::<ProgressPhase>(&p).ok()).and_then(|p| p.phase);
                    Ok(BalancerMove { run: read_run(row)?, job_state: column(row, 13)?, phase })
                })
                .collect()
        })
        .await
    }
}

/// A move the balancer started (or whose proposal was approved), with its job's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BalancerMove {
    /// The run that chose it.
    pub run: RunRow,
    /// Its job's state (`running`, `done`, ...).
    pub job_state: String,
    /// Its job's phase, as its stored progress says, if it says.
    pub phase: Option<Phase>,
}

impl BalancerMove {
    /// Whether its job runs and has not switched the placement yet: past the switch (cleaning
    /// up the source during its grace period) the move no longer counts as one in flight.
    pub fn before_switch(&self) -> bool {
        self.job_state == "running" && !matches!(self.phase, Some(Phase::Cleanup | Phase::Done))
    }
}

/// The phase in a job's stored progress.
#[derive(serde::Deserialize)]
struct ProgressPhase {
    phase: Option<Phase>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a_move(job_state: &str, phase: Option<Phase>) -> BalancerMove {
        let run = RunRow {
            id: 1,
            at_ms: 0,
            instance: "i".to_owned(),
            mode: "apply".to_owned(),
            outcome: "started".to_owned(),
            reason: String::new(),
            decision: String::new(),
            subject: Some("vshard:7".to_owned()),
            to_shard: Some("b".to_owned()),
            proposal: None,
            settled: None,
            settled_at_ms: None,
            job: Some("j".to_owned()),
        };
        BalancerMove { run, job_state: job_state.to_owned(), phase }
    }

    #[test]
    fn a_move_counts_as_in_flight_until_its_switch_not_until_its_cleanup_ends() {
        for phase in [None, Some(Phase::Copy), Some(Phase::CatchUp), Some(Phase::CutOver)] {
            assert!(a_move("running", phase).before_switch(), "{phase:?}");
        }
        assert!(!a_move("running", Some(Phase::Cleanup)).before_switch());
        assert!(!a_move("done", Some(Phase::Done)).before_switch());
    }
}
