//! The load this instance puts on its shards, counted at the statement: every statement run
//! through a [`crate::storage::shard::FencedShard`] adds to the counters of the window it ends
//! in (reads or writes, rows and bytes, statement time, failures), attributed to its shard, its
//! vshard (or `-1` when it was not placed by a vshard: pinned tenants' home data, ranges, work
//! on a whole shard) and the kind of work (a request, a move's copy, maintenance). Requests'
//! load is also attributed to tenants, of which only the heaviest are kept: a Space-Saving
//! summary of [`MeterConfig::top_tenants`] entries per window, so memory never grows with the
//! number of tenants or requests.
//!
//! Windows are aligned on the wall clock (a 10 s window starts at a multiple of 10 s since the
//! Unix epoch), so that the windows of every instance line up and the fleet's load is their sum.
//! A window closes when the first statement after its end arrives or when
//! [`LoadMeter::take_closed`] finds it over; closed windows wait in a bounded queue until the
//! load picture (`crate::balance`) flushes them to the catalog.
//!
//! It knows nothing of the catalog, routing or HTTP: it counts what it is told.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::ids::{ShardId, TenantId};

/// Closed windows kept while they cannot be flushed (an hour of 10 s windows); older ones are
/// dropped first, and counted.
const MAX_CLOSED: usize = 360;

/// The vshard of load that no vshard placed.
pub const NO_VSHARD: i32 = -1;

/// How the meter counts (`[storage.load]` gives it; see `crate::config::LoadConfig`).
#[derive(Debug, Clone, Copy)]
pub struct MeterConfig {
    /// The width of a window.
    pub window: Duration,
    /// How many tenants each window keeps.
    pub top_tenants: usize,
}

impl Default for MeterConfig {
    fn default() -> Self {
        Self { window: Duration::from_secs(10), top_tenants: 100 }
    }
}

/// Whose work a statement is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Work {
    /// A client's request (records, blobs, index entries, listings).
    Request,
    /// A job moving data: tenant and vshard moves, redistributions, rebalances, drains.
    Move,
    /// The gateway's own upkeep: index backfills and audits, garbage collection, purges.
    Maintenance,
}

impl Work {
    /// Every kind, in order.
    pub const ALL: [Work; 3] = [Work::Request, Work::Move, Work::Maintenance];

    /// Its name in the catalog, the API and `/metrics`.
    pub fn as_str(self) -> &'static str {
        match self {
            Work::Request => "request",
            Work::Move => "move",
            Work::Maintenance => "maintenance",
        }
    }

    /// The kind named `name`.
    pub fn parse(name: &str) -> Option<Work> {
        Work::ALL.into_iter().find(|w| w.as_str() == name)
    }
}

/// What a statement is charged to, besides its shard: carried by the
/// [`crate::storage::db::Database`] a store runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Charge {
    /// Whose work it is.
    pub work: Work,
    /// The vshard that placed what it touches; [`NO_VSHARD`] when none did.
    pub vshard: i32,
    /// The tenant whose request it serves, if any.
    pub tenant: Option<TenantId>,
}

impl Default for Charge {
    fn default() -> Self {
        Self { work: Work::Maintenance, vshard: NO_VSHARD, tenant: None }
    }
}

/// The counters of one window of one subject. Statement time is in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Statements that read.
    pub reads: u64,
    /// Statements that wrote.
    pub writes: u64,
    /// Rows read.
    pub rows_read: u64,
    /// Rows written.
    pub rows_written: u64,
    /// Bytes read (record values, blob chunks, index values).
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Time from a statement's start to its answer (µs): the shard's time as this instance
    /// caused it, waiting for a connection included.
    pub statement_us: u64,
    /// Statements that failed (an error of the database, a missed deadline) or were refused
    /// (open breaker, full bulkhead).
    pub errors: u64,
}

