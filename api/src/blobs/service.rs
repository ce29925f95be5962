//! The blob service, below the blob API and the valet endpoint alike: storing a blob
//! ([`store_blob`]: streaming an upload into chunks, hashing as it goes, with a size limit and
//! nothing left behind on failure) and serving one ([`serve_blob`]: `ETag`, `If-None-Match`, a
//! single `Range`, chunks streamed a window at a time through the
//! [`ChunkCache`], a damaged blob refused before its headers), and the [`BlobInfo`] both answer
//! with.
//!
//! Paths: the raw (percent-encoded) path after `/blobs/` or `/valet/{tenant}/` is decoded once
//! into a [`BlobPath`]; `%2F` is therefore the same as `/` (a separator, not part of a segment
//! name). Empty, `.` and `..` segments, control characters and paths over 1024 bytes are refused.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::{Bytes, BytesMut};
use futures::{StreamExt, TryStreamExt};
use serde::Serialize;
use sha2::{Digest, Sha256};
use shardgate_shard_router::usage::daily::ValetTransfer;
use std::sync::Arc;
use utoipa::ToSchema;

use shardgate_shard_router::ShardStore;
use shardgate_shard_router::blobs::{
    BLOB_CHUNK_BYTES, BlobCommit, BlobCondition, BlobMeta, BlobPath, BlobStore, Upload,
};
use shardgate_shard_router::{Access, Database, Error as StoreError, Route, ShardId, TenantId, now_ms};

use crate::app::App;
use crate::blobs::chunk_cache::ChunkCache;
use crate::blobs::quota::UploadQuota;
use crate::observability::request_health::routed_to;
use crate::server::transfer_watch::{LongTransfer, TransferWatch};
use crate::wire::error::{ApiError, Code};
use crate::wire::routed_epoch::RoutedEpoch;
use crate::wire::timestamps::rfc3339;

/// A blob's description.
#[derive(Debug, Serialize, ToSchema)]
pub struct BlobInfo {
    /// Its path.
    pub path: String,
    /// Length in bytes.
    pub size: u64,
    /// SHA-256 of its bytes, lowercase hex (the `ETag`, in quotes).
    pub sha256: String,
    /// Media type, as written.
    pub content_type: String,
    /// 1 on first write, +1 on every overwrite and delete.
    pub version: i64,
    /// Last write, RFC 3339.
    pub updated_at: String,
}

impl From<&BlobMeta> for BlobInfo {
    fn from(meta: &BlobMeta) -> Self {
        Self {
            path: meta.path.to_string(),
            size: meta.size,
            sha256: meta.sha256.clone(),
            content_type: meta.content_type.clone(),
            version: meta.version,
            updated_at: rfc3339(meta.updated_at_ms),
        }
    }
}

/// What a blob write stores, and under which conditions.
#[derive(Debug)]
pub struct NewBlob<'a> {
    /// Whose.
    pub tenant: &'a TenantId,
    /// Where.
    pub path: &'a BlobPath,
    /// Its media type.
    pub content_type: String,
    /// `If-Match` / `If-None-Match`.
    pub condition: BlobCondition,
    /// The largest body accepted.
    pub max_size: u64,
    /// Through a valet URL: the transfer, whose bytes count against the tenant's valet bytes of
    /// the day.
    pub valet: Option<ValetTransfer>,
}

/// Stores `body` as a blob: streams it into a staged upload, then switches it live if the
/// condition still holds. Answers 201 (created) or 200 (replaced) with the blob's `ETag` and
/// [`BlobInfo`]; every answer given after routing names the map epoch it was routed on
/// (`x-shardgate-epoch`).
pub async fn store_blob(app: &App, blob: NewBlob<'_>, headers: &HeaderMap, body: Body) -> Result<Response, ApiError> {
    check_declared_length(headers, blob.max_size)?;
    let (route, db) = app.router.resolve(blob.tenant, Access::Write)?;
    routed_to(&route.shard);
    let declared = declared_length(headers);
    let tenant = blob.tenant;
    let stored = store_on(app, (&db, &route), blob, (body, declared)).await;
    RoutedEpoch::of(&route).stamp(stored.inspect_err(|e| app.quota_refusals.observe(&app.router, tenant, e)))
}

