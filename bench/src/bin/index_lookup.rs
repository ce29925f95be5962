//! Secondary index look-up against a full scan: finding one record by its e-mail address among
//! 100,000 records on 8 SQLite shards, through the HTTP API.
//!
//! Run with `cargo run --release -p shardgate-bench --bin index_lookup`. It reports; it never
//! fails on a figure (the exit status is non-zero only when a step broke or an answer was wrong).
//!
//! It starts a gateway in this process (port 0, a temporary data directory, 8 SQLite shard files,
//! the HS256 issuer of `tests/src/lib.rs`, rate limits raised to 10^9/s so the limiter runs but
//! never refuses), creates `TENANTS` tenants pinned round-robin to the 8 shards (checked with
//! `GET /v1/admin/route`), loads `RECORDS` records `{"email", "town", "n"}` into collection
//! `users` with `LOAD_WORKERS` concurrent `PUT`s, then defines the unique index `by-email` on
//! `/email` in every tenant and waits for its backfill. It then times, sequentially and with
//! `CONCURRENCY` workers:
//!
//! - **index look-up**: `GET .../indexes/by-email/records?value=<email>`, checking that exactly the
//!   expected record comes back and that `x-index-shards` is `1`;
//! - **tenant scan**: what a client without the index must do when it knows the tenant: page
//!   through the tenant's whole collection (`?limit=1000&cursor=...`) and filter by e-mail;
//! - **scan of all tenants**: the same when the tenant is unknown: every tenant's collection (so
//!   every shard), the tenants scanned concurrently (one stream per shard).
//!
//! Targets are drawn uniformly (deterministic xorshift) over all records. Settings from the
//! environment: `RECORDS` (100000), `TENANTS` (8), `LOOKUPS` (20000), `TENANT_SCANS` (200),
//! `ALL_SCANS` (40), `CONCURRENCY` (8), `LOAD_WORKERS` (16).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use secrecy::SecretString;
use serde::Deserialize;
use shardgate_api::config::LogConfig;
use shardgate_api::{Application, Config};
use shardgate_gatekeeper::throttle::RateLimit;
use shardgate_gatekeeper::{IssuerConfig, Scope, Scopes, TokenRequest, mint_token};
use shardgate_shard_router::ShardId;
use shardgate_shard_router::router::ShardSeed;
use tokio::task::JoinSet;

/// The same allocator as the `shardgate` binary, so the in-process gateway allocates as it does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const SHARDS: usize = 8;
const TOWNS: usize = 50;
const COLLECTION: &str = "users";
const INDEX: &str = "by-email";
/// The largest page a listing gives (`limits.max_list_limit`).
const PAGE: u32 = 1000;
const ISSUER: &str = "bench";
const SECRET: &str = "shardgate-bench-hs256-secret-not-for-production-use";

type BenchError = Box<dyn std::error::Error + Send + Sync>;
type BenchResult<T> = Result<T, BenchError>;

/// Settings from the environment.
#[derive(Debug, Clone, Copy)]
struct Settings {
    records: usize,
    tenants: usize,
    lookups: usize,
    tenant_scans: usize,
    all_scans: usize,
    concurrency: usize,
    load_workers: usize,
}

fn env_number(name: &str, default: usize) -> BenchResult<usize> {
    Ok(shardgate_bench::env_number(name, default)?)
}

impl Settings {
    fn from_env() -> BenchResult<Self> {
        let settings = Self {
            records: env_number("RECORDS", 100_000)?,
            tenants: env_number("TENANTS", SHARDS)?,
            lookups: env_number("LOOKUPS", 20_000)?.max(1),
            tenant_scans: env_number("TENANT_SCANS", 200)?.max(1),
            all_scans: env_number("ALL_SCANS", 40)?.max(1),
            concurrency: env_number("CONCURRENCY", 8)?.max(1),
            load_workers: env_number("LOAD_WORKERS", 16)?.max(1),
        };
        if settings.tenants < SHARDS || settings.records < settings.tenants {
            return Err(format!("need TENANTS >= {SHARDS} and RECORDS >= TENANTS").into());
        }
        Ok(settings)
    }

