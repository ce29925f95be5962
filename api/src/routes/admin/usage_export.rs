//! `GET /v1/admin/usage?day=`: the daily usage export for billing, one JSON line per tenant that
//! used anything on the day (`shardgate_shard_router::usage::daily` keeps it in the catalog).

use axum::http::{HeaderName, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use shardgate_shard_router::usage::daily::day_of;
use utoipa::IntoParams;

use crate::server::extract::{Admin, ApiQuery};
use crate::wire::envelope::UsageDayLine;
use crate::wire::error::{ApiError, Code};
use crate::wire::openapi::errors;
use crate::wire::timestamps::{date_of_day, day_of_date};

/// The media type of the export: JSON lines.
pub const JSON_LINES: &str = "application/x-ndjson";

/// The header naming how many hours of the day had a storage sample (24 for a whole day; fewer
/// when no instance ran for an hour, or the day is today).
pub const HOURS_SAMPLED: &str = "usage-hours-sampled";

/// Query of `/v1/admin/usage`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UsageDayQuery {
    /// The UTC day, `YYYY-MM-DD`: today (so far) or a day within `usage.retention_days`.
    #[param(example = "2026-11-28")]
    day: String,
}

errors!(UsageExportErrors: InvalidQuery, CatalogUnavailable);

/// Every tenant's usage on one UTC day, for billing, as JSON lines (`application/x-ndjson`): one
/// object per tenant that used anything, ordered by tenant. Requests and bytes are stored by
/// every instance every `usage.flush_interval` (this instance's are stored before it answers),
/// storage once an hour; today's lines grow until the day ends. Days older than
/// `usage.retention_days` are deleted.
#[utoipa::path(get, path = "/v1/admin/usage", params(UsageDayQuery), responses(
    (status = 200, description = "JSON lines: one `UsageDayLine` object per line, one line per tenant that used anything that day (none: an empty body)", body = String, content_type = "application/x-ndjson", headers(("usage-hours-sampled" = u64, description = "How many hours of the day had a storage sample (24 for a whole day; fewer for today, or when no instance ran for an hour)"))),
    UsageExportErrors,
))]
pub async fn export_usage(
    Admin { app, .. }: Admin,
    ApiQuery(query): ApiQuery<UsageDayQuery>,
) -> Result<Response, ApiError> {
    let day = day_of_date(&query.day)
        .ok_or_else(|| ApiError::new(Code::InvalidQuery, "day: must be a date, YYYY-MM-DD (UTC)"))?;
    let now = app.daily_usage.now_ms();
    let today = day_of(now);
    if day > today {
        return Err(ApiError::new(
            Code::InvalidQuery,
            format!("day: {} is after today ({})", query.day, date_of_day(today)),
        ));
    }
    let oldest = app.daily_usage.oldest_kept_day(now);
    if day < oldest {
        return Err(ApiError::new(
            Code::InvalidQuery,
            format!(
                "day: {} is older than the usage kept (usage.retention_days: from {})",
                query.day,
                date_of_day(oldest)
            ),
        ));
    }
    if let Err(e) = app.daily_usage.flush().await {
        tracing::warn!(error = %e, "cannot store this instance's daily usage before the export");
    }
    let catalog = app.router.catalog();
    let (rows, hours) = (catalog.usage_day(day).await?, catalog.usage_hours_sampled(day).await?);
    let mut body = String::with_capacity(rows.len() * 160);
    for row in rows {
        let line = serde_json::to_string(&UsageDayLine::from(row)).map_err(|e| ApiError::internal(&e))?;
        body.push_str(&line);
        body.push('\n');
    }
    let hours = HeaderValue::from(hours);
    Ok((
        [(header::CONTENT_TYPE, HeaderValue::from_static(JSON_LINES)), (HeaderName::from_static(HOURS_SAMPLED), hours)],
        body,
    )
        .into_response())
}
