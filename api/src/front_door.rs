//! The gatekeeper's front door, run before any handler: authenticates the bearer token (once per
//! request; handlers read the result through [`crate::extract::Caller`]) and throttles the caller
//! (its tenant, its token's subject, or its client IP when it has no valid token).
//!
//! Every throttled response carries the IETF `RateLimit-Policy` and `RateLimit` fields; a refused
//! request gets 429 `rate_limited` with `Retry-After`. Health, readiness and metrics endpoints are
//! never throttled: a probe must not fail because a tenant is busy.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use shardgate_cache::{LinkScript, RedisLink};
use shardgate_gatekeeper::internal::{self, InternalKey};
use shardgate_gatekeeper::throttle::{Decision, GCRA_SCRIPT, Limiter, RateLimit, SharedBuckets, SharedFuture, Subject};
use shardgate_gatekeeper::{AuthError, Authenticator, Principal};

use crate::app::App;
use crate::error::ApiError;

/// `RateLimit-Policy` (IETF httpapi rate-limit fields).
pub const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
/// `RateLimit`.
pub const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");

/// What the front door found out about the caller's token; in the request's extensions.
#[derive(Debug, Clone)]
pub struct Authenticated(pub Result<Arc<Principal>, AuthError>);

/// The rate limiter's store in Redis: one Lua script per decision.
#[derive(Debug)]
pub struct RedisBuckets {
    link: RedisLink,
    script: LinkScript,
}

impl RedisBuckets {
    /// Decisions through `link`.
    pub fn new(link: RedisLink) -> Self {
        Self { link, script: LinkScript::new(GCRA_SCRIPT) }
    }
}

impl SharedBuckets for RedisBuckets {
    fn take<'a>(&'a self, key: &'a str, emission_us: u64, tolerance_us: u64) -> SharedFuture<'a> {
        Box::pin(async move {
            let parts = self.link.run_script(&self.script, key, &[emission_us, tolerance_us]).await?;
            <[u64; 4]>::try_from(parts).ok()
        })
    }

    fn is_healthy(&self) -> bool {
        self.link.is_healthy()
    }
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PolicyLabels {
    policy: &'static str,
}

/// Authentication and throttling, shared by the gateway and the standalone gatekeeper.
#[derive(Debug)]
pub struct Gate {
    /// Token verification.
    pub auth: Authenticator,
    /// Rate limits.
    pub limiter: Limiter,
    refused: Family<PolicyLabels, Counter>,
    local: Counter,
}

/// An admitted request's rate-limit state, reported in its response headers.
#[derive(Debug, Clone, Copy)]
pub struct Admission {
    decision: Decision,
    policy: &'static str,
}

impl Admission {
    /// Adds `RateLimit-Policy` and `RateLimit`.
    pub fn report(&self, headers: &mut HeaderMap) {
        if let Ok(value) = HeaderValue::from_str(&self.decision.policy_header(self.policy)) {
            headers.insert(RATELIMIT_POLICY, value);
        }
        if let Ok(value) = HeaderValue::from_str(&self.decision.state_header(self.policy)) {
            headers.insert(RATELIMIT, value);
        }
    }
}

impl Gate {
    /// A gate; its counters go into `registry`.
    pub fn new(auth: Authenticator, limiter: Limiter, registry: &mut Registry) -> Self {
        let refused = Family::<PolicyLabels, Counter>::default();
        let local = Counter::default();
        registry.register("rate_limited", "Requests refused with 429, by policy", refused.clone());
        registry.register(
            "rate_limit_local_decisions",
            "Rate-limit decisions taken by this instance alone (Redis absent or unreachable)",
            local.clone(),
        );
        Self { auth, limiter, refused, local }
    }

    /// Verifies the request's bearer token, if it has an `Authorization` header.
    pub fn authenticate(&self, headers: &HeaderMap) -> Option<Result<Arc<Principal>, AuthError>> {
        let value = headers.get(header::AUTHORIZATION)?;
        Some(value.to_str().map_err(|_| AuthError::Malformed).and_then(|v| self.auth.verify_header(Some(v))))
    }

