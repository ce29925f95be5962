//! Throttling: per-tenant (and per-client-IP) request rates, decided by the generic cell rate
//! algorithm (GCRA).
//!
//! A limit is `per_second` requests on average with up to `burst` at once. Each subject has one
//! number, its *theoretical arrival time* (TAT): a request is admitted when
//! `max(TAT, now) + T - τ <= now`, where `T = 1 s / per_second` is the emission interval and
//! `τ = T · burst` the tolerance; admitting moves the TAT on by `T`. One number per subject, updated
//! atomically, makes the decision exact under concurrency.
//!
//! Where the TAT lives: in a [`SharedBuckets`] store (Redis, one Lua script per decision, with the
//! store's own clock) so that every gateway instance enforces the same limit; when the store does
//! not answer, in this process ([`LocalBuckets`]). That fallback is the documented fail mode: while
//! Redis is unreachable each instance enforces the full limit on its own, so `n` instances admit
//! at most `n` times the limit, and nothing is refused for want of Redis.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use secrecy::SecretString;
use serde::{Deserialize, Serialize};

/// The GCRA decision as a Redis Lua script. `KEYS[1]` the subject's key, `ARGV[1]` the emission
/// interval and `ARGV[2]` the tolerance, both in microseconds. Uses the server's clock (`TIME`), so
/// instances with skewed clocks still share one timeline. Returns
/// `{admitted (0|1), remaining, retry_after_us, reset_us}`.
pub const GCRA_SCRIPT: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local emission = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local new_tat = tat + emission
if new_tat - tolerance > now then
  return {0, 0, new_tat - tolerance - now, tat - now}
end
redis.call('SET', KEYS[1], string.format('%d', new_tat), 'PX', math.ceil((new_tat - now) / 1000) + 1)
return {1, math.floor((tolerance - (new_tat - now)) / emission), 0, new_tat - now}
";

/// Why a rate limit or the `[rate_limits]` section is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidRateLimit {
    /// A rate or burst of 0.
    #[error("per_second and burst must both be at least 1")]
    Zero,
    /// A tier name that is not `free`, `standard` or `premium`.
    #[error("rate_limits.tiers.{0}: no such tier (free, standard, premium)")]
    UnknownTier(String),
    /// A limit of the section (`tiers.<tier>` or `anonymous`) is unusable.
    #[error("rate_limits.{field}: {reason}")]
    Field {
        /// Where in `[rate_limits]`.
        field: String,
        /// What is wrong with it.
        reason: Box<InvalidRateLimit>,
    },
}

/// A rate limit: `per_second` requests per second on average, up to `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RateLimit {
    /// Sustained requests per second (at least 1).
    pub per_second: u32,
    /// Requests admitted at once after a quiet period (at least 1).
    pub burst: u32,
}

impl RateLimit {
    /// Checks the limit is usable.
    pub fn validate(self) -> Result<Self, InvalidRateLimit> {
        if self.per_second == 0 || self.burst == 0 {
            return Err(InvalidRateLimit::Zero);
        }
        Ok(self)
    }

    fn emission_us(self) -> u64 {
        (1_000_000 / u64::from(self.per_second.max(1))).max(1)
    }

    fn tolerance_us(self) -> u64 {
        self.emission_us() * u64::from(self.burst.max(1))
    }

    /// The window of the `RateLimit-Policy` header: `burst` requests per this many seconds is the
    /// same average rate.
    pub fn window_secs(self) -> u64 {
        u64::from(self.burst).div_ceil(u64::from(self.per_second.max(1))).max(1)
    }
}

/// The `[rate_limits]` configuration section.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RateLimitConfig {
    /// Whether requests are throttled at all. Default true.
    pub enabled: bool,
    /// Limits per tenant tier (`free`, `standard`, `premium`); a tier not listed keeps its default
    /// (50/100, 1000/2000, 10000/20000 per second/burst). A tenant's own limit (admin API) wins
    /// over its tier's.
    pub tiers: BTreeMap<String, RateLimit>,
    /// Limit per client IP for requests without a valid token (and tokens without a tenant are
    /// limited by the `standard` tier per subject).
    pub anonymous: RateLimit,
    /// Redis shared by every instance. Default: `cache.redis_url`; with neither, limits are
    /// enforced per instance.
    pub redis_url: Option<SecretString>,
    /// Prefix of the limiter's Redis keys. Default `shardgate:rl`.
    pub key_prefix: String,
    /// Longest wait for Redis's decision, in milliseconds; after a timeout or an error,
    /// decisions are taken in this process for one second before Redis is asked again.
    /// Default 100.
    pub redis_timeout_ms: u64,
}

