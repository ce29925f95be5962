//! `/v1/admin/jobs/{id}`: background jobs (index backfills and drift audits), their state and
//! progress.

use serde::Deserialize;
use shardgate_shard_router::catalog::CancelRequest;
use utoipa::IntoParams;

use crate::server::extract::{Admin, ApiPath};
use crate::wire::envelope::Job;
use crate::wire::error::{ApiError, Code};
use crate::wire::openapi::errors;

/// Path of one job.
#[derive(Debug, Deserialize, IntoParams)]
pub struct JobRoute {
    /// Job id.
    id: String,
}

errors!(GetJobErrors: JobNotFound);

/// A background job's state and progress.
#[utoipa::path(get, path = "/v1/admin/jobs/{id}", params(JobRoute), responses(
    (status = 200, description = "The job", body = Job),
    GetJobErrors,
))]
pub async fn get_job(Admin { app, .. }: Admin, ApiPath(route): ApiPath<JobRoute>) -> Result<axum::Json<Job>, ApiError> {
    let job = app.router.catalog().job(&route.id).await?.ok_or(Code::JobNotFound)?;
    Ok(axum::Json(Job::from(job)))
}

errors!(CancelJobErrors: JobNotFound, JobPastCancel, CatalogUnavailable);

/// Ask a running job to cancel. A move before its switch rolls back (the tenant stays where it
/// was, the copy is removed) and ends `cancelled`; a move past its switch (phase `cleanup`) can
/// no longer be cancelled: 409 `job_past_cancel`, and it finishes. A job that already ended is
/// left as it is.
#[utoipa::path(post, path = "/v1/admin/jobs/{id}/cancel", params(JobRoute), responses(
    (status = 202, description = "Cancellation requested (or the job had ended): follow the job", body = Job),
    CancelJobErrors,
))]
pub async fn cancel_job(
    Admin { app, caller, request }: Admin,
    ApiPath(route): ApiPath<JobRoute>,
) -> Result<axum::response::Response, ApiError> {
    let audit = caller.audit(&request, "job.cancel", None, format!("job:{}", route.id));
    if app.router.catalog().request_job_cancel(&route.id, &audit).await? == CancelRequest::PastSwitch {
        return Err(ApiError::new(
            Code::JobPastCancel,
            format!(
                "job {} is past its switch: the new placement is in force and the job will finish \
                 removing the old copy; it can no longer be cancelled",
                route.id
            ),
        ));
    }
    let job = app.router.catalog().job(&route.id).await?.ok_or(Code::JobNotFound)?;
    Ok(Job::accepted(job))
}
