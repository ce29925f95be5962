//! What the bench binaries share.

pub mod delay;

/// A whole number from the environment variable `name`, or `default` when it is unset; an error
/// that names the variable when it is set to something else.
pub fn env_number<T: std::str::FromStr>(name: &str, default: T) -> Result<T, String> {
    match std::env::var(name) {
        Ok(raw) => raw.parse().map_err(|_| format!("{name} must be a whole number, got {raw:?}")),
        Err(_) => Ok(default),
    }
}

use std::time::Duration;

use secrecy::SecretString;
use shardgate_api::Config;
use shardgate_api::config::LogConfig;
use shardgate_gatekeeper::throttle::RateLimit;
use shardgate_gatekeeper::{IssuerConfig, Scope, Scopes, TokenRequest, mint_token};
use shardgate_shard_router::ShardId;
use shardgate_shard_router::router::ShardSeed;

/// The issuer of the benchmarks' tokens.
pub const ISSUER: &str = "bench";
/// Its HS256 secret.
pub const SECRET: &str = "shardgate-bench-hs256-secret-not-for-production-use";
/// The machine's PostgreSQL server.
pub const PG: &str = "postgres://postgres@127.0.0.1:5432";

/// The error of a benchmark step.
pub type BenchResult<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// A token of [`ISSUER`] for `subject`, of `tenant` (none: an admin's), with `scopes`, valid a day.
pub fn mint(subject: &str, tenant: Option<&str>, scopes: &[Scope]) -> BenchResult<String> {
    let request = TokenRequest {
        issuer: ISSUER.into(),
        subject: subject.into(),
        tenant: tenant.map(str::to_owned),
        scopes: Scopes::of(scopes),
        ttl: Duration::from_secs(24 * 3600),
    };
    Ok(mint_token(&SecretString::from(SECRET), &request)?)
}

/// Runs `tasks` workers at once until `seconds` have passed: `worker(task, deadline)` is task
/// number `task`, which works until `deadline`. Returns what the workers returned, in task order,
/// and how long the run took (until the last one finished); the first worker error, if any.
pub async fn run_workers<T, E, Fut>(
    tasks: u64,
    seconds: u64,
    worker: impl Fn(u64, std::time::Instant) -> Fut,
) -> Result<(Vec<T>, Duration), E>
where
    Fut: std::future::Future<Output = Result<T, E>> + Send + 'static,
    T: Send + 'static,
    E: Send + 'static,
{
    let start = std::time::Instant::now();
    let deadline = start + Duration::from_secs(seconds);
    let workers: Vec<_> = (0..tasks).map(|task| tokio::spawn(worker(task, deadline))).collect();
    let mut results = Vec::with_capacity(workers.len());
    for worker in workers {
        results.push(worker.await.expect("a worker panicked")?);
    }
    Ok((results, start.elapsed()))
}

/// The `p` quantile (0–1) of ascending `sorted` (NaN if empty).
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// The production configuration of a gateway in this process: PostgreSQL catalog `catalog` and
/// shards `shards` (ids and database names on [`PG`]), Redis record cache and rate limits under
/// key prefixes of `tag`, tiers' rate limits raised so the limiter runs but never refuses, tokens
/// of [`ISSUER`], warnings only in the log, data in `data_dir`.
pub fn production_config(
    data_dir: &std::path::Path,
    catalog: &str,
    shards: &[(String, String)],
    tag: &str,
) -> BenchResult<Config> {
    let mut config = Config { listen: "127.0.0.1:0".parse()?, data_dir: data_dir.to_path_buf(), ..Config::default() };
    config.storage.catalog_url = Some(SecretString::from(format!("{PG}/{catalog}")));
    for (id, database) in shards {
        config.storage.shards.push(ShardSeed {
            id: ShardId::parse(id)?,
            url: SecretString::from(format!("{PG}/{database}")),
            password_file: None,
        });
    }
    config.cache.redis_url = Some(SecretString::from("redis://127.0.0.1:6379"));
    config.cache.key_prefix = format!("{tag}-cache");
    config.rate_limits.redis_url = Some(SecretString::from("redis://127.0.0.1:6379"));
    config.rate_limits.key_prefix = format!("{tag}-rl");
    let unlimited = RateLimit { per_second: 1_000_000_000, burst: 1_000_000_000 };
    for tier in ["free", "standard", "premium"] {
        config.rate_limits.tiers.insert(tier.to_owned(), unlimited);
    }
    config.auth.issuers =
        vec![IssuerConfig { allow_any_audience: true, ..IssuerConfig::hs256(ISSUER, SecretString::from(SECRET)) }];
    config.log = LogConfig { filter: "warn".to_owned(), ..LogConfig::default() };
    Ok(config)
}

/// Writes `records` records `k000000`, `k000001`, ... of about 200 bytes (`{"n": n, "pad": ...}`)
/// into `collection` of the tenant of `token` (`tenant`) through the gateway at `base`, 32 at a
/// time.
pub async fn load_records(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    (tenant, collection): (&str, &str),
    records: usize,
) -> BenchResult<()> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let payload = "x".repeat(160);
    let next = Arc::new(AtomicUsize::new(0));
    let mut loaders = tokio::task::JoinSet::new();
    for _ in 0..32 {
        let (client, token, next, payload) = (client.clone(), token.to_owned(), next.clone(), payload.clone());
        let prefix = format!("{base}/v1/tenants/{tenant}/collections/{collection}/records");
        loaders.spawn(async move {
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= records {
                    return Ok::<(), reqwest::Error>(());
                }
                let body = serde_json::json!({"n": n, "pad": payload});
                client.put(format!("{prefix}/k{n:06}")).bearer_auth(&token).json(&body).send().await?;
            }
        });
    }
    while let Some(done) = loaders.join_next().await {
        done??;
    }
    Ok(())
}

