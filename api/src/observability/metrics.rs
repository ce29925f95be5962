//! Prometheus metrics: request count and latency by method, matched route and status, and the
//! requests in progress (the per-pod load an autoscaler reads). The registry belongs to the `App`
//! (no global), so several instances can run in one process.
//!
//! Every label comes from a closed set, so no client can grow `/metrics` (or the memory behind
//! it) by sending odd requests: the method is one of the nine standard ones or `other`, the route
//! is a route template or `unmatched`, the status is a status the service answers with. And a
//! client without a valid token cannot even choose the route: the refusals it gets (401, 404
//! of unknown paths, 405, 400 `invalid_path`, 414, 429...) are all counted under the route
//! [`UNAUTHENTICATED_ROUTE`] (`route_label`).

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use hashbrown::{Equivalent, HashMap};
use parking_lot::RwLock;
use tokio::sync::Semaphore;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::observability::exposition::{Format, prometheus_text};

/// A 0/1 gauge of a key set: its name, its help and how to read it.
type KeySetFlag = (&'static str, &'static str, fn(&shardgate_gatekeeper::KeySetStatus) -> bool);

/// The key sets fetched from identity providers in `/metrics`, read at each scrape, labelled by
/// issuer (the configured ones: bounded) and fetch outcome (a closed set):
/// `key_set_age_seconds` (none before a first set), `key_set_usable` (1 while a set younger
/// than the issuer's maximum age is in use), `key_set_last_fetch_failed` (the error itself is in
/// `/readyz`) and `key_set_fetches_total`.
#[derive(Debug)]
pub struct KeySetMetrics(pub shardgate_gatekeeper::FetchedKeySets);

