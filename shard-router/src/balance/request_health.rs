//! Request health read back: the catalog's request windows ([`crate::catalog::request_windows`])
//! of a span, summed over instances, per route template or per shard, as totals and as one
//! point per step. Counts add up, so percentiles are computed here, from the summed histogram
//! buckets ([`RequestCounts::percentile_ms`]).

use std::collections::BTreeMap;

use super::picture::Span;
use crate::catalog::request_windows::{RequestCounts, RequestRow, RequestScope};
use crate::error::Error;
use crate::router::ShardRouter;

/// One route's or shard's requests over a span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestSeries {
    /// The route template or the shard.
    pub subject: String,
    /// Its counts over the whole span.
    pub total: RequestCounts,
    /// Its counts per step.
    pub points: Vec<RequestCounts>,
}

/// Request health over a span.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestHealth {
    /// The span (its step is set).
    pub span: Span,
    /// The instances whose windows are in it.
    pub instances: Vec<String>,
    /// One series per route or shard that answered requests in the span, by name.
    pub series: Vec<RequestSeries>,
}

/// Reads the request health of `span` by `scope` from `router`'s catalog.
pub async fn request_health(router: &ShardRouter, span: Span, scope: RequestScope) -> Result<RequestHealth, Error> {
    let rows = router.catalog().request_rows(scope, span.since_ms, span.until_ms).await?;
    Ok(request_health_of(span, &rows))
}

/// The request health of `span` from the stored `rows`: the rows wholly inside the span, summed
/// over instances.
pub fn request_health_of(span: Span, rows: &[RequestRow]) -> RequestHealth {
    let points = span.points();
    let mut series: BTreeMap<&str, RequestSeries> = BTreeMap::new();
    let mut instances: Vec<String> = Vec::new();
    for row in rows {
        if row.start_ms < span.since_ms || row.start_ms + row.width_ms > span.until_ms {
            continue;
        }
        if !instances.contains(&row.instance) {
            instances.push(row.instance.clone());
        }
        let entry = series.entry(&row.subject).or_insert_with(|| RequestSeries {
            subject: row.subject.clone(),
            total: RequestCounts::default(),
            points: vec![RequestCounts::default(); points],
        });
        entry.total.add(&row.counts);
        let point = span
            .step_ms
            .filter(|s| *s > 0)
            .and_then(|step| usize::try_from((row.start_ms - span.since_ms) / step).ok());
        if let Some(cell) = point.and_then(|i| entry.points.get_mut(i)) {
            cell.add(&row.counts);
        }
    }
    instances.sort();
    RequestHealth { span, instances, series: series.into_values().collect() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(instance: &str, start_ms: i64, subject: &str, requests: u64, errors: u64) -> RequestRow {
        let mut counts = RequestCounts { requests, errors, latency_us: 0, ..RequestCounts::default() };
        counts.buckets[0] = requests;
        RequestRow {
            start_ms,
            width_ms: 1000,
            instance: instance.into(),
            scope: RequestScope::Route,
            subject: subject.into(),
            counts,
        }
    }

    #[test]
    fn instances_windows_add_up_per_subject_and_step() {
        let span = Span { since_ms: 10_000, until_ms: 14_000, step_ms: Some(2000) };
        let rows = [
            row("a", 10_000, "/x", 3, 1),
            row("b", 10_000, "/x", 2, 0),
            row("a", 13_000, "/x", 1, 1),
            row("a", 11_000, "/y", 4, 0),
            row("a", 9_000, "/x", 100, 100),  // before the span
            row("a", 14_000, "/x", 100, 100), // after it
        ];
        let health = request_health_of(span, &rows);
        assert_eq!(health.instances, ["a", "b"]);
        let x = &health.series[0];
        assert_eq!((x.subject.as_str(), x.total.requests, x.total.errors), ("/x", 6, 2));
        assert_eq!(x.points.iter().map(|p| p.requests).collect::<Vec<_>>(), [5, 1]);
        let y = &health.series[1];
        assert_eq!((y.subject.as_str(), y.total.requests), ("/y", 4));
        assert_eq!(y.points.iter().map(|p| p.requests).collect::<Vec<_>>(), [4, 0]);
    }
}
