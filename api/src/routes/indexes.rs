//! `/v1/tenants/{tenant}/collections/{collection}/indexes/{index}[/records]`: secondary index
//! definitions and look-ups; `/v1/admin/jobs/{id}`: their backfill jobs. The work is in
//! [`crate::indexing`].

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use shardgate_gatekeeper::Scope;
use shardgate_index_tables::{FieldPath, IndexDef, IndexName, Layout, ValueKey};
use shardgate_shard_router::catalog::{IndexDefRow, JobRow};
use shardgate_shard_router::index_entries::{IndexEntryStore, IndexScope};
use shardgate_shard_router::{CollectionName, now_ms};
use utoipa::{IntoParams, ToSchema};

use super::records::RecordEnvelope;
use crate::app::App;
use crate::error::{ApiError, Problem, invalid_path};
use crate::extract::{ApiJson, ApiPath, ApiQuery, Caller, RequestIdHeader};
use crate::indexing::{IndexState, LiveIndex, Lookup, lookup, spawn_backfill};
use crate::pagination::{Page, page_limit};
use crate::timestamps::rfc3339;

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
    /// `building` (backfill running; look-ups get 409) or `active`.
    pub state: &'static str,
    /// The backfill job (see `/v1/admin/jobs/{id}`).
    pub job: Option<String>,
    /// Creation time, RFC 3339.
    pub created_at: String,
}

