//! Who is let in: the bearer token verified once per request ([`Authenticated`], read by
//! [`crate::server::extract::Caller`]) and the caller's rate-limit admission ([`Gate::admit`]: its
//! tenant, its token's subject, or its client IP without a valid token), with the Redis store the
//! limiter shares between instances. Shared by the gateway's front door and the standalone gatekeeper.
//!
//! Every throttled response carries the IETF `RateLimit-Policy` and `RateLimit` fields; a refused
//! request gets 429 `rate_limited` with `Retry-After`.

use std::net::IpAddr;
use std::sync::Arc;

use axum::http::{HeaderMap, HeaderName, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use shardgate_cache::{LinkScript, RedisLink};
use shardgate_gatekeeper::throttle::{Decision, GCRA_SCRIPT, Limiter, RateLimit, SharedBuckets, SharedFuture, Subject};
use shardgate_gatekeeper::{AuthError, Authenticator, Principal};

use crate::wire::error::ApiError;

/// `RateLimit-Policy` (IETF httpapi rate-limit fields).
pub const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
/// `RateLimit`.
pub const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");

/// What the front door found out about the caller's token; in the request's extensions.
#[derive(Debug, Clone)]
pub struct Authenticated(pub Result<Arc<Principal>, AuthError>);

/// The rate limiter's store in Redis: one Lua script per lease.
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
    fn take<'a>(&'a self, key: &'a str, emission_us: u64, tolerance_us: u64, want: u64) -> SharedFuture<'a> {
        Box::pin(async move {
            let parts = self.link.run_script(&self.script, key, &[emission_us, tolerance_us, want]).await?;
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
        if let Some(value) = self.policy_value() {
            headers.insert(RATELIMIT_POLICY, value);
        }
        if let Ok(value) = HeaderValue::try_from(self.decision.state_header(self.policy)) {
            headers.insert(RATELIMIT, value);
        }
    }
}

impl Admission {
    /// The `RateLimit-Policy` value: the same for every request under one limit, so each thread
    /// keeps the last one it built and hands out a copy (a reference count) while the policy and
    /// the limit stay the same, as they do for a tenant's run of requests.
    fn policy_value(&self) -> Option<HeaderValue> {
        type Key = (&'static str, u32, u32);
        thread_local! {
            static LAST: std::cell::RefCell<Option<(Key, HeaderValue)>> = const { std::cell::RefCell::new(None) };
        }
        let key = (self.policy, self.decision.limit.burst, self.decision.limit.per_second);
        LAST.with_borrow_mut(|last| {
            if let Some((held, value)) = last.as_ref()
                && *held == key
            {
                return Some(value.clone());
            }
            // From the `String` itself: its bytes become the value's, not a copy of them.
            let value = HeaderValue::try_from(self.decision.policy_header(self.policy)).ok()?;
            *last = Some((key, value.clone()));
            Some(value)
        })
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
    pub async fn authenticate(&self, headers: &HeaderMap) -> Option<Result<Arc<Principal>, AuthError>> {
        let value = headers.get(header::AUTHORIZATION)?;
        Some(match value.to_str() {
            Ok(value) => shardgate_shard_router::in_trace_span!(
                tracing::trace_span!("authenticate"),
                self.auth.verify_header(Some(value))
            ),
            Err(_) => Err(AuthError::Malformed),
        })
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
        let decision = shardgate_shard_router::in_trace_span!(
            tracing::trace_span!("rate_limit"),
            self.limiter.check(subject, limit)
        );
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
