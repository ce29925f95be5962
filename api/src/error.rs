//! The one place where failures become HTTP responses.
//!
//! Policy: every error is `application/problem+json` (RFC 9457) with a stable `code` that clients
//! can branch on; `detail` is for humans. Client mistakes are 4xx with a message that says what
//! to fix. Unavailable databases are 503 (with `Retry-After`). Anything else is 500 `internal`
//! with no internals in the body; the cause is logged once, here, with the request's span.

use axum::extract::rejection::{BytesRejection, JsonRejection, PathRejection, QueryRejection};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use shardgate_gatekeeper::AuthError;
use shardgate_index_tables::IndexError;
use shardgate_shard_router::{Error as StoreError, InvalidId};
use shardgate_valet::ValetError;
use utoipa::ToSchema;

/// An RFC 9457 problem document.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(example = json!({"type": "about:blank", "title": "Not Found", "status": 404, "code": "record_not_found", "detail": "record not found"}))]
pub struct Problem {
    /// Always `about:blank`: the `code` identifies the problem.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The HTTP reason phrase.
    pub title: String,
    /// The HTTP status.
    pub status: u16,
    /// Stable machine-readable code, e.g. `record_not_found`.
    pub code: &'static str,
    /// Human-readable explanation.
    pub detail: String,
}

/// A failure on its way to becoming a problem response.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    detail: String,
    www_authenticate: Option<&'static str>,
    retry_after_secs: Option<u32>,
}

impl ApiError {
    /// An error with `status`, stable `code` and human `detail`. Private: every status and code
    /// the API answers with is named in this file.
    fn new(status: StatusCode, code: &'static str, detail: impl Into<String>) -> Self {
        Self { status, code, detail: detail.into(), www_authenticate: None, retry_after_secs: None }
    }

    /// 400 with `code`.
    fn bad_request(code: &'static str, detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, detail)
    }

    /// 404 `tenant_not_found`: also what a token of another tenant gets, so existence never leaks.
    pub fn tenant_not_found() -> Self {
        Self::new(StatusCode::NOT_FOUND, "tenant_not_found", "tenant not found")
    }

    /// 403 `insufficient_scope`.
    pub fn insufficient_scope(scope: &str) -> Self {
        Self::new(StatusCode::FORBIDDEN, "insufficient_scope", format!("this operation needs the `{scope}` scope"))
    }

    /// 503 `overloaded` with `Retry-After: 1`: too many requests in progress.
    pub fn overloaded() -> Self {
        let mut err =
            Self::new(StatusCode::SERVICE_UNAVAILABLE, "overloaded", "too many requests in progress; retry shortly");
        err.retry_after_secs = Some(1);
        err
    }

    /// 429 `rate_limited` with `Retry-After`.
    pub fn rate_limited(detail: String, retry_after_secs: u64) -> Self {
        let mut err = Self::new(StatusCode::TOO_MANY_REQUESTS, "rate_limited", detail);
        err.retry_after_secs = Some(u32::try_from(retry_after_secs).unwrap_or(u32::MAX));
        err
    }