    /// Records of tenant `t` (the remainder goes to the first tenants).
    fn records_of(&self, t: usize) -> usize {
        self.records / self.tenants + usize::from(t < self.records % self.tenants)
    }
}

/// One tenant of the data set.
#[derive(Debug)]
struct Tenant {
    id: String,
    shard: String,
    records: usize,
    /// Scopes read, write and manage.
    token: String,
}

/// The running gateway and what the client needs to call it.
#[derive(Debug)]
struct Bench {
    base: String,
    client: reqwest::Client,
    admin: String,
    tenants: Vec<Tenant>,
    total_records: usize,
}

/// A record to find: tenant index and record number within it.
#[derive(Debug, Clone, Copy)]
struct Target {
    tenant: usize,
    n: usize,
}

fn record_key(n: usize) -> String {
    format!("u-{n:06}")
}

fn email(tenant: usize, n: usize) -> String {
    format!("user{n}@t{tenant}.example")
}

fn mint(tenant: Option<&str>, scopes: &[Scope]) -> BenchResult<String> {
    let request = TokenRequest {
        issuer: ISSUER.into(),
        subject: "index-lookup-bench".into(),
        tenant: tenant.map(str::to_owned),
        scopes: Scopes::of(scopes),
        ttl: Duration::from_secs(24 * 3600),
    };
    Ok(mint_token(&SecretString::from(SECRET), &request)?)
}

/// The configuration: port 0, 8 SQLite shards in `dir`, the HS256 bench issuer, limits raised.
fn gateway_config(dir: &std::path::Path) -> BenchResult<Config> {
    let mut config = Config { listen: "127.0.0.1:0".parse()?, data_dir: dir.to_path_buf(), ..Config::default() };
    for i in 0..SHARDS {
        let path = dir.join("shards").join(format!("shard-{i}.db"));
        config.storage.shards.push(ShardSeed {
            id: ShardId::parse(&format!("shard-{i}"))?,
            url: SecretString::from(format!("sqlite://{}", path.display())),
            password_file: None,
        });
    }
    std::fs::create_dir_all(dir.join("shards"))?;
    config.auth.issuers =
        vec![IssuerConfig { allow_any_audience: true, ..IssuerConfig::hs256(ISSUER, SecretString::from(SECRET)) }];
    // The limiter still runs on every request; it never refuses one.
    let unlimited = RateLimit { per_second: 1_000_000_000, burst: 1_000_000_000 };
    for tier in ["free", "standard", "premium"] {
        config.rate_limits.tiers.insert(tier.to_owned(), unlimited);
    }
    config.rate_limits.anonymous = unlimited;
    config.log = LogConfig { filter: "warn".to_owned(), ..LogConfig::default() };
    Ok(config)
}

/// Reads a response's body, failing with its status and text unless the status is `expected`.
async fn expect_status(response: reqwest::Response, expected: u16, what: &str) -> BenchResult<bytes::Bytes> {
    let status = response.status();
    let body = response.bytes().await?;
    if status.as_u16() != expected {
        return Err(format!("{what}: HTTP {status}: {}", String::from_utf8_lossy(&body)).into());
    }
    Ok(body)
}

#[derive(Debug, Deserialize)]
struct User {
    email: String,
}

#[derive(Debug, Deserialize)]
struct Item {
    key: String,
    value: User,
}

#[derive(Debug, Deserialize)]
struct Page {
    items: Vec<Item>,
    next_cursor: Option<String>,
}

#[derive(Debug, Deserialize)]
struct RouteExplanation {
    shard: String,
    strategy: String,
}

#[derive(Debug, Deserialize)]
struct ShardStat {
    id: String,
    records: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct ShardList {
    items: Vec<ShardStat>,
}

#[derive(Debug, Deserialize)]
struct IndexInfo {
    state: String,
}

impl Bench {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn records_url(&self, tenant: &Tenant) -> String {
        self.url(&format!("/v1/tenants/{}/collections/{COLLECTION}/records", tenant.id))
    }

