//! Fetching an issuer's key set from its identity provider: the one URL the configuration names
//! (`jwks_url`), or the `jwks_uri` of the issuer's OpenID Connect discovery document. Nothing a
//! token says is ever fetched (`jku`, `x5u`).
//!
//! Rules, checked when the configuration is read and again for a discovered URL: `https://`, or
//! `http://` only to a loopback host (a key set that anyone on the path could swap would let
//! anyone mint tokens); a discovered `jwks_uri` on the issuer's host unless the configuration
//! allows any host; redirects are not followed. Every fetch is bounded: a deadline for the whole
//! exchange and [`MAX_BODY_BYTES`] of body.
//!
//! A URL is only ever shown through [`KeySetUrl`] or [`shown_url_text`] (scheme, host, port and
//! path): errors and logs never carry its credentials or query, and neither does a reqwest error
//! (taken [`reqwest::Error::without_url`]).

use std::path::Path;
use std::time::Duration;

use reqwest::Url;
use reqwest::header::{CACHE_CONTROL, HeaderMap};
use serde::Deserialize;

use crate::config::IssuerConfig;
use crate::key_set_url::{KeySetUrl, shown_url_text};

/// The largest key set or discovery document read; a larger body fails the fetch.
pub(crate) const MAX_BODY_BYTES: usize = 1024 * 1024;

/// The path of the discovery document under the issuer's URL (OpenID Connect Discovery 1.0 §4).
const DISCOVERY_PATH: &str = ".well-known/openid-configuration";

/// Why an issuer's key-set location cannot be used (a start-up error; says what to fix).
#[derive(Debug, thiserror::Error)]
pub(crate) enum LocationError {
    #[error("{key} {url:?} is not a URL: {reason}")]
    NotAUrl { key: &'static str, url: String, reason: String },
    #[error(
        "{key} {url:?} is plain http:// to a host that is not loopback: use https:// (a key set fetched \
         without TLS could be swapped by anyone on the path)"
    )]
    PlainHttp { key: &'static str, url: String },
    #[error("{key} {url:?} has scheme {scheme:?}: use https://")]
    Scheme { key: &'static str, url: String, scheme: String },
    #[error("set `jwks_url` or `discovery = true`, not both")]
    UrlAndDiscovery,
    #[error("cannot read jwks_ca_file {path}: {source}")]
    UnreadableCa { path: String, source: std::io::Error },
    #[error("jwks_ca_file {path} holds no PEM certificate")]
    NoCertificate { path: String },
    #[error("jwks_ca_file {path}: {reason}")]
    BadCertificate { path: String, reason: String },
    #[error("cannot build the HTTPS client: {0}")]
    Client(String),
}

/// Why one fetch failed (kept as the issuer's last error; no secret in it).
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum FetchError {
    #[error("cannot fetch {url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("{url} answered {status}")]
    Status { url: String, status: u16 },
    #[error("{url} sent more than {MAX_BODY_BYTES} bytes")]
    TooLarge { url: String },
    #[error("discovery document {url}: {reason}")]
    Discovery { url: String, reason: String },
}

impl FetchError {
    /// The metric label of this outcome (a closed set).
    pub(crate) fn outcome(&self) -> &'static str {
        match self {
            Self::Unreachable { .. } => "unreachable",
            Self::Status { .. } => "http_error",
            Self::TooLarge { .. } => "too_large",
            Self::Discovery { .. } => "bad_discovery",
        }
    }
}

/// What a fetch brought: the key set's text and how long the server says it may be cached.
#[derive(Debug)]
pub(crate) struct Fetched {
    pub(crate) body: String,
    pub(crate) max_age: Option<Duration>,
}

/// Where an issuer's key set comes from.
#[derive(Debug, Clone)]
enum Location {
    /// `jwks_url`.
    Configured(KeySetUrl),
    /// `<issuer>/.well-known/openid-configuration`, then its `jwks_uri`.
    Discovery { document: KeySetUrl, issuer: String, any_host: bool },
}

/// Fetches one issuer's key set.
#[derive(Debug)]
pub(crate) struct KeySetFetcher {
    client: reqwest::Client,
    location: Location,
    /// The `jwks_uri` discovery found, reused until a fetch from it fails.
    discovered: parking_lot::Mutex<Option<KeySetUrl>>,
}

/// The part of a discovery document read here.
#[derive(Deserialize)]
struct DiscoveryDocument {
    issuer: Option<String>,
    jwks_uri: Option<String>,
}

