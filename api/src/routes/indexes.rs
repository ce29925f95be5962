//! `/v1/tenants/{tenant}/collections/{collection}/indexes/{index}[/records]`: secondary index
//! definitions and look-ups, adapted from HTTP to [`shardgate_index_tables`], which does the
//! work (its backfill jobs are at `/v1/admin/jobs/{id}`, in `admin/jobs.rs`).

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use shardgate_index_tables::{
    BuildFailure, Defined, FieldPath, IndexDef, IndexName, IndexState, Layout, LiveIndex, Lookup, ValueKey,
};
use shardgate_shard_router::{CollectionName, TenantId};
use utoipa::{IntoParams, ToSchema};

use crate::app::App;
use crate::server::extract::{ApiJson, ApiQuery, Bound, Caller, Manage, NeedsScope, Read, RequestIdHeader, TenantPath};
use crate::wire::envelope::RecordEnvelope;
use crate::wire::error::{ApiError, Code, invalid_path};
use crate::wire::openapi::errors;
use crate::wire::pagination::Page;
use crate::wire::routed_epoch::RoutedEpoch;
use crate::wire::timestamps::rfc3339;

/// Body of `PUT .../indexes/{index}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IndexSpec {
    /// The indexed field, a JSON pointer such as `/email` (or use `fields`).
    pub field: Option<String>,
    /// Several fields, in order, for a composite index (1 to 4).
    pub fields: Option<Vec<String>>,
    /// At most one record per value (409 `unique_violation` for a second). Default false.
    #[serde(default)]
    pub unique: bool,
    /// `normalized` (a reference to the record; default), `covering` (plus copies of `include`)
    /// or `full` (plus a copy of the record).
    pub layout: Option<String>,
    /// The fields a covering index copies.
    pub include: Option<Vec<String>>,
}

/// An index as the API shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct IndexInfo {
    /// Index name.
    pub name: String,
    /// Indexed fields (JSON pointers), in order.
    pub fields: Vec<String>,
    /// Whether values are unique.
    pub unique: bool,
    /// `normalized`, `covering` or `full`.
    pub layout: &'static str,
    /// Copied fields of a covering index.
    pub include: Vec<String>,
    /// `building` (backfill running; look-ups get 409 `index_building`), `active`, or `failed`
    /// (the build failed, see `failure`; look-ups get 409 `index_failed`).
    pub state: &'static str,
    /// Why the build failed, while `state` is `failed`; else `null`.
    pub failure: Option<IndexFailure>,
    /// The backfill job (see `/v1/admin/jobs/{id}`).
    pub job: Option<String>,
    /// Creation time, RFC 3339.
    pub created_at: String,
}

/// Why an index's build failed. Fix the records, then PUT the same definition again to build
/// it again (or delete the index).
#[derive(Debug, Serialize, ToSchema)]
pub struct IndexFailure {
    /// What went wrong: records with values too long to index, records sharing a value of a
    /// unique index, or the error that stopped the backfill.
    pub reason: String,
    /// Keys of records that broke the build, at most 10 (for a shared unique value, the records
    /// on both sides).
    pub offending_keys: Vec<String>,
}

impl From<&BuildFailure> for IndexFailure {
    fn from(f: &BuildFailure) -> Self {
        Self { reason: f.reason.clone(), offending_keys: f.offending_keys.clone() }
    }
}

fn info(index: &LiveIndex) -> IndexInfo {
    let def = &index.def;
    let (layout, include) = match def.layout() {
        Layout::Normalized => ("normalized", Vec::new()),
        Layout::Covering { include } => ("covering", include.iter().map(|f| f.as_str().to_owned()).collect()),
        Layout::Full => ("full", Vec::new()),
    };
    IndexInfo {
        name: def.name().as_str().to_owned(),
        fields: def.fields().iter().map(|f| f.as_str().to_owned()).collect(),
        unique: def.is_unique(),
        layout,
        include,
        state: match index.state {
            IndexState::Active => "active",
            IndexState::Building => "building",
            IndexState::Failed => "failed",
        },
        failure: index.failure.as_ref().map(IndexFailure::from),
        job: index.job_id.clone(),
        created_at: rfc3339(index.created_at_ms),
    }
}

/// Path of one index.
#[derive(Debug, Deserialize, IntoParams)]
pub struct IndexRoute {
    /// Tenant id (must be the token's tenant).
    tenant: String,
    /// Collection name.
    collection: String,
    /// Index name: `[a-z0-9][a-z0-9_-]{0,62}`.
    index: String,
}

/// 400 `invalid_body`: the body's shape is wrong (the definition's own rules are
/// [`shardgate_index_tables::IndexError`]'s).
fn bad_spec(detail: impl Into<String>) -> ApiError {
    ApiError::new(Code::InvalidBody, detail)
}