    fn index_url(&self, tenant: &Tenant) -> String {
        self.url(&format!("/v1/tenants/{}/collections/{COLLECTION}/indexes/{INDEX}", tenant.id))
    }
}

/// Creates the tenants, pinned round-robin to the shards, and checks where each one routes.
async fn create_tenants(
    base: &str,
    client: &reqwest::Client,
    admin: &str,
    settings: &Settings,
) -> BenchResult<Vec<Tenant>> {
    let mut tenants = Vec::with_capacity(settings.tenants);
    for t in 0..settings.tenants {
        let id = format!("t{t}");
        let pin = format!("shard-{}", t % SHARDS);
        let response = client
            .post(format!("{base}/v1/admin/tenants"))
            .bearer_auth(admin)
            .json(&serde_json::json!({ "id": id, "shard": pin }))
            .send()
            .await?;
        expect_status(response, 201, "create tenant").await?;
        let response =
            client.get(format!("{base}/v1/admin/route")).query(&[("tenant", &id)]).bearer_auth(admin).send().await?;
        let route: RouteExplanation = serde_json::from_slice(&expect_status(response, 200, "route").await?)?;
        if route.shard != pin {
            return Err(format!("tenant {id} routes to {} ({}), not to {pin}", route.shard, route.strategy).into());
        }
        let token = mint(Some(&id), &[Scope::Read, Scope::Write, Scope::Manage])?;
        tenants.push(Tenant { id, shard: route.shard, records: settings.records_of(t), token });
    }
    Ok(tenants)
}

/// `PUT`s every record, `workers` requests in flight.
async fn load_records(bench: &Arc<Bench>, workers: usize) -> BenchResult<()> {
    let jobs: Arc<Vec<Target>> = Arc::new(
        (0..bench.tenants.len())
            .flat_map(|tenant| (0..bench.tenants[tenant].records).map(move |n| Target { tenant, n }))
            .collect(),
    );
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = JoinSet::new();
    for _ in 0..workers {
        let (bench, jobs, next) = (bench.clone(), jobs.clone(), next.clone());
        tasks.spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&Target { tenant, n }) = jobs.get(i) else { return Ok::<_, BenchError>(()) };
                let owner = &bench.tenants[tenant];
                let value = serde_json::json!({
                    "email": email(tenant, n),
                    "town": format!("town-{:02}", n % TOWNS),
                    "n": n,
                });
                let response = bench
                    .client
                    .put(format!("{}/{}", bench.records_url(owner), record_key(n)))
                    .bearer_auth(&owner.token)
                    .json(&value)
                    .send()
                    .await?;
                expect_status(response, 201, "put record").await?;
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    Ok(())
}

/// Defines the unique index on `/email` in every tenant and waits until each is `active`;
/// returns how long that took.
async fn create_indexes(bench: &Bench) -> BenchResult<Duration> {
    let started = Instant::now();
    for tenant in &bench.tenants {
        let response = bench
            .client
            .put(bench.index_url(tenant))
            .bearer_auth(&tenant.token)
            .json(&serde_json::json!({ "field": "/email", "unique": true }))
            .send()
            .await?;
        expect_status(response, 201, "create index").await?;
    }
    for tenant in &bench.tenants {
        loop {
            let response = bench.client.get(bench.index_url(tenant)).bearer_auth(&tenant.token).send().await?;
            let info: IndexInfo = serde_json::from_slice(&expect_status(response, 200, "get index").await?)?;
            match info.state.as_str() {
                "active" => break,
                "building" => tokio::time::sleep(Duration::from_millis(100)).await,
                other => return Err(format!("index of {} is {other:?}", tenant.id).into()),
            }
            if started.elapsed() > Duration::from_secs(1800) {
                return Err("the backfills did not finish within 30 min".into());
            }
        }
    }
    Ok(started.elapsed())
}

/// What to time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operation {
    /// One index look-up.
    Lookup,
    /// A scan of the target's tenant's collection.
    TenantScan,
    /// A scan of every tenant's collection, the tenants concurrently.
    AllScan,
}

