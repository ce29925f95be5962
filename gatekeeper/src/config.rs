//! The `[auth]` configuration section.

use std::path::PathBuf;

use secrecy::SecretString;
use serde::Deserialize;

/// Token verification settings.
#[derive(Debug, Clone, Deserialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
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
/// `public_key_file` and `jwks_file`. Every listed algorithm must fit one of the keys, and a
/// token's `alg` must be listed and fit the key that verifies it. Checked at start-up.
#[derive(Debug, Clone, Deserialize)]
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
    /// Accepted `aud` values. When set, tokens must carry an `aud` naming one of them. Default:
    /// empty, and `aud` is not checked.
    #[serde(default)]
    pub audience: Vec<String>,
    /// HS256 shared secret, at least 32 bytes.
    pub secret: Option<SecretString>,
    /// An RS256, ES256 or EdDSA public key, PEM text.
    pub public_key_pem: Option<String>,
    /// An RS256, ES256 or EdDSA public key, path to a PEM file.
    pub public_key_file: Option<PathBuf>,
    /// Path to a JSON Web Key Set (RFC 7517) file of RSA, P-256 and Ed25519 public keys, read at
    /// start-up. Every key has its own `kid`, and a token's `kid` header picks the key; a token
    /// without `kid` is verified only when the set holds exactly one key for its `alg`.
    pub jwks_file: Option<PathBuf>,
}

impl IssuerConfig {
    /// An issuer named `issuer` whose tokens are HS256-signed with `secret` (at least 32 bytes,
    /// checked at start-up), no audience checked.
    pub fn hs256(issuer: impl Into<String>, secret: SecretString) -> Self {
        Self {
            issuer: issuer.into(),
            algorithm: Some(KeyAlgorithm::HS256),
            algorithms: Vec::new(),
            audience: Vec::new(),
            secret: Some(secret),
            public_key_pem: None,
            public_key_file: None,
            jwks_file: None,
        }
    }

    /// The allow-list as configured: `algorithms` followed by `algorithm` (at most one of the two
    /// is set in a configuration that starts).
    pub fn allowed_algorithms(&self) -> impl Iterator<Item = KeyAlgorithm> + '_ {
        self.algorithms.iter().copied().chain(self.algorithm)
    }
}
