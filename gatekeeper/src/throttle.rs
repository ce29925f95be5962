//! Throttling: per-tenant (and per-client-IP) request rates, decided by the generic cell rate
//! algorithm (GCRA).
//!
//! A limit is `per_second` requests on average with up to `burst` at once. Each subject has one
//! number, its *theoretical arrival time* (TAT): a request is admitted when
//! `max(TAT, now) + T - τ <= now`, where `T = 1 s / per_second` is the emission interval and
//! `τ = T · burst` the tolerance; admitting moves the TAT on by `T`. One number per subject, updated
//! atomically, makes the decision exact under concurrency.
//!
//! # Where the TAT lives, and leases
//!
//! In a [`SharedBuckets`] store (Redis, with the store's own clock) so that every gateway instance
//! enforces the same limit. An instance does not ask the store once per request: it *leases* up to
//! `L` admissions at once ([`RateLimit::lease_size`]: 20 ms of the rate, at most a quarter of the
//! burst), which moves the shared TAT on by `L · T` in one atomic step, and then admits from its
//! lease without a round trip. When a lease is half spent it is topped up in the background, so a
//! busy subject's requests rarely wait for the store; a subject's first request, and one that finds
//! the lease empty, waits for one store round trip (one at a time per subject and instance). A
//! refusal by the store is remembered until its `Retry-After`, so refused traffic does not reach
//! the store either. Unspent admissions lapse after [`LEASE_LIFETIME`].
//!
//! **Accuracy.** Leased admissions are taken from the shared budget when leased, so leases never
//! admit more than the limit allows over time; what they change is *when* an admission is spent.
//! An instance holds at most `L` unspent admissions, so over any interval `n` instances admit at
//! most `n · L` more than one exact shared bucket would (`burst + per_second · t + n · L` in `t`
//! seconds). For the default tiers `L` is 1 (free: 50/s, burst 100), 20 (standard: 1000/s) and
//! 200 (premium: 10000/s). Leasing errs the other way too: admissions an instance leased and did
//! not spend before they lapsed are lost to everyone, so an instance whose traffic stops may
//! leave up to `L` of the budget unused.
//!
//! **When the store does not answer**, decisions are taken in this process ([`LocalBuckets`]) for
//! a second before the store is asked again. That fallback is the documented fail mode: while
//! Redis is unreachable each instance enforces the full limit on its own, so `n` instances admit
//! at most `n` times the limit, and nothing is refused for want of Redis.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use secrecy::SecretString;
use serde::{Deserialize, Serialize};

/// The GCRA lease as a Redis Lua script: up to `ARGV[3]` admissions at once. `KEYS[1]` the
/// subject's key, `ARGV[1]` the emission interval and `ARGV[2]` the tolerance, both in
/// microseconds. Uses the server's clock (`TIME`), so instances with skewed clocks still share one
/// timeline. Grants as many of the wanted admissions as the bucket holds (moving the TAT on by
/// that many intervals) and returns `{granted, remaining, retry_after_us, reset_us}`; `granted` 0
/// is a refusal, and `retry_after_us` says when one admission will be available. With one wanted,
/// this is exactly one GCRA decision.
pub const GCRA_SCRIPT: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local emission = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local available = math.floor((now + tolerance - tat) / emission)
if available < 1 then
  return {0, 0, tat + emission - tolerance - now, tat - now}
end
local granted = math.min(want, available)
local new_tat = tat + granted * emission
redis.call('SET', KEYS[1], string.format('%d', new_tat), 'PX', math.ceil((new_tat - now) / 1000) + 1)
return {granted, available - granted, 0, new_tat - now}
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

    /// How many admissions an instance leases from the shared store at once: 20 ms of the rate,
    /// at most a quarter of the burst, at least one. An instance holds at most this many unspent
    /// admissions, which bounds how far `n` instances can admit above the limit (`n` times this).
    pub fn lease_size(self) -> u64 {
        let twenty_ms = u64::from(self.per_second).div_ceil(50);
        twenty_ms.min(u64::from(self.burst) / 4).max(1)
    }

    /// The window of the `RateLimit-Policy` header: `burst` requests per this many seconds is the
    /// same average rate.
    pub fn window_secs(self) -> u64 {
        u64::from(self.burst).div_ceil(u64::from(self.per_second.max(1))).max(1)
    }
}

