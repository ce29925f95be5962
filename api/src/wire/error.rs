//! The one place where failures become HTTP responses.
//!
//! Policy: every error is `application/problem+json` (RFC 9457) with a stable `code` that clients
//! can branch on; `detail` is for humans. Client mistakes are 4xx with a message that says what
//! to fix. Unavailable databases are 503 (with `Retry-After`). Anything else is 500 `internal`
//! with no internals in the body; the cause is logged once, here, with the request's span. A
//! problem given after the request was routed names the shard-map epoch it was routed on
//! (`x-shardgate-epoch`, [`crate::wire::routed_epoch`]), like the routed answers that succeed.

use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use shardgate_gatekeeper::AuthError;
use shardgate_index_tables::IndexError;
use shardgate_shard_router::health::Refusal;
use shardgate_shard_router::{Error as StoreError, InvalidId, ShardId, TenantId};
use shardgate_valet::ValetError;
use utoipa::ToSchema;

use crate::wire::record_body::RecordBodyError;
use crate::wire::routed_epoch::{EPOCH_HEADER, RoutedEpoch, RoutedProblem};

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
    /// The trace of the request (32 hex digits, W3C), when traces are on: quote it to find the
    /// request's spans and log lines.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "4bf92f3577b34da6a3ce929d0e0e4736")]
    pub trace_id: Option<String>,
    /// With `quota_exceeded`: the quota the write would cross.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quota: Option<QuotaProblem>,
}

/// The quota a refused write would cross (in a `quota_exceeded` problem).
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
pub struct QuotaProblem {
    /// The quota: `records`, `record_bytes`, `blobs`, `blob_bytes` or `index_entries`.
    #[schema(example = "records")]
    pub name: &'static str,
    /// Its limit.
    pub limit: u64,
    /// What the tenant uses of it, with what instances may still let through.
    pub used: u64,
    /// What the write would add.
    pub requested: u64,
}

/// Declares [`Code`] from one table: every code the API answers with, its status and what it
/// means. Problems take their status from here, and the OpenAPI document its error responses.
macro_rules! codes {
    ($($variant:ident = ($code:literal, $status:ident, $meaning:literal),)*) => {
        /// A stable problem code.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Code {
            $(#[doc = $meaning] $variant,)*
        }

        impl Code {
            /// Every code, in table order.
            pub const ALL: &[Code] = &[$(Code::$variant,)*];

            /// The code as clients see it, e.g. `record_not_found`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Code::$variant => $code,)*
                }
            }

            /// The status of every problem with this code.
            pub fn status(self) -> StatusCode {
                match self {
                    $(Code::$variant => StatusCode::$status,)*
                }
            }

            /// What the code means, for the API's documentation.
            pub fn meaning(self) -> &'static str {
                match self {
                    $(Code::$variant => $meaning,)*
                }
            }
        }
    };
}

