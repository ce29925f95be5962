//! Bearer JWT verification and minting.
//!
//! Policy: each issuer has exactly one allowed algorithm and one key; the token's `iss` picks the
//! issuer, and the header's `alg` must be that issuer's algorithm (so `alg: none` and algorithm
//! confusion are rejected before any signature check). `exp` and `iss` are required, `aud` is
//! checked when the issuer lists audiences, `nbf` is honoured, with a small leeway. Key URLs in
//! headers (`jku`, `x5u`) are never fetched.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation, decode, decode_header, encode};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use crate::config::{AuthConfig, IssuerConfig, KeyAlgorithm};
use crate::principal::{Principal, Scopes};

/// The longest token this verifier looks at; longer headers are rejected unparsed.
const MAX_TOKEN_BYTES: usize = 8 * 1024;

/// Why a token was not accepted. Every variant becomes 401 `invalid_token` (or
/// `missing_token`) with `WWW-Authenticate: Bearer`; the reason is logged at debug level only.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// No `Authorization: Bearer` header.
    #[error("missing bearer token")]
    Missing,
    /// Not a well-formed JWT, or too long.
    #[error("malformed token")]
    Malformed,
    /// `iss` names no configured issuer.
    #[error("unknown issuer")]
    UnknownIssuer,
    /// `alg` is not the issuer's algorithm.
    #[error("algorithm not allowed for this issuer")]
    AlgorithmNotAllowed,
    /// Signature does not verify.
    #[error("bad signature")]
    BadSignature,
    /// `exp` is in the past (beyond the leeway).
    #[error("token expired")]
    Expired,
    /// `nbf` is in the future.
    #[error("token not yet valid")]
    NotYetValid,
    /// `aud` does not match.
    #[error("audience mismatch")]
    WrongAudience,
    /// A required claim is missing or has the wrong type.
    #[error("invalid claims: {0}")]
    InvalidClaims(String),
    /// The issuer configuration is unusable (reported at start-up).
    #[error("invalid issuer configuration for {issuer}: {reason}")]
    Config {
        /// Which issuer.
        issuer: String,
        /// What is wrong.
        reason: String,
    },
}

#[derive(Debug, Deserialize)]
struct Claims {
    iss: String,
    exp: u64,
    #[serde(default)]
    sub: Option<String>,
    #[serde(default)]
    tenant: Option<String>,
    #[serde(default)]
    scope: String,
}

#[derive(Debug, Deserialize)]
struct IssuerOnly {
    iss: Option<String>,
}

struct Verifier {
    issuer: String,
    algorithm: Algorithm,
    key: DecodingKey,
    validation: Validation,
}

/// Verifies bearer tokens against the configured issuers.
///
/// Tokens that verified are remembered (by their exact text, for at most a minute and never past
/// their `exp`), so a client reusing its token pays for the signature check once, not on every
/// request.
pub struct Authenticator {
    verifiers: Vec<Verifier>,
    verified: moka::sync::Cache<Box<str>, Arc<Verified>, foldhash::fast::RandomState>,
    leeway_secs: u64,
    /// Seconds since the Unix epoch; replaced in tests.
    clock: fn() -> u64,
}

struct Verified {
    principal: Arc<Principal>,
    exp: u64,
}

/// How many verified tokens are remembered.
const VERIFIED_CAPACITY: u64 = 10_000;
/// How long a verified token is remembered at most.
const VERIFIED_TTL: Duration = Duration::from_secs(60);

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default()
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("issuers", &self.verifiers.iter().map(|v| (&v.issuer, v.algorithm)).collect::<Vec<_>>())
            .finish()
    }
}

fn algorithm(alg: KeyAlgorithm) -> Algorithm {
    match alg {
        KeyAlgorithm::HS256 => Algorithm::HS256,
        KeyAlgorithm::RS256 => Algorithm::RS256,
        KeyAlgorithm::ES256 => Algorithm::ES256,
        KeyAlgorithm::EdDSA => Algorithm::EdDSA,
    }
}

