//! The load this instance put on each shard in `/metrics`, since it started, as its load meter
//! counted it (`shardgate_shard_router::storage::meter`): statements, rows, bytes, statement time
//! and failures, by shard and kind of work (`request`, `move`, `maintenance`); and what each
//! shard holds (bytes on disk, record rows), sampled once a minute; and its statements by how
//! long they took (`shard_statement_duration_seconds`, a histogram: a shard's p99 is read from
//! it). Labelled by shard and work only (bounded by the number of shards); vshards and tenants
//! are in `GET /v1/admin/load`. Also what the request-health windows lost: rows the catalog did
//! not take in time (`request_windows_dropped`) and requests beyond their tables
//! (`request_health_unplaced`).

use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use shardgate_shard_router::ShardRouter;
use shardgate_shard_router::balance::LoadFlusher;
use shardgate_shard_router::storage::holdings::ShardSize;
use shardgate_shard_router::storage::meter::{Counters, LATENCY_BOUNDS};

/// The [`Collector`] of shard load metrics: the router's meter, and the shard sizes its flusher
/// samples.
#[derive(Debug)]
pub struct ShardLoadMetrics(pub Arc<ShardRouter>, pub Option<LoadFlusher>);

/// A counter family split by a label: its name, help, label, and per label value how to read it.
type Split = (&'static str, &'static str, &'static str, [(&'static str, fn(&Counters) -> u64); 2]);

/// A gauge of each shard's size: its name, its help and how to read it.
type SizeGauge = (&'static str, &'static str, fn(&ShardSize) -> u64);

/// A counter family by shard and kind of work: its name, its help and how to read it.
type PerShard<V> = (&'static str, &'static str, fn(&Counters) -> V);

/// Encodes `counter` for every shard and kind of work of `totals`.
fn per_shard_and_work<V>(
    encoder: &mut DescriptorEncoder,
    (name, help, value): PerShard<V>,
    totals: &shardgate_shard_router::storage::meter::Totals,
) -> Result<(), std::fmt::Error>
where
    V: prometheus_client::encoding::EncodeCounterValue + std::fmt::Debug,
{
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (shard, work, counters) in totals {
        let labels = [("shard", shard.as_str()), ("work", work.as_str())];
        ConstCounter::new(value(counters)).encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

impl Collector for ShardLoadMetrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(meter) = self.0.pools().meter() else { return Ok(()) };
        let totals = meter.totals();
        let split: [Split; 3] = [
            (
                "shard_load_statements",
                "Statements this instance ran on each shard, by kind of work and whether they read or wrote",
                "kind",
                [("read", |c| c.reads), ("write", |c| c.writes)],
            ),
            (
                "shard_load_rows",
                "Rows this instance read from or wrote to each shard, by kind of work",
                "direction",
                [("read", |c| c.rows_read), ("written", |c| c.rows_written)],
            ),
            (
                "shard_load_bytes",
                "Bytes of record values and blob chunks this instance read from or wrote to each shard",
                "direction",
                [("read", |c| c.bytes_read), ("written", |c| c.bytes_written)],
            ),
        ];
        for (name, help, label, values) in split {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            for (shard, work, counters) in &totals {
                for (value, read) in values {
                    let labels = [("shard", shard.as_str()), ("work", work.as_str()), (label, value)];
                    ConstCounter::new(read(counters)).encode(family.encode_family(&labels)?)?;
                }
            }
        }
        let seconds: PerShard<f64> = (
            "shard_load_statement_seconds",
            "Time this instance's statements on each shard took, from start to answer (waiting for a connection included)",
            |c| c.statement_us as f64 / 1e6,
        );
        per_shard_and_work(&mut encoder, seconds, &totals)?;
        let errors: PerShard<u64> =
            ("shard_load_errors", "Statements on each shard that failed or were refused, by kind of work", |c| {
                c.errors
            });
        per_shard_and_work(&mut encoder, errors, &totals)?;
        let mut family = encoder.encode_descriptor(
            "shard_statement_duration_seconds",
            "Time each statement this instance ran on each shard took, from start to answer (waiting for a \
             connection included; a batch is one statement), by kind of work",
            None,
            MetricType::Histogram,
        )?;
        for (shard, work, latencies) in meter.latencies() {
            let mut cumulative = 0;
            let mut buckets: Vec<(f64, u64)> = LATENCY_BOUNDS
                .iter()
                .zip(&latencies.buckets)
                .map(|(bound, count)| {
                    cumulative += count;
                    (*bound, cumulative)
                })
                .collect();
            let count = cumulative + latencies.buckets[LATENCY_BOUNDS.len()];
            buckets.push((f64::INFINITY, count));
            let labels = [("shard", shard.as_str()), ("work", work.as_str())];
            family.encode_family(&labels)?.encode_histogram::<prometheus_client::encoding::NoLabelSet>(
                latencies.sum_us as f64 / 1e6,
                count,
                &buckets,
                None,
            )?;
        }
        let family = encoder.encode_descriptor(
            "load_windows_dropped",
            "Load windows dropped because the catalog did not take them for an hour",
            None,
            MetricType::Counter,
        )?;
        ConstCounter::new(meter.dropped_windows()).encode(family)?;
        if let Some(requests) = self.1.as_ref().map(LoadFlusher::request_meter) {
            let counters: [(&str, &str, u64); 2] = [
                (
                    "request_windows_dropped",
                    "Request-health rows dropped because the catalog did not take them in time",
                    requests.dropped_rows(),
                ),
                (
                    "request_health_unplaced",
                    "Requests not counted in the request-health windows: their route's or shard's table was full",
                    requests.unplaced(),
                ),
            ];
            for (name, help, value) in counters {
                let family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
                ConstCounter::new(value).encode(family)?;
            }
        }
        let sizes = self.1.as_ref().map(LoadFlusher::shard_sizes).unwrap_or_default();
        let gauges: [SizeGauge; 2] = [
            ("shard_bytes", "Each shard database's size on disk (sampled once a minute)", |s| s.bytes),
            (
                "shard_record_rows",
                "Rows of records on each shard, tombstones included (PostgreSQL's statistics, sampled once a minute)",
                |s| s.record_rows,
            ),
        ];
        for (name, help, value) in gauges {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for (shard, size) in &sizes {
                let value = i64::try_from(value(size)).unwrap_or(i64::MAX);
                ConstGauge::new(value).encode(family.encode_family(&[("shard", shard.as_str())])?)?;
            }
        }
        Ok(())
    }
}
