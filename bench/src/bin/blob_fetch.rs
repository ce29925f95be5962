//! The "database's own limit" anchor of `bench/valet.sh`: fetches one blob's chunks straight from
//! its shard with sqlx, with no HTTP, authentication or cache in between. A valet download that
//! misses the chunk cache does this plus everything else, so it can only be slower.
//!
//! `TASKS` tasks (default 8, the connections wrk uses) share one pool of `POOL` connections
//! (default: twice the CPUs, the gateway's documented default) and fetch the whole blob, in
//! order, again and again for `SECONDS`; fetches that end after the deadline still count, and the
//! rate is taken over the real elapsed time. Modes:
//!
//! - `chunks`: one `SELECT data FROM blob_chunks WHERE upload_id = $1 AND seq = $2` per chunk,
//!   the statement the gateway runs for each chunk of a download;
//! - `ordered`: one `SELECT data FROM blob_chunks WHERE upload_id = $1 ORDER BY seq` per blob,
//!   streamed row by row (at most one chunk held per task).
//!
//! Drivers: `pg` (sqlx's PostgreSQL driver) or `any` (sqlx's `Any` driver over PostgreSQL, which
//! the gateway uses so that the same SQL runs on SQLite).
//!
//! Usage: `blob_fetch DATABASE_URL TENANT PATH [chunks|ordered] [pg|any]`, settings from the
//! environment (`TASKS`, `POOL`, `SECONDS`). Prints one line:
//! `SGFETCH mode=.. driver=.. tasks=.. pool=.. blob_bytes=.. fetches=.. bytes=.. secs=..
//! mb_per_s=.. p50_us=.. p99_us=..` (MB = 10^6 bytes; latencies are of whole-blob fetches).

use shardgate_bench::{env_number, run_workers};
use std::str::FromStr;
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{AnyPool, PgPool};

const BY_CHUNK: &str = "SELECT data FROM blob_chunks WHERE upload_id = $1 AND seq = $2";
const ORDERED: &str = "SELECT data FROM blob_chunks WHERE upload_id = $1 ORDER BY seq";

/// The live upload of a blob, as the gateway finds it in `blobs`.
#[derive(Debug, Clone)]
struct Blob {
    upload_id: String,
    size: u64,
    chunk_count: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Chunks,
    Ordered,
}

#[derive(Debug, Clone)]
enum Pool {
    Pg(PgPool),
    Any(AnyPool),
}

/// Defines `$name(pool, blob, mode) -> bytes fetched` for one pool type.
macro_rules! fetch_fn {
    ($name:ident, $pool:ty) => {
        async fn $name(pool: &$pool, blob: &Blob, mode: Mode) -> Result<u64, sqlx::Error> {
            let mut bytes = 0u64;
            match mode {
                Mode::Chunks => {
                    for seq in 0..blob.chunk_count {
                        let data: Vec<u8> = sqlx::query_scalar(BY_CHUNK)
                            .bind(blob.upload_id.as_str())
                            .bind(seq)
                            .fetch_one(pool)
                            .await?;
                        bytes += data.len() as u64;
                    }
                }
                Mode::Ordered => {
                    let mut rows = sqlx::query_scalar::<_, Vec<u8>>(ORDERED).bind(blob.upload_id.as_str()).fetch(pool);
                    while let Some(data) = rows.try_next().await? {
                        bytes += data.len() as u64;
                    }
                }
            }
            Ok(bytes)
        }
    };
}
fetch_fn!(fetch_pg, PgPool);
fetch_fn!(fetch_any, AnyPool);

async fn fetch(pool: &Pool, blob: &Blob, mode: Mode) -> Result<u64, sqlx::Error> {
    match pool {
        Pool::Pg(pool) => fetch_pg(pool, blob, mode).await,
        Pool::Any(pool) => fetch_any(pool, blob, mode).await,
    }
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[Duration], p: f64) -> u128 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((sorted.len() as f64 * p / 100.0).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1].as_micros()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, tenant, path, rest @ ..] = args.as_slice() else {
        return Err("usage: blob_fetch DATABASE_URL TENANT PATH [chunks|ordered] [pg|any]".into());
    };
    let mode = match rest.first().map(String::as_str) {
        None | Some("chunks") => Mode::Chunks,
        Some("ordered") => Mode::Ordered,
        Some(other) => return Err(format!("unknown mode {other:?} (chunks or ordered)").into()),
    };
    let driver = rest.get(1).map_or("pg", String::as_str);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
    let tasks = env_number("TASKS", 8)?.max(1);
    let pool_size = u32::try_from(env_number("POOL", 2 * cpus)?.max(1))?;
    let seconds = env_number("SECONDS", 10)?.max(1);

    let pg_options = PgConnectOptions::from_str(url)?;
    let pool = match driver {
        "pg" => Pool::Pg(PgPoolOptions::new().max_connections(pool_size).connect_with(pg_options.clone()).await?),
        "any" => {
            sqlx::any::install_default_drivers();
            Pool::Any(
                AnyPoolOptions::new()
                    .max_connections(pool_size)
                    .connect_with(AnyConnectOptions::from_str(url)?)
                    .await?,
            )
        }
        other => return Err(format!("unknown driver {other:?} (pg or any)").into()),
    };

    let lookup = PgPoolOptions::new().max_connections(1).connect_with(pg_options).await?;
    let (upload_id, size, chunk_count): (String, i64, i64) = sqlx::query_as(
        "SELECT upload_id, size, chunk_count FROM blobs WHERE tenant = $1 AND path = $2 AND deleted = 0",
    )
    .bind(tenant)
    .bind(path)
    .fetch_optional(&lookup)
    .await?
    .ok_or_else(|| format!("no live blob {tenant}/{path} in this database"))?;
    lookup.close().await;
    let blob = Blob { upload_id, size: u64::try_from(size)?, chunk_count };

    // One warm-up fetch per connection (opens them and checks the byte count).
    let warm = futures::future::try_join_all((0..pool_size).map(|_| fetch(&pool, &blob, mode))).await?;
    if let Some(bytes) = warm.iter().find(|&&bytes| bytes != blob.size) {
        return Err(format!("fetched {bytes} bytes of a {}-byte blob", blob.size).into());
    }

    let (results, elapsed) = run_workers(tasks, seconds, |_, deadline| {
        let (pool, blob) = (pool.clone(), blob.clone());
        async move {
            let (mut bytes, mut latencies) = (0u64, Vec::new());
            while Instant::now() < deadline {
                let began = Instant::now();
                bytes += fetch(&pool, &blob, mode).await?;
                latencies.push(began.elapsed());
            }
            Ok::<_, sqlx::Error>((bytes, latencies))
        }
    })
    .await?;
    let (mut bytes, mut latencies) = (0u64, Vec::new());
    for (b, l) in results {
        bytes += b;
        latencies.extend(l);
    }
    let secs = elapsed.as_secs_f64();
    latencies.sort_unstable();
    println!(
        "SGFETCH mode={} driver={driver} tasks={tasks} pool={pool_size} blob_bytes={} fetches={} bytes={bytes} \
         secs={secs:.3} mb_per_s={:.1} p50_us={} p99_us={}",
        if mode == Mode::Chunks { "chunks" } else { "ordered" },
        blob.size,
        latencies.len(),
        bytes as f64 / secs / 1e6,
        percentile(&latencies, 50.0),
        percentile(&latencies, 99.0),
    );
    Ok(())
}