/// The `[rate_limits]` configuration section.
#[derive(Debug, Clone, Serialize, Deserialize)]
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
    /// Redis shared by every instance (a `redis+sentinel://` or `redis+cluster://` URL as
    /// `cache.redis_url` takes).
    /// Default: `cache.redis_url`; with neither, limits are enforced per instance.
    #[serde(serialize_with = "crate::config::redacted_option")]
    pub redis_url: Option<SecretString>,
    /// PEM file of the CA that signs the certificate of `redis_url`'s server (`rediss://`).
    /// Default: unset, which trusts the built-in Mozilla roots (without `redis_url`, the cache's
    /// TLS files go with the cache's URL).
    pub redis_ca_file: Option<PathBuf>,
    /// PEM certificate chain presented to `redis_url`'s server (mutual TLS), with
    /// `redis_client_key_file`. Default: unset.
    pub redis_client_cert_file: Option<PathBuf>,
    /// PEM private key of `redis_client_cert_file`. Default: unset.
    pub redis_client_key_file: Option<PathBuf>,
    /// A file holding the password of `redis_url`, in place of one written in the URL: read at
    /// start-up and again on every probe of Redis (once a second), connecting again when it
    /// changes, so a rotated secret needs no restart. Without `redis_url`, the cache's
    /// `redis_password_file` goes with the cache's URL. Default: unset.
    pub redis_password_file: Option<PathBuf>,
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
            redis_ca_file: None,
            redis_client_cert_file: None,
            redis_client_key_file: None,
            redis_password_file: None,
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
    ///
    /// `<prefix>:t:<per second>:<burst>:<tenant>`, `<prefix>:p:<per second>:<burst>:<issuer's
    /// length>:<issuer>:<subject>` or `<prefix>:ip:<per second>:<burst>:<address>`, built without
    /// the formatting machinery (every request makes one).
    fn key(&self, prefix: &str, limit: RateLimit) -> String {
        let RateLimit { per_second, burst } = limit;
        let mut key = String::with_capacity(prefix.len() + 64);
        key.push_str(prefix);
        key.push_str(match self {
            Subject::Tenant(_) => ":t:",
            Subject::Principal(..) => ":p:",
            Subject::Client(_) => ":ip:",
        });
        key.push_str(itoa::Buffer::new().format(per_second));
        key.push(':');
        key.push_str(itoa::Buffer::new().format(burst));
        key.push(':');
        match self {
            Subject::Tenant(tenant) => key.push_str(tenant),
            Subject::Principal(issuer, subject) => {
                key.push_str(itoa::Buffer::new().format(issuer.len()));
                key.push(':');
                key.push_str(issuer);
                key.push(':');
                key.push_str(subject);
            }
            Subject::Client(ip) => {
                use std::fmt::Write as _;
                let _ = write!(key, "{ip}");
            }
        }
        key
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
            admitted: parts[0] >= 1,
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
        structured_item(name, ('q', u64::from(self.limit.burst)), ('w', self.limit.window_secs()))
    }

    /// The `RateLimit` header value: remaining quota and seconds until it is whole again.
    pub fn state_header(&self, name: &str) -> String {
        let reset = if self.admitted { self.reset } else { self.retry_after };
        let reset_secs = u64::try_from(reset.as_micros().div_ceil(1_000_000)).unwrap_or(u64::MAX);
        structured_item(name, ('r', self.remaining), ('t', reset_secs))
    }
}

/// `"<name>";<a>=<n>;<b>=<m>`: a structured-field item of the rate-limit headers, built without
/// the formatting machinery (every response carries two).
fn structured_item(name: &str, (a, n): (char, u64), (b, m): (char, u64)) -> String {
    let mut item = String::with_capacity(name.len() + 48);
    item.push('"');
    item.push_str(name);
    item.push_str("\";");
    item.push(a);
    item.push('=');
    item.push_str(itoa::Buffer::new().format(n));
    item.push(';');
    item.push(b);
    item.push('=');
    item.push_str(itoa::Buffer::new().format(m));
    item
}

/// Boxed future of a shared-store answer.
pub type SharedFuture<'a> = Pin<Box<dyn Future<Output = Option<[u64; 4]>> + Send + 'a>>;

/// A store every instance shares: runs [`GCRA_SCRIPT`] for `key` and returns its four numbers,
/// or `None` when it cannot answer right now (the limiter then decides locally).
pub trait SharedBuckets: Send + Sync + std::fmt::Debug {
    /// One atomic GCRA lease of up to `want` admissions.
    fn take<'a>(&'a self, key: &'a str, emission_us: u64, tolerance_us: u64, want: u64) -> SharedFuture<'a>;

