//! TLS on the listeners (API, valet, standalone gatekeeper), optional: `tls = { cert_file,
//! key_file }` in a listener's section. Plain HTTP stays the default.
//!
//! - **Versions**: TLS 1.2 and 1.3 only (rustls's defaults, on ring), ALPN `http/1.1` (the
//!   connections speak HTTP/1.1 only).
//! - **Rotation without restart**: certificates are rotated on disk by cert-manager and the
//!   like. A task of the listener looks at the two files' modification time, size and inode
//!   every [`RELOAD_CHECK_EVERY`] (handshakes never touch the disk); when they changed, the new
//!   pair is read and checked (the key must match the certificate) and new connections get it. A pair that does not load (half written,
//!   a key of another certificate, not PEM) leaves the old one in use, with a warning and
//!   `shardgate_tls_certificate_reloads_total{result="rejected"}`; the next change is tried again.
//!   Connections already open keep the certificate they were opened with.
//! - **Expiry**: `shardgate_tls_certificate_expiry_timestamp_seconds{listener}` is the `notAfter`
//!   of the certificate in use ([`crate::server::certificate_expiry`]), set when a pair loads.
//! - **Start-up**: a missing or bad file stops start-up with a message naming the key.
//! - A handshake is bounded like a request head: it must end within `limits.header_read_timeout`
//!   of the connection's opening (see [`crate::server::connections`]).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use parking_lot::Mutex;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

pub use crate::config::ListenerTls;

/// How often the certificate files are looked at for a change.
pub const RELOAD_CHECK_EVERY: Duration = Duration::from_secs(1);

/// Which listener, for messages and the metric's label (a closed set).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Listener {
    /// The API (`tls`).
    Api,
    /// The valet endpoint's own listener (`valet.tls`).
    Valet,
    /// The standalone gatekeeper (`tls` of its configuration).
    Gatekeeper,
    /// The admin plane's own listener, the gateway's or the gatekeeper's (`admin.tls`).
    Admin,
}

impl Listener {
    fn name(self) -> &'static str {
        match self {
            Listener::Api => "api",
            Listener::Valet => "valet",
            Listener::Gatekeeper => "gatekeeper",
            Listener::Admin => "admin",
        }
    }

    /// The configuration key of its TLS table.
    fn key(self) -> &'static str {
        match self {
            Listener::Api | Listener::Gatekeeper => "tls",
            Listener::Valet => "valet.tls",
            Listener::Admin => "admin.tls",
        }
    }
}

/// Labels of `shardgate_tls_certificate_reloads_total`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReloadLabels {
    listener: &'static str,
    result: &'static str,
}

/// Labels of `shardgate_tls_certificate_expiry_timestamp_seconds`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ListenerLabels {
    listener: &'static str,
}

/// `shardgate_tls_certificate_reloads_total{listener, result}`: certificate pairs loaded after a
/// change on disk (`reloaded`) or refused, the old pair kept (`rejected`); and
/// `shardgate_tls_certificate_expiry_timestamp_seconds{listener}`, when the certificate in use
/// expires.
#[derive(Debug, Clone, Default)]
pub struct ReloadCounts(
    Family<ReloadLabels, Counter>,
    Family<ListenerLabels, Gauge<f64, std::sync::atomic::AtomicU64>>,
);

impl ReloadCounts {
    /// Registers the counter and the expiry gauge in `registry`.
    pub fn new(registry: &mut Registry) -> Self {
        let counts = Self::default();
        registry.register(
            "tls_certificate_reloads",
            "Listener certificates reloaded after a change on disk (reloaded), or refused with the old one kept (rejected)",
            counts.0.clone(),
        );
        registry.register(
            "tls_certificate_expiry_timestamp_seconds",
            "When the certificate in use on each TLS listener expires (its notAfter, Unix time)",
            counts.1.clone(),
        );
        counts
    }

    fn count(&self, listener: Listener, result: &'static str) {
        self.0.get_or_create(&ReloadLabels { listener: listener.name(), result }).inc();
    }

    /// Shows when `pair`'s certificate expires, as `listener`'s.
    fn show_expiry(&self, listener: Listener, pair: &CertifiedKey) {
        let labels = ListenerLabels { listener: listener.name() };
        match pair.end_entity_cert().ok().and_then(|der| crate::server::certificate_expiry::not_after(der)) {
            Some(at) => {
                self.1.get_or_create(&labels).set(at as f64);
            }
            None => {
                self.1.remove(&labels);
            }
        }
    }
}

/// A TLS listener's handshakes, with the certificate in use.
#[derive(Clone)]
pub struct ServerTls(TlsAcceptor);

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServerTls")
    }
}

impl ServerTls {
    /// Runs the server side of a handshake on `stream`.
    pub fn accept(&self, stream: tokio::net::TcpStream) -> tokio_rustls::Accept<tokio::net::TcpStream> {
        self.0.accept(stream)
    }
}

