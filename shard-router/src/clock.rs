//! Wall-clock time as the catalog and shards store it, and the [`Clock`] that time-bound
//! decisions (valet key expiry) read, so that a test can move time on instead of sleeping.

/// A day in milliseconds.
pub const DAY_MS: i64 = 86_400_000;
/// An hour in milliseconds.
pub const HOUR_MS: i64 = 3_600_000;

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or_default()
}

/// A source of wall-clock time. The gateway runs on [`SystemClock`]; tests inject a clock they
/// can move forward.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Milliseconds since the Unix epoch, now.
    fn now_ms(&self) -> i64;

    /// Whole seconds since the Unix epoch, now.
    fn now_secs(&self) -> u64 {
        u64::try_from(self.now_ms() / 1000).unwrap_or_default()
    }
}

/// The system's clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        now_ms()
    }
}
