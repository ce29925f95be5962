//! Usage and quotas in `/metrics`, per tier and never per tenant (a label per tenant would make a
//! series per tenant, without bound):
//!
//! - `tier_usage{tier, part}`: what the tenants of each tier store over the fleet (records,
//!   record bytes, blobs, blob bytes, index entries), and `tier_tenants_storing{tier}`: how many
//!   of them store anything. Read from every shard's kept usage
//!   ([`shardgate_shard_router::usage::every_tenant_usage`], one statement per shard) at most
//!   once per [`REFRESH`], in the background of a scrape, as the job metrics are: the fleet's
//!   numbers, the same on every instance (aggregate them with `max`). Shards that did not answer
//!   are left out of the read (`tier_usage_unreachable_shards` says how many).
//! - `quota_refusals_total{tier, quota}`: the writes this instance refused with 409
//!   `quota_exceeded`, by the quota they would have crossed (each instance its own: `sum` them).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use shardgate_shard_router::storage::usage::Usage;
use shardgate_shard_router::usage::audit::UsageAudit;
use shardgate_shard_router::usage::every_tenant_usage;
use shardgate_shard_router::{ShardRouter, TenantId, Tier};

use crate::wire::error::ApiError;

/// How old the tiers' usage may get before a scrape reads it again.
pub const REFRESH: Duration = Duration::from_secs(60);

/// The tiers, in the order they are shown.
const TIERS: [Tier; 3] = [Tier::Free, Tier::Standard, Tier::Premium];

/// Every quota a write can be refused by, as the problem names it.
const QUOTAS: [&str; 7] =
    ["records", "record_bytes", "blobs", "blob_bytes", "index_entries", "collections", "valet_bytes_per_day"];

/// The parts of usage shown per tier.
const PARTS: [&str; 5] = ["records", "record_bytes", "blobs", "blob_bytes", "index_entries"];

/// The writes refused for a quota on this instance, by tier and quota.
#[derive(Debug, Default)]
pub struct QuotaRefusals([[AtomicU64; QUOTAS.len()]; TIERS.len()]);

impl QuotaRefusals {
    /// Counts `error` if it is a `quota_exceeded` refusal of a write of `tenant` (of its tier in
    /// `router`'s map).
    pub fn observe(&self, router: &ShardRouter, tenant: &TenantId, error: &ApiError) {
        let Some(quota) = error.quota_name() else { return };
        let Some((tier, _)) = router.tenant_limits(tenant.as_str()) else { return };
        let (Some(t), Some(q)) = (TIERS.iter().position(|x| *x == tier), QUOTAS.iter().position(|x| *x == quota))
        else {
            return;
        };
        self.0[t][q].fetch_add(1, Ordering::Relaxed);
    }
}

/// The [`Collector`] of the usage and quota metrics.
#[derive(Debug)]
pub struct UsageMetrics {
    router: Arc<ShardRouter>,
    refusals: Arc<QuotaRefusals>,
    read: Arc<Mutex<TierUsage>>,
    audit: Arc<UsageAudit>,
}

/// The tiers' usage as last read.
#[derive(Debug, Default)]
struct TierUsage {
    /// When the last read began.
    read_at: Option<Instant>,
    /// Each tier's sum and how many of its tenants store anything; `None` until a read
    /// succeeded.
    tiers: Option<HashMap<Tier, (Usage, u64)>>,
    /// Shards the last read could not read.
    unreachable: usize,
}

impl UsageMetrics {
    /// Usage metrics of `router`'s fleet, the refusals counted in `refusals`, and what this
    /// instance's usage audits found.
    pub fn new(router: Arc<ShardRouter>, refusals: Arc<QuotaRefusals>, audit: Arc<UsageAudit>) -> Self {
        Self { router, refusals, read: Arc::default(), audit }
    }

