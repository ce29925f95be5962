//! `/v1/admin/tenants[/{id}]`: create, list, read, update and delete tenants.

use axum::http::StatusCode;
use axum::response::Response;
use serde::{Deserialize, Serialize};
use shardgate_gatekeeper::throttle::RateLimit;
use shardgate_shard_router::catalog::{TENANT_DELETE_ACTION, TenantChange, TenantRow};
use shardgate_shard_router::usage::every_tenant_usage;
use shardgate_shard_router::usage::quotas::QuotaOverrides;
use shardgate_shard_router::{Access, ShardId, TenantId, TenantRateLimit, Tier};
use utoipa::{IntoParams, ToSchema};

use crate::app::App;
use crate::server::extract::{Admin, ApiJson, ApiPath, ApiQuery};
use crate::wire::envelope::{UsageCounts, created};
use crate::wire::error::{ApiError, Code, tenant_in_path};
use crate::wire::openapi::errors;
use crate::wire::pagination::{Page, decode_cursor};
use crate::wire::quotas::{QuotaLimits, TenantQuotas};
use crate::wire::timestamps::rfc3339;

/// A tenant.
#[derive(Debug, Serialize, ToSchema)]
pub struct Tenant {
    /// Tenant id.
    pub id: String,
    /// Display name.
    pub name: String,
    /// `free`, `standard` or `premium`.
    #[schema(value_type = String, example = "standard")]
    pub tier: Tier,
    /// The tenant's home shard (where its records live).
    pub shard: Option<String>,
    /// Whether the home shard is a pin (lookup) rather than the hash.
    pub pinned: bool,
    /// The tenant's own rate limit, overriding its tier's (null: the tier's applies).
    pub rate_limit: Option<RateLimit>,
    /// The rate limit in force: the tenant's own, or its tier's.
    pub effective_rate_limit: RateLimit,
    /// The tenant's own quotas over its tier's (null: none, its tier's apply).
    #[schema(value_type = Option<TenantQuotas>)]
    pub quotas: Option<QuotaOverrides>,
    /// The quotas in force: its tier's (set through `PUT /v1/admin/tiers/{tier}/quotas`, else
    /// configured, as this instance's map has them) with its own applied.
    pub effective_quotas: QuotaLimits,
    /// Creation time, RFC 3339.
    pub created_at: String,
    /// Last change, RFC 3339.
    pub updated_at: String,
    /// What the tenant stores, summed over the shards that answered: only in a list asked for
    /// with `include=usage`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<UsageCounts>,
    /// Whether every shard answered the read of `usage` (only with `usage`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage_complete: Option<bool>,
}

fn tenant_view(app: &App, row: TenantRow) -> Tenant {
    let home = row
        .pinned_shard
        .as_ref()
        .map(ShardId::to_string)
        .or_else(|| app.router.route_tenant(&row.id).ok().map(|r| r.shard.to_string()));
    let own = row.rate_limit.map(|r| RateLimit { per_second: r.per_second, burst: r.burst });
    let tier_quotas = app.router.with_map(|map| map.quotas.of_tier(row.tier, app.router.configured_tier_quotas()));
    let quotas = row.quotas.map_or(tier_quotas, |own| own.apply(tier_quotas));
    Tenant {
        quotas: row.quotas,
        effective_quotas: quotas.into(),
        effective_rate_limit: own.unwrap_or_else(|| app.gate.limiter.config().for_tier(row.tier.as_str())),
        rate_limit: own,
        pinned: row.pinned_shard.is_some(),
        shard: home,
        id: row.id.to_string(),
        name: row.name,
        tier: row.tier,
        created_at: rfc3339(row.created_at_ms),
        updated_at: rfc3339(row.updated_at_ms),
        usage: None,
        usage_complete: None,
    }
}

/// Body of `POST /v1/admin/tenants`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateTenant {
    /// Tenant id: `[a-z0-9][a-z0-9-]{0,62}`.
    #[schema(value_type = String, example = "acme")]
    pub id: TenantId,
    /// Display name (default: the id).
    pub name: Option<String>,
    /// Tier (default `standard`).
    #[schema(value_type = Option<String>, example = "standard")]
    pub tier: Option<Tier>,
    /// Pin the tenant to this shard (lookup strategy) instead of hashing it.
    #[schema(value_type = Option<String>)]
    pub shard: Option<ShardId>,
    /// The tenant's own rate limit (default: its tier's).
    pub rate_limit: Option<RateLimit>,
}

