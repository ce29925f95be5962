//! `GET /v1/admin/tenants/{id}/holdings`: what a tenant holds (records, blobs and their bytes,
//! index entries), counted on every shard when asked.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::server::extract::{Admin, ApiPath};
use crate::wire::error::{ApiError, tenant_in_path};
use crate::wire::openapi::errors;

/// Path of `/v1/admin/tenants/{id}/holdings`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct HoldingsPath {
    /// Tenant id.
    id: String,
}

/// What a tenant holds over every shard.
#[derive(Debug, Serialize, ToSchema)]
pub struct TenantHoldings {
    /// The tenant.
    pub tenant: String,
    /// Live records (every collection, every distribution).
    pub records: u64,
    /// Live blobs.
    pub blobs: u64,
    /// Their bytes.
    pub blob_bytes: u64,
    /// Live index entries (of every index of its collections).
    pub index_entries: u64,
    /// Whether every shard answered; when not, the counts miss the parts of `unreachable_shards`.
    pub complete: bool,
    /// Shards that did not answer in time (or are offline).
    pub unreachable_shards: Vec<String>,
}

errors!(GetHoldingsErrors: TenantNotFound, CatalogUnavailable);

/// What a tenant holds: its live records, blobs (and their bytes) and index entries, counted on
/// every shard now (a statement per shard through the tenant's own index; a shard that does not
/// answer within `storage.pool.probe_timeout` is named and left out). A tenant in a move is
/// counted where it is served from (the copy on its target is not counted twice).
#[utoipa::path(get, path = "/v1/admin/tenants/{id}/holdings", params(HoldingsPath), responses(
    (status = 200, description = "The tenant's holdings", body = TenantHoldings),
    GetHoldingsErrors,
))]
pub async fn get_tenant_holdings(
    Admin { app, .. }: Admin,
    ApiPath(path): ApiPath<HoldingsPath>,
) -> Result<axum::Json<TenantHoldings>, ApiError> {
    let id = tenant_in_path(&path.id)?;
    app.router.catalog().get_tenant(&id).await?.ok_or_else(ApiError::tenant_not_found)?;
    let topology = app.topology();
    let ((held, mut missing), (index_entries, more_missing)) =
        futures::join!(topology.tenant_holdings(&id), app.indexes.count_tenant_entries(&id));
    missing.extend(more_missing);
    missing.sort();
    missing.dedup();
    Ok(axum::Json(TenantHoldings {
        tenant: id.to_string(),
        records: held.records,
        blobs: held.blobs,
        blob_bytes: held.blob_bytes,
        index_entries,
        complete: missing.is_empty(),
        unreachable_shards: missing.iter().map(ToString::to_string).collect(),
    }))
}
