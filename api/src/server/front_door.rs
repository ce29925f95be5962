//! The gatekeeper's front door, run before any handler: path rules, then the caller's token and
//! rate limit ([`crate::server::admission`]), or, behind a standalone gatekeeper, its internal
//! credential; then the caller's place among its compartment's requests in progress
//! ([`crate::server::bulkhead`]), held until the response has been sent
//! ([`crate::server::transfer_watch`]); a tenant's request is counted for its daily usage
//! ([`crate::server::usage_tally`]). Health, readiness and metrics endpoints are never
//! throttled nor counted: a probe must not fail because a tenant is busy.

use std::convert::Infallible;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::http::{HeaderValue, Uri};
use axum::response::{IntoResponse, Response};
use shardgate_gatekeeper::AuthError;
use shardgate_gatekeeper::internal::{self, InternalKey};
use tower::{Layer, Service, ServiceExt};

use crate::app::App;
use crate::observability::metrics::VerifiedCaller;
use crate::server::admission::Authenticated;
use crate::server::bulkhead::{Compartment, Slot};
use crate::server::client_address::{ClientAddress, ClientNamedByGatekeeper, client_address};
use crate::server::usage_tally::{self, Tally};
use crate::wire::admin_plane::{Plane, is_unthrottled_here};
use crate::wire::error::{ApiError, Code};

/// The client address of a request ([`crate::server::client_address`]: its peer, or what its
/// trusted proxies or the standalone gatekeeper say).
pub fn client_ip(request: &Request) -> IpAddr {
    client_address(request.extensions())
}

/// Behind a standalone gatekeeper: accepts only requests with a valid internal credential (401
/// `invalid_internal_credential` otherwise), takes the principal and the client address the
/// gatekeeper verified, and tells the gatekeeper the tenant's rate limit in a response header;
/// the request is counted in its caller's bulkhead as at the front door. (Probes and metrics,
/// which carry no tenant data, stay open for the orchestrator and the scraper.)
async fn trusted_door<N: Next>(app: &App, key: &InternalKey, mut request: Request, next: N) -> Response {
    // In a block: a borrow of the request (whose body is not `Sync`) must not live across an await.
    let (verified, client) = {
        let header = |name: &str| request.headers().get(name).and_then(|v| v.to_str().ok());
        let path_and_query = request.uri().path_and_query().map_or("/", |pq| pq.as_str());
        let verified = key.verify(
            request.method().as_str(),
            path_and_query,
            header(internal::PRINCIPAL_HEADER),
            header(internal::CLIENT_HEADER),
            header(internal::TIMESTAMP_HEADER),
            header(internal::SIGNATURE_HEADER),
        );
        // Signed, so the gatekeeper's word; without it (an older gatekeeper), the peer.
        let named = header(internal::CLIENT_HEADER).and_then(|text| text.parse::<IpAddr>().ok());
        let client = match (&verified, named) {
            (Ok(_), Some(named)) => named,
            _ => client_ip(&request),
        };
        (verified, client)
    };
    tracing::Span::current().record("client", tracing::field::display(client));
    request.extensions_mut().insert(ClientAddress(client));
    let principal = match verified {
        Ok(principal) => principal.map(Arc::new),
        Err(e) => {
            tracing::warn!(reason = %e, "request without a valid internal credential refused");
            return ApiError::new(Code::InvalidInternalCredential, e.to_string()).into_response();
        }
    };
    let verified = principal.is_some();
    let tenant = principal.as_ref().and_then(|p| p.tenant.clone());
    // A request the gatekeeper let through without a token has none here either.
    let authenticated = principal.ok_or(AuthError::Missing);
    let slot = match enter_bulkhead(app, request.uri().path(), Some(&authenticated)) {
        Ok(slot) => slot,
        Err(refused) => return marked(refused.into_response(), verified),
    };
    request.extensions_mut().insert(Authenticated(authenticated));
    let (tally, request) = tallied(app, tenant.as_deref(), request);
    let mut response = marked(run(next, request).await, verified);
    response = counted(app, tenant.as_deref(), tally, response);
    if let Some(limit) = tenant.and_then(|t| app.tenant_rate_limit(&t))
        && let Ok(value) = HeaderValue::from_str(&format!("{} {}", limit.per_second, limit.burst))
    {
        response.headers_mut().insert(internal::RATE_LIMIT_HEADER, value);
    }
    held_until_sent(app, response, slot)
}

