//! `/v1/admin/index-audits`: starting an index drift audit (the work is
//! [`shardgate_index_tables`]'; follow the job at `/v1/admin/jobs/{id}`).

use axum::response::Response;
use serde::Deserialize;
use utoipa::ToSchema;

use crate::server::extract::{Admin, ApiJson};
use crate::wire::envelope::Job;
use crate::wire::error::ApiError;
use crate::wire::openapi::errors;

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

errors!(StartAuditErrors: InvalidBody, IndexNotFound);

/// Start a drift audit of an index: compares entries and records, writes missing entries and
/// removes dangling ones; the counts are the job's progress.
#[utoipa::path(post, path = "/v1/admin/index-audits", request_body = AuditRequest, responses(
    (status = 202, description = "Started; follow it at `/v1/admin/jobs/{id}`", body = Job),
    StartAuditErrors,
))]
pub async fn start_audit(
    Admin { app, caller, request }: Admin,
    ApiJson(body): ApiJson<AuditRequest>,
) -> Result<Response, ApiError> {
    let index = app.indexes.index(&body.tenant, &body.collection, &body.index)?;
    let audit = caller.audit(&request, "index.audit", Some(index.tenant.as_str()), format!("index:{}", index.target()));
    let job = app.indexes.start_drift_audit(&index, &audit).await?;
    Ok(Job::accepted(job))
}