impl prometheus_client::collector::Collector for KeySetMetrics {
    fn encode(&self, mut encoder: prometheus_client::encoding::DescriptorEncoder) -> Result<(), std::fmt::Error> {
        use prometheus_client::encoding::EncodeMetric;
        use prometheus_client::metrics::MetricType;
        use prometheus_client::metrics::counter::ConstCounter;
        use prometheus_client::metrics::gauge::ConstGauge;

        let statuses = self.0.statuses();
        if statuses.is_empty() {
            return Ok(());
        }
        let mut family = encoder.encode_descriptor(
            "key_set_age_seconds",
            "Seconds since the key set in use was fetched from the issuer's identity provider",
            None,
            MetricType::Gauge,
        )?;
        for status in &statuses {
            if let Some(age) = status.age {
                ConstGauge::new(age.as_secs_f64())
                    .encode(family.encode_family(&[("issuer", status.issuer.as_str())])?)?;
            }
        }
        let mut family = encoder.encode_descriptor(
            "key_set_max_age_seconds",
            "How old the issuer's fetched key set may get before its tokens are refused (jwks_max_age_secs)",
            None,
            MetricType::Gauge,
        )?;
        for status in &statuses {
            ConstGauge::new(status.max_age.as_secs_f64())
                .encode(family.encode_family(&[("issuer", status.issuer.as_str())])?)?;
        }
        let flags: [KeySetFlag; 2] = [
            (
                "key_set_usable",
                "1 while the issuer's fetched key set is younger than its maximum age (else its tokens get 401)",
                |status| status.usable,
            ),
            (
                "key_set_last_fetch_failed",
                "1 when the last fetch of the issuer's key set failed (the error is in /readyz)",
                |status| status.last_error.is_some(),
            ),
        ];
        for (name, help, flag) in flags {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for status in &statuses {
                ConstGauge::new(i64::from(flag(status)))
                    .encode(family.encode_family(&[("issuer", status.issuer.as_str())])?)?;
            }
        }
        let mut family = encoder.encode_descriptor(
            "key_set_fetches",
            "Fetches of each issuer's key set, by outcome",
            None,
            MetricType::Counter,
        )?;
        for status in &statuses {
            for (outcome, count) in shardgate_gatekeeper::FETCH_OUTCOMES.iter().zip(status.fetches) {
                let labels = [("issuer", status.issuer.as_str()), ("outcome", outcome)];
                ConstCounter::new(count).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

/// The route label of the requests refused without a verified caller.
pub const UNAUTHENTICATED_ROUTE: &str = "unauthenticated";

/// Marks a response to a request whose caller the front door verified (in the response's
/// extensions): only then is a refusal counted under its own route.
#[derive(Debug, Clone, Copy)]
pub struct VerifiedCaller;

/// The route label of a request on `route` answered `status`: its route when the caller was
/// verified or the answer is not an error (the open routes: probes, scrapes, the API document,
/// valet URLs), else [`UNAUTHENTICATED_ROUTE`].
pub(crate) fn route_label(route: Option<&str>, verified: bool, status: StatusCode) -> &str {
    if !verified && (status.is_client_error() || status.is_server_error()) {
        return UNAUTHENTICATED_ROUTE;
    }
    route.unwrap_or("unmatched")
}

/// Labels of the HTTP metrics. `method` is [`method_label`]'s; `route` is the matched route
/// template (low cardinality), or `unmatched`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    method: &'static str,
    route: String,
    status: u16,
}

/// The instance's metrics.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<RequestLabels, Histogram>,
    /// The admission limits of the listeners, whose taken places are the requests in progress.
    in_flight: Admissions,
    /// The counter and histogram of each (method label, route, status) seen, so a request finds
    /// them without building label strings.
    handles: RwLock<HashMap<HandleKey, (Counter, Histogram), foldhash::fast::RandomState>>,
}

#[derive(Debug, Hash, PartialEq, Eq)]
struct HandleKey {
    method: &'static str,
    route: Box<str>,
    status: u16,
}

/// A borrowed [`HandleKey`]; hashes the same way.
#[derive(Hash)]
struct HandleKeyRef<'a> {
    method: &'static str,
    route: &'a str,
    status: u16,
}

impl Equivalent<HandleKey> for HandleKeyRef<'_> {
    fn equivalent(&self, key: &HandleKey) -> bool {
        self.method == key.method && self.route == &*key.route && self.status == key.status
    }
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
        let in_flight = Admissions::default();
        registry.register_collector(Box::new(in_flight.clone()));
        registry.register_collector(Box::new(crate::observability::trace_export::TraceExportMetrics));
        register(&mut registry);
        Self { registry, requests, latency, in_flight, handles: RwLock::default() }
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &self.registry) {
            tracing::error!(error = %e, "metrics encoding failed");
        }
        out
    }

    /// The `/metrics` response in the format `accept` prefers ([`Format::negotiate`]):
    /// the Prometheus text format, or OpenMetrics text when the scraper asks for it.
    pub fn response(&self, accept: Option<&axum::http::HeaderValue>) -> axum::response::Response {
        use axum::response::IntoResponse;
        let format = Format::negotiate(accept);
        let body = match format {
            Format::OpenMetrics => self.render(),
            Format::PrometheusText => prometheus_text(&self.render()),
        };
        ([(axum::http::header::CONTENT_TYPE, format.content_type())], body).into_response()
    }
}

impl Metrics {
    /// Counts the places taken in `limit` (of `capacity`) as requests in progress: the edge of a
    /// listener holds one for each request it admitted until the request is answered, its
    /// handler panicked or its client went away, so the gauge is read off the limits at each
    /// scrape and cannot drift from them.
    pub(crate) fn count_in_flight(&self, limit: Arc<Semaphore>, capacity: usize) {
        self.in_flight.0.write().push((limit, capacity));
    }

    /// Counts and times one request ([`crate::server::edge`] calls it for every response).
    pub(crate) fn observe(&self, method: &Method, route: &str, status: u16, seconds: f64) {
        let method = method_label(method);
        let key = HandleKeyRef { method, route, status };
        if let Some((count, latency)) = self.handles.read().get(&key) {
            count.inc();
            latency.observe(seconds);
            return;
        }
        let labels = RequestLabels { method, route: route.to_owned(), status };
        let count = self.requests.get_or_create(&labels).clone();
        let latency = self.latency.get_or_create(&labels).clone();
        count.inc();
        latency.observe(seconds);
        let key = HandleKey { method, route: route.into(), status };
        self.handles.write().insert(key, (count, latency));
    }
}

