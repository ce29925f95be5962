//! `/v1/tenants/{tenant}/collections/{collection}/records[/{key}]`: records on the tenant's home
//! shard, with optimistic concurrency through `ETag` / `If-Match` / `If-None-Match`.

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use shardgate_cache::{CachedRecord, RecordState};
use shardgate_shard_router::Error as StoreError;
use shardgate_shard_router::ShardStore;
use shardgate_shard_router::fanout::ShardFailure;
use shardgate_shard_router::records::{
    Layout, ListBounds, PutOutcome, RecordAddress, RecordRead, RecordStore, StoredRecord, WriteCondition,
};
use shardgate_shard_router::storage::replicas;
use shardgate_shard_router::storage::usage::Usage;
use shardgate_shard_router::usage::quotas::Quotas;
use shardgate_shard_router::{
    Access, CollectionName, Database, Distribution, RecordKey, Route, ids::check_key_text, now_ms,
};
use utoipa::{IntoParams, ToSchema};

use crate::app::App;
use crate::observability::request_health::routed_to;
use crate::server::extract::{ApiQuery, Bound, NeedsScope, Read, ReadConsistency, TenantPath, Write, require_json};
use crate::server::fault_points;
use crate::wire::consistency::{READ_FROM_HEADER, read_from_value};
use crate::wire::envelope::RecordEnvelope;
use crate::wire::error::{ApiError, Code, ShardFailureReason, invalid_path};
use crate::wire::json_newline::{json_line, json_line_response};
use crate::wire::openapi::errors;
use crate::wire::pagination::{Page, decode_key_cursor};
use crate::wire::preconditions::{IfNoneMatch, Precondition, precondition};
use crate::wire::record_body::parse_record_body;
use crate::wire::routed_epoch::{RoutedEpoch, ServedOn};

/// Path of one record.
#[derive(Debug, Deserialize, IntoParams)]
pub struct RecordPath {
    /// Tenant id (must be the token's tenant).
    tenant: String,
    /// Collection name: `[A-Za-z0-9][A-Za-z0-9_.-]{0,63}`.
    collection: String,
    /// Record key: 1–512 bytes of UTF-8, no control characters; percent-encode `/` and
    /// reserved characters.
    key: String,
}

/// Path of a collection.
#[derive(Debug, Deserialize, IntoParams)]
pub struct CollectionPath {
    /// Tenant id (must be the token's tenant).
    tenant: String,
    /// Collection name.
    collection: String,
}

impl TenantPath for CollectionPath {
    fn tenant(&self) -> &str {
        &self.tenant
    }
}

/// The entity tag of a record version: the quoted version, formatted without a heap string.
fn etag(version: i64) -> HeaderValue {
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(version).as_bytes();
    let mut tag = [b'"'; 22]; // a quote, at most 20 characters of an i64, a quote
    tag[1..=digits.len()].copy_from_slice(digits);
    HeaderValue::from_bytes(&tag[..digits.len() + 2]).unwrap_or_else(|_| HeaderValue::from_static("\"0\""))
}

fn envelope_response(status: StatusCode, record: StoredRecord) -> Response {
    let tag = etag(record.version);
    let mut response = json_line_response(status, json_line(&RecordEnvelope::from(record)));
    response.headers_mut().insert(header::ETAG, tag);
    response
}

/// Parses `If-Match` / `If-None-Match` into a write condition. Entity tags are the quoted
/// version (`"3"`; weak `W/"3"` is accepted as the same).
fn write_condition(headers: &HeaderMap) -> Result<WriteCondition, ApiError> {
    Ok(match precondition(headers)? {
        Precondition::Always => WriteCondition::Always,
        Precondition::Exists => WriteCondition::Exists,
        Precondition::Absent => WriteCondition::Absent,
        Precondition::Match(tags) => WriteCondition::VersionIn(
            tags.iter()
                .map(|tag| {
                    tag.parse::<i64>().map_err(|_| {
                        ApiError::new(
                            Code::InvalidHeader,
                            "If-Match must be \"*\" or a list of quoted versions such as \"3\"",
                        )
                    })
                })
                .collect::<Result<_, _>>()?,
        ),
    })
}

