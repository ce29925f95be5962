//! [`KeyServer`]: an identity provider's key-set endpoint that a test runs on loopback (plain
//! HTTP, or HTTPS with a [`crate::TestCa`] certificate): it serves a JWKS the test changes, an
//! OpenID Connect discovery document if the test sets one, counts the requests of each path,
//! can be stopped and started again on the same port, as a provider that goes down and returns,
//! and can stall: take requests and answer none until it is told to go on.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::tls::Issued;

/// The path of the key set.
pub const JWKS_PATH: &str = "/jwks";
/// The path of the discovery document.
pub const DISCOVERY_PATH: &str = "/.well-known/openid-configuration";

/// What the server answers, and what it was asked.
#[derive(Debug, Default)]
struct Served {
    jwks: String,
    cache_control: Option<String>,
    discovery: Option<String>,
    requests: HashMap<String, usize>,
}

/// A key-set server on 127.0.0.1; stopped on drop.
pub struct KeyServer {
    /// Where it listens.
    pub addr: SocketAddr,
    served: Arc<Mutex<Served>>,
    tls: Option<TlsAcceptor>,
    task: Option<JoinHandle<()>>,
    /// While `true`, requests are read and counted but not answered.
    stalled: Arc<tokio::sync::watch::Sender<bool>>,
}

impl KeyServer {
    /// A plain HTTP server serving `jwks` (a JSON Web Key Set).
    pub async fn start(jwks: &serde_json::Value) -> Self {
        Self::bind(jwks, None).await
    }

    /// An HTTPS server with the certificate `issued`, serving `jwks`.
    pub async fn start_tls(jwks: &serde_json::Value, issued: &Issued) -> Self {
        let certificates = CertificateDer::pem_slice_iter(issued.cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .expect("the certificate is PEM");
        let key = PrivateKeyDer::from_pem_slice(issued.key_pem.as_bytes()).expect("the key is PEM");
        let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
        let config = tokio_rustls::rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(certificates, key)
            .expect("a server certificate");
        Self::bind(jwks, Some(TlsAcceptor::from(Arc::new(config)))).await
    }

    async fn bind(jwks: &serde_json::Value, tls: Option<TlsAcceptor>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
        let addr = listener.local_addr().expect("its address");
        let served = Arc::new(Mutex::new(Served { jwks: jwks.to_string(), ..Served::default() }));
        let stalled = Arc::new(tokio::sync::watch::Sender::new(false));
        let task = Some(tokio::spawn(serve(listener, served.clone(), tls.clone(), stalled.clone())));
        Self { addr, served, tls, task, stalled }
    }

    /// `http://127.0.0.1:<port>` (or `https://`).
    pub fn base(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// The key set's URL.
    pub fn jwks_url(&self) -> String {
        format!("{}{JWKS_PATH}", self.base())
    }

    /// Serves `jwks` from now on.
    pub fn set_jwks(&self, jwks: &serde_json::Value) {
        self.served.lock().unwrap().jwks = jwks.to_string();
    }

    /// Sends `Cache-Control: <value>` with the key set from now on.
    pub fn set_cache_control(&self, value: &str) {
        self.served.lock().unwrap().cache_control = Some(value.to_owned());
    }

    /// Serves `document` at [`DISCOVERY_PATH`] from now on.
    pub fn set_discovery(&self, document: &serde_json::Value) {
        self.served.lock().unwrap().discovery = Some(document.to_string());
    }

    /// How many requests asked for `path` so far.
    pub fn requests(&self, path: &str) -> usize {
        self.served.lock().unwrap().requests.get(path).copied().unwrap_or_default()
    }

    /// From now on, reads and counts requests but answers none (a provider that hangs), until
    /// [`KeyServer::go_on`]; requests held meanwhile are answered then.
    pub fn stall(&self) {
        self.stalled.send_replace(true);
    }

    /// Answers again, the requests it held first.
    pub fn go_on(&self) {
        self.stalled.send_replace(false);
    }

    /// Every request so far, whatever its path.
    pub fn all_requests(&self) -> usize {
        self.served.lock().unwrap().requests.values().sum()
    }

    /// Stops listening: once it returns, connections to the port are refused until
    /// [`KeyServer::resume`].
    pub async fn stop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
            // Completes once the task is dropped, and its listener with it.
            let _ = task.await;
        }
    }

    /// Listens again on the same port.
    pub async fn resume(&mut self) {
        self.stop().await;
        let listener = crate::eventually::eventually(std::time::Duration::from_secs(5), async || {
            TcpListener::bind(self.addr).await.ok()
        })
        .await
        .expect("the port is free again");
        self.task = Some(tokio::spawn(serve(listener, self.served.clone(), self.tls.clone(), self.stalled.clone())));
    }
}

impl std::fmt::Debug for KeyServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyServer").field("base", &self.base()).finish()
    }
}

impl Drop for KeyServer {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

async fn serve(
    listener: TcpListener,
    served: Arc<Mutex<Served>>,
    tls: Option<TlsAcceptor>,
    stalled: Arc<tokio::sync::watch::Sender<bool>>,
) {
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let served = served.clone();
        let tls = tls.clone();
        let go_on = stalled.subscribe();
        tokio::spawn(async move {
            match tls {
                Some(acceptor) => {
                    if let Ok(stream) = acceptor.accept(stream).await {
                        answer(stream, &served, go_on).await;
                    }
                }
                None => answer(stream, &served, go_on).await,
            }
        });
    }
}

/// Reads one request head and answers it (once the server is not stalled); the connection
/// closes after.
async fn answer(
    mut stream: impl AsyncRead + AsyncWrite + Unpin,
    served: &Mutex<Served>,
    mut go_on: tokio::sync::watch::Receiver<bool>,
) {
    let mut head = Vec::new();
    let mut buffer = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buffer[..n]),
        }
    }
    let head = String::from_utf8_lossy(&head);
    let path = head.split(' ').nth(1).unwrap_or_default().to_owned();
    // Counted as it arrives, so a test sees a request that a stalled server holds.
    *served.lock().unwrap().requests.entry(path.clone()).or_default() += 1;
    let _ = go_on.wait_for(|stalled| !*stalled).await;
    let (status, body, cache_control) = {
        let served = served.lock().unwrap();
        match path.as_str() {
            JWKS_PATH => ("200 OK", served.jwks.clone(), served.cache_control.clone()),
            DISCOVERY_PATH => match &served.discovery {
                Some(document) => ("200 OK", document.clone(), None),
                None => ("404 Not Found", "{}".to_owned(), None),
            },
            _ => ("404 Not Found", "{}".to_owned(), None),
        }
    };
    let cache_control = cache_control.map(|value| format!("Cache-Control: {value}\r\n")).unwrap_or_default();
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{cache_control}Connection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}
