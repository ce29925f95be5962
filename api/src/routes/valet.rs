//! Valet keys (the Valet Key pattern): `POST /v1/tenants/{tenant}/valet-keys` issues a signed URL
//! for one operation on one blob; `DELETE .../valet-keys/{id}` revokes it; `/valet/{tenant}/{path}`
//! serves those URLs without any token; `/v1/admin/valet/signing-keys` rotates and retires the
//! signing keys. The canonical form and the checks are specified in `docs/valet-keys.md`.
//!
//! Every use is checked against the catalog (the grant row joined with its key's state), so a
//! revocation, a retired key or the one use of a single-use key takes effect on every instance
//! at once.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use prometheus_client::encoding::EncodeLabelSet;
use serde::{Deserialize, Serialize};
use shardgate_gatekeeper::Scope;
use shardgate_shard_router::blobs::{BlobCondition, BlobPath};
use shardgate_shard_router::catalog::{Audit, Retirement, ValetGrantRow, ValetKeyRow, ValetKeyState};
use shardgate_shard_router::{TenantId, now_ms};
use shardgate_valet::{
    Constraints, Grant, GrantId, GrantRequest, KeyId, Permission, SigningKey, UnverifiedGrant, ValetError,
};
use utoipa::{IntoParams, ToSchema};

use super::blobs::{NewBlob, content_type_of, serve_blob, store_blob};
use super::rfc3339;
use crate::app::App;
use crate::blob_service::blob_path;
use crate::error::{ApiError, Problem};
use crate::extract::{ApiJson, ApiPath, Caller, RequestIdHeader};

/// Characters escaped in a blob path segment of a valet URL: everything but RFC 3986 unreserved.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// The canonical raw form of a blob path in a valet URL (each segment percent-encoded).
fn encoded_path(path: &BlobPath) -> String {
    path.as_str()
        .split('/')
        .map(|segment| utf8_percent_encode(segment, SEGMENT).to_string())
        .collect::<Vec<_>>()
        .join("/")
}

fn now_secs() -> u64 {
    u64::try_from(now_ms() / 1000).unwrap_or_default()
}

/// Labels of the refusal counter.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RefusalLabels {
    /// The refusal's code.
    pub code: &'static str,
}

/// The signing keys this instance has seen (secrets from the catalog), by id.
#[derive(Debug, Default)]
pub struct ValetKeys {
    keys: parking_lot::RwLock<std::collections::HashMap<String, Arc<SigningKey>>>,
}

fn signing_key(row: &ValetKeyRow) -> Option<SigningKey> {
    Some(SigningKey::from_parts(KeyId::parse(&row.id).ok()?, row.secret))
}

impl ValetKeys {
    fn remember(&self, rows: &[ValetKeyRow]) {
        let mut keys = self.keys.write();
        for row in rows {
            if let Some(key) = signing_key(row) {
                keys.entry(row.id.clone()).or_insert_with(|| Arc::new(key));
            }
        }
    }

    /// The key `id`, reading the catalog once if this instance has not seen it.
    async fn get(&self, app: &App, id: &str) -> Result<Option<Arc<SigningKey>>, ApiError> {
        if let Some(key) = self.keys.read().get(id) {
            return Ok(Some(key.clone()));
        }
        let rows = app.router.catalog().valet_keys().await?;
        self.remember(&rows);
        Ok(self.keys.read().get(id).cloned())
    }

    /// The current key; the first one is made on first use.
    async fn current(&self, app: &App, request: &RequestIdHeader) -> Result<Arc<SigningKey>, ApiError> {
        let rows = app.router.catalog().valet_keys().await?;
        self.remember(&rows);
        if let Some(current) = rows.iter().find(|r| r.state == ValetKeyState::Current)
            && let Some(key) = self.keys.read().get(&current.id)
        {
            return Ok(key.clone());
        }
        let audit = system_audit(request, "valet.key.rotate");
        let row = rotate(app, &audit).await?;
        self.remember(std::slice::from_ref(&row));
        self.keys.read().get(&row.id).cloned().ok_or_else(|| ApiError::internal(&"a new signing key vanished"))
    }
}