/// The tiers' limits when the configuration does not set them.
const DEFAULT_TIERS: [(&str, RateLimit); 3] = [
    ("free", RateLimit { per_second: 50, burst: 100 }),
    ("standard", RateLimit { per_second: 1_000, burst: 2_000 }),
    ("premium", RateLimit { per_second: 10_000, burst: 20_000 }),
];

impl Default for RateLimitConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            tiers: BTreeMap::new(),
            anonymous: RateLimit { per_second: 50, burst: 100 },
            redis_url: None,
            key_prefix: "shardgate:rl".into(),
            redis_timeout_ms: 100,
        }
    }
}

impl RateLimitConfig {
    /// Checks every configured limit.
    pub fn validate(&self) -> Result<(), InvalidRateLimit> {
        let in_field = |field: String| move |reason| InvalidRateLimit::Field { field, reason: Box::new(reason) };
        for (tier, limit) in &self.tiers {
            limit.validate().map_err(in_field(format!("tiers.{tier}")))?;
        }
        if let Some(unknown) = self.tiers.keys().find(|tier| !DEFAULT_TIERS.iter().any(|(name, _)| name == tier)) {
            return Err(InvalidRateLimit::UnknownTier(unknown.clone()));
        }
        self.anonymous.validate().map_err(in_field("anonymous".to_owned()))?;
        Ok(())
    }

    /// The limit of `tier` (an unknown name gets `standard`'s).
    pub fn for_tier(&self, tier: &str) -> RateLimit {
        let configured = |name: &str| {
            self.tiers
                .get(name)
                .copied()
                .or_else(|| DEFAULT_TIERS.iter().find(|(default, _)| *default == name).map(|(_, limit)| *limit))
        };
        configured(tier).or_else(|| configured("standard")).unwrap_or(DEFAULT_TIERS[1].1)
    }
}

/// Who a decision is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject<'a> {
    /// A tenant (from its verified token).
    Tenant(&'a str),
    /// A token without a tenant, by issuer and subject.
    Principal(&'a str, &'a str),
    /// An unauthenticated client, by IP address.
    Client(std::net::IpAddr),
}

impl Subject<'_> {
    /// The `RateLimit-Policy` name of the policy that applies.
    pub fn policy_name(&self) -> &'static str {
        match self {
            Subject::Tenant(_) => "tenant",
            Subject::Principal(..) => "principal",
            Subject::Client(_) => "client",
        }
    }

    /// The bucket's key. The limit is part of it: a changed limit starts with a full burst
    /// instead of inheriting a debt measured in the old limit's intervals.
    fn key(&self, prefix: &str, limit: RateLimit) -> String {
        let RateLimit { per_second, burst } = limit;
        match self {
            Subject::Tenant(tenant) => format!("{prefix}:t:{per_second}:{burst}:{tenant}"),
            Subject::Principal(issuer, subject) => {
                format!("{prefix}:p:{per_second}:{burst}:{}:{issuer}:{subject}", issuer.len())
            }
            Subject::Client(ip) => format!("{prefix}:ip:{per_second}:{burst}:{ip}"),
        }
    }
}

/// The outcome of one decision, with what the response headers report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// Whether the request may go on.
    pub admitted: bool,
    /// The limit applied.
    pub limit: RateLimit,
    /// Requests that would still be admitted right now.
    pub remaining: u64,
    /// When refused: how long until one request would be admitted.
    pub retry_after: Duration,
    /// How long until the subject's full burst is available again.
    pub reset: Duration,
    /// Whether the shared store decided (false: this instance alone, the fallback).
    pub shared: bool,
}

impl Decision {
    fn from_parts(limit: RateLimit, parts: [u64; 4], shared: bool) -> Self {
        Self {
            admitted: parts[0] == 1,
            limit,
            remaining: parts[1],
            retry_after: Duration::from_micros(parts[2]),
            reset: Duration::from_micros(parts[3]),
            shared,
        }
    }

    /// `Retry-After` in whole seconds (at least 1).
    pub fn retry_after_secs(&self) -> u64 {
        self.retry_after.as_micros().div_ceil(1_000_000).max(1) as u64
    }

    /// The `RateLimit-Policy` header value (IETF httpapi rate-limit fields, structured list).
    pub fn policy_header(&self, name: &str) -> String {
        format!("\"{name}\";q={};w={}", self.limit.burst, self.limit.window_secs())
    }

