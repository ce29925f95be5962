//! `/v1/admin/...`: the platform administration plane (scope `admin`).

pub mod audit_log;
pub mod balancer;
pub mod collections;
pub mod holdings;
pub mod index_audits;
pub mod instances;
pub mod jobs;
pub mod key_sets;
pub mod load;
pub mod moves;
pub mod rebalance;
pub mod request_health;
pub mod routing;
pub mod shards;
pub mod signing_keys;
pub mod tenants;
pub mod tiers;
pub mod usage;
pub mod usage_export;
