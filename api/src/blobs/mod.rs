//! Blobs below the routes, shared by the blob API (`routes/blobs.rs`) and the valet endpoint
//! ([`crate::valet::service`]):
//!
//! - [`service`]: storing a blob (an upload streamed into chunks) and serving one (`ETag`,
//!   `If-None-Match`, a single `Range`, chunks a window at a time);
//! - [`chunk_cache`]: the chunks recently downloaded, and the single flight of the shard reads
//!   that fill it;
//! - [`quota`]: what an upload adds, let through by the tenant's quotas before it is stored.
//!
//! Must not know: which URL or which kind of caller (a token or a valet URL) asked. The chunks'
//! storage on the shards is `shard-router`'s (its `BlobStore`).

pub mod chunk_cache;
pub mod quota;
pub mod service;
