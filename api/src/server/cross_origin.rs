//! CORS as configured: the API's origins (`cors.allowed_origins`, none by default: no grant) and,
//! for `/valet/...`, the valet endpoint's (`valet.cors_allowed_origins`, any by default).
//! Browsers may send `Range` and `Content-Type` and read `ETag`, `Content-Range`,
//! `x-shardgate-epoch` and the like; credentials (cookies) are never allowed.
//!
//! tower-http's [`Cors`] decides. A request that is no CORS request at all (no `Origin`, not
//! `OPTIONS`: every server-to-server call) gets the headers `Cors` gives such a request, `Vary`
//! and `Access-Control-Expose-Headers`, read once from `Cors` itself when the layer is built and
//! added as they are, without `Cors` building them again for every response.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Response, header};
use futures::FutureExt;
use tower::{Layer, Service, ServiceExt};
use tower_http::cors::{AllowOrigin, Cors, CorsLayer};

use crate::config::CorsConfig;

/// Origins of one CORS policy: any, or a list.
#[derive(Debug, Clone)]
enum Origins {
    Any,
    List(Vec<HeaderValue>),
}

impl Origins {
    fn parse(list: &[String], key: &str) -> anyhow::Result<Self> {
        if list.iter().any(|o| o == "*") {
            return Ok(Origins::Any);
        }
        let values = list
            .iter()
            .map(|o| HeaderValue::from_str(o).map_err(|_| anyhow::anyhow!("{key}: {o:?} is not a valid origin")))
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(Origins::List(values))
    }

    fn allows(&self, origin: &HeaderValue) -> bool {
        match self {
            Origins::Any => true,
            Origins::List(list) => list.contains(origin),
        }
    }
}

/// tower-http's CORS layer with the policy of `config` and `valet_origins`.
fn cors_layer(config: &CorsConfig, valet_origins: &[String]) -> anyhow::Result<CorsLayer> {
    let api = Origins::parse(&config.allowed_origins, "cors.allowed_origins")?;
    let valet = Origins::parse(valet_origins, "valet.cors_allowed_origins")?;
    let origins = AllowOrigin::predicate(move |origin, request| {
        if request.uri.path().starts_with("/valet/") { valet.allows(origin) } else { api.allows(origin) }
    });
    Ok(CorsLayer::new()
        .allow_origin(origins)
        .allow_methods([Method::GET, Method::HEAD, Method::PUT, Method::POST, Method::PATCH, Method::DELETE])
        .allow_headers([
            header::AUTHORIZATION,
            header::CONTENT_TYPE,
            header::IF_MATCH,
            header::IF_NONE_MATCH,
            header::RANGE,
            header::IF_RANGE,
            crate::wire::consistency::CONSISTENCY_HEADER,
            crate::wire::routed_epoch::POSITION_HEADER,
        ])
        .expose_headers([
            header::ETAG,
            header::LOCATION,
            header::RETRY_AFTER,
            header::CONTENT_RANGE,
            header::CONTENT_LENGTH,
            header::ACCEPT_RANGES,
            header::CONTENT_DISPOSITION,
            HeaderName::from_static("x-request-id"),
            crate::wire::routed_epoch::EPOCH_HEADER,
            crate::wire::routed_epoch::POSITION_HEADER,
            crate::wire::consistency::READ_FROM_HEADER,
        ])
        .max_age(config.max_age))
}

/// The headers `Cors` adds to the response to a request that is no CORS request: `vary`
/// appended to the response's own, the others set.
#[derive(Debug)]
struct NoCorsHeaders {
    vary: Option<HeaderValue>,
    set: Vec<(HeaderName, HeaderValue)>,
}

impl NoCorsHeaders {
    /// What `cors` adds to the response to a `GET` without `Origin`, by asking it.
    fn of(cors: &CorsLayer) -> Self {
        let answer = |_: Request<()>| async { Ok::<_, Infallible>(Response::new(())) };
        let request = Request::get("/").body(()).expect("a GET of / is a valid request");
        let response = cors
            .layer(tower::service_fn(answer))
            .oneshot(request)
            .now_or_never()
            .expect("CORS answers a request without an origin at once")
            .unwrap_or_else(|never| match never {});
        let mut headers = response.into_parts().0.headers;
        let vary = headers.remove(header::VARY);
        let set = headers.into_iter().filter_map(|(name, value)| Some((name?, value))).collect();
        Self { vary, set }
    }

    fn add_to(&self, headers: &mut HeaderMap) {
        if let Some(vary) = &self.vary {
            headers.append(header::VARY, vary.clone());
        }
        for (name, value) in &self.set {
            headers.insert(name.clone(), value.clone());
        }
    }
}

/// The CORS layer of every front ([`crate::server`]'s stage 3).
#[derive(Debug, Clone)]
pub struct CrossOriginLayer {
    cors: CorsLayer,
    no_cors: Arc<NoCorsHeaders>,
}

impl CrossOriginLayer {
    /// The policy of `config` for the API and `valet_origins` for `/valet/...`; an origin that is
    /// not a valid header value is refused, naming its key.
    pub fn new(config: &CorsConfig, valet_origins: &[String]) -> anyhow::Result<Self> {
        let cors = cors_layer(config, valet_origins)?;
        let no_cors = Arc::new(NoCorsHeaders::of(&cors));
        Ok(Self { cors, no_cors })
    }
}

impl<S> Layer<S> for CrossOriginLayer {
    type Service = CrossOrigin<S>;

    fn layer(&self, inner: S) -> Self::Service {
        CrossOrigin { cors: self.cors.layer(inner), no_cors: self.no_cors.clone() }
    }
}