codes! {
    InvalidPath = ("invalid_path", BAD_REQUEST, "a path segment breaks its rule"),
    InvalidQuery = ("invalid_query", BAD_REQUEST, "a query parameter is malformed"),
    InvalidCursor = ("invalid_cursor", BAD_REQUEST, "the cursor is not one this server issued"),
    InvalidHeader = ("invalid_header", BAD_REQUEST, "a header the operation reads is malformed or not allowed"),
    InvalidRequest = ("invalid_request", BAD_REQUEST, "the request head is not valid HTTP/1.1 (answered before any routing; the connection is closed)"),
    InvalidJson = ("invalid_json", BAD_REQUEST, "the body is not JSON"),
    InvalidBody = ("invalid_body", BAD_REQUEST, "the body is well-formed but not what the operation takes"),
    JsonTooDeep = ("json_too_deep", BAD_REQUEST, "the value nests arrays and objects too deep"),
    InvalidIndexValue = ("invalid_index_value", BAD_REQUEST, "the value cannot be looked up in this index"),
    InvalidDatabaseUrl = ("invalid_database_url", BAD_REQUEST, "the database URL is not one the gateway can use"),
    UploadInterrupted = ("upload_interrupted", BAD_REQUEST, "the upload's body could not be read to its end"),
    MissingToken = ("missing_token", UNAUTHORIZED, "a bearer token is required"),
    InvalidToken = ("invalid_token", UNAUTHORIZED, "the bearer token is invalid or expired"),
    TokenPredatesTenant = ("token_predates_tenant", UNAUTHORIZED, "the token was issued before its tenant was created (a tenant deleted and created again is a new tenant), or has no `iat` to tell; get a new token"),
    TokenIssuedInFuture = ("token_issued_in_future", UNAUTHORIZED, "the token's `iat` is later than now (beyond the clock-skew leeway, `auth.leeway_secs`): no token is issued in the future; get a new token"),
    KeySetUnavailable = ("key_set_unavailable", UNAUTHORIZED, "the token's issuer has its keys fetched from its identity provider, and no key set has been fetched yet (`/readyz` shows why)"),
    KeySetExpired = ("key_set_expired", UNAUTHORIZED, "the key set of the token's issuer is older than its `jwks_max_age_secs`: its identity provider has not answered for that long (`/readyz` shows why)"),
    InvalidInternalCredential = ("invalid_internal_credential", UNAUTHORIZED, "the request did not come from the gatekeeper"),
    InsufficientScope = ("insufficient_scope", FORBIDDEN, "the token lacks the scope the operation needs"),
    TenantTokenWithAdminScope = ("tenant_token_with_admin_scope", FORBIDDEN, "the token names a tenant and carries the platform `admin` scope: a tenant's token is never a platform admin, so it is refused on every route; an admin token has no `tenant` claim (`shardgate token --admin`)"),
    MissingTenantClaim = ("missing_tenant_claim", FORBIDDEN, "the token has no `tenant` claim (an admin or other platform token): a tenant's data needs a token bound to the tenant (`shardgate token --tenant <id>`)"),
    ValetMalformed = ("valet_malformed", FORBIDDEN, "the valet URL is malformed"),
    ValetBadSignature = ("valet_bad_signature", FORBIDDEN, "the valet URL's signature does not match"),
    ValetExpired = ("valet_expired", FORBIDDEN, "the valet URL has expired"),
    ValetNotYetValid = ("valet_not_yet_valid", FORBIDDEN, "the valet URL is not valid yet"),
    ValetWrongMethod = ("valet_wrong_method", FORBIDDEN, "the valet URL was not signed for this method"),
    ValetUnknownKey = ("valet_unknown_key", FORBIDDEN, "the valet URL was signed with an unknown key"),
    ValetKeyRetired = ("valet_key_retired", FORBIDDEN, "the valet URL's signing key is retired"),
    ValetUnknownGrant = ("valet_unknown_grant", FORBIDDEN, "the valet URL's grant is unknown"),
    ValetRevoked = ("valet_revoked", FORBIDDEN, "the valet URL's grant was revoked"),
    ValetUsed = ("valet_used", FORBIDDEN, "the single-use valet URL was already used"),
    NotFound = ("not_found", NOT_FOUND, "no endpoint at this path"),
    TenantNotFound = ("tenant_not_found", NOT_FOUND, "no such tenant (also what another tenant's token gets)"),
    RecordNotFound = ("record_not_found", NOT_FOUND, "no such record"),
    BlobNotFound = ("blob_not_found", NOT_FOUND, "no such blob"),
    IndexNotFound = ("index_not_found", NOT_FOUND, "no such index"),
    ShardNotFound = ("shard_not_found", NOT_FOUND, "no such shard"),
    JobNotFound = ("job_not_found", NOT_FOUND, "no such job"),
    ValetKeyNotFound = ("valet_key_not_found", NOT_FOUND, "no such valet key"),
    SigningKeyNotFound = ("signing_key_not_found", NOT_FOUND, "no such signing key"),
    ProposalNotFound = ("proposal_not_found", NOT_FOUND, "no such balancer proposal"),
    MethodNotAllowed = ("method_not_allowed", METHOD_NOT_ALLOWED, "the endpoint does not support the method"),
    BodyTimeout = ("body_timeout", REQUEST_TIMEOUT, "the request's body did not all arrive within the request deadline; nothing was done with it"),
    TransferStalled = ("transfer_stalled", REQUEST_TIMEOUT, "the upload's body stopped arriving for longer than the idle limit; nothing of it was stored"),
    TenantExists = ("tenant_exists", CONFLICT, "a tenant with this id exists"),
    ShardExists = ("shard_exists", CONFLICT, "a shard with this id exists"),
    ShardInUse = ("shard_in_use", CONFLICT, "the shard still holds data or is still routed to"),
    ShardDatabaseClaimed = ("shard_database_claimed", CONFLICT, "the database already carries another shard's identity marker: one database is never two shards"),
    ShardIdentityMismatch = ("shard_identity_mismatch", CONFLICT, "the new URL reaches a database that is not this shard (no identity marker, or another shard's or catalog's); nothing was changed"),
    WriteContention = ("write_contention", CONFLICT, "too many concurrent writes to this item; retry"),
    UploadClosed = ("upload_closed", CONFLICT, "the upload was closed before it finished; retry"),
    UniqueViolation = ("unique_violation", CONFLICT, "another record holds this value of a unique index"),
    IndexExists = ("index_exists", CONFLICT, "another definition has this name"),
    IndexLimitReached = ("index_limit_reached", CONFLICT, "the collection has as many index definitions as its tenant's tier allows (`limits.max_indexes_per_collection`); delete one, or have an operator raise the cap or the tenant's tier"),
    QuotaExceeded = ("quota_exceeded", CONFLICT, "the write would take the tenant's usage over one of its quotas (named in `quota`, with its limit, what is in use and what the write asked for); nothing was changed. Delete data, or have an operator raise the quota or the tenant's tier; writes that shrink usage are always allowed"),
    IndexBuilding = ("index_building", CONFLICT, "the index's backfill has not finished"),
    IndexFailed = ("index_failed", CONFLICT, "the index's build failed (see its `failure`); fix the records and PUT the definition again to retry, or delete it"),
    JobConflict = ("job_conflict", CONFLICT, "another job is moving the tenant or its vshard, or a rebalance runs already; wait for it to end (`GET /v1/admin/jobs/{id}`) or cancel it"),
    DistributionRefused = ("distribution_refused", CONFLICT, "the collection's distribution cannot be changed this way: it holds records (changing a non-empty collection's distribution is not supported yet), or a range names a shard that takes no new data"),
    MoveRefused = ("move_refused", CONFLICT, "the move cannot be made: the tenant is on that shard already, the shard does not take writes, no active shard can receive what a draining shard holds, or the job is past its cut-over"),
    ProposalSettled = ("proposal_settled", CONFLICT, "the balancer's proposal was approved, expired or failed already (see `GET /v1/admin/balancer`)"),
    ProposalStale = ("proposal_stale", CONFLICT, "the load the balancer's proposal was based on has changed and the balancer would not choose it now; the proposal expired (the next run proposes anew)"),
    BalancerOff = ("balancer_off", CONFLICT, "the balancer is off: switch it to `propose` or `apply` first (`PUT /v1/admin/balancer/mode`)"),
    BalancerElsewhere = ("balancer_elsewhere", CONFLICT, "another instance holds the balancer's lease and runs it; ask that instance, or wait for its lease to run out"),
    JobPastCancel = ("job_past_cancel", CONFLICT, "the move is past its switch (phase `cleanup`): the new placement is in force and the job will finish; it can no longer be cancelled"),
    SigningKeyCurrent = ("signing_key_current", CONFLICT, "the current signing key cannot be retired; rotate first"),
    PreconditionFailed = ("precondition_failed", PRECONDITION_FAILED, "the item does not satisfy `If-Match` / `If-None-Match`"),
    PayloadTooLarge = ("payload_too_large", PAYLOAD_TOO_LARGE, "the body is larger than the limit"),
    UriTooLong = ("uri_too_long", URI_TOO_LONG, "the path is longer than 2048 bytes, or the request target (path and query) longer than 8 KiB"),
    UnsupportedMediaType = ("unsupported_media_type", UNSUPPORTED_MEDIA_TYPE, "the body is not of a media type the operation takes"),
    ValetContentType = ("valet_content_type", UNSUPPORTED_MEDIA_TYPE, "the upload is not of the signed media type"),
    RangeNotSatisfiable = ("range_not_satisfiable", RANGE_NOT_SATISFIABLE, "the range starts beyond the blob's end"),
    UnknownShard = ("unknown_shard", UNPROCESSABLE_ENTITY, "the body names a shard that is not registered"),
    ShardUnreachable = ("shard_unreachable", UNPROCESSABLE_ENTITY, "the shard's database cannot be reached"),
    ShardTlsFailed = ("shard_tls_failed", UNPROCESSABLE_ENTITY, "TLS to the shard's database failed as its URL asks for it (sslmode, sslrootcert, sslcert, sslkey): a file cannot be used, the server offers no TLS, its certificate is not trusted or not for the host name, or it refused the client certificate; the detail says which"),
    UnsafeShardUrl = ("unsafe_shard_url", UNPROCESSABLE_ENTITY, "the URL names a database that cannot be a shard: an in-memory SQLite database, or a SQLite file while the catalog is PostgreSQL"),
    InvalidSpan = ("invalid_span", UNPROCESSABLE_ENTITY, "the span asked for is not a duration from one window (`storage.load.window`) to the retention (`storage.load.retention`); the detail gives both"),
    RateLimited = ("rate_limited", TOO_MANY_REQUESTS, "over the caller's rate limit (its tenant's, or its IP address's without a valid token); see `Retry-After`, `RateLimit` and `RateLimit-Policy`"),
    FanOutLimit = ("fan_out_limit", TOO_MANY_REQUESTS, "the tenant already has as many listings of distributed collections in progress as `limits.tenant_concurrent_fan_outs` allows, or its listings have read as many shards this second as `limits.tenant_fan_out_shard_reads_per_second` allows; see `Retry-After`"),
    TenantConcurrencyLimit = ("tenant_concurrency_limit", TOO_MANY_REQUESTS, "the caller's tenant (for a token without a tenant, its subject) already has as many requests in progress as its tier allows; see `Retry-After`"),
    AnonymousConcurrencyLimit = ("anonymous_concurrency_limit", TOO_MANY_REQUESTS, "requests without a valid token already fill the requests in progress they may hold together; see `Retry-After`"),
    HeadersTooLarge = ("headers_too_large", REQUEST_HEADER_FIELDS_TOO_LARGE, "the request head (request line and header fields) is larger than 64 KiB or has more than 100 header fields (answered before any routing; the connection is closed)"),
    Internal = ("internal", INTERNAL_SERVER_ERROR, "an unexpected failure, logged by the server"),
    BlobDamaged = ("blob_damaged", INTERNAL_SERVER_ERROR, "the blob's stored chunks are missing or of the wrong length (its shard's database was damaged or restored from backups of different moments): nothing of it is served, the server logs it at ERROR and `shardgate check` lists it as `blob_damaged`; write the blob again, or have an operator restore it"),
    UpstreamUnavailable = ("upstream_unavailable", BAD_GATEWAY, "the gatekeeper's backend cannot be reached"),
    ShardReadOnly = ("shard_read_only", SERVICE_UNAVAILABLE, "the shard is read-only: writes are refused"),
    ShardOffline = ("shard_offline", SERVICE_UNAVAILABLE, "the shard is offline"),
    ShardUnavailable = ("shard_unavailable", SERVICE_UNAVAILABLE, "the shard's database cannot be reached, or its circuit breaker is open; retry after `Retry-After`"),
    ShardBusy = ("shard_busy", SERVICE_UNAVAILABLE, "too many requests in progress on the shard; retry after `Retry-After`"),
    StaleShardMap = ("stale_shard_map", SERVICE_UNAVAILABLE, "the shard refused a write routed on an outdated shard map; retry"),
    TenantMoving = ("tenant_moving", SERVICE_UNAVAILABLE, "the tenant is moving to another shard and its cut-over took longer than the wait allows; nothing was applied, retry after `Retry-After`"),
    NoShards = ("no_shards", SERVICE_UNAVAILABLE, "no shard is registered yet"),
    CatalogUnavailable = ("catalog_unavailable", SERVICE_UNAVAILABLE, "the catalog cannot be reached; retry later"),
    Overloaded = ("overloaded", SERVICE_UNAVAILABLE, "too many requests in progress"),
    RequestTimeout = ("request_timeout", GATEWAY_TIMEOUT, "the request took longer than the limit"),
    WriteOutcomeUnknown = ("write_outcome_unknown", GATEWAY_TIMEOUT, "the write was given up on after it may have reached its database: it may or may not have been applied; read the item, then retry with `If-Match` on the version read"),
}

