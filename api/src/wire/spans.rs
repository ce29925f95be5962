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

/// The step `raw` asks for over a span of `length`: a whole number of windows, at most
/// [`MAX_POINTS`] points.
pub fn step_length(load: &LoadConfig, raw: &str, length: i64) -> Result<i64, ApiError> {
    let step = millis(parse_duration(raw).map_err(|e| ApiError::new(Code::InvalidQuery, format!("step: {e}")))?);
    let window = window_ms(load);
    if step < window || step > length || (length + step - 1) / step > MAX_POINTS {
        return Err(ApiError::new(
            Code::InvalidQuery,
            format!("step: from {}s (storage.load.window) to the span, at most {MAX_POINTS} points", window / 1000),
        ));
    }
    Ok(step - step % window)
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
