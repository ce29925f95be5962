//! `/v1/tenants/{tenant}/blobs[/{path}]`: binary objects on the tenant's home shard, streamed in
//! and out in chunks, with a strong `ETag` (the SHA-256), `If-Match` / `If-None-Match` and
//! single `Range` requests. Storing and serving live in [`crate::blobs::service`], shared with the
//! valet endpoint.

use std::sync::Arc;

use axum::extract::{FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Deserialize;
use shardgate_shard_router::ShardStore;
use shardgate_shard_router::blobs::{BlobCondition, BlobPath, BlobStore};
use shardgate_shard_router::{Access, TenantId, now_ms};
use utoipa::IntoParams;

use crate::app::App;
use crate::blobs::service::{BlobInfo, NewBlob, blob_path, content_type_of, max_blob_size, serve_blob, store_blob};
use crate::server::extract::{ApiQuery, Bound, NeedsScope, Read, TenantPath, Write};
use crate::wire::error::ApiError;
use crate::wire::openapi::{Binary, errors};
use crate::wire::pagination::{Page, decode_cursor};
use crate::wire::preconditions::{Precondition, precondition};
use crate::wire::routed_epoch::RoutedEpoch;

/// Path of one blob.
#[derive(Debug, Deserialize, IntoParams)]
pub struct BlobRoute {
    /// Tenant id (must be the token's tenant).
    tenant: String,
    /// Blob path: `/`-separated segments, 1–1024 bytes of UTF-8 in all, no empty, `.` or `..`
    /// segment, no control characters; `%2F` is the same as `/`.
    #[expect(dead_code, reason = "documents the path parameter; the raw path is read from the URI")]
    path: String,
}

/// Path of a tenant's blobs.
#[derive(Debug, Deserialize, IntoParams)]
pub struct BlobsRoute {
    /// Tenant id (must be the token's tenant).
    tenant: String,
}

impl TenantPath for BlobsRoute {
    fn tenant(&self) -> &str {
        &self.tenant
    }
}

/// Listing filters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct BlobListQuery {
    /// Only paths starting with this.
    prefix: Option<String>,
    /// Page size: default 100, capped at 1000.
    #[param(minimum = 1)]
    limit: Option<u32>,
    /// `next_cursor` of the previous page.
    cursor: Option<String>,
}

impl TenantPath for BlobRoute {
    fn tenant(&self) -> &str {
        &self.tenant
    }
}

/// The blob a request names, of the tenant the caller is bound to with the scope `S` (see
/// [`Bound`]), and the application state: the preamble of every handler of one blob. The blob
/// is what follows `/blobs/` in the request's URI, decoded and checked.
#[derive(Debug)]
pub struct Blob<S> {
    app: Arc<App>,
    tenant: TenantId,
    path: BlobPath,
    scope: std::marker::PhantomData<S>,
}

impl<S: NeedsScope> FromRequestParts<Arc<App>> for Blob<S> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &Arc<App>) -> Result<Self, Self::Rejection> {
        let Bound { app, tenant, .. } = Bound::<BlobRoute, S>::from_request_parts(parts, app).await?;
        let raw = parts.uri.path().split_once("/blobs/").map(|(_, rest)| rest).unwrap_or_default();
        Ok(Self { app, tenant, path: blob_path(raw)?, scope: std::marker::PhantomData })
    }
}

/// `If-Match` / `If-None-Match` of a blob write or delete (entity tags are SHA-256s).
fn blob_condition(headers: &HeaderMap) -> Result<BlobCondition, ApiError> {
    Ok(match precondition(headers)? {
        Precondition::Always => BlobCondition::Always,
        Precondition::Exists => BlobCondition::Exists,
        Precondition::Absent => BlobCondition::Absent,
        Precondition::Match(tags) => BlobCondition::Sha256In(tags),
    })
}

errors!(PutBlobErrors:
    InvalidPath, InvalidHeader, UploadInterrupted, TransferStalled, BodyTimeout, WriteContention, UploadClosed, QuotaExceeded,
    PreconditionFailed, PayloadTooLarge, ShardReadOnly, ShardOffline, ShardUnavailable, ShardBusy, StaleShardMap
);

/// Upload a blob (streamed; replaces any blob at the path atomically).
#[utoipa::path(
    put,
    path = "/v1/tenants/{tenant}/blobs/{*path}",
    params(
        BlobRoute,
        ("If-Match" = Option<String>, Header, description = "`*` or quoted SHA-256 ETags: write only if the blob has one of them"),
        ("If-None-Match" = Option<String>, Header, description = "`*`: create only"),
    ),
    request_body(content = Binary, description = "The bytes, of any media type (stored as given by Content-Type, `application/octet-stream` when none is given)", content_type = "*/*"),
    responses(
        (status = 200, description = "Replaced", body = BlobInfo, headers(("ETag" = String, description = "Quoted SHA-256"))),
        (status = 201, description = "Created", body = BlobInfo, headers(("ETag" = String, description = "Quoted SHA-256"))),
        PutBlobErrors,
    )
)]
pub async fn put_blob(Blob { app, tenant, path, .. }: Blob<Write>, request: Request) -> Result<Response, ApiError> {
    let (parts, body) = request.into_parts();
    let condition = blob_condition(&parts.headers)?;
    let content_type = content_type_of(&parts.headers)?;
    let max_size = max_blob_size(&app, &tenant)?;
    let blob = NewBlob { tenant: &tenant, path: &path, content_type, condition, max_size, valet: None };
    store_blob(&app, blob, &parts.headers, body).await
}