/// The `WWW-Authenticate` challenge of a token that was refused.
const INVALID_TOKEN_CHALLENGE: &str = "Bearer error=\"invalid_token\"";

/// A failure on its way to becoming a problem response.
#[derive(Debug)]
pub struct ApiError {
    code: Code,
    detail: String,
    www_authenticate: Option<&'static str>,
    retry_after_secs: Option<u32>,
    routed_on: Option<RoutedEpoch>,
    quota: Option<QuotaProblem>,
}

impl ApiError {
    /// An error with `code` (and so the code's status) and human `detail`.
    pub fn new(code: Code, detail: impl Into<String>) -> Self {
        Self {
            code,
            detail: detail.into(),
            www_authenticate: None,
            retry_after_secs: None,
            routed_on: None,
            quota: None,
        }
    }

    /// The quota a `quota_exceeded` refusal names (`None` for any other error).
    pub fn quota_name(&self) -> Option<&'static str> {
        self.quota.as_ref().map(|quota| quota.name)
    }

    /// The same error, answered with `Retry-After: secs`.
    fn retry_after(mut self, secs: u32) -> Self {
        self.retry_after_secs = Some(secs);
        self
    }

    /// 401 `token_predates_tenant`, with the `Bearer` challenge of an invalid token.
    pub fn token_predates_tenant(detail: impl Into<String>) -> Self {
        let mut err = Self::new(Code::TokenPredatesTenant, detail);
        err.www_authenticate = Some(INVALID_TOKEN_CHALLENGE);
        err
    }

    /// 404 `tenant_not_found`: also what a token of another tenant gets, so existence never leaks.
    pub fn tenant_not_found() -> Self {
        Self::new(Code::TenantNotFound, "tenant not found")
    }

    /// 403 `missing_tenant_claim`: a token bound to no tenant (an admin token) asked for
    /// `tenant`'s data.
    pub fn missing_tenant_claim(tenant: Option<&shardgate_shard_router::TenantId>) -> Self {
        let (whose, id) = match tenant {
            Some(tenant) => (format!("tenant {tenant}'s"), tenant.as_str()),
            None => ("a tenant's".to_owned(), "<id>"),
        };
        Self::new(
            Code::MissingTenantClaim,
            format!(
                "the token has no `tenant` claim (it is an admin or other platform token), and {whose} data needs a \
                 token bound to the tenant: `shardgate token --tenant {id} --scopes read,write`"
            ),
        )
    }

    /// 403 `insufficient_scope`.
    pub fn insufficient_scope(scope: &str) -> Self {
        Self::new(Code::InsufficientScope, format!("this operation needs the `{scope}` scope"))
    }

    /// 503 `overloaded` with `Retry-After: 1`: too many requests in progress.
    pub fn overloaded() -> Self {
        Self::new(Code::Overloaded, "too many requests in progress; retry shortly").retry_after(1)
    }

    /// 429 `tenant_concurrency_limit` (or `anonymous_concurrency_limit`) with `Retry-After: 1`:
    /// `who` (e.g. `tenant acme`) already has `cap` requests in progress. Never queued.
    pub fn concurrency_limited(code: Code, who: &str, cap: usize) -> Self {
        let detail = format!("{who} already has {cap} requests in progress, its limit; retry when one has finished");
        Self::new(code, detail).retry_after(1)
    }

    /// 429 `fan_out_limit` with `Retry-After: 1`: `tenant` already has `cap` listings of
    /// distributed collections in progress. Never queued.
    pub fn fan_outs_limited(tenant: &str, cap: usize) -> Self {
        let detail = format!(
            "tenant {tenant} already has {cap} listings of distributed collections in progress, its limit; retry when \
             one has finished"
        );
        Self::new(Code::FanOutLimit, detail).retry_after(1)
    }

    /// 429 `fan_out_limit` with `Retry-After`: `tenant`'s listings of distributed collections
    /// have spent their `per_second` shard reads; `wait` until the listing fits.
    pub fn fan_out_budget_spent(tenant: &str, per_second: u32, wait: std::time::Duration) -> Self {
        let detail = format!(
            "tenant {tenant}'s listings of distributed collections have read {per_second} shards in the last second, \
             their limit; retry in {} ms",
            wait.as_millis().max(1)
        );
        Self::new(Code::FanOutLimit, detail).retry_after(u32::try_from(wait.as_secs()).unwrap_or(u32::MAX).max(1))
    }

    /// 408 `transfer_stalled`: no byte of the upload's body arrived for `idle`.
    pub fn transfer_stalled(idle: std::time::Duration) -> Self {
        let detail = format!(
            "no byte of the body arrived for {} ms; the upload was abandoned and nothing of it was stored",
            idle.as_millis()
        );
        Self::new(Code::TransferStalled, detail)
    }

    /// 429 `rate_limited` with `Retry-After`.
    pub fn rate_limited(detail: String, retry_after_secs: u64) -> Self {
        Self::new(Code::RateLimited, detail).retry_after(u32::try_from(retry_after_secs).unwrap_or(u32::MAX))
    }

    /// 413 `payload_too_large`.
    pub fn payload_too_large() -> Self {
        Self::new(Code::PayloadTooLarge, "the request body is larger than the limit")
    }

    /// 400 `json_too_deep`: a record value nests deeper than `max_depth`.
    pub fn json_too_deep(max_depth: usize) -> Self {
        Self::new(Code::JsonTooDeep, format!("the value nests arrays and objects deeper than {max_depth} levels"))
    }

    /// 400 `invalid_cursor`: a listing's cursor was not issued by this server.
    pub fn invalid_cursor() -> Self {
        Self::new(Code::InvalidCursor, "the cursor is not one this server issued")
    }

    /// 404 `shard_not_found` (also for a shard id that breaks the naming rule: no such shard).
    pub fn shard_not_found(id: &str) -> Self {
        Self::new(Code::ShardNotFound, format!("shard {id} not found"))
    }

    /// 503 `shard_unavailable` with `Retry-After: 1`: a strict fan-out missed some shards.
    pub fn shards_missing(detail: String) -> Self {
        Self::new(Code::ShardUnavailable, detail).retry_after(1)
    }

    /// 502 `upstream_unavailable` with `Retry-After: 1`: the gatekeeper's backend cannot be reached.
    pub fn upstream_unavailable() -> Self {
        Self::new(Code::UpstreamUnavailable, "the backend could not be reached").retry_after(1)
    }

    /// 503 `catalog_unavailable` with `Retry-After: 5`.
    pub fn catalog_unavailable() -> Self {
        Self::new(Code::CatalogUnavailable, "the catalog cannot be reached").retry_after(5)
    }

    /// 413 `payload_too_large` naming the limit.
    pub fn larger_than(max_size: u64) -> Self {
        Self::new(Code::PayloadTooLarge, format!("the blob is larger than the limit of {max_size} bytes"))
    }

    /// 416 `range_not_satisfiable` (the caller adds `Content-Range: bytes */size`).
    pub fn range_not_satisfiable(size: u64) -> Self {
        Self::new(Code::RangeNotSatisfiable, format!("the blob has {size} bytes"))
    }

    /// 500 `internal`, logging `cause`.
    pub fn internal(cause: &dyn std::fmt::Display) -> Self {
        tracing::error!(error = %cause, "internal error");
        Self::new(Code::Internal, "internal server error")
    }

    /// The status this error becomes.
    pub fn status(&self) -> StatusCode {
        self.code.status()
    }

    /// The stable code.
    pub fn code(&self) -> &'static str {
        self.code.as_str()
    }

    /// The human explanation.
    pub fn detail(&self) -> &str {
        &self.detail
    }
}