impl TenantPath for RecordPath {
    fn tenant(&self) -> &str {
        &self.tenant
    }
}

/// The record a request names, of the tenant the caller is bound to with the scope `S` (see
/// [`Bound`]), and the application state: the preamble of every handler of one record.
#[derive(Debug)]
pub struct Record<S> {
    app: Arc<App>,
    t: Target,
    scope: std::marker::PhantomData<S>,
}

impl<S: NeedsScope> FromRequestParts<Arc<App>> for Record<S> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &Arc<App>) -> Result<Self, Self::Rejection> {
        let Bound { app, tenant, path, .. } = Bound::<RecordPath, S>::from_request_parts(parts, app).await?;
        let collection = CollectionName::parse(&path.collection).map_err(invalid_path)?;
        let key = RecordKey::parse(&path.key).map_err(invalid_path)?;
        Ok(Self { app, t: Target { tenant, collection, key }, scope: std::marker::PhantomData })
    }
}

#[derive(Debug)]
struct Target {
    tenant: shardgate_shard_router::TenantId,
    collection: CollectionName,
    key: RecordKey,
}

impl Target {
    fn address(&self) -> RecordAddress<'_> {
        RecordAddress { tenant: &self.tenant, collection: &self.collection, key: &self.key }
    }
}

errors!(GetRecordErrors: InvalidPath, InvalidHeader, TenantNotFound, RecordNotFound, ShardOffline, ShardUnavailable, ShardBusy);

/// Read a record.
#[utoipa::path(get, path = "/v1/tenants/{tenant}/collections/{collection}/records/{key}", params(
    RecordPath,
    ("If-None-Match" = Option<String>, Header, description = "Quoted version: 304 if unchanged"),
    ("x-shardgate-consistency" = Option<String>, Header, description = "`strong` or `bounded`, optionally `bounded; max-lag=250ms` (ms or s, at most 300s; without it `storage.replica_reads.max_lag`): a standby of the shard may serve the read if it is at most that far behind the primary (the record cache serves it as ever); else the primary does. Without the header: bounded as `storage.replica_reads.collections` says of the collection, else strong"),
    ("x-shardgate-position" = Option<String>, Header, description = "With `bounded`: the `x-shardgate-position` tokens writes returned (comma-separated); the read is then never older than those writes"),
), responses(
    (status = 200, description = "The record", body = RecordEnvelope, headers(
        ("ETag" = String, description = "Quoted version"),
        ("x-shardgate-read-from" = Option<String>, description = "On a bounded read: `cache`, `standby` or `primary`, what served it"),
    )),
    (status = 304, description = "Not modified (If-None-Match matched)"),
    GetRecordErrors,
))]
pub async fn get_record(
    Record { app, t, .. }: Record<Read>,
    if_none_match: IfNoneMatch,
    asked: ReadConsistency,
) -> Result<Response, ApiError> {
    let consistency = asked.of(&app, t.collection.as_str());
    // Routed before the cache is asked: a read the cache answers names this map's epoch too.
    let route = app.router.resolve_record_fresh(t.address(), Access::Read).await?.0;
    let answer = match consistency {
        replicas::Consistency::Strong => read_record(&app, &t, &route, &if_none_match).await,
        replicas::Consistency::Bounded(_) => {
            Box::pin(read_bounded(&app, &t, &route, &if_none_match, &consistency)).await
        }
    };
    RoutedEpoch::of(&route).stamp(answer)
}

