//! Listing a hash-distributed collection over 1, 2, 4, 8 and 16 PostgreSQL shards holding the
//! same total data: how the latency of a fan-out grows with the number of shards it reads.
//!
//! Run with `cargo run --release -p shardgate-bench --bin fanout` (PostgreSQL on 127.0.0.1:5432
//! and Redis on 127.0.0.1:6379). It reports; it never fails on a figure.
//!
//! For each shard count it creates a PostgreSQL catalog and that many shard databases (dropped
//! afterwards), starts a gateway in this process in the production configuration (Redis cache
//! and rate limits, limits raised so the limiter never refuses, fan-out admission raised above
//! the clients and no fan-out budget), creates tenant `wide` with collection `items` distributed
//! `hash`, loads `RECORDS` records of about 200 bytes, vacuums and analyzes every database (so
//! that autovacuum's first pass over the load, once per database, does not fall into the
//! measurement), then lists pages of `LIMIT` records from random start keys for `SECS` seconds.
//! Reported per shard count: requests, p50 and p99 of a listing, the p99 as a ratio of the
//! one-shard p99 (the goal: at most 1.5 at 16 shards), and the machine's CPU time per listing
//! (every core's busy time during the measurement, from `/proc/stat`, divided by the listings
//! served: the databases', the gateway's and the load's, and anything else the machine ran).
//!
//! On this machine every shard database shares two cores with the gateway and the load, so a
//! plain run measures the cores more than the fan-out. Two settings make it measure
//! parallelism instead:
//! - `RTT_MS`: each shard is reached through its own [`DelayProxy`] that holds every chunk for
//!   half of this in each direction (an injected network round trip per shard, as a database
//!   on another machine would have; the catalog is reached directly). The round trip measured
//!   through a proxy (`SELECT 1`, median) is printed. Each shard then counts as its own database
//!   server for the connection budget, as it would be.
//! - `RATE`: requests per second sent open-loop (each at its time whether or not the ones before
//!   were answered, its latency counted from that time, paced by a thread of its own rather than
//!   by tokio's millisecond timer), instead of `CLIENTS` clients each waiting for its answer. A
//!   light rate keeps the machine far from busy.
//!
//! Settings: `RECORDS` (20000), `CLIENTS` (4), `RATE` (0: closed loop), `RTT_MS` (0), `SECS`
//! (10), `LIMIT` (100), `SHARD_COUNTS` (`1,2,4,8,16`). The measure:
//! `RTT_MS=2 RATE=20 cargo run --release -p shardgate-bench --bin fanout`, beside a plain run.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use secrecy::{ExposeSecret, SecretString};
use shardgate_bench::delay::{DelayLine, DelayProxy, median_round_trip};
use shardgate_bench::{BenchResult, Gateway, load_records, mint, percentile};
use shardgate_gatekeeper::Scope;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// What one run measures.
struct Settings {
    records: usize,
    clients: usize,
    /// Open-loop requests per second; 0 for `clients` closed-loop clients.
    rate: usize,
    /// Injected round trip per shard, in milliseconds.
    rtt_ms: u64,
    secs: u64,
    limit: usize,
}

