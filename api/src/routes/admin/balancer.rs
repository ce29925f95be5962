//! The balancer (`shardgate_shard_router::balance::runner`) through the admin API:
//!
//! - `GET /v1/admin/balancer`: its mode, settings, who runs it, its last runs and the pending
//!   proposals;
//! - `PUT /v1/admin/balancer/mode`: switch it `off`, to `propose` or to `apply` (audited);
//! - `POST /v1/admin/balancer/runs`: run it now;
//! - `POST /v1/admin/balancer/proposals/{id}/approve`: carry a proposal out, unless it is stale;
//! - `GET /v1/admin/balancer/plan`: what it would decide now over any span (starts nothing).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use shardgate_shard_router::balance::policy::{Choice, Decision, ShardInput, Subject};
use shardgate_shard_router::balance::{Mode, RunDecision};
use shardgate_shard_router::catalog::RunRow;
use utoipa::{IntoParams, ToSchema};

use crate::server::extract::{Admin, ApiJson, ApiPath, ApiQuery};
use crate::wire::envelope::Job;
use crate::wire::error::{ApiError, Code};
use crate::wire::openapi::errors;
use crate::wire::spans::span_length;
use crate::wire::timestamps::rfc3339;

/// Which span to plan on.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct PlanQuery {
    /// How far back the load is averaged (`10m`, `1h`). Default `balancer.window` (10 min); at
    /// least one window of `storage.load.window`, at most `storage.load.retention`.
    window: Option<String>,
}

/// A shard as the plan saw it.
#[derive(Debug, Serialize, ToSchema)]
pub struct PlanShard {
    /// The shard.
    pub shard: String,
    /// Its request load: statement time per second (ms/s) over the span.
    pub statement_ms_per_s: f64,
    /// The share of the span (0 to 1) it was overfull for, step by step: it sends only if that is
    /// at least `balancer.sustained`.
    pub hot_share: f64,
    /// Why it may neither send nor receive now (`it is draining`, `its breaker is open`, ...);
    /// `null` when it may.
    pub held: Option<String>,
}

/// A shard's load as the plan predicts it after the move.
#[derive(Debug, Serialize, ToSchema)]
pub struct PredictedLoad {
    /// The shard.
    pub shard: String,
    /// Its predicted request load (ms/s).
    pub statement_ms_per_s: f64,
}

/// What kind of thing a move moves.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MoveKind {
    /// A vshard, with the unpinned tenants it places (`POST /v1/admin/vshards/rebalance` moves
    /// vshards).
    Vshard,
    /// A tenant alone (`POST /v1/admin/tenants/{id}/move`).
    Tenant,
}

/// The move the plan chose.
#[derive(Debug, Serialize, ToSchema)]
pub struct PlannedMove {
    /// What it moves.
    pub kind: MoveKind,
    /// The vshard (kind `vshard`).
    pub vshard: Option<u32>,
    /// The tenant (kind `tenant`).
    pub tenant: Option<String>,
    /// From.
    pub from: String,
    /// To.
    pub to: String,
    /// The request load it carries (ms/s).
    pub statement_ms_per_s: f64,
    /// Every shard's predicted load after it.
    pub predicted: Vec<PredictedLoad>,
}

/// What the balancer would do now, and why.
#[derive(Debug, Serialize, ToSchema)]
pub struct BalancerPlan {
    /// The span's start, RFC 3339.
    pub since: String,
    /// Its end, RFC 3339 (the end of the last closed window).
    pub until: String,
    /// The fleet's mean request load (ms/s).
    pub mean_statement_ms_per_s: f64,
    /// Above this a shard is overfull: the mean plus `balancer.threshold`, and at least
    /// `balancer.min_load_ms_per_s` more (ms/s).
    pub overfull_above_ms_per_s: f64,
    /// The hottest shard's load above the mean (ms/s).
    pub hottest_excess_ms_per_s: f64,
    /// Every registered shard, in the map's order.
    pub shards: Vec<PlanShard>,
    /// The move it would make; `null` when none.
    #[serde(rename = "move")]
    pub planned: Option<PlannedMove>,
    /// Why: the move and its predicted effect, or why none (`balanced: ...`, `... is claimed by
    /// job ...`, `... cools down ...`, `... its breaker is open`, `no move improves ...`).
    pub reason: String,
}