/// The answer to a read of `t` routed on `route`: from the record cache, else from the shard.
async fn read_record(app: &App, t: &Target, route: &Route, if_none_match: &IfNoneMatch) -> Result<Response, ApiError> {
    let span = tracing::Span::current();
    routed_to(&route.shard);
    let cache_key = app.cache.record_key(t.tenant.as_str(), t.collection.as_str(), t.key.as_str());
    let addr = t.address();
    let router = &app.router;
    let load = || async move {
        // Through the router, which finds the record's new shard if it moved meanwhile.
        let read = router.read_record(addr, |route, db| async move {
            RecordStore::new(&db, &route.shard).in_layout(Layout::of(&route)).read(addr).await
        });
        Ok(match read.await? {
            RecordRead::Live(record) => RecordState::Live(cached(record)),
            RecordRead::Gone(version) => RecordState::Gone(version),
            RecordRead::Absent => RecordState::Absent,
        })
    };
    let (result, outcome) = shardgate_shard_router::in_trace_span!(
        tracing::trace_span!("cache.read"),
        app.cache.read(&cache_key, t.collection.as_str(), load)
    );
    span.record("cache", outcome.as_str());
    let RecordState::Live(record) = result.map_err(|e| ApiError::from(&*e))? else {
        return Err(shardgate_shard_router::Error::RecordNotFound.into());
    };
    Ok(record_response(record, if_none_match))
}

/// [`read_record`] for a bounded read: from the record cache if it holds the record, else from
/// a standby within the bound (what it returns is not stored in the cache: it may be older than
/// the primary), else from the primary ([`shardgate_shard_router::storage::replicas`]).
async fn read_bounded(
    app: &App,
    t: &Target,
    route: &Route,
    if_none_match: &IfNoneMatch,
    consistency: &replicas::Consistency,
) -> Result<Response, ApiError> {
    routed_to(&route.shard);
    let cache_key = app.cache.record_key(t.tenant.as_str(), t.collection.as_str(), t.key.as_str());
    let (held, outcome) = app.cache.peek(&cache_key, t.collection.as_str()).await;
    tracing::Span::current().record("cache", outcome.as_str());
    let (record, from) = match held {
        Some(record) => (record, None),
        None => {
            let addr = t.address();
            let router = &app.router;
            let (read, from) = router
                .read_record(addr, |route, db| async move {
                    db.read_where(&route.shard, consistency, router.map_since(), |db| {
                        let route = route.clone();
                        async move { RecordStore::new(&db, &route.shard).in_layout(Layout::of(&route)).read(addr).await }
                    })
                    .await
                })
                .await?;
            let RecordRead::Live(record) = read else {
                return Err(shardgate_shard_router::Error::RecordNotFound.into());
            };
            (cached(record), Some(from))
        }
    };
    let mut response = record_response(record, if_none_match);
    response.headers_mut().insert(READ_FROM_HEADER, read_from_value(from));
    Ok(response)
}

/// A record's answer: 304 if `if_none_match` names its version, else 200 with its body; with
/// its `ETag` either way.
fn record_response(record: CachedRecord, if_none_match: &IfNoneMatch) -> Response {
    let mut response = if if_none_match.hits(|tag| tag.parse() == Ok(record.version)) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        json_line_response(StatusCode::OK, record.body)
    };
    response.headers_mut().insert(header::ETAG, etag(record.version));
    response
}

/// The cached form of a record: its version and the exact response body.
fn cached(record: StoredRecord) -> CachedRecord {
    let version = record.version;
    CachedRecord { version, body: json_line(&RecordEnvelope::from(record)) }
}

errors!(PutRecordErrors:
    InvalidJson, InvalidBody, JsonTooDeep, InvalidPath, InvalidHeader, WriteContention, PreconditionFailed, QuotaExceeded, PayloadTooLarge,
    UnsupportedMediaType, ShardReadOnly, ShardOffline, ShardUnavailable, ShardBusy, StaleShardMap
);

