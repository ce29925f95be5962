//! `/v1/admin/tenants/{id}/move`: moving a tenant's home data to another shard while its traffic
//! flows (the work is [`shardgate_shard_router::mover`]'s; follow the job at
//! `/v1/admin/jobs/{id}`, cancel it at `/v1/admin/jobs/{id}/cancel`).

use axum::response::Response;
use serde::Deserialize;
use shardgate_shard_router::ShardId;
use utoipa::{IntoParams, ToSchema};

use crate::server::extract::{Admin, ApiJson, ApiPath};
use crate::wire::envelope::Job;
use crate::wire::error::{ApiError, Code, tenant_in_path};
use crate::wire::openapi::errors;

/// Path of the tenant to move.
#[derive(Debug, Deserialize, IntoParams)]
pub struct MovePath {
    /// Tenant id.
    id: String,
}

/// Body of `POST /v1/admin/tenants/{id}/move`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MoveRequest {
    /// The shard to move the tenant to (registered and `active`).
    pub to: String,
}

errors!(MoveTenantErrors: InvalidBody, InvalidJson, TenantNotFound, ShardNotFound, JobConflict, MoveRefused, CatalogUnavailable);

/// Move a tenant to another shard while its traffic flows: copy, catch up, fence the tenant
/// alone on its old shard, copy the last delta, compare checksums, pin it to the new shard (new
/// epoch), remove the old copy after `storage.moves.cleanup_grace`. Requests of the tenant during
/// the cut-over wait for the new shard (at most `storage.moves.cutover_wait`, then 503
/// `tenant_moving` with `Retry-After`); other tenants are not paused. The job survives a crash of
/// the instance running it (another instance, or the same one restarted, resumes it).
#[utoipa::path(post, path = "/v1/admin/tenants/{id}/move", params(MovePath), request_body = MoveRequest, responses(
    (status = 202, description = "Started; follow it at `/v1/admin/jobs/{id}`", body = Job),
    MoveTenantErrors,
))]
pub async fn move_tenant(
    Admin { app, caller, request }: Admin,
    ApiPath(path): ApiPath<MovePath>,
    ApiJson(body): ApiJson<MoveRequest>,
) -> Result<Response, ApiError> {
    let tenant = tenant_in_path(&path.id)?;
    let to = ShardId::parse(&body.to).map_err(|e| ApiError::new(Code::InvalidBody, format!("to: {e}")))?;
    let audit = caller.audit(&request, "tenant.move", Some(tenant.as_str()), format!("tenant:{tenant} shard:{to}"));
    let job = app.mover.start(&tenant, &to, &audit).await?;
    Ok(Job::accepted(job))
}
