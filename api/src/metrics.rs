//! Prometheus metrics: request count and latency by method, matched route and status. The
//! registry belongs to the `App` (no global), so several instances can run in one process.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::state::App;

/// Labels of the HTTP metrics. `route` is the matched route template (low cardinality), or
/// `unmatched`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    method: String,
    route: String,
    status: u16,
}

/// The instance's metrics.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<RequestLabels, Histogram>,
}

impl Metrics {
    /// A registry with the HTTP metrics registered, plus whatever `register` adds.
    pub fn new(register: impl FnOnce(&mut Registry)) -> Self {
        let mut registry = Registry::with_prefix("shardgate");
        let requests = Family::<RequestLabels, Counter>::default();
        let latency = Family::<RequestLabels, Histogram>::new_with_constructor(|| {
            Histogram::new([0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0])
        });
        registry.register("http_requests", "HTTP requests by method, route and status", requests.clone());
        registry.register("http_request_duration_seconds", "HTTP request latency in seconds", latency.clone());
        register(&mut registry);
        Self { registry, requests, latency }
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &self.registry) {
            tracing::error!(error = %e, "metrics encoding failed");
        }
        out
    }
}

/// Middleware recording every request.
pub async fn record(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().as_str().to_owned();
    let route =
        request.extensions().get::<MatchedPath>().map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let response = next.run(request).await;
    let labels = RequestLabels { method, route, status: response.status().as_u16() };
    app.metrics.requests.get_or_create(&labels).inc();
    app.metrics.latency.get_or_create(&labels).observe(started.elapsed().as_secs_f64());
    response
}
