//! `/v1/admin/jobs/{id}`: background jobs (index backfills and drift audits), their state and
//! progress.

use std::sync::Arc;

use axum::extract::State;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::app::App;
use crate::envelope::Job;
use crate::error::{ApiError, Problem};
use crate::extract::{ApiPath, Caller};

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
    params(JobRoute),
    responses(
        (status = 200, description = "The job", body = Job),
        (status = 404, description = "`job_not_found`", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn get_job(
    State(app): State<Arc<App>>,
    caller: Caller,
    ApiPath(route): ApiPath<JobRoute>,
) -> Result<axum::Json<Job>, ApiError> {
    caller.require_admin()?;
    let job = app.router.catalog().job(&route.id).await?.ok_or_else(ApiError::job_not_found)?;
    Ok(axum::Json(Job::from(job)))
}
