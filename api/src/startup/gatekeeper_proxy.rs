//! `shardgate gatekeeper --upstream URL`: the gatekeeper as its own process (the Gatekeeper
//! pattern). It validates every request — path rules, bearer token, tenant binding and scope,
//! rate limits, body size and media type — and forwards what passes to a trusted backend
//! (`shardgate serve --trusted`) with the internal credential (see
//! [`shardgate_gatekeeper::internal`]). It holds no shard or catalog URL and no valet key.
//!
//! Tenant rate limits live in the catalog, which the gatekeeper cannot read: the backend reports
//! a tenant's limit in a response header, and the gatekeeper remembers it for a minute (until it
//! has heard, the `standard` tier's limit applies).
//!
//! Bodies are read up to their route's limit before forwarding; responses are streamed back.
//!
//! With `admin.listen`, the gatekeeper's own `/metrics` (and its probes) are served there, and
//! the admin plane (`/v1/admin/*`, `/console`, `/metrics`) is never forwarded: its public
//! listener checks such a request as it checks any path it does not know (the token of a `/v1`
//! path, the rate limit) and answers 404 `not_found` itself. Without it, `/metrics` is served
//! on the one listener and the admin API and console are forwarded, as the backend serves them.
//!
//! The client's address is read as the gateway reads it (its peer, or what `trusted_proxies`
//! say, [`crate::server::client_address`]): the gatekeeper's per-IP limits use it, and it goes to
//! the backend in the internal credential (`x-shardgate-client`), for the backend's audit and
//! access logs.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use shardgate_gatekeeper::AuthError;
use shardgate_gatekeeper::internal::{self, InternalKey};
use shardgate_gatekeeper::request::{Access, access};
use shardgate_gatekeeper::throttle::{Limiter, RateLimit};
use tokio::net::TcpListener;

use crate::config::{GatekeeperConfig, LimitsConfig};
use crate::observability::metrics::Metrics;
use crate::server::admission::Gate;
use crate::server::client_address::{ProxyTrust, client_address};
use crate::server::connections::Connections;
use crate::server::extract::require_json;
use crate::server::front_door::{check_request_target, client_ip};
use crate::startup::application::{
    ADMIN_BODY_BYTES, authenticator, edge_stack, method_not_allowed, metrics_with, rate_limit_store_for,
};
use crate::startup::listeners::{Served, bind_admin, serve_together};
use crate::wire::admin_plane::{Plane, is_admin_plane, is_unthrottled_here};
use crate::wire::consistency::{CONSISTENCY_HEADER, READ_FROM_HEADER};
use crate::wire::error::{ApiError, Code};
use crate::wire::routed_epoch::{EPOCH_HEADER, POSITION_HEADER};

/// How long a tenant's limit reported by the backend is remembered.
const LEARNED_LIMIT_TTL: Duration = Duration::from_secs(60);

/// State of the standalone gatekeeper.
#[derive(Debug)]
pub struct Front {
    gate: Gate,
    key: InternalKey,
    upstream: String,
    client: reqwest::Client,
    learned: moka::sync::Cache<String, RateLimit>,
    limits: LimitsConfig,
    metrics: Metrics,
}

/// A built gatekeeper with its listener bound.
#[derive(Debug)]
pub struct Gatekeeper {
    listener: TcpListener,
    router: Router,
    tls: Option<crate::server::tls::ServerTls>,
    /// The admin listener (`admin.listen`): the gatekeeper's own metrics and probes.
    admin: Option<Served>,
    connections: Connections,
}

