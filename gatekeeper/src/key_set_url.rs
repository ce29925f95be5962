//! [`KeySetUrl`]: the URL an issuer's keys come from (`jwks_url`, a discovery document, a
//! discovered `jwks_uri`). Such a URL may carry credentials (`https://user:password@...`) or a
//! key in its query (`?key=...`), so it is only ever shown as scheme, host, port and path:
//! `Display` and `Debug` print that, and so do `/readyz`, a fetch's last error, the start-up
//! banner and every log line, which all print it through this type or [`shown_url`]. The whole
//! URL is used for one thing only: the request.

use std::fmt;
use std::fmt::Write as _;

use reqwest::Url;

/// The URL of a key set or discovery document; shown without credentials, query or fragment.
#[derive(Clone, PartialEq, Eq)]
pub struct KeySetUrl(Url);

impl KeySetUrl {
    /// Wraps `url`.
    pub(crate) fn new(url: Url) -> Self {
        Self(url)
    }

    /// The whole URL, to send the request to (never to show).
    pub(crate) fn to_fetch(&self) -> &Url {
        &self.0
    }

    /// Its host, to compare a discovered URL's host with the issuer's.
    pub(crate) fn host_str(&self) -> Option<&str> {
        self.0.host_str()
    }
}

impl fmt::Display for KeySetUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&shown_url(&self.0))
    }
}

impl fmt::Debug for KeySetUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("KeySetUrl").field(&shown_url(&self.0)).finish()
    }
}

/// `url` as it may be shown: scheme, host, port and path; no user, password, query or fragment.
pub fn shown_url(url: &Url) -> String {
    let mut shown = format!("{}://", url.scheme());
    if let Some(host) = url.host_str() {
        shown.push_str(host);
    }
    if let Some(port) = url.port() {
        let _ = write!(shown, ":{port}");
    }
    shown.push_str(url.path());
    shown
}

/// A configured URL text as it may be shown (in a start-up error): [`shown_url`] of it when it
/// parses; when it does not, nothing of it (it may still hold a password).
pub(crate) fn shown_url_text(text: &str) -> String {
    match Url::parse(text) {
        Ok(url) => shown_url(&url),
        Err(_) => "(the value is not shown: it may hold a secret)".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_query_and_fragment_are_never_shown() {
        let url = Url::parse("https://user:secret@idp.example.com:8443/realms/a/keys?key=sekrit&x=1#frag").unwrap();
        let wrapped = KeySetUrl::new(url.clone());
        for shown in [wrapped.to_string(), format!("{wrapped:?}"), shown_url(&url)] {
            assert!(shown.contains("https://idp.example.com:8443/realms/a/keys"), "{shown}");
            for secret in ["user", "secret", "sekrit", "key=", "frag"] {
                assert!(!shown.contains(secret), "{secret} in {shown}");
            }
        }
        assert_eq!(wrapped.to_fetch(), &url, "the request still goes to the whole URL");
        assert_eq!(shown_url_text("http://[::1]/k?token=t"), "http://[::1]/k");
        assert!(!shown_url_text("https://user:pw@ not a url").contains("pw"));
    }
}