#[tokio::main]
async fn main() -> BenchResult<()> {
    let env = |name: &str, default: usize| shardgate_bench::env_number(name, default);
    let settings = Settings {
        records: env("RECORDS", 20_000)?,
        clients: env("CLIENTS", 4)?,
        rate: env("RATE", 0)?,
        rtt_ms: env("RTT_MS", 0)? as u64,
        secs: env("SECS", 10)? as u64,
        limit: env("LIMIT", 100)?,
    };
    let counts: Vec<usize> = std::env::var("SHARD_COUNTS")
        .unwrap_or_else(|_| "1,2,4,8,16".to_owned())
        .split(',')
        .map(|n| n.trim().parse().map_err(|_| format!("SHARD_COUNTS must list whole numbers, got {n:?}")))
        .collect::<Result<_, _>>()?;
    let load = match settings.rate {
        0 => format!("{} clients", settings.clients),
        rate => format!("{rate} requests/s open-loop"),
    };
    println!(
        "{} records of ~200 bytes, {load}, {} s per shard count, pages of {}, injected round trip per shard {} ms",
        settings.records, settings.secs, settings.limit, settings.rtt_ms
    );
    println!("shards  requests  p50 ms  p99 ms  p99 / p99(first)  CPU ms / listing");
    let mut first_p99 = None;
    for shards in counts {
        let tag = format!("sgbf_{}_{shards}", std::process::id());
        let admitted = if settings.rate > 0 { 1024 } else { settings.clients.max(1) * 2 };
        let mut proxies = Vec::new();
        if settings.rtt_ms > 0 {
            let line = DelayLine::start();
            for _ in 0..shards {
                let upstream = "127.0.0.1:5432".parse()?;
                proxies.push(DelayProxy::start(upstream, Duration::from_micros(settings.rtt_ms * 500), &line).await?);
            }
            let through = format!("postgres://postgres@{}/postgres", proxies[0].addr);
            println!("        a statement's round trip through a proxy: {:?}", median_round_trip(&through).await?);
        }
        let gateway = Gateway::start(&tag, shards, |config| {
            config.limits.tenant_concurrent_fan_outs = admitted;
            config.limits.tenant_fan_out_shard_reads_per_second = 0;
            for (seed, proxy) in config.storage.shards.iter_mut().zip(&proxies) {
                let url = seed.url.expose_secret().replace("127.0.0.1:5432", &proxy.addr.to_string());
                seed.url = SecretString::from(url);
            }
        })
        .await?;
        let outcome = run(&gateway, &settings).await;
        gateway.stop().await?;
        drop(proxies);
        let (requests, mut latencies, busy_ms) = outcome?;
        latencies.sort_by(f64::total_cmp);
        let p99 = percentile(&latencies, 0.99);
        let first = *first_p99.get_or_insert(p99);
        let cpu = busy_ms.map_or_else(|| "-".to_owned(), |ms| format!("{:.2}", ms as f64 / requests.max(1) as f64));
        println!(
            "{shards:>6}  {requests:>8}  {:>6.2}  {p99:>6.2}  {:>16.2}  {cpu:>16}",
            percentile(&latencies, 0.5),
            p99 / first
        );
    }
    Ok(())
}

/// One shard count: the number of listings, their latencies (ms), and the machine's busy CPU
/// time while they were measured (ms; `None` without `/proc/stat`).
async fn run(gateway: &Gateway, settings: &Settings) -> BenchResult<(usize, Vec<f64>, Option<u64>)> {
    let client = reqwest::Client::new();
    let base = gateway.base.clone();
    shardgate_bench::create_tenant(&client, &base, "wide").await?;
    shardgate_bench::distribute_hash(&client, &base, "wide", "items").await?;
    let token = mint("fanout-bench", Some("wide"), &[Scope::Read, Scope::Write])?;
    load_records(&client, &base, &token, ("wide", "items"), settings.records).await?;
    gateway.settle().await?;

    let busy_before = busy_cpu_ms();
    let (requests, latencies) = if settings.rate > 0 {
        open_loop(&client, &base, &token, settings).await?
    } else {
        closed_loop(&client, &base, &token, settings).await?
    };
    let busy = busy_cpu_ms().zip(busy_before).map(|(after, before)| after.saturating_sub(before));
    Ok((requests, latencies, busy))
}