impl Gatekeeper {
    /// Checks the configuration, builds the state and binds `config.listen`.
    pub async fn build(config: GatekeeperConfig) -> anyhow::Result<Self> {
        let upstream = config.upstream.clone().ok_or_else(|| {
            anyhow::anyhow!("the gatekeeper needs --upstream (or `upstream`): the trusted backend's URL")
        })?;
        let upstream = upstream.trim_end_matches('/').to_owned();
        reqwest::Url::parse(&upstream).map_err(|e| anyhow::anyhow!("upstream {upstream:?} is not a URL: {e}"))?;
        let secret = config.internal.secret.clone().ok_or_else(|| {
            anyhow::anyhow!(
                "the gatekeeper needs internal.secret (SHARDGATE_INTERNAL__SECRET), shared with the backend"
            )
        })?;
        let key = InternalKey::new(secret)?;
        crate::observability::telemetry::start_traces(&config.log, &config.telemetry, &config.trusted_proxies)?;
        // As the gateway does: start with the identity providers' key sets when they answer.
        let (auth, key_sets) = authenticator(&config.auth, &config.data_dir).await?;
        let proxies = ProxyTrust::new(config.trusted_proxies.clone(), config.proxy_protocol, config.forwarded_header)?;
        let (metrics, (gate, connections, tls_reloads)) = metrics_with(|registry| {
            let connections = Connections::new(&config.limits, registry).map(|c| c.trusting(proxies));
            let tls_reloads = crate::server::tls::ReloadCounts::new(registry);
            registry.register_collector(Box::new(crate::observability::metrics::KeySetMetrics(key_sets)));
            let gate = rate_limit_store_for(&config.rate_limits, None, None)
                .map_err(anyhow::Error::from)
                .and_then(|shared| Ok(Limiter::new(config.rate_limits.clone(), shared)?))
                .map(|limiter| Gate::new(auth, limiter, registry));
            (gate, connections, tls_reloads)
        });
        let (gate, connections) = (gate?, connections?);
        let tls =
            crate::server::tls::acceptor(config.tls.as_ref(), crate::server::tls::Listener::Gatekeeper, &tls_reloads)?;
        let mut client = reqwest::Client::builder();
        if let Some(path) = &config.upstream_ca_file {
            if !upstream.starts_with("https://") {
                anyhow::bail!(
                    "upstream_ca_file is set but upstream is not https://: use an https:// upstream, or remove upstream_ca_file"
                );
            }
            client = client.add_root_certificate(upstream_ca(path)?);
        }
        let client = client
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(2))
            // Under the backend's default `limits.keep_alive_idle_timeout` (60 s), so an idle
            // pooled connection is dropped here before the backend closes it under a request.
            .pool_idle_timeout(Duration::from_secs(30))
            .build()?;
        let front = Arc::new(Front {
            gate,
            key,
            upstream,
            client,
            learned: moka::sync::Cache::builder().max_capacity(100_000).time_to_live(LEARNED_LIMIT_TTL).build(),
            limits: config.limits.clone(),
            metrics,
        });
        let probes = Router::new()
            .route("/healthz", axum::routing::get(crate::routes::ops::healthz))
            .route("/readyz", axum::routing::get(readyz))
            .method_not_allowed_fallback(method_not_allowed);
        let metrics = Router::new().route("/metrics", axum::routing::get(serve_metrics));
        let listener = TcpListener::bind(config.listen)
            .await
            .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", config.listen))?;
        let admin_listener = bind_admin(&config.admin, &tls_reloads).await?;
        let valet_origins = crate::config::ValetConfig::default().cors_allowed_origins;
        let edge = || crate::server::edge::EdgeLayer::new(config.limits.max_concurrent_requests, None);
        let Some((admin_listener, admin_tls)) = admin_listener else {
            let routes = probes.merge(metrics).fallback(forward);
            let router = routes.layer(edge_stack(edge(), &config.cors, &valet_origins)?).with_state(front);
            return Ok(Self { listener, router, tls, admin: None, connections });
        };
        // Each listener marked with its plane, outermost: the edge and `forward` read it.
        let public = probes.clone().fallback(forward);
        let router =
            public.layer(edge_stack(edge(), &config.cors, &valet_origins)?).layer(axum::Extension(Plane::Public));
        let admin = probes.merge(metrics).fallback(crate::startup::application::not_found);
        let admin = admin.layer(edge_stack(edge(), &config.cors, &valet_origins)?).layer(axum::Extension(Plane::Admin));
        let admin = Some((admin_listener, admin.with_state(front.clone()), admin_tls));
        Ok(Self { listener, router: router.with_state(front), tls, admin, connections })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr().unwrap_or_else(|_| SocketAddr::from(([127, 0, 0, 1], 0)))
    }

    /// `http://<address>`, or `https://<address>` with `tls`.
    pub fn base_url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.local_addr())
    }

    /// The admin listener's `http(s)://<address>`, if it has one (`admin.listen`).
    pub fn admin_base_url(&self) -> Option<String> {
        let (listener, _, tls) = self.admin.as_ref()?;
        crate::startup::listeners::base_url(listener, tls.as_ref())
    }

    /// Serves until `shutdown` completes (then drains, as the gateway does).
    pub async fn run_until(self, shutdown: impl Future<Output = ()> + Send + 'static) -> anyhow::Result<()> {
        let main = (self.listener, self.router, self.tls);
        serve_together(&self.connections, main, self.admin.into_iter().collect(), shutdown).await
    }
}

