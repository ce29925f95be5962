//! JSON Web Key Sets (RFC 7517) read from a file at start-up: the keys of an issuer that names
//! its keys by `kid`.
//!
//! Only public signature keys are taken: RSA (RS256), EC P-256 (ES256) and OKP Ed25519 (EdDSA).
//! A symmetric (`oct`) key is refused, since HS256 takes its key from an issuer's `secret` only,
//! and so is any key this gateway could not use safely: one without a `kid`, a `kid` seen twice, a
//! key meant for encryption, a key whose own `alg` is not in the issuer's allow-list. A bad set
//! stops the start-up; it is never half-used. Nothing here fetches keys: a token's `jku`, `x5u`,
//! `jwk` and `x5c` headers are never looked at.

use std::collections::HashSet;
use std::path::Path;

use jsonwebtoken::DecodingKey;
use jsonwebtoken::jwk::{
    AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm as JwkAlgorithm, KeyOperations, PublicKeyUse,
};
use serde::Deserialize;

use crate::config::KeyAlgorithm;

/// One key of a set, with the one algorithm its type verifies (its own `alg`, if any, agrees).
pub(crate) struct SetKey {
    /// Its `kid`, unique in the set.
    pub(crate) kid: String,
    /// RS256, ES256 or EdDSA, by the key's type and curve.
    pub(crate) algorithm: KeyAlgorithm,
    /// The public key.
    pub(crate) key: DecodingKey,
}

/// Why a key set was refused (a start-up error; each message says what to fix).
#[derive(Debug, thiserror::Error)]
pub(crate) enum KeySetError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Unreadable { path: String, source: std::io::Error },
    /// The file's key set is refused.
    #[error("{path}: {reason}")]
    InFile { path: String, reason: Box<KeySetError> },
    /// Not JSON of a JWK Set.
    #[error("not a JWK Set: {0}")]
    NotASet(serde_json::Error),
    /// `keys` is empty.
    #[error("the key set has no keys")]
    Empty,
    /// One key is refused.
    #[error("key #{index}: {reason}")]
    Key { index: usize, reason: KeyError },
    /// Two keys share a `kid`.
    #[error("kid {0:?} is used by more than one key")]
    DuplicateKid(String),
}

/// Why one key of a set was refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum KeyError {
    #[error("every key needs a `kid` (a non-empty string)")]
    NoKid,
    #[error("kid {0:?} is a symmetric (`oct`) key: HS256 takes its key from `secret`, never from a key set")]
    SymmetricType(String),
    #[error("kid {kid:?} has key type {kty:?}; RSA, EC and OKP are supported")]
    UnsupportedType { kid: String, kty: String },
    #[error("kid {kid:?} is not a valid {kty} key: {source}")]
    Invalid { kid: String, kty: String, source: serde_json::Error },
    #[error("kid {0:?} is not a signature key (`use` is not \"sig\")")]
    NotForSignatures(String),
    #[error("kid {0:?} is not for verifying (`key_ops` lacks \"verify\")")]
    NotForVerifying(String),
    #[error("kid {0:?}: EC keys must be on P-256")]
    CurveNotP256(String),
    #[error("kid {0:?}: OKP keys must be Ed25519")]
    CurveNotEd25519(String),
    #[error("kid {0:?} is a symmetric (`oct`) key")]
    Symmetric(String),
    #[error("kid {kid:?} says `alg` {own} but is a key for {algorithm:?}")]
    AlgorithmMismatch { kid: String, own: JwkAlgorithm, algorithm: KeyAlgorithm },
    #[error("kid {kid:?} is for {own}, which the issuer's `algorithms` does not list")]
    AlgorithmNotAllowed { kid: String, own: JwkAlgorithm },
    #[error("kid {kid:?}: {source}")]
    Unusable { kid: String, source: jsonwebtoken::errors::Error },
}

#[derive(Deserialize)]
struct KeySetFile {
    keys: Vec<serde_json::Value>,
}

/// Reads the key set in `path`. `allowed` is the issuer's allow-list. The error says what is
/// wrong, for a start-up error.
pub(crate) fn read_key_set(path: &Path, allowed: &[KeyAlgorithm]) -> Result<Vec<SetKey>, KeySetError> {
    let shown = || path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| KeySetError::Unreadable { path: shown(), source })?;
    parse_key_set(&text, allowed).map_err(|reason| KeySetError::InFile { path: shown(), reason: Box::new(reason) })
}