errors!(GetBlobErrors:
    InvalidPath, TenantNotFound, BlobNotFound, RangeNotSatisfiable, BlobDamaged, ShardOffline, ShardUnavailable, ShardBusy
);

/// Download a blob (or a single byte range of it).
#[utoipa::path(
    get,
    path = "/v1/tenants/{tenant}/blobs/{*path}",
    params(
        BlobRoute,
        ("Range" = Option<String>, Header, description = "One range: `bytes=first-last`, `bytes=first-` or `bytes=-suffix`"),
        ("If-None-Match" = Option<String>, Header, description = "Quoted SHA-256 ETags or `*`: 304 if the blob has one"),
        ("If-Range" = Option<String>, Header, description = "Quoted ETag: honour `Range` only if it still matches"),
    ),
    responses(
        (status = 200, description = "The blob, with the media type it was stored with", body = Binary, content_type = "*/*", headers(("ETag" = String), ("Accept-Ranges" = String), ("Content-Length" = u64))),
        (status = 206, description = "The requested range, with the media type the blob was stored with", body = Binary, content_type = "*/*", headers(("Content-Range" = String, description = "`bytes first-last/size`"))),
        (status = 304, description = "Not modified"),
        GetBlobErrors,
    )
)]
pub async fn get_blob(Blob { app, tenant, path, .. }: Blob<Read>, request: Request) -> Result<Response, ApiError> {
    let head = request.method() == axum::http::Method::HEAD;
    serve_blob(&app, &tenant, &path, request.headers(), head).await
}

errors!(HeadBlobErrors: TenantNotFound, BlobNotFound, BlobDamaged);

/// A blob's headers (`ETag`, `Content-Length`, `Content-Type`, `Accept-Ranges`) without its bytes.
#[utoipa::path(head, path = "/v1/tenants/{tenant}/blobs/{*path}", params(BlobRoute), responses(
    (status = 200, description = "The blob exists", headers(("ETag" = String), ("Content-Length" = u64), ("Accept-Ranges" = String))),
    (status = 304, description = "Not modified"),
    HeadBlobErrors,
))]
pub async fn head_blob(blob: Blob<Read>, request: Request) -> Result<Response, ApiError> {
    // The same answer without its bytes: `get_blob` sees the HEAD method.
    get_blob(blob, request).await
}

errors!(DeleteBlobErrors:
    TenantNotFound, BlobNotFound, PreconditionFailed, ShardReadOnly, ShardOffline, ShardUnavailable, ShardBusy
);

/// Delete a blob.
#[utoipa::path(delete, path = "/v1/tenants/{tenant}/blobs/{*path}", params(BlobRoute, ("If-Match" = Option<String>, Header, description = "`*` or quoted SHA-256 ETags")), responses(
    (status = 204, description = "Deleted"),
    DeleteBlobErrors,
))]
pub async fn delete_blob(Blob { app, tenant, path, .. }: Blob<Write>, request: Request) -> Result<Response, ApiError> {
    let condition = blob_condition(request.headers())?;
    let (route, db) = app.router.resolve(&tenant, Access::Write)?;
    let store = BlobStore::new(&db, &route.shard).routed_at(route.epoch);
    let deleted = match store.delete(&tenant, &path, &condition, now_ms()).await {
        Ok(Some(_)) => {
            app.quota_gate.shrank(&tenant);
            Ok(StatusCode::NO_CONTENT)
        }
        Ok(None) => Err(ApiError::from(&shardgate_shard_router::Error::BlobNotFound)),
        Err(e) => Err(ApiError::from(e.of_write())),
    };
    RoutedEpoch::of(&route).stamp(deleted)
}

errors!(ListBlobsErrors: InvalidQuery, InvalidCursor);

/// List a tenant's blobs in path order.
#[utoipa::path(get, path = "/v1/tenants/{tenant}/blobs", params(BlobsRoute, BlobListQuery), responses(
    (status = 200, description = "A page of blobs", body = Page<BlobInfo>),
    ListBlobsErrors,
))]
pub async fn list_blobs(
    Bound { app, tenant, input: ApiQuery(query), .. }: Bound<BlobsRoute, Read, ApiQuery<BlobListQuery>>,
) -> Result<Response, ApiError> {
    let limit = app.page_limit(query.limit)?;
    let after = query.cursor.as_deref().map(decode_cursor).transpose()?;
    let (route, db) = app.router.resolve(&tenant, Access::Read)?;
    let store = BlobStore::new(&db, &route.shard);
    let rows = store.list(&tenant, query.prefix.as_deref(), after.as_deref(), limit + 1).await;
    let page = rows.map(|rows| {
        axum::Json(Page::from_overfetch(rows, limit, |meta| meta.path.to_string(), |meta| BlobInfo::from(&meta)))
    });
    RoutedEpoch::of(&route).stamp(page.map_err(ApiError::from))
}
