//! # shardgate-cache
//!
//! Cache-aside for record reads: an optional in-process L1 (moka, bounded by bytes) in front of
//! an optional shared L2 (Redis). It owns the caching rules and knows nothing of HTTP or SQL: the
//! caller hands it a cache key and a loader.
//!
//! ## The rules
//! - Reads look in L1, then L2; on a miss one load per key runs (single-flight) and its result is
//!   stored in both, guarded by version. Not-found results are never cached.
//! - A write marks its key before it reaches the shard ([`RecordCache::begin_write`]: a *write
//!   mark* in L1 and L2, announced to other instances through pub/sub), updates the shard, then
//!   ends the write ([`RecordCache::end_write`]) with the new version, which leaves a *marker*
//!   at that version in L1 and L2 and tells other instances. A write whose mark is held in L2
//!   may be answered once L1 has its end ([`RecordCache::end_marked_write`]), the L2 part sent
//!   later with other writes' ends ([`RecordCache::send_ends`]): the mark covers the key until then. A marker says "anything older is
//!   stale": a slow reader that loaded an older version cannot store it (Redis compares
//!   versions in a Lua script; L1 does the same under moka's per-key compute). Markers live
//!   `max(ttl, 60 s)`, longer than any load can take.
//! - While a key is marked, reads go to the shard and nothing is cached. An instance that dies
//!   between the shard's commit and the end of the write (or a write whose outcome is unknown)
//!   leaves the mark until it expires (`cache.write_mark_ttl`, longer than a write can take),
//!   so no instance serves the version before the write from a cache: after a crash, reads see
//!   the committed version at once. A load that took longer than half the mark's life stores
//!   nothing (it may have begun before a mark that has expired since).
//! - Record versions only grow (deletes leave tombstones with a higher version), so "newer" is
//!   always well defined.
//! - L1 is used only while this instance is subscribed to the invalidation channel (or when there
//!   is no Redis at all); on losing the subscription L1 is cleared and bypassed until it is back.
//! - Redis failures never fail a request: the cache is bypassed until Redis answers a probe. If an
//!   invalidation cannot reach Redis, the caller moves the *cache generation* on (stored in the
//!   catalog, part of every key): old entries are never read again. It moves once per Redis
//!   outage, not once per write: the first failed invalidation of an outage moves it (later ones
//!   wait for that move), and once more when Redis answers again if invalidations failed
//!   meanwhile (dropping what instances that still reached Redis filled). Other instances learn the new
//!   generation within one poll interval of the catalog (500 ms); that is the bound on serving an
//!   old value from Redis after an invalidation failed.

pub mod config;
pub mod entry;
pub mod flight;
pub mod l1;
pub mod l2;
pub mod redis_endpoint;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::StreamExt;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::registry::Registry;
use shardgate_shard_router::Error as StoreError;
use tokio::sync::Notify;

pub use config::{CacheConfig, L1Config};
pub use entry::{CachedRecord, Slot};
use flight::SingleFlight;
use l1::L1;
use l2::{L2, RedisUse};
pub use redis_endpoint::{RedisConfigError, RedisEndpoint, RedisTlsFiles, Section, install_crypto_provider};

/// The shortest life of an invalidation marker.
const MIN_MARKER_TTL: Duration = Duration::from_secs(60);
/// How often Redis is probed.
const PROBE_EVERY: Duration = Duration::from_millis(500);

/// What the shard said about a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordState {
    /// It exists.
    Live(CachedRecord),
    /// It was deleted; the tombstone's version.
    Gone(i64),
    /// It never existed.
    Absent,
}

impl RecordState {
    /// The version the state speaks for (0 when absent).
    pub fn version(&self) -> i64 {
        match self {
            RecordState::Live(r) => r.version,
            RecordState::Gone(v) => *v,
            RecordState::Absent => 0,
        }
    }
}

/// The result of a load, shared between single-flight callers.
pub type LoadResult = Result<RecordState, Arc<StoreError>>;

/// How a read was served, for the request span and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheOutcome {
    /// Served from L1.
    L1Hit,
    /// Served from Redis.
    L2Hit,
    /// Loaded from the shard.
    Miss,
    /// Loaded from the shard because Redis failed.
    Bypass,
    /// Caching is switched off.
    Off,
}