    /// Whether the store answered its last operation or probe.
    fn is_healthy(&self) -> bool;
}

/// Theoretical arrival times held in this process: the fallback, and the whole store when there is
/// no Redis.
pub struct LocalBuckets {
    clock: Clock,
    tats: moka::sync::Cache<String, Arc<Mutex<u64>>, foldhash::fast::RandomState>,
}

impl std::fmt::Debug for LocalBuckets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalBuckets").field("subjects", &self.tats.entry_count()).finish()
    }
}

/// Subjects remembered in this process (local buckets, and leases); the least recently used are
/// forgotten first (a forgotten subject starts with a full burst or an empty lease, so the bound
/// errs on admitting).
const LOCAL_SUBJECTS: u64 = 100_000;

/// How long leased admissions may wait to be spent before they lapse.
pub const LEASE_LIFETIME: Duration = Duration::from_secs(1);

/// Microseconds since this limiter started (monotonic).
#[derive(Debug, Clone, Copy)]
struct Clock(Instant);

impl Clock {
    fn now_us(self) -> u64 {
        u64::try_from(self.0.elapsed().as_micros()).unwrap_or(u64::MAX)
    }
}

fn subjects<V: Clone + Send + Sync + 'static>() -> moka::sync::Cache<String, V, foldhash::fast::RandomState> {
    moka::sync::Cache::builder()
        .max_capacity(LOCAL_SUBJECTS)
        .time_to_idle(Duration::from_secs(600))
        .build_with_hasher(foldhash::fast::RandomState::default())
}

impl LocalBuckets {
    fn new(clock: Clock) -> Self {
        Self { clock, tats: subjects() }
    }

    fn take(&self, key: &str, emission: u64, tolerance: u64) -> [u64; 4] {
        let now = self.clock.now_us();
        let cell = self.tats.get_with_by_ref(key, || Arc::new(Mutex::new(0)));
        let mut tat = cell.lock();
        gcra(&mut tat, now, emission, tolerance, 1)
    }
}

/// What [`GCRA_SCRIPT`] does, on a TAT held here: grants up to `want` admissions.
fn gcra(tat: &mut u64, now: u64, emission: u64, tolerance: u64, want: u64) -> [u64; 4] {
    let current = (*tat).max(now);
    let available = (now + tolerance).saturating_sub(current) / emission;
    if available < 1 {
        return [0, 0, current + emission - tolerance - now, current - now];
    }
    let granted = want.min(available);
    *tat = current + granted * emission;
    [granted, available - granted, 0, *tat - now]
}

/// One subject's lease on this instance: admissions taken from the shared store and not yet
/// spent, and the store's last answer (for the response headers).
#[derive(Debug, Default)]
struct Lease {
    /// Unspent admissions.
    tokens: u64,
    /// When (µs on the limiter's clock) the unspent admissions lapse.
    lapses_at: u64,
    /// After a refusal: until when (µs) to refuse without asking the store again.
    refused_until: u64,
    /// The store's last answer and when it came.
    answer: [u64; 4],
    answered_at: u64,
    /// Whether a store round trip for this lease is under way (one at a time).
    asking: bool,
}

impl Lease {
    /// Spends one admission, if the lease holds one that has not lapsed.
    fn spend(&mut self, now: u64) -> bool {
        if self.lapses_at <= now {
            self.tokens = 0;
        }
        if self.tokens == 0 {
            return false;
        }
        self.tokens -= 1;
        true
    }

    /// Adds the store's answer: its granted admissions join the lease.
    fn record(&mut self, answer: [u64; 4], now: u64) {
        if answer[0] > 0 {
            self.tokens += answer[0];
            self.lapses_at = now + LEASE_LIFETIME.as_micros() as u64;
        } else {
            self.refused_until = now + answer[2];
        }
        self.answer = answer;
        self.answered_at = now;
    }

    /// The decision's numbers as of `now`: the store's remaining budget plus this lease's.
    fn parts(&self, admitted: bool, now: u64) -> [u64; 4] {
        let elapsed = now.saturating_sub(self.answered_at);
        if admitted {
            [1, self.answer[1] + self.tokens, 0, self.answer[3].saturating_sub(elapsed)]
        } else {
            [0, 0, self.refused_until.saturating_sub(now).max(1), self.answer[3].saturating_sub(elapsed)]
        }
    }
}