    /// 413 `payload_too_large`.
    pub fn payload_too_large() -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", "the request body is larger than the limit")
    }

    /// 400 `invalid_path`: a path segment breaks its rule.
    pub fn invalid_path(detail: impl Into<String>) -> Self {
        Self::bad_request("invalid_path", detail)
    }

    /// 400 `invalid_query`: a query parameter is malformed.
    pub fn invalid_query(detail: impl Into<String>) -> Self {
        Self::bad_request("invalid_query", detail)
    }

    /// 400 `invalid_body`: the body is well-formed but not what the operation takes.
    pub fn invalid_body(detail: impl Into<String>) -> Self {
        Self::bad_request("invalid_body", detail)
    }

    /// 400 `invalid_json`: the body is not JSON.
    pub fn invalid_json(detail: impl Into<String>) -> Self {
        Self::bad_request("invalid_json", detail)
    }

    /// 400 `json_too_deep`: a record value nests deeper than `max_depth`.
    pub fn json_too_deep(max_depth: usize) -> Self {
        Self::bad_request("json_too_deep", format!("the value nests arrays and objects deeper than {max_depth} levels"))
    }

    /// 400 `invalid_header`: a header the operation reads is malformed or not allowed.
    pub fn invalid_header(detail: impl Into<String>) -> Self {
        Self::bad_request("invalid_header", detail)
    }

    /// 400 `invalid_cursor`: a listing's cursor was not issued by this server.
    pub fn invalid_cursor() -> Self {
        Self::bad_request("invalid_cursor", "the cursor is not one this server issued")
    }

    /// 414 `uri_too_long`.
    pub fn uri_too_long(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::URI_TOO_LONG, "uri_too_long", detail)
    }

    /// 415 `unsupported_media_type`.
    pub fn unsupported_media_type(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type", detail)
    }

    /// 404 `shard_not_found` (also for a shard id that breaks the naming rule: no such shard).
    pub fn shard_not_found(id: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, "shard_not_found", format!("shard {id} not found"))
    }

    /// 404 `not_found`: no endpoint at this path.
    pub fn no_such_endpoint() -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", "no such endpoint")
    }

    /// 405 `method_not_allowed`.
    pub fn method_not_allowed() -> Self {
        Self::new(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", "this endpoint does not support the method")
    }

    /// 401 `invalid_internal_credential`: a trusted backend's request did not come from the
    /// gatekeeper.
    pub fn invalid_internal_credential(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "invalid_internal_credential", detail)
    }

    /// 502 `upstream_unavailable` with `Retry-After: 1`: the gatekeeper's backend cannot be reached.
    pub fn upstream_unavailable() -> Self {
        let mut err = Self::new(StatusCode::BAD_GATEWAY, "upstream_unavailable", "the backend could not be reached");
        err.retry_after_secs = Some(1);
        err
    }

    /// 504 `request_timeout`: the request's deadline passed.
    pub fn request_timeout() -> Self {
        Self::new(StatusCode::GATEWAY_TIMEOUT, "request_timeout", "the request took longer than the limit")
    }

    /// 403 `valet_malformed`: a `/valet/` path that breaks the path rules is refused like any
    /// other bad valet URL.
    pub fn valet_malformed(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "valet_malformed", detail)
    }

    /// 404 `valet_key_not_found`.
    pub fn valet_key_not_found() -> Self {
        Self::new(StatusCode::NOT_FOUND, "valet_key_not_found", "no such valet key")
    }

    /// 404 `job_not_found`.
    pub fn job_not_found() -> Self {
        Self::new(StatusCode::NOT_FOUND, "job_not_found", "no such job")
    }

    /// 404 `signing_key_not_found`.
    pub fn signing_key_not_found() -> Self {
        Self::new(StatusCode::NOT_FOUND, "signing_key_not_found", "no such signing key")
    }

    /// 409 `signing_key_current`: the current signing key cannot be retired.
    pub fn signing_key_current() -> Self {
        Self::new(
            StatusCode::CONFLICT,
            "signing_key_current",
            "the current signing key cannot be retired; rotate first",
        )
    }

    /// 503 `catalog_unavailable` with `Retry-After: 5`.
    pub fn catalog_unavailable() -> Self {
        let mut err =
            Self::new(StatusCode::SERVICE_UNAVAILABLE, "catalog_unavailable", "the catalog cannot be reached");
        err.retry_after_secs = Some(5);
        err
    }

    /// 412 `precondition_failed`: an `If-Match` / `If-None-Match` the item does not satisfy.
    pub fn precondition_failed(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::PRECONDITION_FAILED, "precondition_failed", detail)
    }

    /// 413 `payload_too_large` naming the limit.
    pub fn larger_than(max_size: u64) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!("the blob is larger than the limit of {max_size} bytes"),
        )
    }

    /// 416 `range_not_satisfiable` (the caller adds `Content-Range: bytes */size`).
    pub fn range_not_satisfiable(size: u64) -> Self {
        Self::new(StatusCode::RANGE_NOT_SATISFIABLE, "range_not_satisfiable", format!("the blob has {size} bytes"))
    }

    /// 400 `upload_interrupted`: the upload's body could not be read to its end.
    pub fn upload_interrupted(detail: impl Into<String>) -> Self {
        Self::bad_request("upload_interrupted", detail)
    }

    /// 500 `internal`, logging `cause`.
    pub fn internal(cause: &dyn std::fmt::Display) -> Self {
        tracing::error!(error = %cause, "internal error");
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", "internal server error")
    }

    /// The status this error becomes.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The stable code.
    pub fn code(&self) -> &'static str {
        self.code
    }

    /// The human explanation.
    pub fn detail(&self) -> &str {
        &self.detail
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let problem = Problem {
            kind: "about:blank",
            title: self.status.canonical_reason().unwrap_or("Error").to_owned(),
            status: self.status.as_u16(),
            code: self.code,
            detail: self.detail,
        };
        let body = serde_json::to_vec(&problem).unwrap_or_default();
        let mut response = (self.status, body).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/problem+json"));
        if let Some(value) = self.www_authenticate {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(value));
        }
        if let Some(secs) = self.retry_after_secs {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

impl From<AuthError> for ApiError {
    fn from(e: AuthError) -> Self {
        tracing::debug!(reason = %e, "authentication failed");
        let (code, detail, challenge) = match e {
            AuthError::Missing => ("missing_token", "a bearer token is required", "Bearer"),
            _ => ("invalid_token", "the bearer token is invalid or expired", "Bearer error=\"invalid_token\""),
        };
        let mut err = Self::new(StatusCode::UNAUTHORIZED, code, detail);
        err.www_authenticate = Some(challenge);
        err
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        Self::from(&e)
    }
}

impl From<&StoreError> for ApiError {
    fn from(e: &StoreError) -> Self {
        let unavailable = |code: &'static str, detail: String| {
            let mut err = Self::new(StatusCode::SERVICE_UNAVAILABLE, code, detail);
            err.retry_after_secs = Some(5);
            err
        };
        match e {
            StoreError::TenantNotFound => Self::tenant_not_found(),
            StoreError::TenantExists(id) => {
                Self::new(StatusCode::CONFLICT, "tenant_exists", format!("tenant {id} already exists"))
            }
            StoreError::ShardNotFound(id) => Self::shard_not_found(id.as_str()),
            StoreError::UnknownShard(id) => {
                Self::new(StatusCode::UNPROCESSABLE_ENTITY, "unknown_shard", format!("shard {id} is not registered"))
            }
            StoreError::ShardExists(id) => {
                Self::new(StatusCode::CONFLICT, "shard_exists", format!("shard {id} already exists"))
            }
            StoreError::ShardInUse { .. } => Self::new(StatusCode::CONFLICT, "shard_in_use", e.to_string()),
            StoreError::ShardUnreachable { .. } => {
                Self::new(StatusCode::UNPROCESSABLE_ENTITY, "shard_unreachable", e.to_string())
            }
            StoreError::ShardOffline(id) => unavailable("shard_offline", format!("shard {id} is offline")),
            StoreError::ShardReadOnly(id) => {
                unavailable("shard_read_only", format!("shard {id} is read-only: writes are refused"))
            }
            StoreError::NoShards => {
                unavailable("no_shards", "no shard is registered yet: register one with POST /v1/admin/shards".into())
            }
            StoreError::StaleMap(id) => unavailable(
                "stale_shard_map",
                format!("shard {id} refused a write routed on an outdated shard map; retry"),
            ),
            StoreError::RecordNotFound => Self::new(StatusCode::NOT_FOUND, "record_not_found", "record not found"),
            StoreError::PreconditionFailed => Self::new(
                StatusCode::PRECONDITION_FAILED,
                "precondition_failed",
                "the current version does not satisfy If-Match / If-None-Match",
            ),
            StoreError::WriteContention => {
                Self::new(StatusCode::CONFLICT, "write_contention", "too many concurrent writes to this item; retry")
            }
            StoreError::BlobNotFound => Self::new(StatusCode::NOT_FOUND, "blob_not_found", "blob not found"),
            StoreError::UploadClosed => {
                Self::new(StatusCode::CONFLICT, "upload_closed", "the upload was closed before it finished; retry")
            }
            StoreError::InvalidDatabaseUrl(reason) => Self::bad_request("invalid_database_url", reason.clone()),
            e if e.is_unavailable() => {
                tracing::warn!(error = %e, "database unavailable");
                let code = match e {
                    StoreError::Database { target, .. } if target == "catalog" => "catalog_unavailable",
                    _ => "shard_unavailable",
                };
                unavailable(code, "a database is temporarily unavailable; retry later".into())
            }
            e => Self::internal(e),
        }
    }
}

