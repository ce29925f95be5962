//! The two text formats `/metrics` speaks, chosen by the scraper's `Accept`: OpenMetrics 1.0
//! (what `prometheus_client` writes, and what Prometheus asks for first) and the older Prometheus
//! text format 0.0.4 (`text/plain`, which `promtool check metrics`, older scrapers and `curl`
//! read). As in Prometheus' own client libraries, the text format is the default: OpenMetrics
//! only when the scraper names it (and weighs it at least as much as `text/plain`). The registry encodes OpenMetrics; [`prometheus_text`] rewrites it, since the two differ
//! only in three ways for the counters, gauges and histograms shardgate exposes: a counter
//! family is named with its `_total` suffix in `# HELP` and `# TYPE`, there is no `# UNIT` line,
//! and no `# EOF` at the end.

use axum::http::HeaderValue;

/// The content type of OpenMetrics text.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The content type of the Prometheus text format.
pub const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A text format of the exposition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0.
    OpenMetrics,
    /// The Prometheus text format 0.0.4.
    PrometheusText,
}

impl Format {
    /// The format an `Accept` header prefers: OpenMetrics when it names
    /// `application/openmetrics-text` (with a weight above 0) and weighs `text/plain` no more,
    /// else the Prometheus text format (also without an `Accept`, or with `*/*`: what `curl`
    /// sends, and what `promtool check metrics` reads).
    pub fn negotiate(accept: Option<&HeaderValue>) -> Self {
        let Some(accept) = accept.and_then(|value| value.to_str().ok()) else {
            return Self::PrometheusText;
        };
        let (mut openmetrics, mut text) = (None::<f32>, None::<f32>);
        for range in accept.split(',') {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or_default().to_ascii_lowercase();
            let quality = parts
                .filter_map(|param| param.split_once('='))
                .find(|(name, _)| name.trim().eq_ignore_ascii_case("q"))
                .and_then(|(_, q)| q.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            let slot = match media.as_str() {
                "application/openmetrics-text" => &mut openmetrics,
                "text/plain" => &mut text,
                _ => continue,
            };
            *slot = Some(slot.map_or(quality, |q| q.max(quality)));
        }
        match (openmetrics, text) {
            (Some(o), None) if o > 0.0 => Self::OpenMetrics,
            (Some(o), Some(t)) if o > 0.0 && o >= t => Self::OpenMetrics,
            _ => Self::PrometheusText,
        }
    }

    /// Its `Content-Type`.
    pub fn content_type(self) -> &'static str {
        match self {
            Self::OpenMetrics => OPENMETRICS,
            Self::PrometheusText => PROMETHEUS_TEXT,
        }
    }
}

/// `openmetrics` (as `prometheus_client` encodes it: each family's `# HELP` line, then its
/// `# TYPE` line, then its samples) in the Prometheus text format 0.0.4.
pub fn prometheus_text(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len());
    let mut help: Option<&str> = None;
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            if let Some(held) = help.replace(rest) {
                push_line(&mut out, &["# HELP ", held]);
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let counter = rest.strip_suffix(" counter").filter(|name| !name.ends_with("_total"));
            match (counter, help.take()) {
                (Some(name), help) => {
                    if let Some(help) = help {
                        let text = help.strip_prefix(name).unwrap_or(help);
                        push_line(&mut out, &["# HELP ", name, "_total", text]);
                    }
                    push_line(&mut out, &["# TYPE ", name, "_total counter"]);
                }
                (None, help) => {
                    if let Some(help) = help {
                        push_line(&mut out, &["# HELP ", help]);
                    }
                    push_line(&mut out, &[line]);
                }
            }
            continue;
        }
        if let Some(held) = help.take() {
            push_line(&mut out, &["# HELP ", held]);
        }
        push_line(&mut out, &[line]);
    }
    if let Some(held) = help {
        push_line(&mut out, &["# HELP ", held]);
    }
    out
}

fn push_line(out: &mut String, parts: &[&str]) {
    for part in parts {
        out.push_str(part);
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(value: &'static str) -> Format {
        Format::negotiate(Some(&HeaderValue::from_static(value)))
    }

    #[test]
    fn the_scraper_chooses_the_format_and_the_text_format_is_the_default() {
        assert_eq!(Format::negotiate(None), Format::PrometheusText);
        assert_eq!(accept("*/*"), Format::PrometheusText);
        assert_eq!(accept("text/plain"), Format::PrometheusText);
        assert_eq!(accept("text/plain; version=0.0.4"), Format::PrometheusText);
        assert_eq!(accept("application/openmetrics-text"), Format::OpenMetrics);
        // What Prometheus 2 and 3 send by default: OpenMetrics first.
        assert_eq!(
            accept(
                "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,\
                 text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
            ),
            Format::OpenMetrics
        );
        assert_eq!(accept("application/openmetrics-text;q=0.2, text/plain;q=0.9"), Format::PrometheusText);
        assert_eq!(accept("text/plain;q=0, application/openmetrics-text;q=0.1"), Format::OpenMetrics);
        assert_eq!(accept("application/openmetrics-text;q=0"), Format::PrometheusText, "q=0 means not acceptable");
    }

    #[test]
    fn counters_are_named_with_their_suffix_and_openmetrics_only_lines_go() {
        let openmetrics = "# HELP shardgate_http_requests HTTP requests by method, route and status.\n\
                           # TYPE shardgate_http_requests counter\n\
                           shardgate_http_requests_total{method=\"GET\",route=\"/healthz\",status=\"200\"} 3\n\
                           # HELP shardgate_connections_open Client connections open now.\n\
                           # TYPE shardgate_connections_open gauge\n\
                           shardgate_connections_open 1\n\
                           # HELP shardgate_size_bytes A size.\n\
                           # TYPE shardgate_size_bytes gauge\n\
                           # UNIT shardgate_size_bytes bytes\n\
                           # HELP shardgate_empty A counter with no sample yet.\n\
                           # TYPE shardgate_empty counter\n\
                           # EOF\n";
        assert_eq!(
            prometheus_text(openmetrics),
            "# HELP shardgate_http_requests_total HTTP requests by method, route and status.\n\
             # TYPE shardgate_http_requests_total counter\n\
             shardgate_http_requests_total{method=\"GET\",route=\"/healthz\",status=\"200\"} 3\n\
             # HELP shardgate_connections_open Client connections open now.\n\
             # TYPE shardgate_connections_open gauge\n\
             shardgate_connections_open 1\n\
             # HELP shardgate_size_bytes A size.\n\
             # TYPE shardgate_size_bytes gauge\n\
             # HELP shardgate_empty_total A counter with no sample yet.\n\
             # TYPE shardgate_empty_total counter\n"
        );
    }
}