/// The caller's slot in its bulkhead, for a request on `path`. Valet URLs are not counted here:
/// their tenant is known only once the valet service has verified them, and it counts them then.
fn enter_bulkhead(
    app: &App,
    path: &str,
    authenticated: Option<&Result<Arc<shardgate_gatekeeper::Principal>, AuthError>>,
) -> Result<Option<Slot>, ApiError> {
    if path.starts_with("/valet/") {
        return Ok(None);
    }
    app.enter_bulkhead(Compartment::of(authenticated)).map(Some)
}

/// `request` of `tenant` (if it is any tenant's) on its way in, counted for its daily usage
/// ([`crate::server::usage_tally`]); valet URLs are counted by the valet service.
fn tallied(app: &App, tenant: Option<&str>, request: Request) -> (Option<Tally>, Request) {
    match tenant {
        Some(tenant) if !request.uri().path().starts_with("/valet/") => {
            let (tally, request) = usage_tally::request_in(&app.daily_usage, tenant, request);
            (Some(tally), request)
        }
        _ => (None, request),
    }
}

/// `response` to a request [`tallied`] as `tally`, counted with it.
fn counted(app: &App, tenant: Option<&str>, tally: Option<Tally>, response: Response) -> Response {
    match (tenant, tally) {
        (Some(tenant), Some(tally)) => usage_tally::response_out(&app.daily_usage, tenant, tally, response),
        _ => response,
    }
}

/// `response`, holding `slot` (if any) until it has been sent.
fn held_until_sent(app: &App, response: Response, slot: Option<Slot>) -> Response {
    match slot {
        Some(slot) => app.transfers.hold(response, slot),
        None => response,
    }
}

/// The longest request target (path and query) accepted: longer is 414 `uri_too_long`.
pub const MAX_REQUEST_TARGET_BYTES: usize = 8 * 1024;

/// The request target's length limit ([`MAX_REQUEST_TARGET_BYTES`], 414 `uri_too_long`), then
/// the path rules of [`check_request_path`].
pub fn check_request_target(uri: &Uri) -> Result<(), ApiError> {
    if uri.path_and_query().is_some_and(|target| target.as_str().len() > MAX_REQUEST_TARGET_BYTES) {
        return Err(ApiError::new(Code::UriTooLong, "the request target (path and query) is longer than 8 KiB"));
    }
    check_request_path(uri.path())
}

/// The path rules of [`shardgate_gatekeeper::request`]: 400 `invalid_path` or 414 `uri_too_long`.
pub fn check_request_path(path: &str) -> Result<(), ApiError> {
    use shardgate_gatekeeper::request::{PathProblem, check_path};
    match check_path(path) {
        Ok(()) => Ok(()),
        Err(problem @ PathProblem::TooLong) => Err(ApiError::new(Code::UriTooLong, problem.to_string())),
        // A valet URL is refused like any other bad valet URL.
        Err(problem) if path.starts_with("/valet/") => Err(ApiError::new(Code::ValetMalformed, problem.to_string())),
        Err(problem) => Err(ApiError::new(Code::InvalidPath, problem.to_string())),
    }
}

