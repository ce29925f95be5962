//! Fault points: places on the request path where a test that runs the binary can stop the
//! process dead at an exact moment, to reproduce a crash there (the instance is then killed
//! with `kill -9`). A point is armed by naming it in the environment,
//! `SHARDGATE_FAULT_POINT=<name>`, read once; unarmed, passing one costs a comparison.
//!
//! The points:
//! - `record_committed`: a record write or delete has committed on its shard and its cache
//!   invalidation has not run yet.
//! - `write_end_queued`: the ends in Redis of acknowledged record writes are queued
//!   ([`crate::app::WriteEnds`]) and are not sent (every write's, from then on).

use std::sync::OnceLock;

/// The variable that arms a point.
const ARM: &str = "SHARDGATE_FAULT_POINT";

/// Passes fault point `point`; if it is armed, logs that and never returns (the request holds
/// there until the process is killed or its deadline drops it).
pub async fn pass(point: &'static str) {
    static ARMED: OnceLock<Option<String>> = OnceLock::new();
    if ARMED.get_or_init(|| std::env::var(ARM).ok()).as_deref() == Some(point) {
        tracing::error!(
            fault_point = point,
            "fault point reached: this request holds here until the process is killed"
        );
        std::future::pending::<()>().await;
    }
}
