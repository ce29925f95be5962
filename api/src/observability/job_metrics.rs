//! Jobs in `/metrics`: how many jobs of each kind are in each state, read from the catalog (the
//! fleet's jobs, so every instance shows the same numbers: aggregate them with `max`, not
//! `sum`), and the bytes the copies of the move jobs this instance ran took, by kind (each
//! instance counts its own: `sum` them). A scrape never waits for the catalog: it shows the
//! counts last read and, when they are [`REFRESH`] old, starts one read in the background, so
//! however often `/metrics` is scraped the catalog is asked at most once per [`REFRESH`]. Labels
//! come from closed sets: the kinds of jobs and their four states (a row of another kind or state
//! is left out).
//!
//! The same read also gives, for each kind with running jobs, when the running job of that kind
//! whose progress is oldest last changed its progress (`jobs_running_progress_timestamp_seconds`:
//! a job whose row is rewritten with the same progress, a heartbeat, has not progressed; an alert
//! reads "stuck" from it), and the balancer's last recorded run: when it ran and whether it
//! failed (`balancer_last_run_timestamp_seconds`, `balancer_last_run_failed`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use shardgate_index_tables::{backfill::BACKFILL_JOB, drift_audit::DRIFT_AUDIT_JOB};
use shardgate_shard_router::ShardRouter;
use shardgate_shard_router::mover::{CopiedBytes, MOVE_JOB_KINDS};
use shardgate_shard_router::rebalancer::REBALANCE_JOB;

/// How old the job counts may get before a scrape reads them again.
pub const REFRESH: Duration = Duration::from_secs(5);

/// The states of a job.
pub const JOB_STATES: [&str; 4] = ["running", "done", "failed", "cancelled"];

/// Every kind of job.
pub fn job_kinds() -> impl Iterator<Item = &'static str> {
    MOVE_JOB_KINDS.into_iter().chain([REBALANCE_JOB, BACKFILL_JOB, DRIFT_AUDIT_JOB])
}

/// The [`Collector`] of job metrics.
#[derive(Debug)]
pub struct JobMetrics {
    router: Arc<ShardRouter>,
    copied: Arc<CopiedBytes>,
    counts: Arc<Mutex<JobCounts>>,
}

/// The job counts as last read.
#[derive(Debug, Default)]
struct JobCounts {
    /// When the last read began.
    read_at: Option<Instant>,
    /// Jobs by kind and state; `None` until a read succeeded.
    jobs: Option<HashMap<(&'static str, &'static str), u64>>,
    /// Each running job's kind, progress as last read, and when it last changed (ms since the
    /// Unix epoch): the row's `updated_at` of the read that first saw that progress.
    running: HashMap<String, (&'static str, String, i64)>,
    /// The balancer's last recorded run: when (ms since the Unix epoch), and whether it failed.
    balancer: Option<(i64, bool)>,
}

impl JobCounts {
    /// Takes the running jobs just read: a job whose progress is the one seen before keeps its
    /// time of change; a new or changed one takes its row's `updated_at`; ended jobs are
    /// forgotten (so the map holds only running jobs: bounded by the catalog's claims).
    fn see_running(&mut self, rows: Vec<shardgate_shard_router::catalog::JobRow>) {
        let mut running = HashMap::with_capacity(rows.len());
        for row in rows {
            let Some(kind) = job_kinds().find(|k| *k == row.kind) else { continue };
            let changed_at = match self.running.remove(&row.id) {
                Some((_, progress, at)) if progress == row.progress => at,
                _ => row.updated_at_ms,
            };
            running.insert(row.id, (kind, row.progress, changed_at));
        }
        self.running = running;
    }

    /// For each kind with running jobs, the oldest time of progress among them (ms).
    fn oldest_progress(&self) -> HashMap<&'static str, i64> {
        let mut oldest = HashMap::new();
        for (kind, _, at) in self.running.values() {
            oldest.entry(*kind).and_modify(|t: &mut i64| *t = (*t).min(*at)).or_insert(*at);
        }
        oldest
    }
}

impl JobMetrics {
    /// Job metrics of the catalog `router` reads, and of the bytes the copies counted in
    /// `copied` took.
    pub fn new(router: Arc<ShardRouter>, copied: Arc<CopiedBytes>) -> Self {
        Self { router, copied, counts: Arc::default() }
    }

