//! The `[auth]` configuration section.

use std::path::PathBuf;

use secrecy::SecretString;
use serde::{Deserialize, Serialize, Serializer};

/// Token verification settings.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthConfig {
    /// Trusted token issuers. Default: none, which means the embedded default issuer
    /// (`shardgate`, HS256 with the secret generated in the data directory).
    pub issuers: Vec<IssuerConfig>,
    /// Clock-skew allowance for `exp`, `nbf` and `iat` (a token issued later than now plus the
    /// leeway is refused), in seconds. Default 30.
    pub leeway_secs: u64,
}

impl Default for AuthConfig {
    fn default() -> Self {
        Self { issuers: Vec::new(), leeway_secs: 30 }
    }
}

/// Signature algorithms an issuer may be allowed. `none` and every algorithm not listed here are
/// always rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum KeyAlgorithm {
    /// HMAC-SHA256 with a shared secret (`secret` only, never from a key set).
    HS256,
    /// RSA PKCS#1 v1.5 with SHA-256: an RSA public key.
    RS256,
    /// ECDSA P-256 with SHA-256: a P-256 public key.
    ES256,
    /// Ed25519: an Ed25519 public key.
    EdDSA,
}

/// One trusted issuer: the `iss` it signs as, the algorithms it may sign with, and its keys.
///
/// The allow-list is `algorithms`, or `algorithm` as the shorthand for a list of one: exactly one
/// of the two is set. The keys come from exactly one of `secret`, `public_key_pem`,
/// `public_key_file`, `jwks_file`, `jwks_url` and `discovery = true`. Every listed algorithm must
/// fit one of the keys (for a fetched key set: of the first set fetched), and a token's `alg`
/// must be listed and fit the key that verifies it. Checked at start-up.
///
/// A fetched key set (`jwks_url`, or `discovery`) is refreshed on a schedule (the response's
/// `Cache-Control: max-age`, kept between `jwks_refresh_min_secs` and `jwks_refresh_max_secs`),
/// and once more when a token names a `kid` the set lacks (at most once per
/// `jwks_unknown_kid_refetch_secs`). While the provider cannot be reached the last good set stays
/// in use, for at most `jwks_max_age_secs` after it was fetched.
///
/// `Debug` shows `jwks_url` as [`crate::shown_url`] does (no credentials, no query) and no
/// secret.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IssuerConfig {
    /// The `iss` claim tokens of this issuer carry (required, checked).
    pub issuer: String,
    /// Shorthand for `algorithms = [algorithm]`.
    #[serde(default)]
    pub algorithm: Option<KeyAlgorithm>,
    /// The algorithms this issuer's tokens may be signed with. Default: empty (then `algorithm`
    /// must be set).
    #[serde(default)]
    pub algorithms: Vec<KeyAlgorithm>,
    /// Accepted `aud` values: tokens must carry an `aud` naming one of them. Default: empty,
    /// which does not start unless `allow_any_audience = true` says so: an identity provider
    /// shared with other services signs their tokens with the same keys, and without an
    /// audience a token minted for another service (with a `tenant` claim) would pass here.
    #[serde(default)]
    pub audience: Vec<String>,
    /// Accept this issuer's tokens whatever their `aud`, or without one: `audience` is empty on
    /// purpose. For an issuer whose keys sign tokens for this gateway alone (an HS256 secret no
    /// other service holds). Default false; not together with `audience`. The embedded
    /// default's own issuer (`shardgate`, its generated secret) is such an issuer.
    #[serde(default)]
    pub allow_any_audience: bool,
    /// HS256 shared secret, at least 32 bytes.
    #[serde(serialize_with = "redacted_option")]
    pub secret: Option<SecretString>,
    /// An RS256, ES256 or EdDSA public key, PEM text.
    pub public_key_pem: Option<String>,
    /// An RS256, ES256 or EdDSA public key, path to a PEM file.
    pub public_key_file: Option<PathBuf>,
    /// Path to a JSON Web Key Set (RFC 7517) file of RSA, P-256 and Ed25519 public keys, read at
    /// start-up. Every key has its own `kid`, and a token's `kid` header picks the key; a token
    /// without `kid` is verified only when the set holds exactly one key for its `alg`.
    pub jwks_file: Option<PathBuf>,
    /// The URL of the issuer's JSON Web Key Set, fetched at start-up and refreshed (the same
    /// checks as `jwks_file`; a set that fails them is not taken and the last good one stays).
    /// `https://`, or `http://` to a loopback host only. Redirects are not followed, and a fetch
    /// reads at most 1 MiB.
    #[serde(default)]
    pub jwks_url: Option<String>,
    /// Read the key set's URL from OpenID Connect discovery:
    /// `<issuer>/.well-known/openid-configuration`, whose `issuer` must be this `issuer` and
    /// whose `jwks_uri` must be on the issuer's host (see `jwks_uri_any_host`). `issuer` must then
    /// be an `https://` URL (or `http://` on a loopback host). Default false.
    #[serde(default)]
    pub discovery: bool,
    /// Accept a discovered `jwks_uri` on another host than the issuer's. Default false.
    #[serde(default)]
    pub jwks_uri_any_host: bool,
    /// A PEM file of the CA certificates that verify the key-set server (and the discovery
    /// document's); when set, only these are trusted. Default: the Mozilla roots built in.
    #[serde(default)]
    pub jwks_ca_file: Option<PathBuf>,
    /// Shortest time between two scheduled fetches of a fetched key set, whatever the
    /// response's `Cache-Control: max-age` says; also the interval without a `max-age`. Seconds,
    /// default 300.
    #[serde(default = "defaults::refresh_min")]
    pub jwks_refresh_min_secs: u64,
    /// Longest time between two scheduled fetches. Seconds, default 86400 (24 h); at most
    /// `jwks_max_age_secs`.
    #[serde(default = "defaults::refresh_max")]
    pub jwks_refresh_max_secs: u64,
    /// A token whose `kid` the set lacks makes the set be fetched again, at most once in this
    /// many seconds, so forged `kid`s cannot make the gateway hammer the provider. Default 30.
    #[serde(default = "defaults::unknown_kid_refetch")]
    pub jwks_unknown_kid_refetch_secs: u64,
    /// How long the last good set stays in use while every fetch fails; after that, tokens of
    /// this issuer are refused (401 `key_set_expired`). Seconds since the set was fetched,
    /// default 86400 (24 h).
    #[serde(default = "defaults::max_age")]
    pub jwks_max_age_secs: u64,
    /// Deadline of one fetch (connect, response, body), seconds. Default 5.
    #[serde(default = "defaults::fetch_timeout")]
    pub jwks_fetch_timeout_secs: u64,
}

