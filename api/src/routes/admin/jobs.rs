//! `/v1/admin/jobs`: background jobs (moves, rebalances and drains, redistributions, index
//! backfills and drift audits), listed newest first, one by one, and cancelled.

use serde::Deserialize;
use shardgate_index_tables::{backfill::BACKFILL_JOB, drift_audit::DRIFT_AUDIT_JOB};
use shardgate_shard_router::catalog::CancelRequest;
use shardgate_shard_router::mover::MOVE_JOB_KINDS;
use shardgate_shard_router::rebalancer::REBALANCE_JOB;
use utoipa::IntoParams;

use crate::server::extract::{Admin, ApiPath, ApiQuery};
use crate::wire::envelope::Job;
use crate::wire::error::{ApiError, Code};
use crate::wire::openapi::errors;
use crate::wire::pagination::{Page, decode_cursor};

/// The states of a job.
const STATES: [&str; 4] = ["running", "done", "failed", "cancelled"];

/// Which jobs to list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct JobsQuery {
    /// Only jobs in this state: `running`, `done`, `failed` or `cancelled`.
    state: Option<String>,
    /// Only jobs of this kind: `tenant.move`, `vshard.move`, `range.move`,
    /// `collection.redistribute`, `vshards.rebalance`, `index.backfill` or `index.audit`.
    kind: Option<String>,
    /// Page size: default 100, capped at 1000.
    #[param(minimum = 1)]
    limit: Option<u32>,
    /// `next_cursor` of the previous page.
    cursor: Option<String>,
}

errors!(ListJobsErrors: InvalidQuery, InvalidCursor, CatalogUnavailable);

/// The jobs, newest first: running and ended ones (moves, rebalances and drains,
/// redistributions, index backfills and audits), each with its state and progress, filtered by
/// state and kind.
#[utoipa::path(get, path = "/v1/admin/jobs", params(JobsQuery), responses(
    (status = 200, description = "A page of jobs, newest first", body = Page<Job>),
    ListJobsErrors,
))]
pub async fn list_jobs(
    Admin { app, .. }: Admin,
    ApiQuery(query): ApiQuery<JobsQuery>,
) -> Result<axum::Json<Page<Job>>, ApiError> {
    let limit = app.page_limit(query.limit)?;
    if let Some(state) = query.state.as_deref().filter(|s| !STATES.contains(s)) {
        return Err(ApiError::new(Code::InvalidQuery, format!("state: {state:?} is not one of {}", STATES.join(", "))));
    }
    let kinds: Vec<&str> = MOVE_JOB_KINDS.into_iter().chain([REBALANCE_JOB, BACKFILL_JOB, DRIFT_AUDIT_JOB]).collect();
    if let Some(kind) = query.kind.as_deref().filter(|k| !kinds.contains(k)) {
        return Err(ApiError::new(Code::InvalidQuery, format!("kind: {kind:?} is not one of {}", kinds.join(", "))));
    }
    // The cursor holds the last job's creation time and id.
    let before = match query.cursor.as_deref().map(decode_cursor).transpose()? {
        Some(text) => {
            let (at, id) = text.split_once('.').ok_or_else(ApiError::invalid_cursor)?;
            Some((at.parse::<i64>().map_err(|_| ApiError::invalid_cursor())?, id.to_owned()))
        }
        None => None,
    };
    let catalog = app.router.catalog();
    let jobs = catalog
        .list_jobs(
            query.state.as_deref(),
            query.kind.as_deref(),
            before.as_ref().map(|(at, id)| (*at, id.as_str())),
            limit + 1,
        )
        .await?;
    Ok(axum::Json(Page::from_overfetch(jobs, limit, |j| format!("{}.{}", j.created_at_ms, j.id), Job::from)))
}

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