impl RoutedProblem for ApiError {
    /// The same problem, given after the request was routed on `epoch`: it carries
    /// `x-shardgate-epoch`.
    fn routed_on(mut self, epoch: RoutedEpoch) -> Self {
        self.routed_on = Some(epoch);
        self
    }
}

impl From<Code> for ApiError {
    /// A problem whose detail is what the code means.
    fn from(code: Code) -> Self {
        Self::new(code, code.meaning())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.code.status();
        let problem = Problem {
            kind: "about:blank",
            title: status.canonical_reason().unwrap_or("Error").to_owned(),
            status: status.as_u16(),
            code: self.code.as_str(),
            detail: self.detail,
            trace_id: current_trace_id(),
            quota: self.quota,
        };
        let mut body = serde_json::to_vec(&problem).unwrap_or_default();
        // A newline at the end, so a shell prompt after `curl` starts on a line of its own.
        body.push(b'\n');
        let mut response = (status, body).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/problem+json"));
        if let Some(value) = self.www_authenticate {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(value));
        }
        if let Some(secs) = self.retry_after_secs {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if let Some(epoch) = self.routed_on {
            headers.insert(EPOCH_HEADER, epoch.header_value());
        }
        response
    }
}

/// The trace id of the span the problem is answered in (the request's), when traces are on: a
/// span without an OpenTelemetry context (traces off) has none.
fn current_trace_id() -> Option<String> {
    use opentelemetry::trace::TraceContextExt;
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    let context = tracing::Span::current().context();
    let span = context.span();
    let span_context = span.span_context();
    span_context.is_valid().then(|| span_context.trace_id().to_string())
}

