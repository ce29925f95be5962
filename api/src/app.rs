//! The application state every handler shares: one `App` behind an `Arc`.

use std::sync::Arc;

use shardgate_cache::{PendingEnd, WriteEnd};
use shardgate_gatekeeper::throttle::RateLimit;
use shardgate_index_tables::IndexTables;
use shardgate_shard_router::Error as StoreError;
use shardgate_shard_router::{ShardRouter, Tier, Topology};

use crate::config::LimitsConfig;
use crate::observability::metrics::Metrics;
use crate::server::bulkhead::{Bulkheads, Compartment, Slot};
use crate::wire::error::ApiError;

/// Shared state of one gateway instance.
#[derive(Debug)]
pub struct App {
    /// Catalog, shard map and shard pools (shared with the index tables).
    pub router: Arc<ShardRouter>,
    /// Record cache.
    pub cache: std::sync::Arc<shardgate_cache::RecordCache>,
    /// The ends in Redis of record writes, sent off the requests' path.
    pub write_ends: WriteEnds,
    /// Authentication and rate limits.
    pub gate: crate::server::admission::Gate,
    /// In trusted mode (behind `shardgate gatekeeper`): the key of the internal credential.
    pub trusted: Option<shardgate_gatekeeper::internal::InternalKey>,
    /// Request limits.
    pub limits: LimitsConfig,
    /// Blob limits.
    pub blobs: crate::config::BlobsConfig,
    /// Blob chunks recently downloaded.
    pub chunks: crate::blobs::chunk_cache::ChunkCache,
    /// Valet key settings (`public_url` resolved).
    pub valet: crate::config::ValetConfig,
    /// Secondary indexes: definitions, entries, look-ups, jobs and their metrics.
    pub indexes: Arc<IndexTables>,
    /// Runs the tenant moves this instance holds (and takes over those of crashed instances).
    pub mover: Arc<shardgate_shard_router::mover::Mover>,
    /// Runs the rebalances and drains this instance holds (their steps run on `mover`).
    pub rebalancer: Arc<shardgate_shard_router::rebalancer::Rebalancer>,
    /// Valet signing keys seen by this instance (the catalog's, cached).
    pub signing_keys: crate::valet::signing_keys::SigningKeys,
    /// The catalog's answers for valet grants, kept briefly (`valet/checks.rs`).
    pub valet_checks: crate::valet::checks::ValetChecks,
    /// Refused valet requests, by code.
    pub valet_refusals: crate::valet::refusals::RefusalCounter,
    /// The audit rows of valet requests, queued and written in batches (`valet/audit.rs`).
    pub valet_audit: crate::valet::audit::ValetAudit,
    /// Prometheus metrics.
    pub metrics: std::sync::Arc<Metrics>,
    /// The clock valet keys are issued and checked with (the system's, unless a test injects one).
    pub clock: Arc<dyn shardgate_shard_router::Clock>,
    /// Timeout of each readiness probe.
    pub probe_timeout: std::time::Duration,
    /// The deadline of a statement (`storage.pool.statement_timeout`), also of the catalog poll.
    pub statement_timeout: std::time::Duration,
    /// Requests in progress per tenant (`bulkhead.rs`).
    pub bulkheads: Bulkheads,
    /// Listings of distributed collections in progress per tenant (`bulkhead.rs`).
    pub fan_outs: Bulkheads,
    /// Shard reads per second of each tenant's listings of distributed collections
    /// (`fan_out_budget.rs`).
    pub fan_out_budget: crate::server::fan_out_budget::FanOutBudget,
    /// The idle limit of blob and valet transfers (`transfer_watch.rs`).
    pub transfers: crate::server::transfer_watch::TransferWatch,
    /// The balancer (`[balancer]`): its runs, mode and proposals.
    pub balancer: Arc<shardgate_shard_router::balance::Balancer>,
    /// The load picture's settings (`storage.load`).
    pub load: shardgate_shard_router::LoadConfig,
    /// Stores this instance's load windows in the catalog; `None` when the load picture is off.
    pub load_flusher: Option<shardgate_shard_router::balance::LoadFlusher>,
    /// Lets writes that grow a tenant's usage through its quotas (`usage::grants`).
    pub quota_gate: Arc<shardgate_shard_router::usage::grants::QuotaGate>,
    /// The writes refused for a quota, counted per tier for `/metrics`.
    pub quota_refusals: Arc<crate::observability::usage_metrics::QuotaRefusals>,
    /// Holds record writes to the tenants' collections quotas.
    pub collection_gate: Arc<shardgate_shard_router::usage::collections::CollectionGate>,
    /// Counts each tenant's requests, bytes and valet bytes per day, and keeps them in the
    /// catalog for billing (`usage::daily`).
    pub daily_usage: Arc<shardgate_shard_router::usage::daily::DailyUsage>,
    /// Audits the shards' kept usage against their rows in the background (`usage::audit`).
    pub usage_audit: Arc<shardgate_shard_router::usage::audit::UsageAudit>,
}

