//! The edge of every front of shardgate (the gateway, its valet listener and the standalone
//! gatekeeper): one tower service that does per request what used to be eight layers, so a
//! request passes one wrapper and one future instead of a stack of them:
//!
//! - load shedding: at most `max_in_flight` requests in progress; the next one gets 503
//!   `overloaded` with `Retry-After` at once instead of queueing (and is counted in the refusal
//!   counter, if given). Probes and `/metrics` ([`is_unthrottled_here`]) are never counted nor
//!   shed, so a liveness probe does not fail because the instance is full;
//! - `Authorization` marked sensitive (never printed by a `Debug` of the headers);
//! - a request id of the server's own (random, never the client's: any caller could send the id
//!   of another's request), on the request's extensions ([`RequestIds`]) and on the response as
//!   `x-request-id`; a valid `x-request-id` the client sent is kept beside it (in [`RequestIds`],
//!   the span's `client_request_id` and the audit log), and left on the request as it came, so
//!   the standalone gatekeeper passes the client's own id on to the backend;
//! - one trace span per request (method, route, request id, the client's address as
//!   [`crate::server::client_address`] read it — behind a standalone gatekeeper, recorded by the
//!   front door once it has verified the gatekeeper's word; tenant, shard and cache are filled
//!   in by the handlers; with traces on, the trusted caller's W3C trace context as its parent, its
//!   trace id and status, and its `traceparent` on the response: [`telemetry::Traces`]), and one
//!   event when it ends: `request finished` at debug level, or
//!   `request failed` at error level for a 5xx;
//! - a panic in a handler turned into a 500 problem;
//! - `x-content-type-options: nosniff` on every response;
//! - the request counted in `http_requests_in_flight` from its admission until it is answered
//!   or dropped: the gauge reads the places taken in the shedding limit above, whose permit the
//!   request's future holds (so a panic or a client that goes away cannot leave it counted);
//!   probes and `/metrics` are not counted, as they are not shed;
//! - the request counted and timed in [`Metrics`] (by method, matched route and status). A
//!   refusal answered without a verified caller (a 4xx or 5xx whose response does not carry
//!   [`VerifiedCaller`], which the front door adds once a token or internal credential named
//!   one) is counted under the route [`crate::observability::metrics::UNAUTHENTICATED_ROUTE`]
//!   instead, so an anonymous client cannot choose how many series `/metrics` holds: whatever it
//!   sends, it adds at most the method labels times the refusal statuses.
//! - the answer counted in the request-health windows (by the same route label, and by the shard
//!   its handler routed it to: [`request_health`]), when the layer was given their meter.
//!
//! CORS (a policy with preflights of its own) stays tower-http's layer, outside this one.

use std::future::Future;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::extract::{ConnectInfo, MatchedPath};
use axum::http::header::{AUTHORIZATION, X_CONTENT_TYPE_OPTIONS};
use axum::http::{HeaderName, HeaderValue, Method, Request};
use axum::response::{IntoResponse, Response};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tower::{Layer, Service};
use tracing::Span;

use prometheus_client::metrics::counter::Counter;
use shardgate_shard_router::balance::RequestMeter;

use crate::observability::metrics::{Metrics, VerifiedCaller, route_label};
use crate::observability::request_health;
use crate::observability::telemetry;
use crate::server::client_address::{ClientNamedByGatekeeper, client_address};
use crate::wire::admin_plane::is_unthrottled_here;
use crate::wire::error::ApiError;

/// The request id header.
pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The longest request id kept from a client; a longer one is not kept.
const MAX_REQUEST_ID_BYTES: usize = 128;

/// A request's ids, on its extensions: the server's own, and the client's if it sent a valid one.
#[derive(Debug, Clone)]
pub struct RequestIds {
    /// The server's own id (random): unique, the one the response and the logs name.
    pub server: HeaderValue,
    /// The `x-request-id` the client sent, if short and visible ASCII: the client's to choose.
    pub client: Option<HeaderValue>,
}

impl RequestIds {
    /// The server's id and the client's, as text, of the request whose extensions these are
    /// (empty and none on a request that did not pass the edge).
    pub fn of(extensions: &axum::http::Extensions) -> (String, Option<String>) {
        let text = |v: &HeaderValue| v.to_str().unwrap_or_default().to_owned();
        match extensions.get::<RequestIds>() {
            Some(ids) => (text(&ids.server), ids.client.as_ref().map(text)),
            None => (String::new(), None),
        }
    }
}

