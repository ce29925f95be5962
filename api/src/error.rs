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
    /// An error with `status`, stable `code` and human `detail`.
    pub fn new(status: StatusCode, code: &'static str, detail: impl Into<String>) -> Self {
        Self { status, code, detail: detail.into(), www_authenticate: None, retry_after_secs: None }
    }

    /// 400 with `code`.
    pub fn bad_request(code: &'static str, detail: impl Into<String>) -> Self {
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
            StoreError::ShardNotFound(id) => {
                Self::new(StatusCode::NOT_FOUND, "shard_not_found", format!("shard {id} not found"))
            }
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
    ApiError::bad_request("invalid_path", e.to_string())
}

impl From<PathRejection> for ApiError {
    fn from(e: PathRejection) -> Self {
        Self::bad_request("invalid_path", e.body_text())
    }
}

impl From<QueryRejection> for ApiError {
    fn from(e: QueryRejection) -> Self {
        Self::bad_request("invalid_query", e.body_text())
    }
}

impl From<JsonRejection> for ApiError {
    fn from(e: JsonRejection) -> Self {
        match e {
            JsonRejection::JsonDataError(e) => Self::bad_request("invalid_body", e.body_text()),
            JsonRejection::JsonSyntaxError(e) => Self::bad_request("invalid_json", e.body_text()),
            JsonRejection::MissingJsonContentType(e) => {
                Self::new(StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type", e.body_text())
            }
            JsonRejection::BytesRejection(e) => Self::from(e),
            other => Self::bad_request("invalid_body", other.body_text()),
        }
    }
}

impl From<BytesRejection> for ApiError {
    fn from(e: BytesRejection) -> Self {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            Self::payload_too_large()
        } else {
            Self::bad_request("invalid_body", e.body_text())
        }
    }
}