/// Parses a key set (the text of a JWKS file).
pub(crate) fn parse_key_set(text: &str, allowed: &[KeyAlgorithm]) -> Result<Vec<SetKey>, KeySetError> {
    let file: KeySetFile = serde_json::from_str(text).map_err(KeySetError::NotASet)?;
    if file.keys.is_empty() {
        return Err(KeySetError::Empty);
    }
    let mut kids = HashSet::new();
    let mut keys = Vec::with_capacity(file.keys.len());
    for (index, value) in file.keys.iter().enumerate() {
        let key = parse_key(value, allowed).map_err(|reason| KeySetError::Key { index, reason })?;
        if !kids.insert(key.kid.clone()) {
            return Err(KeySetError::DuplicateKid(key.kid));
        }
        keys.push(key);
    }
    Ok(keys)
}

fn parse_key(value: &serde_json::Value, allowed: &[KeyAlgorithm]) -> Result<SetKey, KeyError> {
    let kid = match value.get("kid") {
        Some(serde_json::Value::String(kid)) if !kid.is_empty() => kid.clone(),
        _ => return Err(KeyError::NoKid),
    };
    let kty = value.get("kty").and_then(serde_json::Value::as_str).unwrap_or_default();
    match kty {
        "RSA" | "EC" | "OKP" => {}
        "oct" => {
            return Err(KeyError::SymmetricType(kid));
        }
        other => return Err(KeyError::UnsupportedType { kid, kty: other.to_owned() }),
    }
    let jwk = Jwk::deserialize(value).map_err(|source| KeyError::Invalid {
        kid: kid.clone(),
        kty: kty.to_owned(),
        source,
    })?;
    if let Some(usage) = &jwk.common.public_key_use
        && *usage != PublicKeyUse::Signature
    {
        return Err(KeyError::NotForSignatures(kid));
    }
    if let Some(operations) = &jwk.common.key_operations
        && !operations.contains(&KeyOperations::Verify)
    {
        return Err(KeyError::NotForVerifying(kid));
    }
    let algorithm = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => KeyAlgorithm::RS256,
        AlgorithmParameters::EllipticCurve(ec) if ec.curve == EllipticCurve::P256 => KeyAlgorithm::ES256,
        AlgorithmParameters::OctetKeyPair(okp) if okp.curve == EllipticCurve::Ed25519 => KeyAlgorithm::EdDSA,
        AlgorithmParameters::EllipticCurve(_) => return Err(KeyError::CurveNotP256(kid)),
        AlgorithmParameters::OctetKeyPair(_) => return Err(KeyError::CurveNotEd25519(kid)),
        AlgorithmParameters::OctetKey(_) => return Err(KeyError::Symmetric(kid)),
    };
    if let Some(own) = jwk.common.key_algorithm {
        match key_algorithm(own) {
            Some(named) if named != algorithm => {
                return Err(KeyError::AlgorithmMismatch { kid, own, algorithm });
            }
            Some(named) if allowed.contains(&named) => {}
            _ => return Err(KeyError::AlgorithmNotAllowed { kid, own }),
        }
    }
    let key = DecodingKey::from_jwk(&jwk).map_err(|source| KeyError::Unusable { kid: kid.clone(), source })?;
    Ok(SetKey { kid, algorithm, key })
}

