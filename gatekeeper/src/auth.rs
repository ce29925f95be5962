//! Bearer JWT verification and minting.
//!
//! Policy: the token's `iss` picks the issuer; the header's `alg` must be in that issuer's
//! allow-list, and the key that verifies it is the issuer's one key (`secret` or a PEM public key)
//! or, for an issuer with a JWKS file, the key its `kid` names. The key must be of the `alg`'s
//! type, so `alg: none` and algorithm confusion (an HS256 token "signed" with an RSA public key)
//! are rejected before any signature check. `exp` and `iss` are required, `aud` is required and
//! checked when the issuer lists audiences, `nbf` is honoured and an `iat` later than now is
//! refused, each with a small leeway (`auth.leeway_secs`). Keys come from the configuration, or
//! from the one key-set URL it names (`jwks_url`, or OIDC discovery; see
//! [`crate::remote_key_set`]): a token's `jku`, `x5u`, `jwk` and `x5c` headers are never used.
//! A token whose `kid` a fetched set lacks makes the set be fetched again (rate-limited) and is
//! verified against the new set ([`Authenticator::verify`]).

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, decode, decode_header, encode};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use crate::config::{AuthConfig, IssuerConfig, KeyAlgorithm};
use crate::jwks;
use crate::principal::{Principal, Scope, ScopeClaimError, Scopes};
use crate::remote_key_set::{KeySetStatus, KeysNow, RemoteKeySet, RemoteKeySetError};
use crate::verification_key::{self, KeyCheckError, VerificationKey};

/// The longest token this verifier looks at; longer headers are rejected unparsed.
const MAX_TOKEN_BYTES: usize = 8 * 1024;

/// Why a token was not accepted. Every variant but [`AuthError::AdminScopeWithTenant`] (403)
/// becomes 401 with `WWW-Authenticate: Bearer`: `missing_token`, `token_issued_in_future`,
/// `key_set_unavailable`, `key_set_expired`, or
/// `invalid_token` for the rest, whose reason is logged at debug level only (but for a `scope`
/// claim of the wrong shape, which the detail names).
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
    /// `alg` is not in the issuer's allow-list, or does not fit the key that verifies it.
    #[error("algorithm not allowed for this issuer")]
    AlgorithmNotAllowed,
    /// The issuer has a key set and `kid` names none of its keys; or the token has no `kid` and
    /// the set holds more than one key for its `alg`.
    #[error("no key of this issuer fits the token's kid")]
    UnknownKey,
    /// The issuer's keys are fetched from its identity provider and no set has arrived yet (the
    /// provider was unreachable since start-up, or sent only sets that were refused): 401
    /// `key_set_unavailable`.
    #[error("the issuer's key set has not been fetched yet")]
    KeySetUnavailable,
    /// The issuer's fetched key set is older than its `jwks_max_age_secs` (every fetch since
    /// failed): 401 `key_set_expired`.
    #[error("the issuer's key set is older than its maximum age")]
    KeySetExpired,
    /// Signature does not verify.
    #[error("bad signature")]
    BadSignature,
    /// `exp` is in the past (beyond the leeway).
    #[error("token expired")]
    Expired,
    /// `nbf` is in the future.
    #[error("token not yet valid")]
    NotYetValid,
    /// `iat` is later than now plus the leeway: no token is issued in the future, and one that
    /// says so would outlive a tenant deleted and created again (a tenant's tokens are accepted
    /// only if issued after the tenant was created).
    #[error("token issued in the future")]
    IssuedInFuture,
    /// `aud` does not match.
    #[error("audience mismatch")]
    WrongAudience,
    /// The `scope` claim is not scope names separated by single spaces.
    #[error(transparent)]
    InvalidScope(#[from] ScopeClaimError),
    /// The token names a tenant and carries the platform `admin` scope: a tenant's token is never
    /// a platform admin (403, not 401: the token is genuine but may do nothing). Minting one is
    /// refused too.
    #[error("a token bound to a tenant cannot carry the admin scope")]
    AdminScopeWithTenant,
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
    #[serde(default)]
    iat: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct IssuerOnly {
    iss: Option<String>,
}

struct Verifier {
    issuer: String,
    /// The allow-list.
    algorithms: Vec<KeyAlgorithm>,
    keys: IssuerKeys,
}

/// Where an issuer's keys come from, which decides how a token's key is chosen.
enum IssuerKeys {
    /// `secret` or a PEM public key: the token's `kid` is not looked at.
    One(Box<VerificationKey>),
    /// A JWKS file: the token's `kid` picks the key; without one, the set's only key for its
    /// `alg` is taken, if there is exactly one.
    Set(Vec<(String, VerificationKey)>),
    /// A key set fetched from the identity provider: chosen as in a JWKS file, from the set in
    /// use when the token arrives.
    Fetched(Arc<RemoteKeySet>),
}

impl Verifier {
    /// The configured keys (none for a fetched set).
    fn configured_keys(&self) -> impl Iterator<Item = &VerificationKey> {
        let (one, set) = match &self.keys {
            IssuerKeys::One(key) => (Some(&**key), &[][..]),
            IssuerKeys::Set(keys) => (None, &keys[..]),
            IssuerKeys::Fetched(_) => (None, &[][..]),
        };
        one.into_iter().chain(set.iter().map(|(_, key)| key))
    }

    /// The header's `alg`, if the allow-list has it.
    fn allowed_algorithm(&self, header: &Header) -> Result<KeyAlgorithm, AuthError> {
        key_algorithm(header.alg).filter(|alg| self.algorithms.contains(alg)).ok_or(AuthError::AlgorithmNotAllowed)
    }

    /// The fetched key set, if the issuer's keys are fetched.
    fn fetched(&self) -> Option<&Arc<RemoteKeySet>> {
        match &self.keys {
            IssuerKeys::Fetched(set) => Some(set),
            _ => None,
        }
    }
}

/// The key of `keys` for a token with this `kid` and `alg`: the one the `kid` names; without a
/// `kid`, the only key for `alg`, if there is exactly one.
fn key_in_set<'a>(
    keys: &'a [(String, VerificationKey)],
    kid: Option<&str>,
    alg: KeyAlgorithm,
) -> Result<&'a VerificationKey, AuthError> {
    match kid {
        Some(kid) => keys.iter().find(|(id, _)| id == kid).map(|(_, key)| key).ok_or(AuthError::UnknownKey),
        None => {
            let mut usable = keys.iter().map(|(_, key)| key).filter(|key| key.algorithm == alg);
            match (usable.next(), usable.next()) {
                (Some(key), None) => Ok(key),
                _ => Err(AuthError::UnknownKey),
            }
        }
    }
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
    /// For a fetched key set: the set, and the generation of the one the token was verified
    /// with. A remembered verification holds only while that set is in use (a key removed at
    /// the provider stops verifying at the next fetch; a set past its maximum age, at once).
    fetched: Option<(Arc<RemoteKeySet>, u64)>,
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
            .field("issuers", &self.verifiers.iter().map(|v| (&v.issuer, &v.algorithms)).collect::<Vec<_>>())
            .finish()
    }
}