impl From<AuthError> for ApiError {
    fn from(e: AuthError) -> Self {
        tracing::debug!(reason = %e, "authentication failed");
        let (code, detail, challenge) = match e {
            AuthError::Missing => (Code::MissingToken, "a bearer token is required".to_owned(), Some("Bearer")),
            AuthError::IssuedInFuture => (
                Code::TokenIssuedInFuture,
                "the token's `iat` (issued at) is later than now, beyond the allowed clock skew: get a new token"
                    .to_owned(),
                Some(INVALID_TOKEN_CHALLENGE),
            ),
            AuthError::KeySetUnavailable => (
                Code::KeySetUnavailable,
                "the keys of the token's issuer have not been fetched from its identity provider yet: try again \
                 shortly (the server's /readyz shows the last fetch error)"
                    .to_owned(),
                Some(INVALID_TOKEN_CHALLENGE),
            ),
            AuthError::KeySetExpired => (
                Code::KeySetExpired,
                "the keys of the token's issuer are older than their maximum age (jwks_max_age_secs): its \
                 identity provider has not answered for that long, so no token of it is accepted (the server's \
                 /readyz shows the last fetch error)"
                    .to_owned(),
                Some(INVALID_TOKEN_CHALLENGE),
            ),
            AuthError::InvalidScope(reason) => {
                (Code::InvalidToken, format!("the bearer token is invalid: {reason}"), Some(INVALID_TOKEN_CHALLENGE))
            }
            AuthError::AdminScopeWithTenant => (
                Code::TenantTokenWithAdminScope,
                "the token names a tenant and carries the platform `admin` scope: a tenant's token is never a \
                 platform admin, and this one is refused everywhere; use a tenant token without `admin`, or an admin \
                 token without `tenant` (`shardgate token --admin`)"
                    .to_owned(),
                None,
            ),
            _ => {
                (Code::InvalidToken, "the bearer token is invalid or expired".to_owned(), Some(INVALID_TOKEN_CHALLENGE))
            }
        };
        let mut err = Self::new(code, detail);
        err.www_authenticate = challenge;
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
        let unavailable = |code: Code, detail: String| Self::new(code, detail).retry_after(5);
        // Nothing was applied: the data is moving (or changing its distribution); retry shortly.
        let moving = |detail: String| Self::new(Code::TenantMoving, detail).retry_after(1);
        match e {
            StoreError::TenantNotFound => Self::tenant_not_found(),
            StoreError::TenantExists(id) => Self::new(Code::TenantExists, format!("tenant {id} already exists")),
            StoreError::ShardNotFound(id) => Self::shard_not_found(id.as_str()),
            StoreError::UnknownShard(id) => Self::new(Code::UnknownShard, format!("shard {id} is not registered")),
            StoreError::ShardExists(id) => Self::new(Code::ShardExists, format!("shard {id} already exists")),
            StoreError::ShardInUse { .. } => Self::new(Code::ShardInUse, e.to_string()),
            StoreError::ShardUnreachable { .. } => Self::new(Code::ShardUnreachable, e.to_string()),
            StoreError::Tls { .. } => Self::new(Code::ShardTlsFailed, e.to_string()),
            StoreError::UnsafeShardUrl(reason) => Self::new(Code::UnsafeShardUrl, reason.clone()),
            StoreError::ShardDatabaseClaimed { .. } => Self::new(Code::ShardDatabaseClaimed, e.to_string()),
            StoreError::ShardIdentityMismatch { .. } => Self::new(Code::ShardIdentityMismatch, e.to_string()),
            StoreError::ShardQuarantined { .. } => unavailable(Code::ShardUnavailable, e.to_string()),
            StoreError::ShardOffline(id) => unavailable(Code::ShardOffline, format!("shard {id} is offline")),
            StoreError::ShardReadOnly(id) => {
                unavailable(Code::ShardReadOnly, format!("shard {id} is read-only: writes are refused"))
            }
            StoreError::NoShards => unavailable(
                Code::NoShards,
                "no shard is registered yet: register one with POST /v1/admin/shards".into(),
            ),
            StoreError::StaleMap(id) => unavailable(
                Code::StaleShardMap,
                format!("shard {id} refused a write routed on an outdated shard map; retry"),
            ),
            StoreError::TenantFenced { tenant, .. }
            | StoreError::TenantMoved { tenant, .. }
            | StoreError::TenantMoving(tenant) => {
                moving(format!("tenant {tenant} is being moved to another shard; nothing was applied, retry shortly"))
            }
            StoreError::VshardFenced { vshard, .. } => moving(format!(
                "the data of vshard {vshard} (index entries, records of hash-distributed collections) is being moved \
                 to another shard; nothing was applied, retry shortly"
            )),
            StoreError::RangeFenced { tenant, collection, .. } => moving(format!(
                "a key range of collection {collection} of tenant {tenant} is being moved to another shard; nothing \
                 was applied, retry shortly"
            )),
            StoreError::CollectionFenced { tenant, collection, .. } => moving(format!(
                "collection {collection} of tenant {tenant} is changing its distribution; nothing was applied, retry \
                 shortly"
            )),
            StoreError::JobConflict { .. } => Self::new(Code::JobConflict, e.to_string()),
            StoreError::MoveRefused(reason) => Self::new(Code::MoveRefused, reason.clone()),
            StoreError::ProposalNotFound(_) => Self::new(Code::ProposalNotFound, e.to_string()),
            StoreError::ProposalSettled { .. } => Self::new(Code::ProposalSettled, e.to_string()),
            StoreError::ProposalStale(reason) => Self::new(Code::ProposalStale, reason.clone()),
            StoreError::BalancerUnavailable { off, reason } => {
                Self::new(if *off { Code::BalancerOff } else { Code::BalancerElsewhere }, reason.clone())
            }
            StoreError::ShardHoldsRange(reason) => Self::new(Code::ShardInUse, reason.clone()),
            StoreError::DistributionRefused(reason) => Self::new(Code::DistributionRefused, reason.clone()),
            StoreError::QuotaExceeded { quota, limit, used, requested } => {
                let mut refused = Self::new(Code::QuotaExceeded, e.to_string());
                refused.quota = Some(QuotaProblem { name: quota, limit: *limit, used: *used, requested: *requested });
                refused
            }
            StoreError::UsageUnknown(_) => unavailable(Code::ShardUnavailable, e.to_string()),
            StoreError::RecordNotFound => Self::new(Code::RecordNotFound, "record not found"),
            StoreError::PreconditionFailed => {
                Self::new(Code::PreconditionFailed, "the current version does not satisfy If-Match / If-None-Match")
            }
            StoreError::WriteContention => {
                Self::new(Code::WriteContention, "too many concurrent writes to this item; retry")
            }
            StoreError::BlobNotFound => Self::new(Code::BlobNotFound, "blob not found"),
            StoreError::UploadClosed => {
                Self::new(Code::UploadClosed, "the upload was closed before it finished; retry")
            }
            StoreError::InvalidDatabaseUrl(reason) => Self::new(Code::InvalidDatabaseUrl, reason.clone()),
            StoreError::CatalogRefused(refusal)
            | StoreError::ShardRefused { refusal, .. }
            | StoreError::WriteOutcomeUnknown { refusal, .. } => {
                let code = match (&e, refusal) {
                    (StoreError::CatalogRefused(_), _) => Code::CatalogUnavailable,
                    (StoreError::WriteOutcomeUnknown { .. }, _) => Code::WriteOutcomeUnknown,
                    (_, Refusal::Busy(_)) => Code::ShardBusy,
                    _ => Code::ShardUnavailable,
                };
                let wait = refusal.retry_after().map_or(1, |wait| wait.as_secs().max(1));
                Self::new(code, e.to_string()).retry_after(u32::try_from(wait).unwrap_or(u32::MAX))
            }
            e if e.is_unavailable() => {
                tracing::warn!(error = %e, "database unavailable");
                let code = match e {
                    StoreError::Database { target, .. } if target == "catalog" => Code::CatalogUnavailable,
                    _ => Code::ShardUnavailable,
                };
                unavailable(code, "a database is temporarily unavailable; retry later".into())
            }
            e => Self::internal(e),
        }
    }
}

