//! The `shardgate` command line: `serve`, `gatekeeper`, `migrate`, `token`, `openapi`, `probe`,
//! `admin`, `check`.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use secrecy::SecretString;
use shardgate_gatekeeper::{KeyAlgorithm, KeySources, Scope, Scopes, TokenRequest, mint_token_for_audience};
use shardgate_shard_router::ShardRouter;
use shardgate_shard_router::db::humantime_serde::parse_duration;

use crate::cli::AdminArgs;
use crate::config::{Config, GatekeeperConfig, Loaded, warn_unknown_env};
use crate::observability::telemetry;
use crate::startup::application::{Application, openapi_document};
use crate::startup::embedded::{DataDirLock, EMBEDDED_ISSUER, load_secret};
use crate::startup::gatekeeper_proxy::Gatekeeper;

/// shardgate: a multi-tenant sharded storage gateway.
#[derive(Debug, Parser)]
#[command(name = "shardgate", version, about)]
pub struct Cli {
    /// Configuration file (TOML). Environment variables `SHARDGATE_*` override it.
    #[arg(long, global = true, env = "SHARDGATE_CONFIG")]
    config: Option<PathBuf>,
    /// Data directory of the embedded default (overrides `data_dir` / `SHARDGATE_DATA_DIR`).
    #[arg(long, global = true)]
    data_dir: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the HTTP API (the embedded default when nothing is configured).
    Serve {
        /// Address to listen on (overrides `listen` / `SHARDGATE_LISTEN`; default 127.0.0.1:8080).
        #[arg(long)]
        listen: Option<std::net::SocketAddr>,
        /// Serve only requests forwarded by `shardgate gatekeeper` (they carry its internal
        /// credential; everything else gets 401). Needs `internal.secret`.
        #[arg(long)]
        trusted: bool,
    },
    /// Run the gatekeeper alone: validate every request and forward it to a trusted backend.
    /// Its configuration holds no shard or catalog URL.
    Gatekeeper {
        /// Base URL of the backend started with `shardgate serve --trusted`.
        #[arg(long)]
        upstream: Option<String>,
        /// Address to listen on (default 127.0.0.1:8080).
        #[arg(long)]
        listen: Option<std::net::SocketAddr>,
    },
    /// Apply catalog and shard migrations to every configured and registered database.
    Migrate,
    /// Print a JWT signed with the configured HS256 secret (the embedded default's, which
    /// `shardgate serve` generated in its data directory: give the same --data-dir). Say who the
    /// token is for: `--tenant <id>` or `--admin`.
    Token {
        /// Tenant the token is bound to (or --admin for a platform token).
        #[arg(long, conflicts_with = "admin")]
        tenant: Option<String>,
        /// Comma-separated scopes: read, write, manage.
        #[arg(long, default_value = "read,write")]
        scopes: String,
        /// A platform token with the `admin` scope (no tenant).
        #[arg(long)]
        admin: bool,
        /// Lifetime, e.g. 15m, 1h, 7d (more than 0).
        #[arg(long, default_value = "1h")]
        ttl: String,
    },
    /// Print the OpenAPI document.
    Openapi,
    /// GET a probe URL once: exit status 0 on a 2xx answer, 1 otherwise (for health checks in
    /// images without curl).
    Probe(crate::startup::probe::ProbeArgs),
    /// Administer a running gateway over its admin API (token from SHARDGATE_TOKEN).
    Admin(AdminArgs),
    /// Check a restored fleet for consistency and say what to do; changes nothing unless asked to
    /// repair. Exit status 0: clean, 1: findings, 2: something could not be checked
    /// (docs/check.md).
    Check {
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// First rewrite the kept usage of each shard where it disagrees with the rows, from the
        /// rows (the one change `check` makes), then check.
        #[arg(long)]
        repair_usage: bool,
    },
}

impl Cli {
    /// Runs the chosen command.
    pub async fn run(self) -> anyhow::Result<()> {
        if let Command::Probe(probe) = self.command {
            return probe.run().await;
        }
        if let Command::Admin(admin) = self.command {
            return Ok(admin.run().await?);
        }
        if let Command::Gatekeeper { upstream, listen } = self.command {
            let Loaded { mut config, unknown_env } =
                GatekeeperConfig::load(self.config.as_deref()).context("invalid gatekeeper configuration")?;
            config.upstream = upstream.or(config.upstream);
            config.listen = listen.unwrap_or(config.listen);
            if let Some(dir) = self.data_dir {
                config.data_dir = dir;
            }
            telemetry::init_with_traces(&config.log, &config.telemetry, &config.trusted_proxies)?;
            warn_unknown_env(&unknown_env);
            let gatekeeper = Gatekeeper::build(config).await?;
            println!("shardgate gatekeeper listening on {}", gatekeeper.base_url());
            gatekeeper.run_until(shutdown_signal()).await?;
            telemetry::flush();
            tracing::info!("shut down cleanly");
            return Ok(());
        }
        let Loaded { mut config, unknown_env } =
            Config::load(self.config.as_deref()).context("invalid configuration")?;
        if let Some(dir) = self.data_dir {
            config.data_dir = dir;
        }
        match self.command {
            Command::Serve { listen, trusted } => {
                if let Some(listen) = listen {
                    config.listen = listen;
                }
                config.trusted |= trusted;
                telemetry::init_with_traces(&config.log, &config.telemetry, &config.trusted_proxies)?;
                warn_unknown_env(&unknown_env);
                serve(config).await
            }
            Command::Migrate => {
                telemetry::init(&config.log);
                warn_unknown_env(&unknown_env);
                for done in ShardRouter::migrate_all(&config.storage, &config.data_dir).await? {
                    println!("migrated {done}");
                }
                Ok(())
            }
            Command::Token { tenant, scopes, admin, ttl } => {
                if tenant.is_none() && !admin {
                    bail!(
                        "say who the token is for: `--tenant <id>` for a tenant's token (with --scopes), or `--admin` \
                         for a platform token with the admin scope"
                    );
                }
                let ttl = parse_duration(&ttl).with_context(|| format!("--ttl {ttl:?}"))?;
                if ttl.is_zero() {
                    bail!("--ttl must be more than 0 (a token that expires at once is refused by every server)");
                }
                println!("{}", token(&config, tenant, &scopes, admin, ttl)?);
                Ok(())
            }
            Command::Openapi => {
                println!("{}", openapi_document().to_pretty_json()?);
                Ok(())
            }
            Command::Check { json, repair_usage } => {
                telemetry::init_with_writer(&config.log, std::io::stderr);
                warn_unknown_env(&unknown_env);
                std::process::exit(crate::startup::check::run(&config, json, repair_usage).await)
            }
            Command::Gatekeeper { .. } | Command::Probe(_) | Command::Admin(_) => unreachable!("handled above"),
        }
    }
}