impl App {
    /// The admin changes of shards, tenants and distributions, on `router`'s catalog and map.
    pub fn topology(&self) -> Topology<'_> {
        Topology::of(&self.router)
    }

    /// The size of a listing's page: the `limit` a client asked for, else
    /// `limits.default_list_limit`, capped at `limits.max_list_limit` (400 for zero).
    pub fn page_limit(&self, requested: Option<u32>) -> Result<u32, ApiError> {
        crate::wire::pagination::page_limit(requested, self.limits.default_list_limit, self.limits.max_list_limit)
    }

    /// The rate limit of `tenant`: its own, else its tier's (`None`: no such tenant).
    pub fn tenant_rate_limit(&self, tenant: &str) -> Option<RateLimit> {
        let (tier, own) = self.router.tenant_limits(tenant)?;
        Some(match own {
            Some(own) => RateLimit { per_second: own.per_second, burst: own.burst },
            None => self.gate.limiter.config().for_tier(tier.as_str()),
        })
    }

    /// A place among the requests in progress of `compartment`, within its cap: a tenant's by its
    /// tier (`limits.tenant_concurrent_requests`; a tenant this instance does not know, and a
    /// token without a tenant, get the `standard` cap), `limits.anonymous_concurrent_requests`
    /// for requests without a valid token; never more than half the instance's cap
    /// ([`crate::config::LimitsConfig::compartment_bound`]). Refused at once (429) when the
    /// compartment is full.
    pub fn enter_bulkhead(&self, compartment: Compartment) -> Result<Slot, ApiError> {
        let cap = match &compartment {
            Compartment::Tenant(tenant) => {
                self.limits.tenant_cap(self.router.tenant_limits(tenant).map_or(Tier::Standard, |(tier, _)| tier))
            }
            Compartment::Principal(..) => self.limits.tenant_cap(Tier::Standard),
            Compartment::Anonymous => self.limits.anonymous_cap(),
        };
        self.bulkheads.enter(compartment, cap)
    }

    /// A place among `tenant`'s listings of distributed collections in progress
    /// (`limits.tenant_concurrent_fan_outs`) for one that reads `shards` shards, paid from the
    /// tenant's budget of shard reads (`limits.tenant_fan_out_shard_reads_per_second`); refused
    /// at once (429 `fan_out_limit`) when either is spent.
    pub fn enter_fan_out(&self, tenant: &str, shards: usize) -> Result<Slot, ApiError> {
        let cost = u32::try_from(shards).unwrap_or(u32::MAX);
        if let Err(wait) = self.fan_out_budget.take(tenant, cost, std::time::Instant::now()) {
            return Err(ApiError::fan_out_budget_spent(tenant, self.fan_out_budget.per_second(), wait));
        }
        self.fan_outs.enter(Compartment::Tenant(tenant.into()), self.limits.tenant_concurrent_fan_outs)
    }

    /// Tells other instances the shard map changed (they also poll the catalog).
    pub async fn announce_map_change(&self) {
        self.cache.announce_epoch(self.router.epoch()).await;
    }

    /// After a grant revocation or key retirement committed (moving the valet generation on),
    /// and before it is acknowledged: drops this instance's valet checks and tells the others to
    /// re-read the catalog's counters now (they also poll it; see `valet/checks.rs` for the bound).
    pub async fn announce_valet_change(&self) {
        self.valet_checks.drop_all();
        self.cache.announce_epoch(self.router.epoch()).await;
    }

    /// Before a record write or delete reaches its shard: marks `cache_key` in the cache, so no
    /// instance serves or stores it from a cache until the write ends, or, if this instance dies
    /// first, until the mark expires (`cache.write_mark_ttl`). If Redis cannot be reached the
    /// write goes on; [`App::end_record_write`] then moves the cache generation on.
    ///
    /// Whether the mark is held: [`App::end_record_write`] then leaves the end of the mark in
    /// Redis to [`WriteEnds`], off the request's path.
    pub async fn begin_record_write(&self, cache_key: &str) -> bool {
        self.cache.begin_write(cache_key).await.is_ok()
    }

    /// After a record write or delete marked by [`App::begin_record_write`] ended with
    /// `written` (its version, or why it failed), and before it is answered: ends the mark
    /// (see [`shardgate_cache::WriteEnd`]) and invalidates older cached copies. If Redis cannot
    /// be reached, the cache generation moves on in the catalog instead, so no instance reads
    /// the old entry again (others learn it within one catalog poll).
    ///
    /// When the write's mark is held in Redis (`marked`) and the cache generation has not moved
    /// on meanwhile, only L1 is told before the answer; the end in Redis goes to [`WriteEnds`],
    /// which sends it with the other writes' ends. Until it is sent the mark keeps every
    /// instance reading the key from its shard, so nothing older than the write is served; if it
    /// never arrives (this instance dies, Redis fails), the mark expires as after a crash.
    pub async fn end_record_write(
        &self,
        cache_key: &str,
        collection: &str,
        written: Result<i64, &StoreError>,
        marked: bool,
    ) {
        let end = match written {
            Ok(version) => WriteEnd::Written(version),
            // It may still commit: the mark stays until it expires.
            Err(StoreError::WriteOutcomeUnknown { .. } | StoreError::Database { .. } | StoreError::Timeout) => {
                WriteEnd::Unknown
            }
            Err(_) => WriteEnd::Unchanged,
        };
        // The generation moved on during the write: readers use another key now, which the
        // mark did not cover.
        let now_key = self.cache.rekeyed(cache_key);
        if marked && now_key.is_none() {
            if let Some(pending) = self.cache.end_marked_write(cache_key, collection, end).await {
                self.write_ends.send(pending, &self.cache).await;
            }
            return;
        }
        let mut ended = self.cache.end_write(cache_key, collection, end).await;
        if let (Some(now_key), WriteEnd::Written(version)) = (now_key, end) {
            ended = ended.and(self.cache.end_write(&now_key, collection, WriteEnd::Written(version)).await);
        }
        if ended.is_ok() {
            return;
        }
        // Once per Redis outage (see `RecordCache::move_generation_on`), not once per write.
        if let Err(e) = self.cache.move_generation_on(self.router.catalog().bump_cache_generation()).await {
            log_generation_failure(&e);
        }
    }
}

