//! The catalog's `request_windows`: every instance's closed windows of the requests it answered
//! (request health: [`crate::balance::request_meter`]), per route template and per shard, stored,
//! rolled up and pruned as every table of windows is ([`super::windows`]), and read back. A row
//! holds the window's requests, its errors and the bucket counts of a latency histogram with
//! fixed bounds ([`LATENCY_BUCKETS_US`]): counts add up across instances and windows, so rows
//! merge by addition and percentiles are computed on read ([`RequestCounts::percentile_ms`]).
//!
//! Rows are written many at a time in one statement (one JSON parameter unpacked by the
//! database), and a row that exists already is added to.

use serde::{Deserialize, Serialize};

use super::windows::WindowTable;
use super::{Catalog, column};
use crate::error::Error;
use crate::storage::db::Engine;

/// The upper bounds (µs, included) of the latency histogram's buckets; the last bucket has no
/// upper bound. Fixed: every instance and every stored row uses these, so rows add up.
pub const LATENCY_BUCKETS_US: [u64; BUCKETS - 1] = [
    250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000, 2_500_000, 5_000_000,
    10_000_000,
];

/// The number of latency buckets (the last one open-ended).
pub const BUCKETS: usize = 16;

/// The bucket of a latency of `us` microseconds.
pub fn latency_bucket(us: u64) -> usize {
    LATENCY_BUCKETS_US.iter().position(|&bound| us <= bound).unwrap_or(BUCKETS - 1)
}

/// What a request-health row is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestScope {
    /// A route template (`subject`), as the API matched it.
    Route,
    /// The shard a request was routed to (`subject`).
    Shard,
}

impl RequestScope {
    /// Its name in the catalog and the API.
    pub fn as_str(self) -> &'static str {
        match self {
            RequestScope::Route => "route",
            RequestScope::Shard => "shard",
        }
    }

    fn parse(name: &str) -> Result<Self, Error> {
        match name {
            "route" => Ok(RequestScope::Route),
            "shard" => Ok(RequestScope::Shard),
            other => Err(Error::Corrupt(format!("request scope {other:?}"))),
        }
    }
}

/// A window's counts of requests: they add up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestCounts {
    /// Requests answered.
    pub requests: u64,
    /// Of them, errors: a 5xx or a 429 (clients' other 4xx are not errors of the service).
    pub errors: u64,
    /// Their latencies summed (µs).
    pub latency_us: u64,
    /// How many fell in each bucket of [`LATENCY_BUCKETS_US`].
    pub buckets: [u64; BUCKETS],
}

impl RequestCounts {
    /// Adds `other`.
    pub fn add(&mut self, other: &RequestCounts) {
        self.requests += other.requests;
        self.errors += other.errors;
        self.latency_us += other.latency_us;
        for (sum, n) in self.buckets.iter_mut().zip(other.buckets) {
            *sum += n;
        }
    }

    /// The latency (ms) below which a fraction `q` (0 to 1) of the requests fell, interpolated
    /// linearly inside its bucket; the open last bucket answers its lower bound. `None` without
    /// requests.
    pub fn percentile_ms(&self, q: f64) -> Option<f64> {
        let total: u64 = self.buckets.iter().sum();
        if total == 0 {
            return None;
        }
        let rank = (q.clamp(0.0, 1.0) * total as f64).max(1.0);
        let mut below = 0u64;
        for (i, &n) in self.buckets.iter().enumerate() {
            if n == 0 || ((below + n) as f64) < rank {
                below += n;
                continue;
            }
            let lower = if i == 0 { 0 } else { LATENCY_BUCKETS_US[i - 1] } as f64;
            let Some(&upper) = LATENCY_BUCKETS_US.get(i) else { return Some(lower / 1000.0) };
            let within = (rank - below as f64) / n as f64;
            return Some((lower + within * (upper as f64 - lower)) / 1000.0);
        }
        None
    }
}

/// One row of `request_windows`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRow {
    /// The window's start (ms since the Unix epoch).
    pub start_ms: i64,
    /// Its width (ms).
    pub width_ms: i64,
    /// The instance that counted it.
    pub instance: String,
    /// What it is about.
    pub scope: RequestScope,
    /// The route template or the shard.
    pub subject: String,
    /// The counts.
    pub counts: RequestCounts,
}

/// The row as the insert statement's JSON takes it (bucket counts as `bucket_00`...).
fn row_json(row: &RequestRow) -> serde_json::Value {
    let mut object = serde_json::json!({
        "start_ms": row.start_ms,
        "width_ms": row.width_ms,
        "instance": row.instance,
        "scope": row.scope.as_str(),
        "subject": row.subject,
        "requests": row.counts.requests,
        "errors": row.counts.errors,
        "latency_us": row.counts.latency_us,
    });
    if let Some(map) = object.as_object_mut() {
        for (i, n) in row.counts.buckets.iter().enumerate() {
            map.insert(bucket_column(i), serde_json::Value::from(*n));
        }
    }
    object
}

fn bucket_column(i: usize) -> String {
    format!("bucket_{i:02}")
}

/// The columns after the key: what a stored row adds to.
fn added_columns() -> Vec<String> {
    let mut columns = vec!["requests".to_owned(), "errors".to_owned(), "latency_us".to_owned()];
    columns.extend((0..BUCKETS).map(bucket_column));
    columns
}

