//! Single-flight loads: concurrent misses for one key on one instance share one shard read,
//! without ever handing a reader a value older than a write acknowledged before it arrived.
//!
//! Every key hashes to one of 4096 buckets with a write sequence. Writers call
//! [`SingleFlight::note_write`] after the write is durable and before it is acknowledged. A load
//! remembers its bucket's sequence when it starts; a reader may join it only while that sequence
//! is unchanged, so a reader arriving after an acknowledged write never shares a load that may
//! have read the database before the write. Writes made through other instances are caught by
//! the caller's version floor (the marker the write left in the shared cache).

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use tokio::sync::watch;

const BUCKETS: usize = 4096;

struct Flight<V> {
    result: watch::Receiver<Option<V>>,
    started_at: u64,
}

/// Coalesces concurrent loads per key.
pub struct SingleFlight<V> {
    flights: Mutex<HashMap<String, Arc<Flight<V>>, foldhash::fast::FixedState>>,
    writes: Box<[AtomicU64]>,
    hasher: foldhash::fast::FixedState,
}

impl<V> std::fmt::Debug for SingleFlight<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SingleFlight").field("in_flight", &self.flights.lock().len()).finish()
    }
}

impl<V> Default for SingleFlight<V> {
    fn default() -> Self {
        Self {
            flights: Mutex::new(HashMap::default()),
            writes: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            hasher: foldhash::fast::FixedState::with_seed(0x5348_4152_4447_4154),
        }
    }
}

/// Who ran a load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// This call ran the load.
    Leader,
    /// This call shared another call's load.
    Follower,
}

/// A finished load as the caller sees it.
#[derive(Debug)]
pub struct Loaded<V> {
    /// The value.
    pub value: V,
    /// Whether this call ran the load.
    pub role: Role,
}

impl<V: Clone + Send + Sync + 'static> SingleFlight<V> {
    /// The write sequence of `key`'s bucket: unchanged between two reads means no local write to
    /// a key of that bucket happened in between.
    pub fn sequence(&self, key: &str) -> u64 {
        let bucket = (self.hasher.hash_one(key) as usize) % BUCKETS;
        self.writes[bucket].load(Ordering::SeqCst)
    }

    /// Records a local write of `key` (after it is durable, before it is acknowledged).
    pub fn note_write(&self, key: &str) {
        let bucket = (self.hasher.hash_one(key) as usize) % BUCKETS;
        self.writes[bucket].fetch_add(1, Ordering::SeqCst);
        self.flights.lock().remove(key);
    }

    /// Runs `load` for `key`, or shares a running load started since the key's last local write.
    /// `acceptable` checks a shared result against what the caller knows (its version floor);
    /// when it refuses, the caller loads on its own.
    pub async fn load<Fut>(&self, key: &str, acceptable: impl Fn(&V) -> bool, load: impl FnOnce() -> Fut) -> Loaded<V>
    where
        Fut: std::future::Future<Output = V>,
    {
        let joined = {
            let mut flights = self.flights.lock();
            let now = self.sequence(key);
            match flights.get(key) {
                Some(flight) if flight.started_at == now => Ok(flight.result.clone()),
                _ => {
                    let (tx, rx) = watch::channel(None);
                    let flight = Arc::new(Flight { result: rx, started_at: now });
                    flights.insert(key.to_owned(), flight.clone());
                    Err((tx, flight))
                }
            }
        };
        match joined {
            Ok(mut rx) => {
                let shared = rx.wait_for(Option::is_some).await.ok().and_then(|v| v.clone());
                match shared {
                    Some(value) if acceptable(&value) => Loaded { value, role: Role::Follower },
                    _ => Loaded { value: load().await, role: Role::Leader },
                }
            }
            Err((tx, flight)) => {
                let value = load().await;
                {
                    let mut flights = self.flights.lock();
                    if flights.get(key).is_some_and(|f| Arc::ptr_eq(f, &flight)) {
                        flights.remove(key);
                    }
                }
                let _ = tx.send(Some(value.clone()));
                Loaded { value, role: Role::Leader }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Spawns a load of `"k"` that accepts any shared value and otherwise runs `load`.
    fn spawn_load<Fut>(
        flights: &Arc<SingleFlight<u64>>,
        load: impl FnOnce() -> Fut + Send + 'static,
    ) -> tokio::task::JoinHandle<Loaded<u64>>
    where
        Fut: std::future::Future<Output = u64> + Send + 'static,
    {
        let flights = flights.clone();
        tokio::spawn(async move { flights.load("k", |_| true, load).await })
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_loads_share_one_call() {
        let flights = Arc::new(SingleFlight::<u64>::default());
        let calls = Arc::new(AtomicUsize::new(0));
        let gate = Arc::new(tokio::sync::Notify::new());
        let mut tasks = Vec::new();
        for _ in 0..20 {
            let (calls, gate) = (calls.clone(), gate.clone());
            tasks.push(spawn_load(&flights, move || async move {
                calls.fetch_add(1, Ordering::SeqCst);
                gate.notified().await;
                7
            }));
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        gate.notify_one();
        for task in tasks {
            assert_eq!(task.await.unwrap().value, 7);
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_reader_after_a_write_does_not_join_a_load_started_before_it() {
        let flights = Arc::new(SingleFlight::<u64>::default());
        let (started_tx, started_rx) = tokio::sync::oneshot::channel();
        let release = Arc::new(tokio::sync::Notify::new());
        let leader = {
            let release = release.clone();
            spawn_load(&flights, move || async move {
                let _ = started_tx.send(());
                release.notified().await;
                1 // the old value, read before the write
            })
        };
        started_rx.await.unwrap();
        flights.note_write("k");
        let late = flights.load("k", |_| true, || async { 2 }).await;
        assert_eq!((late.value, late.role), (2, Role::Leader), "the late reader loads on its own");
        release.notify_one();
        assert_eq!(leader.await.unwrap().value, 1);
    }

    #[tokio::test]
    async fn a_refused_shared_result_is_reloaded() {
        let flights = Arc::new(SingleFlight::<u64>::default());
        let release = Arc::new(tokio::sync::Notify::new());
        let leader = {
            let release = release.clone();
            spawn_load(&flights, move || async move {
                release.notified().await;
                3
            })
        };
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let follower = {
            let flights = flights.clone();
            tokio::spawn(async move { flights.load("k", |v| *v >= 5, || async { 5 }).await })
        };
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        release.notify_one();
        assert_eq!(leader.await.unwrap().value, 3);
        let follower = follower.await.unwrap();
        assert_eq!((follower.value, follower.role), (5, Role::Leader));
    }
}
