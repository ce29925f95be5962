//! Carrying out a rebalance or a drain ([`Rebalancer`]): a job in the catalog (`vshards.rebalance`) that holds the
//! plan ([`crate::moves::rebalance`]) and starts one move job per step — a vshard move for every vshard
//! that changes owner, a tenant move for every pinned tenant that leaves a draining shard — at
//! most `parallel` at a time. Each step is an ordinary move job ([`crate::moves::mover`]) with its own
//! claim, lease, checksums and cut-over, so a step survives a crash on its own; the rebalance
//! job only follows its steps, and is itself taken over by another instance if the one running
//! it dies. Only one rebalance runs at a time.
//!
//! A step that fails (its move rolled back) does not stop the others; the rebalance then ends
//! `failed`, naming the steps that did. A step part of which another job holds (a tenant move
//! of a tenant its vshards place) waits for that job to end. Cancelling a rebalance starts no further step and
//! cancels the running ones (each rolls back unless it is past its switch).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::catalog::REBALANCE_SUBJECT;
use crate::catalog::{Audit, JobRow, Lease};
use crate::error::Error;
use crate::ids::{ShardId, TenantId};
use crate::map::hash::tenant_vshard;
use crate::map::{MapSnapshot, ShardState};
use crate::moves::mover::{MoveProgress, Mover};
use crate::moves::rebalance::{Balance, PinnedTenant, PlanError, PlanInput, PlanShard, ShardRole, Weights, plan};
use crate::router::ShardRouter;
use crate::storage::shard::OnShard;

/// The kind of a rebalance (or drain) job.
pub const REBALANCE_JOB: &str = "vshards.rebalance";

/// The most vshards one step moves (together: one fence, one switch). Steps are per pair of
/// shards, so a plan of `n` vshards from one shard to another runs as `n / 64` steps.
const VSHARDS_PER_STEP: usize = 64;

/// How often a rebalance looks at its steps.
const STEP_POLL: Duration = Duration::from_millis(100);

/// A plan with shard ids instead of indexes, as stored in the job and shown to operators.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanView {
    /// What was balanced.
    pub balance: Balance,
    /// vshards that change owner, in vshard order.
    pub vshards: Vec<PlannedVshard>,
    /// Pinned tenants that leave draining shards, in tenant id order.
    pub tenants: Vec<PlannedTenant>,
    /// Ranges of range-distributed collections that leave draining shards.
    #[serde(default)]
    pub ranges: Vec<PlannedRange>,
    /// Every shard taking part, with its load before and after (vshards by count, bytes by
    /// bytes).
    pub loads: Vec<ShardLoad>,
}

impl PlanView {
    /// Whether the plan moves nothing.
    pub fn is_empty(&self) -> bool {
        self.vshards.is_empty() && self.tenants.is_empty() && self.ranges.is_empty()
    }
}

/// A range of a range-distributed collection changing shard (the keys from `from` up to the
/// collection's next bound).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedRange {
    /// The tenant.
    pub tenant: String,
    /// The collection.
    pub collection: String,
    /// The range's first key.
    pub from_key: String,
    /// Its shard now.
    pub from: String,
    /// Its shard after the move.
    pub to: String,
}

/// A vshard changing owner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedVshard {
    /// The vshard.
    pub vshard: u32,
    /// Its owner now.
    pub from: String,
    /// Its owner after the move.
    pub to: String,
}

/// A pinned tenant changing shard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedTenant {
    /// The tenant.
    pub tenant: String,
    /// Its shard now.
    pub from: String,
    /// Its shard after the move.
    pub to: String,
}

/// One shard's load before and after a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardLoad {
    /// The shard.
    pub shard: String,
    /// Its state.
    pub state: ShardState,
    /// Its load now.
    pub before: u64,
    /// Its load after the plan.
    pub after: u64,
}

