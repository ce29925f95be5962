//! The index metrics: entry statements run by look-ups per shard, stale entries repaired by
//! look-ups, and what the drift audit found. Registered into the registry the caller hands in,
//! so their names sit next to the caller's (`shardgate_index_*`).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use shardgate_shard_router::ShardId;

/// Labels of the per-shard look-up counter: registered shards only (a closed set).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ShardLabels {
    /// Shard id.
    pub shard: String,
}

/// The counters of the Index Table pattern.
#[derive(Debug, Clone, Default)]
pub struct IndexMetrics {
    /// Index entry statements run by look-ups, per shard.
    lookup_statements: Family<ShardLabels, Counter>,
    /// Stale index entries removed by look-ups.
    repairs: Counter,
    /// Index entries the drift audit found missing (and wrote).
    drift_missing: Counter,
    /// Index entries the drift audit found dangling (and removed).
    drift_dangling: Counter,
}

impl IndexMetrics {
    /// New counters, registered into `registry`.
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self::default();
        registry.register("index_repairs", "Stale index entries removed by look-ups", metrics.repairs.clone());
        registry.register("index_audit_missing", "Index entries the drift audit wrote", metrics.drift_missing.clone());
        registry.register(
            "index_audit_dangling",
            "Index entries the drift audit removed",
            metrics.drift_dangling.clone(),
        );
        registry.register(
            "index_entry_queries",
            "Index entry statements run by look-ups, per shard",
            metrics.lookup_statements.clone(),
        );
        metrics
    }

    /// The counter of index entry statements run by look-ups on `shard`.
    pub(crate) fn lookup_statements_on(&self, shard: &ShardId) -> Counter {
        self.lookup_statements.get_or_create(&ShardLabels { shard: shard.to_string() }).clone()
    }

    /// A look-up removed a stale entry.
    pub(crate) fn repaired(&self) {
        self.repairs.inc();
    }

    /// A drift audit wrote `missing` entries and removed `dangling` ones.
    pub(crate) fn drift_found(&self, missing: u64, dangling: u64) {
        self.drift_missing.inc_by(missing);
        self.drift_dangling.inc_by(dangling);
    }
}