/// A lease and the wake-up of requests waiting for its store round trip.
#[derive(Debug, Default)]
struct LeaseCell {
    lease: Mutex<Lease>,
    answered: tokio::sync::Notify,
}

/// The shared store and the leases this instance holds on it.
#[derive(Debug)]
struct Shared {
    store: Arc<dyn SharedBuckets>,
    leases: moka::sync::Cache<String, Arc<LeaseCell>, foldhash::fast::RandomState>,
    /// Until when (µs on the limiter's clock) the store is not asked.
    down_until: AtomicU64,
    timeout: Duration,
    clock: Clock,
}

/// What a lease could tell without the store.
enum FromLease {
    Decided([u64; 4]),
    /// Ask the store (this request does it).
    Ask,
    /// Another request is asking; wait for its answer.
    Wait,
}

impl Shared {
    fn is_up(&self) -> bool {
        self.clock.now_us() >= self.down_until.load(Ordering::Relaxed)
    }

    fn mark_down(&self) {
        let until = self.clock.now_us().saturating_add(SHARED_BACKOFF.as_micros() as u64);
        self.down_until.store(until, Ordering::Relaxed);
        tracing::warn!("rate-limit store did not answer; limiting in this process for a second");
    }

    /// One store round trip for `key`'s lease, recorded in it. `None`: the store did not answer.
    async fn ask(&self, cell: &LeaseCell, key: &str, limit: RateLimit, want: u64) -> Option<()> {
        let answer =
            tokio::time::timeout(self.timeout, self.store.take(key, limit.emission_us(), limit.tolerance_us(), want))
                .await;
        let answered = answer.ok().flatten();
        {
            let mut lease = cell.lease.lock();
            if let Some(parts) = answered {
                lease.record(parts, self.clock.now_us());
            }
            lease.asking = false;
        }
        if answered.is_none() {
            self.mark_down();
        }
        cell.answered.notify_waiters();
        answered.map(|_| ())
    }

    /// Takes one admission of `key` from this instance's lease, leasing from the store when the
    /// lease is empty. `None`: the store did not answer (decide locally).
    async fn check(self: &Arc<Self>, key: &str, limit: RateLimit) -> Option<[u64; 4]> {
        let cell = self.leases.get_with_by_ref(key, || Arc::new(LeaseCell::default()));
        let size = limit.lease_size();
        loop {
            let answered = cell.answered.notified();
            tokio::pin!(answered);
            answered.as_mut().enable();
            let now = self.clock.now_us();
            let next = {
                let mut lease = cell.lease.lock();
                if lease.spend(now) {
                    if lease.tokens <= size / 2 && !lease.asking {
                        // Top up in the background before the lease runs dry.
                        lease.asking = true;
                        let (shared, cell, key) = (self.clone(), cell.clone(), key.to_owned());
                        let want = size - lease.tokens;
                        tokio::spawn(async move { shared.ask(&cell, &key, limit, want).await });
                    }
                    FromLease::Decided(lease.parts(true, now))
                } else if lease.refused_until > now {
                    FromLease::Decided(lease.parts(false, now))
                } else if lease.asking {
                    FromLease::Wait
                } else {
                    lease.asking = true;
                    FromLease::Ask
                }
            };
            match next {
                FromLease::Decided(parts) => return Some(parts),
                FromLease::Ask => self.ask(&cell, key, limit, size).await?,
                FromLease::Wait => tokio::time::timeout(self.timeout, answered).await.ok()?,
            }
            if !self.is_up() {
                return None;
            }
        }
    }
}

/// Decides whether a subject's request is admitted.
#[derive(Debug)]
pub struct Limiter {
    config: RateLimitConfig,
    shared: Option<Arc<Shared>>,
    local: LocalBuckets,
}

/// How long the shared store is left alone after it failed or timed out.
const SHARED_BACKOFF: Duration = Duration::from_secs(1);

