//! `/healthz`, `/readyz`, `/metrics`: health endpoint monitoring.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::State;
use axum::http::header::ACCEPT;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use shardgate_cache::CacheHealth;
use shardgate_shard_router::db::PingFailure;
use shardgate_shard_router::health::BreakerState;
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
    /// `up`, `down`, `offline` (a shard an operator took offline), `degraded` (the catalog: it
    /// does not answer, this instance serves on the shard map it holds and admin changes get
    /// 503 `catalog_unavailable`; the cache: Redis does not answer, reads go to the shards; rate
    /// limits: Redis does not answer, each instance limits alone), `local` (rate limits without
    /// Redis) or `disabled`. No component makes the instance not ready: a shard that is down fails
    /// only its own tenants' requests, and a catalog that is down only admin changes, on every
    /// instance alike, so taking this instance out of a load balancer would not help them and
    /// would hurt everybody else.
    pub status: &'static str,
    /// How long the probe took, in milliseconds.
    pub latency_ms: u64,
    /// Why it is down (no connection details).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The database's circuit breaker on this instance (catalog and shards): `closed`, `open`,
    /// `half_open` or `forced_open`. While a shard's is not closed the shard is `down` without
    /// being probed; the catalog is always probed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub breaker: Option<&'static str>,
}

/// Readiness of the instance and each dependency.
#[derive(Debug, Serialize, ToSchema)]
pub struct Readiness {
    /// `ready` or `not_ready`.
    pub status: &'static str,
    /// `catalog`, `cache`, `rate_limits` and one entry per shard id.
    pub components: BTreeMap<String, ComponentStatus>,
    /// The key set of each issuer whose keys are fetched from its identity provider
    /// (`jwks_url` or discovery), by issuer; absent when there is none.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub key_sets: BTreeMap<String, KeySetReadiness>,
}

