//! # shardgate-valet
//!
//! Valet keys: signed, time-limited URLs that grant one operation (read or write) on one blob of
//! one tenant. This crate owns the grant model, the canonical string, HMAC-SHA256 signing, the
//! `sg-` query form, verification, the key ring (which key signs, which keys verify) and the one
//! error type of every valet refusal; `docs/valet-keys.md` specifies them byte by byte.
//!
//! It does no I/O and knows nothing of HTTP servers, databases or tokens: the caller hands it a
//! method, a tenant, a raw path and a raw query, fills the [`KeyRing`] from its key store, and
//! enforces what needs state (retired key ids, revoked grant ids, single use) and what needs the
//! request body or response (size, content type, content disposition), reporting refusals as
//! [`ValetError`]s.
//!
//! Issuing:
//!
//! ```
//! use shardgate_valet::{Constraints, Grant, GrantId, GrantRequest, KeyId, Permission, SigningKey};
//!
//! let key = SigningKey::generate(KeyId::parse("k1")?);
//! let now = 1_700_000_000;
//! let grant = Grant::new(
//!     GrantRequest {
//!         permission: Permission::Read,
//!         tenant: "acme".into(),
//!         path: "reports/q1.pdf".into(),
//!         not_before: now - shardgate_valet::NOT_BEFORE_SKEW_SECS,
//!         expires_at: now + 600,
//!         grant_id: GrantId::generate(),
//!         constraints: Constraints::default(),
//!     },
//!     &key,
//! )?;
//! let url = format!("/valet/{}/{}?{}", grant.tenant(), grant.path(), grant.to_query(&key));
//! # let query = url.split_once('?').unwrap().1;
//! # let verified = shardgate_valet::UnverifiedGrant::parse("GET", "acme", "reports/q1.pdf", query)?.verify(&key, now)?;
//! # assert_eq!(verified, grant);
//! # Ok::<(), shardgate_valet::ValetError>(())
//! ```
//!
//! Verifying: [`UnverifiedGrant::parse`], look the key up by [`UnverifiedGrant::key_id`] with
//! [`KeyRing::verifying_key`] ([`ValetError::UnknownKey`] when there is none), then
//! [`UnverifiedGrant::verify`], then the key's state ([`KeyState::check_verifies`]).

mod error;
mod fields;
mod grant;
mod ids;
mod key;
mod key_ring;
mod permission;
mod query;

pub use error::ValetError;
pub use fields::{MAX_CONTENT_DISPOSITION_LEN, MAX_CONTENT_TYPE_LEN, MAX_PATH_LEN};
pub use grant::{Constraints, Grant, GrantRequest, NOT_BEFORE_SKEW_SECS, SCHEME_VERSION};
pub use ids::{GrantId, KeyId};
pub use key::SigningKey;
pub use key_ring::{KeyRing, KeyState};
pub use permission::Permission;
pub use query::{
    PARAM_CONTENT_DISPOSITION, PARAM_CONTENT_TYPE, PARAM_EXPIRES_AT, PARAM_GRANT_ID, PARAM_KEY_ID, PARAM_MAX_SIZE,
    PARAM_NOT_BEFORE, PARAM_PERMISSION, PARAM_SIGNATURE, PARAM_SINGLE_USE, PARAM_VERSION, UnverifiedGrant,
};
