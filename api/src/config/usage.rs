//! The sections of what a tenant may keep and what it used: `[quotas]` (each tier's quotas, which
//! the admin API may override live) and `[usage]` (the daily usage kept for billing, and the
//! background audit of the shards' kept usage).

use serde::{Deserialize, Serialize};
use shardgate_shard_router::usage::quotas::{Quotas, TierQuotas};

/// The `[quotas]` section: the most a tenant may keep (the usage `GET /v1/tenants/{tenant}/usage`
/// shows), by its tier. A write that would take a tenant over one of its quotas is refused; one
/// that shrinks its usage never is.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct QuotasConfig {
    /// Quotas per tenant tier (`free`, `standard`, `premium`). A tier not listed keeps its
    /// defaults; a tier listed has exactly the quotas its table sets. Quotas a tier is given
    /// through the admin API (`PUT /v1/admin/tiers/{tier}/quotas`) win over these on every
    /// instance until they are removed (`DELETE`), and a tenant's own quotas (admin API) win
    /// over its tier's.
    pub tiers: QuotaTiers,
}

impl QuotasConfig {
    /// Each tier's configured quotas, its defaults where the section lists none.
    pub fn tier_quotas(&self) -> TierQuotas {
        let or = |set: Option<Quotas>, default: Quotas| set.unwrap_or(default);
        let defaults = TierQuotas::DEFAULT;
        let tiers = &self.tiers;
        TierQuotas {
            free: or(tiers.free, defaults.free),
            standard: or(tiers.standard, defaults.standard),
            premium: or(tiers.premium, defaults.premium),
        }
    }
}

/// The quotas of each tier (`quotas.tiers`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct QuotaTiers {
    /// A `free` tenant's quotas. Default (unset): 1000000 records of 1073741824 bytes (1 GiB),
    /// 100000 blobs of 10737418240 bytes (10 GiB), 5000000 index entries, 100 collections,
    /// 10737418240 bytes (10 GiB) through valet URLs a day.
    pub free: Option<Quotas>,
    /// A `standard` tenant's quotas. Default (unset): unlimited.
    pub standard: Option<Quotas>,
    /// A `premium` tenant's quotas. Default (unset): unlimited.
    pub premium: Option<Quotas>,
}

/// The `[usage]` section: the daily usage kept for billing, per tenant and UTC day (storage
/// byte-hours, requests, bytes received and sent, valet bytes), exported by
/// `GET /v1/admin/usage?day=`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct UsageConfig {
    /// How often this instance adds the requests and bytes it counted to the catalog (and
    /// takes the hour's storage sample, if no instance has). What an instance counted since its
    /// last flush is lost if it is killed. At least 100 ms. Default 10 s.
    #[serde(with = "shardgate_shard_router::db::humantime_serde")]
    pub flush_interval: std::time::Duration,
    /// How many UTC days of usage are kept, today included; older days are deleted. At least 1.
    /// Default 400.
    pub retention_days: u32,
    /// The background audit of each shard's kept usage against its rows.
    pub audit: UsageAuditConfig,
}

impl Default for UsageConfig {
    fn default() -> Self {
        Self {
            flush_interval: std::time::Duration::from_secs(10),
            retention_days: 400,
            audit: UsageAuditConfig::default(),
        }
    }
}

/// The `[usage.audit]` section: once an interval, one instance of the fleet compares each
/// shard's kept usage (what quotas and the usage endpoints read) with what its rows add up to,
/// one shard after another (each a scan of its live rows), and logs and counts a disagreement
/// (`shardgate_usage_audit_disagreements_total`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct UsageAuditConfig {
    /// How often the fleet is audited; `0s` turns the audit off. At least 1 s otherwise.
    /// Default 24 h.
    #[serde(with = "shardgate_shard_router::db::humantime_serde")]
    pub interval: std::time::Duration,
    /// Rewrite a disagreeing shard's kept usage from its rows (as `shardgate check
    /// --repair-usage` does, holding the shard's writers off while it does), then check again.
    /// Default `false`: report only.
    pub repair: bool,
}

impl Default for UsageAuditConfig {
    fn default() -> Self {
        Self { interval: std::time::Duration::from_secs(24 * 3600), repair: false }
    }
}

impl UsageConfig {
    /// What is wrong with it, if anything.
    pub fn validate(&self) -> Result<(), String> {
        if self.flush_interval < std::time::Duration::from_millis(100) {
            return Err("usage.flush_interval must be at least 100ms".into());
        }
        if self.retention_days == 0 {
            return Err("usage.retention_days must be at least 1".into());
        }
        if !self.audit.interval.is_zero() && self.audit.interval < std::time::Duration::from_secs(1) {
            return Err("usage.audit.interval must be 0s (off) or at least 1s".into());
        }
        Ok(())
    }

    /// As the usage audit takes it.
    pub fn audit(&self) -> shardgate_shard_router::usage::audit::AuditConfig {
        shardgate_shard_router::usage::audit::AuditConfig {
            interval: (!self.audit.interval.is_zero()).then_some(self.audit.interval),
            repair: self.audit.repair,
        }
    }

    /// As the usage keeper takes it.
    pub fn daily(&self) -> shardgate_shard_router::usage::daily::DailyConfig {
        shardgate_shard_router::usage::daily::DailyConfig {
            flush_interval: self.flush_interval,
            retention_days: self.retention_days,
        }
    }
}
