//! L1: an in-process cache bounded by bytes (moka, TinyLFU), with the same version guards as L2.

use std::time::{Duration, Instant};

use moka::Expiry;
use moka::ops::compute::Op;

use crate::entry::{CachedRecord, Slot};

#[derive(Debug, Clone)]
struct Timed {
    slot: Slot,
    ttl: Duration,
}

struct PerEntryTtl;

impl Expiry<String, Timed> for PerEntryTtl {
    fn expire_after_create(&self, _key: &String, value: &Timed, _created_at: Instant) -> Option<Duration> {
        Some(value.ttl)
    }

    fn expire_after_update(
        &self,
        _key: &String,
        value: &Timed,
        _at: Instant,
        _left: Option<Duration>,
    ) -> Option<Duration> {
        Some(value.ttl)
    }
}

/// The in-process cache.
#[derive(Debug, Clone)]
pub struct L1 {
    cache: moka::future::Cache<String, Timed>,
}

impl L1 {
    /// A cache of at most `max_bytes`; `on_evict` is called for every entry evicted for size.
    pub fn new(max_bytes: u64, on_evict: impl Fn() + Send + Sync + 'static) -> Self {
        let cache = moka::future::Cache::builder()
            .max_capacity(max_bytes)
            .weigher(|key: &String, value: &Timed| value.slot.weight().saturating_add(key.len() as u32))
            .expire_after(PerEntryTtl)
            .eviction_listener(move |_key, _value, cause| {
                if cause == moka::notification::RemovalCause::Size {
                    on_evict();
                }
            })
            .build();
        Self { cache }
    }

    /// The slot for `key`.
    pub async fn get(&self, key: &str) -> Option<Slot> {
        self.cache.get(key).await.map(|t| t.slot)
    }

    /// Stores `record` unless the slot holds a newer record or marker.
    pub async fn fill(&self, key: &str, record: CachedRecord, ttl: Duration) {
        let version = record.version;
        self.put_if(key, Slot::Record(record), ttl, |current| current.accepts_fill(version)).await;
    }

    /// Replaces anything older than `version`, and a write mark, with a marker (at the newer
    /// of `version` and the mark's).
    pub async fn invalidate(&self, key: &str, version: i64, ttl: Duration) {
        self.cache
            .entry(key.to_owned())
            .and_compute_with(|current| {
                let op = match current.map(|entry| entry.into_value().slot) {
                    Some(Slot::Writing(floor)) => Op::Put(Timed { slot: Slot::Marker(floor.max(version)), ttl }),
                    Some(slot) if !slot.accepts_invalidation(version) => Op::Nop,
                    _ => Op::Put(Timed { slot: Slot::Marker(version), ttl }),
                };
                std::future::ready(op)
            })
            .await;
    }

    /// Marks `key` as being written for at most `ttl`: nothing is served from it or stored in
    /// it until [`L1::invalidate`] ends the write.
    pub async fn begin_write(&self, key: &str, ttl: Duration) {
        self.cache
            .entry(key.to_owned())
            .and_compute_with(|current| {
                let floor = current.map_or(0, |entry| entry.value().slot.version());
                std::future::ready(Op::Put(Timed { slot: Slot::Writing(floor), ttl }))
            })
            .await;
    }

    /// Puts `slot` at `key` unless a slot is there that `accepts` refuses, in one atomic step.
    async fn put_if(&self, key: &str, slot: Slot, ttl: Duration, accepts: impl FnOnce(&Slot) -> bool) {
        self.cache
            .entry(key.to_owned())
            .and_compute_with(|current| {
                let op = match current {
                    Some(entry) if !accepts(&entry.value().slot) => Op::Nop,
                    _ => Op::Put(Timed { slot, ttl }),
                };
                std::future::ready(op)
            })
            .await;
    }

    /// Drops everything.
    pub fn clear(&self) {
        self.cache.invalidate_all();
    }
}
