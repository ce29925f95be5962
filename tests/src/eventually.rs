//! Waiting for something that happens in the background: one bounded retry loop for every test.

use std::time::Duration;

/// Retries `check` every 100 ms for up to `within`, until it returns `Some`.
pub async fn eventually<T>(within: Duration, mut check: impl AsyncFnMut() -> Option<T>) -> Option<T> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if let Some(value) = check().await {
            return Some(value);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