/// Create or replace a record.
#[utoipa::path(
    put,
    path = "/v1/tenants/{tenant}/collections/{collection}/records/{key}",
    params(
        RecordPath,
        ("If-Match" = Option<String>, Header, description = "`*` or quoted versions: write only if the record has one of them"),
        ("If-None-Match" = Option<String>, Header, description = "`*`: create only, fail if the record exists"),
    ),
    request_body(content = Value, description = "Any JSON value (an object, an array, a string, a number, `true`, `false` or `null` (at most `limits.max_record_bytes`, default 1 MiB, nested at most `limits.max_json_depth` deep) that reads back as sent: numbers finite as a 64-bit double, strings of Unicode text (no lone surrogate escapes), no object with a key twice (400 `invalid_body` names the place otherwise)", content_type = "application/json"),
    responses(
        (status = 200, description = "Replaced", body = RecordEnvelope, headers(("ETag" = String, description = "Quoted version"), ("x-shardgate-position" = Option<String>, description = "On a shard that reads from standbys (`storage.replica_reads`): the write's place in the shard's WAL; a bounded read that sends it back in `x-shardgate-position` is never older than this write"))),
        (status = 201, description = "Created", body = RecordEnvelope, headers(("ETag" = String, description = "Quoted version"), ("x-shardgate-position" = Option<String>, description = "On a shard that reads from standbys (`storage.replica_reads`): the write's place in the shard's WAL; a bounded read that sends it back in `x-shardgate-position` is never older than this write"))),
        PutRecordErrors,
    )
)]
pub async fn put_record(
    Record { app, t, .. }: Record<Write>,
    headers: HeaderMap,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Response, ApiError> {
    require_json(&headers)?;
    let body = body?;
    if body.len() > app.limits.max_record_bytes {
        return Err(ApiError::payload_too_large());
    }
    // The record rules, the same for every collection (`record_body.rs`).
    let value = parse_record_body(&body, app.limits.max_json_depth)?;
    let condition = write_condition(&headers)?;
    let served_on = ServedOn::default();
    let answer = write_record(&app, &t, &value, &condition, &served_on).await;
    served_on.stamp(answer)
}

/// Writes `value` to `t` under `condition` within the tenant's quotas (see
/// [`write_within_quotas`]) and answers 201 or 200 with the record.
async fn write_record(
    app: &App,
    t: &Target,
    value: &RawValue,
    condition: &WriteCondition,
    served_on: &ServedOn,
) -> Result<Response, ApiError> {
    let quotas = app.router.tenant_quotas(&t.tenant)?;
    let outcome = if quotas.unlimited() {
        put_on_shard(app, t, value, condition, served_on).await?
    } else {
        // Boxed: its future is several times a plain write's, and every request's future is
        // moved whole (bench/instructions.sh counted 12,000 more instructions of memcpy per PUT
        // when it was not).
        Box::pin(write_within_quotas(app, t, &quotas, value, condition, served_on))
            .await
            .inspect_err(|e| app.quota_refusals.observe(&app.router, &t.tenant, e))?
    };
    let status = if outcome.created { StatusCode::CREATED } else { StatusCode::OK };
    Ok(envelope_response(status, outcome.record))
}

/// Writes `value` to `t` under `condition` (see [`change_on_shard`]).
async fn put_on_shard(
    app: &App,
    t: &Target,
    value: &RawValue,
    condition: &WriteCondition,
    served_on: &ServedOn,
) -> Result<PutOutcome, ApiError> {
    let addr = t.address();
    let version = |outcome: &PutOutcome| outcome.record.version;
    // Boxed: the write's future (routing, the retries after a refused password or a stale map,
    // the shard's batch) is most of a PUT's, and every layer above the handler moves its future
    // whole; boxed, they move a pointer (bench/instructions.sh: 177,900 instructions per PUT
    // unboxed, 167,500 boxed, against 164,600 before quotas and usage).
    Box::pin(change_on_shard(app, t, Some(value), served_on, version, |route, db, now| async move {
        routed_store(&db, &route).put(addr, route.vshard, value, condition, now).await
    }))
    .await
}

/// How often a write near its tenant's quota re-reads the record when another write changed it
/// between its read and its own.
const QUOTA_WRITE_ATTEMPTS: usize = 3;

/// [`put_on_shard`] for a tenant with quotas. A write into a collection that does not exist yet
/// must fit the collections quota ([`shardgate_shard_router::usage::collections`]). The write is
/// let through by the tenant's allowance
/// ([`shardgate_shard_router::usage::grants`]) at its worst case (a new record of `value`'s
/// bytes, an entry in every index), and what it did not add (it replaced a record) is given
/// back. When the worst case does not fit, the record is read and the write's exact growth asked
/// for, the write then pinned to the version read (so that what was counted is what it
/// changes): a write that adds nothing (it shrinks or keeps the record) always passes.
async fn write_within_quotas(
    app: &App,
    t: &Target,
    quotas: &Quotas,
    value: &RawValue,
    condition: &WriteCondition,
    served_on: &ServedOn,
) -> Result<PutOutcome, ApiError> {
    let (tenant, collection) = (t.tenant.as_str(), t.collection.as_str());
    // Held until the write has finished: on this instance, the next write that may create a
    // collection counts after this one has written.
    let _collection = match quotas.collections {
        Some(limit) => Some(app.collection_gate.admit(&t.tenant, collection, limit).await?),
        None => None,
    };
    let bytes = value.get().len() as u64;
    let indexes = if quotas.index_entries.is_some() { app.indexes.index_count(tenant, collection) } else { 0 };
    let worst = Usage { records: 1, record_bytes: bytes, index_entries: indexes, ..Usage::default() };
    match app.quota_gate.admit(&t.tenant, quotas, worst).await {
        Ok(mut admission) => {
            let outcome = put_on_shard(app, t, value, condition, served_on).await?;
            if !outcome.created {
                admission.give_back(Usage { records: 1, ..Usage::default() });
            }
            return Ok(outcome);
        }
        Err(StoreError::QuotaExceeded { .. }) => {}
        Err(e) => return Err(e.into()),
    }
    for _ in 0..QUOTA_WRITE_ATTEMPTS {
        let addr = t.address();
        let read = app
            .router
            .read_record(addr, |route, db| async move {
                RecordStore::new(&db, &route.shard).in_layout(Layout::of(&route)).read(addr).await
            })
            .await?;
        let (old, live) = match &read {
            RecordRead::Live(record) => (Some(&*record.value), Some(record.version)),
            RecordRead::Gone(_) | RecordRead::Absent => (None, None),
        };
        if !condition.allows(live) {
            return Err(StoreError::PreconditionFailed.into());
        }
        let growth = Usage {
            records: u64::from(old.is_none()),
            record_bytes: bytes.saturating_sub(old.map_or(0, |v| v.get().len() as u64)),
            index_entries: if indexes > 0 { app.indexes.entries_added(tenant, collection, old, value)? } else { 0 },
            ..Usage::default()
        };
        let _admission = app.quota_gate.admit(&t.tenant, quotas, growth).await?;
        let pinned = live.map_or(WriteCondition::Absent, |version| WriteCondition::VersionIn(vec![version]));
        match put_on_shard(app, t, value, &pinned, served_on).await {
            // Another write changed the record since it was read: read it again.
            Err(e) if e.code() == Code::PreconditionFailed.as_str() => continue,
            written => return written,
        }
    }
    Err(StoreError::WriteContention.into())
}

/// Changes `t` on its shard, in step with its indexes and the record cache: the indexes'
/// entries for `value` (`None`: the record goes) are written before the record and made live
/// after; the cache is told that a write begins and how it ended. `change` runs on the route
/// [`ShardRouter::write`](shardgate_shard_router::ShardRouter::write) finally serves it on
/// (noted in `served_on`), with the write's time (the same on every attempt); `version_of`
/// reads the version its outcome left.
async fn change_on_shard<T, F, Fut>(
    app: &App,
    t: &Target,
    value: Option<&RawValue>,
    served_on: &ServedOn,
    version_of: impl Fn(&T) -> i64,
    change: F,
) -> Result<T, ApiError>
where
    F: Fn(Route, Database, i64) -> Fut,
    Fut: Future<Output = Result<T, shardgate_shard_router::Error>>,
{
    let addr = t.address();
    let indexed = app.indexes.prepare_write(addr, value).await?;
    let cache_key = app.cache.record_key(t.tenant.as_str(), t.collection.as_str(), t.key.as_str());
    let marked = app.begin_record_write(&cache_key).await;
    let now = now_ms();
    // The shard, if it reads from standbys: the write's answer then says its position.
    let with_standbys = parking_lot::Mutex::new(None);
    let written = app
        .router
        .write_record(addr, |route, db| {
            served_on.note(&route);
            routed_to(&route.shard);
            if db.reads_standbys() {
                *with_standbys.lock() = Some((route.shard.clone(), db.clone()));
            }
            change(route, db, now)
        })
        .await;
    let version = written.as_ref().map(&version_of);
    app.indexes.finish_write(indexed, version).await;
    if written.is_ok() {
        fault_points::pass("record_committed").await;
    }
    app.end_record_write(&cache_key, t.collection.as_str(), version, marked).await;
    let written = written?;
    // Asked after the commit: the position covers it.
    if let Some((shard, db)) = with_standbys.into_inner()
        && let Some(position) = db.position(&shard).await
    {
        served_on.note_position(position);
    }
    Ok(written)
}

/// The record store of `db` on `route`: fenced at the route's epoch, in the layout of its
/// collection.
fn routed_store<'a>(db: &'a Database, route: &'a Route) -> RecordStore<'a> {
    RecordStore::new(db, &route.shard).routed_at(route.epoch).in_layout(Layout::of(route))
}

errors!(DeleteRecordErrors:
    InvalidPath, InvalidHeader, TenantNotFound, RecordNotFound, PreconditionFailed, ShardReadOnly, ShardOffline,
    ShardUnavailable, ShardBusy, StaleShardMap
);

/// Delete a record.
#[utoipa::path(delete, path = "/v1/tenants/{tenant}/collections/{collection}/records/{key}", params(RecordPath, ("If-Match" = Option<String>, Header, description = "`*` or quoted versions")), responses(
    (status = 204, description = "Deleted", headers(("x-shardgate-position" = Option<String>, description = "On a shard that reads from standbys (`storage.replica_reads`): the write's place in the shard's WAL; a bounded read that sends it back in `x-shardgate-position` is never older than this write"))),
    DeleteRecordErrors,
))]
pub async fn delete_record(Record { app, t, .. }: Record<Write>, headers: HeaderMap) -> Result<Response, ApiError> {
    let condition = match write_condition(&headers)? {
        WriteCondition::Absent => {
            return Err(ApiError::new(Code::InvalidHeader, "If-None-Match is not allowed on DELETE"));
        }
        condition => condition,
    };
    let served_on = ServedOn::default();
    let answer = delete_from_shard(&app, &t, &condition, &served_on).await;
    served_on.stamp(answer)
}

