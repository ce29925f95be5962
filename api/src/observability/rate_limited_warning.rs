//! A warning logged at most once per period, so that a failure repeated at the rate requests or
//! connections arrive (a full queue, a full connection table, failing accepts) leaves one line
//! per period in the log, not one per occurrence.
//!
//! It decides only whether a warning is due; the caller logs it (with its own level, message
//! and fields).

use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// A warning that is logged at most once per `every`.
#[derive(Debug)]
pub struct RateLimitedWarning {
    every: Duration,
    last: Mutex<Option<Instant>>,
}

impl RateLimitedWarning {
    /// A warning due at once, then at most once per `every`.
    pub fn new(every: Duration) -> Self {
        Self { every, last: Mutex::new(None) }
    }

    /// Whether the warning may be logged now (and, if so, it counts as logged).
    pub fn due(&self) -> bool {
        let mut last = self.last.lock();
        let now = Instant::now();
        if last.is_some_and(|at| now.duration_since(at) < self.every) {
            return false;
        }
        *last = Some(now);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_warning_is_due_once_per_period() {
        let warning = RateLimitedWarning::new(Duration::from_secs(3600));
        assert!(warning.due(), "the first one is due");
        assert!(!warning.due(), "the next one within the period is not");
        let often = RateLimitedWarning::new(Duration::ZERO);
        assert!(often.due());
        assert!(often.due(), "with no period, every one is due");
    }
}