errors!(PlanErrors: InvalidQuery, CatalogUnavailable);

/// What the balancer's policy would do now: each shard's request load (statement time per
/// second, averaged over `window`), the fleet's mean, which shard is overfull, and the one move
/// (a vshard, or a tenant that carries most of its shard) that lowers the hottest shard's excess
/// the most without making its target overfull, with the predicted load of every shard after
/// it, or why no move is worth making. Nothing moves: run the move it names to carry it out.
#[utoipa::path(get, path = "/v1/admin/balancer/plan", params(PlanQuery), responses(
    (status = 200, description = "The plan", body = BalancerPlan),
    PlanErrors,
))]
pub async fn get_balancer_plan(
    Admin { app, .. }: Admin,
    ApiQuery(query): ApiQuery<PlanQuery>,
) -> Result<axum::Json<BalancerPlan>, ApiError> {
    let default = app.balancer.config().window.max(std::time::Duration::from_secs(1));
    let length = span_length(&app.load, query.window.as_deref(), "window", default)?;
    let plan = app.balancer.plan(Some(length)).await?;
    Ok(axum::Json(plan_view(plan.span.since_ms, plan.span.until_ms, plan.shards, plan.decision)))
}

/// A decision over the span from `since_ms` to `until_ms` as the API shows it.
fn plan_view(since_ms: i64, until_ms: i64, shards: Vec<ShardInput>, decision: Decision) -> BalancerPlan {
    BalancerPlan {
        since: rfc3339(since_ms),
        until: rfc3339(until_ms),
        mean_statement_ms_per_s: decision.mean,
        overfull_above_ms_per_s: decision.overfull_above,
        hottest_excess_ms_per_s: decision.excess,
        planned: decision.choice.map(|choice| planned_move(&shards, choice)),
        shards: plan_shards(shards),
        reason: decision.reason,
    }
}

fn plan_shards(shards: Vec<ShardInput>) -> Vec<PlanShard> {
    shards
        .into_iter()
        .map(|s| PlanShard { shard: s.shard, statement_ms_per_s: s.load, hot_share: s.hot_share, held: s.held })
        .collect()
}

fn planned_move(shards: &[ShardInput], choice: Choice) -> PlannedMove {
    let (kind, vshard, tenant) = match choice.subject {
        Subject::Vshard { vshard } => (MoveKind::Vshard, Some(vshard), None),
        Subject::Tenant { tenant } => (MoveKind::Tenant, None, Some(tenant)),
    };
    PlannedMove {
        kind,
        vshard,
        tenant,
        from: choice.from,
        to: choice.to,
        statement_ms_per_s: choice.load,
        predicted: shards
            .iter()
            .zip(choice.predicted)
            .map(|(s, load)| PredictedLoad { shard: s.shard.clone(), statement_ms_per_s: load })
            .collect(),
    }
}

/// The balancer's mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum BalancerMode {
    /// It does not run.
    Off,
    /// Each run records its decision as a proposal; an operator approves it
    /// (`POST /v1/admin/balancer/proposals/{id}/approve`).
    Propose,
    /// Each run starts the move it decides on.
    Apply,
}

impl From<Mode> for BalancerMode {
    fn from(mode: Mode) -> Self {
        match mode {
            Mode::Off => Self::Off,
            Mode::Propose => Self::Propose,
            Mode::Apply => Self::Apply,
        }
    }
}