impl Counters {
    /// Adds `other`.
    pub fn add(&mut self, other: &Counters) {
        self.reads += other.reads;
        self.writes += other.writes;
        self.rows_read += other.rows_read;
        self.rows_written += other.rows_written;
        self.bytes_read += other.bytes_read;
        self.bytes_written += other.bytes_written;
        self.statement_us += other.statement_us;
        self.errors += other.errors;
    }

    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        *self == Counters::default()
    }

    /// The weight the tenant summary ranks by: statement time, at least one per statement.
    fn weight(&self) -> u64 {
        self.statement_us.max(self.reads + self.writes)
    }
}

/// One statement's measures, or rows and bytes a store saw in its answer.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sample(pub Counters);

impl Sample {
    /// A statement that read (`write` false) or wrote, took `elapsed`, and failed or not.
    pub fn statement(write: bool, elapsed: Duration, failed: bool) -> Self {
        Sample(Counters {
            reads: u64::from(!write),
            writes: u64::from(write),
            statement_us: u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX),
            errors: u64::from(failed),
            ..Counters::default()
        })
    }

    /// `rows` rows of `bytes` bytes read.
    pub fn rows_read(rows: u64, bytes: u64) -> Self {
        Sample(Counters { rows_read: rows, bytes_read: bytes, ..Counters::default() })
    }

    /// `rows` rows of `bytes` bytes written.
    pub fn rows_written(rows: u64, bytes: u64) -> Self {
        Sample(Counters { rows_written: rows, bytes_written: bytes, ..Counters::default() })
    }
}

/// A subject's counters in a window: a vshard of a shard (or [`NO_VSHARD`]) for one kind of
/// work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VshardLoad {
    /// The shard.
    pub shard: ShardId,
    /// The vshard, or [`NO_VSHARD`].
    pub vshard: i32,
    /// Whose work.
    pub work: Work,
    /// What it counted.
    pub counters: Counters,
}

/// A tenant's request load on one shard in a window, as the Space-Saving summary kept it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TenantLoad {
    /// The shard.
    pub shard: ShardId,
    /// The tenant.
    pub tenant: TenantId,
    /// What was counted since the tenant entered the summary.
    pub counters: Counters,
    /// How much of its rank weight it inherited from the tenant it displaced (0 when it never
    /// displaced one): its own weight is at least its rank weight less this.
    pub overcount: u64,
}

/// A closed window of this instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowLoad {
    /// Its start (ms since the Unix epoch, a multiple of its width).
    pub start_ms: i64,
    /// Its width (ms).
    pub width_ms: i64,
    /// Every vshard's load, for every kind of work: they add up to the shards' load.
    pub vshards: Vec<VshardLoad>,
    /// The heaviest tenants' request load.
    pub tenants: Vec<TenantLoad>,
}

/// This instance's counters since it started, per shard and kind of work (for `/metrics`).
pub type Totals = Vec<(ShardId, Work, Counters)>;

/// The upper bounds (seconds) of the statement latency buckets, as `/metrics` shows them (the
/// HTTP latency's bounds, so a shard's share of a request's time reads on the same scale).
pub const LATENCY_BOUNDS: [f64; 13] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0];

/// The statements of one shard and kind of work by how long they took, since start-up: how
/// many fell in each bucket of [`LATENCY_BOUNDS`] (not cumulative; the last one is above every
/// bound), and their total time (µs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Latencies {
    /// Statements per bucket: `buckets[i]` took at most `LATENCY_BOUNDS[i]` and more than the
    /// bound before; the last took more than every bound.
    pub buckets: [u64; LATENCY_BOUNDS.len() + 1],
    /// Their total time (µs).
    pub sum_us: u64,
}

impl Latencies {
    fn add(&mut self, elapsed_us: u64) {
        let seconds = elapsed_us as f64 / 1e6;
        let bucket = LATENCY_BOUNDS.iter().position(|bound| seconds <= *bound).unwrap_or(LATENCY_BOUNDS.len());
        self.buckets[bucket] += 1;
        self.sum_us = self.sum_us.saturating_add(elapsed_us);
    }
}