impl Authenticator {
    /// Builds verifiers for `config.issuers`. When none is configured, `default_issuer` (the
    /// embedded default's HS256 issuer) is used.
    pub fn from_config(config: &AuthConfig, default_issuer: Option<IssuerConfig>) -> Result<Self, AuthError> {
        let issuers: Vec<IssuerConfig> =
            if config.issuers.is_empty() { default_issuer.into_iter().collect() } else { config.issuers.clone() };
        let mut verifiers = Vec::with_capacity(issuers.len());
        for issuer in &issuers {
            if verifiers.iter().any(|v: &Verifier| v.issuer == issuer.issuer) {
                return Err(config_error(issuer, "issuer listed twice".into()));
            }
            verifiers.push(build_verifier(issuer, config.leeway_secs)?);
        }
        let verified = moka::sync::Cache::builder()
            .max_capacity(VERIFIED_CAPACITY)
            .time_to_live(VERIFIED_TTL)
            .build_with_hasher(foldhash::fast::RandomState::default());
        Ok(Self { verifiers, verified, leeway_secs: config.leeway_secs, clock: now_secs })
    }

    /// Verifies an `Authorization` header value (`Bearer <jwt>`).
    pub fn verify_header(&self, header: Option<&str>) -> Result<Arc<Principal>, AuthError> {
        let header = header.ok_or(AuthError::Missing)?;
        let (scheme, token) = header.trim().split_once(' ').ok_or(AuthError::Missing)?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(AuthError::Missing);
        }
        self.verify(token.trim())
    }

    /// Verifies a compact JWT.
    pub fn verify(&self, token: &str) -> Result<Arc<Principal>, AuthError> {
        if token.is_empty() || token.len() > MAX_TOKEN_BYTES {
            return Err(AuthError::Malformed);
        }
        if let Some(hit) = self.verified.get(token) {
            if (self.clock)() <= hit.exp.saturating_add(self.leeway_secs) {
                return Ok(hit.principal.clone());
            }
            self.verified.invalidate(token);
            return Err(AuthError::Expired);
        }
        let (principal, exp) = self.verify_signature(token)?;
        let principal = Arc::new(principal);
        self.verified.insert(token.into(), Arc::new(Verified { principal: principal.clone(), exp }));
        Ok(principal)
    }

    fn verify_signature(&self, token: &str) -> Result<(Principal, u64), AuthError> {
        let header = decode_header(token).map_err(|_| AuthError::Malformed)?;
        let unverified =
            jsonwebtoken::dangerous::insecure_decode::<IssuerOnly>(token).map_err(|_| AuthError::Malformed)?;
        let iss = unverified.claims.iss.ok_or_else(|| AuthError::InvalidClaims("iss is required".into()))?;
        let verifier = self.verifiers.iter().find(|v| v.issuer == iss).ok_or(AuthError::UnknownIssuer)?;
        if header.alg != verifier.algorithm {
            return Err(AuthError::AlgorithmNotAllowed);
        }
        let data = decode::<Claims>(token, &verifier.key, &verifier.validation).map_err(map_jwt_error)?;
        let claims = data.claims;
        let principal = Principal {
            subject: claims.sub.unwrap_or_default(),
            issuer: claims.iss,
            tenant: claims.tenant,
            scopes: Scopes::from_claim(&claims.scope),
        };
        Ok((principal, claims.exp))
    }
}

fn config_error(issuer: &IssuerConfig, reason: String) -> AuthError {
    AuthError::Config { issuer: issuer.issuer.clone(), reason }
}

