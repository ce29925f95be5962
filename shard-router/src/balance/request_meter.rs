//! Request health as this instance counts it: per route template and per shard, per window of
//! `storage.load.window` (aligned on the wall clock, as the load meter's windows are), the
//! requests answered, the errors among them and a latency histogram with fixed buckets
//! ([`crate::catalog::request_windows`]). The HTTP layer tells it what it answered; it knows
//! nothing of HTTP: a route is a name from the caller's closed set.
//!
//! Recording is cheap and never waits: the counters sit in two tables allocated at start
//! ([`ROUTE_SLOTS`] routes, [`SHARD_SLOTS`] shards), each slot a ring of [`RING`] windows of
//! atomic counters. A name takes a slot the first time it is seen (its only allocation); a name
//! beyond a table's capacity is not counted and is counted as such
//! ([`RequestMeter::unplaced`]). The flusher ([`crate::balance::LoadFlusher`]) drains the
//! windows that have closed into rows every window; a window's cell is used again [`RING`]
//! windows later, so counts are only mixed up if the flusher stalls that long. Rows the catalog
//! does not take wait for the next flush, at most [`MAX_PENDING_ROWS`] of them (older ones are
//! dropped first, and counted).

use std::collections::VecDeque;
use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

use crate::catalog::request_windows::{BUCKETS, RequestCounts, RequestRow, RequestScope, latency_bucket};

/// Route templates counted; the API has fewer.
pub const ROUTE_SLOTS: usize = 256;

/// Shards counted.
pub const SHARD_SLOTS: usize = 256;

/// Windows each slot holds at once: the open one and those the flusher has yet to drain.
pub const RING: usize = 4;

/// Rows kept while the catalog does not take them.
pub const MAX_PENDING_ROWS: usize = 100_000;

/// A cell's start before its first request.
const UNUSED: i64 = i64::MIN;

/// One window's counters of one slot.
#[derive(Debug)]
struct Cell {
    start_ms: AtomicI64,
    requests: AtomicU64,
    errors: AtomicU64,
    latency_us: AtomicU64,
    buckets: [AtomicU64; BUCKETS],
}

impl Default for Cell {
    fn default() -> Self {
        Self {
            start_ms: AtomicI64::new(UNUSED),
            requests: AtomicU64::default(),
            errors: AtomicU64::default(),
            latency_us: AtomicU64::default(),
            buckets: std::array::from_fn(|_| AtomicU64::default()),
        }
    }
}

impl Cell {
    fn add(&self, start_ms: i64, error: bool, latency_us: u64) {
        let seen = self.start_ms.load(Ordering::Acquire);
        if seen != start_ms {
            if seen > start_ms {
                // A request so late that its window's cell serves a later window already.
                return;
            }
            // The first request of the window takes the cell over (the flusher drained it).
            let _ = self.start_ms.compare_exchange(seen, start_ms, Ordering::AcqRel, Ordering::Acquire);
        }
        self.requests.fetch_add(1, Ordering::Relaxed);
        if error {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
        self.latency_us.fetch_add(latency_us, Ordering::Relaxed);
        self.buckets[latency_bucket(latency_us)].fetch_add(1, Ordering::Relaxed);
    }

    /// Its counts if its window ended by `until_ms`, taken (left at zero).
    fn drain(&self, until_ms: i64, width_ms: i64) -> Option<(i64, RequestCounts)> {
        let start_ms = self.start_ms.load(Ordering::Acquire);
        if start_ms == UNUSED || start_ms + width_ms > until_ms || self.requests.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let mut counts = RequestCounts {
            requests: self.requests.swap(0, Ordering::Relaxed),
            errors: self.errors.swap(0, Ordering::Relaxed),
            latency_us: self.latency_us.swap(0, Ordering::Relaxed),
            buckets: [0; BUCKETS],
        };
        for (n, bucket) in counts.buckets.iter_mut().zip(&self.buckets) {
            *n = bucket.swap(0, Ordering::Relaxed);
        }
        Some((start_ms, counts))
    }
}

/// A named slot: its ring of windows.
#[derive(Debug, Default)]
struct Slot {
    name: OnceLock<Box<str>>,
    ring: [Cell; RING],
}

/// A table of slots found by name (open addressing, slots taken once and never given back).
#[derive(Debug)]
struct Slots {
    slots: Box<[Slot]>,
    hasher: foldhash::fast::FixedState,
}

impl Slots {
    fn new(capacity: usize) -> Self {
        Self {
            slots: (0..capacity).map(|_| Slot::default()).collect(),
            hasher: foldhash::fast::FixedState::with_seed(0x5eed),
        }
    }

