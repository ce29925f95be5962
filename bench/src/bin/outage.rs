//! Outage drill: how a sick shard is detected, fails fast and recovers, and what the other
//! tenants feel meanwhile. Measured under a bounded load, on PostgreSQL shards.
//!
//! The gateway runs in this process (as in the HTTP tests) with its catalog and three shards on
//! the machine's PostgreSQL and `shard-3` on a PostgreSQL cluster of the drill's own (a free
//! loopback port). Tenant `sick` lives on `shard-3`, tenant `well` on `shard-0`. Each sends GETs
//! at a fixed rate (`RATE` per second each, default 100) while the drill kills the cluster
//! (`kill -9`), restarts it, freezes it (SIGSTOP of every process) and thaws it. It prints:
//!
//! - detection time: from the fault to the breaker being open (polled every 5 ms);
//! - fast-fail latency: `sick`'s requests while the breaker is open (p50, p99, max);
//! - recovery time: from the cluster being back to `sick`'s first 200;
//! - `well`'s p50 / p99 and errors before, during and after each outage.
//!
//! `cargo run --release -p shardgate-bench --bin outage` (root: the cluster runs as `postgres`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use reqwest::{Method, StatusCode};
use secrecy::SecretString;
use serde_json::json;
use shardgate_tests::{Backend, PgCluster, TestApp, record_path};

/// A fault done to the cluster, or its cure.
type ClusterStep = fn(&PgCluster);

/// One answered request.
#[derive(Debug, Clone, Copy)]
struct Sample {
    at: Instant,
    latency: Duration,
    ok: bool,
}

/// Sends GETs for `tenant` at `rate` per second until `stop`, recording each.
fn load(
    app: &TestApp,
    tenant: &'static str,
    rate: u64,
    samples: Arc<Mutex<Vec<Sample>>>,
    stop: Arc<AtomicBool>,
) -> tokio::task::JoinHandle<()> {
    let client = reqwest::Client::builder().timeout(Duration::from_secs(40)).build().unwrap();
    let url = app.url(&record_path(tenant, "docs", "d1"));
    let token = app.rw_token(tenant);
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(Duration::from_micros(1_000_000 / rate.max(1)));
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        while !stop.load(Ordering::Relaxed) {
            ticks.tick().await;
            let (client, url, token, samples) = (client.clone(), url.clone(), token.clone(), samples.clone());
            // Each request on its own task: a slow answer does not slow the rate down.
            tokio::spawn(async move {
                let at = Instant::now();
                let ok = client.get(url).bearer_auth(token).send().await.is_ok_and(|r| r.status() == StatusCode::OK);
                samples.lock().push(Sample { at, latency: at.elapsed(), ok });
            });
        }
    })
}

/// `p`-th percentile (0..=100) of latencies in milliseconds.
fn percentile(latencies: &mut [Duration], p: f64) -> f64 {
    if latencies.is_empty() {
        return f64::NAN;
    }
    latencies.sort();
    let index = ((p / 100.0) * (latencies.len() - 1) as f64).round() as usize;
    latencies[index].as_secs_f64() * 1000.0
}

/// `(count, errors, p50, p99, max)` of the samples sent within `[from, to)`.
fn summary(samples: &[Sample], from: Instant, to: Instant, ok_only: Option<bool>) -> (usize, usize, f64, f64, f64) {
    let window: Vec<&Sample> = samples.iter().filter(|s| s.at >= from && s.at < to).collect();
    let errors = window.iter().filter(|s| !s.ok).count();
    let mut latencies: Vec<Duration> =
        window.iter().filter(|s| ok_only.is_none_or(|ok| s.ok == ok)).map(|s| s.latency).collect();
    let max = latencies.iter().max().map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0);
    (window.len(), errors, percentile(&mut latencies, 50.0), percentile(&mut latencies, 99.0), max)
}

