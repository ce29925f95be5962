//! `/v1/admin/shards[/{id}]`: register shards by URL, read their statistics, change their state,
//! unregister them. URLs are never echoed back.

use axum::http::StatusCode;
use axum::response::Response;
use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use shardgate_shard_router::db::PoolConnections;
use shardgate_shard_router::health::{BreakerState, HealthReport};
use shardgate_shard_router::registration::shown_database_url;
use shardgate_shard_router::topology::ShardStats;
use shardgate_shard_router::{ShardId, ShardState};
use utoipa::{IntoParams, ToSchema};

use crate::server::extract::{Admin, ApiJson, ApiPath};
use crate::wire::envelope::created;
use crate::wire::error::{ApiError, Code, shard_in_path};
use crate::wire::openapi::errors;
use crate::wire::timestamps::rfc3339;

/// A registered shard with statistics. Its URL is never shown.
#[derive(Debug, Serialize, ToSchema)]
pub struct Shard {
    /// Shard id.
    pub id: String,
    /// `sqlite` or `postgres`.
    pub engine: String,
    /// `active`, `read_only` or `offline`.
    #[schema(value_type = String, example = "active")]
    pub state: ShardState,
    /// vshards it owns.
    pub vshards: u64,
    /// Tenants whose home it is.
    pub tenants: u64,
    /// Tenants pinned to it.
    pub pinned_tenants: u64,
    /// Live records of the tenants whose home it is; `null` when they cannot be counted
    /// (offline or unreachable). A tenant is counted where the catalog places it: the copy a
    /// move makes before its switch, and the old copy it leaves until its clean-up, are not
    /// counted, so a sum over the shards counts each tenant once.
    pub records: Option<u64>,
    /// Its database's size on disk in bytes (PostgreSQL's `pg_database_size`, which counts the
    /// database's own catalogs: several MiB when empty; SQLite's pages); `null` when it cannot
    /// be measured.
    pub bytes: Option<u64>,
    /// The size of its data in bytes: its tables with their indexes (PostgreSQL's
    /// `pg_total_relation_size` of each; SQLite's pages in use), part of `bytes`. A moved
    /// tenant's old copy counts here until its clean-up. `null` when it cannot be measured.
    pub data_bytes: Option<u64>,
    /// Its database's circuit breaker and bulkhead on the instance that answered; `null` when
    /// the instance has no pool open for it.
    pub breaker: Option<Breaker>,
    /// Its database's connection pool on the instance that answered; `null` when the instance
    /// has no pool open for it.
    pub connections: Option<Connections>,
    /// Why the instance that answered does not use the shard, if it does not: its database
    /// carries another shard's identity marker (requests for it get 503 `shard_unavailable`).
    /// `null` normally.
    pub problem: Option<String>,
    /// Registration time, RFC 3339.
    pub created_at: String,
    /// Last state change, RFC 3339.
    pub updated_at: String,
}

/// A shard database's circuit breaker and bulkhead, as one instance sees them.
#[derive(Debug, Serialize, ToSchema)]
pub struct Breaker {
    /// `closed` (requests run), `open` (they fail at once with 503 `shard_unavailable`; probes
    /// run), `half_open` (one trial request at a time) or `forced_open` (by an operator, until
    /// reset).
    #[schema(value_type = String, example = "closed")]
    pub state: BreakerState,
    /// Why it opened, while it is not closed.
    pub reason: Option<String>,
    /// How many times it opened since the instance started.
    pub opens: u64,
    /// Statements in progress on the database (running or waiting for a connection).
    pub in_progress: u32,
    /// Statements refused by the open breaker since the instance started.
    pub refused: u64,
    /// Statements refused because too many were in progress (503 `shard_busy`).
    pub shed: u64,
    /// Reads retried on another connection since the instance started.
    pub retries: u64,
}

/// A shard database's connection pool, as one instance sees it. Pools open connections when
/// statements need them and close them when idle, up to `max` (`storage.pool.max_connections`,
/// shared among the shards of one PostgreSQL server, at most 4 for SQLite).
#[derive(Debug, Serialize, ToSchema)]
pub struct Connections {
    /// Connections open (in use or idle).
    pub open: u32,
    /// Connections open and idle; `open - idle` are in use.
    pub idle: u32,
    /// The most connections the pool opens.
    pub max: u32,
}

impl From<PoolConnections> for Connections {
    fn from(c: PoolConnections) -> Self {
        Self { open: c.open, idle: c.idle, max: c.max }
    }
}

impl From<HealthReport> for Breaker {
    fn from(h: HealthReport) -> Self {
        Self {
            state: h.breaker,
            reason: h.reason,
            opens: h.opens,
            in_progress: h.in_progress,
            refused: h.refused,
            shed: h.shed,
            retries: h.retries,
        }
    }
}