/// Our name for a header's `alg`; `None` for the ones never allowed.
fn key_algorithm(alg: Algorithm) -> Option<KeyAlgorithm> {
    match alg {
        Algorithm::HS256 => Some(KeyAlgorithm::HS256),
        Algorithm::RS256 => Some(KeyAlgorithm::RS256),
        Algorithm::ES256 => Some(KeyAlgorithm::ES256),
        Algorithm::EdDSA => Some(KeyAlgorithm::EdDSA),
        _ => None,
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
                return Err(config_error(issuer, IssuerConfigError::ListedTwice));
            }
            verifiers.push(build_verifier(issuer, config.leeway_secs)?);
        }
        let verified = moka::sync::Cache::builder()
            .max_capacity(VERIFIED_CAPACITY)
            .time_to_live(VERIFIED_TTL)
            .build_with_hasher(foldhash::fast::RandomState::default());
        Ok(Self { verifiers, verified, leeway_secs: config.leeway_secs, clock: now_secs })
    }

    /// Verifies an `Authorization` header value (`Bearer <jwt>`); see [`Authenticator::verify`].
    /// Its callers make the `authenticate` span around it (only when traces are on).
    pub async fn verify_header(&self, header: Option<&str>) -> Result<Arc<Principal>, AuthError> {
        let header = header.ok_or(AuthError::Missing)?;
        let (scheme, token) = header.trim().split_once(' ').ok_or(AuthError::Missing)?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(AuthError::Missing);
        }
        self.verify(token.trim()).await
    }

    /// Verifies a compact JWT. A token of an issuer whose keys are fetched, that the set in use
    /// cannot verify for want of its key (an unknown `kid`, or no usable set), makes the set be
    /// fetched again (at most once per the issuer's `jwks_unknown_kid_refetch_secs`; when one is
    /// due, a fetch already under way is waited for, within the fetch deadline) and is verified
    /// against the new set. A token that is not due a fetch is refused at once.
    pub async fn verify(&self, token: &str) -> Result<Arc<Principal>, AuthError> {
        let outcome = self.verify_now(token);
        if let Err(AuthError::UnknownKey | AuthError::KeySetUnavailable | AuthError::KeySetExpired) = &outcome
            && let Some(set) = self.fetched_set_of(token)
            && set.refetch_for_unknown_kid().await
        {
            return self.verify_now(token);
        }
        outcome
    }

    /// Verifies a compact JWT with the keys at hand, fetching nothing.
    pub fn verify_now(&self, token: &str) -> Result<Arc<Principal>, AuthError> {
        if token.is_empty() || token.len() > MAX_TOKEN_BYTES {
            return Err(AuthError::Malformed);
        }
        if let Some(hit) = self.verified.get(token) {
            let same_keys = match &hit.fetched {
                None => true,
                Some((set, generation)) => {
                    matches!(set.keys_now(), KeysNow::Ready(snapshot) if snapshot.generation == *generation)
                }
            };
            if same_keys {
                if (self.clock)() <= hit.exp.saturating_add(self.leeway_secs) {
                    return Ok(hit.principal.clone());
                }
                self.verified.invalidate(token);
                return Err(AuthError::Expired);
            }
            self.verified.invalidate(token);
        }
        let verified = Arc::new(self.verify_signature(token)?);
        self.verified.insert(token.into(), verified.clone());
        Ok(verified.principal.clone())
    }

    /// The fetched key set of the issuer `token` names, if it has one.
    fn fetched_set_of(&self, token: &str) -> Option<&Arc<RemoteKeySet>> {
        let iss = jsonwebtoken::dangerous::insecure_decode::<IssuerOnly>(token).ok()?.claims.iss?;
        self.verifiers.iter().find(|v| v.issuer == iss)?.fetched()
    }

    /// Waits until every fetched key set has had its first fetch (well or not), for at most
    /// `within` in all; the server calls it at start-up, so that it starts with the keys when the
    /// identity provider answers.
    pub async fn first_key_sets(&self, within: std::time::Duration) {
        let sets = self.verifiers.iter().filter_map(Verifier::fetched);
        let _ = tokio::time::timeout(within, async {
            for set in sets {
                set.first_fetch(within).await;
            }
        })
        .await;
    }

    /// The key sets fetched from identity providers, for `/readyz` and the metrics.
    pub fn fetched_key_sets(&self) -> FetchedKeySets {
        FetchedKeySets(self.verifiers.iter().filter_map(Verifier::fetched).cloned().collect())
    }

    /// What each issuer's keys are, for the start-up banner: the issuers with an HS256 `secret`
    /// (for which this gateway's `shardgate token` can mint) and the issuers whose keys are
    /// fetched, with the URL they come from.
    pub fn key_sources(&self) -> KeySources {
        let mut sources = KeySources::default();
        for verifier in &self.verifiers {
            match &verifier.keys {
                IssuerKeys::One(key) if key.algorithm == KeyAlgorithm::HS256 => {
                    sources.local_secret.push(verifier.issuer.clone());
                }
                IssuerKeys::Fetched(set) => sources.fetched.push((set.issuer().to_owned(), set.url())),
                _ => {}
            }
        }
        sources
    }

    fn verify_signature(&self, token: &str) -> Result<Verified, AuthError> {
        if token.split('.').count() != 3 {
            return Err(AuthError::Malformed);
        }
        let header = decode_header(token).map_err(|_| AuthError::Malformed)?;
        // RFC 7515 §4.1.11: extensions marked critical must be understood, and none are.
        if header.crit.is_some() {
            return Err(AuthError::Malformed);
        }
        let unverified =
            jsonwebtoken::dangerous::insecure_decode::<IssuerOnly>(token).map_err(|_| AuthError::Malformed)?;
        let iss = unverified.claims.iss.ok_or_else(|| AuthError::InvalidClaims("iss is required".into()))?;
        let verifier = self.verifiers.iter().find(|v| v.issuer == iss).ok_or(AuthError::UnknownIssuer)?;
        let alg = verifier.allowed_algorithm(&header)?;
        let kid = header.kid.as_deref();
        let (claims, fetched) = match &verifier.keys {
            IssuerKeys::One(key) => (self.decode(token, key, alg)?, None),
            IssuerKeys::Set(keys) => (self.decode(token, key_in_set(keys, kid, alg)?, alg)?, None),
            IssuerKeys::Fetched(set) => {
                let snapshot = match set.keys_now() {
                    KeysNow::Ready(snapshot) => snapshot,
                    KeysNow::Unavailable => return Err(AuthError::KeySetUnavailable),
                    KeysNow::Expired => return Err(AuthError::KeySetExpired),
                };
                let claims = self.decode(token, key_in_set(&snapshot.keys, kid, alg)?, alg)?;
                (claims, Some((set.clone(), snapshot.generation)))
            }
        };
        let scopes = Scopes::parse_claim(&claims.scope)?;
        if claims.tenant.is_some() && scopes.contains(Scope::Admin) {
            return Err(AuthError::AdminScopeWithTenant);
        }
        let principal = Principal {
            subject: claims.sub.unwrap_or_default(),
            issuer: claims.iss,
            tenant: claims.tenant,
            scopes,
            issued_at: claims.iat,
        };
        Ok(Verified { principal: Arc::new(principal), exp: claims.exp, fetched })
    }

    /// The claims of `token`, if `key` (of the token's `alg`) verifies it and they pass the
    /// checks.
    fn decode(&self, token: &str, key: &VerificationKey, alg: KeyAlgorithm) -> Result<Claims, AuthError> {
        if key.algorithm != alg {
            return Err(AuthError::AlgorithmNotAllowed);
        }
        let claims = decode::<Claims>(token, &key.key, &key.validation).map_err(map_jwt_error)?.claims;
        if claims.iat.is_some_and(|iat| iat > (self.clock)().saturating_add(self.leeway_secs)) {
            return Err(AuthError::IssuedInFuture);
        }
        Ok(claims)
    }
}

