//! A tenant flooding fan-out listings at 100 times its normal rate, and another tenant's point
//! reads: how much the flood raises the point reads' p99 (the goal: less than 10%).
//!
//! Run with `cargo run --release -p shardgate-bench --bin flood` (PostgreSQL on 127.0.0.1:5432
//! and Redis on 127.0.0.1:6379). It reports; it never fails on a figure.
//!
//! A gateway in this process in the production configuration (PostgreSQL catalog and `SHARDS`
//! shards, Redis cache and rate limits; the tiers' limits raised so only the fan-out admission
//! at its defaults, `limits.tenant_concurrent_fan_outs` and
//! `limits.tenant_fan_out_shard_reads_per_second`, stands between the flood and the others)
//! serves tenant `wide`, whose collection `items` of `RECORDS` records is distributed `hash`,
//! and tenant `quiet` with 1,000 records at home. Point reads of `quiet` arrive at `READ_RATE`
//! per second throughout (open loop: each at its time, whatever the answers before it). Each of
//! `ROUNDS` rounds has a calm phase, listings of `wide` (pages of 100 from a random key) at
//! `NORMAL_RATE` per second, then a flood phase at `FLOOD` times that rate, `SECS` seconds each.
//! Reported per round: the point reads' p50 and p99 in both phases and the ratio of the p99s,
//! and the listings served and refused (429 `fan_out_limit`) in the flood.
//!
//! Settings: `SHARDS` (4), `RECORDS` (20000), `READ_RATE` (400), `NORMAL_RATE` (5), `FLOOD`
//! (100), `SECS` (10), `ROUNDS` (3).

use std::time::{Duration, Instant};

use shardgate_bench::{BenchResult, Gateway, create_tenant, distribute_hash, load_records, mint, percentile};
use shardgate_gatekeeper::Scope;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// How one stream of requests fared.
#[derive(Debug, Default)]
struct Answers {
    /// Latencies (ms) of the successful ones.
    latencies: Vec<f64>,
    /// Refused with 429.
    refused: usize,
    /// Anything else.
    failed: usize,
}

#[tokio::main]
async fn main() -> BenchResult<()> {
    let env = |name: &str, default: u64| shardgate_bench::env_number(name, default);
    let (shards, records) = (env("SHARDS", 4)? as usize, env("RECORDS", 20_000)? as usize);
    let (read_rate, normal_rate, flood) = (env("READ_RATE", 400)?, env("NORMAL_RATE", 5)?, env("FLOOD", 100)?);
    let (secs, rounds) = (env("SECS", 10)?, env("ROUNDS", 3)?);
    let tag = format!("sgbfl_{}", std::process::id());
    let gateway = Gateway::start(&tag, shards, |_| {}).await?;
    let outcome = rounds_on(&gateway.base, records, [read_rate, normal_rate, normal_rate * flood], secs, rounds).await;
    gateway.stop().await?;
    outcome
}

async fn rounds_on(
    base: &str,
    records: usize,
    [reads, normal, flood]: [u64; 3],
    secs: u64,
    rounds: u64,
) -> BenchResult<()> {
    let client = reqwest::Client::new();
    create_tenant(&client, base, "wide").await?;
    distribute_hash(&client, base, "wide", "items").await?;
    create_tenant(&client, base, "quiet").await?;
    let wide = mint("flood-bench", Some("wide"), &[Scope::Read, Scope::Write])?;
    let quiet = mint("flood-bench", Some("quiet"), &[Scope::Read, Scope::Write])?;
    load_records(&client, base, &wide, ("wide", "items"), records).await?;
    load_records(&client, base, &quiet, ("quiet", "c"), 1_000).await?;
    println!(
        "{records} hash-distributed records, point reads at {reads}/s, listings at {normal}/s then {flood}/s, {secs} s per \
         phase"
    );
    println!("round  calm p50  calm p99  flood p50  flood p99  p99 ratio  listings served  refused");
    let phase = Duration::from_secs(secs);
    let mut ratios = Vec::new();
    for round in 1..=rounds {
        let mut p = Vec::new();
        let mut flood_listings = Answers::default();
        for rate in [normal, flood] {
            let point = stream(&client, &quiet, reads, phase, |n| {
                format!("{base}/v1/tenants/quiet/collections/c/records/k{:06}", n % 1_000)
            });
            let listings = stream(&client, &wide, rate, phase, |n| {
                let start = n.wrapping_mul(0x9E37_79B9_7F4A_7C15) % records.max(1) as u64;
                format!("{base}/v1/tenants/wide/collections/items/records?start=k{start:06}&limit=100")
            });
            let (mut point, listings) = tokio::join!(point, listings);
            if point.failed + point.refused > 0 {
                return Err(format!("{} point reads failed, {} refused", point.failed, point.refused).into());
            }
            point.latencies.sort_by(f64::total_cmp);
            p.push((percentile(&point.latencies, 0.5), percentile(&point.latencies, 0.99)));
            flood_listings = listings;
        }
        let ratio = p[1].1 / p[0].1;
        ratios.push(ratio);
        println!(
            "{round:>5}  {:>8.2}  {:>8.2}  {:>9.2}  {:>9.2}  {ratio:>9.2}  {:>15}  {:>7}",
            p[0].0,
            p[0].1,
            p[1].0,
            p[1].1,
            flood_listings.latencies.len(),
            flood_listings.refused + flood_listings.failed
        );
    }
    ratios.sort_by(f64::total_cmp);
    println!("median p99 ratio: {:.2}", percentile(&ratios, 0.5));
    Ok(())
}

/// Sends GETs of `url(n)` for n = 0, 1, ... at `rate` per second for `length`, each at its
/// time whatever the answers before it, and collects their answers.
async fn stream(
    client: &reqwest::Client,
    token: &str,
    rate: u64,
    length: Duration,
    url: impl Fn(u64) -> String,
) -> Answers {
    let period = Duration::from_secs_f64(1.0 / rate.max(1) as f64);
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let end = Instant::now() + length;
    let mut sent = tokio::task::JoinSet::new();
    let mut n = 0;
    while Instant::now() < end {
        ticks.tick().await;
        let request = client.get(url(n)).bearer_auth(token);
        n += 1;
        sent.spawn(async move {
            let started = Instant::now();
            match request.send().await {
                Ok(r) if r.status() == 200 => match r.bytes().await {
                    Ok(_) => Ok(started.elapsed().as_secs_f64() * 1000.0),
                    Err(_) => Err(false),
                },
                Ok(r) => Err(r.status() == 429),
                Err(_) => Err(false),
            }
        });
    }
    let mut answers = Answers::default();
    while let Some(done) = sent.join_next().await {
        match done {
            Ok(Ok(ms)) => answers.latencies.push(ms),
            Ok(Err(true)) => answers.refused += 1,
            Ok(Err(false)) | Err(_) => answers.failed += 1,
        }
    }
    answers
}
