//! A tenant move under traffic on PostgreSQL shards: what the moving tenant's writes see during
//! the cut-over, what the other tenants of both shards see during the copy, how fast the copy
//! goes, and how long moving a tenant of 100,000 records off its shard takes.
//!
//! Run with `cargo run --release -p shardgate-bench --bin moves` (PostgreSQL on 127.0.0.1:5432
//! and Redis on 127.0.0.1:6379, as everywhere in this project). It reports; it never fails on a
//! figure (the exit status is non-zero only when a step broke).
//!
//! It creates a PostgreSQL catalog and two PostgreSQL shard databases (dropped at the end),
//! starts a gateway in this process in the production configuration (Redis record cache and
//! rate limits in Redis, limits raised so the limiter runs but never refuses), pins tenant
//! `mover` and tenant `neighbour` to `s0` and tenant `far` to `s1`, loads `RECORDS` records of
//! about 200 bytes into `mover`, then runs `WRITERS` writers of `mover` (unconditional `PUT`s of
//! random keys) and `OTHERS` clients of each other tenant (half `PUT`, half `GET`) for
//! `WARMUP_SECS` and `BEFORE_SECS` seconds, starts the move of `mover` to `s1`, and keeps the traffic going until
//! the move is done and `AFTER_SECS` more. Every request's start and end are kept.
//!
//! Reported: the moving tenant's write latency (p50, p99, max) inside the cut-over window
//! (from the fence to the pin switch, as the job reports them, widened by 100 ms each side) and
//! the longest gap between two completed writes there; the other tenants' p99 before the move
//! and during the copy; copy throughput (bytes the job copied over the time from its start to the
//! fence); the job's time from start to the pin switch; and then, under the same traffic, the
//! time to drain shard `s1` (which holds the moved tenant's records then) onto `s0`.
//!
//! With `MOVE=redistribute`, the job is instead the change of `mover`'s collection from
//! `tenant` to `hash` (`collection.redistribute`: its records leave `s0`'s `records` table for
//! `spread_records` on both shards), and "the moving tenant's writes" are that collection's.
//!
//! With `BLOB_MIB=500` (the large-tenant mode), `mover` also holds that many MiB of 1 MiB blobs,
//! and a second gateway instance runs on the same catalog and shards, as in production: the
//! report adds the copy phase's time and how often the job changed hands (`handovers`, 0 when
//! the instance running it keeps its lease however long the copy takes). The drain is skipped.
//!
//! The copy's pace is adaptive by default, as in the gateway (`storage.moves.adaptive_pace`): it
//! starts at the floor, measures the shards' request latency, and speeds up to
//! `COPY_BYTES_PER_SECOND` (the ceiling) only while the requests on the source and the target do
//! not feel it. The report adds the pace over time, as the job's progress recorded it
//! (`progress.pace`). With `ADAPTIVE_PACE=0` the copy runs at `COPY_BYTES_PER_SECOND`
//! throughout, as it did before adaptive pacing.
//!
//! The level "before" is the other tenants' requests in the last `BEFORE_SECS` before the move,
//! after `WARMUP_SECS` of the same traffic: right after the load, the shards' latency drifts for
//! a while (one run: p99 per 5 s rising from 5.6 to 18 ms before any move), and a level taken
//! then says more about that drift than about the move. The report adds the p99 per 5 s over
//! the whole run, so drift shows.
//!
//! Settings: `RECORDS` (100000), `WRITERS` (4), `OTHERS` (2), `WARMUP_SECS` (10), `BEFORE_SECS` (10), `AFTER_SECS`
//! (2), `COPY_BYTES_PER_SECOND` (4194304, the gateway's default), `ADAPTIVE_PACE` (1),
//! `PACE_TOLERANCE` and `PACE_FLOOR_BYTES_PER_SECOND` (the gateway's defaults, 0.1 and 262144),
//! `COPY_BATCH_BYTES` (the gateway's default, 16777216), `MOVE` (`tenant`), `BLOB_MIB` (0), `DRAIN`
//! (1; 0 skips the drain), `TARGET_PG` (the server of the target shard `s1`, e.g.
//! `postgres://postgres@127.0.0.1:5433` for a cluster of its own; default the shared one).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use secrecy::SecretString;
use serde_json::{Value, json};
use shardgate_api::Application;
use shardgate_bench::{BenchResult, PG, load_records, mint, percentile, production_config};
use shardgate_gatekeeper::Scope;
use sqlx::Connection;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// One request: which tenant, when it started and ended (ms since the Unix epoch), whether it
/// succeeded, and its status (0: no answer).
#[derive(Debug, Clone)]
struct Sample {
    mover: bool,
    /// Whether the tenant is `far` (on the move's target), not `neighbour` (on its source).
    far: bool,
    write: bool,
    start_ms: f64,
    end_ms: f64,
    ok: bool,
    status: u16,
    /// The problem's code and detail, for a failure that has one.
    problem: Option<String>,
}