impl Operation {
    fn label(self) -> &'static str {
        match self {
            Operation::Lookup => "index look-up",
            Operation::TenantScan => "full scan, tenant known",
            Operation::AllScan => "full scan, all tenants (8 shards)",
        }
    }
}

/// One index look-up; checks the answer. Returns the HTTP requests made (1).
async fn lookup(bench: &Bench, target: Target) -> BenchResult<usize> {
    let tenant = &bench.tenants[target.tenant];
    let wanted = email(target.tenant, target.n);
    let response = bench
        .client
        .get(format!("{}/records", bench.index_url(tenant)))
        .query(&[("value", &wanted)])
        .bearer_auth(&tenant.token)
        .send()
        .await?;
    let shards = response.headers().get("x-index-shards").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let page: Page = serde_json::from_slice(&expect_status(response, 200, "index look-up").await?)?;
    if shards != "1" {
        return Err(format!("look-up of {wanted}: x-index-shards is {shards:?}, not \"1\"").into());
    }
    match page.items.as_slice() {
        [item] if item.value.email == wanted && item.key == record_key(target.n) => Ok(1),
        items => Err(format!("look-up of {wanted} returned {} items: {items:?}", items.len()).into()),
    }
}

/// Pages through one tenant's whole collection and counts the records holding `wanted`.
/// Returns `(HTTP requests, records seen, matches)`.
async fn scan_tenant(bench: &Bench, tenant: &Tenant, wanted: &str) -> BenchResult<(usize, usize, usize)> {
    let (mut requests, mut seen, mut matches) = (0, 0, 0);
    let mut cursor: Option<String> = None;
    loop {
        let mut request = bench.client.get(bench.records_url(tenant)).bearer_auth(&tenant.token);
        request = match &cursor {
            Some(cursor) => request.query(&[("limit", PAGE.to_string().as_str()), ("cursor", cursor)]),
            None => request.query(&[("limit", PAGE)]),
        };
        let page: Page = serde_json::from_slice(&expect_status(request.send().await?, 200, "list records").await?)?;
        requests += 1;
        seen += page.items.len();
        matches += page.items.iter().filter(|item| item.value.email == wanted).count();
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok((requests, seen, matches)),
        }
    }
}

/// One timed operation; checks that a scan saw every record and found the target exactly once.
/// Returns the HTTP requests made.
async fn run(bench: &Bench, operation: Operation, target: Target) -> BenchResult<usize> {
    let wanted = email(target.tenant, target.n);
    let (requests, seen, matches, expected) = match operation {
        Operation::Lookup => return lookup(bench, target).await,
        Operation::TenantScan => {
            let tenant = &bench.tenants[target.tenant];
            let (requests, seen, matches) = scan_tenant(bench, tenant, &wanted).await?;
            (requests, seen, matches, tenant.records)
        }
        Operation::AllScan => {
            let scans = futures::future::try_join_all(bench.tenants.iter().map(|t| scan_tenant(bench, t, &wanted)));
            let totals = scans.await?.into_iter().fold((0, 0, 0), |a, b| (a.0 + b.0, a.1 + b.1, a.2 + b.2));
            (totals.0, totals.1, totals.2, bench.total_records)
        }
    };
    if seen != expected || matches != 1 {
        return Err(format!("{}: saw {seen} of {expected} records, {matches} matches", operation.label()).into());
    }
    Ok(requests)
}

/// Deterministic pseudo-random targets (xorshift), uniform over all records.
fn targets(bench: &Bench, count: usize, seed: u64) -> Vec<Target> {
    let mut x = seed | 1;
    (0..count)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut i = (x % bench.total_records as u64) as usize;
            let mut tenant = 0;
            while i >= bench.tenants[tenant].records {
                i -= bench.tenants[tenant].records;
                tenant += 1;
            }
            Target { tenant, n: i }
        })
        .collect()
}

