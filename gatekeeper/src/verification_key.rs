//! A key that verifies tokens of one issuer: the one algorithm it verifies, the public key (or
//! HS256 secret), and the claim checks for that issuer and algorithm. Built at start-up for
//! configured keys, and on every fetch for a key set fetched from the identity provider, with the
//! same checks in both cases.

use jsonwebtoken::{Algorithm, DecodingKey, Validation};

use crate::config::{IssuerConfig, KeyAlgorithm};
use crate::jwks::SetKey;

/// A key with the one algorithm it verifies and the checks for that algorithm.
pub(crate) struct VerificationKey {
    pub(crate) algorithm: KeyAlgorithm,
    pub(crate) key: DecodingKey,
    pub(crate) validation: Validation,
}

/// Why a key cannot verify anything (each message says what is wrong with it).
#[derive(Debug, thiserror::Error)]
pub(crate) enum KeyCheckError {
    #[error("an Ed25519 public key is 32 bytes")]
    Ed25519Length,
    #[error("unusable {algorithm:?} key: {source}")]
    UnusableKey { algorithm: KeyAlgorithm, source: jsonwebtoken::errors::Error },
    #[error("kid {kid:?}: {reason}")]
    SetKey { kid: String, reason: Box<KeyCheckError> },
}

impl VerificationKey {
    /// `key` for `algorithm`, checked ([`check_key`]), with the claim checks of `issuer`.
    pub(crate) fn new(
        issuer: &IssuerConfig,
        algorithm: KeyAlgorithm,
        key: DecodingKey,
        leeway_secs: u64,
    ) -> Result<Self, KeyCheckError> {
        check_key(&key, algorithm)?;
        Ok(Self { algorithm, key, validation: validation(issuer, algorithm, leeway_secs) })
    }
}

/// The keys of a parsed key set, each checked, by `kid`.
pub(crate) fn set_keys(
    issuer: &IssuerConfig,
    keys: Vec<SetKey>,
    leeway_secs: u64,
) -> Result<Vec<(String, VerificationKey)>, KeyCheckError> {
    keys.into_iter()
        .map(|set_key| {
            let key = VerificationKey::new(issuer, set_key.algorithm, set_key.key, leeway_secs)
                .map_err(|reason| KeyCheckError::SetKey { kid: set_key.kid.clone(), reason: Box::new(reason) })?;
            Ok((set_key.kid, key))
        })
        .collect()
}

/// The `jsonwebtoken` name of `alg`.
pub(crate) fn jwt_algorithm(alg: KeyAlgorithm) -> Algorithm {
    match alg {
        KeyAlgorithm::HS256 => Algorithm::HS256,
        KeyAlgorithm::RS256 => Algorithm::RS256,
        KeyAlgorithm::ES256 => Algorithm::ES256,
        KeyAlgorithm::EdDSA => Algorithm::EdDSA,
    }
}

/// Proves that `key` works for `algorithm`, so that a broken key (an EC point off the curve, a
/// short Ed25519 key) stops the start-up (or is not taken from a fetched set) instead of failing
/// every request.
fn check_key(key: &DecodingKey, algorithm: KeyAlgorithm) -> Result<(), KeyCheckError> {
    if algorithm == KeyAlgorithm::EdDSA && key.as_bytes().len() != 32 {
        return Err(KeyCheckError::Ed25519Length);
    }
    jsonwebtoken::crypto::verify("", b"", key, jwt_algorithm(algorithm))
        .map(drop)
        .map_err(|source| KeyCheckError::UnusableKey { algorithm, source })
}

/// The claim checks for tokens of `issuer` signed with `algorithm`.
fn validation(issuer: &IssuerConfig, algorithm: KeyAlgorithm, leeway_secs: u64) -> Validation {
    let mut validation = Validation::new(jwt_algorithm(algorithm));
    validation.leeway = leeway_secs;
    validation.validate_exp = true;
    validation.validate_nbf = true;
    validation.set_issuer(&[issuer.issuer.as_str()]);
    if issuer.audience.is_empty() {
        validation.validate_aud = false;
        validation.set_required_spec_claims(&["exp", "iss"]);
    } else {
        validation.set_audience(&issuer.audience);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
    }
    validation
}
