//! # shardgate-gatekeeper
//!
//! Decides whether a request may go on: bearer JWT verification against configured issuers
//! (their keys configured, or fetched from the identity provider's one configured URL and kept
//! current), scopes, and binding a request to the tenant its verified claims name. The full gatekeeper
//! (rate limits, request validation, the standalone proxy) grows here.
//!
//! It must not know about shards, databases, caches or valet signing keys: a gatekeeper process
//! holds none of them.

mod auth;
mod config;
mod fetch;
pub mod internal;
mod jwks;
mod key_set_url;
mod principal;
mod remote_key_set;
pub mod request;
pub mod throttle;
mod verification_key;

pub use auth::{
    AuthError, Authenticator, FetchedKeySets, KeySources, TokenRequest, mint_token, mint_token_for_audience,
};
pub use config::{AuthConfig, IssuerConfig, KeyAlgorithm};
pub use key_set_url::{KeySetUrl, shown_url};
pub use principal::{Principal, Scope, ScopeClaimError, Scopes};
pub use remote_key_set::{FETCH_OUTCOMES, KeySetStatus};
