//! `/v1/admin/shard-map` and `/v1/admin/route`: the routing state and the explanation of one
//! routing decision.

use serde::{Deserialize, Serialize};
use shardgate_shard_router::records::RecordAddress;
use shardgate_shard_router::{CollectionName, Distribution, RecordKey, ShardState, Strategy, TenantId};
use utoipa::{IntoParams, ToSchema};

use crate::server::extract::{Admin, ApiQuery};
use crate::wire::error::{ApiError, Code};
use crate::wire::openapi::errors;

/// One shard in the map.
#[derive(Debug, Serialize, ToSchema)]
pub struct MapShard {
    /// Shard id.
    pub id: String,
    /// State.
    #[schema(value_type = String)]
    pub state: ShardState,
    /// vshards it owns.
    pub vshards: u64,
}

/// A run of consecutive vshards owned by one shard.
#[derive(Debug, Serialize, ToSchema)]
pub struct VshardRange {
    /// First vshard of the run.
    pub first: u32,
    /// Last vshard of the run (inclusive).
    pub last: u32,
    /// Owning shard.
    pub shard: String,
}

/// The shard map.
#[derive(Debug, Serialize, ToSchema)]
pub struct ShardMapView {
    /// Increases on every change of shards, vshards, tenants or pins.
    pub epoch: u64,
    /// Number of vshards.
    pub vshard_count: u32,
    /// Registered shards.
    pub shards: Vec<MapShard>,
    /// The vshard table as runs.
    pub vshard_ranges: Vec<VshardRange>,
    /// Number of tenants.
    pub tenants: u64,
    /// Number of pinned tenants.
    pub pinned_tenants: u64,
}

/// Read the shard map.
#[utoipa::path(get, path = "/v1/admin/shard-map", responses(
    (status = 200, description = "The current shard map", body = ShardMapView),
))]
pub async fn get_shard_map(Admin { app, .. }: Admin) -> Result<axum::Json<ShardMapView>, ApiError> {
    let view = app.router.with_map(|map| {
        let counts = map.vshards_per_shard();
        ShardMapView {
            epoch: map.epoch,
            vshard_count: map.vshard_count,
            shards: map
                .shards
                .iter()
                .zip(counts)
                .map(|(s, n)| MapShard { id: s.id.to_string(), state: s.state, vshards: n as u64 })
                .collect(),
            vshard_ranges: map
                .vshard_runs()
                .into_iter()
                .map(|(first, last, i)| VshardRange { first, last, shard: map.shards[usize::from(i)].id.to_string() })
                .collect(),
            tenants: map.tenants.len() as u64,
            pinned_tenants: map.tenants.values().filter(|t| t.pin.is_some()).count() as u64,
        }
    });
    Ok(axum::Json(view))
}

/// What to route.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct RouteQuery {
    /// Tenant id.
    tenant: String,
    /// Collection (optional).
    collection: Option<String>,
    /// Record key (optional).
    key: Option<String>,
}

/// A routing decision, explained.
#[derive(Debug, Serialize, ToSchema)]
pub struct RouteExplanation {
    /// Tenant.
    pub tenant: String,
    /// Collection, if given.
    pub collection: Option<String>,
    /// Key, if given.
    pub key: Option<String>,
    /// The collection's distribution (`tenant`: on the tenant's home shard).
    #[schema(value_type = String, example = "tenant")]
    pub distribution: Distribution,
    /// `lookup` (the tenant is pinned), `hash` (`h(tenant)` picks the vshard), `record_hash`
    /// (the record of a hash-distributed collection: `h(tenant, collection, key)` picks it) or
    /// `range` (the record of a range-distributed collection: the range holding the key).
    #[schema(value_type = String, example = "hash")]
    pub strategy: Strategy,
    /// The vshard `h(tenant)` picks, or for a record of a distributed collection
    /// `h(tenant, collection, key)` (`mod vshard_count`).
    pub vshard: u32,
    /// The physical shard.
    pub shard: String,
    /// The shard's state.
    #[schema(value_type = String, example = "active")]
    pub shard_state: ShardState,
    /// The map epoch of this decision.
    pub epoch: u64,
}

errors!(ExplainRouteErrors: InvalidQuery, TenantNotFound, NoShards);

/// Explain where a tenant's (collection's, record's) data lives.
#[utoipa::path(get, path = "/v1/admin/route", params(RouteQuery), responses(
    (status = 200, description = "The routing decision", body = RouteExplanation),
    ExplainRouteErrors,
))]
pub async fn explain_route(
    Admin { app, .. }: Admin,
    ApiQuery(query): ApiQuery<RouteQuery>,
) -> Result<axum::Json<RouteExplanation>, ApiError> {
    let invalid = |e: shardgate_shard_router::InvalidId| ApiError::new(Code::InvalidQuery, e.to_string());
    let tenant = TenantId::parse(&query.tenant).map_err(invalid)?;
    let collection = query.collection.as_deref().map(CollectionName::parse).transpose().map_err(invalid)?;
    let key = query.key.as_deref().map(RecordKey::parse).transpose().map_err(invalid)?;
    let (route, distribution) = match (&collection, &key) {
        (Some(collection), Some(key)) => {
            let addr = RecordAddress { tenant: &tenant, collection, key };
            (app.router.route_record(addr)?, app.router.distribution_of(&tenant, collection))
        }
        (Some(collection), None) => {
            (app.router.route_tenant(&tenant)?, app.router.distribution_of(&tenant, collection))
        }
        _ => (app.router.route_tenant(&tenant)?, Distribution::Tenant),
    };
    if distribution != Distribution::Tenant && key.is_none() {
        return Err(ApiError::new(
            Code::InvalidQuery,
            format!(
                "collection {} is distributed `{}`: give a key to route one of its records",
                collection.as_ref().map(ToString::to_string).unwrap_or_default(),
                distribution.as_str()
            ),
        ));
    }
    Ok(axum::Json(RouteExplanation {
        tenant: tenant.to_string(),
        collection: collection.map(|c| c.to_string()),
        key: key.map(|k| k.to_string()),
        distribution,
        strategy: route.strategy,
        vshard: route.vshard,
        shard: route.shard.to_string(),
        shard_state: route.shard_state,
        epoch: route.epoch,
    }))
}
