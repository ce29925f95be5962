//! Extractors whose rejections are problem+json, and the caller's identity.

use std::sync::Arc;

use axum::extract::{FromRequest, FromRequestParts};
use axum::http::header;
use axum::http::request::Parts;
use shardgate_gatekeeper::{Principal, Scope};
use shardgate_shard_router::storage::replicas::Consistency;
use shardgate_shard_router::{Incarnation, TenantId};

use crate::app::App;
use crate::server::admission::Authenticated;
use crate::wire::consistency::{Asked, read_consistency};
use crate::wire::error::{ApiError, Code, invalid_path};

/// `axum::extract::Path` with problem+json rejections.
#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(ApiError))]
pub struct ApiPath<T>(pub T);

/// `axum::extract::Query` with problem+json rejections. Percent-encoded bytes that are not UTF-8
/// are refused (400 `invalid_query`) instead of being replaced by U+FFFD, so two different raw
/// values never become the same key.
#[derive(Debug)]
pub struct ApiQuery<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiQuery<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let raw = parts.uri.query().unwrap_or_default();
        let valid = raw
            .split('&')
            .flat_map(|pair| pair.split('='))
            .all(|part| percent_encoding::percent_decode_str(part).decode_utf8().is_ok());
        if !valid {
            return Err(ApiError::new(Code::InvalidQuery, "query parameters must be percent-encoded UTF-8"));
        }
        let axum::extract::Query(value) = axum::extract::Query::<T>::try_from_uri(&parts.uri)?;
        Ok(Self(value))
    }
}

/// A JSON request body (`Content-Type: application/json`, else 415 `unsupported_media_type`),
/// deserialized into `T`. Its refusals are the gateway's own sentences, naming the field at
/// fault (400 `invalid_json` for a body that is not JSON, 400 `invalid_body` for one that is
/// not what the operation takes; [`crate::wire::error::json_body_problem`]).
#[derive(Debug)]
pub struct ApiJson<T>(pub T);

impl<T, S> FromRequest<S> for ApiJson<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: axum::extract::Request, state: &S) -> Result<Self, Self::Rejection> {
        require_json(request.headers())?;
        let body = axum::body::Bytes::from_request(request, state).await?;
        // Every body the API takes is an object (serde would also read a struct from an array).
        let first = body.iter().find(|b| !b.is_ascii_whitespace());
        if first.is_some_and(|b| *b != b'{') {
            let json = serde_json::from_slice::<serde::de::IgnoredAny>(&body);
            return Err(match json {
                Err(e) => crate::wire::error::json_body_problem(".", &e),
                Ok(_) => ApiError::new(Code::InvalidBody, "the body must be a JSON object"),
            });
        }
        let mut deserializer = serde_json::Deserializer::from_slice(&body);
        let value = serde_path_to_error::deserialize(&mut deserializer)
            .map_err(|e| crate::wire::error::json_body_problem(&e.path().to_string(), e.inner()))?;
        deserializer.end().map_err(|e| crate::wire::error::json_body_problem(".", &e))?;
        Ok(Self(value))
    }
}

/// Refuses a body that is not declared JSON in UTF-8 (see
/// [`shardgate_gatekeeper::request::is_json_media_type`]): 415 `unsupported_media_type`.
pub fn require_json(headers: &axum::http::HeaderMap) -> Result<(), ApiError> {
    let declared = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
    if declared.is_some_and(shardgate_gatekeeper::request::is_json_media_type) {
        return Ok(());
    }
    Err(ApiError::new(
        Code::UnsupportedMediaType,
        "the body must be sent with `Content-Type: application/json` (JSON in UTF-8; `; charset=utf-8` may be added): \
         no other charset, and no other media type, `application/merge-patch+json` and other `+json` types included",
    ))
}

/// The verified caller. Extracting it authenticates the request (401 otherwise).
#[derive(Debug, Clone)]
pub struct Caller(pub std::sync::Arc<Principal>);

/// How fresh a read must be, as its headers ask (`x-shardgate-consistency`,
/// `x-shardgate-position`: [`crate::wire::consistency`]); 400 `invalid_header` for a malformed
/// one. [`ReadConsistency::of`] applies the collection's default.
#[derive(Debug)]
pub struct ReadConsistency(Asked);

impl ReadConsistency {
    /// What a read of `collection` must be: as the request said, else as
    /// `storage.replica_reads.collections` says of it, else strong.
    pub fn of(self, app: &App, collection: &str) -> Consistency {
        self.0.or_default(app.router.replica_reads().bound_of(collection))
    }
}