impl CacheOutcome {
    /// The span value.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheOutcome::L1Hit => "l1_hit",
            CacheOutcome::L2Hit => "l2_hit",
            CacheOutcome::Miss => "miss",
            CacheOutcome::Bypass => "bypass",
            CacheOutcome::Off => "off",
        }
    }
}

/// How a marked write ended ([`RecordCache::end_write`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteEnd {
    /// It reached the shard at this version.
    Written(i64),
    /// It was refused and changed nothing (a precondition, a fence, a missing record).
    Unchanged,
    /// It may or may not have been applied, and may still commit (its deadline passed, its
    /// connection broke): the mark is left to expire.
    Unknown,
}

/// What is left of a write's end once L1 has it: the Redis part
/// ([`RecordCache::end_marked_write`], [`RecordCache::send_ends`]).
#[derive(Debug, Clone)]
pub struct PendingEnd {
    key: String,
    version: i64,
    marker_ttl: Duration,
    message: String,
}

/// The first word of the invalidation message announcing a write mark (the others carry a
/// version).
const WRITE_BEGINS: &str = "w";

/// An invalidation did not reach Redis: the caller must move the cache generation on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("cache invalidation did not reach Redis")]
pub struct InvalidationFailed;

/// The generation moves made for invalidations that did not reach Redis.
#[derive(Debug, Default)]
struct GenerationMoves {
    /// The Redis outage ([`L2::recoveries`] during it) the generation last moved on in.
    moved_in: Option<u64>,
    /// An invalidation failed after that move, in the same outage.
    missed_since: bool,
}

/// Readiness of the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheHealth {
    /// Caching is switched off.
    Disabled,
    /// L1 only (no Redis configured).
    Local,
    /// Redis answers.
    Up,
    /// Redis does not answer: reads go to the shards.
    Degraded,
}

/// `cache_redis_degraded`: 1 while the cache's Redis does not answer (reads go to the shards,
/// [`CacheHealth::Degraded`]), read at each scrape; shown only when a Redis is configured.
#[derive(Debug)]
struct RedisDegraded(Arc<L2>);

impl prometheus_client::collector::Collector for RedisDegraded {
    fn encode(&self, mut encoder: prometheus_client::encoding::DescriptorEncoder) -> Result<(), std::fmt::Error> {
        use prometheus_client::encoding::EncodeMetric;
        let family = encoder.encode_descriptor(
            "cache_redis_degraded",
            "1 while the record cache's Redis does not answer: reads go to the shards (as /readyz's cache says)",
            None,
            prometheus_client::metrics::MetricType::Gauge,
        )?;
        prometheus_client::metrics::gauge::ConstGauge::new(i64::from(!self.0.is_healthy())).encode(family)
    }
}

#[derive(Debug, Default)]
struct CacheMetrics {
    l1_hits: Counter,
    l2_hits: Counter,
    misses: Counter,
    loads: Counter,
    errors: Counter,
    l1_evictions: Arc<Counter>,
}

/// The record cache of one gateway instance.
#[derive(Debug)]
pub struct RecordCache {
    config: CacheConfig,
    l1: Option<L1>,
    l2: Option<Arc<L2>>,
    l1_trusted: AtomicBool,
    generation: AtomicU64,
    /// Serialises moves of the generation for failed invalidations, and remembers the Redis
    /// outage the last one was made in.
    generation_moves: tokio::sync::Mutex<GenerationMoves>,
    flights: SingleFlight<LoadResult>,
    metrics: CacheMetrics,
    epoch_hint: Notify,
    invalidation_channel: String,
    epoch_channel: String,
}

/// What the cache holds for a key ([`RecordCache::look`]).
enum Looked {
    /// The record, and which level held it.
    Hit(CachedRecord, CacheOutcome),
    /// No record: the version a load must reach (a marker's), whether a write of the key is in
    /// progress, and `Bypass` if Redis failed (else `Miss`).
    Miss { floor: i64, writing: bool, outcome: CacheOutcome },
}