/// Stores `body` (of `declared` length, if known) as `blob` on the shard of `route` (whose pool
/// is `db`).
async fn store_on(
    app: &App,
    (db, route): (&Database, &Route),
    blob: NewBlob<'_>,
    (body, declared): (Body, Option<u64>),
) -> Result<Response, ApiError> {
    let NewBlob { tenant, path, content_type, condition, max_size, valet } = blob;
    let store = BlobStore::new(db, &route.shard).routed_at(route.epoch);
    // Refuse a failing precondition, and a blob over the tenant's quotas, before reading a
    // possibly large body.
    let replaced = store.head(tenant, path).await?;
    if !condition.is_met_by(replaced.as_ref()) {
        return Err(ApiError::new(Code::PreconditionFailed, "the blob does not satisfy the precondition"));
    }
    let quotas = app.router.tenant_quotas(tenant)?;
    let replaced = replaced.map(|blob| blob.size);
    let mut quota = UploadQuota::begin((&app.quota_gate, tenant, quotas), replaced, declared, valet).await?;
    let upload = store.begin_upload(tenant, path, route.vshard, now_ms()).await?;
    let received = receive(&store, &upload, body, (max_size, &mut quota), &app.transfers).await?;
    let commit = BlobCommit {
        size: received.size,
        sha256_hex: received.sha256,
        content_type,
        chunk_count: received.chunks,
        condition,
    };
    let outcome = store.commit(&upload, commit, now_ms()).await.map_err(StoreError::of_write)?;
    let status = if outcome.created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, [(header::ETAG, etag(&outcome.blob))], axum::Json(BlobInfo::from(&outcome.blob))).into_response())
}

/// Looks up a live blob (404 `blob_not_found` otherwise) and answers a download of it; every
/// answer given after routing names the map epoch it was routed on (`x-shardgate-epoch`).
pub async fn serve_blob(
    app: &App,
    tenant: &TenantId,
    path: &BlobPath,
    headers: &HeaderMap,
    head: bool,
) -> Result<Response, ApiError> {
    let (route, db) = app.router.resolve(tenant, Access::Read)?;
    routed_to(&route.shard);
    let store = BlobStore::new(&db, &route.shard);
    let answer = async {
        let meta = store.head(tenant, path).await?.ok_or(StoreError::BlobNotFound)?;
        let meta = whole_blob(&store, meta).await?;
        Ok::<_, ApiError>(download(&app.chunks, (&db, &route.shard), &meta, headers, head))
    };
    RoutedEpoch::of(&route).stamp(answer.await)
}

/// `meta` if every one of its chunks is stored at its length ([`BlobStore::tally_chunks`]: one
/// aggregate statement), checked before any header of a download goes out, so that GET, a range,
/// `If-None-Match` and HEAD all refuse a damaged blob alike instead of answering 200 and stopping
/// short. Otherwise 500 `blob_damaged` naming the blob, logged at ERROR. A blob replaced since
/// the look-up (the old upload's chunks collected after the grace period) is looked up again and
/// judged as it is now; 404 if it was deleted.
async fn whole_blob(store: &BlobStore<'_>, mut meta: BlobMeta) -> Result<BlobMeta, ApiError> {
    const LOOK_UPS: usize = 3;
    let mut tally = store.tally_chunks(&meta).await?;
    for _ in 1..LOOK_UPS {
        if tally.is_whole() {
            return Ok(meta);
        }
        match store.head(&meta.tenant, &meta.path).await? {
            Some(now) if now.upload_id != meta.upload_id => meta = now,
            Some(_) => break,
            None => return Err(ApiError::from(&StoreError::BlobNotFound)),
        }
        tally = store.tally_chunks(&meta).await?;
    }
    if tally.is_whole() {
        return Ok(meta);
    }
    let (tenant, path) = (&meta.tenant, &meta.path);
    tracing::error!(
        tenant = %tenant,
        blob.path = %path,
        blob.upload_id = %meta.upload_id,
        blob.chunks_expected = tally.expected,
        blob.chunks_present = tally.present,
        blob.chunks_wrong_length = tally.wrong_length,
        "blob damaged: its chunk rows do not hold its bytes, so it is not served; `shardgate check` lists it"
    );
    Err(ApiError::new(
        Code::BlobDamaged,
        format!(
            "blob {path} of tenant {tenant} is damaged: {tally}; nothing of it is served until it is written again \
             or restored"
        ),
    ))
}

