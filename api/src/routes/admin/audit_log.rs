//! `GET /v1/admin/audit`: the record of admin actions, oldest or newest first, filtered by
//! action and actor.

use serde::{Deserialize, Serialize};
use shardgate_shard_router::catalog::AuditFilter;
use utoipa::{IntoParams, ToSchema};

use crate::server::extract::{Admin, ApiQuery};
use crate::wire::error::{ApiError, Code};
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
    /// What was done, e.g. `tenant.create`, `tenant.update`, `tenant.delete`, `tenant.move`,
    /// `shard.register`, `shard.state`, `shard.delete`, `shard.bootstrap`,
    /// `shard.breaker.force_open`, `shard.breaker.reset`, `job.cancel`, `valet.issue`.
    pub action: String,
    /// What it was done to, e.g. `tenant:acme` or `shard:shard-2 read_only`.
    pub target: String,
    /// The id of the request that did it: the server's own, as its response's `x-request-id` gave it.
    pub request_id: String,
    /// The `x-request-id` the client sent with that request, if any: the client's to choose (it
    /// may name another request), so it is kept beside the server's id, never instead of it.
    pub client_request_id: Option<String>,
    /// The address of the client that made the request: its TCP peer, or, behind proxies listed
    /// in `trusted_proxies` or a standalone gatekeeper, the client they named. None for actions
    /// of the system itself (moves, the balancer, start-up).
    pub client_address: Option<String>,
}

/// The order of an audit listing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AuditOrder {
    /// Oldest first.
    #[default]
    Oldest,
    /// Newest first.
    Newest,
}

/// Which audit records to list, in which order, and paging.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct AuditQuery {
    /// Only this action (`tenant.move`), or every action that begins with it when it ends in
    /// `.` (`tenant.`, `shard.breaker.`): lowercase letters, digits, `_` and `.`, at most 64.
    action: Option<String>,
    /// Only this actor (a token subject), exactly.
    actor: Option<String>,
    /// `oldest` (the default) or `newest` first. A cursor continues in the order it was made in:
    /// send the same `order`, `action` and `actor` with it.
    #[param(inline)]
    order: Option<AuditOrder>,
    /// Page size: default 100, capped at 1000.
    #[param(minimum = 1)]
    limit: Option<u32>,
    /// `next_cursor` of the previous page.
    cursor: Option<String>,
}

/// The longest action a filter may name.
const MAX_ACTION_CHARS: usize = 64;
/// The longest actor a filter may name.
const MAX_ACTOR_CHARS: usize = 256;

impl AuditQuery {
    /// The catalog's filter, or 400 `invalid_query` saying which parameter is wrong and why.
    fn filter(&self) -> Result<AuditFilter, ApiError> {
        if let Some(action) = self.action.as_deref() {
            let shaped = action.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '.');
            let starts = action.starts_with(|c: char| c.is_ascii_lowercase());
            if !shaped || !starts || action.len() > MAX_ACTION_CHARS || action.contains("..") {
                return Err(ApiError::new(
                    Code::InvalidQuery,
                    format!(
                        "action: {action:?} is not an action (such as `tenant.move`) or a prefix of actions ending \
                         in `.` (such as `tenant.`): lowercase letters, digits, `_` and `.`, starting with a letter, \
                         at most {MAX_ACTION_CHARS} characters"
                    ),
                ));
            }
        }
        if let Some(actor) = self.actor.as_deref()
            && (actor.is_empty() || actor.chars().count() > MAX_ACTOR_CHARS || actor.chars().any(char::is_control))
        {
            return Err(ApiError::new(
                Code::InvalidQuery,
                format!(
                    "actor: must be a token subject of 1 to {MAX_ACTOR_CHARS} characters, without control characters"
                ),
            ));
        }
        Ok(AuditFilter {
            action: self.action.clone(),
            actor: self.actor.clone(),
            newest_first: self.order.unwrap_or_default() == AuditOrder::Newest,
        })
    }
}

errors!(ListAuditErrors: InvalidQuery, InvalidCursor);

/// Page through the audit log, oldest first (or newest first with `order=newest`), filtered by
/// action (or a prefix of actions) and actor.
#[utoipa::path(get, path = "/v1/admin/audit", params(AuditQuery), responses(
    (status = 200, description = "A page of audit records", body = Page<AuditRecord>),
    ListAuditErrors,
))]
pub async fn list_audit(
    Admin { app, .. }: Admin,
    ApiQuery(query): ApiQuery<AuditQuery>,
) -> Result<axum::Json<Page<AuditRecord>>, ApiError> {
    let limit = app.page_limit(query.limit)?;
    let filter = query.filter()?;
    // The cursor holds the id of the page's last record.
    let after = match query.cursor.as_deref().map(decode_cursor).transpose()? {
        Some(text) => Some(text.parse::<i64>().map_err(|_| ApiError::invalid_cursor())?),
        None => None,
    };
    let entries = app.router.catalog().list_audit(&filter, after, limit + 1).await?;
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
            client_request_id: e.client_request_id,
            client_address: e.client_address,
        },
    );
    Ok(axum::Json(page))
}