/// CPU jiffies (USER_HZ, 100 per second on Linux) used by the whole machine and by this process.
fn cpu_jiffies() -> (u64, u64) {
    let machine = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|text| {
            let fields: Vec<u64> =
                text.lines().next()?.split_whitespace().skip(1).filter_map(|f| f.parse().ok()).collect();
            // user nice system idle iowait irq softirq steal: busy = all but idle and iowait.
            Some(fields.iter().take(8).enumerate().filter(|(i, _)| *i != 3 && *i != 4).map(|(_, v)| v).sum())
        })
        .unwrap_or(0);
    let own = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|text| {
            let after_name = text.rsplit_once(')')?.1;
            let fields: Vec<&str> = after_name.split_whitespace().collect();
            // Fields 14 and 15 of the file (utime, stime) are 12 and 13 after the name.
            Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
        })
        .unwrap_or(0);
    (machine, own)
}

/// Other activity that skews the figures: compiler, cargo and test-runner processes (`rustc`,
/// `cargo`, `cargo-nextest`, `clippy-driver`, `cc1`), the load-test scripts of `bench/` and the
/// load generators they start, as `name×count` (`none` when there is none).
fn other_activity() -> String {
    const SCRIPTS: [&str; 4] = ["valet.sh", "fairness.sh", "run.sh", "blob_memory.sh"];
    const PROGRAMS: [&str; 6] = ["wrk", "pgbench", "redis-benchmark", "blob_fetch", "ceiling", "shardgate"];
    let Ok(entries) = std::fs::read_dir("/proc") else { return "?".to_owned() };
    let mut names = std::collections::BTreeMap::<String, usize>::new();
    for entry in entries.filter_map(Result::ok) {
        if !entry.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(comm) = std::fs::read_to_string(entry.path().join("comm")) else { continue };
        let comm = comm.trim();
        let command = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let script = command
            .split(|&b| b == 0)
            .filter_map(|arg| std::path::Path::new(std::str::from_utf8(arg).ok()?).file_name()?.to_str())
            .find(|name| SCRIPTS.contains(name));
        let compiler =
            comm.starts_with("rustc") || comm.starts_with("cargo") || comm.starts_with("clippy") || comm == "cc1";
        if let Some(script) = script {
            *names.entry(script.to_owned()).or_default() += 1;
        } else if compiler || PROGRAMS.contains(&comm) {
            *names.entry(comm.to_owned()).or_default() += 1;
        }
    }
    let listed: Vec<String> = names.iter().map(|(name, n)| format!("{name}×{n}")).collect();
    if listed.is_empty() { "none".to_owned() } else { listed.join(" ") }
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| text.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".to_owned())
}

/// The timings of one row.
#[derive(Debug)]
struct Sample {
    operation: Operation,
    concurrency: usize,
    latencies: Vec<Duration>,
    requests: usize,
    wall: Duration,
    own_cpu: f64,
    other_cpu: f64,
    activity: (String, String),
}

impl Sample {
    /// Nearest-rank percentile in ms.
    fn percentile(&self, p: f64) -> f64 {
        let rank = ((self.latencies.len() as f64 * p / 100.0).ceil() as usize).clamp(1, self.latencies.len());
        self.latencies[rank - 1].as_secs_f64() * 1e3
    }

    fn mean(&self) -> f64 {
        self.latencies.iter().map(Duration::as_secs_f64).sum::<f64>() / self.latencies.len() as f64 * 1e3
    }

    fn per_second(&self) -> f64 {
        self.latencies.len() as f64 / self.wall.as_secs_f64()
    }
}

