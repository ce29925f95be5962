//! Logging setup: `tracing` with an env filter (`RUST_LOG` wins over `log.filter`), as text or
//! JSON lines. Nothing logs headers or full URIs: request spans carry the matched route template,
//! so `Authorization`, cookies and signature query parameters never reach a log line.

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

use crate::config::{LogConfig, LogFormat};

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

fn install<W>(config: &LogConfig, writer: W, ansi: bool)
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(&config.filter))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let builder =
        tracing_subscriber::fmt().with_env_filter(filter).with_target(false).with_ansi(ansi).with_writer(writer);
    let result = match config.format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
    if result.is_err() {
        tracing::debug!("a tracing subscriber was already installed");
    }
}
