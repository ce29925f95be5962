//! sqlx's native PostgreSQL driver against its `Any` driver (which the gateway uses so that the
//! same SQL runs on SQLite), on the three operations that decide where the native driver pays:
//!
//! - `point_read`: the record read the gateway runs on an uncached `GET`
//!   (`SELECT key, version, updated_at, value, deleted FROM records WHERE tenant = $1 AND
//!   collection = $2 AND key = $3`), random keys of `ROWS`;
//! - `upsert`: the gateway's unconditional `PUT` statement (insert or bump the version, fenced),
//!   random keys of `ROWS`;
//! - `bulk_copy`: one tenant's `ROWS` records from one shard database to another, through
//!   [`RecordStore::copy_to`] in pages of rows (the `Any` pool) and with binary `COPY` (the
//!   native pool); the target is emptied before each copy.
//!
//! The point read and the upsert run `TASKS` tasks (default 8) on a pool of `POOL` connections
//! (default: twice the CPUs, the gateway's default) for `SECONDS` each. Every measurement runs
//! `ROUNDS` times (default 3), alternating the drivers; the table shows the median and the
//! spread (min–max).
//!
//! Usage: `drivers ADMIN_URL` (a PostgreSQL URL whose user may create databases, e.g.
//! `postgres://postgres@127.0.0.1:5432/postgres`). It creates `sgbench_drivers_src` and
//! `sgbench_drivers_dst` on that server and drops them at the end. Prints a markdown table.

use shardgate_bench::{env_number, run_workers};
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use secrecy::SecretString;
use shardgate_shard_router::ShardStore;
use shardgate_shard_router::copy::{CopyMethod, Selection};
use shardgate_shard_router::db::{Database, PoolConfig, Schema};
use shardgate_shard_router::records::RecordStore;
use shardgate_shard_router::{ShardId, TenantId};
use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{AnyPool, Connection, PgPool};

const READ: &str = "SELECT key, version, updated_at, value, deleted FROM records \
                    WHERE tenant = $1 AND collection = $2 AND key = $3";
/// The gateway's unconditional `PUT` statement, as the store runs it.
const DATABASES: [&str; 2] = ["sgbench_drivers_src", "sgbench_drivers_dst"];

#[derive(Debug, Clone, Copy)]
enum Op {
    PointRead,
    Upsert,
}

/// Defines `$name(pool, op, key)`: one operation through one pool type.
macro_rules! run_fn {
    ($name:ident, $pool:ty, $row:ty) => {
        async fn $name(pool: &$pool, op: Op, key: &str) -> Result<(), sqlx::Error> {
            use sqlx::Row;
            match op {
                Op::PointRead => {
                    let row: $row = sqlx::query(READ).bind("bench").bind("items").bind(key).fetch_one(pool).await?;
                    let value: String = row.try_get(3)?;
                    std::hint::black_box(value);
                }
                Op::Upsert => {
                    let row: $row = sqlx::query(shardgate_shard_router::records::home_upsert_sql())
                        .bind("bench")
                        .bind("items")
                        .bind(key)
                        .bind(7_i64)
                        .bind(1_700_000_000_000_i64)
                        .bind(r#"{"name":"widget","qty":3,"tags":["a","b"]}"#)
                        .bind(i64::MAX)
                        .fetch_one(pool)
                        .await?;
                    let version: i64 = row.try_get(0)?;
                    std::hint::black_box(version);
                }
            }
            Ok(())
        }
    };
}
run_fn!(run_pg, PgPool, sqlx::postgres::PgRow);
run_fn!(run_any, AnyPool, sqlx::any::AnyRow);

#[derive(Clone)]
enum Pool {
    Native(PgPool),
    Any(AnyPool),
}

impl Pool {
    async fn run(&self, op: Op, key: &str) -> Result<(), sqlx::Error> {
        match self {
            Pool::Native(pool) => run_pg(pool, op, key).await,
            Pool::Any(pool) => run_any(pool, op, key).await,
        }
    }
}

/// Operations per second of `op` with `tasks` tasks for `seconds`.
async fn throughput(pool: &Pool, op: Op, rows: u64, tasks: u64, seconds: u64) -> Result<f64, sqlx::Error> {
    let done = Arc::new(AtomicU64::new(0));
    let (_, elapsed) = run_workers(tasks, seconds, |task, deadline| {
        let (pool, done) = (pool.clone(), done.clone());
        async move {
            // A cheap, per-task pseudo-random walk over the keys.
            let mut state = task.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            while Instant::now() < deadline {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                pool.run(op, &format!("k{:07}", state % rows)).await?;
                done.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<_, sqlx::Error>(())
        }
    })
    .await?;
    Ok(done.load(Ordering::Relaxed) as f64 / elapsed.as_secs_f64())
}

/// Median and spread of `values`.
fn summary(values: &mut [f64]) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    (values[values.len() / 2], values[0], values[values.len() - 1])
}

fn database_url(admin: &str, name: &str) -> String {
    match admin.rsplit_once('/') {
        Some((server, _)) => format!("{server}/{name}"),
        None => format!("{admin}/{name}"),
    }
}

async fn recreate_databases(admin: &str) -> Result<(), sqlx::Error> {
    let mut conn = sqlx::PgConnection::connect(admin).await?;
    for name in DATABASES {
        sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).execute(&mut conn).await?;
        sqlx::query(&format!("CREATE DATABASE {name}")).execute(&mut conn).await?;
    }
    conn.close().await
}