impl KeySetFetcher {
    /// The fetcher of `issuer`'s key set (`jwks_url` or `discovery` is set), its URL checked.
    pub(crate) fn new(issuer: &IssuerConfig) -> Result<Self, LocationError> {
        let location = match (&issuer.jwks_url, issuer.discovery) {
            (Some(_), true) => return Err(LocationError::UrlAndDiscovery),
            (Some(url), false) => Location::Configured(checked_url("jwks_url", url)?),
            (None, _) => {
                let base = checked_url("issuer (with discovery = true)", &issuer.issuer)?;
                let mut document = base.to_fetch().clone();
                if !document.path().ends_with('/') {
                    document.set_path(&format!("{}/", document.path()));
                }
                let document = document.join(DISCOVERY_PATH).map_err(|e| LocationError::NotAUrl {
                    key: "issuer",
                    url: shown_url_text(&issuer.issuer),
                    reason: e.to_string(),
                })?;
                Location::Discovery {
                    document: KeySetUrl::new(document),
                    issuer: issuer.issuer.clone(),
                    any_host: issuer.jwks_uri_any_host,
                }
            }
        };
        let timeout = Duration::from_secs(issuer.jwks_fetch_timeout_secs.max(1));
        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(timeout)
            .timeout(timeout)
            .user_agent(concat!("shardgate/", env!("CARGO_PKG_VERSION")));
        if let Some(path) = &issuer.jwks_ca_file {
            builder = builder.tls_built_in_root_certs(false);
            for certificate in ca_certificates(path)? {
                builder = builder.add_root_certificate(certificate);
            }
        }
        let client = builder.build().map_err(|e| LocationError::Client(error_chain(&e)))?;
        Ok(Self { client, location, discovered: parking_lot::Mutex::new(None) })
    }

    /// The configured URL (`jwks_url`, or the discovery document's), for logs and the banner
    /// (shown without credentials or query).
    pub(crate) fn configured_url(&self) -> &KeySetUrl {
        match &self.location {
            Location::Configured(url) | Location::Discovery { document: url, .. } => url,
        }
    }

    /// Fetches the key set once.
    pub(crate) async fn fetch(&self) -> Result<Fetched, FetchError> {
        let url = match &self.location {
            Location::Configured(url) => url.clone(),
            Location::Discovery { document, issuer, any_host } => {
                let known = self.discovered.lock().clone();
                match known {
                    Some(url) => url,
                    None => {
                        let url = self.discover(document, issuer, *any_host).await?;
                        *self.discovered.lock() = Some(url.clone());
                        url
                    }
                }
            }
        };
        let fetched = self.get(&url).await;
        if fetched.is_err() {
            // Discover again next time: the provider may have moved its key set.
            *self.discovered.lock() = None;
        }
        fetched
    }

    /// Reads the discovery document and checks the `jwks_uri` it names.
    async fn discover(&self, document: &KeySetUrl, issuer: &str, any_host: bool) -> Result<KeySetUrl, FetchError> {
        let refused = |reason: String| FetchError::Discovery { url: document.to_string(), reason };
        let body = self.get(document).await?.body;
        let parsed: DiscoveryDocument =
            serde_json::from_str(&body).map_err(|e| refused(format!("not a discovery document: {e}")))?;
        if parsed.issuer.as_deref() != Some(issuer) {
            return Err(refused(format!("its `issuer` is {:?}, not the configured {issuer:?}", parsed.issuer)));
        }
        let jwks_uri = parsed.jwks_uri.ok_or_else(|| refused("it names no `jwks_uri`".to_owned()))?;
        let url = checked_url("jwks_uri", &jwks_uri).map_err(|e| refused(e.to_string()))?;
        if !any_host && url.host_str() != document.host_str() {
            return Err(refused(format!(
                "its jwks_uri {:?} is not on the issuer's host {:?} (set `jwks_uri_any_host = true` to \
                 allow it)",
                url.to_string(),
                document.host_str().unwrap_or_default()
            )));
        }
        Ok(url)
    }

    /// `GET url`: a success status and at most [`MAX_BODY_BYTES`] of body.
    async fn get(&self, url: &KeySetUrl) -> Result<Fetched, FetchError> {
        let shown = || url.to_string();
        let unreachable =
            |e: reqwest::Error| FetchError::Unreachable { url: shown(), reason: error_chain(&e.without_url()) };
        let mut response = self
            .client
            .get(url.to_fetch().clone())
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(unreachable)?;
        if !response.status().is_success() {
            return Err(FetchError::Status { url: shown(), status: response.status().as_u16() });
        }
        if response.content_length().is_some_and(|length| length > MAX_BODY_BYTES as u64) {
            return Err(FetchError::TooLarge { url: shown() });
        }
        let max_age = max_age(response.headers());
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(unreachable)? {
            if body.len() + chunk.len() > MAX_BODY_BYTES {
                return Err(FetchError::TooLarge { url: shown() });
            }
            body.extend_from_slice(&chunk);
        }
        let body = String::from_utf8(body)
            .map_err(|_| FetchError::Unreachable { url: shown(), reason: "the body is not UTF-8".to_owned() })?;
        Ok(Fetched { body, max_age })
    }
}

