//! The wire: what requests and answers look like, shared by the route modules (and by the
//! plumbing, for its refusals).
//!
//! - [`error`]: the one place where failures become responses (problem+json with a stable code);
//! - [`extract`]: extractors whose rejections are problem+json, and the caller's identity;
//! - [`record_body`]: what a record body must be to be stored;
//! - [`preconditions`]: `If-Match` / `If-None-Match` and entity-tag lists;
//! - [`pagination`]: pages with an opaque cursor, page sizes;
//! - [`envelope`]: the record and job bodies several routes return;
//! - [`timestamps`]: RFC 3339 in UTC;
//! - [`routed_epoch`]: `x-shardgate-epoch`, the shard-map epoch an answer was routed on;
//! - [`json_newline`]: the newline that ends every JSON answer (a response layer inside the front
//!   door);
//! - [`openapi`]: the document's base and each operation's problem responses.
//!
//! Must not know: the routes, the valet and blob services, or start-up. Of the server's plumbing
//! it knows only the caller's verified token ([`crate::server::admission::Authenticated`], which
//! [`extract`] reads) and which paths are never throttled (documented by [`openapi`]).

pub mod envelope;
pub mod error;
pub mod extract;
pub mod json_newline;
pub mod openapi;
pub mod pagination;
pub mod preconditions;
pub mod record_body;
pub mod routed_epoch;
pub mod timestamps;
