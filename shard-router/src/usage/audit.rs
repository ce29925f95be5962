//! The background usage audit: once every `usage.audit.interval`, one instance of the fleet
//! compares each shard's kept usage with what its rows add up to (the check of `shardgate check`,
//! [`crate::storage::usage::disagreements`], one snapshot per shard), one shard after another so
//! the scans never run at once. A disagreement is logged (at ERROR, naming the shard and tenant)
//! and counted; with `usage.audit.repair`, the shard's kept usage is rewritten from its rows
//! ([`crate::storage::usage::rewrite_usage`], holding its writers off for the rewrite) and
//! checked again.
//!
//! The run is claimed in the catalog (`usage_audits`, catalog migration 0025): its number is the
//! time divided by the interval, and the first instance to claim a number runs it, so the fleet
//! audits once per interval however many instances run. Its outcome is written to the same row.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::catalog::UsageAuditRow;
use crate::clock::Clock;
use crate::error::Error;
use crate::ids::ShardId;
use crate::map::ShardState;
use crate::router::ShardRouter;
use crate::storage::shard::FencedShard;
use crate::storage::usage::{disagreements, rewrite_usage};

/// How the background usage audit runs (`[usage.audit]`).
#[derive(Debug, Clone, Copy)]
pub struct AuditConfig {
    /// How often the fleet is audited; `None`: never.
    pub interval: Option<Duration>,
    /// Whether a shard found disagreeing has its kept usage rewritten from its rows.
    pub repair: bool,
}

/// What one audit found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditOutcome {
    /// The shards audited.
    pub shards: Vec<ShardId>,
    /// Shards offline, or whose audit failed (logged).
    pub skipped: Vec<ShardId>,
    /// Each tenant and shard whose kept usage disagreed with its rows.
    pub disagreements: Vec<(ShardId, String)>,
    /// The shards whose kept usage was rewritten (with `repair`) and agree now.
    pub repaired: Vec<ShardId>,
}

/// The audits this instance ran, for `/metrics`.
#[derive(Debug, Default)]
pub struct AuditCounts {
    /// Audits run to their end.
    pub runs: AtomicU64,
    /// Tenants and shards found disagreeing.
    pub disagreements: AtomicU64,
    /// Shards rewritten.
    pub repairs: AtomicU64,
}

/// Audits every shard that is not offline of `router`, one after another; with `repair`,
/// rewrites each disagreeing shard's kept usage and checks it again.
pub async fn audit_usage(router: &ShardRouter, repair: bool) -> AuditOutcome {
    let mut outcome = AuditOutcome::default();
    for (id, state, db) in router.shard_dbs() {
        if state == ShardState::Offline {
            outcome.skipped.push(id);
            continue;
        }
        let shard = FencedShard::new(&db, &id);
        let found = match disagreements(&shard).await {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(shard = %id, error = %e, "the usage audit could not read the shard");
                outcome.skipped.push(id);
                continue;
            }
        };
        for (tenant, kept, counted) in &found {
            tracing::error!(shard = %id, tenant, ?kept, ?counted, "a tenant's usage kept on a shard is not what its rows add up to");
            outcome.disagreements.push((id.clone(), tenant.clone()));
        }
        if repair && !found.is_empty() {
            let agrees = match rewrite_usage(&db, &id).await {
                Ok(_) => disagreements(&shard).await.map(|left| left.is_empty()),
                Err(e) => Err(e),
            };
            match agrees {
                Ok(true) => {
                    tracing::warn!(shard = %id, "the usage audit rewrote the shard's kept usage from its rows");
                    outcome.repaired.push(id.clone());
                }
                Ok(false) => tracing::error!(shard = %id, "the shard's kept usage still disagrees after its rewrite"),
                Err(e) => {
                    tracing::error!(shard = %id, error = %e, "the usage audit could not rewrite the shard's kept usage")
                }
            }
        }
        outcome.shards.push(id);
    }
    outcome
}

/// Runs the audit every interval, claimed once for the fleet.
#[derive(Debug)]
pub struct UsageAudit {
    router: Weak<ShardRouter>,
    config: AuditConfig,
    instance: String,
    clock: Arc<dyn Clock>,
    /// What this instance's audits found.
    pub counts: AuditCounts,
}

impl UsageAudit {
    /// The audit of `router`'s fleet as `instance`, its runs timed by `clock`.
    pub fn new(router: &Arc<ShardRouter>, config: AuditConfig, instance: String, clock: Arc<dyn Clock>) -> Arc<Self> {
        Arc::new(UsageAudit { router: Arc::downgrade(router), config, instance, clock, counts: AuditCounts::default() })
    }

    /// Runs the audit numbered by now, unless another instance claimed it: `Ok(None)` then, and
    /// when the audit is off.
    pub async fn run_due(&self) -> Result<Option<AuditOutcome>, Error> {
        let Some(interval) = self.config.interval else { return Ok(None) };
        let Some(router) = self.router.upgrade() else { return Ok(None) };
        let now = self.clock.now_ms();
        let width = i64::try_from(interval.as_millis()).unwrap_or(i64::MAX).max(1);
        let run = now.div_euclid(width);
        if !router.catalog().claim_usage_audit(run, &self.instance, now).await? {
            return Ok(None);
        }
        let outcome = audit_usage(&router, self.config.repair).await;
        let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        self.counts.runs.fetch_add(1, Ordering::Relaxed);
        self.counts.disagreements.fetch_add(count(outcome.disagreements.len()), Ordering::Relaxed);
        self.counts.repairs.fetch_add(count(outcome.repaired.len()), Ordering::Relaxed);
        let row = UsageAuditRow {
            run,
            instance: self.instance.clone(),
            started_ms: now,
            finished_ms: Some(self.clock.now_ms()),
            shards: count(outcome.shards.len()),
            disagreements: count(outcome.disagreements.len()),
            repaired: count(outcome.repaired.len()),
        };
        router.catalog().finish_usage_audit(&row).await?;
        Ok(Some(outcome))
    }

    /// Checks every minute (every interval, when shorter) whether an audit is due; ends when
    /// the audit is dropped. Nothing runs when the audit is off.
    pub fn spawn(self: &Arc<Self>) -> Option<tokio::task::JoinHandle<()>> {
        let every = self.config.interval?.min(Duration::from_secs(60));
        let audit = Arc::downgrade(self);
        Some(tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let Some(audit) = audit.upgrade() else { return };
                if let Err(e) = audit.run_due().await {
                    tracing::warn!(error = %e, "the usage audit could not run");
                }
            }
        }))
    }
}