    /// The `RateLimit` header value: remaining quota and seconds until it is whole again.
    pub fn state_header(&self, name: &str) -> String {
        let reset = if self.admitted { self.reset } else { self.retry_after };
        format!("\"{name}\";r={};t={}", self.remaining, reset.as_micros().div_ceil(1_000_000))
    }
}

/// Boxed future of a shared-store decision.
pub type SharedFuture<'a> = Pin<Box<dyn Future<Output = Option<[u64; 4]>> + Send + 'a>>;

/// A store every instance shares: runs [`GCRA_SCRIPT`] for `key` and returns its four numbers,
/// or `None` when it cannot answer right now (the limiter then decides locally).
pub trait SharedBuckets: Send + Sync + std::fmt::Debug {
    /// One atomic GCRA decision.
    fn take<'a>(&'a self, key: &'a str, emission_us: u64, tolerance_us: u64) -> SharedFuture<'a>;

    /// Whether the store answered its last operation or probe.
    fn is_healthy(&self) -> bool;
}

/// Theoretical arrival times held in this process: the fallback, and the whole store when there is
/// no Redis.
pub struct LocalBuckets {
    started: Instant,
    tats: moka::sync::Cache<String, Arc<Mutex<u64>>, foldhash::fast::RandomState>,
}

impl std::fmt::Debug for LocalBuckets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalBuckets").field("subjects", &self.tats.entry_count()).finish()
    }
}

/// Subjects remembered locally; the least recently used are forgotten first (a forgotten subject
/// starts with a full burst, so the bound errs on admitting).
const LOCAL_SUBJECTS: u64 = 100_000;

impl Default for LocalBuckets {
    fn default() -> Self {
        Self {
            started: Instant::now(),
            tats: moka::sync::Cache::builder()
                .max_capacity(LOCAL_SUBJECTS)
                .time_to_idle(Duration::from_secs(600))
                .build_with_hasher(foldhash::fast::RandomState::default()),
        }
    }
}

impl LocalBuckets {
    fn now_us(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    fn take(&self, key: &str, emission: u64, tolerance: u64) -> [u64; 4] {
        let now = self.now_us();
        let cell = self.tats.get_with_by_ref(key, || Arc::new(Mutex::new(0)));
        let mut tat = cell.lock();
        gcra(&mut tat, now, emission, tolerance)
    }
}

/// The decision of [`GCRA_SCRIPT`] on a local TAT.
fn gcra(tat: &mut u64, now: u64, emission: u64, tolerance: u64) -> [u64; 4] {
    let current = (*tat).max(now);
    let next = current + emission;
    if next - now > tolerance {
        return [0, 0, next - tolerance - now, current - now];
    }
    *tat = next;
    [1, (tolerance - (next - now)) / emission, 0, next - now]
}

/// Decides whether a subject's request is admitted.
#[derive(Debug)]
pub struct Limiter {
    config: RateLimitConfig,
    shared: Option<Arc<dyn SharedBuckets>>,
    /// Until when (µs on the local buckets' clock) the shared store is not asked.
    shared_down_until: AtomicU64,
    local: LocalBuckets,
}

/// How long the shared store is left alone after it failed or timed out.
const SHARED_BACKOFF: Duration = Duration::from_secs(1);

impl Limiter {
    /// A limiter with `shared` as the store when given (fallback: this process).
    pub fn new(config: RateLimitConfig, shared: Option<Arc<dyn SharedBuckets>>) -> Result<Self, InvalidRateLimit> {
        config.validate()?;
        Ok(Self { config, shared, shared_down_until: AtomicU64::new(0), local: LocalBuckets::default() })
    }

    /// The configuration.
    pub fn config(&self) -> &RateLimitConfig {
        &self.config
    }

    /// Where decisions are taken now: `up` (the shared store), `degraded` (it does not answer:
    /// this process), `local` (no shared store configured) or `disabled`.
    pub fn store_status(&self) -> &'static str {
        match &self.shared {
            _ if !self.config.enabled => "disabled",
            None => "local",
            Some(shared)
                if shared.is_healthy() && self.local.now_us() >= self.shared_down_until.load(Ordering::Relaxed) =>
            {
                "up"
            }
            Some(_) => "degraded",
        }
    }

    /// Whether limits are enforced at all.
    pub fn enabled(&self) -> bool {
        self.config.enabled
    }