/// 404 `blob_not_found` unless a live blob is at `path` (what a download of it would answer).
pub async fn require_blob(app: &App, tenant: &TenantId, path: &BlobPath) -> Result<(), ApiError> {
    let (route, db) = app.router.resolve(tenant, Access::Read)?;
    let found = BlobStore::new(&db, &route.shard).head(tenant, path).await?;
    found.map(drop).ok_or_else(|| ApiError::from(&StoreError::BlobNotFound))
}

/// The media type a blob is stored with: the request's `Content-Type`, or
/// `application/octet-stream`.
pub fn content_type_of(headers: &HeaderMap) -> Result<String, ApiError> {
    match headers.get(header::CONTENT_TYPE) {
        None => Ok("application/octet-stream".to_owned()),
        Some(value) => {
            let text = value.to_str().ok().filter(|t| !t.is_empty() && t.len() <= 255).ok_or_else(|| {
                ApiError::new(Code::InvalidHeader, "Content-Type must be 1–255 characters of visible ASCII")
            })?;
            Ok(text.to_owned())
        }
    }
}

/// The largest blob `tenant` may store: its tier's limit (404 `tenant_not_found` for no
/// tenant).
pub fn max_blob_size(app: &App, tenant: &TenantId) -> Result<u64, ApiError> {
    let (tier, _) = app.router.tenant_limits(tenant.as_str()).ok_or_else(ApiError::tenant_not_found)?;
    Ok(app.blobs.max_size(tier))
}

/// What a finished upload stream produced.
#[derive(Debug)]
pub struct Received {
    /// Bytes received.
    pub size: u64,
    /// SHA-256, lowercase hex.
    pub sha256: String,
    /// Chunks stored.
    pub chunks: u64,
}

/// Decodes the raw blob path of a URL (400 `invalid_path`).
pub fn blob_path(raw: &str) -> Result<BlobPath, ApiError> {
    let decoded = percent_encoding::percent_decode_str(raw)
        .decode_utf8()
        .map_err(|_| ApiError::new(Code::InvalidPath, "the blob path must be percent-encoded UTF-8"))?;
    BlobPath::parse(&decoded).map_err(crate::wire::error::invalid_path)
}

/// 413 for a body over `max_size` bytes.
pub fn too_large(max_size: u64) -> ApiError {
    ApiError::larger_than(max_size)
}

/// Refuses at once a body whose declared length is over the limit.
pub fn check_declared_length(headers: &HeaderMap, max_size: u64) -> Result<(), ApiError> {
    if declared_length(headers).is_some_and(|length| length > max_size) { Err(too_large(max_size)) } else { Ok(()) }
}

/// The body's length as `Content-Length` declares it.
fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
}

