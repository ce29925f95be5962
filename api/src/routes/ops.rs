//! `/healthz`, `/readyz`, `/metrics`: health endpoint monitoring.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use shardgate_cache::CacheHealth;
use shardgate_shard_router::{Database, ShardState};
use utoipa::ToSchema;

use crate::app::App;

/// Liveness.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// Always `ok` when the process answers.
    pub status: &'static str,
}

/// Liveness: the process is up and serving HTTP. Checks no dependency.
#[utoipa::path(get, path = "/healthz", tag = "operations", responses((status = 200, description = "Alive", body = Health)))]
pub async fn healthz() -> axum::Json<Health> {
    axum::Json(Health { status: "ok" })
}

/// One dependency's readiness.
#[derive(Debug, Serialize, ToSchema)]
pub struct ComponentStatus {
    /// `up`, `down`, `offline` (a shard an operator took offline), `degraded` (the cache: Redis
    /// does not answer, reads go to the shards; rate limits: Redis does not answer, each instance
    /// limits alone), `local` (rate limits without Redis) or `disabled`. Only `down` makes the
    /// instance not ready.
    pub status: &'static str,
    /// How long the probe took, in milliseconds.
    pub latency_ms: u64,
    /// Why it is down (no connection details).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Readiness of the instance and each dependency.
#[derive(Debug, Serialize, ToSchema)]
pub struct Readiness {
    /// `ready` or `not_ready`.
    pub status: &'static str,
    /// `catalog`, `cache`, `rate_limits` and one entry per shard id.
    pub components: BTreeMap<String, ComponentStatus>,
}

async fn probe(db: Database, timeout: std::time::Duration) -> ComponentStatus {
    let started = Instant::now();
    let result = db.ping(timeout).await;
    let latency_ms = started.elapsed().as_millis() as u64;
    match result {
        Ok(()) => ComponentStatus { status: "up", latency_ms, error: None },
        Err(e) => {
            let error =
                if e.is_unavailable() { "unreachable or timed out".to_owned() } else { "query failed".to_owned() };
            tracing::warn!(error = %e, "readiness probe failed");
            ComponentStatus { status: "down", latency_ms, error: Some(error) }
        }
    }
}

/// Readiness: the catalog and every shard not taken offline answer `SELECT 1` within the probe
/// timeout (`storage.pool.probe_timeout`, default 2 s). 503 when any of them does not.
#[utoipa::path(get, path = "/readyz", responses(
    (status = 200, description = "Ready", body = Readiness),
    (status = 503, description = "Not ready: a component is down", body = Readiness),
))]
pub async fn readyz(State(app): State<Arc<App>>) -> Response {
    let timeout = app.probe_timeout;
    let catalog = probe(app.router.catalog().database().clone(), timeout);
    let shards = app.router.shard_dbs();
    let shard_probes = futures::future::join_all(shards.into_iter().map(|(id, state, db)| async move {
        let status = if state == ShardState::Offline {
            ComponentStatus { status: "offline", latency_ms: 0, error: None }
        } else {
            probe(db, timeout).await
        };
        (id.to_string(), status)
    }));
    let (catalog, shard_probes) = futures::join!(catalog, shard_probes);
    let mut components = BTreeMap::new();
    components.insert("catalog".to_owned(), catalog);
    components.extend(shard_probes);
    let cache = match app.cache.health() {
        CacheHealth::Disabled => "disabled",
        CacheHealth::Local => "up",
        CacheHealth::Up => "up",
        CacheHealth::Degraded => "degraded",
    };
    components.insert("cache".to_owned(), ComponentStatus { status: cache, latency_ms: 0, error: None });
    let rate_limits = app.gate.limiter.store_status();
    components.insert("rate_limits".to_owned(), ComponentStatus { status: rate_limits, latency_ms: 0, error: None });
    let ready = components.values().all(|c| c.status != "down");
    let status = if ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (status, axum::Json(Readiness { status: if ready { "ready" } else { "not_ready" }, components })).into_response()
}

/// Prometheus metrics (text exposition format).
#[utoipa::path(
    get,
    path = "/metrics",
    responses((status = 200, description = "Prometheus text format", body = String, content_type = "text/plain"))
)]
pub async fn metrics(State(app): State<Arc<App>>) -> Response {
    app.metrics.response()
}
