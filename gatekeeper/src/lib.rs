//! # shardgate-gatekeeper
//!
//! Decides whether a request may go on: bearer JWT verification against configured issuers,
//! scopes, and binding a request to the tenant its verified claims name. The full gatekeeper
//! (rate limits, request validation, the standalone proxy) grows here.
//!
//! It must not know about shards, databases, caches or valet signing keys: a gatekeeper process
//! holds none of them.

mod auth;
mod config;
pub mod internal;
mod jwks;
mod principal;
pub mod request;
pub mod throttle;

pub use auth::{AuthError, Authenticator, TokenRequest, mint_token};
pub use config::{AuthConfig, IssuerConfig, KeyAlgorithm};
pub use principal::{Principal, Scope, ScopeClaimError, Scopes};
