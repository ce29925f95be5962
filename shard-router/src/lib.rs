//! # shardgate-shard-router
//!
//! Owns where data lives and how to reach it: the catalog database, the shard map (vshard table,
//! tenant directory and pins, epoch), the routing hash, one connection pool per shard, and the
//! storage of records and blobs on shards. Secondary index entries are `index-tables`' (which
//! sits above this crate): nothing here knows them.
//!
//! It must not know about HTTP, tokens or caching: callers hand it validated identifiers
//! ([`ids`]) and get back values or an [`Error`] whose variants say which HTTP status they
//! become (the `api` crate does that mapping, in one place).

pub mod blobs;
pub mod catalog;
pub mod claims;
mod clock;
pub mod copy;
pub mod db;
mod error;
pub mod fanout;
pub mod hash;
pub mod health;
pub mod humantime_serde;
pub mod ids;
pub mod job;
pub mod map;
pub mod mover;
pub mod pg_tls;
pub mod phase;
pub mod rebalance;
pub mod rebalancer;
pub mod records;
pub mod redistribute;
pub mod registration;
pub mod router;
pub mod shard;

pub use blobs::{
    BLOB_CHUNK_BYTES, BlobCommit, BlobCondition, BlobMeta, BlobPath, BlobRead, BlobStore, CommitOutcome, Upload,
    UploadState,
};
pub use clock::{Clock, SystemClock, now_ms};
pub use db::{Database, Engine, PoolConfig};
pub use error::Error;
pub use ids::{CollectionName, InvalidId, RecordKey, ShardId, TenantId};
pub use map::{Distribution, Incarnation, MapSnapshot, Route, ShardState, Strategy, TenantRateLimit, Tier};
pub use router::{Access, ShardRouter, StorageConfig};
pub use shard::{FencedShard, ShardStore};