/// One issuer's fetched key set. The instance is not ready while an issuer has no key set yet
/// (`unavailable`: none of its tokens could be verified, and other instances may have theirs);
/// a set past its maximum age (`expired`) does not make it unready, since every instance is
/// in the same state when the provider is down, and the other issuers' tokens still work.
#[derive(Debug, Serialize, ToSchema)]
pub struct KeySetReadiness {
    /// `up` (a set younger than the issuer's `jwks_max_age_secs` is in use), `unavailable` (no
    /// set fetched yet; tokens get 401 `key_set_unavailable`) or `expired` (tokens get 401
    /// `key_set_expired`).
    pub status: &'static str,
    /// The configured URL the keys come from (`jwks_url`, or the discovery document).
    pub url: String,
    /// Seconds since the set in use was fetched; absent before a first set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub age_secs: Option<u64>,
    /// Why the last fetch failed; absent when it succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// The readiness of each fetched key set of `auth`, and whether every issuer has one (the
/// gateway's `/readyz` and the standalone gatekeeper's).
pub(crate) fn key_sets(auth: &shardgate_gatekeeper::Authenticator) -> (BTreeMap<String, KeySetReadiness>, bool) {
    let mut all_fetched = true;
    let sets = auth
        .fetched_key_sets()
        .statuses()
        .into_iter()
        .map(|set| {
            let status = match (set.age, set.usable) {
                (None, _) => "unavailable",
                (Some(_), true) => "up",
                (Some(_), false) => "expired",
            };
            all_fetched &= set.age.is_some();
            let readiness = KeySetReadiness {
                status,
                url: set.url,
                age_secs: set.age.map(|age| age.as_secs()),
                last_error: set.last_error,
            };
            (set.issuer, readiness)
        })
        .collect();
    (sets, all_fetched)
}

/// How long a readiness ping's outcome is reused: `/readyz` is never throttled, so a flood of it
/// costs each database at most one `SELECT 1` a second.
const PING_REUSE: std::time::Duration = std::time::Duration::from_secs(1);

async fn probe(db: Database, timeout: std::time::Duration) -> ComponentStatus {
    let ping = db.shared_ping(timeout, PING_REUSE).await;
    let error = ping.failure.map(|failure| match failure {
        PingFailure::Unreachable => "unreachable or timed out".to_owned(),
        PingFailure::QueryFailed => "query failed".to_owned(),
    });
    let status = if error.is_some() { "down" } else { "up" };
    ComponentStatus { status, latency_ms: ping.latency_ms, error, breaker: None }
}

/// Readiness: whether this instance can serve traffic (each database is pinged at most once a
/// second, however many probes arrive). The catalog is pinged whatever its circuit breaker
/// says, and the breaker's state is reported; when it does not answer `SELECT 1` within the probe
/// timeout (`storage.pool.probe_timeout`, default 2 s) it is `degraded`, and the instance stays
/// ready: it routes on the shard map it holds (loaded at start, so an instance never runs
/// without one). Every shard not taken offline is probed the same way and reported (with its
/// circuit breaker), but a shard that is down does not make the instance unready either. 503
/// only while an issuer whose keys are fetched has no key set yet (`key_sets`).
#[utoipa::path(get, path = "/readyz", responses(
    (status = 200, description = "Ready", body = Readiness),
    (status = 503, description = "Not ready: an issuer's key set has not been fetched yet", body = Readiness),
))]
pub async fn readyz(State(app): State<Arc<App>>) -> Response {
    let readiness = readiness(&app).await;
    let status = if readiness.status == "ready" { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (status, axum::Json(readiness)).into_response()
}

/// This instance's readiness as `/readyz` answers it (also what it reports to the instance
/// registry, `startup/instance_report.rs`).
pub(crate) async fn readiness(app: &App) -> Readiness {
    let timeout = app.probe_timeout;
    let catalog_db = app.router.catalog().database().clone();
    let catalog_breaker = Some(catalog_db.health().state().as_str());
    let catalog = async move {
        let probed = probe(catalog_db, timeout).await;
        // Requests keep being routed on the map this instance holds: degraded, not down.
        let status = if probed.status == "down" { "degraded" } else { probed.status };
        ComponentStatus { status, breaker: catalog_breaker, ..probed }
    };
    let shards = app.router.shard_dbs();
    let shard_probes = futures::future::join_all(shards.into_iter().map(|(id, state, db)| async move {
        let health = db.health().report();
        let breaker = Some(health.breaker.as_str());
        let status = if state == ShardState::Offline {
            ComponentStatus { status: "offline", latency_ms: 0, error: None, breaker }
        } else if health.breaker != BreakerState::Closed {
            let error = health.reason.unwrap_or_else(|| "circuit breaker open".to_owned());
            ComponentStatus { status: "down", latency_ms: 0, error: Some(error), breaker }
        } else {
            ComponentStatus { breaker, ..probe(db, timeout).await }
        };
        (id.to_string(), status)
    }));
    let (catalog, shard_probes) = futures::join!(catalog, shard_probes);
    let cache = match app.cache.health() {
        CacheHealth::Disabled => "disabled",
        CacheHealth::Local => "up",
        CacheHealth::Up => "up",
        CacheHealth::Degraded => "degraded",
    };
    let (key_sets, all_key_sets_fetched) = key_sets(&app.gate.auth);
    let ready = all_key_sets_fetched;
    let mut components = BTreeMap::new();
    components.insert("catalog".to_owned(), catalog);
    components.extend(shard_probes);
    for (id, reason) in app.router.quarantined_shards() {
        components.insert(
            id.to_string(),
            ComponentStatus { status: "down", latency_ms: 0, error: Some(reason), breaker: None },
        );
    }
    let error = app.cache.redis_error();
    components.insert("cache".to_owned(), ComponentStatus { status: cache, latency_ms: 0, error, breaker: None });
    let rate_limits = app.gate.limiter.store_status();
    components.insert(
        "rate_limits".to_owned(),
        ComponentStatus { status: rate_limits, latency_ms: 0, error: None, breaker: None },
    );
    Readiness { status: if ready { "ready" } else { "not_ready" }, components, key_sets }
}

/// Prometheus metrics, as OpenMetrics or Prometheus text.
///
/// The Prometheus text format 0.0.4 by default (what `curl` gets and `promtool check metrics`
/// reads); OpenMetrics text when `Accept` asks for it, as Prometheus does. Every family has a
/// `# HELP` line.
#[utoipa::path(
    get,
    path = "/metrics",
    responses((status = 200, description = "The Prometheus text format (`text/plain; version=0.0.4; charset=utf-8`), also without an `Accept` or with `*/*`; OpenMetrics text (`application/openmetrics-text; version=1.0.0; charset=utf-8`) when the request's `Accept` names it and weighs `text/plain` no more (what Prometheus sends)", content(
        (String = "text/plain"),
        (String = "application/openmetrics-text"),
    )))
)]
pub async fn metrics(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    app.metrics.response(headers.get(ACCEPT))
}