fn all_columns() -> Vec<String> {
    let mut columns: Vec<String> =
        ["start_ms", "width_ms", "instance", "scope", "subject"].into_iter().map(str::to_owned).collect();
    columns.extend(added_columns());
    columns
}

impl WindowTable for RequestRow {
    const TABLE: &'static str = "request_windows";
    const ORDER: &'static str = "subject";
    type Key = (String, RequestScope, String);

    fn insert_sql(engine: Engine) -> String {
        let columns = all_columns();
        let list = columns.join(", ");
        let added =
            added_columns().iter().map(|c| format!("{c} = request_windows.{c} + excluded.{c}")).collect::<Vec<_>>();
        let conflict =
            format!("ON CONFLICT (start_ms, width_ms, instance, scope, subject) DO UPDATE SET {}", added.join(", "));
        match engine {
            Engine::Postgres => {
                let types = columns
                    .iter()
                    .map(|c| {
                        let ty = if matches!(c.as_str(), "instance" | "scope" | "subject") { "TEXT" } else { "BIGINT" };
                        format!("{c} {ty}")
                    })
                    .collect::<Vec<_>>();
                format!(
                    "INSERT INTO request_windows ({list}) SELECT {list} FROM jsonb_to_recordset($1::jsonb) AS r({}) \
                     {conflict}",
                    types.join(", ")
                )
            }
            Engine::Sqlite => {
                let fields = columns.iter().map(|c| format!("json_extract(value, '$.{c}')")).collect::<Vec<_>>();
                // `WHERE true` keeps SQLite from reading `ON CONFLICT` as part of the SELECT.
                format!(
                    "INSERT INTO request_windows ({list}) SELECT {} FROM json_each($1) WHERE true {conflict}",
                    fields.join(", ")
                )
            }
        }
    }
    fn columns() -> String {
        all_columns().join(", ")
    }
    fn read(row: &sqlx::any::AnyRow) -> Result<Self, Error> {
        let count = |i: usize| -> Result<u64, Error> { column::<i64>(row, i).map(|n| u64::try_from(n).unwrap_or(0)) };
        let mut buckets = [0; BUCKETS];
        for (i, bucket) in buckets.iter_mut().enumerate() {
            *bucket = count(8 + i)?;
        }
        Ok(RequestRow {
            start_ms: column(row, 0)?,
            width_ms: column(row, 1)?,
            instance: column(row, 2)?,
            scope: RequestScope::parse(&column::<String>(row, 3)?)?,
            subject: column(row, 4)?,
            counts: RequestCounts { requests: count(5)?, errors: count(6)?, latency_us: count(7)?, buckets },
        })
    }
    fn json(rows: &[Self]) -> Result<String, Error> {
        serde_json::to_string(&rows.iter().map(row_json).collect::<Vec<_>>())
            .map_err(|e| Error::Corrupt(format!("request rows: {e}")))
    }
    fn start_ms(&self) -> i64 {
        self.start_ms
    }
    fn key(&self) -> Self::Key {
        (self.instance.clone(), self.scope, self.subject.clone())
    }
    fn emptied(&self, start_ms: i64, width_ms: i64) -> Self {
        RequestRow { start_ms, width_ms, counts: RequestCounts::default(), ..self.clone() }
    }
    fn add(&mut self, other: &Self) {
        self.counts.add(&other.counts);
    }
}

impl Catalog {
    /// The rows of `scope` of the windows that overlap `[since_ms, until_ms)`, in time order.
    pub async fn request_rows(
        &self,
        scope: RequestScope,
        since_ms: i64,
        until_ms: i64,
    ) -> Result<Vec<RequestRow>, Error> {
        self.rows_in_span(scope.as_str(), since_ms, until_ms).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(latencies_us: &[u64]) -> RequestCounts {
        let mut c = RequestCounts::default();
        for &us in latencies_us {
            c.requests += 1;
            c.latency_us += us;
            c.buckets[latency_bucket(us)] += 1;
        }
        c
    }

    #[test]
    fn a_latency_falls_in_the_first_bucket_whose_bound_holds_it() {
        assert_eq!(latency_bucket(0), 0);
        assert_eq!(latency_bucket(250), 0);
        assert_eq!(latency_bucket(251), 1);
        assert_eq!(latency_bucket(10_000_000), BUCKETS - 2);
        assert_eq!(latency_bucket(10_000_001), BUCKETS - 1);
    }

    #[test]
    fn percentiles_come_from_the_bucket_counts_and_merge_by_addition() {
        // 98 fast requests (≤ 1 ms) and 2 slow ones (between 250 and 500 ms).
        let mut fast = counts(&[800; 98]);
        let slow = counts(&[300_000, 400_000]);
        let p99 = fast.percentile_ms(0.99).unwrap();
        assert!((0.5..=1.0).contains(&p99), "all in the bucket of 0.5 to 1 ms: {p99}");
        fast.add(&slow);
        assert_eq!(fast.requests, 100);
        let p50 = fast.percentile_ms(0.5).unwrap();
        assert!((0.5..=1.0).contains(&p50), "p50 {p50}");
        let p99 = fast.percentile_ms(0.99).unwrap();
        assert!((250.0..=500.0).contains(&p99), "p99 {p99}");
        assert_eq!(RequestCounts::default().percentile_ms(0.5), None);
        // Beyond the last bound: its lower bound.
        assert_eq!(counts(&[60_000_000]).percentile_ms(0.99), Some(10_000.0));
    }
}
