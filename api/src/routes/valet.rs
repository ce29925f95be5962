//! `/valet/{tenant}/{path}`: the valet endpoint (the Valet Key pattern). No token: the signed
//! URL is the credential. `GET` and `HEAD` download the one blob a read URL names, `PUT` uploads
//! the one a write URL names. Verifying, transferring, counting and auditing are the
//! [`crate::valet_service`]'s; URLs are issued by `/v1/tenants/{tenant}/valet-keys`.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::app::App;
use crate::extract::ApiPath;
use crate::valet_service::transfer;

/// Path of a valet URL.
#[derive(Debug, Deserialize, IntoParams)]
pub struct ValetRoute {
    /// Tenant id.
    tenant: String,
    /// Blob path, percent-encoded exactly as signed.
    #[expect(dead_code, reason = "documents the path parameter; the raw path is read from the URI")]
    path: String,
}

/// Download (GET, HEAD) or upload (PUT) a blob with a valet URL; no token.
#[utoipa::path(get, path = "/valet/{tenant}/{*path}", params(ValetRoute, ("sg-sig" = String, Query, description = "The signature and the other `sg-` parameters of the URL, as issued")), responses(
    (status = 200, description = "The blob (with `Content-Disposition` when the key sets one)", content_type = "application/octet-stream"),
    (status = 206, description = "The requested range", content_type = "application/octet-stream"),
    (status = 304, description = "Not modified"),
    (status = 403, description = "`valet_malformed`, `valet_bad_signature`, `valet_expired`, `valet_not_yet_valid`, `valet_wrong_method`, `valet_unknown_key`, `valet_unknown_grant`, `valet_revoked`, `valet_key_retired` or `valet_used`"),
    (status = 404, description = "`blob_not_found`"),
    (status = 416, description = "`range_not_satisfiable`"),
))]
pub async fn valet_get(State(app): State<Arc<App>>, ApiPath(route): ApiPath<ValetRoute>, request: Request) -> Response {
    answer(app, route.tenant, request).await
}

/// The valet URL's blob headers, without its bytes.
#[utoipa::path(head, path = "/valet/{tenant}/{*path}", params(ValetRoute), responses(
    (status = 200, description = "The blob exists"),
    (status = 403, description = "A refused valet URL (see GET)"),
    (status = 404, description = "`blob_not_found`"),
))]
pub async fn valet_head(
    State(app): State<Arc<App>>,
    ApiPath(route): ApiPath<ValetRoute>,
    request: Request,
) -> Response {
    answer(app, route.tenant, request).await
}

/// Upload a blob with a valet URL (streamed; the signed size and media type are enforced).
#[utoipa::path(put, path = "/valet/{tenant}/{*path}", params(ValetRoute), request_body(content = Vec<u8>, description = "The bytes", content_type = "application/octet-stream"), responses(
    (status = 200, description = "Replaced"),
    (status = 201, description = "Created"),
    (status = 403, description = "A refused valet URL (see GET)"),
    (status = 413, description = "`payload_too_large`: over the signed `max_size` (nothing is stored)"),
    (status = 415, description = "`valet_content_type`: not the signed media type"),
))]
pub async fn valet_put(State(app): State<Arc<App>>, ApiPath(route): ApiPath<ValetRoute>, request: Request) -> Response {
    answer(app, route.tenant, request).await
}

/// The transfer or the refusal, never sent as a referrer nor kept by shared caches.
async fn answer(app: Arc<App>, tenant: String, request: Request) -> Response {
    let mut response = transfer(&app, &tenant, request).await.unwrap_or_else(IntoResponse::into_response);
    let headers = response.headers_mut();
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("private"));
    response
}