impl From<BalancerMode> for Mode {
    fn from(mode: BalancerMode) -> Self {
        match mode {
            BalancerMode::Off => Self::Off,
            BalancerMode::Propose => Self::Propose,
            BalancerMode::Apply => Self::Apply,
        }
    }
}

/// What came of a run.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunOutcome {
    /// No shard is overfull.
    Balanced,
    /// A shard is overfull but no move is worth making or may be made (see `reason`).
    Nothing,
    /// A move was chosen but held back: the most moves run already, or a rebalance or drain
    /// runs.
    Held,
    /// A move was proposed (`proposal` is `pending`), or stands proposed by an earlier run.
    Proposed,
    /// A move was started (`job`).
    Started,
    /// The move chosen could not start (see `reason`).
    Failed,
}

impl RunOutcome {
    fn parse(name: &str) -> Self {
        match name {
            "balanced" => Self::Balanced,
            "held" => Self::Held,
            "proposed" => Self::Proposed,
            "started" => Self::Started,
            "failed" => Self::Failed,
            _ => Self::Nothing,
        }
    }
}

/// A proposal's state.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProposalState {
    /// Waiting for an operator.
    Pending,
    /// Approved: its move was started (`job`).
    Approved,
    /// The load it was based on changed (a later run or the approval decided otherwise), or the
    /// balancer was switched to `apply`.
    Expired,
    /// Approved, but its move could not start (`settled` says why).
    Failed,
}

impl ProposalState {
    fn parse(name: &str) -> Self {
        match name {
            "pending" => Self::Pending,
            "approved" => Self::Approved,
            "expired" => Self::Expired,
            _ => Self::Failed,
        }
    }
}

/// One run of the balancer: its inputs, its decision and what came of it.
#[derive(Debug, Serialize, ToSchema)]
pub struct BalancerRun {
    /// Its id (a proposal's id).
    pub id: i64,
    /// When it ran, RFC 3339.
    pub at: String,
    /// The instance that ran it.
    pub instance: String,
    /// The mode it ran in.
    pub mode: BalancerMode,
    /// What came of it.
    pub outcome: RunOutcome,
    /// Its inputs (every shard's load as it saw it, attributed to where it lands: a moved
    /// vshard's load to its new owner, a running move's to its target), the move it chose with
    /// the predicted load after it, and why. A run held back or whose move failed says so in
    /// `reason`.
    #[serde(flatten)]
    pub decision: BalancerPlan,
    /// The proposal's state (runs in `propose` mode that proposed a move); `null` otherwise.
    pub proposal: Option<ProposalState>,
    /// Why the proposal was settled as it was.
    pub settled: Option<String>,
    /// When, RFC 3339.
    pub settled_at: Option<String>,
    /// The move job it (or the approval of its proposal) started: `/v1/admin/jobs/{id}`.
    pub job: Option<String>,
}

impl BalancerRun {
    fn of(run: RunRow) -> Result<Self, ApiError> {
        let RunDecision { since_ms, until_ms, shards, decision } = RunDecision::of(&run)?;
        let decision = Decision { reason: run.reason, ..decision };
        Ok(Self {
            id: run.id,
            at: rfc3339(run.at_ms),
            instance: run.instance,
            mode: Mode::parse(&run.mode).map_or(BalancerMode::Off, BalancerMode::from),
            outcome: RunOutcome::parse(&run.outcome),
            decision: plan_view(since_ms, until_ms, shards, decision),
            proposal: run.proposal.as_deref().map(ProposalState::parse),
            settled: run.settled,
            settled_at: run.settled_at_ms.map(rfc3339),
            job: run.job,
        })
    }
}