impl RecordCache {
    /// Builds the cache, registers its metrics and starts its Redis tasks (probe, subscription).
    /// Fails on a Redis URL or TLS file that cannot be used, naming its key.
    pub fn start(config: CacheConfig, generation: u64, registry: &mut Registry) -> Result<Arc<Self>, RedisConfigError> {
        let endpoint = config.redis_endpoint()?;
        let l2 = match &endpoint {
            Some(endpoint) if config.enabled => Some(L2::new(endpoint, config.redis_timeout, RedisUse::Cache)?),
            _ => None,
        };
        let metrics = CacheMetrics::default();
        let l1_on = config.enabled && config.l1.enabled.unwrap_or(l2.is_none());
        let l1 = l1_on.then(|| {
            let evictions = metrics.l1_evictions.clone();
            L1::new(config.l1.max_bytes, move || {
                evictions.inc();
            })
        });
        registry.register("cache_l1_hits", "Record reads served from L1", metrics.l1_hits.clone());
        registry.register("cache_l2_hits", "Record reads served from Redis", metrics.l2_hits.clone());
        registry.register("cache_misses", "Record reads not served from a cache", metrics.misses.clone());
        registry.register("cache_loads", "Shard reads made by record reads", metrics.loads.clone());
        registry.register("cache_errors", "Redis operations that failed or timed out", metrics.errors.clone());
        registry.register("cache_l1_evictions", "L1 entries evicted for size", (*metrics.l1_evictions).clone());
        if let Some(l2) = &l2 {
            registry.register_collector(Box::new(RedisDegraded(l2.clone())));
        }
        let prefix = config.key_prefix.clone();
        let cache = Arc::new(Self {
            l1_trusted: AtomicBool::new(l2.is_none()),
            generation: AtomicU64::new(generation),
            generation_moves: tokio::sync::Mutex::new(GenerationMoves::default()),
            flights: SingleFlight::default(),
            epoch_hint: Notify::new(),
            invalidation_channel: format!("{prefix}:invalidate"),
            epoch_channel: format!("{prefix}:epoch"),
            metrics,
            config,
            l1,
            l2,
        });
        if let Some(l2) = &cache.l2 {
            tokio::spawn(supervise(Arc::downgrade(l2)));
            tokio::spawn(subscribe(Arc::downgrade(&cache)));
        }
        Ok(cache)
    }

    /// The cache key of a record (includes the generation).
    ///
    /// `<prefix>:<generation>:r:<tenant>:<collection>:<key>`, built without the formatting
    /// machinery (every record read and write makes one).
    pub fn record_key(&self, tenant: &str, collection: &str, key: &str) -> String {
        let generation = self.generation.load(Ordering::Acquire);
        let prefix = &self.config.key_prefix;
        let mut cache_key = String::with_capacity(prefix.len() + tenant.len() + collection.len() + key.len() + 26);
        cache_key.push_str(prefix);
        cache_key.push(':');
        cache_key.push_str(itoa::Buffer::new().format(generation));
        cache_key.push_str(":r:");
        cache_key.push_str(tenant);
        cache_key.push(':');
        cache_key.push_str(collection);
        cache_key.push(':');
        cache_key.push_str(key);
        cache_key
    }

    /// `cache_key` ([`RecordCache::record_key`]) under the generation in use now, if the
    /// generation moved on since the key was made.
    pub fn rekeyed(&self, cache_key: &str) -> Option<String> {
        let prefix = &self.config.key_prefix;
        let (generation, record) = cache_key.strip_prefix(prefix.as_str())?.strip_prefix(':')?.split_once(':')?;
        let now = self.generation();
        (generation.parse::<u64>().ok()? != now).then(|| format!("{prefix}:{now}:{record}"))
    }

    fn ttl(&self, collection: &str) -> Duration {
        self.config.collection_ttl.get(collection).copied().unwrap_or(self.config.ttl)
    }

    fn trusted_l1(&self) -> Option<&L1> {
        self.l1.as_ref().filter(|_| self.l1_trusted.load(Ordering::Acquire))
    }

