//! The balancer ([`Balancer`]): the custom-autoscaling pattern applied to shards. Every
//! `balancer.interval` (jittered), the one instance holding its lease in the catalog plans over
//! the load picture ([`super::plan`]: the collector's windowed averages and the policy's scaling
//! logic) and, by its mode, records the decision only, proposes the move for an operator to
//! approve, or starts it as an ordinary move job (the scaler), within its limits:
//!
//! - at most `balancer.max_concurrent_moves` of its moves run at once (until their switch: a
//!   move cleaning up its source during its grace no longer counts), and none while an
//!   operator's rebalance or drain runs;
//! - a vshard or tenant it moved does not move again within `balancer.cooldown`;
//! - what its moves carry counts on their targets while they run (the plan's context), so a run
//!   during a move does not move more off a shard that is about to cool.
//!
//! Every run is recorded with its inputs, its decision and the predicted effect, or why it did
//! nothing. A proposal stays pending while it is still valid and within a margin of what later
//! runs would choose ([`super::policy::Policy::keeps`]: hysteresis, so near-equal choices do not
//! replace each other); it expires when it is not (the load it was based on changed), and an
//! approval re-plans first: a stale proposal is refused ([`Error::ProposalStale`]) rather than
//! carried out.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::picture::Span;
use super::plan::{BalancerConfig, Context, InFlight, Mode, Plan, plan};
use super::policy::{Choice, Decision, ShardInput, Subject};
use crate::catalog::{Audit, BalancerRow, JobRow, REBALANCE_SUBJECT, RunRow, tenant_subject, vshard_subject};
use crate::clock::now_ms;
use crate::error::Error;
use crate::ids::{ShardId, TenantId};
use crate::moves::mover::Mover;
use crate::router::ShardRouter;

/// The actor of the audit entries of the moves the balancer starts on its own.
pub const BALANCER_ACTOR: &str = "balancer";

/// What a run records as its decision (`balancer_runs.decision`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunDecision {
    /// The span of the load read: from (ms since the Unix epoch).
    pub since_ms: i64,
    /// To.
    pub until_ms: i64,
    /// Each shard's load as the policy saw it.
    pub shards: Vec<ShardInput>,
    /// The policy's decision.
    pub decision: Decision,
}

impl RunDecision {
    /// The decision recorded in `run`.
    pub fn of(run: &RunRow) -> Result<Self, Error> {
        serde_json::from_str(&run.decision).map_err(|e| Error::Corrupt(format!("balancer run {}: {e}", run.id)))
    }
}

/// The balancer's state as operators see it.
#[derive(Debug, Clone)]
pub struct Status {
    /// The mode in force.
    pub mode: Mode,
    /// The catalog's row (who switched the mode, the lease).
    pub row: BalancerRow,
}

/// The balancer of one instance (every instance has one; the lease holder runs).
pub struct Balancer {
    mover: Arc<Mover>,
    config: BalancerConfig,
    /// The load meter's window (ms): spans end at a window's end.
    load_window_ms: i64,
    /// One run or approval at a time on this instance.
    turn: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Balancer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Balancer").field("config", &self.config).finish_non_exhaustive()
    }
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// The job claim of `subject`.
fn claim_of(subject: &Subject) -> Result<String, Error> {
    match subject {
        Subject::Vshard { vshard } => Ok(vshard_subject(*vshard)),
        Subject::Tenant { tenant } => {
            TenantId::parse(tenant).map(|t| tenant_subject(&t)).map_err(|e| Error::Corrupt(format!("tenant: {e}")))
        }
    }
}

/// The subject a job claim names, if it is a vshard's or a tenant's.
fn subject_of(claim: &str) -> Option<Subject> {
    match claim.split_once(':')? {
        ("vshard", n) => n.parse().ok().map(|vshard| Subject::Vshard { vshard }),
        ("tenant", t) => Some(Subject::Tenant { tenant: t.to_owned() }),
        _ => None,
    }
}

impl Balancer {
    /// The balancer of the instance whose moves `mover` runs, set by `config`, over load windows
    /// of `load_window`.
    pub fn new(mover: Arc<Mover>, config: BalancerConfig, load_window: Duration) -> Arc<Self> {
        Arc::new(Self { mover, config, load_window_ms: millis(load_window).max(1), turn: Default::default() })
    }

    /// Its configuration.
    pub fn config(&self) -> &BalancerConfig {
        &self.config
    }

    fn router(&self) -> &Arc<ShardRouter> {
        &self.mover.router
    }

