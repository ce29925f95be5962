//! `/v1/tenants/{tenant}/valet-keys[/{id}]`: a tenant issues valet keys (signed URLs for one
//! operation on one blob, served by `/valet/...`) and revokes them. The signing and the catalog
//! rows are the [`crate::valet::service`]'s.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use shardgate_gatekeeper::Scope;
use shardgate_shard_router::blobs::BlobPath;
use shardgate_valet::{Constraints, Permission};
use utoipa::{IntoParams, ToSchema};

use crate::app::App;
use crate::server::extract::{ApiJson, ApiPath, Bound, Caller, RequestIdHeader, TenantPath, Write};
use crate::valet::service::{Issue, content_disposition, issue};
use crate::wire::error::{ApiError, Code};
use crate::wire::openapi::errors;
use crate::wire::timestamps::rfc3339;

/// Body of `POST /v1/tenants/{tenant}/valet-keys`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IssueValetKey {
    /// The blob path (as in the blob API, not encoded).
    pub path: String,
    /// `read` (GET and HEAD) or `write` (PUT).
    #[schema(value_type = String, example = "read")]
    pub permission: String,
    /// Lifetime in seconds: default 300, at most `valet.max_expires_in`.
    pub expires_in: Option<u64>,
    /// Uploads must declare exactly this `Content-Type` (write only).
    pub content_type: Option<String>,
    /// Uploads may be at most this many bytes (write only).
    pub max_size: Option<u64>,
    /// `Content-Disposition` sent with downloads, e.g. `attachment; filename="report.pdf"`
    /// (read only). Give the filename only with `filename`; it is encoded per RFC 6266.
    pub content_disposition: Option<String>,
    /// Works for one request only.
    #[serde(default)]
    pub single_use: bool,
}

/// An issued valet key.
#[derive(Debug, Serialize, ToSchema)]
pub struct ValetKey {
    /// Grant id (revoke with `DELETE .../valet-keys/{id}`).
    pub id: String,
    /// The signed URL: no other credential is needed. Opaque: use it exactly as issued (its
    /// query is signed, and a URL taken apart and rebuilt, re-encoded or with a parameter added,
    /// is refused with 403).
    #[schema(format = "uri")]
    pub url: String,
    /// The method it allows (`GET`, which includes `HEAD`, or `PUT`).
    pub method: &'static str,
    /// Valid from, RFC 3339 (a little in the past, for clock skew).
    pub not_before: String,
    /// Valid until, RFC 3339 (exclusive; no grace).
    pub expires_at: String,
    /// The signing key's id.
    pub key_id: String,
}

/// Path of a tenant's valet keys.
#[derive(Debug, Deserialize, IntoParams)]
pub struct ValetKeysRoute {
    /// Tenant id (must be the token's tenant).
    tenant: String,
}

/// Path of one valet key.
#[derive(Debug, Deserialize, IntoParams)]
pub struct ValetKeyRoute {
    /// Tenant id (must be the token's tenant).
    tenant: String,
    /// Grant id.
    id: String,
}

impl TenantPath for ValetKeyRoute {
    fn tenant(&self) -> &str {
        &self.tenant
    }
}

errors!(
    IssueValetKeyErrors: InvalidBody, InvalidPath, InsufficientScope, BlobNotFound, ShardOffline, ShardUnavailable,
    ShardBusy
);

/// Issue a valet key: a signed URL for one operation on one blob. A read key needs the blob to
/// exist (404 `blob_not_found`); a write key may create it.
#[utoipa::path(post, path = "/v1/tenants/{tenant}/valet-keys", params(ValetKeysRoute), request_body = IssueValetKey, security(("bearer" = ["read"]), ("bearer" = ["write"])), responses(
    (status = 201, description = "Issued", body = ValetKey),
    IssueValetKeyErrors,
))]
pub async fn issue_valet_key(
    State(app): State<Arc<App>>,
    caller: Caller,
    request: RequestIdHeader,
    ApiPath(route): ApiPath<ValetKeysRoute>,
    ApiJson(body): ApiJson<IssueValetKey>,
) -> Result<Response, ApiError> {
    let permission = Permission::parse(&body.permission)
        .ok_or_else(|| ApiError::new(Code::InvalidBody, "permission must be `read` or `write`"))?;
    let scope = if permission == Permission::Read { Scope::Read } else { Scope::Write };
    let (tenant, incarnation) = caller.bound_tenant(&app, &route.tenant, scope).await?;
    let path = BlobPath::parse(&body.path).map_err(crate::wire::error::invalid_path)?;
    let config = &app.valet;
    let expires_in = body.expires_in.unwrap_or(config.default_expires_in.as_secs());
    if expires_in == 0 || expires_in > config.max_expires_in.as_secs() {
        return Err(ApiError::new(
            Code::InvalidBody,
            format!("expires_in must be 1 to {} seconds", config.max_expires_in.as_secs()),
        ));
    }
    let write_only = body.content_type.is_some() || body.max_size.is_some();
    if (permission == Permission::Read && write_only)
        || (permission == Permission::Write && body.content_disposition.is_some())
    {
        return Err(ApiError::new(
            Code::InvalidBody,
            "content_type and max_size constrain uploads (write); content_disposition, downloads (read)",
        ));
    }
    let content_disposition = body.content_disposition.as_deref().map(content_disposition).transpose()?;
    let constraints = Constraints {
        content_type: body.content_type,
        max_size: body.max_size,
        content_disposition,
        single_use: body.single_use,
    };
    let audit = caller.audit(&request, "valet.issue", Some(tenant.as_str()), String::new());
    let wanted = Issue { tenant: &tenant, incarnation, path: &path, permission, expires_in, constraints };
    let issued = issue(&app, wanted, audit).await?;
    let grant = &issued.grant;
    let key = ValetKey {
        id: grant.grant_id().to_string(),
        url: issued.url,
        method: if permission == Permission::Read { "GET" } else { "PUT" },
        not_before: rfc3339(grant.not_before() as i64 * 1000),
        expires_at: rfc3339(grant.expires_at() as i64 * 1000),
        key_id: grant.key_id().to_string(),
    };
    Ok((StatusCode::CREATED, axum::Json(key)).into_response())
}

errors!(RevokeValetKeyErrors: TenantNotFound, ValetKeyNotFound);

/// Revoke a valet key at once, on every instance.
#[utoipa::path(delete, path = "/v1/tenants/{tenant}/valet-keys/{id}", params(ValetKeyRoute), responses(
    (status = 204, description = "Revoked (or already was)"),
    RevokeValetKeyErrors,
))]
pub async fn revoke_valet_key(
    Bound { app, caller, tenant, path: route, .. }: Bound<ValetKeyRoute, Write>,
    request: RequestIdHeader,
) -> Result<StatusCode, ApiError> {
    let audit = caller.audit(&request, "valet.revoke", Some(tenant.as_str()), format!("valet-key:{}", route.id));
    if app.router.catalog().revoke_valet_grant(tenant.as_str(), &route.id, &audit).await? {
        app.announce_valet_change().await;
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(Code::ValetKeyNotFound.into())
    }
}