fn definition(name: &str, spec: IndexSpec) -> Result<IndexDef, ApiError> {
    let name = IndexName::parse(name)?;
    let fields = match (spec.field, spec.fields) {
        (Some(field), None) => vec![field],
        (None, Some(fields)) => fields,
        _ => return Err(bad_spec("give `field` or `fields`")),
    };
    let fields = fields.iter().map(|f| FieldPath::parse(f)).collect::<Result<Vec<_>, _>>()?;
    let layout = match (spec.layout.as_deref().unwrap_or("normalized"), spec.include) {
        ("normalized", None) => Layout::Normalized,
        ("full", None) => Layout::Full,
        ("covering", Some(include)) => {
            Layout::Covering { include: include.iter().map(|f| FieldPath::parse(f)).collect::<Result<_, _>>()? }
        }
        ("covering", None) => return Err(bad_spec("a covering index needs `include`")),
        (_, Some(_)) => return Err(bad_spec("`include` belongs to a covering index")),
        (other, None) => return Err(bad_spec(format!("layout {other:?}: use normalized, covering or full"))),
    };
    Ok(IndexDef::new(name, fields, spec.unique, layout)?)
}

errors!(PutIndexErrors: InvalidBody, InvalidPath, IndexExists, IndexLimitReached);

/// Create an index (its backfill starts at once; it answers look-ups when `active`). The same
/// definition again on a `failed` index builds it again (a retry, once its records are fixed).
/// A collection has at most `limits.max_indexes_per_collection` definitions for its tenant's
/// tier (default free 8, standard 16, premium 32); a new one beyond is 409
/// `index_limit_reached`.
#[utoipa::path(put, path = "/v1/tenants/{tenant}/collections/{collection}/indexes/{index}", params(IndexRoute), request_body = IndexSpec, responses(
    (status = 201, description = "Created; `state` is `building` until the backfill finishes", body = IndexInfo),
    (status = 200, description = "It exists with this definition already; if its build had failed, it is `building` again with a new job", body = IndexInfo),
    PutIndexErrors,
))]
pub async fn put_index(
    request: RequestIdHeader,
    bound: Bound<IndexRoute, Manage, ApiJson<IndexSpec>>,
) -> Result<Response, ApiError> {
    let Bound { app, caller, tenant, incarnation, path: route, input: ApiJson(spec), .. } = bound;
    let collection = CollectionName::parse(&route.collection).map_err(invalid_path)?;
    let def = definition(&route.index, spec)?;
    let target = format!("{tenant}/{collection}/{}", def.name());
    let audit = caller.audit(&request, "index.create", Some(tenant.as_str()), format!("index:{target}"));
    let (tier, _) = app.router.tenant_limits(tenant.as_str()).ok_or_else(ApiError::tenant_not_found)?;
    let cap = app.limits.max_indexes_per_collection.for_tier(tier);
    match app.indexes.define(&tenant, incarnation, &collection, def, cap, &audit).await? {
        Defined::Existing(index) => Ok(axum::Json(info(&index)).into_response()),
        Defined::Retried(index) => {
            app.announce_map_change().await;
            Ok(axum::Json(info(&index)).into_response())
        }
        Defined::Created(index) => {
            app.announce_map_change().await;
            Ok((StatusCode::CREATED, axum::Json(info(&index))).into_response())
        }
    }
}

errors!(GetIndexErrors: TenantNotFound, IndexNotFound);

/// An index's definition and state.
#[utoipa::path(get, path = "/v1/tenants/{tenant}/collections/{collection}/indexes/{index}", params(IndexRoute), responses(
    (status = 200, description = "The index", body = IndexInfo),
    GetIndexErrors,
))]
pub async fn get_index(Index { index, .. }: Index<Read>) -> Result<axum::Json<IndexInfo>, ApiError> {
    Ok(axum::Json(info(&index)))
}

impl TenantPath for IndexRoute {
    fn tenant(&self) -> &str {
        &self.tenant
    }
}

/// The index a request names, of the tenant the caller is bound to with the scope `S` (see
/// [`Bound`]), with the application state and the caller: the preamble of the handlers of one
/// index that take no query and no body.
#[derive(Debug)]
pub struct Index<S> {
    app: Arc<App>,
    caller: Caller,
    index: Arc<LiveIndex>,
    scope: std::marker::PhantomData<S>,
}

impl<S: NeedsScope> FromRequestParts<Arc<App>> for Index<S> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &Arc<App>) -> Result<Self, Self::Rejection> {
        let Bound { app, caller, tenant, path, .. } = Bound::<IndexRoute, S>::from_request_parts(parts, app).await?;
        let index = index_of(&app, &tenant, &path)?;
        Ok(Self { app, caller, index, scope: std::marker::PhantomData })
    }
}