/// The balancer's settings (`[balancer]`).
#[derive(Debug, Serialize, ToSchema)]
pub struct BalancerSettings {
    /// The mode it starts in until switched.
    pub configured_mode: BalancerMode,
    /// How often it runs (s).
    pub interval_s: f64,
    /// The span the load is averaged over (s).
    pub window_s: f64,
    /// How long a moved vshard or tenant stays put (s).
    pub cooldown_s: f64,
    /// The most of its moves running at once.
    pub max_concurrent_moves: u32,
    /// How far above the mean a shard may be before it is overfull (0.1: 10%).
    pub threshold: f64,
    /// ... and at least this far (ms/s).
    pub min_load_ms_per_s: f64,
    /// The share of the hottest excess a move must remove.
    pub min_improvement: f64,
    /// A tenant carrying more than this share of its shard moves alone.
    pub tenant_share: f64,
    /// The share of the window a shard must have been overfull for to send anything.
    pub sustained: f64,
}

/// The balancer: its mode, who runs it, its last runs and the pending proposals.
#[derive(Debug, Serialize, ToSchema)]
pub struct BalancerView {
    /// The mode in force.
    pub mode: BalancerMode,
    /// Who switched it to that mode (`null`: it is the configured one).
    pub mode_switched_by: Option<String>,
    /// When, RFC 3339.
    pub mode_switched_at: Option<String>,
    /// The instance running it (holding its lease), if any.
    pub runner: Option<String>,
    /// Until when its lease runs, RFC 3339.
    pub lease_until: Option<String>,
    /// The instance that answered.
    pub this_instance: String,
    /// Its settings.
    pub settings: BalancerSettings,
    /// The pending proposals, oldest first.
    pub proposals: Vec<BalancerRun>,
    /// The last runs, newest first.
    pub runs: Vec<BalancerRun>,
}

/// How many runs to show.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct BalancerQuery {
    /// The most runs to show, newest first (1 to 200, default 20).
    limit: Option<u32>,
}

errors!(BalancerErrors: InvalidQuery, CatalogUnavailable);

/// The balancer: the mode in force (and who switched it), its settings, the instance running
/// it, the pending proposals, and its last runs, each with its inputs (every shard's windowed
/// request load and the mean), what it chose and the predicted effect, or why it did nothing.
#[utoipa::path(get, path = "/v1/admin/balancer", params(BalancerQuery), responses(
    (status = 200, description = "The balancer", body = BalancerView),
    BalancerErrors,
))]
pub async fn get_balancer(
    Admin { app, .. }: Admin,
    ApiQuery(query): ApiQuery<BalancerQuery>,
) -> Result<axum::Json<BalancerView>, ApiError> {
    let limit = match query.limit {
        None => 20,
        Some(n @ 1..=200) => n,
        Some(n) => return Err(ApiError::new(Code::InvalidQuery, format!("limit: {n} is not between 1 and 200"))),
    };
    Ok(axum::Json(view(&app, limit).await?))
}

async fn view(app: &crate::app::App, limit: u32) -> Result<BalancerView, ApiError> {
    let balancer = &app.balancer;
    let status = balancer.status().await?;
    let catalog = app.router.catalog();
    let runs = catalog.balancer_runs(limit).await?.into_iter().map(BalancerRun::of).collect::<Result<_, _>>()?;
    let proposals = catalog.pending_proposals().await?.into_iter().map(BalancerRun::of).collect::<Result<_, _>>()?;
    let config = balancer.config();
    let live_lease = status.row.lease_until.filter(|until| *until > shardgate_shard_router::now_ms());
    Ok(BalancerView {
        mode: status.mode.into(),
        mode_switched_by: status.row.mode.as_ref().and(status.row.mode_by),
        mode_switched_at: status.row.mode.as_ref().and(status.row.mode_at_ms).map(rfc3339),
        runner: live_lease.and(status.row.owner),
        lease_until: live_lease.map(rfc3339),
        this_instance: balancer.instance().to_owned(),
        settings: BalancerSettings {
            configured_mode: config.mode.into(),
            interval_s: config.interval.as_secs_f64(),
            window_s: config.window.as_secs_f64(),
            cooldown_s: config.cooldown.as_secs_f64(),
            max_concurrent_moves: config.max_concurrent_moves,
            threshold: config.threshold,
            min_load_ms_per_s: config.min_load_ms_per_s,
            min_improvement: config.min_improvement,
            tenant_share: config.tenant_share,
            sustained: config.sustained,
        },
        proposals,
        runs,
    })
}