    /// Takes one request of `subject` against `limit`.
    pub async fn check(&self, subject: Subject<'_>, limit: RateLimit) -> Decision {
        let key = subject.key(&self.config.key_prefix, limit);
        let (emission, tolerance) = (limit.emission_us(), limit.tolerance_us());
        if let Some(shared) = &self.shared
            && self.local.now_us() >= self.shared_down_until.load(Ordering::Relaxed)
        {
            match tokio::time::timeout(
                Duration::from_millis(self.config.redis_timeout_ms),
                shared.take(&key, emission, tolerance),
            )
            .await
            {
                Ok(Some(parts)) => return Decision::from_parts(limit, parts, true),
                _ => {
                    let until = self.local.now_us().saturating_add(SHARED_BACKOFF.as_micros() as u64);
                    self.shared_down_until.store(until, Ordering::Relaxed);
                    tracing::warn!("rate-limit store did not answer; limiting in this process for a second");
                }
            }
        }
        Decision::from_parts(limit, self.local.take(&key, emission, tolerance), false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: RateLimit = RateLimit { per_second: 10, burst: 5 };

    #[test]
    fn a_quiet_subject_gets_its_burst_then_one_request_per_interval() {
        let mut tat = 0;
        let (emission, tolerance) = (LIMIT.emission_us(), LIMIT.tolerance_us());
        let now = 1_000_000;
        let admitted: Vec<u64> = (0..7).map(|_| gcra(&mut tat, now, emission, tolerance)[0]).collect();
        assert_eq!(admitted, [1, 1, 1, 1, 1, 0, 0]);
        let refused = gcra(&mut tat, now, emission, tolerance);
        assert_eq!(refused[2], emission, "retry after one emission interval");
        assert_eq!(gcra(&mut tat, now + emission - 1, emission, tolerance)[0], 0);
        assert_eq!(gcra(&mut tat, now + emission, emission, tolerance)[0], 1);
        assert_eq!(gcra(&mut tat, now + emission, emission, tolerance)[0], 0);
    }

    #[test]
    fn remaining_counts_down_and_reset_covers_the_used_burst() {
        let mut tat = 0;
        let (emission, tolerance) = (LIMIT.emission_us(), LIMIT.tolerance_us());
        let first = gcra(&mut tat, 0, emission, tolerance);
        assert_eq!((first[1], first[3]), (4, emission));
        let second = gcra(&mut tat, 0, emission, tolerance);
        assert_eq!((second[1], second[3]), (3, 2 * emission));
    }

    #[test]
    fn the_sustained_rate_is_the_limit() {
        // One attempt every millisecond for ten seconds: the burst at once, then one every 100 ms
        // from 100 ms on (the burst's last request took the slot of the first interval).
        let mut tat = 0;
        let (emission, tolerance) = (LIMIT.emission_us(), LIMIT.tolerance_us());
        let admitted: u64 = (0..10_000u64).map(|ms| gcra(&mut tat, ms * 1_000, emission, tolerance)[0]).sum();
        assert_eq!(admitted, 5 + 99);
    }

    #[tokio::test]
    async fn without_a_store_subjects_are_limited_apart() {
        let limiter = Limiter::new(RateLimitConfig::default(), None).unwrap();
        let limit = RateLimit { per_second: 1, burst: 2 };
        let mut results = Vec::new();
        for _ in 0..3 {
            results.push(limiter.check(Subject::Tenant("a"), limit).await.admitted);
        }
        assert_eq!(results, [true, true, false]);
        let other = limiter.check(Subject::Tenant("b"), limit).await;
        assert!(other.admitted && !other.shared);
        let refused = limiter.check(Subject::Tenant("a"), limit).await;
        assert_eq!(refused.retry_after_secs(), 1);
        assert_eq!(refused.state_header("tenant"), "\"tenant\";r=0;t=1");
        assert_eq!(refused.policy_header("tenant"), "\"tenant\";q=2;w=2");
    }

    #[test]
    fn zero_limits_and_unknown_tiers_are_refused() {
        let config = RateLimitConfig { anonymous: RateLimit { per_second: 0, burst: 1 }, ..RateLimitConfig::default() };
        assert!(config.validate().unwrap_err().to_string().contains("anonymous"));
        let mut config = RateLimitConfig::default();
        config.tiers.insert("gold".into(), RateLimit { per_second: 1, burst: 1 });
        assert!(config.validate().unwrap_err().to_string().contains("gold"));
    }

    #[test]
    fn configured_tiers_replace_their_defaults_only() {
        let mut config = RateLimitConfig::default();
        config.tiers.insert("free".into(), RateLimit { per_second: 2, burst: 3 });
        assert_eq!(config.for_tier("free"), RateLimit { per_second: 2, burst: 3 });
        assert_eq!(config.for_tier("premium"), RateLimit { per_second: 10_000, burst: 20_000 });
        assert_eq!(config.for_tier("nonsense"), config.for_tier("standard"));
    }
}