/// The issuers' key sets fetched from identity providers ([`Authenticator::fetched_key_sets`]):
/// a handle that outlives the move of the [`Authenticator`] into the server's state.
#[derive(Clone, Default)]
pub struct FetchedKeySets(Vec<Arc<RemoteKeySet>>);

impl FetchedKeySets {
    /// Each set's state, in the order the issuers are configured.
    pub fn statuses(&self) -> Vec<KeySetStatus> {
        self.0.iter().map(|set| set.status()).collect()
    }

    /// Fetches every set now, all at once (see `RemoteKeySet::fetch_now`), and answers each
    /// one's outcome with its state after the fetch, in the order the issuers are configured.
    pub async fn fetch_all_now(&self) -> Vec<(KeySetStatus, Result<(), String>)> {
        let fetches: Vec<_> = self
            .0
            .iter()
            .map(|set| {
                let set = set.clone();
                tokio::spawn(async move { set.fetch_now().await })
            })
            .collect();
        let mut outcomes = Vec::with_capacity(fetches.len());
        for (set, fetch) in self.0.iter().zip(fetches) {
            let outcome = fetch.await.unwrap_or_else(|_| Err("the fetch ended without an answer".to_owned()));
            outcomes.push((set.status(), outcome));
        }
        outcomes
    }
}

impl std::fmt::Debug for FetchedKeySets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.iter().map(|set| set.issuer())).finish()
    }
}

/// Where the configured issuers' keys come from ([`Authenticator::key_sources`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeySources {
    /// Issuers with an HS256 `secret`.
    pub local_secret: Vec<String>,
    /// Issuers whose keys are fetched: (issuer, the configured URL).
    pub fetched: Vec<(String, String)>,
}

/// Why an issuer's configuration cannot be used (a start-up error; each message says what to
/// fix). It becomes the `reason` of [`AuthError::Config`].
#[derive(Debug, thiserror::Error)]
enum IssuerConfigError {
    #[error("issuer listed twice")]
    ListedTwice,
    #[error("set `algorithm` or `algorithms`, not both")]
    BothAlgorithmSettings,
    #[error("set `algorithms` (the allowed signature algorithms) or `algorithm`")]
    NoAlgorithm,
    #[error(
        "no `audience`: set `audience` to the `aud` values this gateway accepts, or \
         `allow_any_audience = true` to accept this issuer's tokens for any audience"
    )]
    NoAudience,
    #[error("set `audience` or `allow_any_audience = true`, not both")]
    AudienceAndAnyAudience,
    #[error("`algorithms` lists {0:?}, but no key of this issuer is for {0:?}")]
    NoKeyFor(KeyAlgorithm),
    #[error("a `secret` is an HS256 key: set `algorithm = \"HS256\"`")]
    SecretNotHs256,
    #[error("HS256 secrets must be at least 32 bytes")]
    ShortSecret,
    #[error("cannot read {path}: {source}")]
    UnreadablePem { path: String, source: std::io::Error },
    #[error("HS256 needs `secret`; a key set holds public keys only")]
    Hs256InKeySet,
    #[error(transparent)]
    KeySet(#[from] jwks::KeySetError),
    #[error(transparent)]
    KeyCheck(#[from] KeyCheckError),
    #[error(transparent)]
    Fetched(#[from] RemoteKeySetError),
    #[error(
        "set exactly one of `secret`, `public_key_pem`, `public_key_file`, `jwks_file`, `jwks_url` and \
         `discovery = true`"
    )]
    KeySources,
    #[error("HS256 needs `secret` and no public key")]
    Hs256PublicKey,
    #[error("a public key is for one algorithm: set `algorithm` to RS256, ES256 or EdDSA")]
    PublicKeyAlgorithms,
    #[error("invalid {algorithm:?} key: {source}")]
    InvalidKey { algorithm: KeyAlgorithm, source: jsonwebtoken::errors::Error },
}

