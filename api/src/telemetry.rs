//! Logging setup: `tracing` with an env filter (`RUST_LOG` wins over `log.filter`), as text or
//! JSON lines.

use tracing_subscriber::EnvFilter;

use crate::config::{LogConfig, LogFormat};

/// Installs the global subscriber (once; later calls are no-ops).
pub fn init(config: &LogConfig) {
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(&config.filter))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_target(false);
    let result = match config.format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
    if result.is_err() {
        tracing::debug!("a tracing subscriber was already installed");
    }
}