fn system_audit(request: &RequestIdHeader, action: &'static str) -> Audit {
    Audit {
        actor: "system".into(),
        tenant: None,
        action,
        target: "valet signing key".into(),
        request_id: request.0.clone(),
    }
}

async fn rotate(app: &App, audit: &Audit) -> Result<ValetKeyRow, ApiError> {
    let id = format!("k{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
    let secret: [u8; 32] = rand::random();
    let mut audit = audit.clone();
    audit.target = format!("valet-key:{id}");
    Ok(app.router.catalog().rotate_valet_key(&id, &secret, &audit).await?)
}

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
    /// The signed URL: no other credential is needed.
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

/// `attachment; filename="x"` rebuilt per RFC 6266: an ASCII `filename` fallback and a UTF-8
/// `filename*`.
fn disposition_header(value: &str) -> Result<String, ApiError> {
    let bad = || {
        ApiError::bad_request(
            "invalid_body",
            "content_disposition must be `inline` or `attachment`, optionally with `; filename=...`",
        )
    };
    let (kind, rest) = value.split_once(';').map_or((value.trim(), ""), |(k, r)| (k.trim(), r.trim()));
    if !matches!(kind, "inline" | "attachment") {
        return Err(bad());
    }
    if rest.is_empty() {
        return Ok(kind.to_owned());
    }
    let name = rest.strip_prefix("filename=").ok_or_else(bad)?.trim().trim_matches('"');
    if name.is_empty() || name.chars().any(char::is_control) || name.len() > 255 {
        return Err(bad());
    }
    let ascii: String = name.chars().map(|c| if c.is_ascii() && c != '"' && c != '\\' { c } else { '_' }).collect();
    let encoded = utf8_percent_encode(name, SEGMENT);
    Ok(format!("{kind}; filename=\"{ascii}\"; filename*=UTF-8''{encoded}"))
}

/// Issue a valet key: a signed URL for one operation on one blob.
#[utoipa::path(
    post,
    path = "/v1/tenants/{tenant}/valet-keys",
    tag = "valet",
    params(ValetKeysRoute),
    request_body = IssueValetKey,
    security(("bearer" = ["read", "write"])),
    responses(
        (status = 201, description = "Issued", body = ValetKey),
        (status = 400, description = "`invalid_body` or `invalid_path`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid token", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "The token lacks the scope of the permission (`read` or `write`)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`tenant_not_found`", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn issue_valet_key(
    State(app): State<Arc<App>>,
    caller: Caller,
    request: RequestIdHeader,
    ApiPath(route): ApiPath<ValetKeysRoute>,
    ApiJson(body): ApiJson<IssueValetKey>,
) -> Result<Response, ApiError> {
    let permission = Permission::parse(&body.permission)
        .ok_or_else(|| ApiError::bad_request("invalid_body", "permission must be `read` or `write`"))?;
    let scope = if permission == Permission::Read { Scope::Read } else { Scope::Write };
    let tenant = caller.for_tenant(&route.tenant, scope)?;
    let path = BlobPath::parse(&body.path).map_err(crate::error::invalid_path)?;
    let config = &app.valet;
    let expires_in = body.expires_in.unwrap_or(config.default_expires_in.as_secs());
    if expires_in == 0 || expires_in > config.max_expires_in.as_secs() {
        return Err(ApiError::bad_request(
            "invalid_body",
            format!("expires_in must be 1 to {} seconds", config.max_expires_in.as_secs()),
        ));
    }
    let write_only = body.content_type.is_some() || body.max_size.is_some();
    if (permission == Permission::Read && write_only)
        || (permission == Permission::Write && body.content_disposition.is_some())
    {
        return Err(ApiError::bad_request(
            "invalid_body",
            "content_type and max_size constrain uploads (write); content_disposition, downloads (read)",
        ));
    }
    let content_disposition = body.content_disposition.as_deref().map(disposition_header).transpose()?;
    let key = app.valet_keys.current(&app, &request).await?;
    let now = now_secs();
    let grant = Grant::new(
        GrantRequest {
            permission,
            tenant: tenant.to_string(),
            path: encoded_path(&path),
            not_before: now.saturating_sub(config.not_before_skew.as_secs()),
            expires_at: now + expires_in,
            grant_id: GrantId::generate(),
            constraints: Constraints {
                content_type: body.content_type,
                max_size: body.max_size,
                content_disposition,
                single_use: body.single_use,
            },
        },
        &key,
    )
    .map_err(|e| ApiError::bad_request("invalid_body", e.to_string()))?;
    let row = ValetGrantRow {
        id: grant.grant_id().as_str().to_owned(),
        tenant: tenant.to_string(),
        path: grant.path().to_owned(),
        permission: permission.as_str().to_owned(),
        key_id: key.id().as_str().to_owned(),
        not_before: grant.not_before() as i64,
        expires_at: grant.expires_at() as i64,
        single_use: body.single_use,
        used_at_ms: None,
        revoked_at_ms: None,
        created_at_ms: now_ms(),
    };
    let audit = caller.audit(
        &request,
        "valet.issue",
        Some(tenant.as_str()),
        format!("valet-key:{} {} {}", row.id, row.permission, path),
    );
    app.router.catalog().insert_valet_grant(&row, &audit).await?;
    let base = app.valet.public_url.as_deref().unwrap_or_default().trim_end_matches('/');
    let url = format!("{base}/valet/{tenant}/{}?{}", grant.path(), grant.to_query(&key));
    let issued = ValetKey {
        id: row.id,
        url,
        method: if permission == Permission::Read { "GET" } else { "PUT" },
        not_before: rfc3339(grant.not_before() as i64 * 1000),
        expires_at: rfc3339(grant.expires_at() as i64 * 1000),
        key_id: row.key_id,
    };
    Ok((StatusCode::CREATED, axum::Json(issued)).into_response())
}

/// Revoke a valet key at once, on every instance.
#[utoipa::path(
    delete,
    path = "/v1/tenants/{tenant}/valet-keys/{id}",
    tag = "valet",
    params(ValetKeyRoute),
    security(("bearer" = ["write"])),
    responses(
        (status = 204, description = "Revoked (or already was)"),
        (status = 401, description = "Missing or invalid token", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Missing `write` scope", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`tenant_not_found` or `valet_key_not_found`", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn revoke_valet_key(
    State(app): State<Arc<App>>,
    caller: Caller,
    request: RequestIdHeader,
    ApiPath(route): ApiPath<ValetKeyRoute>,
) -> Result<StatusCode, ApiError> {
    let tenant = caller.for_tenant(&route.tenant, Scope::Write)?;
    let audit = caller.audit(&request, "valet.revoke", Some(tenant.as_str()), format!("valet-key:{}", route.id));
    if app.router.catalog().revoke_valet_grant(tenant.as_str(), &route.id, &audit).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::new(StatusCode::NOT_FOUND, "valet_key_not_found", "no such valet key"))
    }
}

/// A signing key (never its secret).
#[derive(Debug, Serialize, ToSchema)]
pub struct SigningKeyInfo {
    /// Key id.
    pub id: String,
    /// `current` (signs new keys), `active` (still verifies) or `retired` (verifies nothing).
    pub state: &'static str,
    /// Creation time, RFC 3339.
    pub created_at: String,
    /// Retirement time, RFC 3339.
    pub retired_at: Option<String>,
}

impl From<&ValetKeyRow> for SigningKeyInfo {
    fn from(row: &ValetKeyRow) -> Self {
        Self {
            id: row.id.clone(),
            state: row.state.name(),
            created_at: rfc3339(row.created_at_ms),
            retired_at: row.retired_at_ms.map(rfc3339),
        }
    }
}

/// List the valet signing keys.
#[utoipa::path(
    get,
    path = "/v1/admin/valet/signing-keys",
    tag = "admin",
    security(("bearer" = ["admin"])),
    responses(
        (status = 200, description = "Every signing key, oldest first", body = Vec<SigningKeyInfo>),
        (status = 401, description = "Missing or invalid token", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Missing `admin` scope", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn list_signing_keys(
    State(app): State<Arc<App>>,
    caller: Caller,
) -> Result<axum::Json<Vec<SigningKeyInfo>>, ApiError> {
    caller.require_admin()?;
    let rows = app.router.catalog().valet_keys().await?;
    Ok(axum::Json(rows.iter().map(SigningKeyInfo::from).collect()))
}

/// Make a new current signing key; older keys keep verifying until retired.
#[utoipa::path(
    post,
    path = "/v1/admin/valet/signing-keys/rotate",
    tag = "admin",
    security(("bearer" = ["admin"])),
    responses(
        (status = 201, description = "The new current key", body = SigningKeyInfo),
        (status = 401, description = "Missing or invalid token", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Missing `admin` scope", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn rotate_signing_key(
    State(app): State<Arc<App>>,
    caller: Caller,
    request: RequestIdHeader,
) -> Result<Response, ApiError> {
    caller.require_admin()?;
    let audit = caller.audit(&request, "valet.key.rotate", None, "valet signing key".into());
    let row = rotate(&app, &audit).await?;
    app.valet_keys.remember(std::slice::from_ref(&row));
    Ok((StatusCode::CREATED, axum::Json(SigningKeyInfo::from(&row))).into_response())
}

/// Path of one signing key.
#[derive(Debug, Deserialize, IntoParams)]
pub struct SigningKeyRoute {
    /// Key id.
    id: String,
}

/// Retire a signing key: every URL it signed is refused from now on, on every instance.
#[utoipa::path(
    delete,
    path = "/v1/admin/valet/signing-keys/{id}",
    tag = "admin",
    params(SigningKeyRoute),
    security(("bearer" = ["admin"])),
    responses(
        (status = 200, description = "Retired", body = SigningKeyInfo),
        (status = 401, description = "Missing or invalid token", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Missing `admin` scope", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`signing_key_not_found`", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`signing_key_current`: rotate first", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn retire_signing_key(
    State(app): State<Arc<App>>,
    caller: Caller,
    request: RequestIdHeader,
    ApiPath(route): ApiPath<SigningKeyRoute>,
) -> Result<axum::Json<SigningKeyInfo>, ApiError> {
    caller.require_admin()?;
    let audit = caller.audit(&request, "valet.key.retire", None, format!("valet-key:{}", route.id));
    match app.router.catalog().retire_valet_key(&route.id, &audit).await? {
        Retirement::Retired(row) => Ok(axum::Json(SigningKeyInfo::from(&row))),
        Retirement::NotFound => {
            Err(ApiError::new(StatusCode::NOT_FOUND, "signing_key_not_found", "no such signing key"))
        }
        Retirement::IsCurrent => Err(ApiError::new(
            StatusCode::CONFLICT,
            "signing_key_current",
            "the current signing key cannot be retired; rotate first",
        )),
    }
}

/// A refused valet request: 403 with a specific code (or 413/415 for a body that breaks the
/// signed constraints).
struct Refusal {
    status: StatusCode,
    code: &'static str,
    detail: String,
}

impl Refusal {
    fn forbidden(code: &'static str, detail: impl Into<String>) -> Self {
        Self { status: StatusCode::FORBIDDEN, code, detail: detail.into() }
    }
}

impl From<ValetError> for Refusal {
    fn from(e: ValetError) -> Self {
        Self::forbidden(e.code(), e.to_string())
    }
}

/// Path of a valet URL.
#[derive(Debug, Deserialize, IntoParams)]
pub struct ValetRoute {
    /// Tenant id.
    tenant: String,
    /// Blob path, percent-encoded exactly as signed.
    #[expect(dead_code, reason = "documents the path parameter; the raw path is read from the URI")]
    path: String,
}

/// Checks a valet request's URL against the catalog; returns the verified grant.
async fn authorize(app: &App, method: &str, uri: &axum::http::Uri, tenant: &str) -> Result<Grant, Refusal> {
    let prefix = format!("/valet/{tenant}/");
    let raw_path =
        uri.path().strip_prefix(&prefix).ok_or_else(|| Refusal::forbidden("valet_malformed", "no blob path"))?;
    let unverified = UnverifiedGrant::parse(method, tenant, raw_path, uri.query().unwrap_or(""))?;
    let key = app
        .valet_keys
        .get(app, unverified.key_id().as_str())
        .await
        .map_err(|_| Refusal {
            status: StatusCode::SERVICE_UNAVAILABLE,
            code: "catalog_unavailable",
            detail: "the catalog cannot be reached".into(),
        })?
        .ok_or(ValetError::UnknownKey)?;
    let grant = unverified.verify(&key, now_secs())?;
    let row = app.router.catalog().valet_grant(grant.grant_id().as_str()).await.map_err(|_| Refusal {
        status: StatusCode::SERVICE_UNAVAILABLE,
        code: "catalog_unavailable",
        detail: "the catalog cannot be reached".into(),
    })?;
    let Some((row, key_state)) = row else {
        return Err(Refusal::forbidden("valet_unknown_grant", "this valet key was never issued here"));
    };
    if row.revoked_at_ms.is_some() {
        return Err(Refusal::forbidden("valet_revoked", "this valet key was revoked"));
    }
    if key_state != Some(ValetKeyState::Current) && key_state != Some(ValetKeyState::Active) {
        return Err(Refusal::forbidden("valet_key_retired", "the key that signed this URL was retired"));
    }
    if grant.constraints().single_use {
        let first = app.router.catalog().use_valet_grant(&row.id).await.map_err(|_| Refusal {
            status: StatusCode::SERVICE_UNAVAILABLE,
            code: "catalog_unavailable",
            detail: "the catalog cannot be reached".into(),
        })?;
        if !first {
            return Err(Refusal::forbidden("valet_used", "this single-use valet key was used already"));
        }
    }
    Ok(grant)
}

/// Records a valet request in the audit log (off the request's path) and counts refusals.
fn record(app: &Arc<App>, tenant: &str, action: &'static str, target: String, request_id: &str) {
    let audit = Audit {
        actor: "valet".into(),
        tenant: Some(tenant.to_owned()),
        action,
        target,
        request_id: request_id.to_owned(),
    };
    let app = app.clone();
    tokio::spawn(async move {
        if let Err(e) = app.router.catalog().append_audit(&audit).await {
            tracing::warn!(error = %e, action = audit.action, "could not record a valet request in the audit log");
        }
    });
}

fn request_id(headers: &HeaderMap) -> String {
    headers.get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned()
}

/// Download (GET, HEAD) or upload (PUT) a blob with a valet URL; no token.
#[utoipa::path(
    get,
    path = "/valet/{tenant}/{*path}",
    tag = "valet",
    params(ValetRoute, ("sg-sig" = String, Query, description = "The signature and the other `sg-` parameters of the URL, as issued")),
    responses(
        (status = 200, description = "The blob (with `Content-Disposition` when the key sets one)", content_type = "application/octet-stream"),
        (status = 206, description = "The requested range", content_type = "application/octet-stream"),
        (status = 304, description = "Not modified"),
        (status = 403, description = "`valet_malformed`, `valet_bad_signature`, `valet_expired`, `valet_not_yet_valid`, `valet_wrong_method`, `valet_unknown_key`, `valet_unknown_grant`, `valet_revoked`, `valet_key_retired` or `valet_used`", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`blob_not_found`", body = Problem, content_type = "application/problem+json"),
        (status = 416, description = "`range_not_satisfiable`", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn valet_get(State(app): State<Arc<App>>, ApiPath(route): ApiPath<ValetRoute>, request: Request) -> Response {
    valet_transfer(app, route.tenant, request).await
}

/// The valet URL's blob headers, without its bytes.
#[utoipa::path(
    head,
    path = "/valet/{tenant}/{*path}",
    tag = "valet",
    params(ValetRoute),
    responses(
        (status = 200, description = "The blob exists"),
        (status = 403, description = "A refused valet URL (see GET)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`blob_not_found`", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn valet_head(
    State(app): State<Arc<App>>,
    ApiPath(route): ApiPath<ValetRoute>,
    request: Request,
) -> Response {
    valet_transfer(app, route.tenant, request).await
}

/// Upload a blob with a valet URL (streamed; the signed size and media type are enforced).
#[utoipa::path(
    put,
    path = "/valet/{tenant}/{*path}",
    tag = "valet",
    params(ValetRoute),
    request_body(content = Vec<u8>, description = "The bytes", content_type = "application/octet-stream"),
    responses(
        (status = 200, description = "Replaced"),
        (status = 201, description = "Created"),
        (status = 403, description = "A refused valet URL (see GET)", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "`payload_too_large`: over the signed `max_size` (nothing is stored)", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "`valet_content_type`: not the signed media type", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn valet_put(State(app): State<Arc<App>>, ApiPath(route): ApiPath<ValetRoute>, request: Request) -> Response {
    valet_transfer(app, route.tenant, request).await
}

async fn valet_transfer(app: Arc<App>, tenant: String, request: Request) -> Response {
    let id = request_id(request.headers());
    let target = request.uri().path().to_owned();
    let (method, uri) = (request.method().clone(), request.uri().clone());
    let outcome = match authorize(&app, method.as_str(), &uri, &tenant).await {
        Ok(grant) => {
            let served = serve(&app, &grant, request).await;
            // A single-use upload that stored nothing may be tried again.
            if served.is_err()
                && grant.constraints().single_use
                && grant.permission() == Permission::Write
                && let Err(e) = app.router.catalog().release_valet_grant(grant.grant_id().as_str()).await
            {
                tracing::warn!(error = %e, "could not give a failed single-use upload its use back");
            }
            served
        }
        Err(refusal) => Err(refusal),
    };
    let mut response = match outcome {
        Ok((response, action)) => {
            record(&app, &tenant, action, target, &id);
            response
        }
        Err(refusal) => {
            app.valet_refusals.get_or_create(&RefusalLabels { code: refusal.code }).inc();
            record(&app, &tenant, "valet.refused", format!("{target} {}", refusal.code), &id);
            ApiError::new(refusal.status, refusal.code, refusal.detail).into_response()
        }
    };
    let headers = response.headers_mut();
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("private"));
    response
}

async fn serve(app: &App, grant: &Grant, request: Request) -> Result<(Response, &'static str), Refusal> {
    let api = |e: ApiError| Refusal { status: e.status(), code: e.code(), detail: e.detail().to_owned() };
    let tenant = TenantId::parse(grant.tenant()).map_err(|_| Refusal::forbidden("valet_malformed", "bad tenant"))?;
    let path = blob_path(grant.path()).map_err(api)?;
    if grant.permission() == Permission::Read {
        let head = request.method() == axum::http::Method::HEAD;
        let mut response = serve_blob(app, &tenant, &path, request.headers(), head).await.map_err(api)?;
        if let Some(disposition) = &grant.constraints().content_disposition
            && let Ok(value) = HeaderValue::from_str(disposition)
            && response.status().is_success()
        {
            response.headers_mut().insert(header::CONTENT_DISPOSITION, value);
        }
        return Ok((response, "valet.download"));
    }
    let (parts, body) = request.into_parts();
    let content_type = content_type_of(&parts.headers).map_err(api)?;
    if let Some(signed) = &grant.constraints().content_type
        && !signed.eq_ignore_ascii_case(&content_type)
    {
        return Err(Refusal {
            status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
            code: "valet_content_type",
            detail: format!("this valet key uploads `{signed}` only"),
        });
    }
    let (tier, _) = app.router.tenant_limits(tenant.as_str()).ok_or_else(|| api(ApiError::tenant_not_found()))?;
    let tier_max = app.blobs.max_size(tier);
    let max_size = grant.constraints().max_size.map_or(tier_max, |signed| signed.min(tier_max));
    let blob = NewBlob { tenant: &tenant, path: &path, content_type, condition: BlobCondition::Always, max_size };
    let (created, meta) = store_blob(app, blob, &parts.headers, body).await.map_err(api)?;
    let status = if created { StatusCode::CREATED } else { StatusCode::OK };
    let response =
        (status, [(header::ETAG, crate::blob_service::etag(&meta))], axum::Json(super::blobs::BlobInfo::from(&meta)));
    Ok((response.into_response(), "valet.upload"))
}
