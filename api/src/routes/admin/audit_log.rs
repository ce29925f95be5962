//! `GET /v1/admin/audit`: the record of admin actions, oldest first.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::server::extract::{Admin, ApiQuery};
use crate::wire::error::ApiError;
use crate::wire::openapi::errors;
use crate::wire::pagination::{Page, decode_cursor};
use crate::wire::timestamps::rfc3339;

/// One recorded admin action.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuditRecord {
    /// Increasing id.
    pub id: i64,
    /// When, RFC 3339.
    pub at: String,
    /// The token subject that acted (`system` for start-up bootstrap).
    pub actor: String,
    /// The tenant concerned, if any.
    pub tenant: Option<String>,
    /// What was done: `tenant.create`, `tenant.update`, `tenant.delete`, `shard.register`,
    /// `shard.state`, `shard.delete`, `shard.bootstrap`, `shard.breaker.force_open`,
    /// `shard.breaker.reset`.
    pub action: String,
    /// What it was done to, e.g. `tenant:acme` or `shard:shard-2 read_only`.
    pub target: String,
    /// The `x-request-id` of the request that did it.
    pub request_id: String,
}

/// Paging of the audit log.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct AuditQuery {
    /// Page size: default 100, capped at 1000.
    #[param(minimum = 1)]
    limit: Option<u32>,
    /// `next_cursor` of the previous page.
    cursor: Option<String>,
}

errors!(ListAuditErrors: InvalidQuery, InvalidCursor);

/// Page through the audit log, oldest first.
#[utoipa::path(get, path = "/v1/admin/audit", params(AuditQuery), responses(
    (status = 200, description = "A page of audit records", body = Page<AuditRecord>),
    ListAuditErrors,
))]
pub async fn list_audit(
    Admin { app, .. }: Admin,
    ApiQuery(query): ApiQuery<AuditQuery>,
) -> Result<axum::Json<Page<AuditRecord>>, ApiError> {
    let limit = app.page_limit(query.limit)?;
    let after = match query.cursor.as_deref().map(decode_cursor).transpose()? {
        Some(text) => text.parse::<i64>().map_err(|_| ApiError::invalid_cursor())?,
        None => 0,
    };
    let entries = app.router.catalog().list_audit(after, limit + 1).await?;
    let page = Page::from_overfetch(
        entries,
        limit,
        |e| e.id.to_string(),
        |e| AuditRecord {
            id: e.id,
            at: rfc3339(e.at_ms),
            actor: e.actor,
            tenant: e.tenant,
            action: e.action,
            target: e.target,
            request_id: e.request_id,
        },
    );
    Ok(axum::Json(page))
}
