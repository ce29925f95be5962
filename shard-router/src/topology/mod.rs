//! [`Topology`]: the admin changes of the topology, one at a time, each audited in the same
//! catalog transaction that makes it: registering, changing the state of and removing shards
//! (`shards.rs`, with their statistics), creating, changing and deleting tenants (`tenants.rs`),
//! and setting a collection's distribution, with the settling of rows written under the old one
//! while it changed (`distribution.rs`). Also what a tenant holds and its collections, read from
//! the shards for the admin API (`collections.rs`).
//!
//! Each change takes the router's admin lock (`ShardRouter::lock_admin`), changes the catalog
//! first (a new epoch), then the shard databases' fences and the router's in-memory map and
//! pools. Callers are the admin routes and the jobs that switch a map (moves, redistribution).
//! It routes through the [`ShardRouter`] below it and knows nothing of the jobs above it.

use crate::ids::{ShardId, TenantId};
use crate::map::ShardState;
use crate::router::ShardRouter;
use crate::storage::holdings::{TenantHolding, tenant_holding};
use crate::storage::shard::FencedShard;

mod collections;
mod distribution;
mod shards;
mod tenants;

pub use collections::{TenantCollection, TenantCollections};
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

    /// [`ShardRouter::within_probe`].
    async fn within_probe<T>(
        &self,
        id: &ShardId,
        what: &str,
        work: impl std::future::Future<Output = Result<T, crate::error::Error>>,
    ) -> Option<T> {
        self.router.within_probe(id, what, work).await
    }

    /// What `tenant` holds on every shard (records, blobs and their bytes), and the shards that
    /// did not answer within the probe timeout (their part is missing).
    pub async fn tenant_holdings(&self, tenant: &TenantId) -> (TenantHolding, Vec<ShardId>) {
        let shards = self.router.shard_dbs();
        let measured = futures::future::join_all(shards.iter().map(|(id, state, db)| async move {
            if *state == ShardState::Offline {
                return None;
            }
            self.within_probe(id, "count a tenant's data", tenant_holding(&FencedShard::new(db, id), tenant)).await
        }))
        .await;
        let mut total = TenantHolding::default();
        let mut missing = Vec::new();
        for ((id, _, _), holding) in shards.iter().zip(measured) {
            match holding {
                Some(holding) => total.add(&holding),
                None => missing.push(id.clone()),
            }
        }
        (total, missing)
    }

    /// Raises shard `id`'s fence to `epoch`, within the probe timeout; a failure is logged
    /// (the shard is down, so nothing writes there either).
    async fn raise_fence_on(&self, id: &ShardId, epoch: u64) {
        match self.router.shard_db(id) {
            Ok(db) => {
                self.within_probe(id, "raise the shard fence", FencedShard::new(&db, id).raise_fence(epoch)).await;
            }
            Err(e) => tracing::warn!(shard = %id, error = %e, "no pool to raise the shard fence"),
        }
    }
}
