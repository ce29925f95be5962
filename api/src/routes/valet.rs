//! `/valet/{tenant}/{path}`: the valet endpoint (the Valet Key pattern). No token: the signed
//! URL is the credential. `GET` and `HEAD` download the one blob a read URL names, `PUT` uploads
//! the one a write URL names. Verifying, transferring, counting and auditing are the
//! [`crate::valet::service`]'s; URLs are issued by `/v1/tenants/{tenant}/valet-keys`. An answer
//! given after the blob was routed (the transfer, or its 404 or 416) names the map epoch it was
//! routed on (`x-shardgate-epoch`, from the [`crate::blobs::service`]); a refused URL does not.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::app::App;
use crate::server::extract::ApiPath;
use crate::valet::service::transfer;
use crate::wire::openapi::{Binary, errors};

/// Path of a valet URL.
#[derive(Debug, Deserialize, IntoParams)]
pub struct ValetRoute {
    /// Tenant id.
    tenant: String,
    /// Blob path, percent-encoded exactly as signed.
    #[expect(dead_code, reason = "documents the path parameter; the raw path is read from the URI")]
    path: String,
}

errors!(ValetGetErrors:
    ValetMalformed, ValetBadSignature, ValetExpired, ValetNotYetValid, ValetWrongMethod, ValetUnknownKey,
    ValetUnknownGrant, ValetRevoked, ValetKeyRetired, ValetUsed, BlobNotFound, RangeNotSatisfiable, BlobDamaged
);

/// Download (GET, HEAD) or upload (PUT) a blob with a valet URL; no token.
#[utoipa::path(get, path = "/valet/{tenant}/{*path}", params(ValetRoute, ("sg-sig" = String, Query, description = "The signature and the other `sg-` parameters of the URL, as issued")), responses(
    (status = 200, description = "The blob (with `Content-Disposition` when the key sets one; active content such as HTML, SVG or scripts as an attachment unless the key signed a disposition, always with `Content-Security-Policy: sandbox`)", body = Binary, content_type = "application/octet-stream"),
    (status = 206, description = "The requested range", body = Binary, content_type = "application/octet-stream"),
    (status = 304, description = "Not modified"),
    ValetGetErrors,
))]
pub async fn valet_get(State(app): State<Arc<App>>, ApiPath(route): ApiPath<ValetRoute>, request: Request) -> Response {
    answer(app, route.tenant, request).await
}

errors!(ValetHeadErrors:
    ValetMalformed, ValetBadSignature, ValetExpired, ValetNotYetValid, ValetWrongMethod, ValetUnknownKey,
    ValetUnknownGrant, ValetRevoked, ValetKeyRetired, ValetUsed, BlobNotFound, BlobDamaged
);

/// The valet URL's blob headers, without its bytes.
#[utoipa::path(head, path = "/valet/{tenant}/{*path}", params(ValetRoute), responses(
    (status = 200, description = "The blob exists"),
    ValetHeadErrors,
))]
pub async fn valet_head(
    State(app): State<Arc<App>>,
    ApiPath(route): ApiPath<ValetRoute>,
    request: Request,
) -> Response {
    answer(app, route.tenant, request).await
}

errors!(ValetPutErrors:
    ValetMalformed, ValetBadSignature, ValetExpired, ValetNotYetValid, ValetWrongMethod, ValetUnknownKey,
    ValetUnknownGrant, ValetRevoked, ValetKeyRetired, ValetUsed, PayloadTooLarge, ValetContentType,
    TransferStalled, BodyTimeout, QuotaExceeded
);

/// Upload a blob with a valet URL (streamed; the signed size and media type are enforced).
#[utoipa::path(put, path = "/valet/{tenant}/{*path}", params(ValetRoute), request_body(content = Binary, description = "The bytes", content_type = "application/octet-stream"), responses(
    (status = 200, description = "Replaced"),
    (status = 201, description = "Created"),
    ValetPutErrors,
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