fn build_verifier(issuer: &IssuerConfig, leeway_secs: u64) -> Result<Verifier, AuthError> {
    let alg = algorithm(issuer.algorithm);
    let pem = match (&issuer.public_key_pem, &issuer.public_key_file) {
        (Some(_), Some(_)) => {
            return Err(config_error(issuer, "set public_key_pem or public_key_file, not both".into()));
        }
        (Some(pem), None) => Some(pem.clone().into_bytes()),
        (None, Some(path)) => Some(
            std::fs::read(path).map_err(|e| config_error(issuer, format!("cannot read {}: {e}", path.display())))?,
        ),
        (None, None) => None,
    };
    let key = match (issuer.algorithm, &issuer.secret, pem) {
        (KeyAlgorithm::HS256, Some(secret), None) => {
            if secret.expose_secret().len() < 32 {
                return Err(config_error(issuer, "HS256 secrets must be at least 32 bytes".into()));
            }
            Ok(DecodingKey::from_secret(secret.expose_secret().as_bytes()))
        }
        (KeyAlgorithm::RS256, None, Some(pem)) => DecodingKey::from_rsa_pem(&pem),
        (KeyAlgorithm::ES256, None, Some(pem)) => DecodingKey::from_ec_pem(&pem),
        (KeyAlgorithm::EdDSA, None, Some(pem)) => DecodingKey::from_ed_pem(&pem),
        (KeyAlgorithm::HS256, _, _) => {
            return Err(config_error(issuer, "HS256 needs `secret` and no public key".into()));
        }
        (_, _, _) => return Err(config_error(issuer, "RS256/ES256/EdDSA need a public key and no `secret`".into())),
    }
    .map_err(|e| config_error(issuer, format!("invalid key: {e}")))?;
    let mut validation = Validation::new(alg);
    validation.leeway = leeway_secs;
    validation.validate_exp = true;
    validation.validate_nbf = true;
    validation.set_required_spec_claims(&["exp", "iss"]);
    validation.set_issuer(&[issuer.issuer.as_str()]);
    if issuer.audience.is_empty() {
        validation.validate_aud = false;
    } else {
        validation.set_audience(&issuer.audience);
    }
    Ok(Verifier { issuer: issuer.issuer.clone(), algorithm: alg, key, validation })
}

fn map_jwt_error(e: jsonwebtoken::errors::Error) -> AuthError {
    use jsonwebtoken::errors::ErrorKind;
    match e.kind() {
        ErrorKind::ExpiredSignature => AuthError::Expired,
        ErrorKind::ImmatureSignature => AuthError::NotYetValid,
        ErrorKind::InvalidSignature => AuthError::BadSignature,
        ErrorKind::InvalidAudience => AuthError::WrongAudience,
        ErrorKind::InvalidIssuer => AuthError::UnknownIssuer,
        ErrorKind::InvalidAlgorithm => AuthError::AlgorithmNotAllowed,
        ErrorKind::MissingRequiredClaim(claim) => AuthError::InvalidClaims(format!("{claim} is required")),
        ErrorKind::Json(_) => AuthError::InvalidClaims("claims have the wrong types".into()),
        _ => AuthError::Malformed,
    }
}

/// What a minted token says.
#[derive(Debug, Clone)]
pub struct TokenRequest {
    /// `iss`.
    pub issuer: String,
    /// `sub`.
    pub subject: String,
    /// `tenant`, if the token is bound to one.
    pub tenant: Option<String>,
    /// `scope`.
    pub scopes: Scopes,
    /// Lifetime; `exp = now + ttl`.
    pub ttl: Duration,
}

#[derive(Debug, Serialize)]
struct MintedClaims<'a> {
    iss: &'a str,
    sub: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    tenant: Option<&'a str>,
    scope: String,
    iat: u64,
    exp: u64,
}