/// `http_requests_in_flight`: the places taken in the admission limit of each listener
/// ([`Metrics::count_in_flight`]), summed at each scrape.
#[derive(Debug, Default, Clone)]
struct Admissions(Arc<RwLock<Vec<AdmissionLimit>>>);

/// A listener's admission limit and how many places it has.
type AdmissionLimit = (Arc<Semaphore>, usize);

impl prometheus_client::collector::Collector for Admissions {
    fn encode(&self, mut encoder: prometheus_client::encoding::DescriptorEncoder) -> Result<(), std::fmt::Error> {
        use prometheus_client::encoding::EncodeMetric;
        use prometheus_client::metrics::MetricType;
        use prometheus_client::metrics::gauge::ConstGauge;
        let taken: usize =
            self.0.read().iter().map(|(limit, capacity)| capacity.saturating_sub(limit.available_permits())).sum();
        let family = encoder.encode_descriptor(
            "http_requests_in_flight",
            "HTTP requests admitted and not answered yet (probes and /metrics are not counted)",
            None,
            MetricType::Gauge,
        )?;
        ConstGauge::new(i64::try_from(taken).unwrap_or(i64::MAX)).encode(family)
    }
}

/// The `method` label of a request: the method's name if it is one of the nine of RFC 9110 and
/// RFC 5789 (`GET`, `HEAD`, `POST`, `PUT`, `DELETE`, `CONNECT`, `OPTIONS`, `TRACE`, `PATCH`),
/// else `other`: extension methods are a client's free choice, so they share one label value.
pub fn method_label(method: &Method) -> &'static str {
    match method.as_str() {
        "GET" => "GET",
        "HEAD" => "HEAD",
        "POST" => "POST",
        "PUT" => "PUT",
        "DELETE" => "DELETE",
        "CONNECT" => "CONNECT",
        "OPTIONS" => "OPTIONS",
        "TRACE" => "TRACE",
        "PATCH" => "PATCH",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extension_methods_share_one_label_so_the_exposition_stays_small() {
        let metrics = Metrics::new(|_| {});
        for i in 0..20_000 {
            let method = Method::from_bytes(format!("JUNK{i}").as_bytes()).unwrap();
            metrics.observe(&method, "unmatched", 404, 0.001);
        }
        metrics.observe(&Method::GET, "/healthz", 200, 0.001);
        metrics.observe(&Method::PATCH, "/healthz", 405, 0.001);
        let text = metrics.render();
        assert!(!text.contains("JUNK"), "a client's method is not a label value");
        assert!(text.len() < 100_000, "{} bytes", text.len());
        assert!(
            text.contains(r#"shardgate_http_requests_total{method="other",route="unmatched",status="404"} 20000"#),
            "{text}"
        );
        assert!(text.contains(r#"shardgate_http_requests_total{method="PATCH",route="/healthz",status="405"} 1"#));
        assert_eq!(metrics.handles.read().len(), 3, "one handle per label set");
    }

    #[test]
    fn a_refusal_without_a_verified_caller_is_counted_under_one_route() {
        let route = Some("/v1/tenants/{tenant}/blobs");
        for status in [400, 401, 403, 404, 405, 414, 429, 431, 503] {
            let status = StatusCode::from_u16(status).unwrap();
            assert_eq!(route_label(route, false, status), UNAUTHENTICATED_ROUTE);
            assert_eq!(route_label(None, false, status), UNAUTHENTICATED_ROUTE);
            assert_eq!(route_label(route, true, status), "/v1/tenants/{tenant}/blobs");
            assert_eq!(route_label(None, true, status), "unmatched");
        }
        // An open route that answers keeps its name (probes, the scrape, valet URLs).
        assert_eq!(route_label(route, false, StatusCode::OK), "/v1/tenants/{tenant}/blobs");
    }

    #[test]
    fn the_nine_standard_methods_keep_their_names() {
        for name in ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"] {
            assert_eq!(method_label(&Method::from_bytes(name.as_bytes()).unwrap()), name);
        }
        assert_eq!(method_label(&Method::from_bytes(b"get").unwrap()), "other", "methods are case-sensitive");
        assert_eq!(method_label(&Method::from_bytes(b"PROPFIND").unwrap()), "other");
    }
}