/// Polls `shard-3`'s breaker until it is `state`; the time it took.
async fn until_breaker(app: &TestApp, state: &str, within: Duration) -> Option<Duration> {
    let started = Instant::now();
    while started.elapsed() < within {
        let response = app.admin(Method::GET, "/v1/admin/shards/shard-3", None).await;
        if let Ok(body) = response.json::<serde_json::Value>().await
            && body["breaker"]["state"] == state
        {
            return Some(started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    None
}

/// The first moment after `from` at which a `sick` request sent then succeeded.
fn first_ok_after(samples: &[Sample], from: Instant) -> Option<Duration> {
    samples.iter().filter(|s| s.at >= from && s.ok).map(|s| s.at.duration_since(from)).min()
}

fn ms(d: Option<Duration>) -> String {
    d.map_or_else(|| "never".to_owned(), |d| format!("{:.0} ms", d.as_secs_f64() * 1000.0))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let rate: u64 = std::env::var("RATE").ok().and_then(|r| r.parse().ok()).unwrap_or(100);
    let phase = Duration::from_secs(std::env::var("PHASE_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(4));
    let cluster = PgCluster::start().await;
    let url = cluster.create_database("outage_shard").await;
    let app = TestApp::spawn_with(Backend::Postgres, |config| {
        let seed = config.storage.shards.iter_mut().find(|s| s.id.as_str() == "shard-3").expect("shard-3 is seeded");
        seed.url = SecretString::from(url);
        // The drill measures the breaker, not the tenants' rate limits.
        config.rate_limits.enabled = false;
    })
    .await;
    app.create_tenant_with(&json!({"id": "sick", "shard": "shard-3"})).await;
    app.create_tenant_with(&json!({"id": "well", "shard": "shard-0"})).await;
    for tenant in ["sick", "well"] {
        let response = app.put_record(tenant, "docs", "d1", &json!({"n": 1})).await;
        assert!(response.status().is_success(), "seeding {tenant}: {}", response.status());
    }

    let (sick, well) = (Arc::new(Mutex::new(Vec::new())), Arc::new(Mutex::new(Vec::new())));
    let stop = Arc::new(AtomicBool::new(false));
    let loads =
        [load(&app, "sick", rate, sick.clone(), stop.clone()), load(&app, "well", rate, well.clone(), stop.clone())];

    let mut rows = Vec::new();
    let mut details = Vec::new();
    // Each fault by name, with the cluster's methods that strike and cure it.
    let faults: [(&str, ClusterStep, ClusterStep); 2] =
        [("kill -9", PgCluster::kill, PgCluster::restart), ("SIGSTOP", PgCluster::freeze, PgCluster::thaw)];
    for (fault, strike, cure) in faults {
        let before = Instant::now();
        tokio::time::sleep(phase).await;
        let fault_at = Instant::now();
        strike(&cluster);
        let detection = until_breaker(&app, "open", Duration::from_secs(20)).await;
        tokio::time::sleep(phase).await;
        let cure_at = Instant::now();
        cure(&cluster);
        let cured = Instant::now();
        until_breaker(&app, "closed", Duration::from_secs(20)).await;
        tokio::time::sleep(phase).await;
        let end = Instant::now();
        tokio::time::sleep(Duration::from_secs(1)).await; // let the last answers arrive

        let (sick_samples, well_samples) = (sick.lock().clone(), well.lock().clone());
        let open_from = fault_at + detection.unwrap_or(Duration::ZERO);
        let (n, _, p50, p99, max) = summary(&sick_samples, open_from, cure_at, Some(false));
        details.push(format!(
            "| {fault} | {} | {p50:.1} / {p99:.1} / {max:.1} ({n} requests) | {} (cluster back after {:.0} ms) |",
            ms(detection),
            ms(first_ok_after(&sick_samples, cured)),
            cured.duration_since(cure_at).as_secs_f64() * 1000.0,
        ));
        for (name, from, to) in [("before", before, fault_at), ("during", fault_at, cured), ("after", cured, end)] {
            let (n, errors, p50, p99, _) = summary(&well_samples, from, to, None);
            rows.push(format!("| {fault} | {name} | {n} | {errors} | {p50:.1} | {p99:.1} |"));
        }
    }
    stop.store(true, Ordering::Relaxed);
    for load in loads {
        let _ = load.await;
    }

    println!("\n## Outage drill ({rate} GET/s per tenant, {} s phases)\n", phase.as_secs());
    println!(
        "| fault | detection (to breaker open) | sick's fast-fail latency p50 / p99 / max, ms | recovery (to sick's first 200) |"
    );
    println!("| --- | ---: | ---: | ---: |");
    for line in details {
        println!("{line}");
    }
    println!("\n| fault | phase | well's requests | errors | p50 ms | p99 ms |");
    println!("| --- | --- | ---: | ---: | ---: | ---: |");
    for line in rows {
        println!("{line}");
    }
}