    /// The slot of `name`, taken if it has none; `None` when the table is full.
    fn find(&self, name: &str) -> Option<usize> {
        let len = self.slots.len();
        let mut hasher = self.hasher.build_hasher();
        hasher.write(name.as_bytes());
        let first = (hasher.finish() as usize) % len.max(1);
        for probe in 0..len {
            let i = (first + probe) % len;
            let slot = &self.slots[i];
            let held = match slot.name.get() {
                Some(held) => held,
                None => slot.name.get_or_init(|| name.into()),
            };
            if &**held == name {
                return Some(i);
            }
        }
        None
    }
}

/// This instance's request-health counters.
#[derive(Debug)]
pub struct RequestMeter {
    width_ms: i64,
    routes: Slots,
    shards: Slots,
    pending: Mutex<VecDeque<RequestRow>>,
    unplaced: AtomicU64,
    dropped: AtomicU64,
}

/// A request's place in the meter: its route's slot and, once it was routed, its shard's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Placed {
    route: Option<usize>,
    shard: Option<usize>,
}

impl RequestMeter {
    /// A meter of windows of `window`.
    pub fn new(window: Duration) -> Self {
        Self {
            width_ms: i64::try_from(window.as_millis()).unwrap_or(i64::MAX).max(1),
            routes: Slots::new(ROUTE_SLOTS),
            shards: Slots::new(SHARD_SLOTS),
            pending: Mutex::default(),
            unplaced: AtomicU64::default(),
            dropped: AtomicU64::default(),
        }
    }

    /// The slot of the shard named `shard`, for [`RequestMeter::record`].
    pub fn shard_slot(&self, shard: &str) -> Option<usize> {
        let slot = self.shards.find(shard);
        if slot.is_none() {
            self.unplaced.fetch_add(1, Ordering::Relaxed);
        }
        slot
    }

    /// Counts a request on `route` (a name of the caller's closed set), routed to the shard of
    /// `shard_slot` if it was, answered at `now_ms` after `latency_us`, an error or not.
    pub fn record(&self, now_ms: i64, route: &str, shard_slot: Option<usize>, error: bool, latency_us: u64) {
        let start_ms = now_ms - now_ms.rem_euclid(self.width_ms);
        let ring = usize::try_from((start_ms / self.width_ms).rem_euclid(RING as i64)).unwrap_or(0);
        match self.routes.find(route) {
            Some(slot) => self.routes.slots[slot].ring[ring].add(start_ms, error, latency_us),
            None => {
                self.unplaced.fetch_add(1, Ordering::Relaxed);
            }
        }
        if let Some(slot) = shard_slot.and_then(|i| self.shards.slots.get(i)) {
            slot.ring[ring].add(start_ms, error, latency_us);
        }
    }

    /// The rows of every window that ended by `until_ms` (and of those the catalog did not take
    /// before), counted by `instance`; the windows are left empty.
    pub fn take_closed(&self, until_ms: i64, instance: &str) -> Vec<RequestRow> {
        let mut rows: Vec<RequestRow> = self.pending.lock().drain(..).collect();
        for (scope, table) in [(RequestScope::Route, &self.routes), (RequestScope::Shard, &self.shards)] {
            for slot in table.slots.iter() {
                let Some(name) = slot.name.get() else { continue };
                for cell in &slot.ring {
                    if let Some((start_ms, counts)) = cell.drain(until_ms, self.width_ms) {
                        rows.push(RequestRow {
                            start_ms,
                            width_ms: self.width_ms,
                            instance: instance.to_owned(),
                            scope,
                            subject: name.to_string(),
                            counts,
                        });
                    }
                }
            }
        }
        rows
    }

