//! What every job that moves data between shards shares (DESIGN.md §5, "Moving data"): its
//! phases and the way [`drive`] runs them (retries, cancellation, roll back), its lease and
//! progress in the catalog ([`JobHandle`]), and the wait for write statements that began before
//! a fence. The tenant, vshard and range moves ([`crate::moves::mover`]) and the change of a
//! collection's distribution ([`crate::moves::redistribute`]) are such jobs.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

pub use crate::catalog::phase::Phase;

use crate::catalog::{JobRow, Lease};
use crate::clock::now_ms;
use crate::error::Error;
use crate::ids::TenantId;
use crate::moves::copy::{Checksum, Pace, PaceSettings};
use crate::router::ShardRouter;
use crate::storage::db::Engine;
use crate::storage::shard::{FencedShard, OnShard};

/// The kind of a tenant move job.
pub const MOVE_JOB: &str = "tenant.move";

/// The kind of a vshard move job (one step of a rebalance or a drain).
pub const VSHARD_MOVE_JOB: &str = "vshard.move";

/// The kind of a range move job (a key range of a range-distributed collection changes shard).
pub const RANGE_MOVE_JOB: &str = "range.move";

/// The kind of a job changing a non-empty collection's distribution.
pub const REDISTRIBUTE_JOB: &str = "collection.redistribute";

/// The kinds of job the [`crate::moves::mover::Mover`] runs (and adopts when their instance
/// stopped): the jobs that copy rows between shards.
pub const MOVE_JOB_KINDS: [&str; 4] = [MOVE_JOB, VSHARD_MOVE_JOB, RANGE_MOVE_JOB, REDISTRIBUTE_JOB];

/// The bytes the copies of the jobs this instance ran took since it started, by kind of job
/// ([`MOVE_JOB_KINDS`]), as their progress counts them (`bytes_copied`). Each instance counts
/// the copies it ran; `/metrics` shows them.
#[derive(Debug, Default)]
pub struct CopiedBytes {
    by_kind: [AtomicU64; MOVE_JOB_KINDS.len()],
    /// Bytes of a kind not in the list (none is run: kept apart, never shown).
    other: AtomicU64,
}

impl CopiedBytes {
    /// The counter of jobs of `kind`.
    pub(crate) fn of(&self, kind: &str) -> &AtomicU64 {
        match MOVE_JOB_KINDS.iter().position(|k| *k == kind) {
            Some(i) => &self.by_kind[i],
            None => &self.other,
        }
    }

    /// Each kind of job with the bytes its copies took.
    pub fn by_kind(&self) -> [(&'static str, u64); MOVE_JOB_KINDS.len()] {
        std::array::from_fn(|i| (MOVE_JOB_KINDS[i], self.by_kind[i].load(Ordering::Relaxed)))
    }
}

/// Catch-up ends when a pass took at most this many rows, or after [`MAX_CATCH_UP_PASSES`].
pub(crate) const SMALL_DELTA_ROWS: u64 = 1_000;
pub(crate) const MAX_CATCH_UP_PASSES: u32 = 5;

/// How long the cut-over waits for statements that began before the fence.
const IN_FLIGHT_WAIT: Duration = Duration::from_secs(5);

/// How often a failed step is tried before the move is rolled back.
const ATTEMPTS: u32 = 3;

/// Source and target checksums of each table, in [`crate::moves::copy::TENANT_TABLES`] order.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Checksums {
    /// Per table: its name, the source's and the target's checksum.
    pub tables: Vec<(String, Checksum, Checksum)>,
    /// Whether every table matched.
    pub matched: bool,
}

/// What the passes of a job copying rows have copied: part of a move's and a redistribution's
/// progress, flattened into it (its fields stand in the stored JSON as the job's own).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CopyCounters {
    /// Rows copied so far, over all passes.
    pub rows_copied: u64,
    /// Bytes copied so far.
    pub bytes_copied: u64,
    /// Passes made.
    pub passes: u32,
    /// How far the target is behind: 0 during a move's first copy, then the rows changed on the
    /// source since the copy's snapshot (counted as it ends), then the rows the last catch-up
    /// pass took (how far the target was behind when it began).
    pub lag_rows: u64,
}

impl CopyCounters {
    /// Counts one more pass, which copied `rows` rows and `bytes` bytes.
    pub(crate) fn count_pass(&mut self, rows: u64, bytes: u64) {
        self.rows_copied += rows;
        self.bytes_copied += bytes;
        self.lag_rows = rows;
        self.passes += 1;
    }
}