/// The acceptor of a listener with `tls`, or `None` for plain HTTP. Fails with a message naming
/// the key when a file is missing or the pair does not load.
pub fn acceptor(
    tls: Option<&ListenerTls>,
    listener: Listener,
    counts: &ReloadCounts,
) -> anyhow::Result<Option<ServerTls>> {
    let Some(tls) = tls else { return Ok(None) };
    shardgate_cache::install_crypto_provider();
    let files = Files::stamp(tls).map_err(|e| anyhow::anyhow!("{}: {e}", listener.key()))?;
    let pair = load_pair(tls).map_err(|e| anyhow::anyhow!("{}: {e}", listener.key()))?;
    counts.show_expiry(listener, &pair);
    let resolver = Arc::new(ReloadingCert {
        files: tls.clone(),
        listener,
        current: ArcSwap::from_pointee(pair),
        seen: Mutex::new(files),
        counts: counts.clone(),
    });
    tokio::spawn(watch_files(Arc::downgrade(&resolver)));
    let mut config = rustls::ServerConfig::builder().with_no_client_auth().with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    tracing::info!(
        listener = listener.name(),
        cert_file = %tls.cert_file.display(),
        "TLS on; the certificate reloads when its files change"
    );
    Ok(Some(ServerTls(TlsAcceptor::from(Arc::new(config)))))
}

/// What identifies the files' contents without reading them: modification time, size and inode
/// of each (a rename into place changes the inode even within one second).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Files([(Option<std::time::SystemTime>, u64, u64); 2]);

impl Files {
    fn stamp(tls: &ListenerTls) -> std::io::Result<Self> {
        let one = |path: &Path| -> std::io::Result<_> {
            let metadata = std::fs::metadata(path)
                .map_err(|e| std::io::Error::new(e.kind(), format!("cannot read {}: {e}", path.display())))?;
            Ok((metadata.modified().ok(), metadata.len(), inode(&metadata)))
        };
        Ok(Self([one(&tls.cert_file)?, one(&tls.key_file)?]))
    }
}

#[cfg(unix)]
fn inode(metadata: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(metadata)
}

#[cfg(not(unix))]
fn inode(_: &std::fs::Metadata) -> u64 {
    0
}

/// Looks at the files every [`RELOAD_CHECK_EVERY`] until the listener's TLS configuration is
/// dropped.
async fn watch_files(resolver: std::sync::Weak<ReloadingCert>) {
    let mut ticks = tokio::time::interval(RELOAD_CHECK_EVERY);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticks.tick().await;
    loop {
        ticks.tick().await;
        let Some(resolver) = resolver.upgrade() else { return };
        // Reading two small files; off the runtime's threads all the same.
        let _ = tokio::task::spawn_blocking(move || resolver.reload_if_changed()).await;
    }
}

/// Serves the pair in use, and replaces it when the files change and the new pair loads.
#[derive(Debug)]
struct ReloadingCert {
    files: ListenerTls,
    listener: Listener,
    current: ArcSwap<CertifiedKey>,
    /// How the files were when last looked at.
    seen: Mutex<Files>,
    counts: ReloadCounts,
}

impl ReloadingCert {
    /// Loads the pair if the files changed since the last look.
    fn reload_if_changed(&self) {
        let mut seen = self.seen.lock();
        let files = match Files::stamp(&self.files) {
            Ok(files) if files == *seen => return,
            Ok(files) => files,
            Err(e) => {
                // A file gone for a moment (mid-rotation) is not a change yet.
                tracing::debug!(listener = self.listener.name(), error = %e, "certificate files not readable");
                return;
            }
        };
        *seen = files;
        match load_pair(&self.files) {
            Ok(pair) => {
                self.counts.show_expiry(self.listener, &pair);
                self.current.store(Arc::new(pair));
                self.counts.count(self.listener, "reloaded");
                tracing::info!(listener = self.listener.name(), "TLS certificate reloaded");
            }
            Err(e) => {
                self.counts.count(self.listener, "rejected");
                tracing::warn!(
                    listener = self.listener.name(),
                    error = %e,
                    "the new TLS certificate does not load; the old one stays in use"
                );
            }
        }
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.load_full())
    }
}

/// Reads and checks a certificate chain and its key.
fn load_pair(tls: &ListenerTls) -> anyhow::Result<CertifiedKey> {
    let read = |path: &Path| std::fs::read(path).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()));
    let chain = CertificateDer::pem_slice_iter(&read(&tls.cert_file)?)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| anyhow::anyhow!("cert_file {} is not valid PEM: {e}", tls.cert_file.display()))?;
    if chain.is_empty() {
        anyhow::bail!("cert_file {} holds no PEM certificate", tls.cert_file.display());
    }
    let key = PrivateKeyDer::from_pem_slice(&read(&tls.key_file)?)
        .map_err(|e| anyhow::anyhow!("key_file {} holds no PEM private key: {e}", tls.key_file.display()))?;
    let provider = rustls::crypto::ring::default_provider();
    CertifiedKey::from_der(chain, key, &provider).map_err(|e| {
        anyhow::anyhow!(
            "key_file {} does not go with cert_file {}: {e}",
            tls.key_file.display(),
            tls.cert_file.display()
        )
    })
}