/// Why a shard of a listing did not answer, as a tenant sees it in `_shards`: a stable code,
/// never the database's own words or an operator's note (those go to the server log).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ShardFailureReason {
    /// The shard is set `offline`.
    ShardOffline,
    /// The shard's circuit breaker is open (or opened while the read ran).
    BreakerOpen,
    /// Too many statements were in progress on the shard.
    ShardBusy,
    /// The shard did not answer within the listing's deadline.
    Timeout,
    /// The records are moving to another shard (a move's cut-over outlasted the wait).
    Moving,
    /// The shard's database could not be reached.
    ShardUnavailable,
    /// The shard answered with an error.
    ShardError,
}

impl ShardFailureReason {
    /// The problem code the shard's failure would have answered with alone.
    pub fn code(self) -> Code {
        match self {
            Self::ShardOffline => Code::ShardOffline,
            Self::ShardBusy => Code::ShardBusy,
            Self::Moving => Code::TenantMoving,
            Self::BreakerOpen | Self::Timeout | Self::ShardUnavailable => Code::ShardUnavailable,
            Self::ShardError => Code::Internal,
        }
    }

    /// The code as clients see it, e.g. `breaker_open`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ShardOffline => "shard_offline",
            Self::BreakerOpen => "breaker_open",
            Self::ShardBusy => "shard_busy",
            Self::Timeout => "timeout",
            Self::Moving => "moving",
            Self::ShardUnavailable => "shard_unavailable",
            Self::ShardError => "shard_error",
        }
    }
}

impl From<&StoreError> for ShardFailureReason {
    fn from(e: &StoreError) -> Self {
        match e {
            StoreError::ShardOffline(_) => Self::ShardOffline,
            StoreError::ShardRefused { refusal: Refusal::Open { .. } | Refusal::Interrupted { .. }, .. } => {
                Self::BreakerOpen
            }
            StoreError::ShardRefused { refusal: Refusal::Busy(_), .. } => Self::ShardBusy,
            StoreError::ShardRefused { refusal: Refusal::Deadline(_), .. }
            | StoreError::FanOutTimeout(_)
            | StoreError::Timeout => Self::Timeout,
            StoreError::TenantFenced { .. }
            | StoreError::TenantMoved { .. }
            | StoreError::TenantMoving(_)
            | StoreError::VshardFenced { .. }
            | StoreError::RangeFenced { .. }
            | StoreError::CollectionFenced { .. } => Self::Moving,
            StoreError::ShardQuarantined { .. } => Self::ShardUnavailable,
            e if e.is_unavailable() => Self::ShardUnavailable,
            _ => Self::ShardError,
        }
    }
}