/// The ends in Redis of record writes whose marks are held ([`App::end_record_write`]), sent by
/// one task: each call takes every end queued while the previous call was on its way (up to
/// [`WriteEnds::BATCH`]), so under load a write's Redis work on its path is its mark alone.
#[derive(Debug)]
pub struct WriteEnds {
    queue: tokio::sync::mpsc::Sender<PendingEnd>,
}

impl WriteEnds {
    /// The most ends one call to Redis takes.
    pub const BATCH: usize = 64;
    /// The most ends waiting; past it a write sends its own end before it is answered.
    const QUEUED: usize = 4096;

    /// Starts the task that sends `cache`'s write ends; it stops with the cache.
    pub fn start(cache: &Arc<shardgate_cache::RecordCache>) -> Self {
        let (queue, mut ends) = tokio::sync::mpsc::channel::<PendingEnd>(Self::QUEUED);
        let cache = Arc::downgrade(cache);
        tokio::spawn(async move {
            let mut batch = Vec::with_capacity(Self::BATCH);
            while ends.recv_many(&mut batch, Self::BATCH).await > 0 {
                crate::server::fault_points::pass("write_end_queued").await;
                let Some(cache) = cache.upgrade() else { return };
                // A failure is counted by the cache; the marks expire by themselves.
                let _ = cache.send_ends(&batch).await;
                batch.clear();
            }
        });
        Self { queue }
    }

    /// Queues `end`, or sends it now when the queue is full (or its task is gone).
    async fn send(&self, end: PendingEnd, cache: &shardgate_cache::RecordCache) {
        if let Err(refused) = self.queue.try_send(end) {
            let end = match refused {
                tokio::sync::mpsc::error::TrySendError::Full(end)
                | tokio::sync::mpsc::error::TrySendError::Closed(end) => end,
            };
            let _ = cache.send_ends(std::slice::from_ref(&end)).await;
        }
    }
}

fn log_generation_failure(e: &StoreError) {
    tracing::error!(
        error = %e,
        "cache invalidation failed and the cache generation could not be moved on: \
         other instances may serve the old value until its TTL"
    );
}