/// How the cut-over of a job copying rows went, from the fence to the switch, and why the job
/// rolled back if it did: part of a move's and a redistribution's progress, flattened into it
/// (its fields stand in the stored JSON as the job's own).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CutOverRecord {
    /// The checksums of the rows compared under the fence, on both sides (those changed since
    /// the settled comparison, or all of them if it found a difference).
    pub checksums: Option<Checksums>,
    /// When the source was first fenced.
    pub fenced_at_ms: Option<i64>,
    /// How long writes were refused: from the fence to the switch (ms).
    pub cutover_ms: Option<i64>,
    /// Where the last cut-over attempt spent its time (ms): waiting for statements that began
    /// before the fence, copying the last delta, comparing checksums, marking and switching.
    #[serde(default)]
    pub cutover_steps_ms: Vec<(String, i64)>,
    /// The epoch of the switch.
    pub epoch: Option<u64>,
    /// When the placement switched.
    pub switched_at_ms: Option<i64>,
    /// Why the job rolled back, if it did.
    pub rolled_back: Option<String>,
}

impl CutOverRecord {
    /// The fence went up at `fenced_at` (the time of a first attempt's fence stays): the
    /// attempt's steps are timed anew, from now, by the clock returned.
    pub(crate) fn fenced(&mut self, fenced_at: i64) -> StepClock {
        self.fenced_at_ms.get_or_insert(fenced_at);
        self.cutover_steps_ms.clear();
        StepClock { step: now_ms() }
    }

    /// The placement switched at `switched_at`; `fenced_at` is this attempt's fence, for a
    /// record without one. Gives how long writes were refused (ms).
    pub(crate) fn switched(&mut self, switched_at: i64, fenced_at: i64) -> i64 {
        let cutover_ms = switched_at - self.fenced_at_ms.unwrap_or(fenced_at);
        self.cutover_ms = Some(cutover_ms);
        self.switched_at_ms = Some(switched_at);
        cutover_ms
    }
}

/// Times the steps of one cut-over attempt ([`CutOverRecord::cutover_steps_ms`]).
pub(crate) struct StepClock {
    /// When the step being timed began.
    step: i64,
}

impl StepClock {
    /// The step `what` ended now: records how long it took; the next one begins.
    pub(crate) fn took(&mut self, record: &mut CutOverRecord, what: &str) {
        let now = now_ms();
        record.cutover_steps_ms.push((what.to_owned(), now - self.step));
        self.step = now;
    }
}

/// Tells every instance that the map changed (the api publishes the epoch).
pub type Announce = Arc<dyn Fn(u64) -> BoxFuture<'static, ()> + Send + Sync>;

/// A new running job of `kind` on `target` with `progress`.
pub(crate) fn new_job(
    kind: &str,
    tenant: Option<&TenantId>,
    target: String,
    progress: &impl Serialize,
) -> Result<JobRow, Error> {
    let now = now_ms();
    Ok(JobRow {
        id: uuid::Uuid::new_v4().simple().to_string(),
        kind: kind.to_owned(),
        tenant: tenant.map(ToString::to_string),
        target,
        state: "running".to_owned(),
        progress: serde_json::to_string(progress).map_err(|e| Error::Corrupt(e.to_string()))?,
        error: None,
        created_at_ms: now,
        updated_at_ms: now,
        handovers: 0,
    })
}

/// The pace of a job's copies: `storage.moves` sets its limits, and the load meter (when the
/// load is counted) feeds its loop with the requests' latency.
pub(crate) fn copy_pace(router: &ShardRouter) -> Pace {
    Pace::new(PaceSettings::from(router.move_config()), router.pools().meter().cloned())
}

pub(crate) fn lease_ms(router: &ShardRouter) -> i64 {
    i64::try_from(router.move_config().lease.as_millis()).unwrap_or(i64::MAX)
}