/// The CA certificate of `upstream_ca_file`, read and checked.
fn upstream_ca(path: &std::path::Path) -> anyhow::Result<reqwest::Certificate> {
    let pem =
        std::fs::read(path).map_err(|e| anyhow::anyhow!("upstream_ca_file: cannot read {}: {e}", path.display()))?;
    if !pem.windows(27).any(|w| w == b"-----BEGIN CERTIFICATE-----") {
        anyhow::bail!("upstream_ca_file: {} holds no PEM certificate (-----BEGIN CERTIFICATE-----)", path.display());
    }
    reqwest::Certificate::from_pem(&pem)
        .map_err(|e| anyhow::anyhow!("upstream_ca_file: {} is not a PEM certificate: {e}", path.display()))
}

/// The standalone gatekeeper's own readiness body, while it cannot verify an issuer's tokens.
#[derive(Debug, serde::Serialize)]
struct GatekeeperReadiness {
    /// `not_ready`: an issuer whose keys are fetched has no key set here yet.
    status: &'static str,
    /// Each fetched key set, by issuer (as in the gateway's `/readyz`).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    key_sets: std::collections::BTreeMap<String, crate::routes::ops::KeySetReadiness>,
}

/// Readiness: 503 from the gatekeeper itself while an issuer whose keys are fetched from its
/// identity provider has no key set here yet (none of its tokens could pass); otherwise the
/// backend's own readiness, forwarded (the gatekeeper is ready to serve when what it forwards
/// to is).
async fn readyz(State(front): State<Arc<Front>>, request: Request) -> Response {
    let (key_sets, all_fetched) = crate::routes::ops::key_sets(&front.gate.auth);
    if all_fetched {
        return forward(State(front), request).await;
    }
    let body = GatekeeperReadiness { status: "not_ready", key_sets };
    (StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response()
}

async fn serve_metrics(State(front): State<Arc<Front>>, headers: axum::http::HeaderMap) -> Response {
    front.metrics.response(headers.get(axum::http::header::ACCEPT))
}

/// Headers that belong to one connection, never forwarded (RFC 9110 §7.6.1), plus what the
/// gatekeeper replaces: the client's `Authorization` (the backend trusts the internal credential
/// instead) and any internal header a client tried to smuggle in. The headers of reads from
/// standbys (`x-shardgate-consistency`, `x-shardgate-position`, `x-shardgate-read-from`) are the
/// client's, and pass both ways.
fn forwardable(name: &HeaderName) -> bool {
    !matches!(
        name.as_str(),
        "connection"
            | "keep-alive"
            | "proxy-connection"
            | "proxy-authenticate"
            | "proxy-authorization"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
            | "host"
            | "authorization"
            | "content-length"
    ) && (!name.as_str().starts_with("x-shardgate-") || CLIENT_HEADERS.contains(name))
}

/// The `x-shardgate-` headers that are the client's own (reads from standbys).
const CLIENT_HEADERS: [HeaderName; 3] = [CONSISTENCY_HEADER, POSITION_HEADER, READ_FROM_HEADER];

/// Checks the caller against the route's access rule, as the backend's handlers would: 401
/// without a valid token, 403 `missing_tenant_claim` for a token bound to no tenant on a tenant's
/// path, 404 `tenant_not_found` for another tenant's path, 403 without the scope.
fn authorize(
    rule: &Access,
    authenticated: Option<&Result<Arc<shardgate_gatekeeper::Principal>, AuthError>>,
) -> Result<(), ApiError> {
    if *rule == Access::Open {
        return Ok(());
    }
    let principal = match authenticated {
        Some(Ok(principal)) => principal,
        Some(Err(e)) => return Err(ApiError::from(e.clone())),
        None => return Err(ApiError::from(AuthError::Missing)),
    };
    match rule {
        Access::Open | Access::Authenticated => Ok(()),
        Access::Admin if principal.scopes.contains(shardgate_gatekeeper::Scope::Admin) => Ok(()),
        Access::Admin => Err(ApiError::insufficient_scope("admin")),
        Access::Tenant { tenant, .. } if principal.tenant.is_none() => {
            Err(ApiError::missing_tenant_claim(shardgate_shard_router::TenantId::parse(tenant).ok().as_ref()))
        }
        Access::Tenant { tenant, .. } if !principal.is_bound_to(tenant) => Err(ApiError::tenant_not_found()),
        Access::Tenant { scope, .. } if !principal.scopes.contains(*scope) => {
            Err(ApiError::insufficient_scope(scope.as_str()))
        }
        Access::Tenant { .. } => Ok(()),
    }
}

async fn forward(State(front): State<Arc<Front>>, request: Request) -> Response {
    match admit_and_forward(&front, request).await {
        Ok(response) => response,
        Err(response) => response,
    }
}

async fn admit_and_forward(front: &Front, request: Request) -> Result<Response, Response> {
    let path = request.uri().path().to_owned();
    check_request_target(request.uri()).map_err(IntoResponse::into_response)?;
    // The admin plane, when it has a listener of its own: a path this listener does not know.
    let hidden = Plane::of(request.extensions()) == Some(Plane::Public) && is_admin_plane(&path);
    let rule = match hidden {
        false => access(request.method().as_str(), &path),
        true if path.starts_with("/v1/") => Access::Authenticated,
        true => Access::Open,
    };
    let throttled = !is_unthrottled_here(&path, request.extensions());
    let authenticated = front.gate.authenticate(request.headers()).await;
    let admission = if throttled {
        front.gate.admit(authenticated.as_ref(), client_ip(&request), |tenant| front.learned.get(tenant)).await?
    } else {
        None
    };
    authorize(&rule, authenticated.as_ref()).map_err(IntoResponse::into_response)?;
    if hidden {
        // Never forwarded: answered as the backend answers a path it does not know.
        let mut response = ApiError::from(Code::NotFound).into_response();
        if let Some(admission) = admission {
            admission.report(response.headers_mut());
        }
        return Ok(response);
    }
    let admin = rule == Access::Admin;
    // Blob bodies stream through (the backend enforces the tenant's size limit); others are read
    // up to their route's limit first.
    let streamed = is_transfer(&path);
    let body_limit = if admin { ADMIN_BODY_BYTES } else { front.limits.max_record_bytes };
    if request.method() == axum::http::Method::PUT && path.contains("/records/") {
        require_json(request.headers()).map_err(IntoResponse::into_response)?;
    }
    let deadline = match (admin, streamed) {
        (true, _) => front.limits.admin_timeout,
        (false, true) => front.limits.transfer_timeout,
        (false, false) => front.limits.request_timeout,
    };
    let principal = match &authenticated {
        Some(Ok(principal)) => Some(principal.clone()),
        _ => None,
    };
    let body_limit = (!streamed).then_some(body_limit);
    let mut response = match tokio::time::timeout(deadline, send(front, request, principal, body_limit)).await {
        Ok(result) => result?,
        Err(_) => {
            return Err(ApiError::from(Code::RequestTimeout).into_response());
        }
    };
    if let Some(admission) = admission {
        admission.report(response.headers_mut());
    }
    Ok(response)
}

/// Reads the body (up to `body_limit`), signs and sends the request upstream, and streams the
/// answer back.
async fn send(
    front: &Front,
    request: Request,
    principal: Option<Arc<shardgate_gatekeeper::Principal>>,
    body_limit: Option<usize>,
) -> Result<Response, Response> {
    let (parts, body) = request.into_parts();
    let body = match body_limit {
        None => reqwest::Body::wrap_stream(body.into_data_stream()),
        Some(limit) => {
            if parts
                .headers
                .get(header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok()?.parse::<usize>().ok())
                .is_some_and(|length| length > limit)
            {
                return Err(ApiError::payload_too_large().into_response());
            }
            let bytes =
                axum::body::to_bytes(body, limit).await.map_err(|_| ApiError::payload_too_large().into_response())?;
            reqwest::Body::from(bytes)
        }
    };
    let path_and_query = parts.uri.path_and_query().map_or("/", |pq| pq.as_str());
    let client = client_address(&parts.extensions);
    let signed = front.key.sign(parts.method.as_str(), path_and_query, principal.as_deref(), Some(client));
    let mut headers = HeaderMap::with_capacity(parts.headers.len() + 4);
    for (name, value) in &parts.headers {
        if forwardable(name) {
            headers.append(name.clone(), value.clone());
        }
    }
    for (name, value) in [
        (internal::PRINCIPAL_HEADER, Some(signed.principal)),
        (internal::CLIENT_HEADER, signed.client),
        (internal::TIMESTAMP_HEADER, Some(signed.timestamp)),
        (internal::SIGNATURE_HEADER, Some(signed.signature)),
    ] {
        if let Some(value) = value
            && let Ok(value) = HeaderValue::from_str(&value)
        {
            headers.insert(HeaderName::from_static(name), value);
        }
    }
    let url = format!("{}{path_and_query}", front.upstream);
    // With traces on, the backend's request is a child of this gatekeeper's own span (the
    // caller's context, if trusted, is this span's parent already); off, the headers pass as sent.
    let forwarding = tracing::trace_span!("gatekeeper.forward", "otel.kind" = "client");
    if let Some(traces) = crate::observability::telemetry::traces() {
        headers.remove(crate::observability::telemetry::TRACESTATE);
        traces.inject(&forwarding, &mut headers);
    }
    let sent = front.client.request(parts.method, url).headers(headers).body(body).send();
    let upstream = tracing::Instrument::instrument(sent, forwarding).await.map_err(|e| {
        tracing::warn!(error = %e, "upstream unavailable");
        ApiError::upstream_unavailable().into_response()
    })?;
    let principal_tenant = principal.as_ref().and_then(|p| p.tenant.clone());
    let mut response = Response::builder().status(upstream.status());
    for (name, value) in upstream.headers() {
        if name.as_str() == internal::RATE_LIMIT_HEADER {
            if let (Some(tenant), Some(limit)) = (&principal_tenant, parse_limit(value)) {
                front.learned.insert(tenant.clone(), limit);
            }
            continue;
        }
        // CORS is the gatekeeper's own policy (its edge layers add it); the backend's is dropped.
        // The routed epoch is the one internal header meant for the client.
        let cors = name == header::VARY || name.as_str().starts_with("access-control-");
        let client_header = forwardable(name) || name == header::CONTENT_LENGTH || name == EPOCH_HEADER;
        if client_header && !cors && name != header::DATE {
            response = response.header(name, value);
        }
    }
    response.body(Body::from_stream(upstream.bytes_stream())).map_err(|e| ApiError::internal(&e).into_response())
}

/// Whether a path moves blob bytes (streamed, with the transfer deadline).
fn is_transfer(path: &str) -> bool {
    path.starts_with("/valet/") || (path.starts_with("/v1/tenants/") && path.contains("/blobs/"))
}

fn parse_limit(value: &HeaderValue) -> Option<RateLimit> {
    let (per_second, burst) = value.to_str().ok()?.split_once(' ')?;
    RateLimit { per_second: per_second.parse().ok()?, burst: burst.parse().ok()? }.validate().ok()
}
