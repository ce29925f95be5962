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
    /// Clock-skew allowance for `exp` and `nbf`, in seconds. Default 30.
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
    /// HMAC-SHA256 with a shared secret.
    HS256,
    /// RSA PKCS#1 v1.5 with SHA-256, public key in PEM.
    RS256,
    /// ECDSA P-256 with SHA-256, public key in PEM.
    ES256,
    /// Ed25519, public key in PEM.
    EdDSA,
}

/// One trusted issuer. Exactly one of `secret`, `public_key_pem` and `public_key_file` is set,
/// matching `algorithm`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IssuerConfig {
    /// The `iss` claim tokens of this issuer carry (required, checked).
    pub issuer: String,
    /// The one algorithm this issuer signs with (an explicit allow-list of one).
    pub algorithm: KeyAlgorithm,
    /// Accepted `aud` values; empty means tokens must not be audience-restricted to others
    /// (an `aud` claim is then not checked).
    #[serde(default)]
    pub audience: Vec<String>,
    /// HS256 shared secret.
    pub secret: Option<SecretString>,
    /// RS256/ES256/EdDSA public key, PEM text.
    pub public_key_pem: Option<String>,
    /// RS256/ES256/EdDSA public key, path to a PEM file.
    pub public_key_file: Option<PathBuf>,
}