    /// Keeps `rows` for the next flush (the catalog did not take them), at most
    /// [`MAX_PENDING_ROWS`]: the oldest go first.
    pub fn put_back(&self, rows: Vec<RequestRow>) {
        let mut pending = self.pending.lock();
        pending.extend(rows);
        while pending.len() > MAX_PENDING_ROWS {
            pending.pop_front();
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Requests not counted because their route's or shard's table was full.
    pub fn unplaced(&self) -> u64 {
        self.unplaced.load(Ordering::Relaxed)
    }

    /// Rows dropped because the catalog did not take them in time.
    pub fn dropped_rows(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: i64 = 10_000;

    fn meter() -> RequestMeter {
        RequestMeter::new(Duration::from_millis(W as u64))
    }

    #[test]
    fn requests_add_up_per_route_and_shard_in_the_window_they_end_in() {
        let meter = meter();
        let shard = meter.shard_slot("s1");
        meter.record(W, "/a", shard, false, 800);
        meter.record(W + 1, "/a", shard, true, 300_000);
        meter.record(W + 2, "/b", None, false, 100);
        meter.record(2 * W, "/a", None, false, 100);
        assert!(meter.take_closed(2 * W - 1, "i").is_empty(), "nothing closed yet");
        let mut rows = meter.take_closed(2 * W, "i");
        rows.sort_by(|a, b| (a.scope, &a.subject).cmp(&(b.scope, &b.subject)));
        let seen: Vec<_> = rows
            .iter()
            .map(|r| (r.scope, r.subject.as_str(), r.start_ms, r.counts.requests, r.counts.errors))
            .collect();
        assert_eq!(
            seen,
            [
                (RequestScope::Route, "/a", W, 2, 1),
                (RequestScope::Route, "/b", W, 1, 0),
                (RequestScope::Shard, "s1", W, 2, 1)
            ]
        );
        assert_eq!(rows[0].counts.buckets[latency_bucket(800)], 1);
        assert!(meter.take_closed(2 * W, "i").is_empty(), "drained once");
        let later = meter.take_closed(3 * W, "i");
        assert_eq!(later.len(), 1);
        assert_eq!((later[0].start_ms, later[0].counts.requests), (2 * W, 1));
        // The cell of the first window serves a window RING windows later.
        meter.record(W + RING as i64 * W, "/a", None, false, 1);
        let reused = meter.take_closed(i64::MAX, "i");
        assert_eq!((reused[0].start_ms, reused[0].counts.requests), (W + RING as i64 * W, 1));
    }

    #[test]
    fn a_full_table_counts_what_it_could_not_place() {
        let meter = meter();
        for i in 0..ROUTE_SLOTS + 3 {
            meter.record(W, &format!("/r{i}"), None, false, 1);
        }
        assert_eq!(meter.unplaced(), 3);
        assert_eq!(meter.take_closed(2 * W, "i").len(), ROUTE_SLOTS);
    }

    #[test]
    fn rows_put_back_stay_bounded() {
        let meter = meter();
        let row = RequestRow {
            start_ms: 0,
            width_ms: W,
            instance: "i".into(),
            scope: RequestScope::Route,
            subject: "/a".into(),
            counts: RequestCounts::default(),
        };
        meter.put_back(vec![row; MAX_PENDING_ROWS + 5]);
        assert_eq!(meter.dropped_rows(), 5);
        assert_eq!(meter.take_closed(0, "i").len(), MAX_PENDING_ROWS);
    }
}