    /// This instance's name in the lease.
    pub fn instance(&self) -> &str {
        &self.mover.owner
    }

    /// The mode in force (switched at runtime, or the configured one) and the catalog's row.
    pub async fn status(&self) -> Result<Status, Error> {
        let row = self.router().catalog().balancer().await?;
        let mode = row.mode.as_deref().and_then(Mode::parse).unwrap_or(self.config.mode);
        Ok(Status { mode, row })
    }

    /// Switches the mode to `mode` (`None`: back to the configured one), audited.
    pub async fn set_mode(&self, mode: Option<Mode>, audit: &Audit) -> Result<(), Error> {
        self.router().catalog().set_balancer_mode(mode.map(Mode::as_str), audit).await
    }

    /// The span of `length_ms` ending at the end of the last closed load window.
    pub fn span(&self, length_ms: i64) -> Span {
        Span::ending_before(now_ms(), self.load_window_ms, length_ms, None)
    }

    /// The span a run plans over: the last `balancer.window`, at least one load window.
    fn run_span(&self) -> Span {
        let length = millis(self.config.window).max(self.load_window_ms);
        self.span(length - length % self.load_window_ms)
    }

    /// The moves under way and the claims cooling down, from the catalog's record of runs.
    pub async fn context(&self) -> Result<Context, Error> {
        let cooldown = millis(self.config.cooldown);
        let mut context = Context::default();
        for a_move in self.router().catalog().balancer_moves(now_ms() - cooldown).await? {
            let run = &a_move.run;
            let Some(claim) = run.subject.clone() else { continue };
            let started = run.settled_at_ms.unwrap_or(run.at_ms);
            let until = context.cooling.entry(claim.clone()).or_insert(0);
            *until = (*until).max(started + cooldown);
            // Past its switch, the map places what it moved on its target already, and its
            // cleanup's grace no longer takes one of the moves it may run at once.
            if a_move.before_switch()
                && let (Some(subject), Ok(record)) = (subject_of(&claim), move_of(run))
            {
                context.in_flight.push(InFlight { subject, from: record.0, to: record.1 });
            }
        }
        Ok(context)
    }

    /// What a run would decide now over the last `length_ms` (default `balancer.window`).
    pub async fn plan(&self, length_ms: Option<i64>) -> Result<Plan, Error> {
        self.plan_knowing(length_ms, &self.context().await?).await
    }

    /// [`Balancer::plan`] with the moves in flight and cooldowns of `context` (its step is set
    /// here).
    async fn plan_knowing(&self, length_ms: Option<i64>, context: &Context) -> Result<Plan, Error> {
        let span = length_ms.map_or_else(|| self.run_span(), |l| self.span(l));
        // Steps of whole load windows, at most 120 over the span.
        let windows = (span.until_ms - span.since_ms) / self.load_window_ms;
        let context =
            Context { step_ms: self.load_window_ms * (windows + 119).div_euclid(120).max(1), ..context.clone() };
        plan(self.router(), span, &self.config.policy(), &context).await
    }

    /// One run, if this instance holds (or takes) the lease and the balancer is not off:
    /// plans, and records, proposes or starts by the mode. Returns the run recorded.
    pub async fn run_once(&self) -> Result<RunRow, Error> {
        let _turn = self.turn.lock().await;
        let status = self.status().await?;
        if status.mode == Mode::Off {
            return Err(Error::BalancerUnavailable { off: true, reason: "the balancer is off".to_owned() });
        }
        let lease = millis(self.config.interval) * 3;
        if !self.router().catalog().take_balancer_lease(self.instance(), lease).await? {
            let owner = status.row.owner.unwrap_or_default();
            return Err(Error::BalancerUnavailable {
                off: false,
                reason: format!("instance {owner} runs the balancer"),
            });
        }
        // One reading of the moves in flight serves the plan and the limit on them.
        let context = self.context().await?;
        let plan = self.plan_knowing(None, &context).await?;
        let mut run = self.decide(status.mode, &plan, context.in_flight.len()).await?;
        run.id = self.router().catalog().record_balancer_run(&run).await?;
        tracing::info!(run = run.id, mode = %run.mode, outcome = %run.outcome, reason = %run.reason, "balancer run");
        Ok(run)
    }