fn config_error(issuer: &IssuerConfig, reason: IssuerConfigError) -> AuthError {
    AuthError::Config { issuer: issuer.issuer.clone(), reason: reason.to_string() }
}

fn build_verifier(issuer: &IssuerConfig, leeway_secs: u64) -> Result<Verifier, AuthError> {
    let algorithms = allow_list(issuer).map_err(|reason| config_error(issuer, reason))?;
    audience_rule(issuer).map_err(|reason| config_error(issuer, reason))?;
    let keys = issuer_keys(issuer, &algorithms, leeway_secs).map_err(|reason| config_error(issuer, reason))?;
    let verifier = Verifier { issuer: issuer.issuer.clone(), algorithms, keys };
    if let IssuerKeys::Fetched(set) = &verifier.keys {
        // Which algorithms its keys are for is known once a set arrives.
        set.start().map_err(|reason| config_error(issuer, reason.into()))?;
        return Ok(verifier);
    }
    for alg in &verifier.algorithms {
        if !verifier.configured_keys().any(|key| key.algorithm == *alg) {
            return Err(config_error(issuer, IssuerConfigError::NoKeyFor(*alg)));
        }
    }
    Ok(verifier)
}

/// An audience, or the explicit `allow_any_audience`: exactly one of the two.
fn audience_rule(issuer: &IssuerConfig) -> Result<(), IssuerConfigError> {
    match (issuer.audience.is_empty(), issuer.allow_any_audience) {
        (true, false) => Err(IssuerConfigError::NoAudience),
        (false, true) => Err(IssuerConfigError::AudienceAndAnyAudience),
        _ => Ok(()),
    }
}

/// `algorithms`, or `[algorithm]`: exactly one of the two, not empty.
fn allow_list(issuer: &IssuerConfig) -> Result<Vec<KeyAlgorithm>, IssuerConfigError> {
    match (issuer.algorithm, issuer.algorithms.is_empty()) {
        (Some(_), false) => Err(IssuerConfigError::BothAlgorithmSettings),
        (None, true) => Err(IssuerConfigError::NoAlgorithm),
        (Some(algorithm), true) => Ok(vec![algorithm]),
        (None, false) => {
            let mut unique = Vec::with_capacity(issuer.algorithms.len());
            for algorithm in &issuer.algorithms {
                if !unique.contains(algorithm) {
                    unique.push(*algorithm);
                }
            }
            Ok(unique)
        }
    }
}

fn issuer_keys(
    issuer: &IssuerConfig,
    algorithms: &[KeyAlgorithm],
    leeway_secs: u64,
) -> Result<IssuerKeys, IssuerConfigError> {
    let verification_key = |algorithm: KeyAlgorithm, key: DecodingKey| -> Result<VerificationKey, IssuerConfigError> {
        Ok(VerificationKey::new(issuer, algorithm, key, leeway_secs)?)
    };
    let fetched = issuer.fetches_keys();
    match (&issuer.secret, &issuer.public_key_pem, &issuer.public_key_file, &issuer.jwks_file, fetched) {
        (Some(secret), None, None, None, false) => {
            if algorithms != [KeyAlgorithm::HS256] {
                return Err(IssuerConfigError::SecretNotHs256);
            }
            if secret.expose_secret().len() < 32 {
                return Err(IssuerConfigError::ShortSecret);
            }
            let key = DecodingKey::from_secret(secret.expose_secret().as_bytes());
            Ok(IssuerKeys::One(Box::new(verification_key(KeyAlgorithm::HS256, key)?)))
        }
        (None, Some(pem), None, None, false) => {
            let (algorithm, key) = pem_key(pem.as_bytes(), algorithms)?;
            Ok(IssuerKeys::One(Box::new(verification_key(algorithm, key)?)))
        }
        (None, None, Some(path), None, false) => {
            let pem = std::fs::read(path)
                .map_err(|source| IssuerConfigError::UnreadablePem { path: path.display().to_string(), source })?;
            let (algorithm, key) = pem_key(&pem, algorithms)?;
            Ok(IssuerKeys::One(Box::new(verification_key(algorithm, key)?)))
        }
        (None, None, None, Some(path), false) => {
            if algorithms.contains(&KeyAlgorithm::HS256) {
                return Err(IssuerConfigError::Hs256InKeySet);
            }
            let keys = verification_key::set_keys(issuer, jwks::read_key_set(path, algorithms)?, leeway_secs)?;
            Ok(IssuerKeys::Set(keys))
        }
        (None, None, None, None, true) => {
            Ok(IssuerKeys::Fetched(Arc::new(RemoteKeySet::new(issuer, algorithms, leeway_secs)?)))
        }
        _ => Err(IssuerConfigError::KeySources),
    }
}

/// A PEM public key, read as a key for the issuer's one algorithm.
fn pem_key(pem: &[u8], algorithms: &[KeyAlgorithm]) -> Result<(KeyAlgorithm, DecodingKey), IssuerConfigError> {
    let (algorithm, key) = match algorithms {
        [KeyAlgorithm::RS256] => (KeyAlgorithm::RS256, DecodingKey::from_rsa_pem(pem)),
        [KeyAlgorithm::ES256] => (KeyAlgorithm::ES256, DecodingKey::from_ec_pem(pem)),
        [KeyAlgorithm::EdDSA] => (KeyAlgorithm::EdDSA, DecodingKey::from_ed_pem(pem)),
        [KeyAlgorithm::HS256] => return Err(IssuerConfigError::Hs256PublicKey),
        _ => return Err(IssuerConfigError::PublicKeyAlgorithms),
    };
    Ok((algorithm, key.map_err(|source| IssuerConfigError::InvalidKey { algorithm, source })?))
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
    #[serde(skip_serializing_if = "Option::is_none")]
    aud: Option<&'a str>,
    scope: String,
    iat: u64,
    exp: u64,
}

