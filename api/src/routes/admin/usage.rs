//! `GET /v1/admin/tenants/{id}/usage`: what a tenant stores, as the shards keep it exact (in
//! the same transaction as every write), summed over the fleet, with each shard's part and each
//! quota beside what it limits.

use serde::{Deserialize, Serialize};
use shardgate_shard_router::usage::collections::shown_collection_count;
use shardgate_shard_router::usage::tenant_usage;
use utoipa::{IntoParams, ToSchema};

use crate::server::extract::{Admin, ApiPath};
use crate::wire::envelope::UsageCounts;
use crate::wire::error::{ApiError, tenant_in_path};
use crate::wire::openapi::errors;
use crate::wire::quotas::QuotaUses;

/// Path of `/v1/admin/tenants/{id}/usage`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct UsagePath {
    /// Tenant id.
    id: String,
}

/// A tenant's usage over the fleet.
#[derive(Debug, Serialize, ToSchema)]
pub struct TenantUsage {
    /// The tenant.
    pub tenant: String,
    /// The sum over the shards that answered.
    pub usage: UsageCounts,
    /// Each shard's part, for the shards holding some of it.
    pub shards: Vec<ShardUsage>,
    /// Whether every shard answered; when not, `usage` misses the parts of `unreachable_shards`.
    pub complete: bool,
    /// Shards that did not answer in time (or are offline).
    pub unreachable_shards: Vec<String>,
    /// Each of the tenant's quotas in force (its tier's, with its own overrides applied; `null`
    /// is unlimited) beside what it uses of it (`usage`).
    pub quotas: QuotaUses,
}

/// One shard's part of a tenant's usage.
#[derive(Debug, Serialize, ToSchema)]
pub struct ShardUsage {
    /// The shard.
    pub shard: String,
    /// What of the tenant's data counts there.
    pub usage: UsageCounts,
}

errors!(GetUsageErrors: TenantNotFound, CatalogUnavailable);

/// What a tenant stores (live records and their bytes, live blobs and their bytes, live index
/// entries), summed over the shards, with each shard's part. Read from the usage every shard
/// keeps (one short statement per shard, none of which counts rows; a shard that does not answer
/// within `storage.pool.probe_timeout` is named and left out). Each part counts where the shard
/// map places it: a tenant or vshard in a move counts on its source until the switch, then on its
/// target, never on both.
#[utoipa::path(get, path = "/v1/admin/tenants/{id}/usage", params(UsagePath), responses(
    (status = 200, description = "The tenant's usage", body = TenantUsage),
    GetUsageErrors,
))]
pub async fn get_tenant_usage(
    Admin { app, .. }: Admin,
    ApiPath(path): ApiPath<UsagePath>,
) -> Result<axum::Json<TenantUsage>, ApiError> {
    let id = tenant_in_path(&path.id)?;
    let usage = tenant_usage(&app.router, &id).await?;
    let quotas = app.router.tenant_quotas(&id)?;
    Ok(axum::Json(TenantUsage {
        quotas: QuotaUses::new(
            &quotas,
            &usage.total,
            (shown_collection_count(&app.router, &id).await, app.daily_usage.valet_bytes_today(id.as_str()).await?),
        ),
        tenant: id.to_string(),
        usage: usage.total.into(),
        shards: usage
            .shards
            .into_iter()
            .map(|part| ShardUsage { shard: part.shard.to_string(), usage: part.usage.into() })
            .collect(),
        complete: usage.unreachable.is_empty(),
        unreachable_shards: usage.unreachable.iter().map(ToString::to_string).collect(),
    }))
}
