//! `/v1/admin/vshards/rebalance` and `/v1/admin/shards/{id}/drain`: spreading vshards evenly
//! over the active shards, and emptying a shard, while traffic flows. The plan is
//! [`shardgate_shard_router::rebalance`]'s, the job that carries it out
//! [`shardgate_shard_router::rebalancer`]'s; each step is a move job like a tenant move.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use shardgate_shard_router::ShardState;
use shardgate_shard_router::rebalance::Balance;
use shardgate_shard_router::rebalancer::PlanView;
use utoipa::{IntoParams, ToSchema};

use crate::server::extract::{Admin, ApiJson, ApiPath};
use crate::wire::envelope::Job;
use crate::wire::error::{ApiError, Code, shard_in_path};
use crate::wire::openapi::errors;

/// How many moves a rebalance runs at once when the request does not say.
const DEFAULT_PARALLEL: u32 = 2;
/// The most moves a rebalance may run at once.
const MAX_PARALLEL: u32 = 16;

/// Body of `POST /v1/admin/vshards/rebalance` and `POST /v1/admin/shards/{id}/drain`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RebalanceRequest {
    /// Only compute and return the plan; move nothing (default `false`).
    #[serde(default)]
    pub dry_run: bool,
    /// `count` (default): every active shard ends with the same number of vshards, give or take
    /// one, moving no more vshards than that needs. `bytes`: balance the stored bytes (live
    /// record values and blobs) greedily, without moving a vshard twice.
    #[serde(default)]
    #[schema(value_type = Option<String>, example = "count")]
    pub balance: Option<Balance>,
    /// How many moves run at once, 1 to 16 (default 2).
    #[serde(default)]
    pub parallel: Option<u32>,
}

/// A vshard a plan moves.
#[derive(Debug, Serialize, ToSchema)]
pub struct PlannedVshardMove {
    /// The vshard.
    pub vshard: u32,
    /// The shard owning it now.
    pub from: String,
    /// The shard owning it afterwards.
    pub to: String,
}

/// A pinned tenant a plan moves (off a draining shard).
#[derive(Debug, Serialize, ToSchema)]
pub struct PlannedTenantMove {
    /// The tenant.
    pub tenant: String,
    /// The shard it is pinned to now.
    pub from: String,
    /// The shard it is pinned to afterwards.
    pub to: String,
}

/// A range of a range-distributed collection a plan moves (off a draining shard): the keys
/// from `from_key` up to the collection's next bound.
#[derive(Debug, Serialize, ToSchema)]
pub struct PlannedRangeMove {
    /// The tenant.
    pub tenant: String,
    /// The collection.
    pub collection: String,
    /// The range's first key.
    pub from_key: String,
    /// The shard holding it now.
    pub from: String,
    /// The shard holding it afterwards.
    pub to: String,
}

/// One shard's load before and after a plan.
#[derive(Debug, Serialize, ToSchema)]
pub struct PlannedLoad {
    /// The shard.
    pub shard: String,
    /// Its state (`active` shards receive, `draining` ones give everything away, `read_only`
    /// and `offline` ones keep what they have).
    #[schema(value_type = String, example = "active")]
    pub state: ShardState,
    /// Its load now: vshards owned (by count) or bytes stored (by bytes).
    pub before: u64,
    /// Its load after the plan, in the same unit.
    pub after: u64,
}

/// What a rebalance or drain moves.
#[derive(Debug, Serialize, ToSchema)]
pub struct RebalancePlan {
    /// `count` or `bytes`.
    #[schema(value_type = String, example = "count")]
    pub balance: Balance,
    /// The vshards that change owner, in vshard order (each at most once).
    pub vshards: Vec<PlannedVshardMove>,
    /// The pinned tenants that leave draining shards, in tenant id order.
    pub tenants: Vec<PlannedTenantMove>,
    /// The ranges of range-distributed collections that leave draining shards (each to the
    /// receiving shard with the least load), in tenant, collection and key order.
    pub ranges: Vec<PlannedRangeMove>,
    /// Every registered shard with its load before and after.
    pub loads: Vec<PlannedLoad>,
}

impl From<PlanView> for RebalancePlan {
    fn from(plan: PlanView) -> Self {
        Self {
            balance: plan.balance,
            vshards: plan
                .vshards
                .into_iter()
                .map(|m| PlannedVshardMove { vshard: m.vshard, from: m.from, to: m.to })
                .collect(),
            tenants: plan
                .tenants
                .into_iter()
                .map(|m| PlannedTenantMove { tenant: m.tenant, from: m.from, to: m.to })
                .collect(),
            ranges: plan
                .ranges
                .into_iter()
                .map(|m| PlannedRangeMove {
                    tenant: m.tenant,
                    collection: m.collection,
                    from_key: m.from_key,
                    from: m.from,
                    to: m.to,
                })
                .collect(),
            loads: plan
                .loads
                .into_iter()
                .map(|l| PlannedLoad { shard: l.shard, state: l.state, before: l.before, after: l.after })
                .collect(),
        }
    }
}