impl From<ShardStats> for Shard {
    fn from(s: ShardStats) -> Self {
        Self {
            id: s.shard.id.to_string(),
            engine: s.shard.engine.as_str().to_owned(),
            state: s.shard.state,
            vshards: s.vshards,
            tenants: s.tenants,
            pinned_tenants: s.pinned_tenants,
            records: s.records,
            bytes: s.bytes,
            data_bytes: s.data_bytes,
            breaker: s.health.map(Breaker::from),
            connections: s.connections.map(Connections::from),
            problem: s.problem,
            created_at: rfc3339(s.shard.created_at_ms),
            updated_at: rfc3339(s.shard.updated_at_ms),
        }
    }
}

/// Body of `POST /v1/admin/shards`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterShard {
    /// Shard id: `[a-z0-9][a-z0-9-]{0,62}`.
    #[schema(value_type = String, example = "shard-4")]
    pub id: ShardId,
    /// `postgres://user:password@host/db`, or `sqlite://path` when the catalog is SQLite (never
    /// an in-memory SQLite database: 422 `unsafe_shard_url`). The database must not be another
    /// shard already (409 `shard_database_claimed`). Stored in the catalog, never returned.
    #[schema(value_type = String, example = "postgres://shardgate@db-4.internal/shard4")]
    pub url: SecretString,
}

/// Body of `PATCH /v1/admin/shards/{id}`: a new state, a new URL, or both (the URL is changed
/// first).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateShard {
    /// New state.
    #[schema(value_type = Option<String>, example = "read_only")]
    #[serde(default)]
    pub state: Option<ShardState>,
    /// New URL of the shard's database: the same database reached another way (a rotated
    /// password, another host name, other TLS parameters). Checked as a registration checks
    /// one (the same engine, TLS as it asks: 422 `shard_tls_failed`; reachable: 422
    /// `shard_unreachable`), and the database must carry this shard's identity marker (409
    /// `shard_identity_mismatch` otherwise). Stored in the catalog, never returned or logged;
    /// the audit log keeps it without password or query.
    #[schema(value_type = Option<String>, example = "postgres://shardgate:new-password@db-4.internal/shard4")]
    #[serde(default)]
    pub url: Option<SecretString>,
}

/// Path of one shard.
#[derive(Debug, Deserialize, IntoParams)]
pub struct ShardPath {
    /// Shard id.
    id: String,
}

/// The shards of the list.
#[derive(Debug, Serialize, ToSchema)]
pub struct ShardList {
    /// Every registered shard, ordered by id.
    pub items: Vec<Shard>,
}

errors!(RegisterShardErrors:
    InvalidBody, InvalidJson, InvalidDatabaseUrl, ShardExists, ShardDatabaseClaimed, ShardUnreachable, ShardTlsFailed,
    UnsafeShardUrl
);

/// Register a shard by URL.
#[utoipa::path(post, path = "/v1/admin/shards", request_body = RegisterShard, responses(
    (status = 201, description = "Registered (connected and migrated)", body = Shard),
    RegisterShardErrors,
))]
pub async fn register_shard(
    Admin { app, caller, request }: Admin,
    ApiJson(body): ApiJson<RegisterShard>,
) -> Result<Response, ApiError> {
    let audit = caller.audit(&request, "shard.register", None, format!("shard:{}", body.id));
    let row = app.topology().register_shard(body.id, body.url, &audit).await?;
    app.announce_map_change().await;
    tracing::info!(shard = %row.id, engine = row.engine.as_str(), "shard registered");
    let stats = app.topology().shard_stats(&row.id).await?;
    Ok(created(&format!("/v1/admin/shards/{}", row.id), Shard::from(stats)))
}

/// List shards with statistics.
#[utoipa::path(get, path = "/v1/admin/shards", responses(
    (status = 200, description = "Every shard", body = ShardList),
))]
pub async fn list_shards(Admin { app, .. }: Admin) -> Result<axum::Json<ShardList>, ApiError> {
    let items = app.topology().all_shard_stats().await?.into_iter().map(Shard::from).collect();
    Ok(axum::Json(ShardList { items }))
}

errors!(GetShardErrors: ShardNotFound);

/// Read a shard with statistics.
#[utoipa::path(get, path = "/v1/admin/shards/{id}", params(ShardPath), responses(
    (status = 200, description = "The shard", body = Shard),
    GetShardErrors,
))]
pub async fn get_shard(
    Admin { app, .. }: Admin,
    ApiPath(path): ApiPath<ShardPath>,
) -> Result<axum::Json<Shard>, ApiError> {
    let id = shard_in_path(&path.id)?;
    Ok(axum::Json(Shard::from(app.topology().shard_stats(&id).await?)))
}

errors!(UpdateShardErrors:
    InvalidBody, InvalidJson, ShardNotFound, InvalidDatabaseUrl, ShardUnreachable, ShardTlsFailed, UnsafeShardUrl,
    ShardIdentityMismatch
);