    /// What L1, then L2, hold for `cache_key` (an L2 hit fills L1, to live `ttl`).
    async fn look(&self, cache_key: &str, ttl: Duration) -> Looked {
        let mut floor = 0;
        // A write in progress (or whose instance died): read the shard, store nothing.
        let mut writing = false;
        if let Some(l1) = self.trusted_l1() {
            match shardgate_shard_router::in_trace_span!(tracing::trace_span!("cache.l1"), l1.get(cache_key)) {
                Some(Slot::Record(record)) => {
                    self.metrics.l1_hits.inc();
                    return Looked::Hit(record, CacheOutcome::L1Hit);
                }
                Some(Slot::Marker(version)) => floor = version,
                Some(Slot::Writing(version)) => (floor, writing) = (version, true),
                None => {}
            }
        }
        let mut outcome = CacheOutcome::Miss;
        if let Some(l2) = &self.l2 {
            match shardgate_shard_router::in_trace_span!(tracing::trace_span!("cache.redis"), l2.get(cache_key)) {
                Ok(Some(Slot::Record(record))) => {
                    self.metrics.l2_hits.inc();
                    if let Some(l1) = self.trusted_l1() {
                        l1.fill(cache_key, record.clone(), ttl).await;
                    }
                    return Looked::Hit(record, CacheOutcome::L2Hit);
                }
                Ok(Some(Slot::Marker(version))) => floor = floor.max(version),
                Ok(Some(Slot::Writing(version))) => (floor, writing) = (floor.max(version), true),
                Ok(None) => {}
                Err(_) => {
                    self.metrics.errors.inc();
                    outcome = CacheOutcome::Bypass;
                }
            }
        }
        Looked::Miss { floor, writing, outcome }
    }

    /// The record the cache holds for `cache_key`, if it holds one, without reading the shard
    /// or storing anything: for a read that a standby serves on a miss (what a standby read
    /// returns may be older than the primary, so it is never stored). A miss is counted as one.
    pub async fn peek(&self, cache_key: &str, collection: &str) -> (Option<CachedRecord>, CacheOutcome) {
        if !self.config.enabled {
            return (None, CacheOutcome::Off);
        }
        match self.look(cache_key, self.ttl(collection)).await {
            Looked::Hit(record, outcome) => (Some(record), outcome),
            Looked::Miss { outcome, .. } => {
                self.metrics.misses.inc();
                (None, outcome)
            }
        }
    }

    /// Reads a record through the cache; `load` reads it from the shard. The caller makes the
    /// `cache.read` span around it (`shardgate_shard_router::in_trace_span!`), so that with traces
    /// off this future is awaited with no wrapper.
    pub async fn read<Fut>(
        &self,
        cache_key: &str,
        collection: &str,
        load: impl FnOnce() -> Fut,
    ) -> (LoadResult, CacheOutcome)
    where
        Fut: std::future::Future<Output = Result<RecordState, StoreError>>,
    {
        if !self.config.enabled {
            self.metrics.loads.inc();
            return (load().await.map_err(Arc::new), CacheOutcome::Off);
        }
        let ttl = self.ttl(collection);
        let (floor, writing, outcome) = match self.look(cache_key, ttl).await {
            Looked::Hit(record, outcome) => return (Ok(RecordState::Live(record)), outcome),
            Looked::Miss { floor, writing, outcome } => (floor, writing, outcome),
        };
        self.metrics.misses.inc();
        let acceptable = |result: &LoadResult| matches!(result, Ok(state) if state.version() >= floor);
        // The leader stores what it loaded before its flight ends, so a reader arriving later
        // finds either the flight or the filled cache: one shard read per burst of misses. A
        // reader that missed L1 just before a flight filled it and ended leads a new flight: it
        // looks in L1 once more before reading the shard.
        let loaded = self
            .flights
            .load(cache_key, acceptable, || async {
                if let Some(l1) = self.trusted_l1()
                    && let Some(Slot::Record(record)) = l1.get(cache_key).await
                    && record.version >= floor
                {
                    return Ok(RecordState::Live(record));
                }
                self.metrics.loads.inc();
                let started_at = self.flights.sequence(cache_key);
                let began = std::time::Instant::now();
                let result = load().await.map_err(Arc::new);
                let storable = !writing && began.elapsed() < self.config.write_mark_ttl / 2;
                if let Ok(RecordState::Live(record)) = &result
                    && storable
                {
                    if let Some(l2) = self.l2.as_ref().filter(|_| outcome != CacheOutcome::Bypass)
                        && l2.fill(cache_key, &Slot::Record(record.clone()), ttl).await.is_err()
                    {
                        self.metrics.errors.inc();
                    }
                    // A local write since the load started may be newer than what was read and
                    // its L1 marker may have been evicted: only fill L1 when none happened.
                    if self.flights.sequence(cache_key) == started_at
                        && let Some(l1) = self.trusted_l1()
                    {
                        l1.fill(cache_key, record.clone(), ttl).await;
                    }
                }
                result
            })
            .await;
        (loaded.value, outcome)
    }