async fn serve(config: Config) -> anyhow::Result<()> {
    let embedded = config.storage.catalog_url.is_none();
    let data_dir = config.data_dir.clone();
    // One server per embedded data directory: a second one would serve what the first cached.
    let lock = if embedded { Some(DataDirLock::acquire(&data_dir)?) } else { None };
    let app = Application::build(config).await?;
    let base = app.base_url();
    println!("shardgate listening on {base}");
    println!("  API docs:    {base}/docs");
    println!("  console:     {base}/console (sign in with an admin token)");
    if let Some(valet) = app.valet_base_url() {
        println!("  valet URLs:  {valet}/valet/...");
    }
    if embedded {
        println!("  embedded default: SQLite catalog and shards in {}", data_dir.display());
    }
    let dir_flag = if data_dir == Config::default().data_dir {
        String::new()
    } else {
        format!(" --data-dir {}", data_dir.display())
    };
    for line in token_banner(&app.state().gate.auth.key_sources(), &dir_flag) {
        println!("{line}");
    }
    app.run_until(shutdown_signal()).await?;
    telemetry::flush();
    tracing::info!("shut down cleanly");
    drop(lock);
    Ok(())
}

/// The start-up banner's lines on tokens: the `shardgate token` commands only when an issuer has
/// a local HS256 secret (the only tokens that command can sign), and where each issuer's keys are
/// fetched from.
fn token_banner(sources: &KeySources, dir_flag: &str) -> Vec<String> {
    let mut lines = Vec::new();
    if !sources.local_secret.is_empty() {
        lines.push(format!("  admin token: shardgate token --admin{dir_flag}"));
        lines.push(format!("  token:       shardgate token --tenant demo --scopes read,write{dir_flag}"));
    }
    for (issuer, url) in &sources.fetched {
        lines.push(format!("  tokens of {issuer}: signed by its identity provider, keys from {url}"));
    }
    if sources.local_secret.is_empty() && sources.fetched.is_empty() {
        lines.push("  tokens:      signed by the configured issuers' own keys (auth.issuers)".to_owned());
    }
    lines
}

/// Completes on SIGINT or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "cannot listen for SIGINT");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
    tracing::info!("shutdown signal received; finishing in-flight requests");
}

fn token(config: &Config, tenant: Option<String>, scopes: &str, admin: bool, ttl: Duration) -> anyhow::Result<String> {
    // An issuer that lists audiences accepts only tokens for one of them: mint for the first.
    let (issuer, secret, audience): (String, SecretString, Option<String>) = if config.auth.issuers.is_empty() {
        (EMBEDDED_ISSUER.to_owned(), load_secret(&config.data_dir)?, None)
    } else {
        let hs = config
            .auth
            .issuers
            .iter()
            .find(|i| i.allowed_algorithms().any(|a| a == KeyAlgorithm::HS256) && i.secret.is_some())
            .context("no HS256 issuer with a secret is configured: tokens for RS256/ES256/EdDSA issuers come from their identity provider")?;
        (hs.issuer.clone(), hs.secret.clone().context("issuer has no secret")?, hs.audience.first().cloned())
    };
    let (scopes, subject) = if admin {
        (Scopes::of(&[Scope::Admin]), "admin".to_owned())
    } else {
        let mut parsed = Vec::new();
        for name in scopes.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match Scope::parse(name) {
                Some(Scope::Admin) => bail!(
                    "`admin` is not a tenant's scope (a tenant's token is never a platform admin): mint a platform \
                     token with --admin, without --tenant"
                ),
                Some(scope) => parsed.push(scope),
                None => bail!("unknown scope {name:?}: use read, write, manage"),
            }
        }
        (Scopes::of(&parsed), format!("cli:{}", tenant.as_deref().unwrap_or_default()))
    };
    if let Some(t) = &tenant {
        shardgate_shard_router::TenantId::parse(t)?;
    }
    let request = TokenRequest { issuer, subject, tenant, scopes, ttl };
    Ok(mint_token_for_audience(&secret, &request, audience.as_deref())?)
}
