//! The wire: what requests and answers look like, shared by the route modules (and by the
//! plumbing, for its refusals).
//!
//! - [`error`]: the one place where failures become responses (problem+json with a stable code);
//! - [`record_body`]: what a record body must be to be stored;
//! - [`preconditions`]: `If-Match` / `If-None-Match` and entity-tag lists;
//! - [`pagination`]: pages with an opaque cursor, page sizes;
//! - [`envelope`]: the record and job bodies several routes return;
//! - [`quotas`]: quotas, a tenant's own overrides, and each quota beside the usage it limits;
//! - [`timestamps`]: RFC 3339 in UTC;
//! - [`routed_epoch`]: `x-shardgate-epoch`, the shard-map epoch an answer was routed on;
//! - [`consistency`]: how fresh a read must be (`x-shardgate-consistency`) and a write's place
//!   (`x-shardgate-position`), for reads from standbys;
//! - [`json_newline`]: the newline that ends every JSON answer (a response layer inside the front
//!   door);
//! - [`openapi`]: the document's base and each operation's problem responses; [`closed_sets`]:
//!   the string properties it declares as enums;
//! - [`probes`]: the paths no throttle or cap counts (`/healthz`, `/readyz`, `/metrics`);
//! - [`admin_plane`]: the admin plane's paths, and which listener a request came in on when the
//!   admin plane has one of its own;
//! - [`spans`]: spans of time of the load picture as the admin API takes them.
//!
//! Must not know: the server's plumbing, the shared state, the routes, the valet and blob
//! services, or start-up; it sits below all of them and uses only the configuration.

pub mod admin_plane;
pub mod closed_sets;
pub mod consistency;
pub mod envelope;
pub mod error;
pub mod json_newline;
pub mod openapi;
pub mod pagination;
pub mod preconditions;
pub mod probes;
pub mod quotas;
pub mod record_body;
pub mod routed_epoch;
pub mod spans;
pub mod timestamps;