    /// Starts a read of every tenant's usage in the background if the last one began
    /// [`REFRESH`] ago or more (and a runtime is there to run it).
    fn refresh_if_due(&self) {
        {
            let mut read = self.read.lock();
            if read.read_at.is_some_and(|at| at.elapsed() < REFRESH) {
                return;
            }
            read.read_at = Some(Instant::now());
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let (router, read) = (self.router.clone(), self.read.clone());
        runtime.spawn(async move {
            match every_tenant_usage(&router).await {
                Ok(fleet) => {
                    let mut tiers: HashMap<Tier, (Usage, u64)> = HashMap::new();
                    for (tenant, usage) in &fleet.tenants {
                        let Some((tier, _)) = router.tenant_limits(tenant.as_str()) else { continue };
                        let (sum, storing) = tiers.entry(tier).or_default();
                        sum.add(usage);
                        *storing += u64::from(!usage.is_empty());
                    }
                    let mut read = read.lock();
                    read.tiers = Some(tiers);
                    read.unreachable = fleet.unreachable.len();
                }
                Err(e) => tracing::warn!(error = %e, "cannot read the tenants' usage for /metrics"),
            }
        });
    }
}

/// The part `name` of `usage`.
fn part(usage: &Usage, name: &str) -> u64 {
    match name {
        "records" => usage.records,
        "record_bytes" => usage.record_bytes,
        "blobs" => usage.blobs,
        "blob_bytes" => usage.blob_bytes,
        _ => usage.index_entries,
    }
}

impl Collector for UsageMetrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        self.refresh_if_due();
        let (tiers, unreachable) = {
            let read = self.read.lock();
            (read.tiers.clone(), read.unreachable)
        };
        if let Some(tiers) = tiers {
            let gauge = |n: u64| ConstGauge::new(i64::try_from(n).unwrap_or(i64::MAX));
            let mut family = encoder.encode_descriptor(
                "tier_usage",
                "What the tenants of each tier store over the fleet, by part (records, record_bytes, blobs, \
                 blob_bytes, index_entries; read at most every 60 s)",
                None,
                MetricType::Gauge,
            )?;
            for tier in TIERS {
                let (usage, _) = tiers.get(&tier).copied().unwrap_or_default();
                for name in PARTS {
                    gauge(part(&usage, name))
                        .encode(family.encode_family(&[("tier", tier.as_str()), ("part", name)])?)?;
                }
            }
            let mut family = encoder.encode_descriptor(
                "tier_tenants_storing",
                "How many tenants of each tier store anything",
                None,
                MetricType::Gauge,
            )?;
            for tier in TIERS {
                let (_, storing) = tiers.get(&tier).copied().unwrap_or_default();
                gauge(storing).encode(family.encode_family(&[("tier", tier.as_str())])?)?;
            }
            let family = encoder.encode_descriptor(
                "tier_usage_unreachable_shards",
                "Shards the last read of the tiers' usage could not read (their parts are missing)",
                None,
                MetricType::Gauge,
            )?;
            gauge(unreachable as u64).encode(family)?;
        }
        let mut family = encoder.encode_descriptor(
            "quota_refusals",
            "Writes this instance refused with 409 quota_exceeded, by tier and the quota they would have crossed",
            None,
            MetricType::Counter,
        )?;
        for (t, tier) in TIERS.iter().enumerate() {
            for (q, quota) in QUOTAS.iter().enumerate() {
                let n = self.refusals.0[t][q].load(Ordering::Relaxed);
                ConstCounter::new(n).encode(family.encode_family(&[("tier", tier.as_str()), ("quota", *quota)])?)?;
            }
        }
        let counts = &self.audit.counts;
        for (name, help, count) in [
            ("usage_audit_runs", "Background usage audits this instance ran to their end", &counts.runs),
            (
                "usage_audit_disagreements",
                "Tenants and shards whose kept usage this instance's audits found disagreeing with the rows",
                &counts.disagreements,
            ),
            (
                "usage_audit_repairs",
                "Shards whose kept usage this instance's audits rewrote from the rows",
                &counts.repairs,
            ),
        ] {
            let family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            ConstCounter::new(count.load(Ordering::Relaxed)).encode(family)?;
        }
        Ok(())
    }
}