/// `settings.clients` clients, each sending its next listing when the one before was answered,
/// for `settings.secs` seconds: the number of listings and their latencies (ms).
async fn closed_loop(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    settings: &Settings,
) -> BenchResult<(usize, Vec<f64>)> {
    let stop = Arc::new(AtomicBool::new(false));
    let mut clients = tokio::task::JoinSet::new();
    for i in 0..settings.clients {
        let (client, base, token, stop) = (client.clone(), base.to_owned(), token.to_owned(), stop.clone());
        let (records, limit) = (settings.records.max(1) as u64, settings.limit);
        clients.spawn(async move {
            let mut latencies = Vec::new();
            let mut failed = 0usize;
            let mut seed = (i as u64 + 11).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            while !stop.load(Ordering::Relaxed) {
                let url = listing_url(&base, &mut seed, records, limit);
                let started = Instant::now();
                if list(&client, &url, &token).await {
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

/// `settings.rate` listings a second for `settings.secs` seconds, each sent at its time whether
/// or not the ones before were answered; its latency counts from that time (so a slow answer
/// is never hidden by the requests it delayed).
async fn open_loop(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    settings: &Settings,
) -> BenchResult<(usize, Vec<f64>)> {
    let interval = Duration::from_secs_f64(1.0 / settings.rate as f64);
    let total = settings.rate * settings.secs as usize;
    let mut ticks = pacer(interval, total);
    let mut requests = tokio::task::JoinSet::new();
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    while let Some(at) = ticks.recv().await {
        let url = listing_url(base, &mut seed, settings.records.max(1) as u64, settings.limit);
        let (client, token) = (client.clone(), token.to_owned());
        requests.spawn(async move { list(&client, &url, &token).await.then(|| at.elapsed().as_secs_f64() * 1000.0) });
    }
    let mut latencies = Vec::with_capacity(total);
    let mut failed = 0;
    while let Some(done) = requests.join_next().await {
        match done? {
            Some(ms) => latencies.push(ms),
            None => failed += 1,
        }
    }
    if failed > 0 {
        return Err(format!("{failed} listings failed").into());
    }
    Ok((latencies.len(), latencies))
}

/// `total` ticks, `interval` apart from now, each sent at its time by a thread of its own and
/// carrying that time. Tokio's timer rounds a sleep up to its next millisecond tick: paced by
/// it, each request left up to a millisecond late, and that lateness was counted in its latency.
fn pacer(interval: Duration, total: usize) -> tokio::sync::mpsc::UnboundedReceiver<Instant> {
    let (tick, ticks) = tokio::sync::mpsc::unbounded_channel();
    let start = Instant::now();
    std::thread::spawn(move || {
        for n in 0..total {
            let at = start + interval * n as u32;
            if let Some(wait) = at.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            if tick.send(at).is_err() {
                return;
            }
        }
    });
    ticks
}

/// Every core's busy time since boot (user, nice, system, irq, softirq and steal; not idle or
/// iowait), in ms, from the first line of `/proc/stat`; `None` where it cannot be read. Its unit
/// is `USER_HZ`, which Linux fixes at 100 a second for user space.
fn busy_cpu_ms() -> Option<u64> {
    busy_ms(&std::fs::read_to_string("/proc/stat").ok()?)
}

/// The busy time in ms that the `/proc/stat` text `stat` gives for all cores.
fn busy_ms(stat: &str) -> Option<u64> {
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    let ticks: Vec<u64> = line.split_whitespace().take(8).map(|n| n.parse().ok()).collect::<Option<_>>()?;
    if ticks.len() < 8 {
        return None;
    }
    let busy: u64 = ticks.iter().enumerate().filter(|(i, _)| *i != 3 && *i != 4).map(|(_, n)| n).sum();
    Some(busy * 10)
}

/// The URL of a listing of `wide`'s `items` from a random start key (`seed` advances, xorshift)
/// among `records`, `limit` records long.
fn listing_url(base: &str, seed: &mut u64, records: u64, limit: usize) -> String {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    format!("{base}/v1/tenants/wide/collections/items/records?start=k{:06}&limit={limit}", *seed % records)
}

/// Sends one listing and reads its body; whether it was answered 200.
async fn list(client: &reqwest::Client, url: &str, token: &str) -> bool {
    match client.get(url).bearer_auth(token).send().await {
        Ok(response) if response.status() == 200 => response.bytes().await.is_ok(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::busy_ms;

    #[test]
    fn busy_time_counts_every_state_but_idle_and_iowait() {
        // user nice system idle iowait irq softirq steal guest guest_nice
        let stat = "cpu  100 2 30 5000 40 1 7 0 0 0\ncpu0 50 1 15 2500 20 0 3 0 0 0\n";
        assert_eq!(busy_ms(stat), Some((100 + 2 + 30 + 1 + 7) * 10));
        assert_eq!(busy_ms("cpu0 1 2 3 4 5 6 7 8\n"), None, "the first line must be the sum of all cores");
        assert_eq!(busy_ms("cpu  1 2 3\n"), None, "a line too short to hold every state");
        assert_eq!(busy_ms(""), None);
    }
}
