//! The trace exporter that never holds a request: finished spans go into a bounded queue
//! (`telemetry.queue_spans`) with a `try_send`, and a thread of its own sends them in batches
//! (`telemetry.batch_spans`, or what arrived within [`LINGER`]) over OTLP/HTTP (protobuf). A span
//! finished while the queue is full is dropped; a batch the collector refuses, or that does not
//! go within `telemetry.export_timeout` (a collector that is down, or accepts and never
//! answers), is dropped too. Both are counted, with the spans sent, in `/metrics`
//! ([`TraceExportMetrics`]: `reason` is `queue_full` or `export_failed`, a closed set).
//!
//! The SDK's own batch processor drops silently; this one exists to count.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::time::{Duration, Instant};

use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{SpanData, SpanExporter, SpanProcessor};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use secrecy::ExposeSecret;

use crate::config::telemetry::TelemetryConfig;

/// How long the export thread waits for a batch to fill before it sends what it has.
const LINGER: Duration = Duration::from_millis(200);

static EXPORTED: AtomicU64 = AtomicU64::new(0);
static DROPPED_QUEUE_FULL: AtomicU64 = AtomicU64::new(0);
static DROPPED_EXPORT_FAILED: AtomicU64 = AtomicU64::new(0);

/// What goes to the export thread.
enum Item {
    Span(Box<SpanData>),
    /// Send what is queued now, then answer.
    Flush(SyncSender<()>),
}

/// The span processor: a bounded queue in front of the export thread.
#[derive(Debug)]
pub struct BoundedExport {
    queue: SyncSender<Item>,
    timeout: Duration,
}

impl BoundedExport {
    /// Builds the OTLP/HTTP exporter of `config` and starts its thread.
    pub fn start(config: &TelemetryConfig) -> anyhow::Result<Self> {
        let ca = match &config.ca_file {
            Some(path) => {
                let pem =
                    std::fs::read(path).map_err(|e| anyhow::anyhow!("telemetry.ca_file {}: {e}", path.display()))?;
                Some(
                    reqwest::Certificate::from_pem_bundle(&pem)
                        .map_err(|e| anyhow::anyhow!("telemetry.ca_file {}: {e}", path.display()))?,
                )
            }
            None => None,
        };
        let headers: HashMap<String, String> =
            config.headers.iter().map(|(name, value)| (name.clone(), value.expose_secret().to_owned())).collect();
        let (queue, spans) = std::sync::mpsc::sync_channel(config.queue_spans);
        let endpoint = config.endpoint.clone();
        let timeout = config.export_timeout;
        let batch = config.batch_spans;
        let service = config.service_name.clone();
        // The blocking client has a runtime of its own: built, used and dropped on this thread.
        std::thread::Builder::new().name("trace-export".into()).spawn(move || {
            let mut client = reqwest::blocking::Client::builder().timeout(timeout).connect_timeout(timeout);
            if let Some(ca) = ca {
                client = client.tls_built_in_root_certs(false);
                for certificate in ca {
                    client = client.add_root_certificate(certificate);
                }
            }
            let client = match client.build() {
                Ok(client) => client,
                Err(e) => {
                    eprintln!("traces are not exported: cannot build the HTTP client: {e}");
                    return;
                }
            };
            let exporter = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_http_client(client)
                .with_endpoint(endpoint)
                .with_headers(headers)
                .with_timeout(timeout)
                .build();
            match exporter {
                Ok(mut exporter) => {
                    exporter.set_resource(&Resource::builder_empty().with_service_name(service).build());
                    run(&exporter, &spans, batch);
                }
                Err(e) => eprintln!("traces are not exported: {e}"),
            }
        })?;
        Ok(Self { queue, timeout })
    }
}

/// The export thread: batches what the queue holds and sends it, until the processor is gone.
fn run(exporter: &opentelemetry_otlp::SpanExporter, queue: &Receiver<Item>, batch_spans: usize) {
    let mut batch: Vec<SpanData> = Vec::with_capacity(batch_spans);
    loop {
        let first = match queue.recv() {
            Ok(item) => item,
            Err(_) => return,
        };
        let mut flushed = Vec::new();
        let mut take = |item: Item, batch: &mut Vec<SpanData>| match item {
            Item::Span(span) => batch.push(*span),
            Item::Flush(done) => flushed.push(done),
        };
        take(first, &mut batch);
        let deadline = Instant::now() + LINGER;
        while batch.len() < batch_spans {
            let left = deadline.saturating_duration_since(Instant::now());
            match queue.recv_timeout(left) {
                Ok(item) => take(item, &mut batch),
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
        if !batch.is_empty() {
            let count = batch.len() as u64;
            match futures::executor::block_on(exporter.export(std::mem::take(&mut batch))) {
                Ok(()) => EXPORTED.fetch_add(count, Ordering::Relaxed),
                Err(_) => DROPPED_EXPORT_FAILED.fetch_add(count, Ordering::Relaxed),
            };
            batch = Vec::with_capacity(batch_spans);
        }
        for done in flushed {
            let _ = done.send(());
        }
    }
}

impl SpanProcessor for BoundedExport {
    fn on_start(&self, _span: &mut opentelemetry_sdk::trace::Span, _cx: &opentelemetry::Context) {}

    fn on_end(&self, span: SpanData) {
        if !span.span_context.is_sampled() {
            return;
        }
        match self.queue.try_send(Item::Span(Box::new(span))) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                DROPPED_QUEUE_FULL.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        let (done, flushed) = std::sync::mpsc::sync_channel(1);
        self.queue.try_send(Item::Flush(done)).map_err(|e| OTelSdkError::InternalFailure(e.to_string()))?;
        flushed.recv_timeout(self.timeout + LINGER).map_err(|_| OTelSdkError::Timeout(self.timeout))
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        Ok(())
    }
}

/// `trace_spans_exported` and `trace_spans_dropped{reason}` in `/metrics` (zero with traces off).
#[derive(Debug, Default)]
pub struct TraceExportMetrics;

impl Collector for TraceExportMetrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let exported = encoder.encode_descriptor(
            "trace_spans_exported",
            "Spans the trace collector accepted",
            None,
            MetricType::Counter,
        )?;
        ConstCounter::new(EXPORTED.load(Ordering::Relaxed)).encode(exported)?;
        let mut dropped = encoder.encode_descriptor(
            "trace_spans_dropped",
            "Spans dropped: the export queue was full (queue_full) or the collector did not take them (export_failed)",
            None,
            MetricType::Counter,
        )?;
        for (reason, count) in [("queue_full", &DROPPED_QUEUE_FULL), ("export_failed", &DROPPED_EXPORT_FAILED)] {
            ConstCounter::new(count.load(Ordering::Relaxed)).encode(dropped.encode_family(&[("reason", reason)])?)?;
        }
        Ok(())
    }
}