fn now_ms() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

/// Whether `sample` started and ended within `(from, until)` (ms since the Unix epoch).
fn in_window(sample: &Sample, (from, until): (f64, f64)) -> bool {
    sample.start_ms >= from && sample.end_ms < until
}

fn latencies(samples: &[Sample], keep: impl Fn(&Sample) -> bool) -> Vec<f64> {
    let mut out: Vec<f64> = samples.iter().filter(|s| keep(s)).map(|s| s.end_ms - s.start_ms).collect();
    out.sort_by(f64::total_cmp);
    out
}

#[tokio::main]
async fn main() -> BenchResult<()> {
    let env = |name: &str, default: usize| shardgate_bench::env_number(name, default);
    let records = env("RECORDS", 100_000)?;
    let writers = env("WRITERS", 4)?;
    let others = env("OTHERS", 2)?;
    let warmup = Duration::from_secs(env("WARMUP_SECS", 10)? as u64);
    let before = Duration::from_secs(env("BEFORE_SECS", 10)? as u64);
    let after = Duration::from_secs(env("AFTER_SECS", 2)? as u64);
    let rate = env("COPY_BYTES_PER_SECOND", 4 << 20)? as u64;
    let defaults = shardgate_shard_router::MoveConfig::default();
    let pace = Pacing {
        adaptive: env("ADAPTIVE_PACE", 1)? != 0,
        tolerance: match std::env::var("PACE_TOLERANCE") {
            Ok(raw) => raw.parse().map_err(|_| format!("PACE_TOLERANCE must be a number, got {raw:?}"))?,
            Err(_) => defaults.pace_tolerance,
        },
        floor: env("PACE_FLOOR_BYTES_PER_SECOND", defaults.pace_floor_bytes_per_second as usize)? as u64,
        batch: env("COPY_BATCH_BYTES", defaults.copy_batch_bytes as usize)? as u64,
    };
    let redistribute = std::env::var("MOVE").is_ok_and(|what| what == "redistribute");
    let blob_mib = env("BLOB_MIB", 0)?;
    let drain = env("DRAIN", 1)? != 0;

    // The server of the target shard `s1`: the catalog's and `s0`'s unless `TARGET_PG` names
    // another (a PostgreSQL cluster of its own: its own WAL, checkpointer and buffers).
    let target_pg = std::env::var("TARGET_PG").unwrap_or_else(|_| PG.to_owned());

    let tag = format!("sgbm_{}", std::process::id());
    let names = [format!("{tag}_cat"), format!("{tag}_s0"), format!("{tag}_s1")];
    let servers = [PG, PG, target_pg.as_str()];
    for (name, server) in names.iter().zip(servers) {
        let mut admin_db = sqlx::PgConnection::connect(&format!("{server}/postgres")).await?;
        sqlx::query(&format!("CREATE DATABASE {name}")).execute(&mut admin_db).await?;
    }
    let outcome = run(
        &names,
        &tag,
        &target_pg,
        (records, writers, others, (warmup, before), after, rate),
        pace,
        (redistribute, drain),
        blob_mib,
    )
    .await;
    for (name, server) in names.iter().zip(servers) {
        let mut admin_db = sqlx::PgConnection::connect(&format!("{server}/postgres")).await?;
        sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).execute(&mut admin_db).await?;
    }
    outcome
}

