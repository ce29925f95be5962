//! Tokens: the HS256 issuer every test app trusts, and minting its tokens for tenants and for
//! the platform administrator.

use std::time::Duration;

use secrecy::SecretString;
use shardgate_gatekeeper::{IssuerConfig, Scope, Scopes, TokenRequest, mint_token};

use crate::TestApp;

/// The HS256 issuer every test app trusts.
pub const ISSUER: &str = "test";
/// Its shared secret (at least 32 bytes).
pub const SECRET: &str = "shardgate-tests-hs256-secret-not-for-production-use";

/// An issuer called `name` with no algorithm or key yet, for tokens of any audience
/// (`allow_any_audience`; a test of audiences sets `audience` and turns it off): the start of an
/// `IssuerConfig { .., ..issuer_named(name) }` literal.
pub fn issuer_named(name: &str) -> IssuerConfig {
    IssuerConfig { allow_any_audience: true, ..IssuerConfig::named(name) }
}

/// The HS256 issuer configuration of [`ISSUER`], for tokens of any audience.
pub fn hs256_issuer() -> IssuerConfig {
    IssuerConfig { allow_any_audience: true, ..IssuerConfig::hs256(ISSUER, SecretString::from(SECRET)) }
}

/// Mints an HS256 token of [`ISSUER`] for the subject `tester`.
pub fn mint(tenant: Option<&str>, scopes: &[Scope], ttl: Duration) -> String {
    mint_for("tester", tenant, scopes, ttl)
}

/// Mints an HS256 token of [`ISSUER`] for `subject`.
pub fn mint_for(subject: &str, tenant: Option<&str>, scopes: &[Scope], ttl: Duration) -> String {
    let request = TokenRequest {
        issuer: ISSUER.into(),
        subject: subject.into(),
        tenant: tenant.map(str::to_owned),
        scopes: Scopes::of(scopes),
        ttl,
    };
    mint_token(&SecretString::from(SECRET), &request).expect("mint token")
}

impl TestApp {
    /// A token for the platform administrator (scope `admin`, no tenant).
    pub fn admin_token(&self) -> String {
        mint(None, &[Scope::Admin], Duration::from_secs(600))
    }

    /// A token for another platform administrator, whose subject is `subject`.
    pub fn admin_token_for(&self, subject: &str) -> String {
        mint_for(subject, None, &[Scope::Admin], Duration::from_secs(600))
    }

    /// A token bound to `tenant` with `scopes`.
    pub fn token(&self, tenant: &str, scopes: &[Scope]) -> String {
        mint(Some(tenant), scopes, Duration::from_secs(600))
    }

    /// A token bound to `tenant` with `read` and `write`.
    pub fn rw_token(&self, tenant: &str) -> String {
        self.token(tenant, &[Scope::Read, Scope::Write])
    }
}
