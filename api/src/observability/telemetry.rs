//! Logging and traces.
//!
//! Logging: `tracing` with an env filter (`RUST_LOG` wins over `log.filter`), as text or JSON
//! lines. Nothing logs headers or full URIs: request spans carry the matched route template, so
//! `Authorization`, cookies and signature query parameters never reach a log line.
//!
//! Traces (`[telemetry]`, off by default): the `tracing` spans of shardgate's own crates become
//! OpenTelemetry spans ([`tracing_opentelemetry`]), exported over OTLP/HTTP by
//! [`crate::observability::trace_export`] (a bounded queue and a thread of its own: a request
//! never waits for the collector). The request span takes the W3C `traceparent` and `tracestate`
//! of a trusted caller as its parent ([`Traces::adopt`]), its trace id is a field of every log
//! line inside it and the `trace_id` of problem bodies ([`current_trace_id`]), and the response
//! carries the request span's `traceparent` ([`Traces::inject`]). A shard statement of a
//! sampled trace carries its span's `traceparent` as a SQL comment
//! ([`shardgate_shard_router::storage::sql_comment`]).
//!
//! Off, nothing of this runs: [`traces`] is `None`, the subscriber is the plain one, and the
//! child spans (at `TRACE` level, below every log filter but `trace`) are disabled callsites.

use std::net::IpAddr;
use std::sync::OnceLock;

use axum::http::{HeaderMap, HeaderName, HeaderValue};
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::config::proxies::Cidr;
use crate::config::telemetry::{TelemetryConfig, TraceTrust};
use crate::config::{LogConfig, LogFormat};
use crate::observability::trace_export;

/// Installs the global subscriber writing to standard output (once; later calls are no-ops).
pub fn init(config: &LogConfig) {
    use std::io::IsTerminal;
    install(config, std::io::stdout, std::io::stdout().is_terminal());
}

/// Installs the global subscriber writing plain text (no colours) to `writer`; tests capture
/// logs this way.
pub fn init_with_writer<W>(config: &LogConfig, writer: W)
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    install(config, writer, false);
}

/// Installs the global subscriber with traces when `telemetry.enabled` (the log as [`init`]
/// writes it, plus the OpenTelemetry layer and its exporter), else as [`init`]. Once per
/// process: the first call's configuration holds (a second gateway in one process, as in tests,
/// shares the first one's collector and trust). Refuses an invalid `[telemetry]`.
pub fn init_with_traces(log: &LogConfig, telemetry: &TelemetryConfig, trusted_proxies: &[Cidr]) -> anyhow::Result<()> {
    if !telemetry.enabled {
        init(log);
        return Ok(());
    }
    start_traces(log, telemetry, trusted_proxies)
}

/// Starts traces (for [`crate::Application`] and the standalone gatekeeper, so a server built
/// in a test process traces too); a no-op when `telemetry.enabled` is false or traces are
/// already started. A subscriber installed before without traces stays: then no span is exported.
pub fn start_traces(log: &LogConfig, telemetry: &TelemetryConfig, trusted_proxies: &[Cidr]) -> anyhow::Result<()> {
    telemetry.validate().map_err(anyhow::Error::msg)?;
    if !telemetry.enabled || TRACES.get().is_some() {
        return Ok(());
    }
    let provider = SdkTracerProvider::builder()
        .with_span_processor(trace_export::BoundedExport::start(telemetry)?)
        .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(telemetry.sampling_ratio))))
        .with_resource(
            opentelemetry_sdk::Resource::builder_empty()
                .with_service_name(telemetry.service_name.clone())
                .with_attribute(opentelemetry::KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
                .build(),
        )
        .build();
    let tracer = provider.tracer("shardgate");
    let traces = Traces {
        trust: telemetry.trust_incoming,
        trusted_proxies: trusted_proxies.to_vec(),
        propagator: TraceContextPropagator::new(),
        provider,
    };
    if TRACES.set(traces).is_err() {
        return Ok(());
    }
    shardgate_shard_router::storage::sql_comment::install(current_traceparent);
    // Only spans, and only shardgate's own: the log's events stay the log's.
    let spans = tracing_subscriber::filter::filter_fn(|meta| meta.is_span() && meta.target().starts_with("shardgate"));
    let otel = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_location(false)
        .with_threads(false)
        .with_tracked_inactivity(false)
        .with_filter(spans);
    use std::io::IsTerminal;
    let ansi = std::io::stdout().is_terminal();
    let fmt = tracing_subscriber::fmt::layer().with_target(false).with_ansi(ansi).with_writer(std::io::stdout);
    let fmt: Box<dyn Layer<_> + Send + Sync> = match log.format {
        LogFormat::Text => Box::new(fmt),
        LogFormat::Json => Box::new(fmt.json()),
    };
    let result = tracing_subscriber::registry().with(fmt.with_filter(log_filter(log))).with(otel).try_init();
    if result.is_err() {
        tracing::warn!("a tracing subscriber was installed before traces started: no span is exported");
    }
    Ok(())
}

