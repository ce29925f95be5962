//! The collections quota: how many collections a tenant may have. A collection exists while it
//! holds a live record, or while it has a distribution of its own (`hash` or `range`, in the
//! map): its records' collections on the tenant's home shard, and its distributed ones.
//!
//! Only a write of a record can create a collection (the first record of a collection distributed
//! `tenant`); an admin giving a collection a distribution is not held to it. So before a record
//! write of a tenant with a collections quota, this instance asks whether the collection exists:
//!
//! - a collection it saw existing within the last [`KNOWN_LIFE`] is taken as existing, without a
//!   statement (most writes);
//! - else one statement on the home shard tells (and a distributed collection exists by the map);
//! - a write that would create a collection counts the tenant's collections now (a loose scan of
//!   the home shard's records, one look-up per collection) and is refused with 409
//!   `quota_exceeded` (quota `collections`) when one more would cross the quota.
//!
//! The bound: on one instance, writes that may create a collection of a tenant go one at a time
//! (the next counts after the one before has written), so one instance never overshoots. Two
//! instances creating collections of one tenant at the same moment may each count the other's
//! not yet written: the quota is overshot by at most one collection per other instance creating
//! one at that moment. A collection emptied (its last record deleted) on another instance within
//! [`KNOWN_LIFE`] may be taken as existing, and written again without a count: that write brings
//! the tenant back to at most as many collections as it had.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use crate::error::Error;
use crate::ids::TenantId;
use crate::router::ShardRouter;
use crate::storage::shard::FencedShard;
use crate::storage::usage::{holds_collection, home_collections};

/// How long a collection seen existing is taken as existing without asking its shard.
pub const KNOWN_LIFE: Duration = Duration::from_secs(30);

/// The most tenants whose collections an instance remembers; beyond, those with nothing fresh are
/// forgotten.
const TENANTS_KEPT: usize = 4096;

/// Checks record writes against the tenants' collections quotas on this instance.
#[derive(Debug)]
pub struct CollectionGate {
    router: Arc<ShardRouter>,
    tenants: Mutex<HashMap<TenantId, Arc<Collections>>>,
}

/// What this instance knows of one tenant's collections.
#[derive(Debug, Default)]
struct Collections {
    /// Collections seen existing, and when.
    seen: Mutex<HashMap<String, Instant>>,
    /// Held by a write that may create a collection, until it has written.
    creating: Arc<tokio::sync::Mutex<()>>,
}

/// A record write let through by the collections quota: while held, no other write of the
/// tenant on this instance may create a collection (drop it once the write has finished).
#[derive(Debug)]
#[must_use = "other writes may create a collection once it is dropped"]
pub struct CollectionAdmission {
    _creating: Option<tokio::sync::OwnedMutexGuard<()>>,
}

impl CollectionGate {
    /// A gate for `router`'s tenants.
    pub fn new(router: Arc<ShardRouter>) -> Self {
        CollectionGate { router, tenants: Mutex::new(HashMap::new()) }
    }

    /// Lets a record write of `tenant` into `collection` through, or refuses it with
    /// [`Error::QuotaExceeded`] when it would create a collection beyond `limit`.
    pub async fn admit(&self, tenant: &TenantId, collection: &str, limit: u64) -> Result<CollectionAdmission, Error> {
        let known = self.collections(tenant);
        if known.fresh(collection) {
            return Ok(CollectionAdmission { _creating: None });
        }
        let creating = known.creating.clone().lock_owned().await;
        if known.fresh(collection) || self.exists(tenant, collection).await? {
            known.saw(collection);
            return Ok(CollectionAdmission { _creating: None });
        }
        let used = collection_count(&self.router, tenant).await?;
        if used >= limit {
            return Err(Error::QuotaExceeded { quota: "collections", limit, used, requested: 1 });
        }
        Ok(CollectionAdmission { _creating: Some(creating) })
    }

    /// Notes that a record of `tenant`'s `collection` was deleted on this instance: it may be
    /// empty now, so the next write into it asks its shard again.
    pub fn deleted_from(&self, tenant: &TenantId, collection: &str) {
        let known = self.tenants.lock().get(tenant).cloned();
        if let Some(known) = known {
            known.seen.lock().remove(collection);
        }
    }

    /// Whether `collection` of `tenant` exists now: distributed (by the map), or holding a live
    /// record on the tenant's home shard.
    async fn exists(&self, tenant: &TenantId, collection: &str) -> Result<bool, Error> {
        if self.router.with_map(|map| map.spread_of(tenant.as_str(), collection).is_some()) {
            return Ok(true);
        }
        let home = self.router.route_tenant(tenant)?.shard;
        let db = self.router.shard_db(&home)?;
        holds_collection(&FencedShard::new(&db, &home), tenant, collection).await
    }

    /// What this instance knows of `tenant`'s collections (made empty on first use).
    fn collections(&self, tenant: &TenantId) -> Arc<Collections> {
        let mut tenants = self.tenants.lock();
        if let Some(known) = tenants.get(tenant) {
            return known.clone();
        }
        if tenants.len() >= TENANTS_KEPT {
            tenants.retain(|_, known| Arc::strong_count(known) > 1 || known.forget_stale());
        }
        tenants.entry(tenant.clone()).or_default().clone()
    }
}

impl Collections {
    /// Whether `collection` was seen existing within [`KNOWN_LIFE`].
    fn fresh(&self, collection: &str) -> bool {
        self.seen.lock().get(collection).is_some_and(|at| at.elapsed() < KNOWN_LIFE)
    }

    /// Notes that `collection` exists now.
    fn saw(&self, collection: &str) {
        self.seen.lock().insert(collection.to_owned(), Instant::now());
    }

    /// Forgets what is no longer fresh; whether anything fresh is left.
    fn forget_stale(&self) -> bool {
        let mut seen = self.seen.lock();
        seen.retain(|_, at| at.elapsed() < KNOWN_LIFE);
        !seen.is_empty()
    }
}

/// How many collections `tenant` has now: those with a distribution of their own (the map) and
/// those holding live records on its home shard.
pub async fn collection_count(router: &ShardRouter, tenant: &TenantId) -> Result<u64, Error> {
    let home = router.route_tenant(tenant)?.shard;
    let db = router.shard_db(&home)?;
    let names = home_collections(&FencedShard::new(&db, &home), tenant).await?;
    Ok(with_distributed(router, tenant, names))
}

/// [`collection_count`] for showing: when the tenant's home shard does not answer (within
/// `storage.pool.probe_timeout`), only the collections with a distribution of their own count,
/// as a usage report counts only the shards that answered.
pub async fn shown_collection_count(router: &ShardRouter, tenant: &TenantId) -> u64 {
    let counted = match router.route_tenant(tenant) {
        Ok(home) => {
            router.within_probe(&home.shard, "count a tenant's collections", collection_count(router, tenant)).await
        }
        Err(_) => None,
    };
    counted.unwrap_or_else(|| with_distributed(router, tenant, Vec::new()))
}

/// How many distinct collections `names` and `tenant`'s distributed collections are.
fn with_distributed(router: &ShardRouter, tenant: &TenantId, mut names: Vec<String>) -> u64 {
    router.with_map(|map| {
        if let Some(spread) = map.spread.get(tenant.as_str()) {
            names.extend(spread.keys().cloned());
        }
    });
    names.sort_unstable();
    names.dedup();
    names.len() as u64
}