    /// What comes of `plan` in `mode`, with `running` of its moves under way: the run to record
    /// (a proposal, or a move started).
    async fn decide(&self, mode: Mode, plan: &Plan, running: usize) -> Result<RunRow, Error> {
        let record = RunDecision {
            since_ms: plan.span.since_ms,
            until_ms: plan.span.until_ms,
            shards: plan.shards.clone(),
            decision: plan.decision.clone(),
        };
        let mut run = RunRow {
            id: 0,
            at_ms: now_ms(),
            instance: self.instance().to_owned(),
            mode: mode.as_str().to_owned(),
            outcome: String::new(),
            reason: plan.decision.reason.clone(),
            decision: serde_json::to_string(&record).map_err(|e| Error::Corrupt(format!("balancer run: {e}")))?,
            subject: None,
            to_shard: None,
            proposal: None,
            settled: None,
            settled_at_ms: None,
            job: None,
        };
        let catalog = self.router().catalog();
        let pending = catalog.pending_proposals().await?;
        // In `propose` mode, a pending proposal that still stands is what the run decides.
        let kept = match mode {
            Mode::Propose => self.standing(&pending, plan),
            Mode::Off | Mode::Apply => None,
        };
        let decision = match &kept {
            Some((standing, choice)) => Decision {
                choice: Some(choice.clone()),
                reason: format!("{} (still proposed as proposal {})", plan.decision.reason, standing.id),
                ..plan.decision.clone()
            },
            None => plan.decision.clone(),
        };
        run.reason = decision.reason.clone();
        let record = RunDecision { decision: decision.clone(), ..record };
        run.decision = serde_json::to_string(&record).map_err(|e| Error::Corrupt(format!("balancer run: {e}")))?;
        let Some(choice) = &decision.choice else {
            run.outcome = if plan.decision.reason.starts_with("balanced") { "balanced" } else { "nothing" }.to_owned();
            self.expire(&pending, &format!("the load changed: the balancer now decides: {}", run.reason)).await?;
            return Ok(run);
        };
        let claim = claim_of(&choice.subject)?;
        run.subject = Some(claim.clone());
        run.to_shard = Some(choice.to.clone());
        if let Some(job) = catalog.job_claiming(REBALANCE_SUBJECT).await? {
            run.outcome = "held".to_owned();
            run.reason = format!("{}; held: a rebalance or drain is running (job {job})", run.reason);
            return Ok(run);
        }
        let limit = self.config.max_concurrent_moves as usize;
        if running >= limit {
            run.outcome = "held".to_owned();
            run.reason = format!(
                "{}; held: {running} of its moves run already (balancer.max_concurrent_moves {limit})",
                run.reason
            );
            return Ok(run);
        }
        match mode {
            // (`run_once` never decides while off.)
            Mode::Off | Mode::Propose => match kept.as_ref().map(|(standing, _)| standing) {
                Some(standing) => {
                    run.outcome = "proposed".to_owned();
                    let others: Vec<RunRow> = pending.iter().filter(|p| p.id != standing.id).cloned().collect();
                    self.expire(&others, &format!("the load changed: run now proposes: {}", plan.decision.reason))
                        .await?;
                }
                None => {
                    run.outcome = "proposed".to_owned();
                    run.proposal = Some("pending".to_owned());
                    self.expire(&pending, &format!("the load changed: run now proposes: {}", plan.decision.reason))
                        .await?;
                }
            },
            Mode::Apply => {
                self.expire(&pending, "the balancer was switched to apply mode").await?;
                let audit = Audit {
                    actor: BALANCER_ACTOR.to_owned(),
                    tenant: None,
                    action: "balancer.move",
                    target: claim.clone(),
                    request_id: String::new(),
                    client_request_id: None,
                    client_address: None,
                };
                match self.start(&choice.subject, &choice.to, &audit).await {
                    Ok(job) => {
                        run.outcome = "started".to_owned();
                        run.job = Some(job.id);
                    }
                    Err(e) => {
                        run.outcome = "failed".to_owned();
                        run.reason = format!("{}; the move could not start: {e}", run.reason);
                    }
                }
            }
        }
        Ok(run)
    }

    /// The oldest of the `pending` proposals that still stands against `plan`, with its move
    /// as a choice ([`super::policy::Policy::keeps`]).
    fn standing(&self, pending: &[RunRow], plan: &Plan) -> Option<(RunRow, Choice)> {
        let policy = self.config.policy();
        pending.iter().find_map(|p| {
            let subject = subject_of(p.subject.as_deref()?)?;
            let to = p.to_shard.as_deref()?;
            let choice = policy.keeps(&plan.shards, &plan.movables, &plan.decision, &subject, to).ok()?;
            Some((p.clone(), choice))
        })
    }

    async fn expire(&self, proposals: &[RunRow], why: &str) -> Result<(), Error> {
        for p in proposals {
            self.router().catalog().settle_proposal(p.id, ("pending", "expired"), why, None, None).await?;
        }
        Ok(())
    }

