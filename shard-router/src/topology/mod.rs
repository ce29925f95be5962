//! [`Topology`]: the admin changes of the topology, one at a time, each audited in the same
//! catalog transaction that makes it: registering, changing the state of and removing shards
//! (`shards.rs`, with their statistics), creating, changing and deleting tenants (`tenants.rs`),
//! and setting a collection's distribution, with the settling of rows written under the old one
//! while it changed (`distribution.rs`).
//!
//! Each change takes the router's admin lock (`ShardRouter::lock_admin`), changes the catalog
//! first (a new epoch), then the shard databases' fences and the router's in-memory map and
//! pools. Callers are the admin routes and the jobs that switch a map (moves, redistribution).
//! It routes through the [`ShardRouter`] below it and knows nothing of the jobs above it.

use crate::ids::ShardId;
use crate::router::ShardRouter;
use crate::storage::shard::FencedShard;

mod distribution;
mod shards;
mod tenants;

pub use shards::ShardStats;

/// The admin changes of shards, tenants and distributions, made on `router`'s catalog, map and
/// pools.
#[derive(Debug, Clone, Copy)]
pub struct Topology<'r> {
    router: &'r ShardRouter,
}

impl<'r> Topology<'r> {
    /// The topology `router` routes on.
    pub fn of(router: &'r ShardRouter) -> Self {
        Self { router }
    }

    /// Raises shard `id`'s fence to `epoch`, within the probe timeout; a failure is logged
    /// (the shard is down, so nothing writes there either).
    async fn raise_fence_on(&self, id: &ShardId, epoch: u64) {
        match self.router.shard_db(id) {
            Ok(db) => {
                let shard = FencedShard::new(&db, id);
                match tokio::time::timeout(self.router.pools().config().probe_timeout, shard.raise_fence(epoch)).await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => tracing::warn!(shard = %id, error = %e, "could not raise the shard fence"),
                    Err(_) => tracing::warn!(shard = %id, "raising the shard fence timed out"),
                }
            }
            Err(e) => tracing::warn!(shard = %id, error = %e, "no pool to raise the shard fence"),
        }
    }
}
