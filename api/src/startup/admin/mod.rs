//! `shardgate admin`: the operator's command line over the public admin API
//! (`/v1/admin/...`), so that everything it does is also what a script or the console can do,
//! and audited the same. It never opens a database.
//!
//! - [`client`]: the gateway's URL, the token from `SHARDGATE_TOKEN`, problems as [`Failure`]s;
//! - [`output`]: `--json` (the API's JSON as-is) or tables and fields for people;
//! - [`progress`]: `--wait`, following a job with a bar or lines on standard error;
//! - one file per command family: [`shards`], [`tenants`], [`moves`], [`rebalance`] (with the
//!   drain), [`jobs`], [`balancer`], [`audit`];
//! - [`failure`]: why a command failed and its exit code.
//!
//! Must not know: the catalog, the shards, the server's configuration. It is a client of the
//! HTTP API and nothing else.

pub mod audit;
pub mod balancer;
pub mod client;
pub mod failure;
pub mod jobs;
pub mod moves;
pub mod output;
pub mod progress;
pub mod rebalance;
pub mod shards;
pub mod tenants;

use clap::{Args, Subcommand};

use self::audit::AuditCommand;
use self::balancer::BalancerCommand;
use self::client::AdminClient;
pub use self::failure::Failure;
use self::jobs::JobsCommand;
use self::moves::MoveCommand;
use self::output::Output;
use self::rebalance::{DrainCommand, RebalanceCommand};
use self::shards::ShardsCommand;
use self::tenants::TenantsCommand;

/// `shardgate admin`: its global options and the command.
#[derive(Debug, Args)]
#[command(
    after_help = "The admin token is read from SHARDGATE_TOKEN, never from a flag (a flag's value lands in shell \
                  history and `ps`): export SHARDGATE_TOKEN=$(shardgate token --admin)\n\nExit codes: 0 done, 1 \
                  nothing sent (no token, bad argument), 2 usage, 3 the gateway refused the request (4xx), 4 the \
                  gateway failed (5xx) or cannot be reached, 5 the job waited for failed or was cancelled, 130 \
                  Ctrl-C stopped waiting (the job keeps running). See docs/admin-cli.md."
)]
pub struct AdminArgs {
    /// The gateway's base URL.
    #[arg(long, global = true, env = "SHARDGATE_URL", default_value = "http://127.0.0.1:8080")]
    url: String,
    /// Print the API's JSON answer as-is (one document) instead of tables.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: AdminCommand,
}

/// The admin commands.
#[derive(Debug, Subcommand)]
enum AdminCommand {
    /// Shards: list, show, add, state, remove.
    Shards {
        #[command(subcommand)]
        command: Option<ShardsCommand>,
    },
    /// Tenants: list, show, create.
    Tenants {
        #[command(subcommand)]
        command: Option<TenantsCommand>,
    },
    /// Move a tenant to another shard while its traffic flows.
    Move(MoveCommand),
    /// Rebalance the vshards over the active shards (or plan it with --dry-run).
    Rebalance(RebalanceCommand),
    /// Drain a shard: move everything it holds to the active shards.
    Drain(DrainCommand),
    /// Background jobs: list, show, cancel, wait.
    Jobs {
        #[command(subcommand)]
        command: Option<JobsCommand>,
    },
    /// The load balancer: show, mode, plan, run, approve.
    Balancer {
        #[command(subcommand)]
        command: Option<BalancerCommand>,
    },
    /// The audit log of admin actions.
    Audit(AuditCommand),
}

impl AdminArgs {
    /// Runs the command against the gateway at `--url`.
    pub async fn run(self) -> Result<(), Failure> {
        let client = AdminClient::from_env(&self.url)?;
        let output = Output { json: self.json };
        match self.command {
            AdminCommand::Shards { command } => command.unwrap_or(ShardsCommand::List).run(&client, output).await,
            AdminCommand::Tenants { command } => {
                command.unwrap_or(TenantsCommand::List { limit: None, cursor: None }).run(&client, output).await
            }
            AdminCommand::Move(command) => command.run(&client, output).await,
            AdminCommand::Rebalance(command) => command.run(&client, output).await,
            AdminCommand::Drain(command) => command.run(&client, output).await,
            AdminCommand::Jobs { command } => {
                let list = JobsCommand::List { state: None, kind: None, limit: None, cursor: None };
                command.unwrap_or(list).run(&client, output).await
            }
            AdminCommand::Balancer { command } => {
                command.unwrap_or(BalancerCommand::Show { limit: None }).run(&client, output).await
            }
            AdminCommand::Audit(command) => command.run(&client, output).await,
        }
    }
}