/// See [`CrossOriginLayer`].
#[derive(Debug, Clone)]
pub struct CrossOrigin<S> {
    cors: Cors<S>,
    no_cors: Arc<NoCorsHeaders>,
}

impl<S, B, R> Service<Request<B>> for CrossOrigin<S>
where
    S: Service<Request<B>, Response = Response<R>>,
    R: Default,
{
    type Response = Response<R>;
    type Error = S::Error;
    type Future = CrossOriginFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.cors.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        if request.method() != Method::OPTIONS && !request.headers().contains_key(header::ORIGIN) {
            let answer = self.cors.get_mut().call(request);
            return CrossOriginFuture::NoCors { answer, headers: self.no_cors.clone() };
        }
        CrossOriginFuture::Cors { answer: self.cors.call(request) }
    }
}

pin_project_lite::pin_project! {
    /// The response of [`CrossOrigin`].
    #[project = CrossOriginProj]
    pub enum CrossOriginFuture<F> {
        /// Through tower-http's CORS.
        Cors { #[pin] answer: tower_http::cors::ResponseFuture<F> },
        /// No CORS request: the inner answer with [`NoCorsHeaders`].
        NoCors { #[pin] answer: F, headers: Arc<NoCorsHeaders> },
    }
}

impl<F, R, E> Future for CrossOriginFuture<F>
where
    F: Future<Output = Result<Response<R>, E>>,
    R: Default,
{
    type Output = Result<Response<R>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            CrossOriginProj::Cors { answer } => answer.poll(cx),
            CrossOriginProj::NoCors { answer, headers } => {
                let mut response = ready!(answer.poll(cx))?;
                headers.add_to(response.headers_mut());
                Poll::Ready(Ok(response))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(origins: &[&str]) -> CorsConfig {
        CorsConfig { allowed_origins: origins.iter().map(|o| (*o).to_owned()).collect(), ..CorsConfig::default() }
    }

    /// The headers of the response `layer` gives to `request`, the inner answer carrying its own
    /// `Vary` and `ETag`.
    fn answered<L>(layer: &L, request: Request<()>) -> HeaderMap
    where
        L: Layer<tower::util::ServiceFn<fn(Request<()>) -> std::future::Ready<Result<Response<()>, Infallible>>>>,
        L::Service: Service<Request<()>, Response = Response<()>, Error = Infallible>,
    {
        fn inner(_: Request<()>) -> std::future::Ready<Result<Response<()>, Infallible>> {
            let mut response = Response::new(());
            response.headers_mut().insert(header::VARY, HeaderValue::from_static("accept-encoding"));
            response.headers_mut().insert(header::ETAG, HeaderValue::from_static("\"7\""));
            std::future::ready(Ok(response))
        }
        let service = layer.layer(tower::service_fn(inner as fn(_) -> _));
        let response = service.oneshot(request).now_or_never().expect("answered at once");
        response.unwrap_or_else(|never| match never {}).into_parts().0.headers
    }

    #[test]
    fn every_request_gets_the_headers_tower_http_would_give_it() {
        let requests = || {
            [
                Request::get("/v1/tenants/acme/collections/c/records/k").body(()),
                Request::put("/valet/acme/f?sg-sig=x").body(()),
                Request::get("/v1/tenants/acme").header(header::ORIGIN, "https://app.example").body(()),
                Request::get("/v1/tenants/acme").header(header::ORIGIN, "https://evil.example").body(()),
                Request::get("/valet/acme/f").header(header::ORIGIN, "https://evil.example").body(()),
                Request::options("/v1/tenants/acme")
                    .header(header::ORIGIN, "https://app.example")
                    .header(header::ACCESS_CONTROL_REQUEST_METHOD, "PUT")
                    .body(()),
                Request::options("/v1/tenants/acme").body(()),
            ]
            .map(|r| r.unwrap())
        };
        for origins in [&[][..], &["https://app.example"][..], &["*"][..]] {
            let config = config(origins);
            let valet = vec!["*".to_owned()];
            let ours = CrossOriginLayer::new(&config, &valet).unwrap();
            let theirs = cors_layer(&config, &valet).unwrap();
            for (a, b) in requests().into_iter().zip(requests()) {
                let what = format!("{} {} {:?} with {origins:?}", a.method(), a.uri(), a.headers().get(header::ORIGIN));
                let (ours, theirs) = (answered(&ours, a), answered(&theirs, b));
                assert_eq!(ours, theirs, "{what}");
                assert!(ours.contains_key(header::VARY), "{what}");
            }
        }
    }

    #[test]
    fn a_request_without_an_origin_keeps_its_own_vary_and_gets_the_exposed_headers() {
        let layer = CrossOriginLayer::new(&config(&[]), &[]).unwrap();
        let headers = answered(&layer, Request::get("/v1/x").body(()).unwrap());
        let vary: Vec<_> = headers.get_all(header::VARY).iter().map(|v| v.to_str().unwrap().to_owned()).collect();
        assert_eq!(vary[0], "accept-encoding");
        assert!(vary[1].contains("origin"), "{vary:?}");
        let exposed = headers[header::ACCESS_CONTROL_EXPOSE_HEADERS].to_str().unwrap();
        assert!(exposed.contains("etag") && exposed.contains("x-shardgate-epoch"), "{exposed}");
        assert!(!headers.contains_key(header::ACCESS_CONTROL_ALLOW_ORIGIN));
    }

    #[test]
    fn an_origin_that_is_no_header_value_is_refused_with_its_key() {
        let error = CrossOriginLayer::new(&config(&["https://a\nb"]), &[]).unwrap_err();
        assert!(error.to_string().contains("cors.allowed_origins"), "{error}");
    }
}