    /// Takes one request of the caller: its tenant (with `tenant_limit`, or the `standard` tier
    /// when that knows no limit), its token's subject, or its IP address without a valid token.
    pub async fn admit(
        &self,
        authenticated: Option<&Result<Arc<Principal>, AuthError>>,
        client: IpAddr,
        tenant_limit: impl FnOnce(&str) -> Option<RateLimit>,
    ) -> Result<Option<Admission>, Response> {
        if !self.limiter.enabled() {
            return Ok(None);
        }
        let config = self.limiter.config();
        let (subject, limit) = match authenticated {
            Some(Ok(principal)) => match &principal.tenant {
                Some(tenant) => {
                    let limit = tenant_limit(tenant).unwrap_or_else(|| config.for_tier("standard"));
                    (Subject::Tenant(tenant), limit)
                }
                None => (Subject::Principal(&principal.issuer, &principal.subject), config.for_tier("standard")),
            },
            _ => (Subject::Client(client), config.anonymous),
        };
        let decision = self.limiter.check(subject, limit).await;
        if !decision.shared {
            self.local.inc();
        }
        let admission = Admission { decision, policy: subject.policy_name() };
        if decision.admitted {
            return Ok(Some(admission));
        }
        self.refused.get_or_create(&PolicyLabels { policy: admission.policy }).inc();
        let who = match subject {
            Subject::Tenant(tenant) => format!("tenant {tenant}"),
            Subject::Principal(..) => "this token's subject".to_owned(),
            Subject::Client(ip) => format!("client {ip} (no valid token)"),
        };
        let detail = format!(
            "{who} is over its rate limit of {} requests per second (burst {}); retry in {} s",
            limit.per_second,
            limit.burst,
            decision.retry_after_secs()
        );
        let mut response = ApiError::rate_limited(detail, decision.retry_after_secs()).into_response();
        admission.report(response.headers_mut());
        Err(response)
    }
}

/// The peer address of a request (unspecified when the server was not asked for it).
pub fn client_ip(request: &Request) -> IpAddr {
    request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |ConnectInfo(addr)| addr.ip())
}

/// Behind a standalone gatekeeper: accepts only requests with a valid internal credential (401
/// `invalid_internal_credential` otherwise), takes the principal the gatekeeper verified, and
/// tells the gatekeeper the tenant's rate limit in a response header. (Probes and metrics, which
/// carry no tenant data, stay open for the orchestrator and the scraper.)
async fn trusted_door(app: &App, key: &InternalKey, mut request: Request, next: Next) -> Response {
    // In a block: a borrow of the request (whose body is not `Sync`) must not live across an await.
    let verified = {
        let header = |name: &str| request.headers().get(name).and_then(|v| v.to_str().ok());
        let path_and_query = request.uri().path_and_query().map_or("/", |pq| pq.as_str());
        key.verify(
            request.method().as_str(),
            path_and_query,
            header(internal::PRINCIPAL_HEADER),
            header(internal::TIMESTAMP_HEADER),
            header(internal::SIGNATURE_HEADER),
        )
    };
    let principal = match verified {
        Ok(principal) => principal.map(Arc::new),
        Err(e) => {
            tracing::warn!(reason = %e, "request without a valid internal credential refused");
            return ApiError::new(axum::http::StatusCode::UNAUTHORIZED, "invalid_internal_credential", e.to_string())
                .into_response();
        }
    };
    let tenant = principal.as_ref().and_then(|p| p.tenant.clone());
    // A request the gatekeeper let through without a token has none here either.
    request.extensions_mut().insert(Authenticated(principal.ok_or(AuthError::Missing)));
    let mut response = next.run(request).await;
    if let Some(limit) = tenant.and_then(|t| app.tenant_rate_limit(&t))
        && let Ok(value) = HeaderValue::from_str(&format!("{} {}", limit.per_second, limit.burst))
    {
        response.headers_mut().insert(internal::RATE_LIMIT_HEADER, value);
    }
    response
}

/// The path rules of [`shardgate_gatekeeper::request`]: 400 `invalid_path` or 414 `uri_too_long`.
pub fn check_request_path(path: &str) -> Result<(), ApiError> {
    use shardgate_gatekeeper::request::{PathProblem, check_path};
    match check_path(path) {
        Ok(()) => Ok(()),
        Err(problem @ PathProblem::TooLong) => {
            Err(ApiError::new(axum::http::StatusCode::URI_TOO_LONG, "uri_too_long", problem.to_string()))
        }
        // A valet URL is refused like any other bad valet URL.
        Err(problem) if path.starts_with("/valet/") => {
            Err(ApiError::new(axum::http::StatusCode::FORBIDDEN, "valet_malformed", problem.to_string()))
        }
        Err(problem) => Err(ApiError::bad_request("invalid_path", problem.to_string())),
    }
}

/// Paths that are never throttled (probes and scrapes).
pub fn is_unthrottled(path: &str) -> bool {
    matches!(path, "/healthz" | "/readyz" | "/metrics")
}

/// The gateway's front door: authenticate, throttle with the tenant limits of the shard map.
/// In trusted mode the internal credential replaces both (the gatekeeper did them).
pub async fn front_door(State(app): State<Arc<App>>, mut request: Request, next: Next) -> Response {
    if let Err(refused) = check_request_path(request.uri().path()) {
        return refused.into_response();
    }
    if is_unthrottled(request.uri().path()) {
        return next.run(request).await;
    }
    if let Some(key) = &app.trusted {
        return trusted_door(&app, key, request, next).await;
    }
    let authenticated = app.gate.authenticate(request.headers());
    let client = client_ip(&request);
    let admission = match app.gate.admit(authenticated.as_ref(), client, |tenant| app.tenant_rate_limit(tenant)).await {
        Ok(admission) => admission,
        Err(refused) => return refused,
    };
    if let Some(authenticated) = authenticated {
        request.extensions_mut().insert(Authenticated(authenticated));
    }
    let mut response = next.run(request).await;
    if let Some(admission) = admission {
        admission.report(response.headers_mut());
    }
    response
}