/// The index `route` names in `tenant`'s collection (404 `index_not_found`).
fn index_of(app: &App, tenant: &TenantId, route: &IndexRoute) -> Result<Arc<LiveIndex>, ApiError> {
    let collection = CollectionName::parse(&route.collection).map_err(invalid_path)?;
    Ok(app.indexes.index(tenant.as_str(), collection.as_str(), &route.index)?)
}

errors!(DeleteIndexErrors: TenantNotFound, IndexNotFound);

/// Delete an index, whatever its state (its entries are removed in the background).
#[utoipa::path(delete, path = "/v1/tenants/{tenant}/collections/{collection}/indexes/{index}", params(IndexRoute), responses(
    (status = 204, description = "Deleted"),
    DeleteIndexErrors,
))]
pub async fn delete_index(
    Index { app, caller, index, .. }: Index<Manage>,
    request: RequestIdHeader,
) -> Result<StatusCode, ApiError> {
    let audit =
        caller.audit(&request, "index.delete", Some(index.tenant.as_str()), format!("index:{}", index.target()));
    app.indexes.delete(index, &audit).await?;
    app.announce_map_change().await;
    Ok(StatusCode::NO_CONTENT)
}

/// Look-up parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct LookupQuery {
    /// The value (JSON scalar, or text; a JSON array for a composite index). One index shard is
    /// read.
    value: Option<String>,
    /// Lowest value, inclusive (a range reads every shard holding entries).
    from: Option<String>,
    /// Highest value, exclusive.
    to: Option<String>,
    /// Page size: default 100, capped at 1000.
    #[param(minimum = 1)]
    limit: Option<u32>,
    /// `next_cursor` of the previous page.
    cursor: Option<String>,
}

fn encode_cursor(value_key: &str, record_key: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!("{value_key}\u{0}{record_key}"))
}

fn decode_cursor(cursor: &str) -> Result<(String, String), ApiError> {
    let bad = ApiError::invalid_cursor;
    let text = String::from_utf8(URL_SAFE_NO_PAD.decode(cursor).map_err(|_| bad())?).map_err(|_| bad())?;
    let (value, record) = text.split_once('\u{0}').ok_or_else(bad)?;
    Ok((value.to_owned(), record.to_owned()))
}

errors!(LookupRecordsErrors:
    InvalidQuery, InvalidIndexValue, InvalidCursor, TenantNotFound, IndexNotFound, IndexBuilding, IndexFailed
);

/// Find records by an indexed value (or a range of values), verified against the records.
#[utoipa::path(get, path = "/v1/tenants/{tenant}/collections/{collection}/indexes/{index}/records", params(IndexRoute, LookupQuery), responses(
    (status = 200, description = "The records that hold the value(s) now, in value then key order", body = Page<RecordEnvelope>, headers(("x-index-shards" = u32, description = "Index shards the look-up read"))),
    LookupRecordsErrors,
))]
pub async fn lookup_records(
    Bound { app, tenant, path, input: ApiQuery(query), .. }: Bound<IndexRoute, Read, ApiQuery<LookupQuery>>,
) -> Result<Response, ApiError> {
    let index = index_of(&app, &tenant, &path)?;
    index.ready_for_lookups()?;
    let what = match (&query.value, &query.from, &query.to) {
        (Some(value), None, None) => Lookup::Eq(index.def.query_key(value)?),
        (None, from, to) => Lookup::Range {
            from: from.as_deref().map(ValueKey::from_query).transpose()?,
            to: to.as_deref().map(ValueKey::from_query).transpose()?,
        },
        _ => return Err(ApiError::new(Code::InvalidQuery, "give `value`, or `from` and/or `to`")),
    };
    let limit = app.page_limit(query.limit)?;
    let after = query.cursor.as_deref().map(decode_cursor).transpose()?;
    // A look-up routes on the whole map (index shards by vshard, a range on every shard): its
    // epoch is the map's as it starts.
    let epoch = RoutedEpoch::current(&app.router);
    let found = app.indexes.lookup(&index, &what, after, limit).await.map_err(ApiError::from);
    epoch.stamp(found.map(|found| {
        let page = Page {
            items: found.records.into_iter().map(RecordEnvelope::from).collect::<Vec<_>>(),
            next_cursor: found.next.map(|(value, record)| encode_cursor(&value, &record)),
        };
        let mut response = axum::Json(page).into_response();
        response.headers_mut().insert("x-index-shards", found.shards_queried.into());
        response
    }))
}