/// Where one step of a rebalance stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepState {
    /// Not started yet.
    Pending,
    /// Its move job runs, before its switch.
    Running,
    /// Switched; its move job removes the old copy after the grace period. It no longer counts
    /// against `parallel`.
    Cleanup,
    /// Moved.
    Done,
    /// Its move failed and rolled back (or could not start).
    Failed,
    /// Not carried out: the rebalance was cancelled.
    Cancelled,
}

/// One move of a rebalance.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Step {
    /// The vshards it moves, if a vshard move.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vshards: Vec<u32>,
    /// The pinned tenant it moves, if a tenant move; the tenant of the range it moves, if a
    /// range move.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The range it moves, if a range move: the collection and the range's first key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<(String, String)>,
    /// From shard.
    pub from: String,
    /// To shard.
    pub to: String,
    /// Where it stands.
    pub state: StepState,
    /// Its move job, once started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A rebalance's progress, stored as the job's `progress`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RebalanceProgress {
    /// What is balanced.
    pub balance: Balance,
    /// Moves run at once.
    pub parallel: u32,
    /// The shard being drained, if this is a drain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drain: Option<String>,
    /// Steps in each state.
    pub pending: u32,
    /// Steps whose move runs (before or after its switch).
    pub running: u32,
    /// Steps done.
    pub done: u32,
    /// Steps failed.
    pub failed: u32,
    /// Every step.
    pub steps: Vec<Step>,
}

impl RebalanceProgress {
    fn count(&mut self) {
        let count = |state| self.steps.iter().filter(|s| s.state == state).count() as u32;
        (self.pending, self.running, self.done, self.failed) = (
            count(StepState::Pending),
            count(StepState::Running) + count(StepState::Cleanup),
            count(StepState::Done),
            count(StepState::Failed),
        );
    }
}

/// Runs rebalance and drain jobs on this instance; their steps run on the [`Mover`].
pub struct Rebalancer {
    mover: Arc<Mover>,
    /// Jobs running here.
    running: Mutex<HashSet<String>>,
}

impl std::fmt::Debug for Rebalancer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rebalancer").finish_non_exhaustive()
    }
}

impl Rebalancer {
    /// A rebalancer whose steps run on `mover`.
    pub fn new(mover: Arc<Mover>) -> Arc<Self> {
        Arc::new(Self { mover, running: Mutex::new(HashSet::new()) })
    }

    fn router(&self) -> &Arc<ShardRouter> {
        &self.mover.router
    }

    /// Takes over the rebalance jobs whose holder stopped renewing its lease (it crashed or was
    /// killed) and runs them here; the api calls it at start-up and then every so often.
    pub async fn adopt_orphans(self: &Arc<Self>) -> Result<(), Error> {
        for job in self.router().catalog().running_jobs().await? {
            if job.kind == REBALANCE_JOB && !self.running.lock().contains(&job.id) {
                self.adopt(job).await;
            }
        }
        Ok(())
    }