/// Runs `work`, `owner`'s run of job `id` (whose lease it has just taken), while keeping the
/// lease: it is renewed every third of `moves.lease`, apart from the progress the work saves,
/// so a long statement (a paced copy of a large table) never lets it run out, and no other
/// instance takes over a job whose owner is alive. When the lease is lost (another instance
/// holds the job, or it ended), or two renewals in a row fail so that it is about to run out,
/// `work` is dropped there and then: its statements end with their connections (a binary
/// copy closes both, see `CopyEnds` in `copy/binary.rs`), and [`Error::JobLost`] is returned.
pub(crate) async fn keeping_lease(
    router: &ShardRouter,
    id: &str,
    owner: &str,
    work: impl std::future::Future<Output = Result<(), Error>>,
) -> Result<(), Error> {
    let lease = router.move_config().lease;
    let every = lease / 3;
    let keeper = async {
        let mut held_until = tokio::time::Instant::now() + lease;
        loop {
            tokio::time::sleep(every).await;
            let asked = tokio::time::Instant::now();
            let left = held_until.saturating_duration_since(asked);
            let renewal = router.catalog().renew_job_lease(id, owner, lease_ms(router));
            match tokio::time::timeout(left, renewal).await {
                Ok(Ok(Lease::Held { .. })) => held_until = asked + lease,
                Ok(Ok(Lease::Lost)) => return "another instance holds the job now, or it ended",
                Ok(Err(e)) => {
                    tracing::warn!(job = id, error = %e, "cannot renew a job's lease");
                    if held_until.saturating_duration_since(tokio::time::Instant::now()) <= every {
                        return "its lease is about to run out and cannot be renewed";
                    }
                }
                Err(_) => return "its lease ran out while renewing it",
            }
        }
    };
    tokio::select! {
        biased;
        ended = work => ended,
        why = keeper => {
            tracing::warn!(job = id, why, "stopping a job's work here: it lost its lease");
            Err(Error::JobLost(id.to_owned()))
        }
    }
}

/// A job's progress as stored.
pub(crate) fn encoded(progress: &impl Serialize) -> Result<String, Error> {
    serde_json::to_string(progress).map_err(|e| Error::Corrupt(e.to_string()))
}

/// A job this instance runs, as the catalog knows it: its lease, its progress, its end.
pub(crate) struct JobHandle<'m> {
    pub(crate) router: &'m ShardRouter,
    /// This instance's name in job leases.
    pub(crate) owner: &'m str,
    pub(crate) id: &'m str,
    /// The counter of the bytes the copies of jobs of its kind took ([`CopiedBytes::of`]).
    pub(crate) copied: &'m AtomicU64,
}

impl JobHandle<'_> {
    /// Counts `bytes` more copied by the job (for `/metrics`; its progress counts them too).
    pub(crate) fn count_copied(&self, bytes: u64) {
        self.copied.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Stores `progress` and renews the lease; `true` if an operator asked to cancel.
    /// [`Error::JobLost`] if another instance holds the job now.
    pub(crate) async fn heartbeat(&self, progress: &impl Serialize) -> Result<bool, Error> {
        let progress = encoded(progress)?;
        let router = self.router;
        match router.catalog().heartbeat_job(self.id, self.owner, &progress, lease_ms(router)).await? {
            Lease::Held { cancel } => Ok(cancel),
            Lease::Lost => Err(Error::JobLost(self.id.to_owned())),
        }
    }

    /// Ends the job as `state` (`done`, `failed`, `cancelled`) with `progress`.
    pub(crate) async fn end(&self, progress: &impl Serialize, state: &str, error: Option<&str>) -> Result<(), Error> {
        let progress = encoded(progress)?;
        self.router.catalog().end_job(self.id, self.owner, state, &progress, error).await?;
        Ok(())
    }

    /// Waits `moves.phase_pause` at a phase boundary (tests stop instances there).
    pub(crate) async fn pause(&self, progress: &impl Serialize, phase: Phase) {
        let pause = self.router.move_config().phase_pause;
        if !pause.is_zero() {
            tracing::info!(job = self.id, ?phase, "pausing at a phase boundary (moves.phase_pause)");
            let _ = self.heartbeat(progress).await;
            tokio::time::sleep(pause).await;
        }
    }

    /// Waits until `moves.cleanup_grace` after `switched_at_ms` (downloads still streaming from
    /// the old copy end), renewing the lease.
    pub(crate) async fn cleanup_grace(
        &self,
        progress: &impl Serialize,
        switched_at_ms: Option<i64>,
    ) -> Result<(), Error> {
        let router = self.router;
        let grace = router.move_config().cleanup_grace;
        let switched = switched_at_ms.unwrap_or_else(now_ms);
        let due = switched + i64::try_from(grace.as_millis()).unwrap_or(i64::MAX);
        loop {
            let now = now_ms();
            if now >= due {
                return Ok(());
            }
            self.heartbeat(progress).await?;
            let wait = u64::try_from(due - now).unwrap_or(0).min(lease_ms(router) as u64 / 3);
            tokio::time::sleep(Duration::from_millis(wait.max(1))).await;
        }
    }
}