/// The meter of one instance: shared by every database it opens.
#[derive(Debug)]
pub struct LoadMeter {
    config: MeterConfig,
    open: Mutex<Open>,
    closed: Mutex<VecDeque<WindowLoad>>,
    dropped: std::sync::atomic::AtomicU64,
}

/// The meter's maps, visited by every shard statement: hashed with foldhash, not SipHash (their
/// keys are shard and tenant ids the gateway itself admitted).
type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

#[derive(Debug, Default)]
struct Open {
    start_ms: i64,
    shards: FastMap<ShardId, FastMap<(i32, Work), Counters>>,
    tenants: TopTenants,
    totals: FastMap<ShardId, [Counters; 3]>,
    latencies: FastMap<ShardId, [Latencies; 3]>,
}

impl LoadMeter {
    /// A meter counting as `config` says.
    pub fn new(config: MeterConfig) -> Self {
        let config = MeterConfig { window: config.window.max(Duration::from_secs(1)), ..config };
        Self {
            config,
            open: Mutex::new(Open { tenants: TopTenants::new(config.top_tenants), ..Open::default() }),
            closed: Mutex::new(VecDeque::new()),
            dropped: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// How it counts.
    pub fn config(&self) -> MeterConfig {
        self.config
    }

    fn width_ms(&self) -> i64 {
        i64::try_from(self.config.window.as_millis()).unwrap_or(i64::MAX)
    }

    /// Adds `sample` to shard `shard`'s counters, charged as `charge` says, in the window of now.
    pub fn record(&self, shard: &ShardId, charge: &Charge, sample: Sample) {
        self.record_at(crate::clock::now_ms(), shard, charge, sample);
    }

    /// [`LoadMeter::record`] at `now_ms` (tests move time).
    pub fn record_at(&self, now_ms: i64, shard: &ShardId, charge: &Charge, Sample(counters): Sample) {
        let start = now_ms - now_ms.rem_euclid(self.width_ms());
        let mut open = self.open.lock();
        if start > open.start_ms {
            self.close(&mut open, start);
        }
        let per_shard = match open.shards.get_mut(shard) {
            Some(per_shard) => per_shard,
            None => open.shards.entry(shard.clone()).or_default(),
        };
        per_shard.entry((charge.vshard, charge.work)).or_default().add(&counters);
        let totals = match open.totals.get_mut(shard) {
            Some(totals) => totals,
            None => open.totals.entry(shard.clone()).or_default(),
        };
        totals[charge.work as usize].add(&counters);
        if counters.reads + counters.writes > 0 {
            let latencies = match open.latencies.get_mut(shard) {
                Some(latencies) => latencies,
                None => open.latencies.entry(shard.clone()).or_default(),
            };
            latencies[charge.work as usize].add(counters.statement_us);
        }
        if let (Work::Request, Some(tenant)) = (charge.work, &charge.tenant) {
            open.tenants.add(shard, tenant, &counters);
        }
    }

    /// Moves the open window to the closed queue (if anything was counted) and opens the one
    /// starting at `start`.
    fn close(&self, open: &mut Open, start: i64) {
        let shards = std::mem::take(&mut open.shards);
        let tenants = open.tenants.take();
        let ended = std::mem::replace(&mut open.start_ms, start);
        if shards.is_empty() && tenants.is_empty() {
            return;
        }
        let mut vshards: Vec<VshardLoad> = shards
            .into_iter()
            .flat_map(|(shard, per)| {
                per.into_iter().map(move |((vshard, work), counters)| VshardLoad {
                    shard: shard.clone(),
                    vshard,
                    work,
                    counters,
                })
            })
            .collect();
        vshards.sort_by(|a, b| (&a.shard, a.vshard, a.work).cmp(&(&b.shard, b.vshard, b.work)));
        let window = WindowLoad { start_ms: ended, width_ms: self.width_ms(), vshards, tenants };
        let mut closed = self.closed.lock();
        if closed.len() >= MAX_CLOSED {
            closed.pop_front();
            self.dropped.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        closed.push_back(window);
    }

    /// The windows that have closed by `now_ms` (the open one too, if its end has passed), oldest
    /// first, taken out of the meter.
    pub fn take_closed(&self, now_ms: i64) -> Vec<WindowLoad> {
        {
            let mut open = self.open.lock();
            let start = now_ms - now_ms.rem_euclid(self.width_ms());
            if start > open.start_ms {
                self.close(&mut open, start);
            }
        }
        self.closed.lock().drain(..).collect()
    }

    /// Puts back windows a flush could not store, ahead of those closed since (the queue stays
    /// bounded: the oldest go first).
    pub fn put_back(&self, windows: Vec<WindowLoad>) {
        let mut closed = self.closed.lock();
        for window in windows.into_iter().rev() {
            closed.push_front(window);
        }
        while closed.len() > MAX_CLOSED {
            closed.pop_front();
            self.dropped.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Windows dropped because they could not be flushed for too long.
    pub fn dropped_windows(&self) -> u64 {
        self.dropped.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// This instance's counters of requests on `shard` since it started (a move's pace reads
    /// them every few hundred milliseconds: one look-up under the lock, nothing copied but them).
    pub fn requests_on(&self, shard: &ShardId) -> Counters {
        self.open.lock().totals.get(shard).map_or_else(Counters::default, |per| per[Work::Request as usize])
    }

    /// This instance's counters since it started, per shard and kind of work.
    pub fn totals(&self) -> Totals {
        let open = self.open.lock();
        let mut totals: Totals = open
            .totals
            .iter()
            .flat_map(|(shard, per)| Work::ALL.into_iter().map(move |w| (shard.clone(), w, per[w as usize])))
            .collect();
        totals.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
        totals
    }

    /// This instance's statements by how long they took, since it started, per shard and kind
    /// of work (a statement is one sample of [`Sample::statement`]; a batch is one statement).
    pub fn latencies(&self) -> Vec<(ShardId, Work, Latencies)> {
        let open = self.open.lock();
        let mut latencies: Vec<_> = open
            .latencies
            .iter()
            .flat_map(|(shard, per)| Work::ALL.into_iter().map(move |w| (shard.clone(), w, per[w as usize])))
            .collect();
        latencies.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
        latencies
    }
}

/// The heaviest tenants of a window: a Space-Saving summary (Metwally, Agrawal and El Abbadi,
/// 2005) of at most `capacity` (shard, tenant) entries ranked by weight. A tenant not in a full
/// summary displaces the lightest entry and inherits its weight, so every tenant whose true
/// weight exceeds the window's total weight divided by `capacity` is kept, and ranks are
/// overestimated by at most the inherited weight (reported as `overcount`).
#[derive(Debug, Default)]
struct TopTenants {
    capacity: usize,
    entries: Vec<TopEntry>,
    /// Per shard, each entry's place in `entries` (nested, so a look-up borrows the names and
    /// copies nothing).
    index: FastMap<ShardId, FastMap<TenantId, usize>>,
}

#[derive(Debug)]
struct TopEntry {
    shard: ShardId,
    tenant: TenantId,
    counters: Counters,
    weight: u64,
    overcount: u64,
}

impl TopTenants {
    fn new(capacity: usize) -> Self {
        Self {
            capacity,
            entries: Vec::with_capacity(capacity),
            index: FastMap::with_capacity_and_hasher(capacity, Default::default()),
        }
    }

    fn add(&mut self, shard: &ShardId, tenant: &TenantId, counters: &Counters) {
        if self.capacity == 0 {
            return;
        }
        let weight = counters.weight();
        if let Some(&at) = self.index.get(shard).and_then(|tenants| tenants.get(tenant)) {
            let entry = &mut self.entries[at];
            entry.counters.add(counters);
            entry.weight += weight;
            return;
        }
        let entry =
            TopEntry { shard: shard.clone(), tenant: tenant.clone(), counters: *counters, weight, overcount: 0 };
        let at = if self.entries.len() < self.capacity {
            self.entries.push(entry);
            self.entries.len() - 1
        } else {
            let Some((at, _)) = self.entries.iter().enumerate().min_by_key(|(_, e)| e.weight) else { return };
            let lightest = &self.entries[at];
            if let Some(tenants) = self.index.get_mut(&lightest.shard) {
                tenants.remove(&lightest.tenant);
            }
            let inherited = lightest.weight;
            self.entries[at] = TopEntry { weight: inherited + weight, overcount: inherited, ..entry };
            at
        };
        let placed = &self.entries[at];
        self.index.entry(placed.shard.clone()).or_default().insert(placed.tenant.clone(), at);
    }

    /// The entries, heaviest first, leaving the summary empty.
    fn take(&mut self) -> Vec<TenantLoad> {
        self.index.clear();
        let mut entries = std::mem::take(&mut self.entries);
        entries.sort_by(|a, b| b.weight.cmp(&a.weight).then_with(|| (&a.shard, &a.tenant).cmp(&(&b.shard, &b.tenant))));
        self.entries.reserve(self.capacity);
        entries
            .into_iter()
            .map(|e| TenantLoad { shard: e.shard, tenant: e.tenant, counters: e.counters, overcount: e.overcount })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard(id: &str) -> ShardId {
        ShardId::parse(id).unwrap()
    }

    fn tenant(id: &str) -> TenantId {
        TenantId::parse(id).unwrap()
    }

    fn request(tenant_id: &str, vshard: i32) -> Charge {
        Charge { work: Work::Request, vshard, tenant: Some(tenant(tenant_id)) }
    }

    #[test]
    fn statements_add_up_per_vshard_and_work_in_the_window_they_end_in() {
        let meter = LoadMeter::new(MeterConfig::default());
        let s1 = shard("s1");
        let t0 = 1_000_000;
        meter.record_at(t0, &s1, &request("a", 7), Sample::statement(false, Duration::from_micros(100), false));
        meter.record_at(t0 + 1, &s1, &request("a", 7), Sample::rows_read(1, 40));
        meter.record_at(t0 + 2, &s1, &request("a", 7), Sample::statement(true, Duration::from_micros(300), false));
        let moving = Charge { work: Work::Move, ..Charge::default() };
        meter.record_at(t0 + 3, &s1, &moving, Sample::statement(true, Duration::from_micros(50), true));
        // The next window: the first closes.
        meter.record_at(t0 + 10_000, &s1, &request("a", 7), Sample::statement(false, Duration::from_micros(1), false));
        let closed = meter.take_closed(t0 + 10_001);
        assert_eq!(closed.len(), 1, "only the first window is over");
        let w = &closed[0];
        assert_eq!((w.start_ms, w.width_ms), (1_000_000, 10_000));
        assert_eq!(w.vshards.len(), 2);
        assert_eq!((w.vshards[0].vshard, w.vshards[0].work), (NO_VSHARD, Work::Move));
        assert_eq!(w.vshards[0].counters.errors, 1);
        let v7 = &w.vshards[1];
        assert_eq!((v7.vshard, v7.work), (7, Work::Request));
        assert_eq!(
            v7.counters,
            Counters { reads: 1, writes: 1, rows_read: 1, bytes_read: 40, statement_us: 400, ..Counters::default() }
        );
        assert_eq!(w.tenants.len(), 1);
        assert_eq!(w.tenants[0].tenant, tenant("a"));
        assert_eq!(w.tenants[0].counters.reads, 1, "moves are not charged to tenants");
        let later = meter.take_closed(t0 + 20_000);
        assert_eq!(later.len(), 1, "the open window closes once its end has passed");
        assert_eq!(meter.totals().iter().map(|t| t.2.reads + t.2.writes).sum::<u64>(), 4);
        let requests = meter.requests_on(&s1);
        assert_eq!(
            (requests.reads, requests.writes, requests.statement_us),
            (2, 1, 401),
            "requests only, not the move"
        );
        assert_eq!(meter.requests_on(&shard("s2")), Counters::default());
    }

    #[test]
    fn the_tenant_summary_stays_bounded_and_keeps_the_heaviest() {
        let meter = LoadMeter::new(MeterConfig { window: Duration::from_secs(10), top_tenants: 100 });
        let s1 = shard("s1");
        let t0 = 5_000_000;
        let one = Sample::statement(false, Duration::from_micros(10), false);
        for i in 0..300 {
            meter.record_at(t0, &s1, &request("heavy", 1), one);
            if i % 2 == 0 {
                meter.record_at(t0, &s1, &request("second", 2), one);
            }
        }
        for i in 0..10_000 {
            meter.record_at(t0, &s1, &request(&format!("t{i}"), 3), one);
        }
        let closed = meter.take_closed(t0 + 10_000);
        let tenants = &closed[0].tenants;
        assert_eq!(tenants.len(), 100, "at most K tenants per window");
        assert_eq!(tenants[0].tenant, tenant("heavy"));
        assert_eq!(tenants[0].counters.reads, 300);
        assert_eq!(tenants[0].overcount, 0);
        assert_eq!(tenants[1].tenant, tenant("second"));
        let total: u64 = closed[0].vshards.iter().map(|v| v.counters.reads).sum();
        assert_eq!(total, 10_450, "the vshards count every statement");
    }

    #[test]
    fn a_full_queue_drops_the_oldest_window() {
        let meter = LoadMeter::new(MeterConfig { window: Duration::from_secs(1), top_tenants: 1 });
        let s1 = shard("s1");
        for i in 0..(MAX_CLOSED as i64 + 5) {
            meter.record_at(i * 1000, &s1, &Charge::default(), Sample::statement(true, Duration::ZERO, false));
        }
        let closed = meter.take_closed(10_000_000);
        assert_eq!(closed.len(), MAX_CLOSED);
        assert_eq!(meter.dropped_windows(), 5);
        assert_eq!(closed[0].start_ms, 5_000, "the oldest went first");
    }

    #[test]
    fn statements_fall_in_latency_buckets_by_shard_and_work_and_row_samples_do_not() {
        let meter = LoadMeter::new(MeterConfig::default());
        let (s1, s2) = (shard("s1"), shard("s2"));
        let statement = |us| Sample::statement(false, Duration::from_micros(us), false);
        meter.record_at(0, &s1, &request("a", 1), statement(300));
        meter.record_at(1, &s1, &request("a", 1), statement(40_000));
        meter.record_at(2, &s1, &request("a", 1), statement(9_000_000));
        meter.record_at(3, &s1, &request("a", 1), Sample::rows_read(10, 100));
        meter.record_at(4, &s2, &Charge::default(), statement(500));
        let latencies = meter.latencies();
        let s1_requests = latencies.iter().find(|(s, w, _)| *s == s1 && *w == Work::Request).unwrap().2;
        let mut expected = [0; LATENCY_BOUNDS.len() + 1];
        expected[0] = 1; // 0.3 ms <= 0.5 ms
        expected[6] = 1; // 40 ms <= 50 ms
        expected[LATENCY_BOUNDS.len()] = 1; // 9 s: above every bound
        assert_eq!(s1_requests, Latencies { buckets: expected, sum_us: 9_040_300 });
        let s2_upkeep = latencies.iter().find(|(s, w, _)| *s == s2 && *w == Work::Maintenance).unwrap().2;
        assert_eq!(s2_upkeep.buckets[0], 1, "0.5 ms is in the 0.5 ms bucket");
        let s2_requests = latencies.iter().find(|(s, w, _)| *s == s2 && *w == Work::Request).unwrap().2;
        assert_eq!(s2_requests, Latencies::default());
    }
}