/// `url` parsed, if it is `https://`, or `http://` to a loopback host. The errors show it as
/// [`shown_url_text`] does.
fn checked_url(key: &'static str, url: &str) -> Result<KeySetUrl, LocationError> {
    let shown = || shown_url_text(url);
    let parsed = Url::parse(url).map_err(|e| LocationError::NotAUrl { key, url: shown(), reason: e.to_string() })?;
    match parsed.scheme() {
        "https" => Ok(KeySetUrl::new(parsed)),
        "http" if is_loopback(&parsed) => Ok(KeySetUrl::new(parsed)),
        "http" => Err(LocationError::PlainHttp { key, url: shown() }),
        other => Err(LocationError::Scheme { key, url: shown(), scheme: other.to_owned() }),
    }
}

/// Whether `url`'s host is this machine: `localhost`, 127.0.0.0/8 or `::1`.
pub(crate) fn is_loopback(url: &Url) -> bool {
    let Some(host) = url.host_str() else { return false };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => host.eq_ignore_ascii_case("localhost"),
    }
}

/// The certificates of a CA file.
fn ca_certificates(path: &Path) -> Result<Vec<reqwest::Certificate>, LocationError> {
    let shown = || path.display().to_string();
    let pem = std::fs::read(path).map_err(|source| LocationError::UnreadableCa { path: shown(), source })?;
    let certificates = reqwest::Certificate::from_pem_bundle(&pem)
        .map_err(|e| LocationError::BadCertificate { path: shown(), reason: error_chain(&e) })?;
    if certificates.is_empty() {
        return Err(LocationError::NoCertificate { path: shown() });
    }
    Ok(certificates)
}

/// `Cache-Control: max-age`, unless `no-store` or `no-cache` say not to keep the response.
fn max_age(headers: &HeaderMap) -> Option<Duration> {
    let mut max_age = None;
    for value in headers.get_all(CACHE_CONTROL) {
        for directive in value.to_str().unwrap_or_default().split(',') {
            let directive = directive.trim();
            let (name, argument) = directive.split_once('=').unwrap_or((directive, ""));
            match name.trim().to_ascii_lowercase().as_str() {
                "no-store" | "no-cache" => return Some(Duration::ZERO),
                "max-age" => max_age = argument.trim().trim_matches('"').parse().ok().map(Duration::from_secs),
                _ => {}
            }
        }
    }
    max_age
}

/// An error and its sources, one line: reqwest's own message rarely says why (a certificate
/// refused, a connection refused), its sources do.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    #[test]
    fn only_https_or_loopback_http_is_fetched() {
        for ok in ["https://idp.example.com/jwks", "http://127.0.0.1:8080/jwks", "http://localhost/k", "http://[::1]/k"]
        {
            assert!(checked_url("jwks_url", ok).is_ok(), "{ok}");
        }
        let plain = checked_url("jwks_url", "http://idp.example.com/jwks").unwrap_err().to_string();
        assert!(plain.contains("use https://"), "{plain}");
        assert!(checked_url("jwks_url", "http://127.0.0.1.example.com/").is_err());
        assert!(checked_url("jwks_url", "file:///etc/jwks.json").unwrap_err().to_string().contains("scheme"));
        assert!(checked_url("jwks_url", "not a url").unwrap_err().to_string().contains("is not a URL"));
    }

    #[test]
    fn cache_control_max_age_is_read_and_no_store_means_now() {
        let with = |value: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(CACHE_CONTROL, HeaderValue::from_static(value));
            max_age(&headers)
        };
        assert_eq!(with("public, max-age=3600"), Some(Duration::from_secs(3600)));
        assert_eq!(with("Max-Age=\"60\", must-revalidate"), Some(Duration::from_secs(60)));
        assert_eq!(with("no-store, max-age=3600"), Some(Duration::ZERO));
        assert_eq!(with("public"), None);
        assert_eq!(max_age(&HeaderMap::new()), None);
    }

    #[test]
    fn the_discovery_document_is_under_the_issuer_url() {
        let issuer = |url: &str| {
            let config = IssuerConfig { discovery: true, ..IssuerConfig::named(url) };
            KeySetFetcher::new(&config).map(|fetcher| fetcher.configured_url().to_string())
        };
        assert_eq!(
            issuer("https://idp.example.com/realms/a").unwrap(),
            "https://idp.example.com/realms/a/.well-known/openid-configuration"
        );
        assert_eq!(
            issuer("https://idp.example.com/").unwrap(),
            "https://idp.example.com/.well-known/openid-configuration"
        );
        assert!(issuer("http://idp.example.com").unwrap_err().to_string().contains("use https://"));
        let both = IssuerConfig {
            jwks_url: Some("https://idp.example.com/k".into()),
            discovery: true,
            ..IssuerConfig::named("x")
        };
        assert!(KeySetFetcher::new(&both).unwrap_err().to_string().contains("not both"));
    }
}