    /// Runs `job` here if its lease can be taken.
    async fn adopt(self: &Arc<Self>, job: JobRow) {
        let lease = crate::moves::job::lease_ms(self.router());
        match self.router().catalog().take_job_lease(&job.id, &self.mover.owner, lease).await {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                tracing::warn!(job = job.id, error = %e, "cannot take a rebalance job's lease");
                return;
            }
        }
        if !self.running.lock().insert(job.id.clone()) {
            return;
        }
        tracing::info!(job = job.id, target = job.target, "running a rebalance");
        let this = self.clone();
        tokio::spawn(async move {
            let id = job.id.clone();
            let run = crate::moves::job::keeping_lease(this.router(), &id, &this.mover.owner, this.run(job));
            if let Err(e) = run.await {
                tracing::warn!(job = id, error = %e, "rebalance stopped; another attempt resumes it");
            }
            this.running.lock().remove(&id);
        });
    }

    /// Plans a rebalance of the current map by `balance` (see [`crate::moves::rebalance`]): `active`
    /// shards receive, `draining` ones give everything away, `read_only` and `offline` ones
    /// keep what they have. By bytes, a vshard weighs the live records' values and blobs of the
    /// unpinned tenants it places, a pinned tenant what it stores on its shard.
    pub async fn plan_rebalance(&self, balance: Balance) -> Result<PlanView, Error> {
        self.plan(balance, None).await
    }

    /// Plans the drain of shard `shard`: as [`Rebalancer::plan_rebalance`], with `shard` draining
    /// whatever its state says now.
    pub async fn plan_drain(&self, shard: &ShardId, balance: Balance) -> Result<PlanView, Error> {
        self.plan(balance, Some(shard)).await
    }

    async fn plan(&self, balance: Balance, draining: Option<&ShardId>) -> Result<PlanView, Error> {
        self.router().refresh().await?;
        let map = self.router().with_map(Clone::clone);
        let stored = match balance {
            Balance::Count => None,
            Balance::Bytes => Some(self.stored_bytes(&map).await?),
        };
        let shards: Vec<PlanShard> = (0..map.shards.len())
            .map(|i| {
                let index = i as crate::map::ShardIndex;
                let role = match map.shards[i].state {
                    _ if draining == Some(&map.shards[i].id) => ShardRole::Drains,
                    ShardState::Active => ShardRole::Receives,
                    ShardState::Draining => ShardRole::Drains,
                    ShardState::ReadOnly | ShardState::Offline => ShardRole::Keeps,
                };
                PlanShard { index, role }
            })
            .collect();
        let mut pinned: Vec<PinnedTenant> = map
            .tenants
            .iter()
            .filter_map(|(tenant, entry)| {
                let shard = entry.pin?;
                let bytes = stored.as_ref().and_then(|(_, pins)| pins.get(tenant.as_str()).copied()).unwrap_or(0);
                Some(PinnedTenant { tenant: tenant.clone(), shard, bytes })
            })
            .collect();
        pinned.sort_by(|a, b| a.tenant.cmp(&b.tenant));
        let weights = match &stored {
            None => Weights::Count,
            Some((vshards, _)) => Weights::Bytes(vshards),
        };
        let input = PlanInput { owners: &map.vshards, weights, shards: &shards, pinned: &pinned };
        let planned = plan(&input).map_err(|e| match e {
            PlanError::NoReceivingShard { .. } => Error::MoveRefused(e.to_string()),
            other => Error::Corrupt(format!("rebalance plan: {other}")),
        })?;
        let name = |index: crate::map::ShardIndex| map.shards[usize::from(index)].id.to_string();
        let ranges = plan_ranges(&map, &shards, &planned.after)?;
        Ok(PlanView {
            balance,
            vshards: planned
                .vshards
                .iter()
                .map(|m| PlannedVshard { vshard: m.vshard, from: name(m.from), to: name(m.to) })
                .collect(),
            tenants: planned
                .tenants
                .iter()
                .map(|m| PlannedTenant { tenant: m.tenant.to_string(), from: name(m.from), to: name(m.to) })
                .collect(),
            ranges,
            loads: map
                .shards
                .iter()
                .enumerate()
                .map(|(i, shard)| ShardLoad {
                    shard: shard.id.to_string(),
                    state: if draining == Some(&shard.id) { ShardState::Draining } else { shard.state },
                    before: planned.before.get(i).copied().unwrap_or(0),
                    after: planned.after.get(i).copied().unwrap_or(0),
                })
                .collect(),
        })
    }

    /// Bytes each vshard places (live record values and blobs of its unpinned tenants, and the
    /// records of hash-distributed collections it places, on the shard that owns it) and bytes
    /// each pinned tenant stores on its shard.
    async fn stored_bytes(&self, map: &MapSnapshot) -> Result<(Vec<u64>, HashMap<String, u64>), Error> {
        let mut vshards = vec![0u64; map.vshard_count as usize];
        let mut pins: HashMap<String, u64> = HashMap::new();
        for (id, state, db) in self.router().shard_dbs() {
            if state == ShardState::Offline {
                continue;
            }
            let shard = crate::storage::shard::FencedShard::new(&db, &id);
            for sql in [
                "SELECT tenant, CAST(SUM(LENGTH(value)) AS BIGINT) FROM records WHERE deleted = 0 GROUP BY tenant",
                "SELECT tenant, CAST(SUM(size) AS BIGINT) FROM blobs WHERE deleted = 0 GROUP BY tenant",
            ] {
                let rows: Vec<(String, i64)> = sqlx::query_as(sql).fetch_all(shard.pool()).on_shard(&shard).await?;
                for (tenant, bytes) in rows {
                    let Ok(route) = map.route_tenant(&tenant) else { continue };
                    if route.shard != id {
                        continue; // an old copy, not where the tenant lives
                    }
                    let bytes = u64::try_from(bytes).unwrap_or(0);
                    match route.strategy {
                        crate::map::Strategy::Lookup => *pins.entry(tenant).or_default() += bytes,
                        crate::map::Strategy::Hash => {
                            vshards[tenant_vshard(&tenant, map.vshard_count) as usize] += bytes;
                        }
                        // `route_tenant` routes home data only.
                        crate::map::Strategy::RecordHash | crate::map::Strategy::Range => {}
                    }
                }
            }
            // Records of hash-distributed collections weigh on the vshard their key places them by.
            let sql = "SELECT vshard, CAST(SUM(LENGTH(value)) AS BIGINT) FROM spread_records \
                       WHERE deleted = 0 AND vshard >= 0 GROUP BY vshard";
            let rows: Vec<(i64, i64)> = sqlx::query_as(sql).fetch_all(shard.pool()).on_shard(&shard).await?;
            for (vshard, bytes) in rows {
                let Ok(v) = usize::try_from(vshard) else { continue };
                let owned = map.vshards.get(v).is_some_and(|&owner| Some(owner) == map.shard_index(id.as_str()));
                if owned {
                    vshards[v] += u64::try_from(bytes).unwrap_or(0);
                }
            }
        }
        Ok((vshards, pins))
    }

    /// Starts carrying out `plan`, `parallel` moves at a time (a drain of `drain` if given):
    /// records the job (claiming the one rebalance slot) and runs it. `None` if the plan moves
    /// nothing.
    pub async fn start_rebalance(
        self: &Arc<Self>,
        plan: &PlanView,
        parallel: u32,
        drain: Option<&ShardId>,
        audit: &Audit,
    ) -> Result<Option<JobRow>, Error> {
        if plan.is_empty() {
            return Ok(None);
        }
        let step = |vshards, tenant, from: &str, to: &str| Step {
            vshards,
            tenant,
            range: None,
            from: from.to_owned(),
            to: to.to_owned(),
            state: StepState::Pending,
            job: None,
            error: None,
        };
        // The vshards of each pair of shards, in vshard order, in batches.
        let mut pairs: std::collections::BTreeMap<(&str, &str), Vec<u32>> = std::collections::BTreeMap::new();
        for m in &plan.vshards {
            pairs.entry((m.from.as_str(), m.to.as_str())).or_default().push(m.vshard);
        }
        let mut steps: Vec<Step> = Vec::new();
        for ((from, to), vshards) in pairs {
            steps.extend(vshards.chunks(VSHARDS_PER_STEP).map(|batch| step(batch.to_vec(), None, from, to)));
        }
        steps.extend(plan.tenants.iter().map(|m| step(Vec::new(), Some(m.tenant.clone()), &m.from, &m.to)));
        steps.extend(plan.ranges.iter().map(|m| Step {
            range: Some((m.collection.clone(), m.from_key.clone())),
            ..step(Vec::new(), Some(m.tenant.clone()), &m.from, &m.to)
        }));
        let mut progress = RebalanceProgress {
            balance: plan.balance,
            parallel: parallel.max(1),
            drain: drain.map(ToString::to_string),
            pending: 0,
            running: 0,
            done: 0,
            failed: 0,
            steps,
        };
        progress.count();
        let target = match drain {
            Some(shard) => format!(
                "drain {shard}: {} vshards, {} tenants, {} ranges",
                plan.vshards.len(),
                plan.tenants.len(),
                plan.ranges.len()
            ),
            None => format!(
                "rebalance by {:?}: {} vshards, {} tenants",
                plan.balance,
                plan.vshards.len(),
                plan.tenants.len()
            )
            .to_lowercase(),
        };
        let job = crate::moves::job::new_job(REBALANCE_JOB, None, target, &progress)?;
        self.router().catalog().start_claiming_job(&job, &[REBALANCE_SUBJECT.to_owned()], audit).await?;
        self.adopt(job.clone()).await;
        Ok(Some(job))
    }

    /// Follows a rebalance job until its steps have all ended.
    async fn run(self: &Arc<Self>, job: JobRow) -> Result<(), Error> {
        let mut progress: RebalanceProgress = serde_json::from_str(&job.progress)
            .map_err(|e| Error::Corrupt(format!("rebalance job {} progress: {e}", job.id)))?;
        let mut cancelling = false;
        loop {
            let encoded = serde_json::to_string(&progress).map_err(|e| Error::Corrupt(e.to_string()))?;
            let lease = crate::moves::job::lease_ms(self.router());
            match self.router().catalog().heartbeat_job(&job.id, &self.mover.owner, &encoded, lease).await? {
                Lease::Lost => return Ok(()),
                Lease::Held { cancel } if cancel && !cancelling => {
                    cancelling = true;
                    self.cancel_steps(&job.id, &mut progress).await;
                }
                Lease::Held { .. } => {}
            }
            self.follow_steps(&mut progress).await?;
            if !cancelling {
                self.start_steps(&job.id, &mut progress).await;
            }
            progress.count();
            if progress.pending == 0 && progress.running == 0 {
                let encoded = serde_json::to_string(&progress).map_err(|e| Error::Corrupt(e.to_string()))?;
                let failed: Vec<String> = progress
                    .steps
                    .iter()
                    .filter(|s| s.state == StepState::Failed)
                    .map(|s| format!("{}: {}", step_name(s), s.error.as_deref().unwrap_or("failed")))
                    .collect();
                let (state, error) = match (cancelling, failed.is_empty()) {
                    (true, _) => ("cancelled", Some("cancelled by an operator".to_owned())),
                    (false, true) => ("done", None),
                    (false, false) => ("failed", Some(format!("{} steps failed: {}", failed.len(), failed.join("; ")))),
                };
                self.router().catalog().end_job(&job.id, &self.mover.owner, state, &encoded, error.as_deref()).await?;
                tracing::info!(job = job.id, state, done = progress.done, failed = progress.failed, "rebalance ended");
                return Ok(());
            }
            tokio::time::sleep(STEP_POLL).await;
        }
    }

    /// Reads the state of every running step's move job.
    async fn follow_steps(&self, progress: &mut RebalanceProgress) -> Result<(), Error> {
        for step in progress.steps.iter_mut().filter(|s| matches!(s.state, StepState::Running | StepState::Cleanup)) {
            let Some(id) = step.job.clone() else { continue };
            let Some(child) = self.router().catalog().job(&id).await? else {
                step.state = StepState::Failed;
                step.error = Some(format!("its move job {id} is gone"));
                continue;
            };
            match child.state.as_str() {
                "running" => {
                    let phase = serde_json::from_str::<MoveProgress>(&child.progress).ok().map(|p| p.phase);
                    if phase == Some(crate::moves::job::Phase::Cleanup) {
                        step.state = StepState::Cleanup;
                    }
                }
                "done" => step.state = StepState::Done,
                "cancelled" => step.state = StepState::Cancelled,
                _ => {
                    step.state = StepState::Failed;
                    step.error = Some(child.error.unwrap_or_else(|| child.state.clone()));
                }
            }
        }
        Ok(())
    }

    /// Starts pending steps while fewer than `parallel` run.
    async fn start_steps(self: &Arc<Self>, parent: &str, progress: &mut RebalanceProgress) {
        let mut running = progress.steps.iter().filter(|s| s.state == StepState::Running).count() as u32;
        for step in progress.steps.iter_mut().filter(|s| s.state == StepState::Pending) {
            if running >= progress.parallel {
                break;
            }
            match self.start_step(parent, step).await {
                Ok(Some(job)) => {
                    step.job = Some(job);
                    step.error = None;
                    step.state = StepState::Running;
                    running += 1;
                }
                Ok(None) => step.state = StepState::Done,
                Err(Error::JobConflict { job, subject }) => {
                    // Another job (a tenant move) holds part of the step: it starts once that
                    // job has ended.
                    step.error = Some(format!("waiting for job {job}, which holds {subject}"));
                }
                Err(e) => {
                    tracing::warn!(parent, step = step_name(step), error = %e, "a rebalance step could not start");
                    step.state = StepState::Failed;
                    step.error = Some(e.to_string());
                }
            }
        }
    }

    /// Starts one step's move: its job id, or `None` if what it moves is where the step puts it
    /// already (an earlier run of this rebalance moved it and crashed before recording so).
    async fn start_step(self: &Arc<Self>, parent: &str, step: &Step) -> Result<Option<String>, Error> {
        let to = ShardId::parse(&step.to).map_err(|e| Error::Corrupt(format!("rebalance step: {e}")))?;
        let audit = Audit {
            actor: "system".to_owned(),
            tenant: step.tenant.clone(),
            action: "rebalance.step",
            target: step_name(step),
            request_id: format!("job-{parent}"),
            client_request_id: None,
            client_address: None,
        };
        let started = match (step.vshards.as_slice(), &step.tenant) {
            ([], Some(tenant)) if step.range.is_some() => {
                let (collection, from) = step.range.as_ref().map(|(c, f)| (c.as_str(), f.as_str())).unwrap_or_default();
                let corrupt = |e: crate::ids::InvalidId| Error::Corrupt(format!("rebalance step: {e}"));
                let tenant = TenantId::parse(tenant).map_err(corrupt)?;
                let collection = crate::ids::CollectionName::parse(collection).map_err(corrupt)?;
                // A range an earlier run of this step moved already has no keys left to move:
                // the split then changes nothing but the catalog, which holds it there already.
                match self.mover.split_range_for(&tenant, &collection, from, &to, Some(parent), &audit).await {
                    Ok(crate::moves::mover::RangeSplit::Switched(_)) => return Ok(None),
                    Ok(crate::moves::mover::RangeSplit::Moving(job)) => Ok(job),
                    Err(e) => Err(e),
                }
            }
            ([_, ..], _) => {
                // Those an earlier run of this step moved already stay where they are.
                let mut left = Vec::new();
                for &vshard in &step.vshards {
                    if self.router().resolve_vshard(vshard, crate::router::Access::Read)?.0 != to {
                        left.push(vshard);
                    }
                }
                if left.is_empty() {
                    return Ok(None);
                }
                self.mover.start_vshards(&left, &to, Some(parent), &audit).await
            }
            ([], Some(tenant)) => {
                let tenant = TenantId::parse(tenant).map_err(|e| Error::Corrupt(format!("rebalance step: {e}")))?;
                if self.router().route_tenant(&tenant)?.shard == to {
                    return Ok(None);
                }
                self.mover.start_tenant(&tenant, &to, Some(parent), &audit).await
            }
            ([], None) => return Err(Error::Corrupt("a rebalance step moves nothing".to_owned())),
        };
        match started {
            Ok(job) => Ok(Some(job.id)),
            // A move this rebalance started before a crash, not yet recorded as its step.
            Err(Error::JobConflict { job, subject }) => match self.router().catalog().job(&job).await? {
                Some(child) if parent_of(&child).as_deref() == Some(parent) => Ok(Some(child.id)),
                _ => Err(Error::JobConflict { job, subject }),
            },
            Err(e) => Err(e),
        }
    }

    /// Asks every running step's move to cancel, and cancels the pending steps.
    async fn cancel_steps(&self, parent: &str, progress: &mut RebalanceProgress) {
        let audit = Audit {
            actor: "system".to_owned(),
            tenant: None,
            action: "job.cancel",
            target: format!("steps of job:{parent}"),
            request_id: format!("job-{parent}"),
            client_request_id: None,
            client_address: None,
        };
        for step in &mut progress.steps {
            match (step.state, &step.job) {
                (StepState::Pending, _) => step.state = StepState::Cancelled,
                (StepState::Running, Some(id)) => {
                    if let Err(e) = self.router().catalog().request_job_cancel(id, &audit).await {
                        tracing::warn!(parent, job = id, error = %e, "cannot cancel a rebalance step");
                    }
                }
                _ => {}
            }
        }
    }
}