    /// Before a write or delete of `cache_key` reaches its shard: marks the key in L1 and L2 and
    /// tells other instances, so that until the write ends (or the mark expires) no instance
    /// serves or stores the key from a cache. `Err` if Redis could not be reached: the write
    /// goes on, and its end moves the cache generation on if Redis is still unreachable then.
    pub async fn begin_write(&self, cache_key: &str) -> Result<(), InvalidationFailed> {
        let ttl = self.config.write_mark_ttl;
        self.flights.note_write(cache_key);
        if let Some(l1) = &self.l1 {
            l1.begin_write(cache_key, ttl).await;
        }
        let Some(l2) = &self.l2 else { return Ok(()) };
        let message = format!("{WRITE_BEGINS} {cache_key}");
        l2.begin_write(cache_key, ttl, &self.invalidation_channel, &message).await.map_err(|_| {
            self.metrics.errors.inc();
            InvalidationFailed
        })
    }

    /// After a write or delete of `cache_key` that [`RecordCache::begin_write`] marked ended,
    /// and before it is acknowledged. [`WriteEnd::Written`]: makes every cached copy older than
    /// its version unreadable. [`WriteEnd::Unchanged`]: only ends the mark.
    /// [`WriteEnd::Unknown`] (it may still commit): leaves the mark to expire.
    pub async fn end_write(&self, cache_key: &str, collection: &str, end: WriteEnd) -> Result<(), InvalidationFailed> {
        match self.end_marked_write(cache_key, collection, end).await {
            Some(pending) => self.send_ends(std::slice::from_ref(&pending)).await,
            None => Ok(()),
        }
    }

    /// [`RecordCache::end_write`] of a write whose mark [`RecordCache::begin_write`] set in Redis:
    /// ends it in L1 now and returns what is left to send to Redis ([`RecordCache::send_ends`]),
    /// which may wait for other writes' ends to go with it: until it is sent the mark keeps every
    /// instance reading `cache_key` from its shard, so the write may be acknowledged before.
    /// `None` when nothing is left (no Redis, or an unknown outcome, whose mark is left to
    /// expire).
    pub async fn end_marked_write(&self, cache_key: &str, collection: &str, end: WriteEnd) -> Option<PendingEnd> {
        let version = match end {
            WriteEnd::Written(version) => version,
            WriteEnd::Unchanged => 0,
            WriteEnd::Unknown => return None,
        };
        let marker_ttl = self.ttl(collection).max(MIN_MARKER_TTL);
        self.flights.note_write(cache_key);
        if let Some(l1) = &self.l1 {
            l1.invalidate(cache_key, version, marker_ttl).await;
        }
        self.l2.as_ref()?;
        Some(PendingEnd { message: format!("{version} {cache_key}"), key: cache_key.to_owned(), version, marker_ttl })
    }

    /// Sends the ends of writes ([`RecordCache::end_marked_write`]) to Redis, all in one call.
    /// `Err` if Redis could not be reached: the marks are left to expire.
    pub async fn send_ends(&self, ends: &[PendingEnd]) -> Result<(), InvalidationFailed> {
        let Some(l2) = &self.l2 else { return Ok(()) };
        let ends: Vec<_> = ends.iter().map(|e| (e.key.as_str(), e.version, e.marker_ttl, e.message.as_str())).collect();
        l2.end_writes(&ends, &self.invalidation_channel).await.map_err(|_| {
            self.metrics.errors.inc();
            InvalidationFailed
        })
    }

    /// Moves to cache generation `generation` (learned from the catalog): keys of older
    /// generations are never read again, and L1 starts empty.
    pub fn set_generation(&self, generation: u64) {
        let previous = self.generation.swap(generation, Ordering::AcqRel);
        if previous != generation {
            tracing::info!(previous, generation, "cache generation moved on");
            if let Some(l1) = &self.l1 {
                l1.clear();
            }
        }
    }