/// A job with the phases of a move (a move, a redistribution), as [`drive`] runs it.
pub(crate) trait PhasedJob {
    /// The job's id.
    fn id(&self) -> &str;
    /// Where it stands.
    fn phase(&self) -> Phase;
    /// Stores the progress and renews the lease; `true` if an operator asked to cancel.
    async fn heartbeat(&self) -> Result<bool, Error>;
    /// Waits `moves.phase_pause` (tests).
    async fn pause(&self);
    /// The first, full copy.
    async fn copy(&mut self) -> Result<(), Error>;
    /// Copying what changed meanwhile.
    async fn catch_up(&mut self) -> Result<(), Error>;
    /// Fence, last delta, comparison, switch (the phase becomes `cleanup`).
    async fn cut_over(&mut self) -> Result<(), Error>;
    /// Removing the old copy after the grace period (the phase becomes `done`).
    async fn cleanup(&mut self) -> Result<(), Error>;
    /// Undoing everything before the switch (the phase becomes `rolled_back`).
    async fn roll_back(&mut self, why: &str) -> Result<(), Error>;
}

/// Runs `job` from its phase to its end (or until another instance holds it).
pub(crate) async fn drive(job: &mut impl PhasedJob) -> Result<(), Error> {
    loop {
        job.pause().await;
        let step = match job.phase() {
            Phase::Copy | Phase::CatchUp | Phase::CutOver => before_switch(job).await,
            Phase::Cleanup => job.cleanup().await,
            Phase::Done | Phase::RolledBack => return Ok(()),
        };
        match step {
            Ok(()) => {}
            Err(Error::JobLost(_)) => return Ok(()),
            Err(e) => return Err(e),
        }
    }
}

/// The phases before the switch, with retries; a cancellation or a failure that persists rolls
/// the job back.
async fn before_switch(job: &mut impl PhasedJob) -> Result<(), Error> {
    let mut failures = 0;
    loop {
        if job.heartbeat().await? {
            return job.roll_back("cancelled by an operator").await;
        }
        // Each attempt of a phase is a trace of its own (made only when traces are on).
        let phase = job.phase();
        let span = tracing::trace_span!(parent: None, "job.phase", job = job.id(), phase = ?phase);
        let step = match phase {
            Phase::Copy => tracing::Instrument::instrument(job.copy(), span).await,
            Phase::CatchUp => tracing::Instrument::instrument(job.catch_up(), span).await,
            Phase::CutOver => tracing::Instrument::instrument(job.cut_over(), span).await,
            _ => return Ok(()),
        };
        match step {
            Ok(()) => return Ok(()),
            Err(Error::JobLost(id)) => return Err(Error::JobLost(id)),
            Err(e) if job.phase() == Phase::Cleanup => return Err(e),
            Err(e) => {
                failures += 1;
                tracing::warn!(job = job.id(), phase = ?job.phase(), error = %e, failures, "move step failed");
                if failures >= ATTEMPTS {
                    return job.roll_back(&e.to_string()).await;
                }
                tokio::time::sleep(Duration::from_millis(200 * u64::from(failures))).await;
            }
        }
    }
}

/// On PostgreSQL, waits until no statement on the shard's database that began before now (the
/// fence was committed before this is called) is still running: a write that took its snapshot
/// before the fence and commits after it is then in the next pass. Reads are not waited for
/// (`SELECT`, and `COPY`, which a move runs only to read rows out or into a staging table): no
/// statement of the gateway writes through one, and another move's long, paced copy out of
/// this shard would otherwise hold this cut-over until it ended. SQLite needs no wait: a write
/// transaction there always sees the latest commit.
pub(crate) async fn wait_for_statements_before_the_fence(shard: &FencedShard<'_>) -> Result<(), Error> {
    if shard.db().engine != Engine::Postgres {
        return Ok(());
    }
    let fence: i64 = sqlx::query_scalar("SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS BIGINT)")
        .fetch_one(shard.pool())
        .on_shard(shard)
        .await?;
    let give_up = tokio::time::Instant::now() + IN_FLIGHT_WAIT;
    loop {
        let running: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() \
             AND state = 'active' AND CAST(EXTRACT(EPOCH FROM query_start) * 1000000 AS BIGINT) < $1 \
             AND NOT (ltrim(query) ILIKE 'select%' OR ltrim(query) ILIKE 'copy%')",
        )
        .bind(fence)
        .fetch_one(shard.pool())
        .on_shard(shard)
        .await?;
        if running == 0 {
            return Ok(());
        }
        if tokio::time::Instant::now() >= give_up {
            return Err(Error::MoveRefused(format!(
                "{running} statements that began before the fence on shard {} are still running",
                shard.id()
            )));
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}