fn info(def: &IndexDef, state: IndexState, job: Option<String>, created_at_ms: i64) -> IndexInfo {
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
        state: if state == IndexState::Active { "active" } else { "building" },
        job,
        created_at: rfc3339(created_at_ms),
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

fn bad_spec(e: impl std::fmt::Display) -> ApiError {
    ApiError::bad_request("invalid_body", e.to_string())
}

fn definition(name: &str, spec: IndexSpec) -> Result<IndexDef, ApiError> {
    let name = IndexName::parse(name).map_err(|e| ApiError::bad_request("invalid_path", e.to_string()))?;
    let fields = match (spec.field, spec.fields) {
        (Some(field), None) => vec![field],
        (None, Some(fields)) => fields,
        _ => return Err(bad_spec("give `field` or `fields`")),
    };
    let fields = fields.iter().map(|f| FieldPath::parse(f)).collect::<Result<Vec<_>, _>>().map_err(bad_spec)?;
    let layout = match (spec.layout.as_deref().unwrap_or("normalized"), spec.include) {
        ("normalized", None) => Layout::Normalized,
        ("full", None) => Layout::Full,
        ("covering", Some(include)) => Layout::Covering {
            include: include.iter().map(|f| FieldPath::parse(f)).collect::<Result<_, _>>().map_err(bad_spec)?,
        },
        ("covering", None) => return Err(bad_spec("a covering index needs `include`")),
        (_, Some(_)) => return Err(bad_spec("`include` belongs to a covering index")),
        (other, None) => return Err(bad_spec(format!("layout {other:?}: use normalized, covering or full"))),
    };
    IndexDef::new(name, fields, spec.unique, layout).map_err(bad_spec)
}

fn target(caller: &Caller, route: &IndexRoute, scope: Scope) -> Result<(String, CollectionName), ApiError> {
    let tenant = caller.for_tenant(&route.tenant, scope)?;
    let collection = CollectionName::parse(&route.collection).map_err(invalid_path)?;
    Ok((tenant.to_string(), collection))
}

/// Create an index (its backfill starts at once; it answers look-ups when `active`).
#[utoipa::path(
    put,
    path = "/v1/tenants/{tenant}/collections/{collection}/indexes/{index}",
    tag = "indexes",
    params(IndexRoute),
    request_body = IndexSpec,
    security(("bearer" = ["manage"])),
    responses(
        (status = 201, description = "Created; `state` is `building` until the backfill finishes", body = IndexInfo),
        (status = 200, description = "It exists with this definition already", body = IndexInfo),
        (status = 400, description = "`invalid_body` or `invalid_path`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid token", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Missing `manage` scope", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`tenant_not_found`", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`index_exists`: another definition has this name", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn put_index(
    State(app): State<Arc<App>>,
    caller: Caller,
    request: RequestIdHeader,
    ApiPath(route): ApiPath<IndexRoute>,
    ApiJson(spec): ApiJson<IndexSpec>,
) -> Result<Response, ApiError> {
    let (tenant, collection) = target(&caller, &route, Scope::Manage)?;
    let def = definition(&route.index, spec)?;
    let exists =
        || ApiError::new(StatusCode::CONFLICT, "index_exists", "an index with this name and another definition exists");
    if let Some(existing) = app.indexes.get(&tenant, collection.as_str(), def.name().as_str()) {
        return if existing.def == def {
            Ok(axum::Json(info(&existing.def, existing.state, existing.job_id.clone(), existing.created_at_ms))
                .into_response())
        } else {
            Err(exists())
        };
    }
    let now = now_ms();
    let job_id = format!("job-{}", uuid::Uuid::new_v4().simple());
    let target = format!("{tenant}/{collection}/{}", def.name());
    let row = IndexDefRow {
        tenant: tenant.clone(),
        collection: collection.to_string(),
        name: def.name().as_str().to_owned(),
        definition: serde_json::to_string(&def).map_err(|e| ApiError::internal(&e))?,
        state: "building".into(),
        job_id: Some(job_id.clone()),
        created_at_ms: now,
        updated_at_ms: now,
    };
    let job = JobRow {
        id: job_id.clone(),
        kind: "index.backfill".into(),
        tenant: Some(tenant.clone()),
        target: target.clone(),
        state: "running".into(),
        progress: r#"{"after":null,"indexed":0}"#.into(),
        error: None,
        created_at_ms: now,
        updated_at_ms: now,
    };
    let audit = caller.audit(&request, "index.create", Some(&tenant), format!("index:{target}"));
    if !app.router.catalog().create_index_def(&row, &job, &audit).await? {
        return Err(exists());
    }
    let heads = app.router.refresh().await?;
    app.indexes.follow(&app, heads.epoch).await?;
    app.announce_map_change().await;
    spawn_backfill(Arc::downgrade(&app), job);
    Ok((StatusCode::CREATED, axum::Json(info(&def, IndexState::Building, Some(job_id), now))).into_response())
}

/// An index's definition and state.
#[utoipa::path(
    get,
    path = "/v1/tenants/{tenant}/collections/{collection}/indexes/{index}",
    tag = "indexes",
    params(IndexRoute),
    security(("bearer" = ["read"])),
    responses(
        (status = 200, description = "The index", body = IndexInfo),
        (status = 401, description = "Missing or invalid token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`tenant_not_found` or `index_not_found`", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn get_index(
    State(app): State<Arc<App>>,
    caller: Caller,
    ApiPath(route): ApiPath<IndexRoute>,
) -> Result<axum::Json<IndexInfo>, ApiError> {
    let index = find(&app, &caller, &route, Scope::Read)?;
    Ok(axum::Json(info(&index.def, index.state, index.job_id.clone(), index.created_at_ms)))
}

fn find(app: &App, caller: &Caller, route: &IndexRoute, scope: Scope) -> Result<Arc<LiveIndex>, ApiError> {
    let (tenant, collection) = target(caller, route, scope)?;
    app.indexes
        .get(&tenant, collection.as_str(), &route.index)
        .ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, "index_not_found", "no such index"))
}

/// Delete an index (its entries are removed in the background).
#[utoipa::path(
    delete,
    path = "/v1/tenants/{tenant}/collections/{collection}/indexes/{index}",
    tag = "indexes",
    params(IndexRoute),
    security(("bearer" = ["manage"])),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "Missing or invalid token", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Missing `manage` scope", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`tenant_not_found` or `index_not_found`", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn delete_index(
    State(app): State<Arc<App>>,
    caller: Caller,
    request: RequestIdHeader,
    ApiPath(route): ApiPath<IndexRoute>,
) -> Result<StatusCode, ApiError> {
    let index = find(&app, &caller, &route, Scope::Manage)?;
    let target = format!("{}/{}/{}", index.tenant, index.collection, index.def.name());
    let audit = caller.audit(&request, "index.delete", Some(index.tenant.as_str()), format!("index:{target}"));
    let catalog = app.router.catalog();
    let removed = catalog
        .delete_index_def(index.tenant.as_str(), index.collection.as_str(), index.def.name().as_str(), &audit)
        .await?;
    if removed.is_none() {
        return Err(ApiError::new(StatusCode::NOT_FOUND, "index_not_found", "no such index"));
    }
    if let Some(job) = &index.job_id {
        // Stops a backfill still running.
        let _ = catalog.update_job(job, "cancelled", "{}", Some("the index was deleted")).await;
    }
    let heads = app.router.refresh().await?;
    app.indexes.follow(&app, heads.epoch).await?;
    app.announce_map_change().await;
    let app = app.clone();
    tokio::spawn(async move {
        for (shard, _, db) in app.router.shard_dbs() {
            let scope =
                IndexScope { tenant: &index.tenant, collection: &index.collection, index: index.def.name().as_str() };
            if let Err(e) = IndexEntryStore::new(&db, &shard).delete_index(scope, 1000).await {
                tracing::warn!(shard = %shard, error = %e, "could not delete a removed index's entries");
            }
        }
    });
    Ok(StatusCode::NO_CONTENT)
}

/// Look-up parameters.
#[derive(Debug, Deserialize, IntoParams)]
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
    limit: Option<u32>,
    /// `next_cursor` of the previous page.
    cursor: Option<String>,
}

fn encode_cursor(value_key: &str, record_key: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!("{value_key}\u{0}{record_key}"))
}