/// Change a shard's state (`active`, `read_only`, `offline`, `draining`; enforced on the next
/// request) or its URL, or both. `draining` only marks the shard (it serves as `active` does but
/// receives nothing); `POST /v1/admin/shards/{id}/drain` marks it and moves its data off in one
/// call. A new URL must reach the shard's own database (its identity marker); once it is
/// acknowledged, this instance's statements use it, and every other instance's from its next
/// catalog refresh (at once when Redis is shared). Pools to the old URL drain: statements under
/// way finish on them. Audited (`shard.url`) with the URL's user, host, port and database only.
#[utoipa::path(patch, path = "/v1/admin/shards/{id}", params(ShardPath), request_body = UpdateShard, responses(
    (status = 200, description = "The updated shard", body = Shard),
    UpdateShardErrors,
))]
pub async fn update_shard(
    Admin { app, caller, request }: Admin,
    ApiPath(path): ApiPath<ShardPath>,
    ApiJson(body): ApiJson<UpdateShard>,
) -> Result<axum::Json<Shard>, ApiError> {
    let id = shard_in_path(&path.id)?;
    if body.state.is_none() && body.url.is_none() {
        return Err(ApiError::new(Code::InvalidBody, "give state, url or both"));
    }
    if let Some(url) = body.url {
        let shown = shown_database_url(&url);
        let audit = caller.audit(&request, "shard.url", None, format!("shard:{id} {shown}"));
        app.topology().change_shard_url(&id, url, &audit).await?;
        app.announce_map_change().await;
        tracing::info!(shard = %id, url = %shown, "shard URL changed");
    }
    if let Some(state) = body.state {
        let audit = caller.audit(&request, "shard.state", None, format!("shard:{id} {}", state.as_str()));
        app.topology().set_shard_state(&id, state, &audit).await?;
        app.announce_map_change().await;
        tracing::info!(shard = %id, state = state.as_str(), "shard state changed");
    }
    Ok(axum::Json(Shard::from(app.topology().shard_stats(&id).await?)))
}

errors!(DeleteShardErrors: ShardNotFound, ShardInUse);

/// Unregister a shard that owns no vshard and no pinned tenant.
#[utoipa::path(delete, path = "/v1/admin/shards/{id}", params(ShardPath), responses(
    (status = 204, description = "Unregistered (its database is left untouched)"),
    DeleteShardErrors,
))]
pub async fn delete_shard(
    Admin { app, caller, request }: Admin,
    ApiPath(path): ApiPath<ShardPath>,
) -> Result<StatusCode, ApiError> {
    let id = shard_in_path(&path.id)?;
    let audit = caller.audit(&request, "shard.delete", None, format!("shard:{id}"));
    app.topology().remove_shard(&id, &audit).await?;
    app.announce_map_change().await;
    tracing::info!(shard = %id, "shard unregistered");
    Ok(StatusCode::NO_CONTENT)
}

/// What to do with a shard's circuit breaker (`POST /v1/admin/shards/{id}/breaker`).
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum BreakerAction {
    /// Open it until reset: requests for the shard fail at once with 503 `shard_unavailable`.
    ForceOpen,
    /// Close it and forget its failures: requests run again.
    Reset,
}

/// Body of `POST /v1/admin/shards/{id}/breaker`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BreakerCommand {
    /// `force_open` or `reset`.
    pub action: BreakerAction,
    /// Why (kept in the audit log and shown as the breaker's reason); at most 200 characters.
    #[serde(default)]
    pub reason: Option<String>,
}

errors!(BreakerErrors: InvalidBody, InvalidJson, ShardNotFound);

/// Force a shard's circuit breaker open, or reset it, on the instance that receives the request
/// (audited). To stop traffic to a shard on every instance, set its state to `offline` instead.
#[utoipa::path(post, path = "/v1/admin/shards/{id}/breaker", params(ShardPath), request_body = BreakerCommand, responses(
    (status = 200, description = "The shard with its breaker's new state", body = Shard),
    BreakerErrors,
))]
pub async fn command_breaker(
    Admin { app, caller, request }: Admin,
    ApiPath(path): ApiPath<ShardPath>,
    ApiJson(body): ApiJson<BreakerCommand>,
) -> Result<axum::Json<Shard>, ApiError> {
    let id = shard_in_path(&path.id)?;
    let reason = body.reason.unwrap_or_default();
    if reason.chars().count() > 200 || reason.chars().any(char::is_control) {
        return Err(ApiError::new(Code::InvalidBody, "reason: at most 200 characters, no control characters"));
    }
    let health = app.router.shard_health(&id)?;
    let (action, open) = match body.action {
        BreakerAction::ForceOpen => ("shard.breaker.force_open", true),
        BreakerAction::Reset => ("shard.breaker.reset", false),
    };
    let audit = caller.audit(&request, action, None, format!("shard:{id} {reason}").trim_end().to_owned());
    app.router.catalog().append_audit(&audit).await?;
    health.force(open, if reason.is_empty() { "by an operator" } else { &reason });
    tracing::warn!(shard = %id, action, reason = %reason, "circuit breaker changed by an operator");
    Ok(axum::Json(Shard::from(app.topology().shard_stats(&id).await?)))
}
