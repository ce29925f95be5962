//! `GET /v1/admin/balancer/plan`: what the balancer's policy would do now over the load picture
//! (`shardgate_shard_router::balance::plan`). It starts nothing.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use shardgate_shard_router::balance::policy::Subject;
use utoipa::{IntoParams, ToSchema};

use crate::server::extract::{Admin, ApiQuery};
use crate::wire::error::ApiError;
use crate::wire::openapi::errors;
use crate::wire::spans::{span_length, span_of};
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
    /// job ...`, `no move improves ...`).
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
    let default = app.balancer.window.max(Duration::from_secs(1));
    let length = span_length(&app.load, query.window.as_deref(), "window", default)?;
    let span = span_of(&app.load, length, None);
    let plan = shardgate_shard_router::balance::plan(&app.router, span, &app.balancer.policy()).await?;
    let decision = plan.decision;
    let planned = decision.choice.map(|choice| {
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
            predicted: plan
                .shards
                .iter()
                .zip(choice.predicted)
                .map(|(s, load)| PredictedLoad { shard: s.shard.clone(), statement_ms_per_s: load })
                .collect(),
        }
    });
    Ok(axum::Json(BalancerPlan {
        since: rfc3339(span.since_ms),
        until: rfc3339(span.until_ms),
        mean_statement_ms_per_s: decision.mean,
        overfull_above_ms_per_s: decision.overfull_above,
        hottest_excess_ms_per_s: decision.excess,
        shards: plan
            .shards
            .into_iter()
            .map(|s| PlanShard { shard: s.shard, statement_ms_per_s: s.load, held: s.held })
            .collect(),
        planned,
        reason: decision.reason,
    }))
}