    /// Starts a read of the job counts in the background if the last one began [`REFRESH`] ago
    /// or more (and a runtime is there to run it).
    fn refresh_if_due(&self) {
        {
            let mut counts = self.counts.lock();
            if counts.read_at.is_some_and(|at| at.elapsed() < REFRESH) {
                return;
            }
            counts.read_at = Some(Instant::now());
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let (router, counts) = (self.router.clone(), self.counts.clone());
        runtime.spawn(async move {
            match router.catalog().count_jobs().await {
                Ok(rows) => {
                    let mut jobs = HashMap::new();
                    for (kind, state, n) in rows {
                        let kind = job_kinds().find(|k| *k == kind);
                        let state = JOB_STATES.into_iter().find(|s| *s == state);
                        if let (Some(kind), Some(state)) = (kind, state) {
                            jobs.insert((kind, state), n);
                        }
                    }
                    counts.lock().jobs = Some(jobs);
                }
                Err(e) => tracing::warn!(error = %e, "cannot read the job counts for /metrics"),
            }
            match router.catalog().running_jobs().await {
                Ok(rows) => counts.lock().see_running(rows),
                Err(e) => tracing::warn!(error = %e, "cannot read the running jobs for /metrics"),
            }
            match router.catalog().balancer_runs(1).await {
                Ok(runs) => {
                    counts.lock().balancer = runs.first().map(|run| (run.at_ms, run.outcome == "failed"));
                }
                Err(e) => tracing::warn!(error = %e, "cannot read the balancer's last run for /metrics"),
            }
        });
    }
}

impl Collector for JobMetrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        self.refresh_if_due();
        let (jobs, oldest_progress, balancer) = {
            let counts = self.counts.lock();
            (counts.jobs.clone(), counts.oldest_progress(), counts.balancer)
        };
        if let Some(jobs) = jobs {
            let mut family = encoder.encode_descriptor(
                "jobs",
                "Jobs of each kind in each state, in the catalog (the fleet's; read at most every 5 s)",
                None,
                MetricType::Gauge,
            )?;
            for kind in job_kinds() {
                for state in JOB_STATES {
                    let n = jobs.get(&(kind, state)).copied().unwrap_or(0);
                    let labels = [("kind", kind), ("state", state)];
                    ConstGauge::new(i64::try_from(n).unwrap_or(i64::MAX)).encode(family.encode_family(&labels)?)?;
                }
            }
        }
        let mut family = encoder.encode_descriptor(
            "jobs_running_progress_timestamp_seconds",
            "For each kind with running jobs, when the one whose progress is oldest last changed it (Unix \
             time; a row rewritten with the same progress has not progressed)",
            None,
            MetricType::Gauge,
        )?;
        for kind in job_kinds() {
            if let Some(at) = oldest_progress.get(kind) {
                ConstGauge::new(*at as f64 / 1000.0).encode(family.encode_family(&[("kind", kind)])?)?;
            }
        }
        if let Some((at_ms, failed)) = balancer {
            let family = encoder.encode_descriptor(
                "balancer_last_run_timestamp_seconds",
                "When the balancer's last recorded run ran (Unix time; the fleet's, from the catalog)",
                None,
                MetricType::Gauge,
            )?;
            ConstGauge::new(at_ms as f64 / 1000.0).encode(family)?;
            let family = encoder.encode_descriptor(
                "balancer_last_run_failed",
                "1 when the balancer's last recorded run failed (the move it chose could not start)",
                None,
                MetricType::Gauge,
            )?;
            ConstGauge::new(i64::from(failed)).encode(family)?;
        }
        let mut family = encoder.encode_descriptor(
            "job_bytes_copied",
            "Bytes the copies of the move jobs this instance ran took, by kind of job (as their bytes_copied counts them)",
            None,
            MetricType::Counter,
        )?;
        for (kind, bytes) in self.copied.by_kind() {
            ConstCounter::new(bytes).encode(family.encode_family(&[("kind", kind)])?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shardgate_shard_router::catalog::JobRow;

    fn row(id: &str, kind: &str, progress: &str, updated_at_ms: i64) -> JobRow {
        JobRow {
            id: id.to_owned(),
            kind: kind.to_owned(),
            tenant: None,
            target: "t".to_owned(),
            state: "running".to_owned(),
            progress: progress.to_owned(),
            error: None,
            created_at_ms: 0,
            updated_at_ms,
            handovers: 0,
        }
    }

    #[test]
    fn a_job_rewritten_with_the_same_progress_keeps_the_time_it_last_progressed() {
        let mut counts = JobCounts::default();
        counts.see_running(vec![row("a", "tenant.move", "1", 1_000), row("b", "tenant.move", "5", 4_000)]);
        assert_eq!(counts.oldest_progress().get("tenant.move"), Some(&1_000));
        // a heartbeat: the same progress, a newer row
        counts.see_running(vec![row("a", "tenant.move", "1", 9_000), row("b", "tenant.move", "6", 9_000)]);
        assert_eq!(counts.oldest_progress().get("tenant.move"), Some(&1_000), "a has not progressed");
        // a progresses; b is the oldest now
        counts.see_running(vec![row("a", "tenant.move", "2", 12_000), row("b", "tenant.move", "6", 12_000)]);
        assert_eq!(counts.oldest_progress().get("tenant.move"), Some(&9_000));
        // the jobs end; a kind outside the closed set is left out
        counts.see_running(vec![row("c", "made.up", "1", 1)]);
        assert!(counts.oldest_progress().is_empty());
        assert!(counts.running.is_empty());
    }
}
