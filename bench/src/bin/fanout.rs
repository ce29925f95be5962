//! Listing a hash-distributed collection over 1, 2, 4, 8 and 16 PostgreSQL shards holding the
//! same total data: how the latency of a fan-out grows with the number of shards it reads.
//!
//! Run with `cargo run --release -p shardgate-bench --bin fanout` (PostgreSQL on 127.0.0.1:5432
//! and Redis on 127.0.0.1:6379). It reports; it never fails on a figure.
//!
//! For each shard count it creates a PostgreSQL catalog and that many shard databases (dropped
//! afterwards), starts a gateway in this process in the production configuration (Redis cache
//! and rate limits, limits raised so the limiter never refuses, fan-out admission raised above
//! the clients and no fan-out budget), creates tenant `wide` with collection `items` distributed `hash`, loads
//! `RECORDS` records of about 200 bytes, then runs `CLIENTS` clients listing pages of `LIMIT`
//! records from random start keys for `SECS` seconds. Reported per shard count: requests, p50
//! and p99 of a listing, and the p99 as a ratio of the one-shard p99 (the goal: at most
//! 1.5 at 16 shards).
//!
//! Settings: `RECORDS` (20000), `CLIENTS` (4), `SECS` (10), `LIMIT` (100), `SHARD_COUNTS`
//! (`1,2,4,8,16`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use shardgate_bench::{BenchResult, Gateway, load_records, mint, percentile};
use shardgate_gatekeeper::Scope;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// What one run measures.
struct Settings {
    records: usize,
    clients: usize,
    secs: u64,
    limit: usize,
}

#[tokio::main]
async fn main() -> BenchResult<()> {
    let env = |name: &str, default: usize| shardgate_bench::env_number(name, default);
    let settings = Settings {
        records: env("RECORDS", 20_000)?,
        clients: env("CLIENTS", 4)?,
        secs: env("SECS", 10)? as u64,
        limit: env("LIMIT", 100)?,
    };
    let counts: Vec<usize> = std::env::var("SHARD_COUNTS")
        .unwrap_or_else(|_| "1,2,4,8,16".to_owned())
        .split(',')
        .map(|n| n.trim().parse().map_err(|_| format!("SHARD_COUNTS must list whole numbers, got {n:?}")))
        .collect::<Result<_, _>>()?;
    println!(
        "{} records of ~200 bytes, {} clients, {} s per shard count, pages of {}",
        settings.records, settings.clients, settings.secs, settings.limit
    );
    println!("shards  requests  p50 ms  p99 ms  p99 / p99(first)");
    let mut first_p99 = None;
    for shards in counts {
        let tag = format!("sgbf_{}_{shards}", std::process::id());
        let clients = settings.clients;
        let gateway = Gateway::start(&tag, shards, |config| {
            config.limits.tenant_concurrent_fan_outs = clients.max(1) * 2;
            config.limits.tenant_fan_out_shard_reads_per_second = 0;
        })
        .await?;
        let outcome = run(&gateway.base, &settings).await;
        gateway.stop().await?;
        let (requests, mut latencies) = outcome?;
        latencies.sort_by(f64::total_cmp);
        let p99 = percentile(&latencies, 0.99);
        let first = *first_p99.get_or_insert(p99);
        println!("{shards:>6}  {requests:>8}  {:>6.2}  {p99:>6.2}  {:>6.2}", percentile(&latencies, 0.5), p99 / first);
    }
    Ok(())
}

/// One shard count: the number of listings and their latencies (ms).
async fn run(base: &str, settings: &Settings) -> BenchResult<(usize, Vec<f64>)> {
    let client = reqwest::Client::new();
    let base = base.to_owned();
    shardgate_bench::create_tenant(&client, &base, "wide").await?;
    shardgate_bench::distribute_hash(&client, &base, "wide", "items").await?;
    let token = mint("fanout-bench", Some("wide"), &[Scope::Read, Scope::Write])?;
    load_records(&client, &base, &token, ("wide", "items"), settings.records).await?;

    let stop = Arc::new(AtomicBool::new(false));
    let mut clients = tokio::task::JoinSet::new();
    for i in 0..settings.clients {
        let (client, base, token, stop) = (client.clone(), base.clone(), token.clone(), stop.clone());
        let (records, limit) = (settings.records.max(1) as u64, settings.limit);
        clients.spawn(async move {
            let mut latencies = Vec::new();
            let mut failed = 0usize;
            let mut seed = (i as u64 + 11).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            while !stop.load(Ordering::Relaxed) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let url = format!(
                    "{base}/v1/tenants/wide/collections/items/records?start=k{:06}&limit={limit}",
                    seed % records
                );
                let started = Instant::now();
                let ok = match client.get(&url).bearer_auth(&token).send().await {
                    Ok(response) if response.status() == 200 => response.bytes().await.is_ok(),
                    _ => false,
                };
                if ok {
                    latencies.push(started.elapsed().as_secs_f64() * 1000.0);
                } else {
                    failed += 1;
                }
            }
            (latencies, failed)
        });
    }
    tokio::time::sleep(Duration::from_secs(settings.secs)).await;
    stop.store(true, Ordering::Relaxed);
    let mut latencies = Vec::new();
    let mut failed = 0;
    while let Some(done) = clients.join_next().await {
        let (mine, mine_failed) = done?;
        latencies.extend(mine);
        failed += mine_failed;
    }
    if failed > 0 {
        return Err(format!("{failed} listings failed").into());
    }
    Ok((latencies.len(), latencies))
}