/// Signs an HS256 token (used by `shardgate token` and by tests).
pub fn mint_token(secret: &SecretString, request: &TokenRequest) -> Result<String, AuthError> {
    let now = now_secs();
    let claims = MintedClaims {
        iss: &request.issuer,
        sub: &request.subject,
        tenant: request.tenant.as_deref(),
        scope: request.scopes.to_claim(),
        iat: now,
        exp: now.saturating_add(request.ttl.as_secs()),
    };
    encode(&Header::new(Algorithm::HS256), &claims, &EncodingKey::from_secret(secret.expose_secret().as_bytes()))
        .map_err(|e| AuthError::Config { issuer: request.issuer.clone(), reason: e.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::principal::Scope;

    const SECRET: &str = "0123456789abcdef0123456789abcdef";

    fn hs_issuer(name: &str) -> IssuerConfig {
        IssuerConfig {
            issuer: name.into(),
            algorithm: KeyAlgorithm::HS256,
            audience: vec![],
            secret: Some(SecretString::from(SECRET)),
            public_key_pem: None,
            public_key_file: None,
        }
    }

    fn request(ttl: Duration) -> TokenRequest {
        TokenRequest {
            issuer: "shardgate".into(),
            subject: "tester".into(),
            tenant: Some("acme".into()),
            scopes: Scopes::of(&[Scope::Read]),
            ttl,
        }
    }

    fn authenticator() -> Authenticator {
        Authenticator::from_config(&AuthConfig::default(), Some(hs_issuer("shardgate"))).unwrap()
    }

    #[test]
    fn minted_tokens_verify() {
        let token = mint_token(&SecretString::from(SECRET), &request(Duration::from_secs(60))).unwrap();
        let principal = authenticator().verify_header(Some(&format!("Bearer {token}"))).unwrap();
        assert_eq!(principal.tenant.as_deref(), Some("acme"));
        assert!(principal.scopes.contains(Scope::Read));
        assert!(!principal.scopes.contains(Scope::Write));
    }

    #[test]
    fn wrong_secret_unknown_issuer_and_garbage_are_rejected() {
        let auth = authenticator();
        let other = mint_token(&SecretString::from("x".repeat(32)), &request(Duration::from_secs(60))).unwrap();
        assert_eq!(auth.verify(&other), Err(AuthError::BadSignature));
        let mut foreign = request(Duration::from_secs(60));
        foreign.issuer = "elsewhere".into();
        let foreign = mint_token(&SecretString::from(SECRET), &foreign).unwrap();
        assert_eq!(auth.verify(&foreign), Err(AuthError::UnknownIssuer));
        assert_eq!(auth.verify("not.a.jwt"), Err(AuthError::Malformed));
        assert_eq!(auth.verify_header(None), Err(AuthError::Missing));
        assert_eq!(auth.verify_header(Some("Basic abc")), Err(AuthError::Missing));
    }

    #[test]
    fn expired_tokens_are_rejected_beyond_the_leeway() {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
        let claims = serde_json::json!({"iss": "shardgate", "tenant": "acme", "scope": "read", "exp": now - 120});
        let token =
            encode(&Header::new(Algorithm::HS256), &claims, &EncodingKey::from_secret(SECRET.as_bytes())).unwrap();
        assert_eq!(authenticator().verify(&token), Err(AuthError::Expired));
    }

    #[test]
    fn alg_none_and_missing_exp_are_rejected() {
        use base64::Engine as _;
        let b64 = |v: &serde_json::Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
        let claims =
            serde_json::json!({"iss": "shardgate", "tenant": "acme", "scope": "read admin", "exp": 4_000_000_000u64});
        let none = format!("{}.{}.", b64(&serde_json::json!({"alg": "none", "typ": "JWT"})), b64(&claims));
        assert!(authenticator().verify(&none).is_err());
        let no_exp = serde_json::json!({"iss": "shardgate", "tenant": "acme", "scope": "read"});
        let token =
            encode(&Header::new(Algorithm::HS256), &no_exp, &EncodingKey::from_secret(SECRET.as_bytes())).unwrap();
        assert!(matches!(authenticator().verify(&token), Err(AuthError::InvalidClaims(_))));
    }

    #[test]
    fn a_remembered_token_still_expires() {
        let mut auth =
            Authenticator::from_config(&AuthConfig { issuers: vec![], leeway_secs: 5 }, Some(hs_issuer("shardgate")))
                .unwrap();
        let token = mint_token(&SecretString::from(SECRET), &request(Duration::from_secs(60))).unwrap();
        assert!(auth.verify(&token).is_ok());
        auth.clock = || now_secs() + 60;
        assert!(auth.verify(&token).is_ok(), "still valid within the leeway, served from memory");
        auth.clock = || now_secs() + 66;
        assert_eq!(auth.verify(&token), Err(AuthError::Expired));
    }

    #[test]
    fn short_hs256_secrets_are_refused_at_start_up() {
        let mut weak = hs_issuer("weak");
        weak.secret = Some(SecretString::from("short"));
        let config = AuthConfig { issuers: vec![weak], leeway_secs: 0 };
        assert!(matches!(Authenticator::from_config(&config, None), Err(AuthError::Config { .. })));
    }
}
