//! The `[telemetry]` section: OpenTelemetry traces, exported over OTLP/HTTP (protobuf) to a
//! collector. Off by default; off, no `traceparent` is read or returned and no span is made
//! beyond the log's.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The `[telemetry]` section.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TelemetryConfig {
    /// Export traces to `endpoint`. Default `false`.
    pub enabled: bool,
    /// The collector's OTLP/HTTP traces URL (`http://` or `https://`, protobuf bodies).
    /// Default `http://127.0.0.1:4318/v1/traces`.
    pub endpoint: String,
    /// Headers sent with every export, e.g. a hosted collector's API key
    /// (`headers = { "x-api-key" = "..." }`). Values are secrets: never shown in `Debug` or logs.
    /// Default: none.
    #[serde(serialize_with = "redacted_headers")]
    pub headers: BTreeMap<String, secrecy::SecretString>,
    /// A PEM file of the CA certificates an `https://` collector's certificate must chain to.
    /// Default: the web's public roots.
    pub ca_file: Option<PathBuf>,
    /// The share of traces this instance starts that are sampled (exported), from 0.0 to 1.0. A
    /// request with a trusted `traceparent` follows its caller's decision instead. Default 0.1.
    pub sampling_ratio: f64,
    /// Whose `traceparent` and `tracestate` are taken: `trusted_proxies` (from a peer in
    /// `trusted_proxies` only), `always` or `never`. An untrusted caller's are ignored: its
    /// request starts a trace of its own. Default `trusted_proxies`.
    pub trust_incoming: TraceTrust,
    /// The most finished spans waiting for export. A span finished while the queue is full is
    /// dropped and counted (`shardgate_trace_spans_dropped_total{reason="queue_full"}`): a slow or
    /// unreachable collector never holds a request. Default 4096.
    pub queue_spans: usize,
    /// The most spans in one export request. Default 512.
    pub batch_spans: usize,
    /// How long one export may take before its spans are given up (and counted as dropped,
    /// `reason="export_failed"`). Default 5 seconds.
    #[serde(with = "shardgate_shard_router::db::humantime_serde")]
    pub export_timeout: std::time::Duration,
    /// `service.name` of the spans. Default `shardgate`.
    pub service_name: String,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            endpoint: "http://127.0.0.1:4318/v1/traces".to_owned(),
            headers: BTreeMap::new(),
            ca_file: None,
            sampling_ratio: 0.1,
            trust_incoming: TraceTrust::TrustedProxies,
            queue_spans: 4096,
            batch_spans: 512,
            export_timeout: std::time::Duration::from_secs(5),
            service_name: "shardgate".to_owned(),
        }
    }
}

impl TelemetryConfig {
    /// What is wrong with it, if anything (checked only when `enabled`).
    pub fn validate(&self) -> Result<(), String> {
        if !self.enabled {
            return Ok(());
        }
        if !(self.endpoint.starts_with("http://") || self.endpoint.starts_with("https://")) {
            return Err(format!("telemetry.endpoint must be an http:// or https:// URL, not {:?}", self.endpoint));
        }
        if !(0.0..=1.0).contains(&self.sampling_ratio) {
            return Err(format!("telemetry.sampling_ratio must be from 0.0 to 1.0, not {}", self.sampling_ratio));
        }
        if self.queue_spans == 0 || self.batch_spans == 0 {
            return Err("telemetry.queue_spans and telemetry.batch_spans must be at least 1".into());
        }
        if self.export_timeout.is_zero() {
            return Err("telemetry.export_timeout must be more than 0".into());
        }
        if self.service_name.trim().is_empty() {
            return Err("telemetry.service_name must not be empty".into());
        }
        Ok(())
    }
}

/// Whose trace context a request may carry in (`telemetry.trust_incoming`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceTrust {
    /// From a TCP peer in `trusted_proxies` only.
    TrustedProxies,
    /// From any caller.
    Always,
    /// From no caller: every request starts its own trace.
    Never,
}

fn redacted_headers<S: serde::Serializer>(
    headers: &BTreeMap<String, secrecy::SecretString>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = serializer.serialize_map(Some(headers.len()))?;
    for name in headers.keys() {
        map.serialize_entry(name, "[redacted]")?;
    }
    map.end()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_enabled_section_is_checked() {
        let off = TelemetryConfig { sampling_ratio: 7.0, ..TelemetryConfig::default() };
        assert!(off.validate().is_ok());
        let on = TelemetryConfig { enabled: true, ..TelemetryConfig::default() };
        assert!(on.validate().is_ok());
        for bad in [
            TelemetryConfig { sampling_ratio: 1.5, ..on.clone() },
            TelemetryConfig { sampling_ratio: -0.1, ..on.clone() },
            TelemetryConfig { endpoint: "127.0.0.1:4318".into(), ..on.clone() },
            TelemetryConfig { queue_spans: 0, ..on.clone() },
            TelemetryConfig { export_timeout: std::time::Duration::ZERO, ..on.clone() },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn header_values_are_never_serialized() {
        let mut on = TelemetryConfig::default();
        on.headers.insert("x-api-key".into(), "hunter2-secret".to_owned().into());
        let shown = serde_json::to_string(&on).unwrap();
        assert!(!shown.contains("hunter2") && shown.contains("[redacted]"), "{shown}");
        assert!(!format!("{on:?}").contains("hunter2"));
    }
}