/// Deletes `t` under `condition` (see [`change_on_shard`]) and answers 204.
async fn delete_from_shard(
    app: &App,
    t: &Target,
    condition: &WriteCondition,
    served_on: &ServedOn,
) -> Result<StatusCode, ApiError> {
    let addr = t.address();
    change_on_shard(
        app,
        t,
        None,
        served_on,
        |tombstone: &i64| *tombstone,
        |route, db, now| async move { routed_store(&db, &route).delete(addr, condition, now).await },
    )
    .await?;
    app.quota_gate.shrank(&t.tenant);
    app.collection_gate.deleted_from(&t.tenant, t.collection.as_str());
    Ok(StatusCode::NO_CONTENT)
}

errors!(ListRecordsErrors: InvalidQuery, InvalidHeader, InvalidCursor, InvalidPath, FanOutLimit, ShardOffline, ShardUnavailable, ShardBusy);

/// How a listing of a distributed collection answers when a shard fails.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Consistency {
    /// Answer with the records of the shards that answered, and say which did not in `_shards`.
    #[default]
    Partial,
    /// 503 `shard_unavailable` unless every shard answered.
    Strict,
}

/// Listing filters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// Only keys starting with this.
    prefix: Option<String>,
    /// Only keys `>=` this.
    start: Option<String>,
    /// Only keys `<` this.
    end: Option<String>,
    /// Page size: default 100, capped at 1000.
    #[param(minimum = 1)]
    limit: Option<u32>,
    /// `next_cursor` of the previous page.
    cursor: Option<String>,
    /// For a distributed collection: `partial` (default) answers without the shards that
    /// failed and names them in `_shards`; `strict` answers 503 instead.
    #[param(inline)]
    consistency: Option<Consistency>,
    /// `true`: run nothing, answer which shards the listing would read (in `explain`).
    explain: Option<bool>,
}