/// Body of `PATCH /v1/admin/tenants/{id}`. Moving a tenant to another shard is a separate
/// operation (it moves data).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateTenant {
    /// New display name.
    pub name: Option<String>,
    /// New tier.
    #[schema(value_type = Option<String>)]
    pub tier: Option<Tier>,
    /// The tenant's own rate limit; `null` removes it (the tier's applies again), absent leaves
    /// it as it is.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<RateLimit>, nullable)]
    pub rate_limit: Option<Option<RateLimit>>,
    /// The tenant's own quotas, replacing those it has: each key a number (its quota) or `null`
    /// (unlimited for it), a key left out keeps its tier's; `null` (or `{}`) removes them all,
    /// absent leaves them as they are. Every instance holds the tenant to them within one
    /// catalog poll.
    #[serde(default, deserialize_with = "own_quotas")]
    #[schema(value_type = Option<TenantQuotas>, nullable)]
    pub quotas: Option<Option<QuotaOverrides>>,
}

/// A field that may be absent (`None`), `null` (`Some(None)`) or a value.
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// `quotas` of an update: absent (`None`), `null` (`Some(None)`) or an object of overrides (an
/// array, which serde would read into the fields in order, is refused).
fn own_quotas<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<QuotaOverrides>>, D::Error> {
    use serde::de::Error as _;
    let Some(object) = Option::<serde_json::Map<String, serde_json::Value>>::deserialize(d)? else {
        return Ok(Some(None));
    };
    serde_json::from_value(serde_json::Value::Object(object)).map(|own| Some(Some(own))).map_err(D::Error::custom)
}

/// Checks a rate limit from a request body and converts it for the catalog.
fn tenant_rate_limit(limit: RateLimit) -> Result<TenantRateLimit, ApiError> {
    let limit = limit.validate().map_err(|e| ApiError::new(Code::InvalidBody, format!("rate_limit: {e}")))?;
    Ok(TenantRateLimit { per_second: limit.per_second, burst: limit.burst })
}

/// Path of one tenant.
#[derive(Debug, Deserialize, IntoParams)]
pub struct TenantPath {
    /// Tenant id.
    id: String,
}

/// Paging of the tenant list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct TenantListQuery {
    /// Page size: default 100, capped at 1000.
    #[param(minimum = 1)]
    limit: Option<u32>,
    /// `next_cursor` of the previous page.
    cursor: Option<String>,
    /// `usage`: each tenant with what it stores (`usage`, `usage_complete`), read from every
    /// shard's kept usage (one statement per shard, whichever page is asked for).
    #[param(inline)]
    include: Option<TenantInclude>,
}

/// What a tenant list adds to each tenant.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TenantInclude {
    /// What the tenant stores.
    Usage,
}

const MAX_NAME_CHARS: usize = 200;

fn check_name(name: &str) -> Result<(), ApiError> {
    let control = |c: char| c.is_control() || shardgate_shard_router::ids::is_bidi_control(c);
    if name.trim().is_empty() || name.chars().count() > MAX_NAME_CHARS || name.chars().any(control) {
        return Err(ApiError::new(
            Code::InvalidBody,
            "name must be 1–200 characters without control characters (bidirectional ones too)",
        ));
    }
    Ok(())
}

errors!(CreateTenantErrors: InvalidBody, InvalidJson, TenantExists, UnknownShard, NoShards, JobConflict, CatalogUnavailable);

/// Create a tenant.
#[utoipa::path(post, path = "/v1/admin/tenants", request_body = CreateTenant, responses(
    (status = 201, description = "Created", body = Tenant),
    CreateTenantErrors,
))]
pub async fn create_tenant(
    Admin { app, caller, request }: Admin,
    ApiJson(body): ApiJson<CreateTenant>,
) -> Result<Response, ApiError> {
    let name = body.name.unwrap_or_else(|| body.id.to_string());
    check_name(&name)?;
    let target = format!("tenant:{}", body.id);
    let audit = caller.audit(&request, "tenant.create", Some(body.id.as_str()), target);
    let rate_limit = body.rate_limit.map(tenant_rate_limit).transpose()?;
    let tier = body.tier.unwrap_or_default();
    // A re-created tenant starts empty: index entries an earlier tenant of this id left behind
    // (written by an instance still routing on an old map while it was deleted) go first, from
    // every shard. An id never deleted has none, so its creation touches no shard but its own
    // (one unreachable shard does not stop it). The router purges records and blobs.
    let catalog = app.router.catalog();
    if catalog.get_tenant(&body.id).await?.is_none() && catalog.tenant_was_deleted(&body.id).await? {
        app.indexes.purge_tenant(&body.id).await?;
    }
    let row = app.topology().create_tenant(body.id, name, tier, rate_limit, body.shard, &audit).await?;
    app.announce_map_change().await;
    Ok(created(&format!("/v1/admin/tenants/{}", row.id), tenant_view(&app, row)))
}

errors!(ListTenantsErrors: InvalidQuery, InvalidCursor);