impl Limiter {
    /// A limiter with `shared` as the store when given (fallback: this process).
    pub fn new(config: RateLimitConfig, shared: Option<Arc<dyn SharedBuckets>>) -> Result<Self, InvalidRateLimit> {
        config.validate()?;
        let clock = Clock(Instant::now());
        let shared = shared.map(|store| {
            Arc::new(Shared {
                store,
                leases: subjects(),
                down_until: AtomicU64::new(0),
                timeout: Duration::from_millis(config.redis_timeout_ms),
                clock,
            })
        });
        Ok(Self { config, shared, local: LocalBuckets::new(clock) })
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
            Some(shared) if shared.store.is_healthy() && shared.is_up() => "up",
            Some(_) => "degraded",
        }
    }

    /// Whether limits are enforced at all.
    pub fn enabled(&self) -> bool {
        self.config.enabled
    }

    /// Takes one request of `subject` against `limit`. Its callers make the `rate_limit` span
    /// around it (only when traces are on).
    pub async fn check(&self, subject: Subject<'_>, limit: RateLimit) -> Decision {
        let key = subject.key(&self.config.key_prefix, limit);
        if let Some(shared) = &self.shared
            && shared.is_up()
            && let Some(parts) = shared.check(&key, limit).await
        {
            return Decision::from_parts(limit, parts, true);
        }
        Decision::from_parts(limit, self.local.take(&key, limit.emission_us(), limit.tolerance_us()), false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: RateLimit = RateLimit { per_second: 10, burst: 5 };

    /// The keys name the subject and the limit, each kind apart (the principal's issuer by its
    /// length too, so no issuer and subject pair reads as another).
    #[test]
    fn a_bucket_key_names_its_subject_and_its_limit() {
        let limit = RateLimit { per_second: 1000, burst: 2000 };
        assert_eq!(Subject::Tenant("acme").key("rl", limit), "rl:t:1000:2000:acme");
        assert_eq!(Subject::Principal("https://idp", "op:1").key("rl", limit), "rl:p:1000:2000:11:https://idp:op:1");
        assert_eq!(Subject::Client("::1".parse().unwrap()).key("rl", limit), "rl:ip:1000:2000:::1");
        assert_eq!(Subject::Client("10.0.0.7".parse().unwrap()).key("x", LIMIT), "x:ip:10:5:10.0.0.7");
    }

    #[test]
    fn a_quiet_subject_gets_its_burst_then_one_request_per_interval() {
        let mut tat = 0;
        let (emission, tolerance) = (LIMIT.emission_us(), LIMIT.tolerance_us());
        let now = 1_000_000;
        let admitted: Vec<u64> = (0..7).map(|_| gcra(&mut tat, now, emission, tolerance, 1)[0]).collect();
        assert_eq!(admitted, [1, 1, 1, 1, 1, 0, 0]);
        let refused = gcra(&mut tat, now, emission, tolerance, 1);
        assert_eq!(refused[2], emission, "retry after one emission interval");
        assert_eq!(gcra(&mut tat, now + emission - 1, emission, tolerance, 1)[0], 0);
        assert_eq!(gcra(&mut tat, now + emission, emission, tolerance, 1)[0], 1);
        assert_eq!(gcra(&mut tat, now + emission, emission, tolerance, 1)[0], 0);
    }

    #[test]
    fn remaining_counts_down_and_reset_covers_the_used_burst() {
        let mut tat = 0;
        let (emission, tolerance) = (LIMIT.emission_us(), LIMIT.tolerance_us());
        let first = gcra(&mut tat, 0, emission, tolerance, 1);
        assert_eq!((first[1], first[3]), (4, emission));
        let second = gcra(&mut tat, 0, emission, tolerance, 1);
        assert_eq!((second[1], second[3]), (3, 2 * emission));
    }

    #[test]
    fn the_sustained_rate_is_the_limit() {
        // One attempt every millisecond for ten seconds: the burst at once, then one every 100 ms
        // from 100 ms on (the burst's last request took the slot of the first interval).
        let mut tat = 0;
        let (emission, tolerance) = (LIMIT.emission_us(), LIMIT.tolerance_us());
        let admitted: u64 = (0..10_000u64).map(|ms| gcra(&mut tat, ms * 1_000, emission, tolerance, 1)[0]).sum();
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

    /// A shared store in this process: the same GCRA lease as the Redis script, with a call count.
    #[derive(Debug, Default)]
    struct InProcessStore {
        tats: Mutex<BTreeMap<String, u64>>,
        calls: AtomicU64,
        clock: std::sync::OnceLock<Instant>,
    }

    impl SharedBuckets for InProcessStore {
        fn take<'a>(&'a self, key: &'a str, emission_us: u64, tolerance_us: u64, want: u64) -> SharedFuture<'a> {
            self.calls.fetch_add(1, Ordering::Relaxed);
            let now = self.clock.get_or_init(Instant::now).elapsed().as_micros() as u64;
            let mut tats = self.tats.lock();
            let tat = tats.entry(key.to_owned()).or_insert(0);
            let parts = gcra(tat, now, emission_us, tolerance_us, want);
            Box::pin(async move { Some(parts) })
        }

        fn is_healthy(&self) -> bool {
            true
        }
    }

    #[test]
    fn leases_are_twenty_milliseconds_of_the_rate_and_at_most_a_quarter_of_the_burst() {
        let lease = |per_second, burst| RateLimit { per_second, burst }.lease_size();
        assert_eq!((lease(50, 100), lease(1_000, 2_000), lease(10_000, 20_000)), (1, 20, 200));
        assert_eq!(lease(100_000, 40), 10, "a quarter of the burst");
        assert_eq!((lease(1, 1), lease(2, 10)), (1, 1), "at least one");
    }

    #[test]
    fn a_lease_grants_what_the_bucket_holds_and_no_more() {
        let (emission, tolerance) = (LIMIT.emission_us(), LIMIT.tolerance_us());
        let mut tat = 0;
        assert_eq!(gcra(&mut tat, 0, emission, tolerance, 3), [3, 2, 0, 3 * emission]);
        assert_eq!(gcra(&mut tat, 0, emission, tolerance, 3)[..2], [2, 0], "only two were left");
        assert_eq!(gcra(&mut tat, 0, emission, tolerance, 3), [0, 0, emission, 5 * emission]);
    }

    #[tokio::test]
    async fn a_busy_subject_asks_the_store_once_per_lease() {
        let store = Arc::new(InProcessStore::default());
        let limiter = Limiter::new(RateLimitConfig::default(), Some(store.clone())).unwrap();
        let limit = RateLimit { per_second: 100_000, burst: 200_000 };
        let lease = limit.lease_size();
        for _ in 0..10_000 {
            let decision = limiter.check(Subject::Tenant("a"), limit).await;
            assert!(decision.admitted && decision.shared);
            tokio::task::yield_now().await; // lets the background top-ups run
        }
        let calls = store.calls.load(Ordering::Relaxed);
        assert!(calls <= 2 * 10_000 / lease + 2, "{calls} store calls for 10000 requests, lease {lease}");
        assert!(calls >= 10_000 / lease, "every admission was leased from the store: {calls} calls");
    }

    #[tokio::test]
    async fn instances_sharing_a_store_admit_at_most_one_lease_each_above_the_limit() {
        let store: Arc<InProcessStore> = Arc::new(InProcessStore::default());
        let limit = RateLimit { per_second: 1, burst: 400 };
        let lease = limit.lease_size();
        let instances: Vec<Limiter> = (0..3)
            .map(|_| Limiter::new(RateLimitConfig::default(), Some(store.clone() as Arc<dyn SharedBuckets>)).unwrap())
            .collect();
        let mut admitted = 0;
        for i in 0..3_000 {
            if instances[i % 3].check(Subject::Tenant("a"), limit).await.admitted {
                admitted += 1;
            }
            tokio::task::yield_now().await;
        }
        // Well under a second passes, so the rate refills at most one admission.
        assert!(admitted <= 400 + 1 + 3 * lease, "admitted {admitted}, bound {}", 400 + 1 + 3 * lease);
        assert!(admitted >= 400 - 3 * lease, "leases unspent at the end are all that is lost: {admitted}");
    }

    #[tokio::test]
    async fn a_refusal_is_remembered_until_it_expires() {
        let store = Arc::new(InProcessStore::default());
        let limiter = Limiter::new(RateLimitConfig::default(), Some(store.clone())).unwrap();
        let limit = RateLimit { per_second: 1, burst: 1 };
        assert!(limiter.check(Subject::Tenant("a"), limit).await.admitted);
        tokio::task::yield_now().await;
        let refused = limiter.check(Subject::Tenant("a"), limit).await;
        assert!(!refused.admitted && refused.shared);
        assert_eq!(refused.retry_after_secs(), 1);
        let calls = store.calls.load(Ordering::Relaxed);
        for _ in 0..100 {
            assert!(!limiter.check(Subject::Tenant("a"), limit).await.admitted);
        }
        assert_eq!(store.calls.load(Ordering::Relaxed), calls, "refusals within Retry-After stay local");
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
