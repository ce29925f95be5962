//! The balancer on a skewed fleet: four PostgreSQL shards, one of which holds `HOT` of the busy
//! tenants while each other one holds `COOL`, every tenant sent the same traffic; what the
//! balancer does about it in `apply` mode, and what the tenants see meanwhile.
//!
//! Run with `cargo run --release -p shardgate-bench --bin balancing` (PostgreSQL on
//! 127.0.0.1:5432 and Redis on 127.0.0.1:6379). It reports; it never fails on a figure.
//!
//! A gateway in this process in the production configuration (Redis record cache and rate limits,
//! limits raised so the limiter runs but never refuses), with 1 s load windows, the balancer
//! running every `INTERVAL_SECS` over `WINDOW_SECS`, `off` at first. `CLIENTS` clients, each on one
//! tenant (round robin), send half `PUT`s and half `GET`s of 100 keys, the cache off so that
//! every request reaches its shard. After `BEFORE_SECS` the balancer is switched to `apply`; the
//! bench waits until three runs in a row find the fleet balanced (at most `MAX_SECS`), then keeps
//! the traffic going `AFTER_SECS` more.
//!
//! Reported: each shard's request load (statement ms per second) over the last window before
//! the switch, and over the last window after the balancing; the moves made (what, from, to,
//! how long each job ran, the balancer's reason); and the p99 of the tenants that stayed on the
//! hot shard (its neighbours), before the switch, while moves ran, and after.
//!
//! Settings: `HOT` (8), `COOL` (2), `CLIENTS` (16), `BEFORE_SECS` (25), `MAX_SECS` (120),
//! `AFTER_SECS` (25), `WINDOW_SECS` (20), `INTERVAL_SECS` (2).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::{Value, json};
use shardgate_bench::{BenchResult, Gateway, create_tenant, env_number, mint, percentile};
use shardgate_gatekeeper::Scope;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// One answered request: whose, when it was sent, how long it took (ms).
type Sample = (usize, Instant, f64);

struct Admin {
    client: reqwest::Client,
    base: String,
    token: String,
}