/// Signs an HS256 token (used by `shardgate token` and by tests). A token bound to a tenant with
/// the `admin` scope is refused ([`AuthError::AdminScopeWithTenant`]), as verifying it would be.
pub fn mint_token(secret: &SecretString, request: &TokenRequest) -> Result<String, AuthError> {
    mint_token_for_audience(secret, request, None)
}

/// [`mint_token`], with `aud` set to `audience` when given: `shardgate token` mints for an
/// HS256 issuer that lists an `audience` with the first one, so that its tokens pass.
pub fn mint_token_for_audience(
    secret: &SecretString,
    request: &TokenRequest,
    audience: Option<&str>,
) -> Result<String, AuthError> {
    if request.tenant.is_some() && request.scopes.contains(Scope::Admin) {
        return Err(AuthError::AdminScopeWithTenant);
    }
    let now = now_secs();
    let claims = MintedClaims {
        iss: &request.issuer,
        sub: &request.subject,
        tenant: request.tenant.as_deref(),
        aud: audience,
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

    const SECRET: &str = "0123456789abcdef0123456789abcdef";

    /// An HS256 issuer for any audience.
    fn hs_issuer(name: &str) -> IssuerConfig {
        IssuerConfig { allow_any_audience: true, ..IssuerConfig::hs256(name, SecretString::from(SECRET)) }
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

    #[tokio::test]
    async fn minted_tokens_verify() {
        let token = mint_token(&SecretString::from(SECRET), &request(Duration::from_secs(60))).unwrap();
        let principal = authenticator().verify_header(Some(&format!("Bearer {token}"))).await.unwrap();
        assert_eq!(principal.tenant.as_deref(), Some("acme"));
        assert!(principal.scopes.contains(Scope::Read));
        assert!(!principal.scopes.contains(Scope::Write));
    }

    #[tokio::test]
    async fn wrong_secret_unknown_issuer_and_garbage_are_rejected() {
        let auth = authenticator();
        let other = mint_token(&SecretString::from("x".repeat(32)), &request(Duration::from_secs(60))).unwrap();
        assert_eq!(auth.verify_now(&other), Err(AuthError::BadSignature));
        let mut foreign = request(Duration::from_secs(60));
        foreign.issuer = "elsewhere".into();
        let foreign = mint_token(&SecretString::from(SECRET), &foreign).unwrap();
        assert_eq!(auth.verify_now(&foreign), Err(AuthError::UnknownIssuer));
        assert_eq!(auth.verify_now("not.a.jwt"), Err(AuthError::Malformed));
        assert_eq!(auth.verify_header(None).await, Err(AuthError::Missing));
        assert_eq!(auth.verify_header(Some("Basic abc")).await, Err(AuthError::Missing));
    }

    #[test]
    fn expired_tokens_are_rejected_beyond_the_leeway() {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
        let claims = serde_json::json!({"iss": "shardgate", "tenant": "acme", "scope": "read", "exp": now - 120});
        let token =
            encode(&Header::new(Algorithm::HS256), &claims, &EncodingKey::from_secret(SECRET.as_bytes())).unwrap();
        assert_eq!(authenticator().verify_now(&token), Err(AuthError::Expired));
    }

    #[test]
    fn alg_none_and_missing_exp_are_rejected() {
        use base64::Engine as _;
        let b64 = |v: &serde_json::Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
        let claims =
            serde_json::json!({"iss": "shardgate", "tenant": "acme", "scope": "read admin", "exp": 4_000_000_000u64});
        let none = format!("{}.{}.", b64(&serde_json::json!({"alg": "none", "typ": "JWT"})), b64(&claims));
        assert!(authenticator().verify_now(&none).is_err());
        let no_exp = serde_json::json!({"iss": "shardgate", "tenant": "acme", "scope": "read"});
        let token =
            encode(&Header::new(Algorithm::HS256), &no_exp, &EncodingKey::from_secret(SECRET.as_bytes())).unwrap();
        assert!(matches!(authenticator().verify_now(&token), Err(AuthError::InvalidClaims(_))));
    }

    #[test]
    fn a_remembered_token_still_expires() {
        let mut auth =
            Authenticator::from_config(&AuthConfig { issuers: vec![], leeway_secs: 5 }, Some(hs_issuer("shardgate")))
                .unwrap();
        let token = mint_token(&SecretString::from(SECRET), &request(Duration::from_secs(60))).unwrap();
        assert!(auth.verify_now(&token).is_ok());
        auth.clock = || now_secs() + 60;
        assert!(auth.verify_now(&token).is_ok(), "still valid within the leeway, served from memory");
        auth.clock = || now_secs() + 66;
        assert_eq!(auth.verify_now(&token), Err(AuthError::Expired));
    }

    #[test]
    fn a_token_issued_in_the_future_is_refused_beyond_the_leeway() {
        let mut auth =
            Authenticator::from_config(&AuthConfig { issuers: vec![], leeway_secs: 5 }, Some(hs_issuer("shardgate")))
                .unwrap();
        // `iat` is checked against the authenticator's clock (`exp` against the real one).
        auth.clock = || 1_000_000;
        let issued_at = |iat: u64| {
            let claims = serde_json::json!({"iss": "shardgate", "tenant": "acme", "scope": "read", "iat": iat, "exp": now_secs() + 600});
            encode(&Header::new(Algorithm::HS256), &claims, &EncodingKey::from_secret(SECRET.as_bytes())).unwrap()
        };
        assert!(auth.verify_now(&issued_at(1_000_000)).is_ok());
        assert!(auth.verify_now(&issued_at(1_000_005)).is_ok(), "within the leeway");
        assert_eq!(auth.verify_now(&issued_at(1_000_006)), Err(AuthError::IssuedInFuture));
        assert_eq!(auth.verify_now(&issued_at(1_086_400)), Err(AuthError::IssuedInFuture));
    }

    #[test]
    fn a_tenant_token_with_the_admin_scope_is_neither_minted_nor_accepted() {
        let tenant_admin =
            TokenRequest { scopes: Scopes::of(&[Scope::Read, Scope::Admin]), ..request(Duration::from_secs(60)) };
        assert_eq!(mint_token(&SecretString::from(SECRET), &tenant_admin), Err(AuthError::AdminScopeWithTenant));
        let signed = |scope: &str| {
            let claims =
                serde_json::json!({"iss": "shardgate", "tenant": "acme", "scope": scope, "exp": now_secs() + 60});
            encode(&Header::new(Algorithm::HS256), &claims, &EncodingKey::from_secret(SECRET.as_bytes())).unwrap()
        };
        let auth = authenticator();
        assert_eq!(auth.verify_now(&signed("read admin")), Err(AuthError::AdminScopeWithTenant));
        assert_eq!(auth.verify_now(&signed("read\tadmin")), Err(AuthError::InvalidScope(ScopeClaimError)));
        assert_eq!(auth.verify_now(&signed("read ")), Err(AuthError::InvalidScope(ScopeClaimError)));
        assert!(auth.verify_now(&signed("read write")).is_ok());
    }

    #[test]
    fn short_hs256_secrets_are_refused_at_start_up() {
        let mut weak = hs_issuer("weak");
        weak.secret = Some(SecretString::from("short"));
        let config = AuthConfig { issuers: vec![weak], leeway_secs: 0 };
        assert!(matches!(Authenticator::from_config(&config, None), Err(AuthError::Config { .. })));
    }

    const KEYS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/keys");

    fn fixture(name: &str) -> String {
        std::fs::read_to_string(format!("{KEYS}/{name}")).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
    }

    fn public_issuer(name: &str, algorithms: &[KeyAlgorithm]) -> IssuerConfig {
        IssuerConfig { algorithm: None, algorithms: algorithms.to_vec(), secret: None, ..hs_issuer(name) }
    }

    fn jwks_issuer(name: &str, jwks_file: impl Into<std::path::PathBuf>) -> IssuerConfig {
        let algorithms = [KeyAlgorithm::RS256, KeyAlgorithm::ES256, KeyAlgorithm::EdDSA];
        IssuerConfig { jwks_file: Some(jwks_file.into()), ..public_issuer(name, &algorithms) }
    }

    fn start(issuers: Vec<IssuerConfig>) -> Result<Authenticator, AuthError> {
        Authenticator::from_config(&AuthConfig { issuers, leeway_secs: 30 }, None)
    }

    fn refusal(issuer: IssuerConfig) -> String {
        match start(vec![issuer]) {
            Err(AuthError::Config { reason, .. }) => reason,
            other => panic!("expected a configuration error, got {other:?}"),
        }
    }

    /// A JWKS file of its own for one test, removed on drop.
    struct TempJwks(std::path::PathBuf);

    impl TempJwks {
        fn new(name: &str, keys: &[serde_json::Value]) -> Self {
            let path = std::env::temp_dir().join(format!("shardgate-{}-{name}.json", std::process::id()));
            std::fs::write(&path, serde_json::json!({ "keys": keys }).to_string()).unwrap();
            Self(path)
        }
    }

    impl Drop for TempJwks {
        fn drop(&mut self) {
            std::fs::remove_file(&self.0).ok();
        }
    }

    /// The JWK `kid` of the fixture key set `file`.
    fn fixture_jwk(file: &str, kid: &str) -> serde_json::Value {
        let set: serde_json::Value = serde_json::from_str(&fixture(file)).unwrap();
        set["keys"].as_array().unwrap().iter().find(|key| key["kid"] == kid).unwrap().clone()
    }

    fn signing_key(alg: Algorithm, private_pem: &str) -> EncodingKey {
        let pem = fixture(private_pem);
        match alg {
            Algorithm::RS256 => EncodingKey::from_rsa_pem(pem.as_bytes()),
            Algorithm::ES256 => EncodingKey::from_ec_pem(pem.as_bytes()),
            Algorithm::EdDSA => EncodingKey::from_ed_pem(pem.as_bytes()),
            other => panic!("no fixture for {other:?}"),
        }
        .unwrap()
    }

    fn claims_of(issuer: &str) -> serde_json::Value {
        serde_json::json!({"iss": issuer, "tenant": "acme", "scope": "read", "exp": now_secs() + 600})
    }

    fn signed(header: Header, private_pem: &str, claims: &serde_json::Value) -> String {
        encode(&header, claims, &signing_key(header.alg, private_pem)).unwrap()
    }

    fn with_kid(alg: Algorithm, kid: &str) -> Header {
        Header { kid: Some(kid.into()), ..Header::new(alg) }
    }

    #[test]
    fn the_algorithm_key_is_a_shorthand_for_an_allow_list_of_one() {
        let shorthand: IssuerConfig = serde_json::from_value(
            serde_json::json!({"issuer": "a", "algorithm": "HS256", "secret": SECRET, "allow_any_audience": true}),
        )
        .unwrap();
        let list: IssuerConfig = serde_json::from_value(serde_json::json!({
            "issuer": "b", "algorithms": ["RS256"], "public_key_pem": fixture("rs256-public.pem"), "audience": ["api"]
        }))
        .unwrap();
        assert_eq!(shorthand.allowed_algorithms().collect::<Vec<_>>(), [KeyAlgorithm::HS256]);
        assert!(start(vec![shorthand, list]).is_ok());

        let unknown = serde_json::json!({"issuer": "a", "algorithm": "HS256", "secret": SECRET, "jku": "x"});
        assert!(serde_json::from_value::<IssuerConfig>(unknown).is_err(), "unknown fields are refused");
    }

    #[test]
    fn the_allow_list_and_the_key_source_are_each_given_exactly_once() {
        let both = IssuerConfig { algorithms: vec![KeyAlgorithm::HS256], ..hs_issuer("both") };
        assert!(refusal(both).contains("not both"));
        let neither = IssuerConfig { algorithm: None, ..hs_issuer("neither") };
        assert!(refusal(neither).contains("set `algorithms`"));

        let no_key = public_issuer("no-key", &[KeyAlgorithm::RS256]);
        assert!(refusal(no_key).contains("exactly one of"));
        let two_keys = IssuerConfig {
            public_key_pem: Some(fixture("rs256-public.pem")),
            jwks_file: Some(format!("{KEYS}/jwks.json").into()),
            ..public_issuer("two-keys", &[KeyAlgorithm::RS256])
        };
        assert!(refusal(two_keys).contains("exactly one of"));
        let secret_and_set = IssuerConfig { jwks_file: Some(format!("{KEYS}/jwks.json").into()), ..hs_issuer("mixed") };
        assert!(refusal(secret_and_set).contains("exactly one of"));
    }

    #[test]
    fn every_allowed_algorithm_fits_a_key_and_every_key_its_algorithm() {
        let pem = |algorithms: &[KeyAlgorithm]| IssuerConfig {
            public_key_pem: Some(fixture("rs256-public.pem")),
            ..public_issuer("pem", algorithms)
        };
        assert!(start(vec![pem(&[KeyAlgorithm::RS256])]).is_ok());
        assert!(refusal(pem(&[KeyAlgorithm::HS256])).contains("HS256 needs `secret`"));
        assert!(refusal(pem(&[KeyAlgorithm::RS256, KeyAlgorithm::ES256])).contains("one algorithm"));
        assert!(refusal(pem(&[KeyAlgorithm::ES256])).contains("invalid ES256 key"), "an RSA key read as EC");

        let secret_for_rs256 = IssuerConfig { algorithm: Some(KeyAlgorithm::RS256), ..hs_issuer("hs") };
        assert!(refusal(secret_for_rs256).contains("HS256 key"));

        let mut set_with_hs256 = jwks_issuer("set", format!("{KEYS}/jwks.json"));
        set_with_hs256.algorithms.push(KeyAlgorithm::HS256);
        assert!(refusal(set_with_hs256).contains("HS256 needs `secret`"));

        let rsa_only = TempJwks::new("rsa-only", &[fixture_jwk("jwks.json", "rs-1")]);
        let unused = IssuerConfig {
            algorithms: vec![KeyAlgorithm::RS256, KeyAlgorithm::ES256],
            ..jwks_issuer("set", &rsa_only.0)
        };
        assert!(refusal(unused).contains("no key of this issuer is for ES256"));
    }

    #[test]
    fn a_key_set_url_without_tls_to_another_host_stops_the_start_up() {
        let plain = IssuerConfig {
            jwks_url: Some("http://idp.example.com/jwks".into()),
            ..public_issuer("idp", &[KeyAlgorithm::RS256])
        };
        let reason = refusal(plain);
        assert!(reason.contains("http://idp.example.com/jwks") && reason.contains("use https://"), "{reason}");
        let discovery_without_tls =
            IssuerConfig { discovery: true, ..public_issuer("http://idp.example.com", &[KeyAlgorithm::RS256]) };
        assert!(refusal(discovery_without_tls).contains("use https://"));
        let with_a_file = IssuerConfig {
            jwks_url: Some("https://idp.example.com/jwks".into()),
            jwks_file: Some(format!("{KEYS}/jwks.json").into()),
            ..public_issuer("idp", &[KeyAlgorithm::RS256])
        };
        assert!(refusal(with_a_file).contains("exactly one of"));
        // Outside a runtime nothing could keep the set current: refused, not left unfetched.
        let loopback = IssuerConfig {
            jwks_url: Some("http://127.0.0.1:1/jwks".into()),
            ..public_issuer("idp", &[KeyAlgorithm::RS256])
        };
        assert!(refusal(loopback).contains("runtime"));
    }

    #[test]
    fn a_broken_key_in_a_set_stops_the_start_up() {
        let mut off_curve = fixture_jwk("jwks.json", "es-1");
        off_curve["y"] = fixture_jwk("jwks.json", "es-1")["x"].clone();
        let off_curve = TempJwks::new("off-curve", &[off_curve]);
        assert!(refusal(jwks_issuer("set", &off_curve.0)).contains("unusable ES256 key"));

        let mut short = fixture_jwk("jwks.json", "ed-1");
        short["x"] = serde_json::json!("AAAA");
        let short = TempJwks::new("short-ed25519", &[short]);
        assert!(refusal(jwks_issuer("set", &short.0)).contains("32 bytes"));

        assert!(refusal(jwks_issuer("set", format!("{KEYS}/no-such-file.json"))).contains("cannot read"));
    }

    #[test]
    fn the_kid_picks_the_key_of_a_set() {
        let auth = start(vec![jwks_issuer("set", format!("{KEYS}/jwks.json"))]).unwrap();
        let claims = claims_of("set");
        for (alg, kid, private) in [
            (Algorithm::RS256, "rs-1", "rs256-private.pem"),
            (Algorithm::ES256, "es-1", "es256-private.pem"),
            (Algorithm::EdDSA, "ed-1", "ed25519-private.pem"),
        ] {
            let token = signed(with_kid(alg, kid), private, &claims);
            assert_eq!(auth.verify_now(&token).map(|p| p.issuer.clone()), Ok("set".into()), "{kid}");
            // Exactly one key of the set fits the alg, so the kid may be left out.
            assert!(auth.verify_now(&signed(Header::new(alg), private, &claims)).is_ok(), "{kid} without kid");
        }
        let unknown = signed(with_kid(Algorithm::RS256, "rs-2"), "rs256-private.pem", &claims);
        assert_eq!(auth.verify_now(&unknown), Err(AuthError::UnknownKey));
        let wrong_type = signed(with_kid(Algorithm::ES256, "rs-1"), "es256-private.pem", &claims);
        assert_eq!(auth.verify_now(&wrong_type), Err(AuthError::AlgorithmNotAllowed));
        let other_key = signed(with_kid(Algorithm::RS256, "rs-1"), "rs256-other-private.pem", &claims);
        assert_eq!(auth.verify_now(&other_key), Err(AuthError::BadSignature));
    }

    #[test]
    fn without_a_kid_a_set_with_two_keys_for_the_alg_verifies_nothing() {
        let two = TempJwks::new(
            "two-rsa",
            &[
                fixture_jwk("jwks.json", "rs-1"),
                fixture_jwk("jwks-other.json", "rs-other"),
                fixture_jwk("jwks.json", "es-1"),
            ],
        );
        let issuer =
            IssuerConfig { algorithms: vec![KeyAlgorithm::RS256, KeyAlgorithm::ES256], ..jwks_issuer("set", &two.0) };
        let auth = start(vec![issuer]).unwrap();
        let claims = claims_of("set");
        let no_kid = signed(Header::new(Algorithm::RS256), "rs256-private.pem", &claims);
        assert_eq!(auth.verify_now(&no_kid), Err(AuthError::UnknownKey));
        for (kid, private) in [("rs-1", "rs256-private.pem"), ("rs-other", "rs256-other-private.pem")] {
            assert!(auth.verify_now(&signed(with_kid(Algorithm::RS256, kid), private, &claims)).is_ok(), "{kid}");
        }
        assert!(auth.verify_now(&signed(Header::new(Algorithm::ES256), "es256-private.pem", &claims)).is_ok());
    }

    #[test]
    fn algorithm_confusion_and_embedded_keys_are_refused() {
        let rs = IssuerConfig {
            public_key_pem: Some(fixture("rs256-public.pem")),
            ..public_issuer("rs", &[KeyAlgorithm::RS256])
        };
        let auth = start(vec![rs, jwks_issuer("set", format!("{KEYS}/jwks.json"))]).unwrap();
        let public_pem = fixture("rs256-public.pem");
        for (issuer, kid) in [("rs", None), ("set", Some("rs-1")), ("set", None)] {
            let header = Header { kid: kid.map(str::to_owned), ..Header::new(Algorithm::HS256) };
            let hmac = encode(&header, &claims_of(issuer), &EncodingKey::from_secret(public_pem.as_bytes())).unwrap();
            assert_eq!(auth.verify_now(&hmac), Err(AuthError::AlgorithmNotAllowed), "{issuer} {kid:?}");
        }

        // The attacker's own public key rides along in the header; it is never used.
        let attacker: jsonwebtoken::jwk::Jwk =
            serde_json::from_value(fixture_jwk("jwks-other.json", "rs-other")).unwrap();
        for (issuer, kid) in [("rs", None), ("set", Some("rs-1")), ("set", None)] {
            let header = Header {
                kid: kid.map(str::to_owned),
                jwk: Some(attacker.clone()),
                jku: Some("http://127.0.0.1:1/jwks".into()),
                ..Header::new(Algorithm::RS256)
            };
            let token = signed(header, "rs256-other-private.pem", &claims_of(issuer));
            assert_eq!(auth.verify_now(&token), Err(AuthError::BadSignature), "{issuer} {kid:?}");
        }
    }

    #[test]
    fn an_issuer_starts_with_an_audience_or_the_explicit_opt_out_only() {
        let no_audience: IssuerConfig = serde_json::from_value(
            serde_json::json!({"issuer": "https://idp.example", "algorithm": "HS256", "secret": SECRET}),
        )
        .unwrap();
        match start(vec![no_audience.clone()]) {
            Err(error @ AuthError::Config { .. }) => {
                let message = error.to_string();
                assert!(message.contains("https://idp.example"), "names the issuer: {message}");
                assert!(message.contains("`audience`") && message.contains("`allow_any_audience = true`"), "{message}");
            }
            other => panic!("an issuer without an audience started: {other:?}"),
        }
        assert!(start(vec![IssuerConfig { audience: vec!["api".into()], ..no_audience.clone() }]).is_ok());
        assert!(start(vec![IssuerConfig { allow_any_audience: true, ..no_audience.clone() }]).is_ok());
        let both = IssuerConfig { audience: vec!["api".into()], allow_any_audience: true, ..no_audience };
        assert_eq!(refusal(both), "set `audience` or `allow_any_audience = true`, not both");
    }

    #[test]
    fn an_issuer_with_an_audience_requires_aud() {
        let issuer =
            IssuerConfig { audience: vec!["shardgate-api".into()], allow_any_audience: false, ..hs_issuer("aud") };
        let auth = start(vec![issuer]).unwrap();
        let token = |aud: Option<serde_json::Value>| {
            let mut claims = claims_of("aud");
            if let Some(aud) = aud {
                claims["aud"] = aud;
            }
            encode(&Header::new(Algorithm::HS256), &claims, &EncodingKey::from_secret(SECRET.as_bytes())).unwrap()
        };
        assert!(auth.verify_now(&token(Some(serde_json::json!("shardgate-api")))).is_ok());
        assert!(auth.verify_now(&token(Some(serde_json::json!(["other", "shardgate-api"])))).is_ok());
        assert_eq!(auth.verify_now(&token(Some(serde_json::json!("other")))), Err(AuthError::WrongAudience));
        assert_eq!(auth.verify_now(&token(None)), Err(AuthError::InvalidClaims("aud is required".into())));
    }

    #[test]
    fn critical_header_extensions_and_odd_shapes_are_malformed() {
        let auth = authenticator();
        let header = Header { crit: Some(vec!["exp".into()]), ..Header::new(Algorithm::HS256) };
        let claims = claims_of("shardgate");
        let crit = encode(&header, &claims, &EncodingKey::from_secret(SECRET.as_bytes())).unwrap();
        assert_eq!(auth.verify_now(&crit), Err(AuthError::Malformed));
        let good =
            encode(&Header::new(Algorithm::HS256), &claims, &EncodingKey::from_secret(SECRET.as_bytes())).unwrap();
        assert!(auth.verify_now(&good).is_ok());
        assert_eq!(auth.verify_now(&format!("{good}.extra")), Err(AuthError::Malformed));
        assert_eq!(auth.verify_now(good.rsplit_once('.').unwrap().0), Err(AuthError::Malformed));
    }
}
