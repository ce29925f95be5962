//! What an instance tells its operators, and the rules that keep it bounded and free of secrets:
//!
//! - [`telemetry`]: the logging setup (no headers, tokens or full URIs in a log line) and traces
//!   (OpenTelemetry: W3C trace context in and out, the trace id in log lines and problems);
//! - [`trace_export`]: the bounded OTLP exporter of traces, its drops counted in `/metrics`;
//! - [`metrics`]: the Prometheus registry and the request metrics, every label from a closed set
//!   (the edge records them: [`crate::server::edge`]);
//! - [`exposition`]: the two text formats of `/metrics` (OpenMetrics, or the Prometheus text
//!   format when the scraper asks for `text/plain`);
//! - [`shard_metrics`]: the health of every shard database, read at each scrape;
//! - [`load_metrics`]: the load this instance put on each shard (its load meter's totals);
//! - [`job_metrics`]: jobs by kind and state (the catalog's, read at most every few seconds) and
//!   the bytes this instance's move jobs copied;
//! - [`usage_metrics`]: the tenants' usage summed per tier (read from the shards at most every
//!   minute) and the writes refused for a quota, per tier and quota, never per tenant;
//! - [`request_health`]: each answer counted by route and shard in the request-health windows
//!   (requests, errors, latency histograms) that the console's request-health view reads;
//! - [`rate_limited_warning`]: a warning logged at most once per period, however often its cause
//!   repeats.
//!
//! Must not know: the routes, or how a request is admitted: the plumbing hands it closed labels.

pub mod exposition;
pub mod job_metrics;
pub mod load_metrics;
pub mod metrics;
pub mod rate_limited_warning;
pub mod request_health;
pub mod shard_metrics;
pub mod telemetry;
pub mod trace_export;
pub mod usage_metrics;
