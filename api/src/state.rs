//! The application state every handler shares: one `App` behind an `Arc`.

use shardgate_gatekeeper::Authenticator;
use shardgate_shard_router::ShardRouter;

use crate::config::LimitsConfig;
use crate::metrics::Metrics;

/// Shared state of one gateway instance.
#[derive(Debug)]
pub struct App {
    /// Catalog, shard map and shard pools.
    pub router: ShardRouter,
    /// Bearer token verification.
    pub auth: Authenticator,
    /// Request limits.
    pub limits: LimitsConfig,
    /// Prometheus metrics.
    pub metrics: Metrics,
    /// Timeout of each readiness probe.
    pub probe_timeout: std::time::Duration,
}
