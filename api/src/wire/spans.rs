//! Spans of the load picture as the admin API takes them: `10m`, `1h` or `1d` back from the end
//! of the last closed window, in whole windows of `storage.load.window`, no further back than
//! `storage.load.retention`; a step of whole windows, at most [`MAX_POINTS`] points.

use std::time::Duration;

use shardgate_shard_router::LoadConfig;
use shardgate_shard_router::balance::Span;
use shardgate_shard_router::humantime_serde::parse_duration;

use crate::wire::error::{ApiError, Code};

/// The most points a series or a heat map row has.
pub const MAX_POINTS: i64 = 1440;

fn window_ms(load: &LoadConfig) -> i64 {
    millis(load.window)
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// The span `raw` (parameter `name`) asks for, `default` when absent: a whole number of
/// windows, from one window to the retention.
pub fn span_length(load: &LoadConfig, raw: Option<&str>, name: &str, default: Duration) -> Result<i64, ApiError> {
    let length = match raw {
        Some(raw) => {
            millis(parse_duration(raw).map_err(|e| ApiError::new(Code::InvalidQuery, format!("{name}: {e}")))?)
        }
        None => millis(default).min(millis(load.retention)),
    };
    let window = window_ms(load);
    if length < window || length > millis(load.retention) {
        return Err(ApiError::new(
            Code::InvalidQuery,
            format!(
                "{name}: from {}s (storage.load.window) to {}s (storage.load.retention)",
                window / 1000,
                millis(load.retention) / 1000
            ),
        ));
    }
    Ok(length - length % window)
}

/// The step `raw` asks for over a span of `length`: a whole number of windows (rounded down), at
/// most [`MAX_POINTS`] points of the rounded step.
pub fn step_length(load: &LoadConfig, raw: &str, length: i64) -> Result<i64, ApiError> {
    let step = millis(parse_duration(raw).map_err(|e| ApiError::new(Code::InvalidQuery, format!("step: {e}")))?);
    let window = window_ms(load);
    let refused = || {
        ApiError::new(
            Code::InvalidQuery,
            format!(
                "step: from {}s (storage.load.window) to the span, in whole windows, at most {MAX_POINTS} points",
                window / 1000
            ),
        )
    };
    if step < window || step > length {
        return Err(refused());
    }
    // The points are counted with the step as it is used, not as it was written.
    let step = step - step % window;
    if points(length, step) > MAX_POINTS {
        return Err(refused());
    }
    Ok(step)
}

/// How many points of `step` a span of `length` has (the last one may be partial).
fn points(length: i64, step: i64) -> i64 {
    (length + step - 1) / step
}

/// About 60 columns of whole windows over a span of `length`.
pub fn default_step(load: &LoadConfig, length: i64) -> i64 {
    let window = window_ms(load);
    let step = (length / 60).max(window);
    (step + window - 1) / window * window
}

/// The span of `length` (and points of `step`) that ends at the end of the last closed window.
pub fn span_of(load: &LoadConfig, length: i64, step: Option<i64>) -> Span {
    // The meter's clock: windows are aligned on the wall clock.
    Span::ending_before(shardgate_shard_router::now_ms(), window_ms(load), length, step)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load() -> LoadConfig {
        LoadConfig { window: Duration::from_secs(10), retention: Duration::from_secs(3600), ..LoadConfig::default() }
    }

    #[test]
    fn the_point_cap_counts_the_step_after_rounding() {
        let load = load();
        // 2,878 windows of 10 s: a step written as 19,999 ms is used as 10 s, 2,878 points.
        assert!(step_length(&load, "19999ms", 28_780_000).is_err());
        assert_eq!(step_length(&load, "20s", 28_780_000).unwrap(), 20_000);
        assert_eq!(step_length(&load, "25s", 600_000).unwrap(), 20_000, "rounded down to whole windows");
        assert!(step_length(&load, "9s", 600_000).is_err(), "shorter than a window");
        assert!(step_length(&load, "11m", 600_000).is_err(), "longer than the span");
    }
}