/// A shard a listing could not read.
#[derive(Debug, Serialize, ToSchema)]
pub struct ShardFailureView {
    /// The shard.
    pub shard: String,
    /// The problem code it would have answered with alone (`shard_offline`,
    /// `shard_unavailable`, `shard_busy`, ...).
    pub code: &'static str,
    /// Why, as a stable code (the details are in the server's log).
    pub reason: ShardFailureReason,
}

impl ShardFailureView {
    /// The failure as a tenant sees it; the shard's own error is logged here, once.
    fn of(failure: &ShardFailure) -> Self {
        let reason = ShardFailureReason::from(&failure.error);
        tracing::warn!(
            shard = %failure.shard,
            reason = reason.as_str(),
            error = %failure.error,
            "a shard of a listing did not answer"
        );
        Self { shard: failure.shard.to_string(), code: reason.code().as_str(), reason }
    }
}

/// How the shards of a listing answered (as Elasticsearch's `_shards`).
#[derive(Debug, Serialize, ToSchema)]
pub struct ShardsSummary {
    /// Shards the listing read.
    pub total: u32,
    /// Shards that answered.
    pub successful: u32,
    /// Shards that failed, timed out or were offline: their records are missing from the page.
    pub failed: u32,
    /// Each failed shard and why.
    pub failures: Vec<ShardFailureView>,
}