/// Our name for a key's own `alg`, if it is one we verify.
fn key_algorithm(alg: JwkAlgorithm) -> Option<KeyAlgorithm> {
    match alg {
        JwkAlgorithm::HS256 => Some(KeyAlgorithm::HS256),
        JwkAlgorithm::RS256 => Some(KeyAlgorithm::RS256),
        JwkAlgorithm::ES256 => Some(KeyAlgorithm::ES256),
        JwkAlgorithm::EdDSA => Some(KeyAlgorithm::EdDSA),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    const ALL: [KeyAlgorithm; 3] = [KeyAlgorithm::RS256, KeyAlgorithm::ES256, KeyAlgorithm::EdDSA];

    fn fixture_set() -> Value {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/keys/jwks.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    fn fixture_key(kid: &str) -> Value {
        fixture_set()["keys"].as_array().unwrap().iter().find(|key| key["kid"] == kid).unwrap().clone()
    }

    fn parse(keys: &[Value], allowed: &[KeyAlgorithm]) -> Result<Vec<SetKey>, KeySetError> {
        parse_key_set(&json!({ "keys": keys }).to_string(), allowed)
    }

    fn refusal(keys: &[Value], allowed: &[KeyAlgorithm]) -> String {
        match parse(keys, allowed) {
            Ok(_) => panic!("the set was accepted"),
            Err(reason) => reason.to_string(),
        }
    }

    #[test]
    fn the_fixture_set_holds_one_key_per_algorithm() {
        let keys = parse_key_set(&fixture_set().to_string(), &ALL).unwrap();
        let named: Vec<_> = keys.iter().map(|key| (key.kid.as_str(), key.algorithm)).collect();
        assert_eq!(
            named,
            [("rs-1", KeyAlgorithm::RS256), ("es-1", KeyAlgorithm::ES256), ("ed-1", KeyAlgorithm::EdDSA)]
        );
    }

    #[test]
    fn symmetric_keys_are_refused() {
        let oct =
            json!({"kty": "oct", "kid": "hs-1", "alg": "HS256", "k": "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA"});
        assert!(refusal(&[fixture_key("rs-1"), oct], &ALL).contains("symmetric (`oct`)"));
    }

    #[test]
    fn every_key_has_a_kid_of_its_own() {
        let mut anonymous = fixture_key("rs-1");
        anonymous.as_object_mut().unwrap().remove("kid");
        assert!(refusal(&[anonymous], &ALL).contains("needs a `kid`"));
        let mut twin = fixture_key("es-1");
        twin["kid"] = json!("rs-1");
        assert!(refusal(&[fixture_key("rs-1"), twin], &ALL).contains("more than one key"));
    }

    #[test]
    fn a_key_s_own_alg_is_allowed_and_fits_its_type() {
        assert!(refusal(&[fixture_key("ed-1")], &[KeyAlgorithm::RS256]).contains("is for EdDSA"));
        let mut pss = fixture_key("rs-1");
        pss["alg"] = json!("PS256");
        assert!(refusal(&[pss], &ALL).contains("is for PS256"));
        let mut mislabelled = fixture_key("rs-1");
        mislabelled["alg"] = json!("ES256");
        assert!(refusal(&[mislabelled], &ALL).contains("says `alg` ES256"));

        // Without an `alg` of its own, a key of a type outside the allow-list stays in the set
        // (a token naming it is refused for its algorithm, not for its kid).
        let mut plain = fixture_key("ed-1");
        plain.as_object_mut().unwrap().remove("alg");
        assert_eq!(parse(&[fixture_key("rs-1"), plain], &[KeyAlgorithm::RS256]).unwrap().len(), 2);
    }

    #[test]
    fn only_signature_keys_of_supported_curves_are_taken() {
        let mut encryption = fixture_key("rs-1");
        encryption["use"] = json!("enc");
        assert!(refusal(&[encryption], &ALL).contains("not a signature key"));
        let mut sign_only = fixture_key("rs-1");
        sign_only["key_ops"] = json!(["sign"]);
        assert!(refusal(&[sign_only], &ALL).contains("`key_ops`"));
        let mut p384 = fixture_key("es-1");
        p384["crv"] = json!("P-384");
        p384.as_object_mut().unwrap().remove("alg");
        assert!(refusal(&[p384], &ALL).contains("P-256"));
        let mut x25519 = fixture_key("ed-1");
        x25519["crv"] = json!("P-256");
        x25519.as_object_mut().unwrap().remove("alg");
        assert!(refusal(&[x25519], &ALL).contains("Ed25519"));
        let unknown = json!({"kty": "XYZ", "kid": "x"});
        assert!(refusal(&[unknown], &ALL).contains("key type \"XYZ\""));
    }

    #[test]
    fn an_empty_or_unparsable_set_is_refused() {
        assert!(refusal(&[], &ALL).contains("no keys"));
        assert!(matches!(parse_key_set("[]", &ALL), Err(reason) if reason.to_string().contains("not a JWK Set")));
        let mut no_modulus = fixture_key("rs-1");
        no_modulus.as_object_mut().unwrap().remove("n");
        assert!(refusal(&[no_modulus], &ALL).contains("not a valid RSA key"));
    }
}