fn decode_cursor(cursor: &str) -> Result<(String, String), ApiError> {
    let bad = || ApiError::bad_request("invalid_cursor", "the cursor is not one this index gave");
    let text = String::from_utf8(URL_SAFE_NO_PAD.decode(cursor).map_err(|_| bad())?).map_err(|_| bad())?;
    let (value, record) = text.split_once('\u{0}').ok_or_else(bad)?;
    Ok((value.to_owned(), record.to_owned()))
}

/// Find records by an indexed value (or a range of values), verified against the records.
#[utoipa::path(
    get,
    path = "/v1/tenants/{tenant}/collections/{collection}/indexes/{index}/records",
    tag = "indexes",
    params(IndexRoute, LookupQuery),
    security(("bearer" = ["read"])),
    responses(
        (status = 200, description = "The records that hold the value(s) now, in value then key order", body = Page<RecordEnvelope>, headers(("x-index-shards" = u32, description = "Index shards the look-up read"))),
        (status = 400, description = "`invalid_query`, `invalid_index_value` or `invalid_cursor`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid token", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`tenant_not_found` or `index_not_found`", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`index_building`: the backfill has not finished", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn lookup_records(
    State(app): State<Arc<App>>,
    caller: Caller,
    ApiPath(route): ApiPath<IndexRoute>,
    ApiQuery(query): ApiQuery<LookupQuery>,
) -> Result<Response, ApiError> {
    let index = find(&app, &caller, &route, Scope::Read)?;
    if index.state == IndexState::Building {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "index_building",
            "the index is still being built; retry later",
        ));
    }
    let bad = |e: shardgate_index_tables::IndexError| ApiError::bad_request("invalid_index_value", e.to_string());
    let what = match (&query.value, &query.from, &query.to) {
        (Some(value), None, None) => Lookup::Eq(index.def.query_key(value).map_err(bad)?),
        (None, from, to) => Lookup::Range {
            from: from.as_deref().map(ValueKey::from_query).transpose().map_err(bad)?,
            to: to.as_deref().map(ValueKey::from_query).transpose().map_err(bad)?,
        },
        _ => return Err(ApiError::bad_request("invalid_query", "give `value`, or `from` and/or `to`")),
    };
    let limit = page_limit(query.limit, app.limits.default_list_limit, app.limits.max_list_limit)?;
    let after = query.cursor.as_deref().map(decode_cursor).transpose()?;
    let found = lookup(&app, &index, &what, after, limit).await?;
    let page = Page {
        items: found.records.into_iter().map(RecordEnvelope::from).collect::<Vec<_>>(),
        next_cursor: found.next.map(|(value, record)| encode_cursor(&value, &record)),
    };
    let mut response = axum::Json(page).into_response();
    response.headers_mut().insert("x-index-shards", found.shards_queried.into());
    Ok(response)
}

