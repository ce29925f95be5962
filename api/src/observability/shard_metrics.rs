//! The health of every shard database in `/metrics`, read at each scrape: its circuit breaker's
//! state, how often it opened, the statements in progress, refused and retried, the sizes of
//! the batches its point operations were sent in, the bounded reads its standbys and its primary
//! served (shards that read from standbys only), and its latency budget
//! (`storage.latency_budget`, for the latency alert to compare with). Labelled by
//! shard id (one series per registered shard: bounded). The catalog's breaker has its own two
//! families (`catalog_breaker_state`, `catalog_breaker_opens`).

use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use shardgate_shard_router::ShardRouter;
use shardgate_shard_router::batch::{BatchKind, SIZE_BUCKETS};
use shardgate_shard_router::config::StorageConfig;
use shardgate_shard_router::health::{BreakerState, HealthReport};

/// The [`Collector`] of shard health metrics.
#[derive(Debug)]
pub struct ShardHealthMetrics {
    /// The shards.
    pub router: Arc<ShardRouter>,
    /// Their latency budgets (`storage.latency_budget`, `storage.latency_budgets`).
    pub storage: StorageConfig,
}

/// A counter of [`HealthReport`]: its name, its help and how to read it.
type Counted = (&'static str, &'static str, fn(&HealthReport) -> u64);

const STATES: [BreakerState; 4] =
    [BreakerState::Closed, BreakerState::Open, BreakerState::HalfOpen, BreakerState::ForcedOpen];

impl Collector for ShardHealthMetrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let dbs = self.router.shard_dbs();
        let shards: Vec<(String, HealthReport)> =
            dbs.iter().map(|(id, _, db)| (id.to_string(), db.health().report())).collect();

        let mut family = encoder.encode_descriptor(
            "shard_breaker_state",
            "Circuit breaker state of each shard database on this instance (1 for the current state)",
            None,
            MetricType::Gauge,
        )?;
        for (shard, report) in &shards {
            for state in STATES {
                let labels = [("shard", shard.as_str()), ("state", state.as_str())];
                ConstGauge::new(i64::from(report.breaker == state)).encode(family.encode_family(&labels)?)?;
            }
        }

        let counters: [Counted; 4] = [
            ("shard_breaker_opens", "Times each shard database's circuit breaker opened", |r| r.opens),
            (
                "shard_statements_refused",
                "Statements refused at once because the shard's circuit breaker was open",
                |r| r.refused,
            ),
            (
                "shard_statements_shed",
                "Statements refused because too many were in progress on the shard (503 shard_busy)",
                |r| r.shed,
            ),
            ("shard_read_retries", "Reads retried on another connection after a broken one", |r| r.retries),
        ];
        for (name, help, value) in counters {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            for (shard, report) in &shards {
                ConstCounter::new(value(report)).encode(family.encode_family(&[("shard", shard.as_str())])?)?;
            }
        }

        // Only shards that read from their standbys have series (`storage.replica_reads`).
        let mut family = encoder.encode_descriptor(
            "shard_bounded_reads",
            "Bounded reads (x-shardgate-consistency: bounded, or a collection bounded by default) of each shard \
             that reads from its standbys, by what served them: standby; primary (no standby within the bound); \
             primary_after_standby_failed",
            None,
            MetricType::Counter,
        )?;
        for (id, _, db) in &dbs {
            let Some((standby, primary, fallbacks)) = db.standby_reads() else { continue };
            let shard = id.to_string();
            for (served_by, count) in
                [("standby", standby), ("primary", primary), ("primary_after_standby_failed", fallbacks)]
            {
                let labels = [("shard", shard.as_str()), ("served_by", served_by)];
                ConstCounter::new(count).encode(family.encode_family(&labels)?)?;
            }
        }

        let mut family = encoder.encode_descriptor(
            "shard_statements_in_progress",
            "Statements running or waiting for a connection on each shard database",
            None,
            MetricType::Gauge,
        )?;
        for (shard, report) in &shards {
            ConstGauge::new(i64::from(report.in_progress))
                .encode(family.encode_family(&[("shard", shard.as_str())])?)?;
        }

        let mut family = encoder.encode_descriptor(
            "shard_batch_size",
            "Operations per batch sent to each shard database, by kind of operation (read: point reads; \
             write: unconditional writes; conditional: conditional writes and deletes); a batch of 1 is an \
             operation that found its shard idle",
            None,
            MetricType::Histogram,
        )?;
        for (id, _, db) in &dbs {
            let shard = id.to_string();
            for kind in BatchKind::ALL {
                let (counts, sum) = db.batches().sizes(kind);
                let mut buckets: Vec<(f64, u64)> =
                    SIZE_BUCKETS.iter().zip(&counts).map(|(bound, count)| (*bound as f64, *count)).collect();
                buckets.push((f64::INFINITY, counts.last().copied().unwrap_or(0)));
                let labels = [("shard", shard.as_str()), ("kind", kind.as_str())];
                family.encode_family(&labels)?.encode_histogram::<prometheus_client::encoding::NoLabelSet>(
                    sum as f64,
                    counts.iter().sum(),
                    &buckets,
                    None,
                )?;
            }
        }

        let mut family = encoder.encode_descriptor(
            "shard_latency_budget_seconds",
            "The 99th-percentile statement latency each shard is to keep (storage.latency_budget, or its own \
             in storage.latency_budgets); the latency alert compares with it",
            None,
            MetricType::Gauge,
        )?;
        for (shard, _) in &shards {
            ConstGauge::new(self.storage.latency_budget_of(shard).as_secs_f64())
                .encode(family.encode_family(&[("shard", shard.as_str())])?)?;
        }

        let catalog = self.router.catalog().database().health().report();
        let mut family = encoder.encode_descriptor(
            "catalog_breaker_state",
            "Circuit breaker state of the catalog database on this instance (1 for the current state)",
            None,
            MetricType::Gauge,
        )?;
        for state in STATES {
            ConstGauge::new(i64::from(catalog.breaker == state))
                .encode(family.encode_family(&[("state", state.as_str())])?)?;
        }
        let family = encoder.encode_descriptor(
            "catalog_breaker_opens",
            "Times the catalog database's circuit breaker opened",
            None,
            MetricType::Counter,
        )?;
        ConstCounter::new(catalog.opens).encode(family)?;
        let family = encoder.encode_descriptor(
            "catalog_degraded",
            "1 while the catalog database's circuit breaker on this instance is not closed: the instance \
             serves on the shard map it holds and admin changes fail (it stays ready)",
            None,
            MetricType::Gauge,
        )?;
        ConstGauge::new(i64::from(catalog.breaker != BreakerState::Closed)).encode(family)?;
        Ok(())
    }
}