impl From<ValetError> for ApiError {
    /// Valet refusals: 403 with the refusal's code, but 415 `valet_content_type` for an upload
    /// of another media type than the signed one. A grant field that breaks its rule when
    /// issuing came from the client's request body: 400 `invalid_body`.
    fn from(e: ValetError) -> Self {
        match e {
            ValetError::InvalidField { .. } => Self::bad_request("invalid_body", e.to_string()),
            ValetError::WrongContentType => Self::new(StatusCode::UNSUPPORTED_MEDIA_TYPE, e.code(), e.to_string()),
            ValetError::Malformed(_)
            | ValetError::BadSignature
            | ValetError::Expired
            | ValetError::NotYetValid
            | ValetError::WrongMethod
            | ValetError::UnknownKey
            | ValetError::KeyRetired
            | ValetError::UnknownGrant
            | ValetError::Revoked
            | ValetError::Used => Self::new(StatusCode::FORBIDDEN, e.code(), e.to_string()),
        }
    }
}

impl From<IndexError> for ApiError {
    fn from(e: IndexError) -> Self {
        match e {
            IndexError::InvalidName => Self::bad_request("invalid_path", e.to_string()),
            IndexError::InvalidField
            | IndexError::FieldCount
            | IndexError::DuplicateField
            | IndexError::InvalidLayout(_) => Self::bad_request("invalid_body", e.to_string()),
            IndexError::ValueTooLong { .. } | IndexError::UnindexableValue | IndexError::ValueArity { .. } => {
                Self::bad_request("invalid_index_value", e.to_string())
            }
            IndexError::InvalidValueKey => Self::bad_request("invalid_cursor", e.to_string()),
            IndexError::InvalidJson(_) => Self::bad_request("invalid_json", e.to_string()),
            IndexError::UniqueViolation { .. } | IndexError::DuplicateValue { .. } => {
                Self::new(StatusCode::CONFLICT, "unique_violation", e.to_string())
            }
            IndexError::IndexNotFound | IndexError::JobIndexGone { .. } => {
                Self::new(StatusCode::NOT_FOUND, "index_not_found", e.to_string())
            }
            IndexError::IndexExists => Self::new(StatusCode::CONFLICT, "index_exists", e.to_string()),
            IndexError::IndexBuilding => Self::new(StatusCode::CONFLICT, "index_building", e.to_string()),
            IndexError::InvalidJobTarget { .. } | IndexError::Encoding(_) => Self::internal(&e),
            IndexError::Store(e) => Self::from(&e),
        }
    }
}

/// An invalid identifier in a path: 400 `invalid_path` naming the rule.
pub fn invalid_path(e: InvalidId) -> ApiError {
    ApiError::invalid_path(e.to_string())
}

impl From<PathRejection> for ApiError {
    fn from(e: PathRejection) -> Self {
        Self::invalid_path(e.body_text())
    }
}

impl From<QueryRejection> for ApiError {
    fn from(e: QueryRejection) -> Self {
        Self::invalid_query(e.body_text())
    }
}

impl From<JsonRejection> for ApiError {
    fn from(e: JsonRejection) -> Self {
        match e {
            JsonRejection::JsonDataError(e) => Self::invalid_body(e.body_text()),
            JsonRejection::JsonSyntaxError(e) => Self::invalid_json(e.body_text()),
            JsonRejection::MissingJsonContentType(e) => Self::unsupported_media_type(e.body_text()),
            JsonRejection::BytesRejection(e) => Self::from(e),
            other => Self::invalid_body(other.body_text()),
        }
    }
}

impl From<BytesRejection> for ApiError {
    fn from(e: BytesRejection) -> Self {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            Self::payload_too_large()
        } else {
            Self::invalid_body(e.body_text())
        }
    }
}