async fn drop_databases(admin: &str) -> Result<(), sqlx::Error> {
    let mut conn = sqlx::PgConnection::connect(admin).await?;
    for name in DATABASES {
        sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).execute(&mut conn).await?;
    }
    conn.close().await
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let admin = std::env::args().nth(1).ok_or("usage: drivers ADMIN_URL")?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
    let tasks = env_number("TASKS", 8)?.max(1);
    let pool_size = u32::try_from(env_number("POOL", 2 * cpus)?.max(1))?;
    let seconds = env_number("SECONDS", 5)?.max(1);
    let rows = env_number("ROWS", 100_000)?.max(1);
    let rounds = env_number("ROUNDS", 3)?.max(1);

    recreate_databases(&admin).await?;
    let config = PoolConfig { max_connections: pool_size, ..PoolConfig::default() };
    let [source, target] =
        DATABASES.map(|name| Database::open(&SecretString::from(database_url(&admin, name)), &config));
    let (source, target) = (source?, target?);
    source.migrate(Schema::Shard).await?;
    target.migrate(Schema::Shard).await?;
    sqlx::query(
        "INSERT INTO records (tenant, collection, key, vshard, version, updated_at, deleted, value, live_since) \
         SELECT 'bench', 'items', 'k' || lpad(i::text, 7, '0'), i % 64, 1, 1700000000000, 0, \
                '{\"name\":\"widget\",\"qty\":' || i || ',\"tags\":[\"a\",\"b\"]}', 1 \
         FROM generate_series(0, $1 - 1) AS i",
    )
    .bind(i64::try_from(rows)?)
    .execute(&source.pool)
    .await?;
    sqlx::query("VACUUM ANALYZE records").execute(&source.pool).await?;

    let url = database_url(&admin, DATABASES[0]);
    sqlx::any::install_default_drivers();
    let native = Pool::Native(
        PgPoolOptions::new().max_connections(pool_size).connect_with(PgConnectOptions::from_str(&url)?).await?,
    );
    let any = Pool::Any(
        AnyPoolOptions::new().max_connections(pool_size).connect_with(AnyConnectOptions::from_str(&url)?).await?,
    );

    let mut table = Vec::new();
    for (name, op) in [("point read (ops/s)", Op::PointRead), ("upsert (ops/s)", Op::Upsert)] {
        let (mut on_native, mut on_any) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            on_any.push(throughput(&any, op, rows, tasks, seconds).await?);
            on_native.push(throughput(&native, op, rows, tasks, seconds).await?);
        }
        table.push((name, summary(&mut on_any), summary(&mut on_native)));
    }

    let tenant = TenantId::parse("bench")?;
    let (from, to) = (ShardId::parse("src")?, ShardId::parse("dst")?);
    let (mut pages, mut binary) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        for (method, rates) in [(CopyMethod::Pages, &mut pages), (CopyMethod::Binary, &mut binary)] {
            sqlx::query("TRUNCATE records").execute(&target.pool).await?;
            let began = Instant::now();
            let copied = RecordStore::new(&source, &from)
                .copy_to(&RecordStore::new(&target, &to), Selection::Tenant(&tenant), method)
                .await?;
            let secs = began.elapsed().as_secs_f64();
            if copied.method != method || copied.written != rows {
                return Err(
                    format!("{method:?} copy wrote {} of {rows} rows ({:?})", copied.written, copied.method).into()
                );
            }
            rates.push(rows as f64 / secs);
        }
    }
    table.push(("bulk copy (rows/s)", summary(&mut pages), summary(&mut binary)));

    source.close().await;
    target.close().await;
    for pool in [native, any] {
        match pool {
            Pool::Native(pool) => pool.close().await,
            Pool::Any(pool) => pool.close().await,
        }
    }
    drop_databases(&admin).await?;

    println!(
        "{rows} rows; {tasks} tasks on {pool_size} connections for {seconds} s per measurement; median (min–max) of {rounds} rounds\n"
    );
    println!("| operation | Any driver | native driver | native ÷ Any |");
    println!("| --- | ---: | ---: | ---: |");
    for (name, (any, any_min, any_max), (native, native_min, native_max)) in table {
        println!(
            "| {name} | {any:.0} ({any_min:.0}–{any_max:.0}) | {native:.0} ({native_min:.0}–{native_max:.0}) | {:.2} |",
            native / any
        );
    }
    Ok(())
}
