//! `GET /v1/tenants/{tenant}/usage`: what a tenant stores, for the tenant itself (its own token,
//! scope `read`), as the shards keep it exact. Which shards hold it is the operators' to know
//! (`GET /v1/admin/tenants/{id}/usage`).

use serde::{Deserialize, Serialize};
use shardgate_shard_router::usage::collections::shown_collection_count;
use shardgate_shard_router::usage::tenant_usage;
use utoipa::{IntoParams, ToSchema};

use crate::server::extract::{Bound, Read, TenantPath};
use crate::wire::envelope::UsageCounts;
use crate::wire::error::ApiError;
use crate::wire::openapi::errors;
use crate::wire::quotas::QuotaUses;

/// Path of `/v1/tenants/{tenant}/usage`.
#[derive(Debug, Deserialize, IntoParams)]
pub struct UsageRoute {
    /// Tenant id (must be the token's tenant).
    tenant: String,
}

impl TenantPath for UsageRoute {
    fn tenant(&self) -> &str {
        &self.tenant
    }
}

/// What the tenant stores.
#[derive(Debug, Serialize, ToSchema)]
pub struct UsageReport {
    /// The tenant.
    pub tenant: String,
    /// Its live data over every shard that answered.
    pub usage: UsageCounts,
    /// Whether every shard answered; when not, `usage` misses some of the tenant's data.
    pub complete: bool,
    /// Each of the tenant's quotas beside what it uses of it: a write that would take the
    /// tenant over one is refused.
    pub quotas: QuotaUses,
}

errors!(GetOwnUsageErrors: CatalogUnavailable);

/// What the tenant stores: live records and their bytes, live blobs and their bytes, live index
/// entries, each beside its quota (its tier's, with the tenant's own overrides applied; `null`
/// is unlimited). Kept by the shards in the same transaction as every write, so it is exact as
/// of the last acknowledged write; reading it counts no rows.
#[utoipa::path(get, path = "/v1/tenants/{tenant}/usage", params(UsageRoute), responses(
    (status = 200, description = "The tenant's usage", body = UsageReport),
    GetOwnUsageErrors,
))]
pub async fn get_usage(
    Bound { app, tenant, .. }: Bound<UsageRoute, Read>,
) -> Result<axum::Json<UsageReport>, ApiError> {
    let usage = tenant_usage(&app.router, &tenant).await?;
    let quotas = app.router.tenant_quotas(&tenant)?;
    Ok(axum::Json(UsageReport {
        tenant: tenant.to_string(),
        quotas: QuotaUses::new(
            &quotas,
            &usage.total,
            (
                shown_collection_count(&app.router, &tenant).await,
                app.daily_usage.valet_bytes_today(tenant.as_str()).await?,
            ),
        ),
        usage: usage.total.into(),
        complete: usage.unreachable.is_empty(),
    }))
}
