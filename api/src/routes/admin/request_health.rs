//! `GET /v1/admin/health/requests`: request health over time, per route template or per shard
//! (every instance's request-health windows, summed: `shardgate_shard_router::balance::request_health`),
//! what the console's request-health view draws.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use shardgate_shard_router::balance::{self, RequestSeries};
use shardgate_shard_router::catalog::{RequestCounts, RequestScope};
use utoipa::{IntoParams, ToSchema};

use crate::server::extract::{Admin, ApiQuery};
use crate::wire::error::{ApiError, Code};
use crate::wire::openapi::errors;
use crate::wire::spans::{default_step, span_length, span_of, step_length};
use crate::wire::timestamps::rfc3339;

/// What the series are of.
#[derive(Debug, Clone, Copy, Default, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RequestHealthBy {
    /// One series per route template the API matched (requests refused before a caller was
    /// verified count under one route of their own).
    #[default]
    Route,
    /// One series per shard requests were routed to (requests that read several shards, and
    /// those never routed, count under their route only).
    Shard,
}

/// What span of request health to read.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct RequestHealthQuery {
    /// How far back (`15m`, `1h`, `1d`): the span ends at the end of the last closed window.
    /// Default `15m`; at least one window (`storage.load.window`), at most
    /// `storage.load.retention`: any other span is refused with 422 `invalid_span`.
    span: Option<String>,
    /// `route` (default) or `shard`.
    #[param(inline)]
    by: Option<RequestHealthBy>,
    /// The width of a point (`10s`, `1m`): whole windows, at most 1440 points. Default: about
    /// 60 points over the span.
    step: Option<String>,
}

/// Request health over one step, or over the whole span.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RequestHealthPoint {
    /// Requests answered.
    pub requests: u64,
    /// Of them, errors: 5xx and 429 (clients' other 4xx are not errors).
    pub errors: u64,
    /// Requests per second.
    pub rate_per_s: f64,
    /// Errors per request (0 to 1); 0 without requests.
    pub error_rate: f64,
    /// The median latency (ms), from the merged histogram; `null` without requests.
    pub p50_ms: Option<f64>,
    /// The 99th percentile of latency (ms); `null` without requests.
    pub p99_ms: Option<f64>,
}

impl RequestHealthPoint {
    fn of(counts: &RequestCounts, seconds: f64) -> Self {
        let per = |n: u64, of: f64| if of > 0.0 { n as f64 / of } else { 0.0 };
        Self {
            requests: counts.requests,
            errors: counts.errors,
            rate_per_s: per(counts.requests, seconds),
            error_rate: per(counts.errors, counts.requests as f64),
            p50_ms: counts.percentile_ms(0.5),
            p99_ms: counts.percentile_ms(0.99),
        }
    }
}

/// A step of a series.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RequestHealthStep {
    /// The step's start, RFC 3339.
    pub start: String,
    /// Its health.
    #[serde(flatten)]
    pub health: RequestHealthPoint,
}

/// One route's or shard's request health.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RequestHealthSeries {
    /// The route template or the shard.
    pub name: String,
    /// Over the whole span.
    #[serde(flatten)]
    pub total: RequestHealthPoint,
    /// Per step, oldest first.
    pub points: Vec<RequestHealthStep>,
}

/// Request health over a span.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RequestHealthView {
    /// What the series are of: `route` or `shard`.
    pub by: String,
    /// The span's start, RFC 3339 (a window boundary).
    pub since: String,
    /// Its end, RFC 3339: the end of the last window that has closed.
    pub until: String,
    /// Its length (seconds).
    pub span_s: f64,
    /// The width of a point (seconds).
    pub step_s: f64,
    /// How many instances stored windows in the span (the counts are their sums).
    pub instances: usize,
    /// One series per route or shard that answered requests in the span, by name.
    pub series: Vec<RequestHealthSeries>,
}

errors!(GetRequestHealthErrors: InvalidSpan, InvalidQuery, CatalogUnavailable);

/// Request health over time: per route template (or per shard), per step, the request rate, the
/// error rate (5xx and 429) and the p50 and p99 latency, from every instance's windows of
/// `storage.load.window` summed (the latency percentiles from their merged histograms). Windows
/// still open are not in it.
#[utoipa::path(get, path = "/v1/admin/health/requests", params(RequestHealthQuery), responses(
    (status = 200, description = "Request health per route or shard", body = RequestHealthView),
    GetRequestHealthErrors,
))]
pub async fn get_request_health(
    Admin { app, .. }: Admin,
    ApiQuery(query): ApiQuery<RequestHealthQuery>,
) -> Result<axum::Json<RequestHealthView>, ApiError> {
    let length = span_length(&app.load, query.span.as_deref(), "span", Duration::from_secs(900))
        .map_err(|e| ApiError::new(Code::InvalidSpan, e.detail().to_owned()))?;
    let step = match query.step.as_deref() {
        Some(raw) => step_length(&app.load, raw, length)?,
        None => default_step(&app.load, length),
    };
    let by = query.by.unwrap_or_default();
    let scope = match by {
        RequestHealthBy::Route => RequestScope::Route,
        RequestHealthBy::Shard => RequestScope::Shard,
    };
    let health = balance::request_health(&app.router, span_of(&app.load, length, Some(step)), scope).await?;
    let span = health.span;
    let step_s = step as f64 / 1000.0;
    let series = |s: &RequestSeries| RequestHealthSeries {
        name: s.subject.clone(),
        total: RequestHealthPoint::of(&s.total, span.seconds()),
        points: s
            .points
            .iter()
            .enumerate()
            .map(|(i, c)| RequestHealthStep {
                start: rfc3339(span.since_ms + step * i as i64),
                health: RequestHealthPoint::of(c, step_s),
            })
            .collect(),
    };
    Ok(axum::Json(RequestHealthView {
        by: scope.as_str().to_owned(),
        since: rfc3339(span.since_ms),
        until: rfc3339(span.until_ms),
        span_s: span.seconds(),
        step_s,
        instances: health.instances.len(),
        series: health.series.iter().map(series).collect(),
    }))
}