impl std::fmt::Debug for IssuerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IssuerConfig")
            .field("issuer", &self.issuer)
            .field("algorithm", &self.algorithm)
            .field("algorithms", &self.algorithms)
            .field("audience", &self.audience)
            .field("allow_any_audience", &self.allow_any_audience)
            .field("secret", &self.secret)
            .field("public_key_file", &self.public_key_file)
            .field("jwks_file", &self.jwks_file)
            .field("jwks_url", &self.jwks_url.as_deref().map(crate::key_set_url::shown_url_text))
            .field("discovery", &self.discovery)
            .field("jwks_ca_file", &self.jwks_ca_file)
            .finish_non_exhaustive()
    }
}

/// Writes a secret as `"<redacted>"`, never its value, and an unset one as unset:
/// configurations serialise (the configuration reference shows their defaults) without their
/// secrets.
pub(crate) fn redacted_option<S: Serializer>(secret: &Option<SecretString>, serializer: S) -> Result<S::Ok, S::Error> {
    match secret {
        Some(_) => serializer.serialize_some("<redacted>"),
        None => serializer.serialize_none(),
    }
}

/// Defaults of the fetched key-set settings.
mod defaults {
    pub(super) fn refresh_min() -> u64 {
        300
    }
    pub(super) fn refresh_max() -> u64 {
        86_400
    }
    pub(super) fn unknown_kid_refetch() -> u64 {
        30
    }
    pub(super) fn max_age() -> u64 {
        86_400
    }
    pub(super) fn fetch_timeout() -> u64 {
        5
    }
}

impl IssuerConfig {
    /// An issuer named `issuer` with no algorithm and no key yet (which does not start): the
    /// start of an `IssuerConfig { .., ..IssuerConfig::named(issuer) }` literal.
    pub fn named(issuer: impl Into<String>) -> Self {
        Self {
            issuer: issuer.into(),
            algorithm: None,
            algorithms: Vec::new(),
            audience: Vec::new(),
            allow_any_audience: false,
            secret: None,
            public_key_pem: None,
            public_key_file: None,
            jwks_file: None,
            jwks_url: None,
            discovery: false,
            jwks_uri_any_host: false,
            jwks_ca_file: None,
            jwks_refresh_min_secs: defaults::refresh_min(),
            jwks_refresh_max_secs: defaults::refresh_max(),
            jwks_unknown_kid_refetch_secs: defaults::unknown_kid_refetch(),
            jwks_max_age_secs: defaults::max_age(),
            jwks_fetch_timeout_secs: defaults::fetch_timeout(),
        }
    }

    /// An issuer named `issuer` whose tokens are HS256-signed with `secret` (at least 32 bytes,
    /// checked at start-up), with no audience yet: set `audience`, or `allow_any_audience`, before
    /// it starts.
    pub fn hs256(issuer: impl Into<String>, secret: SecretString) -> Self {
        Self { algorithm: Some(KeyAlgorithm::HS256), secret: Some(secret), ..Self::named(issuer) }
    }

    /// The allow-list as configured: `algorithms` followed by `algorithm` (at most one of the two
    /// is set in a configuration that starts).
    pub fn allowed_algorithms(&self) -> impl Iterator<Item = KeyAlgorithm> + '_ {
        self.algorithms.iter().copied().chain(self.algorithm)
    }

    /// Whether this issuer's keys are fetched from its identity provider (`jwks_url` or
    /// `discovery`), rather than configured.
    pub fn fetches_keys(&self) -> bool {
        self.jwks_url.is_some() || self.discovery
    }
}
