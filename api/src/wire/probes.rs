//! The paths of probes and scrapes (`/healthz`, `/readyz`, `/metrics`): the front door throttles
//! none of them, the edge counts none against the instance's cap, and the OpenAPI document gives
//! none of them a 429. Must not know anything of requests but their path.

/// Paths that are never throttled nor counted against any cap on requests in progress (probes
/// and scrapes): not the tenants' bulkheads, not the instance's limit in [`crate::server::edge`].
pub fn is_unthrottled(path: &str) -> bool {
    matches!(path, "/healthz" | "/readyz" | "/metrics")
}
