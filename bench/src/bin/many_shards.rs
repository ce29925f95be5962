//! Point reads with 4, 16 and 64 shard databases on one PostgreSQL server, the same data in each
//! case: the connection budget (`storage.pool.max_connections_per_server`) gives 64 shards one
//! connection each, and the read throughput should stay flat (issue 12: within 15%).
//!
//! The gateway runs in this process on a PostgreSQL cluster of the bench's own
//! (`max_connections = 100`, a free loopback port); the catalog stays on the machine's server.
//! The record cache is off and rate limits are off, so every GET reads its shard. For each shard
//! count: 256 tenants spread by the hash, `KEYS` records in all (default 8,192), then GETs of
//! random records by `CONNECTIONS` concurrent clients (default 32) for `SECONDS` (default 10),
//! three rounds; it prints the median and the spread. `SHARDS=4,16` picks other shard counts and
//! `BUDGET=16` another connection budget (to tell the budget's effect from the shard count's).
//!
//! `cargo build --release -p shardgate-bench --bin many_shards && target/release/many_shards`
//! (as root: the cluster runs as `postgres`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::json;
use shardgate_tests::{Backend, PgCluster, TestApp, record_path};

fn env_number(name: &str, default: u64) -> u64 {
    shardgate_bench::env_number(name, default).unwrap_or_else(|e| panic!("{e}"))
}

/// Reads for `seconds` with `connections` clients; successful GETs per second.
async fn read_rate(app: &TestApp, tenants: &[String], keys_per_tenant: u64, connections: u64, seconds: u64) -> f64 {
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let clients = (0..connections).map(|c| {
        let (stop, done) = (stop.clone(), done.clone());
        let client = reqwest::Client::new();
        let urls: Vec<(String, String)> =
            tenants.iter().map(|t| (app.url(&record_path(t, "docs", "")), app.rw_token(t))).collect();
        tokio::spawn(async move {
            let mut n = c;
            while !stop.load(Ordering::Relaxed) {
                // A cheap spread over tenants and keys (no two clients in step).
                n = n.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                let (base, token) = &urls[(n >> 33) as usize % urls.len()];
                let key = (n >> 17) % keys_per_tenant;
                let ok = client
                    .get(format!("{base}k{key}"))
                    .bearer_auth(token)
                    .send()
                    .await
                    .is_ok_and(|r| r.status().is_success());
                if ok {
                    done.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
    });
    let clients: Vec<_> = clients.collect();
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    stop.store(true, Ordering::Relaxed);
    let elapsed = started.elapsed().as_secs_f64();
    for client in clients {
        let _ = client.await;
    }
    done.load(Ordering::Relaxed) as f64 / elapsed
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let keys = env_number("KEYS", 8_192);
    let connections = env_number("CONNECTIONS", 32);
    let seconds = env_number("SECONDS", 10);
    let budget = u32::try_from(env_number("BUDGET", 64)).unwrap_or(u32::MAX);
    let counts: Vec<u32> = std::env::var("SHARDS")
        .map(|list| list.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|_| vec![4, 16, 64]);
    let cluster = PgCluster::start_with_max_connections(100).await;
    let tenants: Vec<String> = (0..256).map(|i| format!("t{i}")).collect();
    let keys_per_tenant = (keys / tenants.len() as u64).max(1);
    let mut results = Vec::new();
    for shards in counts {
        let seeds = cluster.create_shards(&format!("n{shards}_s"), shards).await;
        let app = TestApp::spawn_with(Backend::Postgres, |config| {
            config.storage.shards = seeds;
            config.rate_limits.enabled = false;
            config.cache.enabled = false;
            config.storage.pool.max_connections_per_server = budget;
        })
        .await;
        for tenant in &tenants {
            app.create_tenant(tenant).await;
        }
        let writes = tenants.iter().flat_map(|t| (0..keys_per_tenant).map(move |k| (t, k)));
        futures::stream::iter(writes)
            .for_each_concurrent(32, |(tenant, key)| {
                let app = &app;
                async move {
                    let response = app.put_record(tenant, "docs", &format!("k{key}"), &json!({"k": key})).await;
                    assert!(response.status().is_success(), "seeding {tenant}/k{key}: {}", response.status());
                }
            })
            .await;
        let mut rounds = Vec::new();
        for _ in 0..3 {
            rounds.push(read_rate(&app, &tenants, keys_per_tenant, connections, seconds).await);
        }
        rounds.sort_by(f64::total_cmp);
        eprintln!("{shards} shards: {rounds:?} GET/s; {} connections open on the server", cluster.connections().await);
        results.push((shards, rounds));
    }
    let base = results[0].1[1];
    println!(
        "\n## Point reads by shard count on one server ({keys} records, {connections} clients, {seconds} s × 3)\n"
    );
    println!("| shards | GET/s, median (min–max) | ÷ 4 shards |");
    println!("| ---: | ---: | ---: |");
    for (shards, rounds) in &results {
        println!("| {shards} | {:.0} ({:.0}–{:.0}) | {:.2} |", rounds[1], rounds[0], rounds[2], rounds[1] / base);
    }
}