/// The answer to a rebalance or drain: the plan, and the job carrying it out.
#[derive(Debug, Serialize, ToSchema)]
pub struct RebalanceAnswer {
    /// What moves.
    pub plan: RebalancePlan,
    /// The job (`vshards.rebalance`) moving it: follow it at `/v1/admin/jobs/{id}`. `null` for
    /// a dry run and when the plan moves nothing.
    pub job: Option<Job>,
}

fn parallel(body: &RebalanceRequest) -> Result<u32, ApiError> {
    match body.parallel {
        None => Ok(DEFAULT_PARALLEL),
        Some(n @ 1..=MAX_PARALLEL) => Ok(n),
        Some(n) => Err(ApiError::new(Code::InvalidBody, format!("parallel: {n} is not between 1 and {MAX_PARALLEL}"))),
    }
}

errors!(RebalanceErrors: InvalidBody, InvalidJson, JobConflict, MoveRefused, NoShards, CatalogUnavailable);

/// Plan (`dry_run`) or carry out a rebalance of the vshards over the active shards: a newly
/// registered shard takes its share this way. Each moved vshard's data (the records and blobs of
/// the unpinned tenants it places, and the index entries it places) moves as a tenant does, with
/// the same checksums and a cut-over that fences only that vshard; at most `parallel` move at
/// once. One rebalance (or drain) runs at a time (409 `job_conflict`).
#[utoipa::path(post, path = "/v1/admin/vshards/rebalance", request_body = RebalanceRequest, responses(
    (status = 200, description = "The plan: a dry run, or nothing to move (`job` is null)", body = RebalanceAnswer),
    (status = 202, description = "Started; follow `job` at `/v1/admin/jobs/{id}`", body = RebalanceAnswer),
    RebalanceErrors,
))]
pub async fn rebalance(
    Admin { app, caller, request }: Admin,
    ApiJson(body): ApiJson<RebalanceRequest>,
) -> Result<Response, ApiError> {
    let parallel = parallel(&body)?;
    let plan = app.rebalancer.plan_rebalance(body.balance.unwrap_or(Balance::Count)).await?;
    if body.dry_run {
        return Ok(answer(plan, None));
    }
    let audit = caller.audit(&request, "vshards.rebalance", None, format!("{} vshards", plan.vshards.len()));
    let job = app.rebalancer.start_rebalance(&plan, parallel, None, &audit).await?;
    Ok(answer(plan, job.map(Job::from)))
}

/// Path of the shard to drain.
#[derive(Debug, Deserialize, IntoParams)]
pub struct DrainPath {
    /// Shard id.
    id: String,
}

errors!(DrainErrors: InvalidBody, InvalidJson, ShardNotFound, JobConflict, MoveRefused, CatalogUnavailable);

/// Drain a shard: set it `draining` (it keeps serving its data, and takes no vshard, tenant move
/// or rebalance share any more), then move every vshard it owns and every tenant pinned to it
/// to the active shards the plan chooses (balanced by `balance`). When the job is done the shard
/// holds nothing and can be deleted (`DELETE /v1/admin/shards/{id}`). With `dry_run`, only the
/// plan, and the state stays as it is. An `offline` shard cannot be drained (its data cannot be
/// read).
#[utoipa::path(post, path = "/v1/admin/shards/{id}/drain", params(DrainPath), request_body = RebalanceRequest, responses(
    (status = 200, description = "The plan: a dry run, or the shard holds nothing (`job` is null)", body = RebalanceAnswer),
    (status = 202, description = "Draining; follow `job` at `/v1/admin/jobs/{id}`", body = RebalanceAnswer),
    DrainErrors,
))]
pub async fn drain_shard(
    Admin { app, caller, request }: Admin,
    ApiPath(path): ApiPath<DrainPath>,
    ApiJson(body): ApiJson<RebalanceRequest>,
) -> Result<Response, ApiError> {
    let id = shard_in_path(&path.id)?;
    let parallel = parallel(&body)?;
    let balance = body.balance.unwrap_or(Balance::Count);
    let state = app.router.with_map(|map| map.shard(id.as_str()).map(|s| s.state));
    match state {
        None => return Err(ApiError::shard_not_found(id.as_str())),
        Some(ShardState::Offline) => {
            return Err(ApiError::new(
                Code::MoveRefused,
                format!("shard {id} is offline: its data cannot be read to move it"),
            ));
        }
        Some(_) => {}
    }
    let plan = app.rebalancer.plan_drain(&id, balance).await?;
    if body.dry_run {
        return Ok(answer(plan, None));
    }
    if state != Some(ShardState::Draining) {
        let audit = caller.audit(&request, "shard.state", None, format!("shard:{id} draining"));
        app.topology().set_shard_state(&id, ShardState::Draining, &audit).await?;
        app.announce_map_change().await;
    }
    let audit = caller.audit(&request, "shard.drain", None, format!("shard:{id}"));
    let job = app.rebalancer.start_rebalance(&plan, parallel, Some(&id), &audit).await?;
    tracing::info!(shard = %id, vshards = plan.vshards.len(), tenants = plan.tenants.len(), "draining a shard");
    Ok(answer(plan, job.map(Job::from)))
}

fn answer(plan: PlanView, job: Option<Job>) -> Response {
    let status = if job.is_some() { StatusCode::ACCEPTED } else { StatusCode::OK };
    (status, axum::Json(RebalanceAnswer { plan: plan.into(), job })).into_response()
}