/// The [`Edge`] of one listener.
#[derive(Debug, Clone)]
pub struct EdgeLayer {
    in_flight: Arc<Semaphore>,
    metrics: Option<Arc<Metrics>>,
    shed: Option<Counter>,
    health: Option<Arc<RequestMeter>>,
}

impl EdgeLayer {
    /// At most `max_in_flight` requests at once (at least one), recorded in `metrics` if given.
    pub fn new(max_in_flight: usize, metrics: Option<Arc<Metrics>>) -> Self {
        let capacity = max_in_flight.max(1);
        let in_flight = Arc::new(Semaphore::new(capacity));
        if let Some(metrics) = &metrics {
            metrics.count_in_flight(in_flight.clone(), capacity);
        }
        Self { in_flight, metrics, shed: None, health: None }
    }

    /// Counts each answer in `health` (request health: [`request_health`]), if given.
    pub fn recording_health(self, health: Option<Arc<RequestMeter>>) -> Self {
        Self { health, ..self }
    }

    /// Counts each request shed for the limit in `shed`.
    pub fn counting_shed(self, shed: Counter) -> Self {
        Self { shed: Some(shed), ..self }
    }
}

impl<S> Layer<S> for EdgeLayer {
    type Service = Edge<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Edge {
            inner,
            in_flight: self.in_flight.clone(),
            metrics: self.metrics.clone(),
            shed: self.shed.clone(),
            health: self.health.clone(),
        }
    }
}

/// The service of [`EdgeLayer`].
#[derive(Debug, Clone)]
pub struct Edge<S> {
    inner: S,
    in_flight: Arc<Semaphore>,
    metrics: Option<Arc<Metrics>>,
    shed: Option<Counter>,
    health: Option<Arc<RequestMeter>>,
}

impl<S, B> Service<Request<B>> for Edge<S>
where
    S: Service<Request<B>, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = EdgeFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        let started = Instant::now();
        let headers = request.headers_mut();
        if let Some(authorization) = headers.get_mut(AUTHORIZATION) {
            authorization.set_sensitive(true);
        }
        let client_request_id = headers.get(&REQUEST_ID).filter(|id| is_valid_request_id(id)).cloned();
        let request_id = random_request_id();
        let route = request.extensions().get::<MatchedPath>().cloned();
        let span = tracing::info_span!(
            "request",
            method = %request.method(),
            route = route.as_ref().map_or("unmatched", MatchedPath::as_str),
            request_id = request_id.to_str().unwrap_or(""),
            client_request_id = tracing::field::Empty,
            client = tracing::field::Empty,
            tenant = tracing::field::Empty,
            shard = tracing::field::Empty,
            cache = tracing::field::Empty,
            status = tracing::field::Empty,
            trace_id = tracing::field::Empty,
            "otel.kind" = tracing::field::Empty,
            "otel.status_code" = tracing::field::Empty,
        );
        if let Some(traces) = telemetry::traces() {
            let peer = request.extensions().get::<ConnectInfo<SocketAddr>>().map(|ConnectInfo(peer)| peer.ip());
            traces.adopt(&span, request.headers(), peer);
        }
        if let Some(client) = client_request_id.as_ref().and_then(|id| id.to_str().ok()) {
            span.record("client_request_id", client);
        }
        if request.extensions().get::<ClientNamedByGatekeeper>().is_none() {
            span.record("client", tracing::field::display(client_address(request.extensions())));
        }
        request.extensions_mut().insert(RequestIds { server: request_id.clone(), client: client_request_id });
        let method = request.method().clone();
        let admitted = if is_unthrottled_here(request.uri().path(), request.extensions()) {
            Ok(None)
        } else {
            self.in_flight.clone().try_acquire_owned().map(Some)
        };
        let (inner, ready, permit) = match admitted {
            Ok(permit) => {
                let called = span.in_scope(|| std::panic::catch_unwind(AssertUnwindSafe(|| self.inner.call(request))));
                match called {
                    Ok(future) => (Some(future), None, permit),
                    Err(_) => (None, Some(panicked()), None),
                }
            }
            Err(_) => {
                if let Some(shed) = &self.shed {
                    shed.inc();
                }
                (None, Some(ApiError::overloaded().into_response()), None)
            }
        };
        EdgeFuture {
            inner,
            ready,
            permit,
            span,
            request_id,
            method,
            route,
            started,
            metrics: self.metrics.clone(),
            health: self.health.clone(),
            shard_slot: None,
        }
    }
}

