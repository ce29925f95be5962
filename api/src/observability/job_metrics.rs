//! Jobs in `/metrics`: how many jobs of each kind are in each state, read from the catalog (the
//! fleet's jobs, so every instance shows the same numbers: aggregate them with `max`, not
//! `sum`), and the bytes the copies of the move jobs this instance ran took, by kind (each
//! instance counts its own: `sum` them). A scrape never waits for the catalog: it shows the
//! counts last read and, when they are [`REFRESH`] old, starts one read in the background, so
//! however often `/metrics` is scraped the catalog is asked at most once per [`REFRESH`]. Labels
//! come from closed sets: the kinds of jobs and their four states (a row of another kind or state
//! is left out).

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
        });
    }
}

impl Collector for JobMetrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        self.refresh_if_due();
        let jobs = self.counts.lock().jobs.clone();
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
