//! `/v1/admin/jobs/{id}`: background jobs (index backfills and drift audits), their state and
//! progress.

use serde::Deserialize;
use utoipa::IntoParams;

use crate::envelope::Job;
use crate::error::{ApiError, Code};
use crate::extract::{Admin, ApiPath};
use crate::openapi::errors;

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