pin_project_lite::pin_project! {
    /// Completes with the inner response (or the refusal or panic answer) after finishing it.
    pub struct EdgeFuture<F> {
        #[pin]
        inner: Option<F>,
        ready: Option<Response>,
        permit: Option<OwnedSemaphorePermit>,
        span: Span,
        request_id: HeaderValue,
        method: Method,
        route: Option<MatchedPath>,
        started: Instant,
        metrics: Option<Arc<Metrics>>,
        health: Option<Arc<RequestMeter>>,
        shard_slot: Option<usize>,
    }
}

impl<F, E> Future for EdgeFuture<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let _entered = this.span.enter();
        let mut response = match this.ready.take() {
            Some(response) => response,
            None => {
                let Some(inner) = this.inner.as_mut().as_pin_mut() else {
                    panic!("EdgeFuture polled after completion");
                };
                if this.health.is_some() {
                    request_health::forget_routed_shard();
                }
                let polled = std::panic::catch_unwind(AssertUnwindSafe(|| inner.poll(cx)));
                if let Some(slot) = this.health.as_deref().and_then(request_health::take_routed_shard) {
                    *this.shard_slot = Some(slot);
                }
                match polled {
                    Ok(Poll::Pending) => return Poll::Pending,
                    Ok(Poll::Ready(Ok(response))) => response,
                    Ok(Poll::Ready(Err(e))) => {
                        this.inner.set(None);
                        this.permit.take();
                        return Poll::Ready(Err(e));
                    }
                    Err(_) => panicked(),
                }
            }
        };
        this.inner.set(None);
        this.permit.take();
        let status = response.status();
        let headers = response.headers_mut();
        headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
        if !headers.contains_key(&REQUEST_ID) {
            headers.insert(REQUEST_ID, this.request_id.clone());
        }
        if let Some(traces) = telemetry::traces() {
            traces.inject(this.span, headers);
            this.span.record("status", status.as_u16());
            if status.is_server_error() {
                this.span.record("otel.status_code", "error");
            }
        }
        let elapsed = this.started.elapsed();
        let latency_us = elapsed.as_micros() as u64;
        if status.is_server_error() {
            tracing::error!(status = status.as_u16(), latency_us, "request failed");
        } else {
            tracing::debug!(status = status.as_u16(), latency_us, "request finished");
        }
        if let Some(metrics) = this.metrics {
            let verified = response.extensions().get::<VerifiedCaller>().is_some();
            let route = route_label(this.route.as_ref().map(MatchedPath::as_str), verified, status);
            metrics.observe(this.method, route, status.as_u16(), elapsed.as_secs_f64());
        }
        if let Some(health) = this.health {
            let verified = response.extensions().get::<VerifiedCaller>().is_some();
            let route = route_label(this.route.as_ref().map(MatchedPath::as_str), verified, status);
            let error = request_health::is_error(status);
            health.record(shardgate_shard_router::now_ms(), route, *this.shard_slot, error, latency_us);
        }
        Poll::Ready(Ok(response))
    }
}

/// A client's request id is kept if it is short, visible ASCII.
fn is_valid_request_id(id: &HeaderValue) -> bool {
    !id.is_empty() && id.len() <= MAX_REQUEST_ID_BYTES && id.as_bytes().iter().all(|b| b.is_ascii_graphic())
}

/// A random UUID (v4) as a header value.
pub(crate) fn random_request_id() -> HeaderValue {
    let id = uuid::Builder::from_random_bytes(rand::random()).into_uuid();
    let mut buffer = uuid::Uuid::encode_buffer();
    HeaderValue::from_str(id.hyphenated().encode_lower(&mut buffer)).expect("a UUID is a valid header value")
}