/// Streams `body` into `upload` in chunks of [`BLOB_CHUNK_BYTES`], at most one chunk in memory,
/// each piece let through by `quota` before it is kept. On any failure (the client goes away,
/// the body exceeds `max_size` or the tenant's quotas, no byte arrives within `watch`'s idle
/// limit (408 `transfer_stalled`), a shard error) the upload is aborted, so nothing of it
/// remains.
pub async fn receive(
    store: &BlobStore<'_>,
    upload: &Upload,
    body: Body,
    (max_size, quota): (u64, &mut UploadQuota<'_>),
    watch: &TransferWatch,
) -> Result<Received, ApiError> {
    let outcome = async {
        let mut stream = body.into_data_stream();
        let mut hasher = Sha256::new();
        let mut buffer = BytesMut::with_capacity(BLOB_CHUNK_BYTES);
        let (mut size, mut chunks) = (0u64, 0u64);
        while let Some(piece) = watch.next_piece(&mut stream).await? {
            let mut piece = piece.map_err(|e| {
                ApiError::new(Code::UploadInterrupted, format!("the request body could not be read: {e}"))
            })?;
            size += piece.len() as u64;
            if size > max_size {
                return Err(too_large(max_size));
            }
            quota.grow_to(size).await?;
            hasher.update(&piece);
            while !piece.is_empty() {
                let take = (BLOB_CHUNK_BYTES - buffer.len()).min(piece.len());
                buffer.extend_from_slice(&piece.split_to(take));
                if buffer.len() == BLOB_CHUNK_BYTES {
                    store.put_chunk(upload, chunks, &buffer, now_ms()).await?;
                    chunks += 1;
                    buffer.clear();
                }
            }
        }
        if !buffer.is_empty() {
            store.put_chunk(upload, chunks, &buffer, now_ms()).await?;
            chunks += 1;
        }
        Ok::<_, ApiError>(Received { size, sha256: hex::encode(hasher.finalize()), chunks })
    }
    .await;
    if outcome.is_err()
        && let Err(e) = store.abort(upload, now_ms()).await
    {
        tracing::warn!(error = %e, upload = upload.id(), "could not abort a failed upload; the janitor will");
    }
    outcome
}

/// The strong `ETag` of a blob: its SHA-256 in quotes.
pub fn etag(meta: &BlobMeta) -> HeaderValue {
    HeaderValue::from_str(&format!("\"{}\"", meta.sha256)).unwrap_or_else(|_| HeaderValue::from_static("\"\""))
}

/// Whether an `If-None-Match` list names the blob (`*` names any).
fn none_match_hits(headers: &HeaderMap, meta: &BlobMeta) -> bool {
    crate::wire::preconditions::none_match_hits(headers.get_all(header::IF_NONE_MATCH), |tag| tag == meta.sha256)
}

/// A single byte range from a `Range` header: `Ok(None)` for a whole-body answer (no header, a
/// unit other than bytes, several ranges, or an `If-Range` that does not match), `Err(())` when
/// the range cannot be satisfied.
fn requested_range(headers: &HeaderMap, meta: &BlobMeta) -> Result<Option<std::ops::Range<u64>>, ()> {
    let Some(value) = headers.get(header::RANGE).and_then(|v| v.to_str().ok()) else { return Ok(None) };
    if let Some(if_range) = headers.get(header::IF_RANGE).and_then(|v| v.to_str().ok())
        && if_range.trim() != format!("\"{}\"", meta.sha256)
    {
        return Ok(None);
    }
    let Some(spec) = value.trim().strip_prefix("bytes=") else { return Ok(None) };
    if spec.contains(',') {
        return Ok(None);
    }
    let (first, last) = spec.split_once('-').ok_or(())?;
    let (first, last) = (first.trim(), last.trim());
    let size = meta.size;
    let range = if first.is_empty() {
        let suffix: u64 = last.parse().map_err(|_| ())?;
        if suffix == 0 || size == 0 {
            return Err(());
        }
        size.saturating_sub(suffix)..size
    } else {
        let start: u64 = first.parse().map_err(|_| ())?;
        let end = if last.is_empty() { size } else { last.parse::<u64>().map_err(|_| ())?.saturating_add(1).min(size) };
        if start >= size || end <= start {
            return Err(());
        }
        start..end
    };
    Ok(Some(range))
}

/// The answer to `GET` (or `HEAD`, without a body) of `meta`: 304 on a matching `If-None-Match`,
/// 206 with `Content-Range` for one satisfiable range, 416 for an unsatisfiable one, else 200.
///
/// The body streams window by window ([`BlobMeta::read_windows`] of
/// [`ChunkCache::window_bytes`], through `cache`): each window is one shard statement at most,
/// fetched whole before its bytes are sent, so a slow client never holds a pooled connection.
/// The next window is read while this one is sent. **Memory per download:** at most two windows
/// (2 MiB with the default `blobs.read_window_bytes` of 1 MiB), plus the chunk the server is
/// writing to the socket; chunks that come from the chunk cache are shared with it, not copied.
/// The answer is marked a [`LongTransfer`], so a client that stops reading is cut off after
/// `limits.transfer_idle_timeout` and its windows dropped ([`crate::server::transfer_watch`]).
pub fn download(
    cache: &ChunkCache,
    (db, shard): (&Database, &ShardId),
    meta: &BlobMeta,
    headers: &HeaderMap,
    head: bool,
) -> Response {
    let mut response_headers = HeaderMap::new();
    response_headers.insert(header::ETAG, etag(meta));
    response_headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    if let Ok(modified) = HeaderValue::from_str(&httpdate(meta.updated_at_ms)) {
        response_headers.insert(header::LAST_MODIFIED, modified);
    }
    if none_match_hits(headers, meta) {
        return (StatusCode::NOT_MODIFIED, response_headers).into_response();
    }
    let content_type = HeaderValue::from_str(&meta.content_type)
        .unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"));
    let (status, range) = match requested_range(headers, meta) {
        Ok(Some(range)) => (StatusCode::PARTIAL_CONTENT, range),
        Ok(None) => (StatusCode::OK, 0..meta.size),
        Err(()) => {
            let mut refused = ApiError::range_not_satisfiable(meta.size).into_response();
            if let Ok(value) = HeaderValue::from_str(&format!("bytes */{}", meta.size)) {
                refused.headers_mut().insert(header::CONTENT_RANGE, value);
            }
            refused.headers_mut().extend(response_headers);
            return refused;
        }
    };
    if status == StatusCode::PARTIAL_CONTENT
        && let Ok(value) = HeaderValue::from_str(&format!("bytes {}-{}/{}", range.start, range.end - 1, meta.size))
    {
        response_headers.insert(header::CONTENT_RANGE, value);
    }
    response_headers.insert(header::CONTENT_TYPE, content_type);
    response_headers.insert(header::CONTENT_LENGTH, HeaderValue::from(range.end - range.start));
    if head || range.is_empty() {
        return (status, response_headers).into_response();
    }
    let (tenant, path) = (meta.tenant.clone(), meta.path.clone());
    let chunk_size = u64::from(meta.chunk_size);
    let seqs = meta.chunks_covering(range.clone());
    let first_offset = seqs.start * chunk_size;
    let windows = meta.read_windows(seqs, cache.window_bytes());
    let state = (cache.clone(), db.clone(), shard.clone(), meta.clone(), Arc::<str>::from(meta.upload_id.as_str()));
    // The body is sent after the handler returned: each window's read is a span of the request
    // that asked for it (traces on), not of a trace of its own.
    let request = tracing::Span::current();
    // The next window is read while this one is sent (at most two windows per download).
    let chunks = futures::stream::iter(windows)
        .map(move |window| {
            let (cache, db, shard, meta, upload) = state.clone();
            let span = tracing::trace_span!(parent: &request, "blob.window", from = window.start, to = window.end);
            let read = async move {
                let chunks = cache.window((&db, &shard), &meta, &upload, window).await?;
                Ok::<_, Arc<StoreError>>(futures::stream::iter(chunks.into_iter().map(Ok::<Bytes, Arc<StoreError>>)))
            };
            tracing::Instrument::instrument(read, span)
        })
        .buffered(2)
        .try_flatten();
    // Trim the first and last chunk to the range.
    let body = chunks
        .scan(first_offset, move |offset, chunk| {
            let out = chunk.map(|chunk: Bytes| {
                let (chunk_start, chunk_end) = (*offset, *offset + chunk.len() as u64);
                *offset = chunk_end;
                let from = range.start.max(chunk_start) - chunk_start;
                let to = range.end.min(chunk_end) - chunk_start;
                chunk.slice(from as usize..to as usize)
            });
            std::future::ready(Some(out))
        })
        .map_err(move |e| {
            // The status is sent: all that is left is to cut the body short, and to say so.
            tracing::error!(
                error = %e,
                tenant = %tenant,
                blob.path = %path,
                "a blob download stopped short: a window of chunks could not be read"
            );
            std::io::Error::other(e.to_string())
        });
    let mut response = (status, response_headers, Body::from_stream(body)).into_response();
    response.extensions_mut().insert(LongTransfer);
    response
}

/// An HTTP date (RFC 9110 IMF-fixdate) from ms since the Unix epoch.
fn httpdate(ms: i64) -> String {
    let Ok(at) = time::OffsetDateTime::from_unix_timestamp(ms.div_euclid(1000)) else { return String::new() };
    let format = time::macros::format_description!(
        "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
    );
    at.format(&format).unwrap_or_default()
}