async fn run(
    names: &[String; 3],
    tag: &str,
    target_pg: &str,
    (records, writers, others, (warmup, before), after, rate): (
        usize,
        usize,
        usize,
        (Duration, Duration),
        Duration,
        u64,
    ),
    pace: Pacing,
    (redistribute, drain): (bool, bool),
    blob_mib: usize,
) -> BenchResult<()> {
    let dirs = [tempfile::tempdir()?, tempfile::tempdir()?];
    let shards: Vec<(String, String)> =
        names[1..].iter().enumerate().map(|(i, name)| (format!("s{i}"), name.clone())).collect();
    // One instance, or two on the same catalog and shards in the large-tenant mode.
    let mut servers = Vec::new();
    let mut bases = Vec::new();
    for dir in &dirs[..if blob_mib > 0 { 2 } else { 1 }] {
        let mut config = production_config(dir.path(), &names[0], &shards, tag)?;
        config.storage.shards[1].url = SecretString::from(format!("{target_pg}/{}", names[2]));
        config.storage.moves.copy_bytes_per_second = rate;
        config.storage.moves.adaptive_pace = pace.adaptive;
        config.storage.moves.pace_tolerance = pace.tolerance;
        config.storage.moves.pace_floor_bytes_per_second = pace.floor;
        config.storage.moves.copy_batch_bytes = pace.batch;
        config.storage.moves.cleanup_grace = Duration::from_secs(1);
        let app = Application::build(config).await?;
        bases.push(format!("http://{}", app.local_addr()));
        let (stop_server, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(app.run_until(async move {
            let _ = stopped.await;
        }));
        servers.push((stop_server, server));
    }
    let base = bases[0].clone();
    let client = reqwest::Client::new();
    let admin = mint("moves-bench", None, &[Scope::Admin])?;
    for (id, shard) in [("mover", "s0"), ("neighbour", "s0"), ("far", "s1")] {
        let created = client
            .post(format!("{base}/v1/admin/tenants"))
            .bearer_auth(&admin)
            .json(&json!({"id": id, "shard": shard}))
            .send()
            .await?;
        if created.status() != 201 {
            return Err(format!("creating {id}: {}", created.status()).into());
        }
    }
    let token = |tenant: &str| mint("moves-bench", Some(tenant), &[Scope::Read, Scope::Write]);
    let mover_token = token("mover")?;
    let payload = "x".repeat(160);

    let load_started = Instant::now();
    load_records(&client, &base, &mover_token, ("mover", "c"), records).await?;
    println!("loaded {records} records into tenant mover in {:.1} s", load_started.elapsed().as_secs_f64());
    if blob_mib > 0 {
        let load_started = Instant::now();
        let blob = bytes::Bytes::from(vec![7u8; 1 << 20]);
        let mut uploads = tokio::task::JoinSet::new();
        for i in 0..blob_mib {
            if uploads.len() >= 4
                && let Some(done) = uploads.join_next().await
            {
                done??;
            }
            let (client, url, token, blob) = (
                client.clone(),
                format!("{base}/v1/tenants/mover/blobs/large/{i:05}.bin"),
                mover_token.clone(),
                blob.clone(),
            );
            uploads.spawn(async move {
                let put = client.put(url).bearer_auth(token).body(blob).send().await?;
                if put.status() != 201 {
                    return Err(format!("uploading a blob: {}", put.status()).into());
                }
                BenchResult::Ok(())
            });
        }
        while let Some(done) = uploads.join_next().await {
            done??;
        }
        println!("loaded {blob_mib} MiB of blobs into tenant mover in {:.1} s", load_started.elapsed().as_secs_f64());
    }

    let samples = Arc::new(Mutex::new(Vec::<Sample>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let mut traffic = tokio::task::JoinSet::new();
    let clients =
        (0..writers).map(|_| ("mover", true)).chain((0..others).flat_map(|_| [("neighbour", false), ("far", false)]));
    for (i, (tenant, is_mover)) in clients.enumerate() {
        let (client, base, token, samples, stop) =
            (client.clone(), base.clone(), token(tenant)?, samples.clone(), stop.clone());
        let payload = payload.clone();
        traffic.spawn(async move {
            let mut seed = (i as u64 + 7).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            while !stop.load(Ordering::Relaxed) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let key = format!("k{:06}", seed % records.max(1) as u64);
                let url = format!("{base}/v1/tenants/{tenant}/collections/c/records/{key}");
                let write = is_mover || seed.is_multiple_of(2);
                let start_ms = now_ms();
                let sent = if write {
                    client.put(&url).bearer_auth(&token).json(&json!({"w": seed, "pad": payload})).send().await
                } else {
                    client.get(&url).bearer_auth(&token).send().await
                };
                let end_ms = now_ms();
                let (status, problem) = match sent {
                    Ok(r) if r.status().is_success() || r.status() == 404 => (r.status().as_u16(), None),
                    Ok(r) => {
                        let status = r.status().as_u16();
                        let body: Value = r.json().await.unwrap_or_default();
                        (status, Some(format!("{} ({})", body["code"], body["detail"])))
                    }
                    Err(e) => (0, Some(e.to_string())),
                };
                let ok = problem.is_none();
                samples.lock().push(Sample {
                    mover: is_mover,
                    far: tenant == "far",
                    write,
                    start_ms,
                    end_ms,
                    ok,
                    status,
                    problem,
                });
            }
        });
    }
    tokio::time::sleep(warmup + before).await;
    let move_started = now_ms();
    // The window "before" compares with: the last `before` of the traffic, after its warm-up.
    let before_window = (move_started - before.as_secs_f64() * 1000.0, move_started);
    let started = if redistribute {
        // The collection spreads over both shards instead: its rows change table too.
        client.put(format!("{base}/v1/admin/tenants/mover/collections/c")).json(&json!({"distribution": "hash"}))
    } else {
        client.post(format!("{base}/v1/admin/tenants/mover/move")).json(&json!({"to": "s1"}))
    };
    let job: Value = started.bearer_auth(&admin).send().await?.json().await?;
    let id = job["id"].as_str().ok_or_else(|| format!("no job: {job}"))?.to_owned();
    // When each phase was first seen (as stored at the job's heartbeats, polled every 100 ms).
    let mut phases: Vec<(f64, String)> = vec![(move_started, "copy".to_owned())];
    let mut next_report_ms = 30_000.0;
    let job = loop {
        let job: Value =
            client.get(format!("{base}/v1/admin/jobs/{id}")).bearer_auth(&admin).send().await?.json().await?;
        if let Some(phase) = job["progress"]["phase"].as_str()
            && phases.last().is_some_and(|(_, last)| last != phase)
        {
            phases.push((now_ms(), phase.to_owned()));
        }
        if job["state"] != "running" {
            break job;
        }
        let running_ms = now_ms() - move_started;
        if running_ms >= next_report_ms {
            next_report_ms += 30_000.0;
            // A move that takes long says where it is.
            let progress = &job["progress"];
            eprintln!(
                "still running after {:.0} s: phase {}, passes {}, pace {} B/s",
                running_ms / 1000.0,
                progress["phase"],
                progress["passes"],
                progress["pace"]["bytes_per_second"]
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    tokio::time::sleep(after).await;
    if blob_mib > 0 {
        stop.store(true, Ordering::Relaxed);
        while traffic.join_next().await.is_some() {}
        for (stop_server, server) in servers {
            let _ = stop_server.send(());
            let _ = server.await;
        }
        let samples = samples.lock().clone();
        return report_large(&job, &samples, &phases, before_window, blob_mib);
    }
    // Then shard s1, which holds the moved tenant's records now, is drained under the same
    // traffic: its vshards and both tenants pinned to it go to s0.
    let drain_began_ms = if drain { now_ms() } else { f64::INFINITY };
    let drained = if drain { Some(drain_s1(&client, &base, &admin).await?) } else { None };
    stop.store(true, Ordering::Relaxed);
    while traffic.join_next().await.is_some() {}
    for (stop_server, server) in servers {
        let _ = stop_server.send(());
        let _ = server.await;
    }

    let progress = &job["progress"];
    if job["state"] != "done" {
        return Err(format!("the move ended {}: {job}", job["state"]).into());
    }
    let fenced = progress["fenced_at_ms"].as_f64().ok_or("no fence time")?;
    let switched = progress["switched_at_ms"].as_f64().ok_or("no switch time")?;
    let samples = samples.lock().clone();
    let failed = samples.iter().filter(|s| !s.ok).count();
    let window = (fenced - 100.0, switched + 100.0);
    let cut_over = latencies(&samples, |s| s.mover && s.write && s.end_ms >= window.0 && s.start_ms <= window.1);
    let mut ends: Vec<f64> = samples
        .iter()
        .filter(|s| s.mover && s.write && s.ok && s.end_ms >= window.0 - 1000.0)
        .map(|s| s.end_ms)
        .collect();
    ends.sort_by(f64::total_cmp);
    let gap = ends.windows(2).filter(|w| w[1] >= window.0 && w[0] <= window.1).map(|w| w[1] - w[0]).fold(0.0, f64::max);
    let others_before = latencies(&samples, |s| !s.mover && in_window(s, before_window));
    let others_copy = latencies(&samples, |s| !s.mover && s.start_ms >= move_started && s.end_ms <= fenced);
    let bytes = progress["bytes_copied"].as_f64().unwrap_or(0.0);
    let copy_secs = (fenced - move_started) / 1000.0;
    println!("requests: {} ({failed} failed)", samples.len());
    // Every failure, by status, tenant, kind and phase.
    let mut failures: std::collections::BTreeMap<String, (usize, f64)> = std::collections::BTreeMap::new();
    for s in samples.iter().filter(|s| !s.ok) {
        let phase = if s.end_ms < move_started {
            "before the move"
        } else if s.start_ms <= switched + 100.0 {
            "during the move"
        } else if s.start_ms < drain_began_ms {
            "after the move"
        } else {
            "during the drain"
        };
        let who = if s.mover { "mover" } else { "other" };
        let kind = if s.write { "PUT" } else { "GET" };
        let problem = s.problem.as_deref().unwrap_or_default();
        let entry = failures.entry(format!("{} {who} {kind} {phase}: {problem}", s.status)).or_default();
        entry.0 += 1;
        entry.1 = entry.1.max(s.end_ms - s.start_ms);
    }
    for (what, (count, slowest)) in &failures {
        println!("  failed: {count} x {what}, the slowest after {slowest:.0} ms");
    }
    println!(
        "moving tenant, writes in the cut-over window ({} of them, fence to switch {} ms): p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; longest gap between completed writes {:.1} ms",
        cut_over.len(),
        progress["cutover_ms"],
        percentile(&cut_over, 0.5),
        percentile(&cut_over, 0.99),
        cut_over.last().copied().unwrap_or(f64::NAN),
        gap
    );
    println!("cut-over steps (ms): {}", progress["cutover_steps_ms"]);
    let (p_before, p_copy) = (percentile(&others_before, 0.99), percentile(&others_copy, 0.99));
    println!(
        "other tenants, p99: before {p_before:.2} ms ({} requests), during the copy {p_copy:.2} ms ({} requests): ratio {:.2}",
        others_before.len(),
        others_copy.len(),
        p_copy / p_before
    );
    // The same, for each side of the move: `neighbour` on its source, `far` on its target.
    for (far, side) in [(false, "source s0 (neighbour)"), (true, "target s1 (far)")] {
        let before = latencies(&samples, |s| !s.mover && s.far == far && in_window(s, before_window));
        let copy =
            latencies(&samples, |s| !s.mover && s.far == far && s.start_ms >= move_started && s.end_ms <= fenced);
        let (before, copy) = (percentile(&before, 0.99), percentile(&copy, 0.99));
        println!(
            "  on the {side}: p99 before {before:.2} ms, during the copy {copy:.2} ms: ratio {:.2}",
            copy / before
        );
    }
    // The other tenants' p99 in each phase before the fence.
    let mut by_phase = Vec::new();
    for (i, (from, phase)) in phases.iter().enumerate() {
        let until = phases.get(i + 1).map_or(fenced, |(t, _)| *t).min(fenced);
        let seen = latencies(&samples, |s| !s.mover && s.start_ms >= *from && s.end_ms <= until);
        if *from < fenced && !seen.is_empty() {
            by_phase.push(format!(
                "{phase} {:.2} ms ({} requests, {:.1} s)",
                percentile(&seen, 0.99),
                seen.len(),
                (until - from) / 1000.0
            ));
        }
    }
    println!("other tenants, p99 by phase before the fence: {}", by_phase.join(", "));
    // Over time, to tell drift (a table growing, dead rows) from the move's own weight.
    let first = samples.iter().map(|s| s.start_ms).fold(f64::INFINITY, f64::min);
    let last = samples.iter().map(|s| s.end_ms).fold(0.0, f64::max);
    let mut timeline = Vec::new();
    let mut from = first;
    while from < last {
        let slice = latencies(&samples, |s| !s.mover && s.end_ms >= from && s.end_ms < from + 5000.0);
        if !slice.is_empty() {
            timeline.push(format!("{:+.0} s {:.2}", (from - move_started) / 1000.0, percentile(&slice, 0.99)));
        }
        from += 5000.0;
    }
    println!("other tenants, p99 ms per 5 s from the move's start: {}", timeline.join(", "));
    println!(
        "copy: {:.1} MB in {copy_secs:.1} s = {:.1} MB/s ({} rows, {} passes, method {}); start to switch {:.1} s",
        bytes / 1e6,
        bytes / 1e6 / copy_secs,
        progress["rows_copied"],
        progress["passes"],
        progress["method"],
        (switched - move_started) / 1000.0
    );
    println!("{}", pace_over_time(progress, move_started));
    let Some((drain, drained, drain_secs)) = drained else { return Ok(()) };
    println!(
        "drain of s1 ({} vshards, {} pinned tenants, {records} records of mover among them): {} in {drain_secs:.1} s (including the {} s cleanup grace)",
        drain["plan"]["vshards"].as_array().map_or(0, Vec::len),
        drain["plan"]["tenants"].as_array().map_or(0, Vec::len),
        drained["state"],
        1
    );
    if drained["state"] != "done" {
        return Err(format!("the drain ended {}: {drained}", drained["state"]).into());
    }
    Ok(())
}

/// Drains shard `s1` onto `s0` (4 moves at a time): the drain as started, the job as it ended,
/// and how long it took (s).
async fn drain_s1(client: &reqwest::Client, base: &str, admin: &str) -> BenchResult<(Value, Value, f64)> {
    let started = Instant::now();
    let drain: Value = client
        .post(format!("{base}/v1/admin/shards/s1/drain"))
        .bearer_auth(admin)
        .json(&json!({"parallel": 4}))
        .send()
        .await?
        .json()
        .await?;
    let id = drain["job"]["id"].as_str().ok_or_else(|| format!("no drain job: {drain}"))?.to_owned();
    loop {
        let job: Value =
            client.get(format!("{base}/v1/admin/jobs/{id}")).bearer_auth(admin).send().await?.json().await?;
        if job["state"] != "running" {
            return Ok((drain, job, started.elapsed().as_secs_f64()));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The large-tenant mode's report: the copy phase's time, the job's handovers, failures and the
/// other tenants' p99 during the copy against before.
fn report_large(
    job: &Value,
    samples: &[Sample],
    phases: &[(f64, String)],
    before_window: (f64, f64),
    blob_mib: usize,
) -> BenchResult<()> {
    let move_started = before_window.1;
    if job["state"] != "done" {
        return Err(format!("the move ended {}: {job}", job["state"]).into());
    }
    let progress = &job["progress"];
    let copied_until = phases.iter().find(|(_, phase)| phase != "copy").map_or(f64::NAN, |(t, _)| *t);
    let copy_secs = (copied_until - move_started) / 1000.0;
    let failed = samples.iter().filter(|s| !s.ok).count();
    let others_before = latencies(samples, |s| !s.mover && in_window(s, before_window));
    let others_copy = latencies(samples, |s| !s.mover && s.start_ms >= move_started && s.end_ms <= copied_until);
    let (p_before, p_copy) = (percentile(&others_before, 0.99), percentile(&others_copy, 0.99));
    let switched = progress["switched_at_ms"].as_f64().unwrap_or(f64::NAN);
    println!("requests: {} ({failed} failed)", samples.len());
    println!(
        "large tenant ({blob_mib} MiB of blobs), two instances: copy phase {copy_secs:.1} s ({:.1} MB at {:.2} MB/s), handovers {}, start to switch {:.1} s, cut-over {} ms",
        progress["bytes_copied"].as_f64().unwrap_or(0.0) / 1e6,
        progress["bytes_copied"].as_f64().unwrap_or(0.0) / 1e6 / copy_secs,
        job["handovers"],
        (switched - move_started) / 1000.0,
        progress["cutover_ms"],
    );
    println!(
        "other tenants, p99: before {p_before:.2} ms ({} requests), during the copy {p_copy:.2} ms ({} requests): ratio {:.2}",
        others_before.len(),
        others_copy.len(),
        p_copy / p_before
    );
    println!("{}", pace_over_time(progress, move_started));
    Ok(())
}

/// How the copy is paced: `storage.moves.adaptive_pace`, `pace_tolerance`,
/// `pace_floor_bytes_per_second`, and how much each batch of the first copy takes.
#[derive(Debug, Clone, Copy)]
struct Pacing {
    adaptive: bool,
    tolerance: f64,
    floor: u64,
    /// `storage.moves.copy_batch_bytes`.
    batch: u64,
}

/// The pace the job chose over time (`progress.pace`): each change, in seconds from the move's
/// start, in MiB/s, and the shards' request latency before the copy that the loop measured.
fn pace_over_time(progress: &Value, move_started: f64) -> String {
    let pace = &progress["pace"];
    let mib = |bytes: &Value| bytes.as_f64().unwrap_or(f64::NAN) / f64::from(1 << 20);
    let changes: Vec<String> = pace["changes"]
        .as_array()
        .map(|changes| {
            changes
                .iter()
                .map(|c| {
                    format!("{:+.1} s {:.2}", (c[0].as_f64().unwrap_or(f64::NAN) - move_started) / 1000.0, mib(&c[1]))
                })
                .collect()
        })
        .unwrap_or_default();
    format!(
        "pace (adaptive {}, ceiling {:.2} MiB/s, baseline request statement latency {} µs), MiB/s from the move's start: {}",
        pace["adaptive"],
        mib(&pace["ceiling_bytes_per_second"]),
        pace["baseline_us"],
        changes.join(", ")
    )
}