/// List tenants ordered by id; with `include=usage`, each with what it stores.
#[utoipa::path(get, path = "/v1/admin/tenants", params(TenantListQuery), responses(
    (status = 200, description = "A page of tenants", body = Page<Tenant>),
    ListTenantsErrors,
))]
pub async fn list_tenants(
    Admin { app, .. }: Admin,
    ApiQuery(query): ApiQuery<TenantListQuery>,
) -> Result<axum::Json<Page<Tenant>>, ApiError> {
    let limit = app.page_limit(query.limit)?;
    let after = query.cursor.as_deref().map(decode_cursor).transpose()?;
    let rows = app.router.catalog().list_tenants(after.as_deref(), limit + 1).await?;
    let usage = match query.include {
        Some(TenantInclude::Usage) => Some(every_tenant_usage(&app.router).await?),
        None => None,
    };
    Ok(axum::Json(Page::from_overfetch(
        rows,
        limit,
        |r| r.id.to_string(),
        |r| {
            let id = r.id.clone();
            let mut tenant = tenant_view(&app, r);
            if let Some(fleet) = &usage {
                tenant.usage = Some(fleet.tenants.get(&id).copied().unwrap_or_default().into());
                tenant.usage_complete = Some(fleet.unreachable.is_empty());
            }
            tenant
        },
    )))
}

errors!(GetTenantErrors: TenantNotFound);

/// Read a tenant.
#[utoipa::path(get, path = "/v1/admin/tenants/{id}", params(TenantPath), responses(
    (status = 200, description = "The tenant", body = Tenant),
    GetTenantErrors,
))]
pub async fn get_tenant(
    Admin { app, .. }: Admin,
    ApiPath(path): ApiPath<TenantPath>,
) -> Result<axum::Json<Tenant>, ApiError> {
    let id = tenant_in_path(&path.id)?;
    let row = app.router.catalog().get_tenant(&id).await?.ok_or_else(ApiError::tenant_not_found)?;
    Ok(axum::Json(tenant_view(&app, row)))
}

errors!(UpdateTenantErrors: InvalidBody, InvalidJson, TenantNotFound);

/// Change a tenant's name, tier, rate limit or quotas.
#[utoipa::path(patch, path = "/v1/admin/tenants/{id}", params(TenantPath), request_body = UpdateTenant, responses(
    (status = 200, description = "The updated tenant", body = Tenant),
    UpdateTenantErrors,
))]
pub async fn update_tenant(
    Admin { app, caller, request }: Admin,
    ApiPath(path): ApiPath<TenantPath>,
    ApiJson(body): ApiJson<UpdateTenant>,
) -> Result<axum::Json<Tenant>, ApiError> {
    let id = tenant_in_path(&path.id)?;
    if let Some(name) = &body.name {
        check_name(name)?;
    }
    let audit = caller.audit(&request, "tenant.update", Some(id.as_str()), format!("tenant:{id}"));
    let rate_limit = match body.rate_limit {
        Some(Some(limit)) => Some(Some(tenant_rate_limit(limit)?)),
        Some(None) => Some(None),
        None => None,
    };
    let change = TenantChange { name: body.name, tier: body.tier, rate_limit, quotas: body.quotas };
    let row = app.topology().update_tenant(&id, &change, &audit).await?;
    app.announce_map_change().await;
    Ok(axum::Json(tenant_view(&app, row)))
}

errors!(DeleteTenantErrors: TenantNotFound, JobConflict, ShardReadOnly, ShardOffline, ShardUnavailable, ShardBusy);

/// Delete a tenant and all its records.
#[utoipa::path(delete, path = "/v1/admin/tenants/{id}", params(TenantPath), responses(
    (status = 204, description = "Deleted, with its records"),
    DeleteTenantErrors,
))]
pub async fn delete_tenant(
    Admin { app, caller, request }: Admin,
    ApiPath(path): ApiPath<TenantPath>,
) -> Result<StatusCode, ApiError> {
    let id = tenant_in_path(&path.id)?;
    let audit = caller.audit(&request, TENANT_DELETE_ACTION, Some(id.as_str()), format!("tenant:{id}"));
    // Index entries are spread over every shard. They go while the tenant still exists (a
    // failure leaves it in place, and the call can be repeated), and once more after it left
    // the catalog, for entries written meanwhile by instances still routing on the old map.
    app.router.resolve(&id, Access::Write)?;
    app.indexes.purge_tenant(&id).await?;
    let purged = app.topology().delete_tenant(&id, &audit).await?;
    if let Err(e) = app.indexes.purge_tenant(&id).await {
        tracing::warn!(
            tenant = %id, error = %e,
            "could not sweep the deleted tenant's index entries; leftovers are swept if the id is reused"
        );
    }
    // The tenant's valet grants were revoked with it: this announces both changes.
    app.announce_valet_change().await;
    tracing::info!(tenant = %id, records = purged, "tenant deleted");
    Ok(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_must_be_printable_and_bounded() {
        assert!(check_name("Acme Corp ✓").is_ok());
        assert!(check_name(" ").is_err());
        assert!(check_name("a\u{7}b").is_err());
        assert!(check_name(&"n".repeat(201)).is_err());
    }

    #[test]
    fn impossible_ids_are_not_found() {
        assert_eq!(tenant_in_path("Not Valid").unwrap_err().code(), "tenant_not_found");
    }
}
