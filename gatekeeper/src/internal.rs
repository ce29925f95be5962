//! The internal credential: how a trusted backend (`shardgate serve --trusted`) knows a request
//! comes from the gatekeeper, and whom the gatekeeper verified.
//!
//! The gatekeeper adds these headers to every request it forwards:
//! - `x-shardgate-principal`: the verified principal, base64url (no padding) of its JSON
//!   `{"iss", "sub", "tenant", "scope", "iat"}` (`iat` only when the token has one), or `-` for a
//!   request without a valid token;
//! - `x-shardgate-client`: the client's address as the gatekeeper resolved it (its peer, or what
//!   its trusted proxies say), so the backend's audit and access logs name the client rather
//!   than the gatekeeper;
//! - `x-shardgate-timestamp`: milliseconds since the Unix epoch when it was signed;
//! - `x-shardgate-signature`: lowercase hex of HMAC-SHA256 with the shared secret over
//!   `shardgate-internal-v1\n{METHOD}\n{path and query, as sent}\n{timestamp}\n{principal header}`,
//!   followed by `\n{client header}` when there is one (a request signed without it verifies
//!   without it, so a backend accepts an older gatekeeper's requests, naming its peer as the
//!   client; one cannot be added to or taken from a signed request).
//!
//! The backend recomputes the MAC (constant-time comparison) and accepts it within
//! [`VALIDITY`] of its own clock, either way. The body is not signed: the link between gatekeeper
//! and backend is a private network, and the credential's job is that nothing else can reach the
//! backend and claim an identity. Anyone who can read that link can replay a request within the
//! window, so it must not cross untrusted networks without TLS.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::principal::{Principal, Scopes};

/// Header carrying the verified principal.
pub const PRINCIPAL_HEADER: &str = "x-shardgate-principal";
/// Header carrying the client's address.
pub const CLIENT_HEADER: &str = "x-shardgate-client";
/// Header carrying the signing time.
pub const TIMESTAMP_HEADER: &str = "x-shardgate-timestamp";
/// Header carrying the MAC.
pub const SIGNATURE_HEADER: &str = "x-shardgate-signature";
/// Response header by which a trusted backend tells the gatekeeper a tenant's rate limit
/// (`<per_second> <burst>`); the gatekeeper removes it before answering the client.
pub const RATE_LIMIT_HEADER: &str = "x-shardgate-rate-limit";

/// How far the timestamp may be from the backend's clock, either way.
pub const VALIDITY: Duration = Duration::from_secs(30);

const CONTEXT: &str = "shardgate-internal-v1";

/// Why a request's internal credential was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CredentialError {
    /// A header is missing or not text.
    #[error("the internal credential is missing")]
    Missing,
    /// The timestamp is outside the validity window.
    #[error("the internal credential has expired or is from the future")]
    Expired,
    /// The MAC does not verify, or the principal does not decode.
    #[error("the internal credential is invalid")]
    Invalid,
}

#[derive(Debug, Serialize, Deserialize)]
struct Wire {
    iss: String,
    sub: String,
    tenant: Option<String>,
    scope: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    iat: Option<u64>,
}

/// The header values of one signed request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedHeaders {
    /// `x-shardgate-principal`.
    pub principal: String,
    /// `x-shardgate-client`, if the gatekeeper named the client.
    pub client: Option<String>,
    /// `x-shardgate-timestamp`.
    pub timestamp: String,
    /// `x-shardgate-signature`.
    pub signature: String,
}

/// The header values as a request carries them (any of them may be missing).
#[derive(Debug, Clone, Copy)]
struct ReceivedHeaders<'a> {
    principal: Option<&'a str>,
    client: Option<&'a str>,
    timestamp: Option<&'a str>,
    signature: Option<&'a str>,
}

/// Signs (gatekeeper) and verifies (trusted backend) internal credentials with a shared secret.
pub struct InternalKey {
    secret: SecretString,
}

impl std::fmt::Debug for InternalKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InternalKey(..)")
    }
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or_default()
}

/// The shared internal secret is too short to key an HMAC safely.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("internal.secret must be at least 32 bytes")]
pub struct ShortInternalSecret;

impl InternalKey {
    /// A key from the shared secret (at least 32 bytes).
    pub fn new(secret: SecretString) -> Result<Self, ShortInternalSecret> {
        if secret.expose_secret().len() < 32 {
            return Err(ShortInternalSecret);
        }
        Ok(Self { secret })
    }

