//! `/v1/admin/key-sets/refresh`: fetch every issuer's key set from its identity provider now
//! (scope `admin`), for the emergency revocation of a compromised signing key: once the provider
//! no longer lists the key, tokens it signed stop working on this instance as soon as the fetch
//! takes the new set, not at the next scheduled refresh (up to the provider's `max-age`). The
//! key sets themselves are `shardgate_gatekeeper`'s.
//!
//! The call refreshes the instance that answers it (each instance, and each standalone
//! gatekeeper, keeps its own sets): docs/security.md says how to reach every one.

use serde::Serialize;
use shardgate_shard_router::catalog::TimedAudit;
use utoipa::ToSchema;

use crate::server::extract::Admin;
use crate::wire::error::ApiError;

/// What a refresh did to one issuer's key set.
#[derive(Debug, Serialize, ToSchema)]
pub struct KeySetRefresh {
    /// The issuer (`iss`).
    pub issuer: String,
    /// Where its keys come from (scheme, host and path only).
    pub url: String,
    /// Whether the fetch took a new set (now in use).
    pub refreshed: bool,
    /// Why it did not (the last good set, if any, stays in use); absent when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Seconds since the set in use was fetched (0 right after a refresh); absent when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub age_secs: Option<u64>,
}

/// The outcome of a refresh, one entry per issuer whose keys are fetched.
#[derive(Debug, Serialize, ToSchema)]
pub struct KeySetRefreshes {
    /// In the order the issuers are configured; empty when no issuer's keys are fetched.
    pub key_sets: Vec<KeySetRefresh>,
}

/// Fetch every issuer's key set now, on this instance; each fetch is bounded by the issuer's
/// fetch deadline, and a failed one keeps the last good set. Audited as `key_sets.refresh`.
#[utoipa::path(post, path = "/v1/admin/key-sets/refresh", responses(
    (status = 200, description = "Each fetched key set's outcome", body = KeySetRefreshes),
))]
pub async fn refresh_key_sets(Admin { app, caller, request }: Admin) -> Result<axum::Json<KeySetRefreshes>, ApiError> {
    let outcomes = app.gate.auth.fetched_key_sets().fetch_all_now().await;
    let key_sets: Vec<KeySetRefresh> = outcomes
        .into_iter()
        .map(|(status, outcome)| KeySetRefresh {
            issuer: status.issuer,
            url: status.url,
            refreshed: outcome.is_ok(),
            error: outcome.err(),
            age_secs: status.age.map(|age| age.as_secs()),
        })
        .collect();
    let summary: Vec<String> = key_sets
        .iter()
        .map(|set| format!("{} {}", set.issuer, if set.refreshed { "refreshed" } else { "failed" }))
        .collect();
    let audit = caller.audit(&request, "key_sets.refresh", None, format!("key-sets: {}", summary.join(", ")));
    tracing::info!(key_sets = ?summary, "key sets fetched at an operator's request");
    // The refresh has happened whatever the catalog says: a catalog that cannot take the audit
    // entry now (an outage) is logged, not answered as a failure of the refresh.
    if let Err(e) =
        app.router.catalog().append_audits(&[TimedAudit { at_ms: shardgate_shard_router::now_ms(), audit }]).await
    {
        tracing::warn!(error = %e, "the key-set refresh could not be written to the audit log");
    }
    Ok(axum::Json(KeySetRefreshes { key_sets }))
}