/// Runs `operation` on every target, `concurrency` at a time, after a short untimed warm-up.
async fn measure(
    bench: &Arc<Bench>,
    operation: Operation,
    concurrency: usize,
    targets: Vec<Target>,
) -> BenchResult<Sample> {
    let warm_up = match operation {
        Operation::Lookup => 100,
        Operation::TenantScan => 4,
        Operation::AllScan => 1,
    };
    for &target in targets.iter().take(warm_up) {
        run(bench, operation, target).await?;
    }
    let targets = Arc::new(targets);
    let next = Arc::new(AtomicUsize::new(0));
    let (machine_before, own_before) = cpu_jiffies();
    let activity_before = other_activity();
    let started = Instant::now();
    let mut tasks = JoinSet::new();
    for _ in 0..concurrency {
        let (bench, targets, next) = (bench.clone(), targets.clone(), next.clone());
        tasks.spawn(async move {
            let (mut latencies, mut requests) = (Vec::new(), 0);
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&target) = targets.get(i) else { return Ok::<_, BenchError>((latencies, requests)) };
                let began = Instant::now();
                requests += run(&bench, operation, target).await?;
                latencies.push(began.elapsed());
            }
        });
    }
    let (mut latencies, mut requests) = (Vec::with_capacity(targets.len()), 0);
    while let Some(done) = tasks.join_next().await {
        let (l, r) = done??;
        latencies.extend(l);
        requests += r;
    }
    let wall = started.elapsed();
    let (machine_after, own_after) = cpu_jiffies();
    let own = own_after.saturating_sub(own_before) as f64;
    let other = machine_after.saturating_sub(machine_before).saturating_sub(own_after - own_before) as f64;
    latencies.sort_unstable();
    let sample = Sample {
        operation,
        concurrency,
        latencies,
        requests,
        wall,
        own_cpu: own / wall.as_secs_f64(),
        other_cpu: other / wall.as_secs_f64(),
        activity: (activity_before, other_activity()),
    };
    eprintln!(
        "  {:<34} c={concurrency:<2} {:>5} ops in {:>6.1} s  p50 {:>8.2} ms  (this process {:>3.0} %, others {:>3.0} % of a core; \
         other activity {} -> {})",
        operation.label(),
        sample.latencies.len(),
        wall.as_secs_f64(),
        sample.percentile(50.0),
        sample.own_cpu,
        sample.other_cpu,
        sample.activity.0,
        sample.activity.1,
    );
    Ok(sample)
}

/// A CPU share in % of one core, or `n/a` for windows too short to count in 10 ms jiffies.
fn cpu_share(percent: f64, wall: Duration) -> String {
    if wall < Duration::from_secs(1) { "n/a (< 1 s)".to_owned() } else { format!("{percent:.0} %") }
}

fn print_table(samples: &[Sample]) {
    println!(
        "| operation | concurrency | ops | HTTP req/op | p50 ms | p99 ms | mean ms | ops/s | \
         p50 ÷ look-up p50 | mean ÷ look-up mean | look-up ops/s ÷ ops/s |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for sample in samples {
        let base = samples
            .iter()
            .find(|s| s.operation == Operation::Lookup && s.concurrency == sample.concurrency)
            .unwrap_or(sample);
        println!(
            "| {} | {} | {} | {:.0} | {:.2} | {:.2} | {:.2} | {:.1} | {:.1}× | {:.1}× | {:.1}× |",
            sample.operation.label(),
            sample.concurrency,
            sample.latencies.len(),
            sample.requests as f64 / sample.latencies.len() as f64,
            sample.percentile(50.0),
            sample.percentile(99.0),
            sample.mean(),
            sample.per_second(),
            sample.percentile(50.0) / base.percentile(50.0),
            sample.mean() / base.mean(),
            base.per_second() / sample.per_second(),
        );
    }
    println!();
    println!(
        "CPU during each row (% of one core; this process = gateway + client), other activity (compilers, load tests) at start -> end:"
    );
    println!();
    println!("| operation | concurrency | wall s | this process | other processes | compilers / load tests running |");
    println!("| --- | ---: | ---: | ---: | ---: | --- |");
    for sample in samples {
        println!(
            "| {} | {} | {:.1} | {} | {} | {} -> {} |",
            sample.operation.label(),
            sample.concurrency,
            sample.wall.as_secs_f64(),
            cpu_share(sample.own_cpu, sample.wall),
            cpu_share(sample.other_cpu, sample.wall),
            sample.activity.0,
            sample.activity.1,
        );
    }
}