/// The shards a listing reads.
#[derive(Debug, Serialize, ToSchema)]
pub struct ListingExplanation {
    /// The collection's distribution: `tenant`, `hash` or `range`.
    #[schema(value_type = String, example = "hash")]
    pub distribution: Distribution,
    /// The physical shards it reads, each once.
    pub shards: Vec<String>,
    /// The map epoch the plan was made on.
    pub epoch: u64,
}

/// A page of records.
#[derive(Debug, Serialize, ToSchema)]
pub struct RecordPage {
    /// This page's records, ordered by key (byte order); empty with `explain=true`.
    pub items: Vec<RecordEnvelope>,
    /// Pass as `cursor` to get the next page; `null` on the last page.
    pub next_cursor: Option<String>,
    /// For a distributed collection: how its shards answered.
    #[serde(rename = "_shards", skip_serializing_if = "Option::is_none")]
    pub shards: Option<ShardsSummary>,
    /// With `explain=true`: the shards the listing would read (nothing is read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<ListingExplanation>,
}

/// List a collection's records in key order.
///
/// A collection distributed `tenant` is read on its tenant's home shard. A distributed one
/// (`hash` or `range`) is read on each physical shard that may hold keys in the interval, once
/// per shard and all at once, merged by key; a shard that fails or misses its deadline is named
/// in `_shards` (or, with `consistency=strict`, the answer is 503).
#[utoipa::path(get, path = "/v1/tenants/{tenant}/collections/{collection}/records", params(
    CollectionPath,
    ListQuery,
    ("x-shardgate-consistency" = Option<String>, Header, description = "`strong` or `bounded`, optionally `bounded; max-lag=250ms`: each shard's part may be read from a standby at most that far behind its primary. Without the header: bounded as `storage.replica_reads.collections` says of the collection, else strong"),
    ("x-shardgate-position" = Option<String>, Header, description = "With `bounded`: the `x-shardgate-position` tokens writes returned; the listing is then never older than those writes"),
), responses(
    (status = 200, description = "A page of records ordered by key (byte order)", body = RecordPage, headers(
        ("x-shardgate-read-from" = Option<String>, description = "On a bounded listing: `standby` if standbys served every shard's part, else `primary`"),
    )),
    ListRecordsErrors,
))]
pub async fn list_records(
    Bound { app, tenant, path, input: ApiQuery(query), .. }: Bound<CollectionPath, Read, ApiQuery<ListQuery>>,
    asked: ReadConsistency,
) -> Result<Response, ApiError> {
    let collection = CollectionName::parse(&path.collection).map_err(invalid_path)?;
    let freshness = asked.of(&app, collection.as_str());
    let bound = |kind: &'static str, v: Option<String>| -> Result<Option<String>, ApiError> {
        v.map(|v| check_key_text(kind, &v).map(|()| v).map_err(|e| ApiError::new(Code::InvalidQuery, e.to_string())))
            .transpose()
    };
    let bounds = ListBounds {
        prefix: bound("prefix", query.prefix)?,
        start: bound("start", query.start)?,
        end: bound("end", query.end)?,
        after: query.cursor.as_deref().map(decode_key_cursor).transpose()?.map(|key| key.as_str().to_owned()),
    };
    let limit = app.page_limit(query.limit)?;
    let route = app.router.resolve_fresh(&tenant, Access::Read).await?.0;
    if query.explain == Some(true) {
        let plan = app.router.listing_plan(&tenant, &collection, &bounds)?;
        let explain = ListingExplanation {
            distribution: plan.distribution,
            shards: plan.shards.iter().map(ToString::to_string).collect(),
            epoch: plan.epoch,
        };
        let page = RecordPage { items: Vec::new(), next_cursor: None, shards: None, explain: Some(explain) };
        return RoutedEpoch::of(&route).stamp(Ok(axum::Json(page)));
    }
    routed_to(&route.shard);
    // A listing that reads many shards takes a place among the tenant's fan-outs first.
    let _fan_out = match app.router.distribution_of(&tenant, &collection) {
        Distribution::Tenant => None,
        Distribution::Hash | Distribution::Range => {
            let shards = app.router.listing_plan(&tenant, &collection, &bounds)?.shards.len();
            Some(app.enter_fan_out(tenant.as_str(), shards)?)
        }
    };
    let listing = match app.router.list_records(&tenant, &collection, &bounds, limit + 1, &freshness).await {
        Ok(listing) => listing,
        Err(e) => return RoutedEpoch::of(&route).stamp(Err::<Response, _>(ApiError::from(e))),
    };
    let failures: Vec<ShardFailureView> = listing.failures.iter().map(ShardFailureView::of).collect();
    if query.consistency == Some(Consistency::Strict) && !failures.is_empty() {
        let names: Vec<String> = failures.iter().map(|f| format!("{} ({})", f.shard, f.reason.as_str())).collect();
        return Err(ApiError::shards_missing(format!(
            "consistency=strict, and these shards did not answer: {}",
            names.join(", ")
        )));
    }
    let shards = (listing.plan.distribution != Distribution::Tenant).then(|| {
        let total = listing.plan.shards.len() as u32;
        let failed = failures.len() as u32;
        ShardsSummary { total, successful: total - failed, failed, failures }
    });
    let page = Page::from_overfetch(listing.records, limit, |r| r.key.clone(), RecordEnvelope::from);
    let page = RecordPage { items: page.items, next_cursor: page.next_cursor, shards, explain: None };
    let mut response = axum::Json(page).into_response();
    if freshness != replicas::Consistency::Strong {
        response.headers_mut().insert(READ_FROM_HEADER, read_from_value(Some(listing.read_from)));
    }
    RoutedEpoch::of(&route).stamp(Ok(response))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entity_tag_is_the_quoted_version() {
        for version in [0, 7, 1_234_567, i64::MAX, i64::MIN] {
            assert_eq!(etag(version).to_str().unwrap(), format!("\"{version}\""));
        }
    }
}