    /// An invalidation did not reach Redis ([`InvalidationFailed`]): moves the cache generation
    /// on with `bump` (the catalog's counter, which returns the new generation), once per Redis
    /// outage. The first failed invalidation of an outage moves it; later ones in the same
    /// outage wait for that move and add none (no entry of the new generation can be filled
    /// while Redis does not answer), and [`RecordCache::move_generation_on_after_outage`]
    /// moves it once more when the outage ends, for entries other instances may have filled
    /// meanwhile. A failed `bump` is retried by the next failed invalidation.
    pub async fn move_generation_on<F>(&self, bump: F) -> Result<(), StoreError>
    where
        F: std::future::Future<Output = Result<u64, StoreError>>,
    {
        let mut moves = self.generation_moves.lock().await;
        let outage = self.l2.as_ref().map(|l2| l2.recoveries());
        if outage.is_some() && moves.moved_in == outage {
            moves.missed_since = true;
            return Ok(());
        }
        self.set_generation(bump.await?);
        *moves = GenerationMoves { moved_in: outage, missed_since: false };
        Ok(())
    }

    /// Once Redis answers again after an outage in which invalidations failed after the
    /// generation moved on: moves it on once more with `bump` (see
    /// [`RecordCache::move_generation_on`]), and once the Redis master has moved (Sentinel: see
    /// [`L2::pending_master_move`]). Does nothing otherwise; called on every catalog poll.
    pub async fn move_generation_on_after_outage<F>(&self, bump: F) -> Result<(), StoreError>
    where
        F: std::future::Future<Output = Result<u64, StoreError>>,
    {
        let Some(l2) = &self.l2 else { return Ok(()) };
        let mut moves = self.generation_moves.lock().await;
        // The Redis master moved (Sentinel): whatever the former master had not replicated is
        // gone, the markers of acknowledged writes among it, so nothing cached before is read
        // again. Redis stays bypassed until this is done.
        if let Some(master_moves) = l2.pending_master_move() {
            self.set_generation(bump.await?);
            l2.accept_master_move(master_moves);
            *moves = GenerationMoves::default();
            tracing::warn!("the redis master moved: the cache generation moved on, the cache is in use again");
            return Ok(());
        }
        let ended = l2.is_healthy() && moves.moved_in.is_some_and(|outage| outage != l2.recoveries());
        if !(ended && moves.missed_since) {
            return Ok(());
        }
        self.set_generation(bump.await?);
        *moves = GenerationMoves::default();
        Ok(())
    }

    /// Waits (at most `within`) for the first connection attempt to Redis to end, so that the
    /// first `/readyz` already says why the cache is degraded (a refused certificate, a refused
    /// connection), as its log line does. Returns at once without Redis.
    pub async fn first_probe(&self, within: Duration) {
        if let Some(l2) = &self.l2 {
            l2.first_probe(within).await;
        }
    }

    /// The generation in use.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Readiness.
    pub fn health(&self) -> CacheHealth {
        match (&self.l2, self.config.enabled) {
            (_, false) => CacheHealth::Disabled,
            (None, true) => CacheHealth::Local,
            (Some(l2), true) if l2.is_healthy() => CacheHealth::Up,
            (Some(_), true) => CacheHealth::Degraded,
        }
    }

    /// Why the cache cannot reach Redis (a refused certificate, a refused connection), while it
    /// cannot.
    pub fn redis_error(&self) -> Option<String> {
        self.l2.as_ref().filter(|l2| !l2.is_healthy()).and_then(|l2| l2.last_error())
    }

    /// The cache's Redis connection, for sharing (none when the cache has no Redis).
    pub fn redis_link(&self) -> Option<RedisLink> {
        self.l2.clone().map(RedisLink)
    }

    /// Whether L1 is configured and currently trusted.
    pub fn l1_active(&self) -> bool {
        self.trusted_l1().is_some()
    }

    /// Woken when another instance announces a new shard map epoch.
    pub fn epoch_hint(&self) -> &Notify {
        &self.epoch_hint
    }

    /// Tells other instances the shard map moved to `epoch` (best effort: they also poll).
    pub async fn announce_epoch(&self, epoch: u64) {
        if let Some(l2) = &self.l2 {
            let _ = l2.publish(&self.epoch_channel, &epoch.to_string()).await;
        }
    }