impl FromRequestParts<Arc<App>> for ReadConsistency {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &Arc<App>) -> Result<Self, Self::Rejection> {
        let config = app.router.replica_reads();
        read_consistency(&parts.headers, config.max_lag, !config.collections.is_empty()).map(ReadConsistency)
    }
}

impl FromRequestParts<Arc<App>> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &Arc<App>) -> Result<Self, Self::Rejection> {
        // The front door verified the token already; verify here only when it did not run.
        if let Some(Authenticated(result)) = parts.extensions.get::<Authenticated>() {
            return Ok(Caller(result.clone()?));
        }
        let header = parts.headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
        let principal = shardgate_shard_router::in_trace_span!(
            tracing::trace_span!("authenticate"),
            app.gate.auth.verify_header(header)
        )?;
        Ok(Caller(principal))
    }
}

impl Caller {
    /// Binds the request to `tenant` (from the path) and checks `scope`; returns the tenant and
    /// the incarnation the token was accepted for. A token of another tenant gets 404
    /// `tenant_not_found`, exactly like a tenant that does not exist (this instance's map is
    /// checked against the catalog once before saying so). A token issued before the tenant
    /// was created (its `iat` in an earlier second than the creation), or without an `iat`,
    /// gets 401 `token_predates_tenant`: a tenant deleted and created again is a new tenant, and
    /// the old one's tokens do not reach it. Then a missing scope is 403. A token bound to no
    /// tenant at all (an admin token) gets 403 `missing_tenant_claim`: it says nothing about
    /// which tenants exist.
    pub async fn bound_tenant(
        &self,
        app: &App,
        tenant: &str,
        scope: Scope,
    ) -> Result<(TenantId, Incarnation), ApiError> {
        if self.0.tenant.is_none() {
            return Err(ApiError::missing_tenant_claim(TenantId::parse(tenant).ok().as_ref()));
        }
        if !self.0.is_bound_to(tenant) {
            return Err(ApiError::tenant_not_found());
        }
        let tenant = TenantId::parse(tenant).map_err(invalid_path)?;
        let incarnation = app.router.incarnation(&tenant).await?;
        match self.0.issued_at {
            None => {
                return Err(ApiError::token_predates_tenant(
                    "the token has no `iat` claim: a token bound to a tenant must say when it was issued",
                ));
            }
            Some(iat) if !incarnation.admits_token_issued_at(iat) => {
                return Err(ApiError::token_predates_tenant(format!(
                    "the token was issued before tenant {tenant} was created (a deleted tenant's tokens do not \
                     reach a new tenant of the same id): get a new token"
                )));
            }
            Some(_) => {}
        }
        if !self.0.scopes.contains(scope) {
            return Err(ApiError::insufficient_scope(scope.as_str()));
        }
        tracing::Span::current().record("tenant", tenant.as_str());
        Ok((tenant, incarnation))
    }

    /// Requires the platform `admin` scope.
    pub fn require_admin(&self) -> Result<(), ApiError> {
        if self.0.scopes.contains(Scope::Admin) { Ok(()) } else { Err(ApiError::insufficient_scope("admin")) }
    }
}

/// The scope a tenant route needs, as a type (a parameter of [`Bound`]).
pub trait NeedsScope: Send + Sync {
    /// The scope.
    const SCOPE: Scope;
}

/// The `read` scope.
#[derive(Debug)]
pub struct Read;
/// The `write` scope.
#[derive(Debug)]
pub struct Write;
/// The `manage` scope.
#[derive(Debug)]
pub struct Manage;

impl NeedsScope for Read {
    const SCOPE: Scope = Scope::Read;
}
impl NeedsScope for Write {
    const SCOPE: Scope = Scope::Write;
}
impl NeedsScope for Manage {
    const SCOPE: Scope = Scope::Manage;
}

/// A path under `/v1/tenants/{tenant}`: it names the tenant.
pub trait TenantPath: serde::de::DeserializeOwned + Send {
    /// The `{tenant}` segment, as sent.
    fn tenant(&self) -> &str;
}

/// A tenant's request: the verified caller, bound to the tenant its path `P` names with the
/// scope `S` ([`Caller::bound_tenant`]), the path, what else the operation reads of the request
/// (`I`: its query as an [`ApiQuery`], its body as an [`ApiJson`], or `()` for neither) and the
/// application state. Extracting it runs the checks in the order every tenant route has: the
/// token (401), the path's syntax (400 `invalid_path`), the query's or the body's (400), then
/// the binding to the tenant and the scope.
#[derive(Debug)]
pub struct Bound<P, S, I = ()> {
    /// The application state.
    pub app: Arc<App>,
    /// The verified caller.
    pub caller: Caller,
    /// The tenant the path names, which the caller is bound to.
    pub tenant: TenantId,
    /// The incarnation of the tenant the token was accepted for.
    pub incarnation: Incarnation,
    /// The path, as sent.
    pub path: P,
    /// The query or the body.
    pub input: I,
    scope: std::marker::PhantomData<S>,
}