/// The mode to switch to.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ModeRequest {
    /// `off`, `propose` or `apply`.
    pub mode: BalancerMode,
}

errors!(ModeErrors: InvalidBody, InvalidJson, CatalogUnavailable);

/// Switch the balancer's mode at runtime, for every instance (kept in the catalog; audited as
/// `balancer.mode`): `off` stops it, `propose` makes each run record its decision as a proposal
/// to approve, `apply` makes each run start the move it decides on (pending proposals expire).
#[utoipa::path(put, path = "/v1/admin/balancer/mode", request_body = ModeRequest, responses(
    (status = 200, description = "Switched; the balancer as it is now", body = BalancerView),
    ModeErrors,
))]
pub async fn set_balancer_mode(
    Admin { app, caller, request }: Admin,
    ApiJson(body): ApiJson<ModeRequest>,
) -> Result<axum::Json<BalancerView>, ApiError> {
    let mode = Mode::from(body.mode);
    let audit = caller.audit(&request, "balancer.mode", None, format!("balancer {}", mode.as_str()));
    app.balancer.set_mode(Some(mode), &audit).await?;
    Ok(axum::Json(view(&app, 20).await?))
}

errors!(RunErrors: BalancerOff, BalancerElsewhere, CatalogUnavailable);

/// Run the balancer now, on this instance (it takes the balancer's lease if no other instance
/// holds it): plans over the last `balancer.window` and, by the mode, proposes the move or starts
/// it. Answers the run recorded.
#[utoipa::path(post, path = "/v1/admin/balancer/runs", responses(
    (status = 200, description = "The run", body = BalancerRun),
    RunErrors,
))]
pub async fn run_balancer(Admin { app, .. }: Admin) -> Result<axum::Json<BalancerRun>, ApiError> {
    Ok(axum::Json(BalancerRun::of(app.balancer.run_once().await?)?))
}

/// The proposal to approve.
#[derive(Debug, Deserialize, IntoParams)]
pub struct ProposalPath {
    /// The proposal's id (its run's).
    id: String,
}

/// An approved proposal and the move it started.
#[derive(Debug, Serialize, ToSchema)]
pub struct Approval {
    /// The proposal, settled `approved`.
    pub proposal: BalancerRun,
    /// The move job: follow it at `/v1/admin/jobs/{id}`.
    pub job: Job,
}

errors!(ApproveErrors: ProposalNotFound, ProposalSettled, ProposalStale, JobConflict, MoveRefused, CatalogUnavailable);

/// Approve a pending proposal: the balancer plans again over the current load and, if it would
/// still choose this move, starts it (audited as `balancer.approve`, the move as
/// `balancer.move`). If the load it was based on has changed, the proposal expires and the
/// answer is 409 `proposal_stale`, saying what the balancer decides now.
#[utoipa::path(post, path = "/v1/admin/balancer/proposals/{id}/approve", params(ProposalPath), responses(
    (status = 202, description = "Approved; the move started", body = Approval),
    ApproveErrors,
))]
pub async fn approve_proposal(
    Admin { app, caller, request }: Admin,
    ApiPath(path): ApiPath<ProposalPath>,
) -> Result<Response, ApiError> {
    // Anything but a run's number names no proposal.
    let id: i64 = path.id.parse().map_err(|_| ApiError::new(Code::ProposalNotFound, "no such balancer proposal"))?;
    let audit = caller.audit(&request, "balancer.approve", None, format!("proposal:{id}"));
    let (run, job) = app.balancer.approve(id, &audit).await?;
    Ok((StatusCode::ACCEPTED, axum::Json(Approval { proposal: BalancerRun::of(run)?, job: Job::from(job) }))
        .into_response())
}
