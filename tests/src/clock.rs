//! A clock the test moves forward instead of sleeping: the system's time plus an offset.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use shardgate_shard_router::Clock;

/// The system clock, moved on by [`TestClock::advance`]. Every server of one [`crate::TestApp`]
/// (restarts and peers included) reads the same one.
#[derive(Debug, Default)]
pub struct TestClock {
    offset_ms: AtomicI64,
}

impl TestClock {
    /// Moves this clock `by` into the future.
    pub fn advance(&self, by: Duration) {
        let by = i64::try_from(by.as_millis()).expect("a test advances by less than 292 million years");
        self.offset_ms.fetch_add(by, Ordering::SeqCst);
    }
}

impl Clock for TestClock {
    fn now_ms(&self) -> i64 {
        shardgate_shard_router::now_ms() + self.offset_ms.load(Ordering::SeqCst)
    }
}
