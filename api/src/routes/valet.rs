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

/// The query of a valet URL: the `sg-` parameters of the grant and its signature. A valet URL is
/// used exactly as it was issued (`POST /v1/tenants/{tenant}/valet-keys` answers it whole): these
/// are declared so that clients know them, not to be composed. Any change to one of them makes
/// the signature fail.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
#[expect(dead_code, reason = "documents the query; the service reads the raw query")]
pub struct ValetQuery {
    /// The URL scheme's version (`1`).
    #[param(rename = "sg-v")]
    version: u32,
    /// The permission the grant gives: `read` (GET, HEAD) or `write` (PUT).
    #[param(rename = "sg-perm")]
    permission: String,
    /// Not before, in unix seconds.
    #[param(rename = "sg-nbf")]
    not_before: u64,
    /// Expiry, in unix seconds.
    #[param(rename = "sg-exp")]
    expires_at: u64,
    /// The id of the signing key.
    #[param(rename = "sg-kid")]
    key_id: String,
    /// The id of the grant (revocable, and spent when the grant is single-use).
    #[param(rename = "sg-grant")]
    grant_id: String,
    /// The media type an upload must carry, when the grant signs one.
    #[param(rename = "sg-ct")]
    content_type: Option<String>,
    /// The most bytes an upload may hold, when the grant signs a limit.
    #[param(rename = "sg-max")]
    max_size: Option<u64>,
    /// The `Content-Disposition` a download is served with, when the grant signs one.
    #[param(rename = "sg-cd")]
    content_disposition: Option<String>,
    /// `1` when the grant can be used once.
    #[param(rename = "sg-once")]
    single_use: Option<u8>,
    /// The signature (HMAC-SHA256, base64url without padding) of everything above.
    #[param(rename = "sg-sig")]
    signature: String,
}

errors!(ValetGetErrors:
    ValetMalformed, ValetBadSignature, ValetExpired, ValetNotYetValid, ValetWrongMethod, ValetUnknownKey,
    ValetUnknownGrant, ValetRevoked, ValetKeyRetired, ValetUsed, BlobNotFound, RangeNotSatisfiable, BlobDamaged
);

/// Download (GET, HEAD) or upload (PUT) a blob with a valet URL; no token.
///
/// Send the URL exactly as it was issued: its `sg-` parameters are signed, and any change to one
/// fails the signature.
#[utoipa::path(get, path = "/valet/{tenant}/{*path}", params(ValetRoute, ValetQuery), responses(
    (status = 200, description = "The blob (with `Content-Disposition` when the key sets one; active content such as HTML, SVG or scripts as an attachment unless the key signed a disposition, always with `Content-Security-Policy: sandbox`)", body = Binary, content_type = "*/*"),
    (status = 206, description = "The requested range, with the media type the blob was stored with", body = Binary, content_type = "*/*"),
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
///
/// Send the URL exactly as it was issued: its `sg-` parameters are signed.
#[utoipa::path(head, path = "/valet/{tenant}/{*path}", params(ValetRoute, ValetQuery), responses(
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
///
/// Send the URL exactly as it was issued: its `sg-` parameters are signed.
#[utoipa::path(put, path = "/valet/{tenant}/{*path}", params(ValetRoute, ValetQuery), request_body(content = Binary, description = "The bytes (of the media type the URL signs, if it signs one)", content_type = "*/*"), responses(
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