impl From<ValetError> for ApiError {
    /// Valet refusals: 403 with the refusal's code, but 415 `valet_content_type` for an upload
    /// of another media type than the signed one. A grant field that breaks its rule when
    /// issuing came from the client's request body: 400 `invalid_body`.
    fn from(e: ValetError) -> Self {
        match e {
            ValetError::InvalidField { .. } => Self::new(Code::InvalidBody, e.to_string()),
            ValetError::WrongContentType => Self::new(Code::ValetContentType, e.to_string()),
            ValetError::Malformed(_) => Self::new(Code::ValetMalformed, e.to_string()),
            ValetError::BadSignature => Self::new(Code::ValetBadSignature, e.to_string()),
            ValetError::Expired => Self::new(Code::ValetExpired, e.to_string()),
            ValetError::NotYetValid => Self::new(Code::ValetNotYetValid, e.to_string()),
            ValetError::WrongMethod => Self::new(Code::ValetWrongMethod, e.to_string()),
            ValetError::UnknownKey => Self::new(Code::ValetUnknownKey, e.to_string()),
            ValetError::KeyRetired => Self::new(Code::ValetKeyRetired, e.to_string()),
            ValetError::UnknownGrant => Self::new(Code::ValetUnknownGrant, e.to_string()),
            ValetError::Revoked => Self::new(Code::ValetRevoked, e.to_string()),
            ValetError::Used => Self::new(Code::ValetUsed, e.to_string()),
        }
    }
}

impl From<IndexError> for ApiError {
    fn from(e: IndexError) -> Self {
        match e {
            IndexError::InvalidName => Self::new(Code::InvalidPath, e.to_string()),
            IndexError::InvalidField
            | IndexError::FieldCount
            | IndexError::DuplicateField
            | IndexError::InvalidLayout(_) => Self::new(Code::InvalidBody, e.to_string()),
            IndexError::ValueTooLong { .. } | IndexError::UnindexableValue | IndexError::ValueArity { .. } => {
                Self::new(Code::InvalidIndexValue, e.to_string())
            }
            IndexError::InvalidValueKey => Self::new(Code::InvalidCursor, e.to_string()),
            IndexError::UniqueViolation { .. } | IndexError::DuplicateValue { .. } => {
                Self::new(Code::UniqueViolation, e.to_string())
            }
            IndexError::IndexNotFound | IndexError::JobIndexGone { .. } => {
                Self::new(Code::IndexNotFound, e.to_string())
            }
            IndexError::IndexExists => Self::new(Code::IndexExists, e.to_string()),
            IndexError::IndexLimitReached { cap } => Self::new(
                Code::IndexLimitReached,
                format!(
                    "the collection has {cap} index definitions, the most its tenant's tier allows \
                     (limits.max_indexes_per_collection): delete an index it no longer needs, or have an operator \
                     raise the cap or the tenant's tier"
                ),
            ),
            IndexError::IndexBuilding => Self::new(Code::IndexBuilding, e.to_string()),
            IndexError::IndexFailed { .. } => Self::new(Code::IndexFailed, e.to_string()),
            IndexError::InvalidJobTarget { .. } | IndexError::Encoding(_) => Self::internal(&e),
            IndexError::Store(e) => Self::from(&e),
        }
    }
}

/// An invalid identifier in a path: 400 `invalid_path` naming the rule.
pub fn invalid_path(e: InvalidId) -> ApiError {
    ApiError::new(Code::InvalidPath, e.to_string())
}

/// The tenant an admin path names: an id that cannot exist is simply not found (404
/// `tenant_not_found`).
pub fn tenant_in_path(raw: &str) -> Result<TenantId, ApiError> {
    TenantId::parse(raw).map_err(|_| ApiError::tenant_not_found())
}

/// The shard an admin path names: an id that cannot exist is simply not found (404
/// `shard_not_found`).
pub fn shard_in_path(raw: &str) -> Result<ShardId, ApiError> {
    ShardId::parse(raw).map_err(|_| ApiError::shard_not_found(raw))
}

impl From<std::convert::Infallible> for ApiError {
    /// For an extractor that cannot fail (the `()` query of [`crate::server::extract::Bound`]).
    fn from(never: std::convert::Infallible) -> Self {
        match never {}
    }
}

impl From<PathRejection> for ApiError {
    fn from(e: PathRejection) -> Self {
        tracing::debug!(reason = %e.body_text(), "path parameters refused");
        Self::new(Code::InvalidPath, "a path segment is not of the form the operation takes")
    }
}

impl From<QueryRejection> for ApiError {
    /// The query parameter at fault and why, without the framework's wording.
    fn from(e: QueryRejection) -> Self {
        let text = e.body_text();
        let reason = text.strip_prefix("Failed to deserialize query string: ").unwrap_or(&text);
        let detail = match reason.split_once(": ") {
            Some((parameter, why)) if !parameter.contains(' ') => {
                format!("query parameter `{parameter}` is not valid: {}", why.replace('`', "'"))
            }
            _ => format!("the query is not valid: {}", reason.replace('`', "'")),
        };
        Self::new(Code::InvalidQuery, detail)
    }
}

impl From<RecordBodyError> for ApiError {
    fn from(e: RecordBodyError) -> Self {
        match e {
            RecordBodyError::NotUtf8 { .. } | RecordBodyError::Syntax { .. } => {
                Self::new(Code::InvalidJson, e.to_string())
            }
            RecordBodyError::TooDeep { max } => Self::json_too_deep(max),
            RecordBodyError::NonFiniteNumber { .. }
            | RecordBodyError::LoneSurrogate { .. }
            | RecordBodyError::DuplicateKey { .. } => Self::new(Code::InvalidBody, e.to_string()),
        }
    }
}

/// The problem of a JSON request body that `serde_json` refused, in the gateway's words: a body
/// that is not JSON is 400 `invalid_json` (with where it breaks), one that is JSON but not what
/// the operation takes is 400 `invalid_body`, naming the field at fault (`path`, dotted, `.` for
/// the body itself) and what it must be.
pub fn json_body_problem(path: &str, e: &serde_json::Error) -> ApiError {
    use serde_json::error::Category;
    match e.classify() {
        Category::Eof => ApiError::new(Code::InvalidJson, "the body is empty or ends before its JSON value does"),
        Category::Syntax | Category::Io => ApiError::new(
            Code::InvalidJson,
            format!("the body is not valid JSON: the error is at line {}, column {}", e.line(), e.column()),
        ),
        Category::Data => ApiError::new(Code::InvalidBody, body_mismatch(path, &without_position(e))),
    }
}

/// `serde_json`'s message without its " at line L column C".
fn without_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let position = format!(" at line {} column {}", e.line(), e.column());
    text.strip_suffix(&position).map_or(text.clone(), str::to_owned)
}