/// Sends the spans waiting for export (at shutdown), waiting at most the export timeout.
pub fn flush() {
    if let Some(traces) = TRACES.get() {
        let _ = traces.provider.force_flush();
    }
}

/// The traces of this process, when `[telemetry]` is enabled and started.
pub fn traces() -> Option<&'static Traces> {
    TRACES.get()
}

static TRACES: OnceLock<Traces> = OnceLock::new();

/// What the request path needs of traces: whose context to adopt, and the W3C propagator.
#[derive(Debug)]
pub struct Traces {
    trust: TraceTrust,
    trusted_proxies: Vec<Cidr>,
    propagator: TraceContextPropagator,
    provider: SdkTracerProvider,
}

impl Traces {
    /// Starts a request's trace in `span`: under the caller's `traceparent` (and `tracestate`)
    /// when the TCP peer `peer` is trusted to give one, else a trace of its own; records the
    /// trace id on the span (so every log line of the request names it) and marks it a server
    /// span.
    pub fn adopt(&self, span: &Span, headers: &HeaderMap, peer: Option<IpAddr>) {
        if self.trusts(peer) && headers.contains_key(TRACEPARENT) {
            let parent = self.propagator.extract(&HeaderReader(headers));
            if parent.span().span_context().is_valid() {
                let _ = span.set_parent(parent);
            }
        }
        span.record("otel.kind", "server");
        let trace_id = span.context().span().span_context().trace_id();
        span.record("trace_id", tracing::field::display(trace_id));
    }

    /// Whether a request whose TCP peer is `peer` may carry its trace context in.
    fn trusts(&self, peer: Option<IpAddr>) -> bool {
        match self.trust {
            TraceTrust::Always => true,
            TraceTrust::Never => false,
            TraceTrust::TrustedProxies => peer
                .map(|ip| ip.to_canonical())
                .is_some_and(|ip| self.trusted_proxies.iter().any(|net| net.contains(ip))),
        }
    }

    /// Writes `span`'s `traceparent` (and `tracestate`) into `headers`: on a response, or on a
    /// request passed on (the standalone gatekeeper's to its backend).
    pub fn inject(&self, span: &Span, headers: &mut HeaderMap) {
        self.propagator.inject_context(&span.context(), &mut HeaderWriter(headers));
    }
}

/// The `traceparent` header.
pub const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
/// The `tracestate` header.
pub const TRACESTATE: HeaderName = HeaderName::from_static("tracestate");

/// The trace id of the current span (the request's), as 32 hex digits, when traces are on.
pub fn current_trace_id() -> Option<String> {
    TRACES.get()?;
    let context = Span::current().context();
    let span_context = context.span().span_context().clone();
    span_context.is_valid().then(|| span_context.trace_id().to_string())
}

/// The current span's `traceparent`, when traces are on and it is sampled (for a SQL comment).
pub fn current_traceparent() -> Option<String> {
    TRACES.get()?;
    let context = Span::current().context();
    let span_context = context.span().span_context().clone();
    (span_context.is_valid() && span_context.is_sampled())
        .then(|| format!("00-{}-{}-01", span_context.trace_id(), span_context.span_id()))
}

struct HeaderReader<'a>(&'a HeaderMap);

impl Extractor for HeaderReader<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(HeaderName::as_str).collect()
    }
}

struct HeaderWriter<'a>(&'a mut HeaderMap);

impl Injector for HeaderWriter<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (HeaderName::try_from(key), HeaderValue::try_from(value)) {
            self.0.insert(name, value);
        }
    }
}

fn log_filter(config: &LogConfig) -> EnvFilter {
    EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(&config.filter))
        .unwrap_or_else(|_| EnvFilter::new("info"))
}

fn install<W>(config: &LogConfig, writer: W, ansi: bool)
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    let builder = tracing_subscriber::fmt()
        .with_env_filter(log_filter(config))
        .with_target(false)
        .with_ansi(ansi)
        .with_writer(writer);
    let result = match config.format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
    if result.is_err() {
        tracing::debug!("a tracing subscriber was already installed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn traces(trust: TraceTrust, proxies: &[&str]) -> Traces {
        Traces {
            trust,
            trusted_proxies: proxies.iter().map(|p| Cidr::parse(p).unwrap()).collect(),
            propagator: TraceContextPropagator::new(),
            provider: SdkTracerProvider::builder().build(),
        }
    }

    #[test]
    fn trust_follows_the_setting_and_the_peer() {
        let inside = Some(IpAddr::from([10, 1, 2, 3]));
        let outside = Some(IpAddr::from([192, 0, 2, 1]));
        let proxies = traces(TraceTrust::TrustedProxies, &["10.0.0.0/8"]);
        assert!(proxies.trusts(inside));
        assert!(!proxies.trusts(outside));
        assert!(!proxies.trusts(None));
        assert!(proxies.trusts(Some("::ffff:10.9.9.9".parse().unwrap())), "a dual-stack peer is canonical");
        assert!(traces(TraceTrust::Always, &[]).trusts(outside));
        assert!(!traces(TraceTrust::Never, &["10.0.0.0/8"]).trusts(inside));
    }
}