/// A background job.
#[derive(Debug, Serialize, ToSchema)]
pub struct Job {
    /// Job id.
    pub id: String,
    /// `index.backfill`.
    pub kind: String,
    /// What it works on (`tenant/collection/index`).
    pub target: String,
    /// `running`, `done`, `failed` or `cancelled`.
    pub state: String,
    /// Progress (`indexed`: entries written so far; `after`: the last record key done).
    #[schema(value_type = Object)]
    pub progress: Value,
    /// Why it failed.
    pub error: Option<String>,
    /// Creation time, RFC 3339.
    pub created_at: String,
    /// Last progress, RFC 3339.
    pub updated_at: String,
}

/// Path of one job.
#[derive(Debug, Deserialize, IntoParams)]
pub struct JobRoute {
    /// Job id.
    id: String,
}

/// A background job's state and progress.
#[utoipa::path(
    get,
    path = "/v1/admin/jobs/{id}",
    tag = "admin",
    params(JobRoute),
    security(("bearer" = ["admin"])),
    responses(
        (status = 200, description = "The job", body = Job),
        (status = 401, description = "Missing or invalid token", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Missing `admin` scope", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`job_not_found`", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn get_job(
    State(app): State<Arc<App>>,
    caller: Caller,
    ApiPath(route): ApiPath<JobRoute>,
) -> Result<axum::Json<Job>, ApiError> {
    caller.require_admin()?;
    let job = app
        .router
        .catalog()
        .job(&route.id)
        .await?
        .ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, "job_not_found", "no such job"))?;
    Ok(axum::Json(Job {
        progress: serde_json::from_str(&job.progress).unwrap_or(Value::Null),
        created_at: rfc3339(job.created_at_ms),
        updated_at: rfc3339(job.updated_at_ms),
        id: job.id,
        kind: job.kind,
        target: job.target,
        state: job.state,
        error: job.error,
    }))
}

/// Body of `POST /v1/admin/index-audits`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AuditRequest {
    /// Tenant.
    pub tenant: String,
    /// Collection.
    pub collection: String,
    /// Index name.
    pub index: String,
}

/// Start a drift audit of an index: compares entries and records, writes missing entries and
/// removes dangling ones; the counts are the job's progress.
#[utoipa::path(
    post,
    path = "/v1/admin/index-audits",
    tag = "admin",
    request_body = AuditRequest,
    security(("bearer" = ["admin"])),
    responses(
        (status = 202, description = "Started; follow it at `/v1/admin/jobs/{id}`", body = Job),
        (status = 400, description = "`invalid_body`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid token", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Missing `admin` scope", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`index_not_found`", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn start_audit(
    State(app): State<Arc<App>>,
    caller: Caller,
    request: RequestIdHeader,
    ApiJson(body): ApiJson<AuditRequest>,
) -> Result<Response, ApiError> {
    caller.require_admin()?;
    let index = app
        .indexes
        .get(&body.tenant, &body.collection, &body.index)
        .ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, "index_not_found", "no such index"))?;
    let now = now_ms();
    let job = JobRow {
        id: format!("job-{}", uuid::Uuid::new_v4().simple()),
        kind: "index.audit".into(),
        tenant: Some(index.tenant.to_string()),
        target: format!("{}/{}/{}", index.tenant, index.collection, index.def.name()),
        state: "running".into(),
        progress: "{}".into(),
        error: None,
        created_at_ms: now,
        updated_at_ms: now,
    };
    let audit = caller.audit(&request, "index.audit", Some(index.tenant.as_str()), format!("index:{}", job.target));
    app.router.catalog().insert_job(&job, &audit).await?;
    crate::indexing::spawn_audit(Arc::downgrade(&app), job.clone());
    let view = Job {
        progress: Value::Object(Default::default()),
        created_at: rfc3339(job.created_at_ms),
        updated_at: rfc3339(job.updated_at_ms),
        id: job.id,
        kind: job.kind,
        target: job.target,
        state: job.state,
        error: None,
    };
    Ok((StatusCode::ACCEPTED, axum::Json(view)).into_response())
}
