//! `/v1/admin/tiers/{tier}/quotas`: a tier's quotas on every instance, changed without a
//! restart. What is set here replaces the tier's configured quotas (`quotas.tiers`) until it is
//! removed; it is kept in the catalog and reaches every instance with the shard map (within one
//! catalog poll).

use serde::{Deserialize, Serialize};
use shardgate_shard_router::Tier;
use shardgate_shard_router::catalog::TierQuotaRow;
use shardgate_shard_router::usage::quotas::{Quotas, set_tier_quotas};
use utoipa::{IntoParams, ToSchema};

use crate::app::App;
use crate::server::extract::{Admin, ApiJson, ApiPath};
use crate::wire::error::{ApiError, Code};
use crate::wire::openapi::errors;
use crate::wire::quotas::QuotaLimits;
use crate::wire::timestamps::rfc3339;

/// Path of `/v1/admin/tiers/{tier}/quotas`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct TierPath {
    /// `free`, `standard` or `premium`.
    tier: String,
}

impl TierPath {
    /// The tier named, or 400 `invalid_path`.
    fn tier(&self) -> Result<Tier, ApiError> {
        Tier::parse(&self.tier).ok_or_else(|| {
            ApiError::new(
                Code::InvalidPath,
                format!("no tier {:?}: the tiers are free, standard and premium", self.tier),
            )
        })
    }
}

/// Where a tier's quotas in force come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum QuotaSource {
    /// Set through `PUT /v1/admin/tiers/{tier}/quotas`.
    Admin,
    /// The configuration (`quotas.tiers`, or its defaults).
    Configuration,
}

/// A tier's quotas.
#[derive(Debug, Serialize, ToSchema)]
pub struct TierQuotas {
    /// The tier.
    #[schema(example = "free")]
    pub tier: String,
    /// The quotas in force on every instance (within one catalog poll): `configured`, unless
    /// quotas were set through this API.
    pub quotas: QuotaLimits,
    /// Where `quotas` come from.
    pub source: QuotaSource,
    /// The tier's quotas in this instance's configuration, which apply again once those set
    /// through this API are removed.
    pub configured: QuotaLimits,
    /// When the quotas were set through this API, RFC 3339 (null: they were not).
    pub updated_at: Option<String>,
}

fn view(app: &App, tier: Tier, row: Option<TierQuotaRow>) -> TierQuotas {
    let configured = *app.router.configured_tier_quotas().get(tier);
    TierQuotas {
        tier: tier.as_str().to_owned(),
        quotas: row.map_or(configured, |row| row.quotas).into(),
        source: if row.is_some() { QuotaSource::Admin } else { QuotaSource::Configuration },
        configured: configured.into(),
        updated_at: row.map(|row| rfc3339(row.updated_at_ms)),
    }
}

errors!(GetTierQuotasErrors: InvalidPath, CatalogUnavailable);

/// A tier's quotas in force, where they come from, and the configured ones.
#[utoipa::path(get, path = "/v1/admin/tiers/{tier}/quotas", params(TierPath), responses(
    (status = 200, description = "The tier's quotas", body = TierQuotas),
    GetTierQuotasErrors,
))]
pub async fn get_tier_quotas(
    Admin { app, .. }: Admin,
    ApiPath(path): ApiPath<TierPath>,
) -> Result<axum::Json<TierQuotas>, ApiError> {
    let tier = path.tier()?;
    let row = app.router.catalog().tier_quotas(tier).await?;
    Ok(axum::Json(view(&app, tier, row)))
}

errors!(SetTierQuotasErrors: InvalidPath, InvalidBody, InvalidJson, CatalogUnavailable);

/// Set a tier's quotas on every instance, replacing its configured ones (and any set before):
/// each key a number, or `null` (or left out) for unlimited. Every tenant of the tier is held
/// to them (with its own overrides applied) within one catalog poll, without a restart. Audited
/// as `tier.quotas.set`.
#[utoipa::path(put, path = "/v1/admin/tiers/{tier}/quotas", params(TierPath), request_body = QuotaLimits, responses(
    (status = 200, description = "Set; the tier's quotas as they are now", body = TierQuotas),
    SetTierQuotasErrors,
))]
pub async fn put_tier_quotas(
    Admin { app, caller, request }: Admin,
    ApiPath(path): ApiPath<TierPath>,
    ApiJson(body): ApiJson<QuotaLimits>,
) -> Result<axum::Json<TierQuotas>, ApiError> {
    let tier = path.tier()?;
    let audit = caller.audit(&request, "tier.quotas.set", None, format!("tier:{}", tier.as_str()));
    set_tier_quotas(&app.router, tier, Some(Quotas::from(body)), &audit).await?;
    app.announce_map_change().await;
    let row = app.router.catalog().tier_quotas(tier).await?;
    Ok(axum::Json(view(&app, tier, row)))
}

errors!(ResetTierQuotasErrors: InvalidPath, CatalogUnavailable);

/// Remove the quotas set through this API for a tier, so its configured ones apply again on
/// every instance (within one catalog poll). Removing none is not an error. Audited as
/// `tier.quotas.reset`.
#[utoipa::path(delete, path = "/v1/admin/tiers/{tier}/quotas", params(TierPath), responses(
    (status = 200, description = "Removed; the tier's quotas as they are now (its configured ones)", body = TierQuotas),
    ResetTierQuotasErrors,
))]
pub async fn delete_tier_quotas(
    Admin { app, caller, request }: Admin,
    ApiPath(path): ApiPath<TierPath>,
) -> Result<axum::Json<TierQuotas>, ApiError> {
    let tier = path.tier()?;
    let audit = caller.audit(&request, "tier.quotas.reset", None, format!("tier:{}", tier.as_str()));
    set_tier_quotas(&app.router, tier, None, &audit).await?;
    app.announce_map_change().await;
    Ok(axum::Json(view(&app, tier, None)))
}