/// The ranges of range-distributed collections on shards the plan empties, each to the
/// receiving shard with the least load after the plan (ranges counted one each, after the
/// vshards' load), in tenant, collection and key order.
fn plan_ranges(map: &MapSnapshot, shards: &[PlanShard], after: &[u64]) -> Result<Vec<PlannedRange>, Error> {
    let mut load: Vec<(u64, usize)> = shards
        .iter()
        .enumerate()
        .filter(|(_, s)| s.role == ShardRole::Receives)
        .map(|(i, _)| (after.get(i).copied().unwrap_or(0), i))
        .collect();
    let drains =
        |index: crate::map::ShardIndex| shards.get(usize::from(index)).is_some_and(|s| s.role == ShardRole::Drains);
    let mut planned = Vec::new();
    let mut spread: Vec<_> = map.spread.iter().collect();
    spread.sort_by(|a, b| a.0.cmp(b.0));
    for (tenant, collections) in spread {
        let mut collections: Vec<_> = collections.iter().collect();
        collections.sort_by(|a, b| a.0.cmp(b.0));
        for (collection, spread) in collections {
            let crate::map::Spread::Range(bounds) = spread else { continue };
            for bound in bounds.iter().filter(|bound| drains(bound.shard)) {
                let Some(least) = load.iter_mut().min() else {
                    return Err(Error::MoveRefused(format!(
                        "collection {collection} of tenant {tenant} keeps a range on a shard being emptied, and no \
                         active shard can take it"
                    )));
                };
                least.0 += 1;
                planned.push(PlannedRange {
                    tenant: tenant.to_string(),
                    collection: collection.clone(),
                    from_key: bound.from.clone(),
                    from: map.shards[usize::from(bound.shard)].id.to_string(),
                    to: map.shards[least.1].id.to_string(),
                });
            }
        }
    }
    Ok(planned)
}

/// The rebalance job a move job is a step of.
fn parent_of(job: &JobRow) -> Option<String> {
    serde_json::from_str::<MoveProgress>(&job.progress).ok().and_then(|p| p.parent)
}

fn step_name(step: &Step) -> String {
    match (step.vshards.as_slice(), &step.tenant) {
        ([_, ..], _) => {
            format!("vshards:{} {} -> {}", crate::moves::mover::vshard_list(&step.vshards), step.from, step.to)
        }
        ([], Some(tenant)) => match &step.range {
            Some((collection, from)) => format!("range:{tenant}/{collection}@{from:?} {} -> {}", step.from, step.to),
            None => format!("tenant:{tenant} {} -> {}", step.from, step.to),
        },
        ([], None) => "nothing".to_owned(),
    }
}