    /// Starts moving `subject` to shard `to`: an ordinary move job.
    async fn start(&self, subject: &Subject, to: &str, audit: &Audit) -> Result<JobRow, Error> {
        let to = ShardId::parse(to).map_err(|e| Error::Corrupt(format!("balancer target: {e}")))?;
        match subject {
            Subject::Vshard { vshard } => self.mover.start_vshards(&[*vshard], &to, None, audit).await,
            Subject::Tenant { tenant } => {
                let tenant = TenantId::parse(tenant).map_err(|e| Error::Corrupt(format!("tenant: {e}")))?;
                self.mover.start_tenant(&tenant, &to, None, audit).await
            }
        }
    }

    /// Approves proposal `id`: re-plans, and starts its move if a run would still choose it;
    /// otherwise the proposal expires and [`Error::ProposalStale`] says why.
    pub async fn approve(&self, id: i64, audit: &Audit) -> Result<(RunRow, JobRow), Error> {
        let _turn = self.turn.lock().await;
        let catalog = self.router().catalog();
        let run = catalog.balancer_run(id).await?.ok_or(Error::ProposalNotFound(id))?;
        let settled = |run: &RunRow| Error::ProposalSettled {
            id,
            state: run.proposal.clone().unwrap_or_else(|| "not a proposal".to_owned()),
            why: run.settled.clone().unwrap_or_else(|| format!("run {id} proposed nothing ({})", run.outcome)),
        };
        if run.proposal.as_deref() != Some("pending") {
            return Err(settled(&run));
        }
        let (Some(claim), Some(to)) = (run.subject.clone(), run.to_shard.clone()) else { return Err(settled(&run)) };
        let subject = subject_of(&claim).ok_or_else(|| Error::Corrupt(format!("balancer run {id}: {claim}")))?;
        let now = self.plan(None).await?;
        if let Err(why) = self.config.policy().keeps(&now.shards, &now.movables, &now.decision, &subject, &to) {
            let why = format!("the load it was based on has changed: {why}");
            catalog.settle_proposal(id, ("pending", "expired"), &why, None, None).await?;
            return Err(Error::ProposalStale(format!("proposal {id} is stale: {why}")));
        }
        if !catalog
            .settle_proposal(id, ("pending", "approved"), &format!("approved by {}", audit.actor), None, Some(audit))
            .await?
        {
            let run = catalog.balancer_run(id).await?.ok_or(Error::ProposalNotFound(id))?;
            return Err(settled(&run));
        }
        let move_audit = Audit { action: "balancer.move", target: claim.clone(), ..audit.clone() };
        match self.start(&subject, &to, &move_audit).await {
            Ok(job) => {
                catalog
                    .settle_proposal(
                        id,
                        ("approved", "approved"),
                        &format!("approved by {}", audit.actor),
                        Some(&job.id),
                        None,
                    )
                    .await?;
                let run = catalog.balancer_run(id).await?.ok_or(Error::ProposalNotFound(id))?;
                Ok((run, job))
            }
            Err(e) => {
                catalog
                    .settle_proposal(id, ("approved", "failed"), &format!("the move could not start: {e}"), None, None)
                    .await?;
                Err(e)
            }
        }
    }

    /// Runs every `balancer.interval` (jittered by up to a tenth) while the balancer is alive.
    pub fn spawn(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let balancer = Arc::downgrade(self);
        let interval = self.config.interval;
        tokio::spawn(async move {
            loop {
                // Up to a tenth more, so that instances started together do not ask at once.
                let jitter = interval.mul_f64((uuid::Uuid::new_v4().as_u128() % 1000) as f64 / 10_000.0);
                tokio::time::sleep(interval + jitter).await;
                let Some(this) = balancer.upgrade() else { return };
                match this.run_once().await {
                    Ok(_) | Err(Error::BalancerUnavailable { .. }) => {}
                    Err(e) => tracing::warn!(error = %e, "balancer run failed"),
                }
            }
        })
    }

    /// Gives up this instance's lease, so another instance runs the balancer at once.
    pub async fn release(&self) -> Result<(), Error> {
        self.router().catalog().release_balancer_lease(self.instance()).await
    }
}

/// Where the move run `run` chose goes: from, to.
fn move_of(run: &RunRow) -> Result<(String, String), Error> {
    let from = RunDecision::of(run)?.decision.choice.map(|c| c.from).unwrap_or_default();
    Ok((from, run.to_shard.clone().unwrap_or_default()))
}