    fn on_invalidation_message(&self, payload: &str) {
        let Some((version, key)) = payload.split_once(' ') else { return };
        if version == WRITE_BEGINS {
            self.flights.note_write(key);
            if let Some(l1) = &self.l1 {
                let (l1, key, ttl) = (l1.clone(), key.to_owned(), self.config.write_mark_ttl);
                tokio::spawn(async move { l1.begin_write(&key, ttl).await });
            }
            return;
        }
        let Ok(version) = version.parse::<i64>() else { return };
        self.flights.note_write(key);
        if let Some(l1) = &self.l1 {
            let l1 = l1.clone();
            let (key, ttl) = (key.to_owned(), self.config.ttl.max(MIN_MARKER_TTL));
            tokio::spawn(async move { l1.invalidate(&key, version, ttl).await });
        }
    }
}

/// A supervised Redis connection other parts of the gateway share (the rate limiter runs its
/// script through it): one multiplexed connection that reconnects by itself, with a timeout on
/// every operation, bypassed at no cost while Redis does not answer its probe.
#[derive(Debug, Clone)]
pub struct RedisLink(Arc<L2>);

/// A Lua script to run through a [`RedisLink`] (loaded once, then called by its SHA-1).
#[derive(Debug, Clone)]
pub struct LinkScript(redis::Script);

impl LinkScript {
    /// Prepares `lua`.
    pub fn new(lua: &str) -> Self {
        Self(redis::Script::new(lua))
    }
}

impl RedisLink {
    /// Connects to `endpoint` in the background and keeps probing it.
    pub fn start(endpoint: &RedisEndpoint, timeout: Duration) -> Result<Self, RedisConfigError> {
        let l2 = L2::new(endpoint, timeout, RedisUse::RateLimits)?;
        tokio::spawn(supervise(Arc::downgrade(&l2)));
        Ok(Self(l2))
    }

    /// Runs `script` on `key`; `None` when Redis cannot answer now.
    pub async fn run_script(&self, script: &LinkScript, key: &str, args: &[u64]) -> Option<Vec<u64>> {
        self.0.run_script(&script.0, key, args).await.ok()
    }

    /// Whether Redis answered the last operation or probe.
    pub fn is_healthy(&self) -> bool {
        self.0.is_healthy()
    }
}

async fn supervise(l2: Weak<L2>) {
    // The probe loop holds the L2 only while probing, so dropping the cache ends it.
    while let Some(l2) = l2.upgrade() {
        l2.probe_once().await;
        drop(l2);
        tokio::time::sleep(PROBE_EVERY).await;
    }
}

async fn subscribe(cache: Weak<RecordCache>) {
    loop {
        let Some(strong) = cache.upgrade() else { return };
        let Some(l2) = strong.l2.clone() else { return };
        let channels = [strong.invalidation_channel.clone(), strong.epoch_channel.clone()];
        drop(strong);
        let pubsub = match l2.client() {
            Some(client) => tokio::time::timeout(Duration::from_secs(2), client.get_async_pubsub()).await.ok(),
            None => None,
        };
        if let Some(Ok(mut pubsub)) = pubsub
            && pubsub.subscribe(&channels).await.is_ok()
        {
            if let Some(strong) = cache.upgrade() {
                if let Some(l1) = &strong.l1 {
                    l1.clear();
                }
                strong.l1_trusted.store(true, Ordering::Release);
                tracing::info!("subscribed to cache invalidations");
            }
            let mut messages = pubsub.on_message();
            while let Some(message) = messages.next().await {
                let Some(strong) = cache.upgrade() else { return };
                let payload: String = message.get_payload().unwrap_or_default();
                if message.get_channel_name() == channels[0] {
                    strong.on_invalidation_message(&payload);
                } else {
                    strong.epoch_hint.notify_waiters();
                }
            }
        }
        let Some(strong) = cache.upgrade() else { return };
        if strong.l1_trusted.swap(false, Ordering::AcqRel) {
            tracing::warn!("lost the cache invalidation subscription: L1 cleared and bypassed until it is back");
        }
        if let Some(l1) = &strong.l1 {
            l1.clear();
        }
        drop(strong);
        tokio::time::sleep(PROBE_EVERY).await;
    }
}