async fn bench_main(settings: Settings, bench: Arc<Bench>) -> BenchResult<()> {
    let started = Instant::now();
    eprintln!(
        "loading {} records into {} tenants ({} concurrent PUTs) ...",
        bench.total_records,
        bench.tenants.len(),
        settings.load_workers
    );
    load_records(&bench, settings.load_workers).await?;
    let load = started.elapsed();
    eprintln!("  {:.1} s ({:.0} records/s)", load.as_secs_f64(), bench.total_records as f64 / load.as_secs_f64());

    let response = bench.client.get(bench.url("/v1/admin/shards")).bearer_auth(&bench.admin).send().await?;
    let shards: ShardList = serde_json::from_slice(&expect_status(response, 200, "list shards").await?)?;
    let placement: Vec<String> = shards
        .items
        .iter()
        .map(|s| format!("{}={}", s.id, s.records.map_or("?".to_owned(), |n| n.to_string())))
        .collect();
    eprintln!("records per shard: {}", placement.join(" "));
    if shards.items.iter().filter(|s| s.records.unwrap_or(0) > 0).count() < SHARDS {
        return Err("some shard holds no records".into());
    }

    eprintln!("creating index {INDEX} (unique, /email) in every tenant and waiting for the backfills ...");
    let backfill = create_indexes(&bench).await?;
    eprintln!("  all active after {:.1} s", backfill.as_secs_f64());

    eprintln!("measuring (load average {}) ...", load_average());
    let mut samples = Vec::new();
    for concurrency in [1, settings.concurrency] {
        let seed = 0x9E37_79B9_7F4A_7C15 ^ concurrency as u64;
        for (operation, count) in [
            (Operation::Lookup, settings.lookups),
            (Operation::TenantScan, settings.tenant_scans),
            (Operation::AllScan, settings.all_scans),
        ] {
            let targets = targets(&bench, count, seed ^ operation as u64);
            samples.push(measure(&bench, operation, concurrency, targets).await?);
        }
    }
    eprintln!("done (load average {})", load_average());

    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!();
    println!(
        "Index look-up vs full scan: {} records in {} tenants on {SHARDS} SQLite shards ({cpus} CPUs); \
         load {:.0} s, index backfill {:.1} s",
        bench.total_records,
        bench.tenants.len(),
        load.as_secs_f64(),
        backfill.as_secs_f64(),
    );
    println!();
    print_table(&samples);
    Ok(())
}

#[tokio::main]
async fn main() -> BenchResult<()> {
    let settings = Settings::from_env()?;
    shardgate_api::observability::telemetry::init_with_writer(
        &LogConfig { filter: "warn".to_owned(), ..LogConfig::default() },
        std::io::stderr,
    );
    let dir = tempfile::tempdir()?;
    let app = Application::build(gateway_config(dir.path())?).await?;
    let base = format!("http://127.0.0.1:{}", app.port());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(app.run_until(async move {
        stopped.await.ok();
    }));

    let client = reqwest::Client::builder().pool_max_idle_per_host(256).timeout(Duration::from_secs(120)).build()?;
    let admin = mint(None, &[Scope::Admin])?;
    let tenants = create_tenants(&base, &client, &admin, &settings).await?;
    let total_records = tenants.iter().map(|t| t.records).sum();
    let homes: Vec<String> = tenants.iter().map(|t| format!("{}->{}", t.id, t.shard)).collect();
    eprintln!("gateway on {base}, data in {}; tenants {}", dir.path().display(), homes.join(" "));
    let bench = Arc::new(Bench { base, client, admin, tenants, total_records });

    let outcome = bench_main(settings, bench).await;
    stop.send(()).ok();
    match tokio::time::timeout(Duration::from_secs(10), server).await {
        Ok(Ok(Err(e))) => eprintln!("the gateway stopped with an error: {e:#}"),
        Ok(Err(e)) => eprintln!("the gateway task failed: {e}"),
        Err(_) => eprintln!("the gateway did not stop within 10 s"),
        Ok(Ok(Ok(()))) => {}
    }
    outcome
}