    fn mac(
        &self,
        method: &str,
        path_and_query: &str,
        timestamp: &str,
        principal: &str,
        client: Option<&str>,
    ) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(self.secret.expose_secret().as_bytes())
            .expect("HMAC takes keys of any length");
        for part in [CONTEXT, method, path_and_query, timestamp] {
            mac.update(part.as_bytes());
            mac.update(b"\n");
        }
        mac.update(principal.as_bytes());
        // Neither the principal header (base64url or `-`) nor an address holds a newline.
        if let Some(client) = client {
            mac.update(b"\n");
            mac.update(client.as_bytes());
        }
        mac
    }

    /// The headers for forwarding `method path_and_query` on behalf of `principal`, from
    /// `client`.
    pub fn sign(
        &self,
        method: &str,
        path_and_query: &str,
        principal: Option<&Principal>,
        client: Option<std::net::IpAddr>,
    ) -> SignedHeaders {
        self.sign_at(method, path_and_query, principal, client, now_ms())
    }

    fn sign_at(
        &self,
        method: &str,
        path_and_query: &str,
        principal: Option<&Principal>,
        client: Option<std::net::IpAddr>,
        at_ms: u64,
    ) -> SignedHeaders {
        let principal = match principal {
            Some(p) => {
                let wire = Wire {
                    iss: p.issuer.clone(),
                    sub: p.subject.clone(),
                    tenant: p.tenant.clone(),
                    scope: p.scopes.to_claim(),
                    iat: p.issued_at,
                };
                URL_SAFE_NO_PAD.encode(serde_json::to_vec(&wire).unwrap_or_default())
            }
            None => "-".to_owned(),
        };
        let timestamp = at_ms.to_string();
        let client = client.map(|ip| ip.to_string());
        let mac = self.mac(method, path_and_query, &timestamp, &principal, client.as_deref());
        let signature = hex::encode(mac.finalize().into_bytes());
        SignedHeaders { principal, client, timestamp, signature }
    }

    /// Verifies the headers of a request (`client`, the client header, is bound by the
    /// signature when present); returns the principal the gatekeeper verified (`None`: a request
    /// without a valid token).
    pub fn verify(
        &self,
        method: &str,
        path_and_query: &str,
        principal: Option<&str>,
        client: Option<&str>,
        timestamp: Option<&str>,
        signature: Option<&str>,
    ) -> Result<Option<Principal>, CredentialError> {
        self.verify_at(method, path_and_query, ReceivedHeaders { principal, client, timestamp, signature }, now_ms())
    }

    fn verify_at(
        &self,
        method: &str,
        path_and_query: &str,
        received: ReceivedHeaders<'_>,
        now: u64,
    ) -> Result<Option<Principal>, CredentialError> {
        let ReceivedHeaders {
            principal: Some(principal),
            client,
            timestamp: Some(timestamp),
            signature: Some(signature),
        } = received
        else {
            return Err(CredentialError::Missing);
        };
        let signed_at: u64 = timestamp.parse().map_err(|_| CredentialError::Invalid)?;
        let signature = hex::decode(signature).map_err(|_| CredentialError::Invalid)?;
        self.mac(method, path_and_query, timestamp, principal, client)
            .verify_slice(&signature)
            .map_err(|_| CredentialError::Invalid)?;
        if now.abs_diff(signed_at) > VALIDITY.as_millis() as u64 {
            return Err(CredentialError::Expired);
        }
        if principal == "-" {
            return Ok(None);
        }
        let bytes = URL_SAFE_NO_PAD.decode(principal).map_err(|_| CredentialError::Invalid)?;
        let wire: Wire = serde_json::from_slice(&bytes).map_err(|_| CredentialError::Invalid)?;
        Ok(Some(Principal {
            issuer: wire.iss,
            subject: wire.sub,
            tenant: wire.tenant,
            scopes: Scopes::parse_claim(&wire.scope).map_err(|_| CredentialError::Invalid)?,
            issued_at: wire.iat,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::principal::Scope;

    impl SignedHeaders {
        fn received(&self) -> ReceivedHeaders<'_> {
            ReceivedHeaders {
                principal: Some(&self.principal),
                client: self.client.as_deref(),
                timestamp: Some(&self.timestamp),
                signature: Some(&self.signature),
            }
        }
    }

    fn key(secret: &str) -> InternalKey {
        InternalKey::new(SecretString::from(secret.to_owned())).unwrap()
    }

    const SECRET: &str = "internal-secret-0123456789abcdef0123";

    fn principal() -> Principal {
        Principal {
            issuer: "iss".into(),
            subject: "alice".into(),
            tenant: Some("acme".into()),
            scopes: Scopes::of(&[Scope::Read, Scope::Write]),
            issued_at: Some(1_700_000_000),
        }
    }

    #[test]
    fn a_signed_request_verifies_with_its_principal() {
        let key = key(SECRET);
        let path = "/v1/tenants/acme/collections/c/records/k?x=1";
        let h = key.sign_at("PUT", path, Some(&principal()), None, 1_000_000);
        let verified = key.verify_at("PUT", path, h.received(), 1_000_500).unwrap().unwrap();
        assert_eq!(verified.tenant.as_deref(), Some("acme"));
        assert_eq!(verified.subject, "alice");
        assert_eq!(verified.issued_at, Some(1_700_000_000), "the token's iat reaches the backend");
        assert!(verified.scopes.contains(Scope::Write) && !verified.scopes.contains(Scope::Admin));
        let anonymous = key.sign_at("GET", "/docs", None, None, 1_000_000);
        let verified = key.verify_at("GET", "/docs", anonymous.received(), 1_000_000);
        assert_eq!(verified, Ok(None));
    }

    #[test]
    fn every_signed_part_is_bound() {
        let key = key(SECRET);
        let path = "/v1/tenants/acme/collections/c/records/k";
        let h = key.sign_at("GET", path, Some(&principal()), None, 1_000_000);
        let verify = |method: &str, path: &str, principal: &str, timestamp: &str, signature: &str, now: u64| {
            let received = ReceivedHeaders {
                principal: Some(principal),
                client: None,
                timestamp: Some(timestamp),
                signature: Some(signature),
            };
            key.verify_at(method, path, received, now)
        };
        let mut admin = principal();
        admin.scopes = Scopes::of(&[Scope::Admin]);
        let forged = key.sign_at("GET", path, Some(&admin), None, 1_000_000).principal;
        let cases = [
            ("method", verify("DELETE", path, &h.principal, &h.timestamp, &h.signature, 1_000_000)),
            (
                "path",
                verify(
                    "GET",
                    "/v1/tenants/bob/collections/c/records/k",
                    &h.principal,
                    &h.timestamp,
                    &h.signature,
                    1_000_000,
                ),
            ),
            ("principal", verify("GET", path, &forged, &h.timestamp, &h.signature, 1_000_000)),
            ("anonymous", verify("GET", path, "-", &h.timestamp, &h.signature, 1_000_000)),
            ("timestamp", verify("GET", path, &h.principal, "1000001", &h.signature, 1_000_000)),
            ("signature", verify("GET", path, &h.principal, &h.timestamp, &"0".repeat(64), 1_000_000)),
            ("garbage signature", verify("GET", path, &h.principal, &h.timestamp, "zz", 1_000_000)),
        ];
        for (what, result) in cases {
            assert_eq!(result, Err(CredentialError::Invalid), "{what}");
        }
        let other = self::key("another-internal-secret-0123456789abc");
        let theirs = other.sign_at("GET", path, Some(&principal()), None, 1_000_000);
        assert_eq!(
            verify("GET", path, &theirs.principal, &theirs.timestamp, &theirs.signature, 1_000_000),
            Err(CredentialError::Invalid)
        );
    }

    #[test]
    fn the_window_is_thirty_seconds_either_way() {
        let key = key(SECRET);
        let h = key.sign_at("GET", "/x", None, None, 1_000_000);
        let at = |now| key.verify_at("GET", "/x", h.received(), now);
        assert_eq!(at(1_000_000 + 30_000), Ok(None));
        assert_eq!(at(1_000_000 - 30_000), Ok(None));
        assert_eq!(at(1_000_000 + 30_001), Err(CredentialError::Expired));
        assert_eq!(at(1_000_000 - 30_001), Err(CredentialError::Expired));
        let unsigned = ReceivedHeaders { principal: None, client: None, timestamp: Some("1"), signature: Some("00") };
        assert_eq!(key.verify_at("GET", "/x", unsigned, 0), Err(CredentialError::Missing));
    }

    #[test]
    fn the_client_is_bound_when_named_and_cannot_be_added_or_taken_away() {
        let key = key(SECRET);
        let client: std::net::IpAddr = "203.0.113.7".parse().unwrap();
        let named = key.sign_at("GET", "/valet/x", None, Some(client), 1_000_000);
        assert_eq!(named.client.as_deref(), Some("203.0.113.7"));
        assert_eq!(key.verify_at("GET", "/valet/x", named.received(), 1_000_000), Ok(None));
        let unnamed = key.sign_at("GET", "/valet/x", None, None, 1_000_000);
        let cases = [
            ("another client", ReceivedHeaders { client: Some("198.51.100.1"), ..named.received() }),
            ("the client taken away", ReceivedHeaders { client: None, ..named.received() }),
            ("a client added", ReceivedHeaders { client: Some("203.0.113.7"), ..unnamed.received() }),
        ];
        for (what, received) in cases {
            assert_eq!(key.verify_at("GET", "/valet/x", received, 1_000_000), Err(CredentialError::Invalid), "{what}");
        }
    }

    #[test]
    fn short_secrets_are_refused() {
        assert!(InternalKey::new(SecretString::from("short")).is_err());
    }
}