impl Admin {
    async fn send(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> BenchResult<Value> {
        let mut request = self.client.request(method, format!("{}{path}", self.base)).bearer_auth(&self.token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let answer = request.send().await?;
        let status = answer.status();
        let body: Value = answer.json().await?;
        if !status.is_success() {
            return Err(format!("{path}: {status} {body}").into());
        }
        Ok(body)
    }

    async fn get(&self, path: &str) -> BenchResult<Value> {
        self.send(reqwest::Method::GET, path, None).await
    }
}

#[tokio::main]
async fn main() -> BenchResult<()> {
    let env = |name: &str, default: u64| env_number(name, default);
    let (hot, cool, clients) = (env("HOT", 8)? as usize, env("COOL", 2)? as usize, env("CLIENTS", 16)? as usize);
    let secs = |name: &str, default: u64| env(name, default).map(Duration::from_secs);
    let (before, max, after) = (secs("BEFORE_SECS", 25)?, secs("MAX_SECS", 120)?, secs("AFTER_SECS", 25)?);
    let (window, interval) = (secs("WINDOW_SECS", 20)?, secs("INTERVAL_SECS", 2)?);
    let tag = format!("sgbb_{}", std::process::id());
    let gateway = Gateway::start(&tag, 4, |config| {
        config.cache.enabled = false;
        config.storage.load.window = Duration::from_secs(1);
        config.balancer.window = window;
        config.balancer.interval = interval;
        config.storage.moves.cleanup_grace = Duration::from_secs(1);
    })
    .await?;
    let outcome = run(&gateway.base, (hot, cool, clients), (before, max, after, window)).await;
    gateway.stop().await?;
    outcome
}

async fn run(
    base: &str,
    (hot, cool, clients): (usize, usize, usize),
    (before, max, after, window): (Duration, Duration, Duration, Duration),
) -> BenchResult<()> {
    let admin =
        Admin { client: reqwest::Client::new(), base: base.to_owned(), token: mint("bench", None, &[Scope::Admin])? };
    // Tenants placed by their vshards (one each): `hot` on the first shard, `cool` on the others.
    let map = admin.get("/v1/admin/shard-map").await?;
    let shards: Vec<String> = map["shards"]
        .as_array()
        .ok_or("no shards")?
        .iter()
        .filter_map(|s| s["id"].as_str().map(str::to_owned))
        .collect();
    let wanted: Vec<usize> = (0..shards.len()).map(|i| if i == 0 { hot } else { cool }).collect();
    let mut placed: Vec<Vec<String>> = vec![Vec::new(); shards.len()];
    let mut vshards = HashSet::new();
    for i in 0..5000 {
        if placed.iter().zip(&wanted).all(|(p, n)| p.len() == *n) {
            break;
        }
        let tenant = format!("t{i}");
        create_tenant(&admin.client, base, &tenant).await?;
        let route = admin.get(&format!("/v1/admin/route?tenant={tenant}")).await?;
        let at = shards.iter().position(|s| route["shard"] == s.as_str()).ok_or("a shard of the map")?;
        if placed[at].len() < wanted[at] && vshards.insert(route["vshard"].as_u64()) {
            placed[at].push(tenant);
        }
    }
    let tenants: Vec<String> = placed.iter().flatten().cloned().collect();
    println!(
        "tenants: {}",
        placed.iter().zip(&shards).map(|(t, s)| format!("{s}: {}", t.len())).collect::<Vec<_>>().join(", ")
    );

    let stop = Arc::new(AtomicBool::new(false));
    let samples: Arc<Mutex<Vec<Sample>>> = Arc::default();
    let mut workers = Vec::new();
    for id in 0..clients {
        let tenant = id % tenants.len();
        let name = tenants[tenant].clone();
        let token = mint("bench", Some(&name), &[Scope::Read, Scope::Write])?;
        let (stop, samples, client) = (stop.clone(), samples.clone(), reqwest::Client::new());
        let prefix = format!("{base}/v1/tenants/{name}/collections/c/records");
        workers.push(tokio::spawn(async move {
            let mut n = id as u64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let url = format!("{prefix}/k{}", n % 100);
                let sent = Instant::now();
                let answer = if n.is_multiple_of(2) {
                    client.put(&url).bearer_auth(&token).json(&json!({"n": n})).send().await
                } else {
                    client.get(&url).bearer_auth(&token).send().await
                };
                if answer.is_ok_and(|a| a.status().is_success() || a.status() == reqwest::StatusCode::NOT_FOUND) {
                    samples.lock().push((tenant, sent, sent.elapsed().as_secs_f64() * 1000.0));
                }
            }
        }));
    }

    tokio::time::sleep(before).await;
    let plan_path = format!("/v1/admin/balancer/plan?window={}s", window.as_secs());
    let load_before = admin.get(&plan_path).await?;
    let switched = Instant::now();
    admin.send(reqwest::Method::PUT, "/v1/admin/balancer/mode", Some(json!({"mode": "apply"}))).await?;
    // While the balancer works: which of its jobs run when.
    let mut running: BTreeMap<String, (Instant, Option<Instant>)> = BTreeMap::new();
    let mut converged = None;
    while switched.elapsed() < max {
        let status = admin.get("/v1/admin/balancer?limit=200").await?;
        let runs = status["runs"].as_array().ok_or("runs")?;
        for run in runs.iter().filter(|r| r["outcome"] == "started") {
            let Some(job) = run["job"].as_str() else { continue };
            let seen = running.entry(job.to_owned()).or_insert((Instant::now(), None));
            if seen.1.is_none() && admin.get(&format!("/v1/admin/jobs/{job}")).await?["state"] != "running" {
                seen.1 = Some(Instant::now());
            }
        }
        let settled = runs.len() >= 3 && runs[..3].iter().all(|r| r["outcome"] == "balanced");
        if settled && !running.is_empty() && running.values().all(|(_, end)| end.is_some()) {
            converged = Some(switched.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let balanced_at = Instant::now();
    tokio::time::sleep(after).await;
    let load_after = admin.get(&plan_path).await?;
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        worker.await?;
    }
    let status = admin.get("/v1/admin/balancer?limit=200").await?;

    // The report.
    let loads = |plan: &Value| -> Vec<String> {
        plan["shards"]
            .as_array()
            .map(|s| {
                s.iter()
                    .map(|s| {
                        format!(
                            "{} {:.0}",
                            s["shard"].as_str().unwrap_or("?"),
                            s["statement_ms_per_s"].as_f64().unwrap_or(0.0)
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    println!("load before (statement ms/s over {}s): {}", window.as_secs(), loads(&load_before).join(", "));
    println!("load after:                        {}", loads(&load_after).join(", "));
    match converged {
        Some(took) => println!("balanced {:.1}s after the switch to apply", took.as_secs_f64()),
        None => println!("not balanced within {}s", max.as_secs()),
    }
    let mut moved_tenants = HashSet::new();
    let runs = status["runs"].as_array().cloned().unwrap_or_default();
    println!("moves: {}", runs.iter().filter(|r| r["outcome"] == "started").count());
    for run in runs.iter().rev().filter(|r| r["outcome"] == "started") {
        let job = run["job"].as_str().unwrap_or_default();
        let took = running.get(job).and_then(|(start, end)| end.map(|e| e.duration_since(*start).as_secs_f64()));
        let m = &run["move"];
        println!(
            "  {} {} {} -> {} ({}): {}",
            m["kind"].as_str().unwrap_or("?"),
            m["vshard"].as_u64().map_or_else(|| m["tenant"].as_str().unwrap_or("?").to_owned(), |v| v.to_string()),
            m["from"].as_str().unwrap_or("?"),
            m["to"].as_str().unwrap_or("?"),
            took.map_or("still running".to_owned(), |t| format!("{t:.1}s")),
            run["reason"].as_str().unwrap_or_default()
        );
        if let Some(v) = m["vshard"].as_u64() {
            for tenant in &placed[0] {
                let route = admin.get(&format!("/v1/admin/route?tenant={tenant}")).await?;
                if route["vshard"].as_u64() == Some(v) {
                    moved_tenants.insert(tenant.clone());
                }
            }
        }
        if let Some(t) = m["tenant"].as_str() {
            moved_tenants.insert(t.to_owned());
        }
    }
    // The neighbours: the hot shard's tenants that stayed.
    let neighbours: HashSet<usize> = (0..placed[0].len()).filter(|i| !moved_tenants.contains(&tenants[*i])).collect();
    let samples = samples.lock().clone();
    let moving = |at: Instant| running.values().any(|(start, end)| at >= *start && end.is_none_or(|e| at <= e));
    let p99 = |keep: &dyn Fn(&Sample) -> bool| {
        let mut ms: Vec<f64> = samples.iter().filter(|s| neighbours.contains(&s.0) && keep(s)).map(|s| s.2).collect();
        ms.sort_by(f64::total_cmp);
        (percentile(&ms, 0.99), ms.len())
    };
    let (p_before, n_before) = p99(&|s| s.1 < switched);
    let (p_during, n_during) = p99(&|s| moving(s.1));
    let (p_after, n_after) = p99(&|s| s.1 > balanced_at);
    println!("neighbours on the hot shard (tenants that stayed): {}", neighbours.len());
    println!("  p99 before: {p_before:.1} ms ({n_before} requests)");
    println!("  p99 while moves ran: {p_during:.1} ms ({n_during} requests), {:.2}x before", p_during / p_before);
    println!("  p99 after: {p_after:.1} ms ({n_after} requests), {:.2}x before", p_after / p_before);
    Ok(())
}