/// The answer to a handler that panicked.
fn panicked() -> Response {
    ApiError::internal(&"handler panicked").into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::convert::Infallible;

    use axum::body::Body;
    use tower::ServiceExt;

    fn request() -> Request<Body> {
        Request::builder().uri("/x").header(AUTHORIZATION, "Bearer secret").body(Body::empty()).unwrap()
    }

    /// A handler that answers `answer(request)` once `released` says go.
    fn held_until(
        released: tokio::sync::watch::Receiver<bool>,
        answer: fn(&Request<Body>) -> Response,
    ) -> impl Service<Request<Body>, Response = Response, Error = Infallible, Future: Send> + Clone + Send + 'static
    {
        tower::service_fn(move |request: Request<Body>| {
            let mut released = released.clone();
            async move {
                let _ = released.wait_for(|go| *go).await;
                Ok::<Response, Infallible>(answer(&request))
            }
        })
    }

    /// A handler that panics when called, before it has a future.
    fn panics_on_call() -> impl Service<Request<Body>, Response = Response, Error = Infallible> {
        tower::service_fn(|_: Request<Body>| -> std::future::Ready<Result<Response, Infallible>> { panic!("in call") })
    }

    /// A handler whose future panics when polled.
    fn panics_on_poll() -> impl Service<Request<Body>, Response = Response, Error = Infallible> {
        tower::service_fn(|_: Request<Body>| async {
            if true {
                panic!("in poll");
            }
            Ok::<Response, Infallible>(Response::default())
        })
    }

    #[tokio::test]
    async fn a_panicking_handler_answers_500_with_the_edge_headers() {
        let edge = EdgeLayer::new(4, None);
        let answers = [
            edge.layer(panics_on_call()).oneshot(request()).await.unwrap(),
            edge.layer(panics_on_poll()).oneshot(request()).await.unwrap(),
        ];
        for response in answers {
            assert_eq!(response.status(), 500);
            assert_eq!(response.headers()[X_CONTENT_TYPE_OPTIONS], "nosniff");
            assert!(is_valid_request_id(&response.headers()[REQUEST_ID]));
        }
        assert_eq!(edge.in_flight.available_permits(), 4, "a panicked request gives its place back");
    }

    #[tokio::test]
    async fn beyond_its_limit_a_request_is_refused_at_once_and_a_clients_id_is_kept_beside_the_servers() {
        let (release, released) = tokio::sync::watch::channel(false);
        let handler = held_until(released, |request| {
            let sensitive = request.headers()[AUTHORIZATION].is_sensitive();
            let (server, client) = RequestIds::of(request.extensions());
            format!("sensitive={sensitive} server={server} client={}", client.unwrap_or_default()).into_response()
        });
        let edge = EdgeLayer::new(1, None);
        let mut held = request();
        held.headers_mut().insert(REQUEST_ID, HeaderValue::from_static("client-id-1"));
        let first = tokio::spawn(edge.layer(handler.clone()).oneshot(held));
        while edge.in_flight.available_permits() > 0 {
            tokio::task::yield_now().await;
        }
        let refused = edge.layer(handler.clone()).oneshot(request()).await.unwrap();
        assert_eq!(refused.status(), 503);
        assert_eq!(refused.headers()["retry-after"], "1");
        release.send(true).unwrap();
        let served = first.await.unwrap().unwrap();
        let id = served.headers()[REQUEST_ID].to_str().unwrap().to_owned();
        assert_ne!(id, "client-id-1", "the response names the server's own id, never the client's");
        assert!(is_valid_request_id(&served.headers()[REQUEST_ID]));
        let body = axum::body::to_bytes(served.into_body(), 1024).await.unwrap();
        assert_eq!(
            std::str::from_utf8(&body).unwrap(),
            format!("sensitive=true server={id} client=client-id-1"),
            "the handler sees the server's id and the client's beside it"
        );
        assert_eq!(edge.layer(handler).oneshot(request()).await.unwrap().status(), 200, "the place is free again");
    }

    #[tokio::test]
    async fn probes_and_metrics_are_served_when_the_limit_is_reached() {
        let (release, released) = tokio::sync::watch::channel(false);
        let handler = held_until(released, |_| Response::default());
        let shed = Counter::default();
        let edge = EdgeLayer::new(1, None).counting_shed(shed.clone());
        let held = tokio::spawn(edge.layer(handler.clone()).oneshot(request()));
        while edge.in_flight.available_permits() > 0 {
            tokio::task::yield_now().await;
        }
        assert_eq!(edge.layer(handler.clone()).oneshot(request()).await.unwrap().status(), 503);
        assert_eq!(shed.get(), 1);
        let probes: Vec<_> = ["/healthz", "/readyz", "/metrics"]
            .into_iter()
            .map(|path| {
                tokio::spawn(edge.layer(handler.clone()).oneshot(Request::get(path).body(Body::empty()).unwrap()))
            })
            .collect();
        tokio::task::yield_now().await;
        release.send(true).unwrap();
        for probe in probes {
            assert_eq!(probe.await.unwrap().unwrap().status(), 200, "a probe is never shed");
        }
        assert_eq!(shed.get(), 1);
        held.await.unwrap().unwrap();
    }

    /// The value of `shardgate_http_requests_in_flight` in the exposition.
    fn in_flight(metrics: &Metrics) -> String {
        let text = metrics.render();
        let line = text.lines().find(|line| line.starts_with("shardgate_http_requests_in_flight "));
        line.expect("the gauge is exposed").rsplit(' ').next().unwrap().to_owned()
    }

    #[tokio::test]
    async fn requests_in_flight_rise_during_a_slow_request_and_fall_back_on_every_ending() {
        let metrics = Arc::new(Metrics::new(|_| {}));
        let edge = EdgeLayer::new(8, Some(metrics.clone()));
        assert_eq!(in_flight(&metrics), "0");

        // Answered.
        let (release, released) = tokio::sync::watch::channel(false);
        let handler = held_until(released, |_| Response::default());
        let slow = tokio::spawn(edge.layer(handler.clone()).oneshot(request()));
        let also_slow = tokio::spawn(edge.layer(handler.clone()).oneshot(request()));
        while in_flight(&metrics) != "2" {
            tokio::task::yield_now().await;
        }
        let probe =
            edge.layer(tower::service_fn(|_: Request<Body>| async { Ok::<Response, Infallible>(Response::default()) }));
        assert_eq!(probe.oneshot(Request::get("/metrics").body(Body::empty()).unwrap()).await.unwrap().status(), 200);
        assert_eq!(in_flight(&metrics), "2", "a scrape is not counted");
        release.send(true).unwrap();
        assert_eq!(slow.await.unwrap().unwrap().status(), 200);
        assert_eq!(also_slow.await.unwrap().unwrap().status(), 200);
        assert_eq!(in_flight(&metrics), "0");

        // The client goes away: its future is dropped half-way.
        let (_never, never_released) = tokio::sync::watch::channel(false);
        let abandoned =
            tokio::spawn(edge.layer(held_until(never_released, |_| Response::default())).oneshot(request()));
        while in_flight(&metrics) != "1" {
            tokio::task::yield_now().await;
        }
        abandoned.abort();
        assert!(abandoned.await.unwrap_err().is_cancelled());
        assert_eq!(in_flight(&metrics), "0", "a dropped request is not counted any more");

        // The handler panics, in its call and in its future.
        assert_eq!(edge.layer(panics_on_call()).oneshot(request()).await.unwrap().status(), 500);
        assert_eq!(edge.layer(panics_on_poll()).oneshot(request()).await.unwrap().status(), 500);
        assert_eq!(in_flight(&metrics), "0");

        // Shed requests were never admitted.
        let full = EdgeLayer::new(1, Some(metrics.clone()));
        let (release, released) = tokio::sync::watch::channel(false);
        let held = tokio::spawn(full.layer(held_until(released, |_| Response::default())).oneshot(request()));
        while in_flight(&metrics) != "1" {
            tokio::task::yield_now().await;
        }
        assert_eq!(full.layer(handler).oneshot(request()).await.unwrap().status(), 503);
        assert_eq!(in_flight(&metrics), "1");
        release.send(true).unwrap();
        held.await.unwrap().unwrap();
        assert_eq!(in_flight(&metrics), "0");
    }

    #[test]
    fn client_request_ids_are_kept_only_when_short_and_visible() {
        assert!(is_valid_request_id(&HeaderValue::from_static("abc-123_XYZ")));
        assert!(!is_valid_request_id(&HeaderValue::from_static("")));
        assert!(!is_valid_request_id(&HeaderValue::from_static("has space")));
        assert!(!is_valid_request_id(&HeaderValue::from_str(&"a".repeat(MAX_REQUEST_ID_BYTES + 1)).unwrap()));
        let random = random_request_id();
        assert!(is_valid_request_id(&random));
        assert_ne!(random, random_request_id());
    }
}