/// A gateway in this process on its own PostgreSQL catalog and shard databases (created on
/// start, dropped by [`Gateway::stop`]), in the [`production_config`].
#[derive(Debug)]
pub struct Gateway {
    /// Its base URL.
    pub base: String,
    names: Vec<String>,
    stop: tokio::sync::oneshot::Sender<()>,
    server: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

impl Gateway {
    /// Creates a catalog and `shards` shard databases named after `tag`, and starts a gateway
    /// on them with the production configuration as `tweak` changes it.
    pub async fn start(tag: &str, shards: usize, tweak: impl FnOnce(&mut Config)) -> BenchResult<Self> {
        use sqlx::Connection;
        let mut names = vec![format!("{tag}_cat")];
        names.extend((0..shards).map(|i| format!("{tag}_s{i}")));
        let mut admin_db = sqlx::PgConnection::connect(&format!("{PG}/postgres")).await?;
        for name in &names {
            sqlx::query(&format!("CREATE DATABASE {name}")).execute(&mut admin_db).await?;
        }
        let started = async {
            let dir = tempfile::tempdir()?;
            let ids: Vec<(String, String)> =
                names[1..].iter().enumerate().map(|(i, name)| (format!("s{i}"), name.clone())).collect();
            let mut config = production_config(dir.path(), &names[0], &ids, tag)?;
            tweak(&mut config);
            let app = shardgate_api::Application::build(config).await?;
            let base = format!("http://{}", app.local_addr());
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            let server = tokio::spawn(async move {
                if let Err(e) = app
                    .run_until(async move {
                        let _ = stopped.await;
                    })
                    .await
                {
                    eprintln!("the gateway stopped: {e}");
                }
            });
            BenchResult::Ok((base, stop, server, dir))
        };
        match started.await {
            Ok((base, stop, server, dir)) => Ok(Self { base, names, stop, server, _dir: dir }),
            Err(e) => {
                drop_databases(&mut admin_db, &names).await?;
                Err(e)
            }
        }
    }

    /// Vacuums and analyzes each of its databases (the catalog and every shard), so that what
    /// is measured after a load does not meet autovacuum's first pass over what was loaded:
    /// with many shards on one machine, that pass runs once per database, each a burst of work
    /// on the cores the measurement shares.
    pub async fn settle(&self) -> BenchResult<()> {
        use sqlx::Connection;
        for name in &self.names {
            let mut db = sqlx::PgConnection::connect(&format!("{PG}/{name}")).await?;
            sqlx::query("VACUUM (ANALYZE)").execute(&mut db).await?;
            db.close().await?;
        }
        Ok(())
    }

    /// Stops the gateway and drops its databases.
    pub async fn stop(self) -> BenchResult<()> {
        use sqlx::Connection;
        let _ = self.stop.send(());
        let _ = self.server.await;
        let mut admin_db = sqlx::PgConnection::connect(&format!("{PG}/postgres")).await?;
        drop_databases(&mut admin_db, &self.names).await
    }
}

/// Creates tenant `id` through the admin API of the gateway at `base`.
pub async fn create_tenant(client: &reqwest::Client, base: &str, id: &str) -> BenchResult<()> {
    let admin = mint("bench-admin", None, &[Scope::Admin])?;
    let created = client
        .post(format!("{base}/v1/admin/tenants"))
        .bearer_auth(&admin)
        .json(&serde_json::json!({"id": id}))
        .send()
        .await?;
    if created.status() != 201 {
        return Err(format!("creating tenant {id}: {}", created.status()).into());
    }
    Ok(())
}

/// Distributes `tenant`'s `collection` `hash` through the admin API of the gateway at `base`.
pub async fn distribute_hash(client: &reqwest::Client, base: &str, tenant: &str, collection: &str) -> BenchResult<()> {
    let admin = mint("bench-admin", None, &[Scope::Admin])?;
    let distributed = client
        .put(format!("{base}/v1/admin/tenants/{tenant}/collections/{collection}"))
        .bearer_auth(&admin)
        .json(&serde_json::json!({"distribution": "hash"}))
        .send()
        .await?;
    if distributed.status() != 200 {
        return Err(format!("distributing {tenant}/{collection}: {}", distributed.status()).into());
    }
    Ok(())
}

async fn drop_databases(admin_db: &mut sqlx::PgConnection, names: &[String]) -> BenchResult<()> {
    for name in names {
        sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).execute(&mut *admin_db).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// `bench/cpu_split.py`, which `bench/run.sh` uses to split a run's CPU by process, checks its
    /// own parsing and arithmetic.
    #[test]
    fn the_cpu_split_script_passes_its_self_test() {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/cpu_split.py");
        let out = std::process::Command::new("python3").arg(script).arg("--selftest").output().expect("python3 runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok");
    }
}