/// Rewrites one of serde's messages about a body's field into a sentence of the gateway's.
fn body_mismatch(path: &str, message: &str) -> String {
    // The path may end with the field itself (an unknown field) or stop at its object (a
    // missing one).
    let at = |field: &str| match path {
        "." | "" => field.to_owned(),
        path if path == field || path.ends_with(&format!(".{field}")) => path.to_owned(),
        path => format!("{path}.{field}"),
    };
    let here = if matches!(path, "." | "") { "the body".to_owned() } else { format!("`{path}`") };
    if let Some(field) = message.strip_prefix("missing field `").and_then(|rest| rest.strip_suffix('`')) {
        return format!("the body lacks `{}`, which is required", at(field));
    }
    if let Some(rest) = message.strip_prefix("unknown field `")
        && let Some((field, expected)) = rest.split_once('`')
    {
        let takes = match expected.strip_prefix(", expected one of ").or_else(|| expected.strip_prefix(", expected ")) {
            Some(list) => format!("; it takes {list}"),
            None => String::new(),
        };
        return format!("the body has a field `{}` this operation does not take{takes}", at(field));
    }
    if let Some(rest) = message.strip_prefix("unknown variant `")
        && let Some((variant, expected)) = rest.split_once('`')
    {
        let list = expected.strip_prefix(", expected one of ").or_else(|| expected.strip_prefix(", expected "));
        return format!("{here} cannot be \"{variant}\"; it is one of {}", list.unwrap_or("the documented values"));
    }
    for prefix in ["invalid type: ", "invalid value: ", "invalid length "] {
        if let Some((actual, expected)) = message.strip_prefix(prefix).and_then(|rest| rest.split_once(", expected ")) {
            return format!("{here} must be {}, not {actual}", plain_expectation(expected));
        }
    }
    format!("{here} is not valid: {message}")
}

/// serde's name of an expected type, as an API user knows it.
fn plain_expectation(expected: &str) -> &str {
    match expected {
        e if e.starts_with("struct ") || e == "a map" => "a JSON object",
        "a sequence" => "an array",
        "u8" | "u16" | "u32" | "u64" | "usize" => "a whole number, 0 or more",
        "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number",
        "f32" | "f64" => "a number",
        e => e,
    }
}

impl From<BytesRejection> for ApiError {
    fn from(e: BytesRejection) -> Self {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            Self::payload_too_large()
        } else {
            tracing::debug!(reason = %e.body_text(), "request body unreadable");
            Self::new(Code::InvalidBody, "the body could not be read to its end")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_is_named_once() {
        let mut names: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Code::ALL.len());
        for code in Code::ALL {
            assert!(code.status().is_client_error() || code.status().is_server_error(), "{code:?}");
        }
    }

    #[test]
    fn a_problem_given_after_routing_names_the_epoch_and_one_given_before_does_not() {
        use shardgate_shard_router::{Route, ShardId, ShardState, Strategy};
        let shard = ShardId::parse("shard-1").unwrap();
        let route = Route { strategy: Strategy::Lookup, vshard: 0, shard, shard_state: ShardState::Active, epoch: 42 };
        let routed = ApiError::from(Code::RecordNotFound).routed_on(RoutedEpoch::of(&route)).into_response();
        assert_eq!(routed.status(), StatusCode::NOT_FOUND);
        assert_eq!(routed.headers()[EPOCH_HEADER], "42");
        assert_eq!(routed.headers()[header::CONTENT_TYPE], "application/problem+json");
        let unrouted = ApiError::from(Code::MissingToken).into_response();
        assert!(unrouted.headers().get(EPOCH_HEADER).is_none());
    }

    #[test]
    fn a_valet_refusal_keeps_the_valet_crates_code() {
        let refusals = [
            ValetError::Malformed("path"),
            ValetError::BadSignature,
            ValetError::Expired,
            ValetError::NotYetValid,
            ValetError::WrongMethod,
            ValetError::UnknownKey,
            ValetError::KeyRetired,
            ValetError::UnknownGrant,
            ValetError::Revoked,
            ValetError::Used,
            ValetError::WrongContentType,
        ];
        for refusal in refusals {
            assert_eq!(ApiError::from(refusal).code(), refusal.code(), "{refusal:?}");
        }
    }

    /// What PostgreSQL answers a connection whose password it refuses: an error with a SQLSTATE
    /// and nothing else (as the driver gives it).
    #[derive(Debug)]
    struct Refused(&'static str);

    impl std::fmt::Display for Refused {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "password authentication failed for user \"app\" ({})", self.0)
        }
    }

    impl std::error::Error for Refused {}

    impl sqlx::error::DatabaseError for Refused {
        fn message(&self) -> &str {
            "password authentication failed for user \"app\""
        }

        fn code(&self) -> Option<std::borrow::Cow<'_, str>> {
            Some(self.0.into())
        }

        fn as_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
            self
        }

        fn as_error_mut(&mut self) -> &mut (dyn std::error::Error + Send + Sync + 'static) {
            self
        }

        fn into_error(self: Box<Self>) -> Box<dyn std::error::Error + Send + Sync + 'static> {
            self
        }

        fn kind(&self) -> sqlx::error::ErrorKind {
            sqlx::error::ErrorKind::Other
        }
    }

    /// A shard (or the catalog) refusing a new connection's password is a database that cannot
    /// be used now (its password was rotated), never a bug of the gateway: 503, not 500.
    #[test]
    fn a_database_refusing_a_password_is_unavailable_not_an_internal_error() {
        let refused = |target: &str, sqlstate| StoreError::Database {
            target: target.to_owned(),
            source: sqlx::Error::Database(Box::new(Refused(sqlstate))),
        };
        for sqlstate in ["28P01", "28000"] {
            let shard = refused("shard shard-1", sqlstate);
            assert!(shard.is_authentication_failure(), "{sqlstate}");
            let answer = ApiError::from(shard);
            assert_eq!((answer.status(), answer.code()), (StatusCode::SERVICE_UNAVAILABLE, "shard_unavailable"));
            assert!(!answer.detail.contains("password"), "the driver's words stay in the log: {}", answer.detail);
            let catalog = ApiError::from(refused("catalog", sqlstate));
            assert_eq!((catalog.status(), catalog.code()), (StatusCode::SERVICE_UNAVAILABLE, "catalog_unavailable"));
        }
        // Another answer of the database is still the gateway's to explain.
        let other = ApiError::from(refused("shard shard-1", "42P01"));
        assert_eq!(other.code(), "internal");
    }
}
