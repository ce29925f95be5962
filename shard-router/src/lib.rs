//! # shardgate-shard-router
//!
//! The data plane below HTTP: where data lives and how to reach it, and the jobs that move it.
//! Callers hand it validated identifiers ([`ids`]) and get back values or an [`Error`] whose
//! variants say which HTTP status they become (the `api` crate does that mapping, in one place).
//! It must not know about HTTP, tokens or caching; secondary index entries are `index-tables`'
//! (which sits above this crate): nothing here knows them.
//!
//! The rooms, lowest first (a room uses only the rooms before it):
//! - [`map`]: the shard map, the routing hash and the routing decisions (pure, no I/O);
//! - [`storage`]: one shard database: pools, TLS, health (deadlines, bulkhead, breaker), the load
//!   meter that counts every statement, fences, records, blobs, registration;
//! - [`catalog`]: the catalog database: shards, tenants, collections, jobs, claims, valet keys;
//! - the router: [`router`] (`ShardRouter`: resolve a request to its shard and run it there),
//!   [`fanout`] (listings across shards), [`pools`] (the shard pools), [`startup`] (opening it),
//!   [`config`] (`[storage]`), [`topology`] (admin changes of shards, tenants and
//!   distributions: serialised, audited), and [`usage`] (a tenant's usage summed over the shards
//!   the map places its parts on);
//! - [`moves`]: jobs that move data: copy, tenant, vshard and range moves, redistribution,
//!   rebalance planning, rebalances and drains;
//! - [`balance`]: the load picture (windows of the load each instance's meter counted, stored
//!   in the catalog and read back by shard, vshard, tenant and time);
//! - [`check`]: the consistency checks of a restored fleet (`shardgate check`): identity
//!   markers, vshard ownership, pinned and unknown tenants' rows, fences; reads only.
//!
//! Below every room are the crate-wide basics: [`ids`], [`claims`] (what a job owns), the
//! [`Clock`] and [`humantime_serde`]. The one [`Error`] type sits with `storage` (it wraps
//! storage's refusals), so every room from `storage` up may return it; `map` does not.
//! `tests/tests/layering.rs` (`ROOMS`) checks that no file uses a room above its own.

pub mod balance;
pub mod catalog;
pub mod check;
pub mod claims;
mod clock;
pub mod config;
mod error;
pub mod humantime_serde;
pub mod ids;
pub mod map;
pub mod moves;
pub mod router;
pub mod storage;
pub mod topology;
pub mod usage;

// The paths the crates above have used since before the rooms.
pub use map::hash;
pub use moves::{copy, job, mover, rebalance, rebalancer, redistribute};
pub use router::{fanout, pools, startup};
pub use storage::{batch, blobs, db, health, pg_tls, records, registration, shard, sql_comment};

pub use batch::BatchingConfig;
pub use blobs::{
    BLOB_CHUNK_BYTES, BlobCommit, BlobCondition, BlobMeta, BlobPath, BlobRead, BlobStore, CommitOutcome, Upload,
    UploadState,
};
pub use clock::{Clock, SystemClock, now_ms};
pub use config::{LoadConfig, MoveConfig, ShardSeed, StorageConfig};
pub use db::{Database, Engine, PoolConfig};
pub use error::Error;
pub use ids::{CollectionName, InvalidId, RecordKey, ShardId, TenantId};
pub use map::{Distribution, Incarnation, MapSnapshot, Route, ShardState, Strategy, TenantRateLimit, Tier};
pub use router::{Access, ShardRouter};
pub use shard::{FencedShard, ShardStore};
pub use topology::{ShardStats, Topology};

#[doc(hidden)]
pub use tracing as __tracing;

/// `in_trace_span!(span, future)` awaits `future` inside `span`, a `TRACE`-level span of the
/// request's trace, when such spans can be on (traces on); otherwise it awaits `future` alone.
/// Neither `span` is built nor `future` moved into a wrapper when traces are off: a disabled
/// `tracing::Instrumented` (or `#[tracing::instrument]`, which adds an async block of its own)
/// still moves the future's state, which cost a cached GET ~1.5 % more instructions
/// (`bench/instructions.sh`, issue 51). Written as a macro because a function taking the future
/// would move it once more. Use it, not `Instrument::instrument` or `#[instrument]`, for spans on
/// the request path.
#[macro_export]
macro_rules! in_trace_span {
    ($span:expr, $future:expr $(,)?) => {
        if $crate::__tracing::level_enabled!($crate::__tracing::Level::TRACE) {
            $crate::__tracing::Instrument::instrument($future, $span).await
        } else {
            $future.await
        }
    };
}