/// The gateway's front door: authenticate, throttle with the tenant limits of the shard map,
/// then take the caller's slot in its bulkhead (429 at once when it is full), held until the
/// response has been sent. In trusted mode the internal credential replaces authentication and
/// throttling (the gatekeeper did them), except on the admin listener ([`Plane::Admin`]).
async fn front_door<N: Next>(app: Arc<App>, mut request: Request, next: N) -> Response {
    if let Err(refused) = check_request_target(request.uri()) {
        return refused.into_response();
    }
    if is_unthrottled_here(request.uri().path(), request.extensions()) {
        return run(next, request).await;
    }
    // The admin listener is reached directly, never through a gatekeeper: tokens are verified here.
    if let Some(key) = &app.trusted
        && Plane::of(request.extensions()) != Some(Plane::Admin)
    {
        return trusted_door(&app, key, request, next).await;
    }
    // Reached directly on a backend behind a gatekeeper (its admin listener): the connection's client.
    if request.extensions().get::<ClientNamedByGatekeeper>().is_some() {
        tracing::Span::current().record("client", tracing::field::display(client_ip(&request)));
    }
    let authenticated = app.gate.authenticate(request.headers()).await;
    let verified = matches!(authenticated, Some(Ok(_)));
    let client = client_ip(&request);
    let admission = match app.gate.admit(authenticated.as_ref(), client, |tenant| app.tenant_rate_limit(tenant)).await {
        Ok(admission) => admission,
        Err(refused) => return marked(refused, verified),
    };
    let slot = match enter_bulkhead(&app, request.uri().path(), authenticated.as_ref()) {
        Ok(slot) => slot,
        Err(refused) => {
            let mut response = marked(refused.into_response(), verified);
            if let Some(admission) = admission {
                admission.report(response.headers_mut());
            }
            return response;
        }
    };
    let tenant = match &authenticated {
        Some(Ok(principal)) => Some(principal.clone()),
        _ => None,
    };
    let tenant = tenant.as_ref().and_then(|principal| principal.tenant.as_deref());
    if let Some(authenticated) = authenticated {
        request.extensions_mut().insert(Authenticated(authenticated));
    }
    let (tally, request) = tallied(&app, tenant, request);
    let mut response = counted(&app, tenant, tally, marked(run(next, request).await, verified));
    if let Some(admission) = admission {
        admission.report(response.headers_mut());
    }
    held_until_sent(&app, response, slot)
}

/// What the front door hands a request on to: the routes.
trait Next: Service<Request, Response = Response, Error = Infallible> + Send + 'static {}

impl<S> Next for S where S: Service<Request, Response = Response, Error = Infallible> + Send + 'static {}

/// The response of `next` to `request`.
async fn run<N: Next>(next: N, request: Request) -> Response {
    next.oneshot(request).await.unwrap_or_else(|never| match never {})
}

/// The front door as a layer, around the routes: what this module says, for every request.
#[derive(Debug, Clone)]
pub struct FrontDoorLayer {
    app: Arc<App>,
}

impl FrontDoorLayer {
    /// The front door of `app`.
    pub fn new(app: Arc<App>) -> Self {
        Self { app }
    }
}

impl<S> Layer<S> for FrontDoorLayer {
    type Service = FrontDoor<S>;

    fn layer(&self, inner: S) -> Self::Service {
        FrontDoor { app: self.app.clone(), inner }
    }
}

/// See [`FrontDoorLayer`].
#[derive(Debug, Clone)]
pub struct FrontDoor<S> {
    app: Arc<App>,
    inner: S,
}

impl<S> Service<Request> for FrontDoor<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        // The service made ready goes with the request; this one keeps a clone for the next.
        let clone = self.inner.clone();
        let ready = std::mem::replace(&mut self.inner, clone);
        let app = self.app.clone();
        Box::pin(async move { Ok(front_door(app, request, ready).await) })
    }
}

/// `response`, marked as answered to a verified caller if it was one, so the edge counts it
/// under its own route ([`crate::observability::metrics::route_label`]).
fn marked(mut response: Response, verified: bool) -> Response {
    if verified {
        response.extensions_mut().insert(VerifiedCaller);
    }
    response
}