impl<P: TenantPath, S: NeedsScope, I> Bound<P, S, I> {
    /// Binds `caller` to the tenant `path` names, once the request has been read.
    async fn bind(app: &Arc<App>, caller: Caller, path: P, input: I) -> Result<Self, ApiError> {
        let (tenant, incarnation) = caller.bound_tenant(app, path.tenant(), S::SCOPE).await?;
        Ok(Self { app: app.clone(), caller, tenant, incarnation, path, input, scope: std::marker::PhantomData })
    }
}

impl<P, S, I> FromRequestParts<Arc<App>> for Bound<P, S, I>
where
    P: TenantPath,
    S: NeedsScope,
    I: FromRequestParts<Arc<App>> + Send,
    ApiError: From<I::Rejection>,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &Arc<App>) -> Result<Self, Self::Rejection> {
        let caller = Caller::from_request_parts(parts, app).await?;
        let ApiPath(path) = ApiPath::<P>::from_request_parts(parts, app).await?;
        let input = I::from_request_parts(parts, app).await?;
        Self::bind(app, caller, path, input).await
    }
}

impl<P, S, B> FromRequest<Arc<App>> for Bound<P, S, ApiJson<B>>
where
    P: TenantPath,
    S: NeedsScope,
    B: serde::de::DeserializeOwned + Send,
{
    type Rejection = ApiError;

    async fn from_request(request: axum::extract::Request, app: &Arc<App>) -> Result<Self, Self::Rejection> {
        let (mut parts, body) = request.into_parts();
        let caller = Caller::from_request_parts(&mut parts, app).await?;
        let ApiPath(path) = ApiPath::<P>::from_request_parts(&mut parts, app).await?;
        let input = ApiJson::from_request(axum::extract::Request::from_parts(parts, body), app).await?;
        Self::bind(app, caller, path, input).await
    }
}

/// An admin request: a verified caller with the platform `admin` scope (403 otherwise), the
/// application state and the request id (for the audit log). Extracting it is the scope check,
/// so an admin handler cannot forget it.
#[derive(Debug)]
pub struct Admin {
    /// The application state.
    pub app: Arc<App>,
    /// The verified caller.
    pub caller: Caller,
    /// The request's id.
    pub request: RequestIdHeader,
}

impl FromRequestParts<Arc<App>> for Admin {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &Arc<App>) -> Result<Self, Self::Rejection> {
        let caller = Caller::from_request_parts(parts, app).await?;
        caller.require_admin()?;
        let Ok(request) = RequestIdHeader::from_request_parts(parts, app).await;
        Ok(Self { app: app.clone(), caller, request })
    }
}

/// The request's ids as the edge gave them ([`crate::server::edge::RequestIds`]): the server's
/// own, which the audit log keeps as the request id, and the client's `x-request-id`, kept beside
/// it (a client may send any id, another request's too); and its client's address
/// ([`crate::server::client_address`]), which the audit log keeps too.
#[derive(Debug, Clone)]
pub struct RequestIdHeader {
    /// The server's own id (the response's `x-request-id`).
    pub id: String,
    /// The `x-request-id` the client sent, if it sent a valid one.
    pub client: Option<String>,
    /// The client's address.
    pub client_address: String,
}

impl<S: Send + Sync> FromRequestParts<S> for RequestIdHeader {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let (id, client) = crate::server::edge::RequestIds::of(&parts.extensions);
        let client_address = crate::server::client_address::client_address(&parts.extensions).to_string();
        Ok(Self { id, client, client_address })
    }
}

impl Caller {
    /// The audit record of an admin action by this caller.
    pub fn audit(
        &self,
        request: &RequestIdHeader,
        action: &'static str,
        tenant: Option<&str>,
        target: String,
    ) -> shardgate_shard_router::catalog::Audit {
        shardgate_shard_router::catalog::Audit {
            actor: if self.0.subject.is_empty() {
                format!("{}:(no sub)", self.0.issuer)
            } else {
                self.0.subject.clone()
            },
            tenant: tenant.map(str::to_owned),
            action,
            target,
            request_id: request.id.clone(),
            client_request_id: request.client.clone(),
            client_address: Some(request.client_address.clone()),
        }
    }
}
