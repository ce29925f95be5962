//! `shardgate admin`: the operator's command line over the public admin API
//! (`/v1/admin/...`), so that everything it does is also what a script or the console can do,
//! and audited the same. It never opens a database.
//!
//! A room of its own: an HTTP client of the API, it uses no other room of the crate (the
//! command line in [`crate::startup::cli`] runs it).
//!
//! - [`client`]: the gateway's URL, the token from `SHARDGATE_TOKEN`, problems as [`Failure`]s;
//! - [`output`]: `--json` (the API's JSON as-is) or tables and fields for people;
//! - [`progress`]: `--wait`, following a job with a bar or lines on standard error;
//! - one file per command family: [`shards`], [`tenants`], [`moves`], [`rebalance`] (with the
//!   drain), [`jobs`], [`balancer`], [`audit`];
//! - [`failure`]: why a command failed and its exit code;
//! - [`shape`]: what each answer must hold; [`printable`]: what of it reaches the terminal.
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
pub mod printable;
pub mod progress;
pub mod rebalance;
pub mod shape;
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
    /// Allow plain http:// to a host other than this machine (the admin token then travels in
    /// clear): only over a private way there, such as an SSH tunnel.
    #[arg(long, global = true)]
    insecure_http: bool,
    /// The server's `--config` has no meaning here: the same id keeps the global flag out of
    /// the admin commands (clap propagates a global flag only where its id is not taken), and
    /// a value given refuses with a reason.
    #[arg(id = "config", long = "config", hide = true, value_parser = not_an_admin_flag)]
    _config: Option<String>,
    /// The server's `--data-dir`, likewise.
    #[arg(id = "data_dir", long = "data-dir", hide = true, value_parser = not_an_admin_flag)]
    _data_dir: Option<String>,
    #[command(subcommand)]
    command: AdminCommand,
}

/// Refuses a server flag given to `shardgate admin`.
fn not_an_admin_flag(_: &str) -> Result<String, String> {
    Err("the admin commands read no server configuration and no data directory: they only call the gateway \
         at --url"
        .to_owned())
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
    #[command(args_conflicts_with_subcommands = true)]
    Tenants {
        #[command(subcommand)]
        command: Option<TenantsCommand>,
        // Without a command: `list` with these flags.
        #[command(flatten)]
        list: tenants::ListArgs,
    },
    /// Move a tenant to another shard while its traffic flows.
    Move(MoveCommand),
    /// Rebalance the vshards over the active shards (or plan it with --dry-run).
    Rebalance(RebalanceCommand),
    /// Drain a shard: move everything it holds to the active shards.
    Drain(DrainCommand),
    /// Background jobs: list, show, cancel, wait.
    #[command(args_conflicts_with_subcommands = true)]
    Jobs {
        #[command(subcommand)]
        command: Option<JobsCommand>,
        // Without a command: `list` with these flags.
        #[command(flatten)]
        list: jobs::ListArgs,
    },
    /// The load balancer: show, mode, plan, run, approve.
    #[command(args_conflicts_with_subcommands = true)]
    Balancer {
        #[command(subcommand)]
        command: Option<BalancerCommand>,
        // Without a command: `show` with these flags.
        #[command(flatten)]
        show: balancer::ShowArgs,
    },
    /// The audit log of admin actions.
    Audit(AuditCommand),
}

impl AdminArgs {
    /// Runs the command against the gateway at `--url`. What its failure quotes of the gateway
    /// is made fit for the terminal ([`Failure::for_terminal`]).
    pub async fn run(self) -> Result<(), Failure> {
        self.run_command().await.map_err(Failure::for_terminal)
    }

    async fn run_command(self) -> Result<(), Failure> {
        let client = AdminClient::from_env(&self.url, self.insecure_http)?;
        let output = Output { json: self.json };
        match self.command {
            AdminCommand::Shards { command } => command.unwrap_or(ShardsCommand::List).run(&client, output).await,
            AdminCommand::Tenants { command, list } => {
                command.unwrap_or(TenantsCommand::List(list)).run(&client, output).await
            }
            AdminCommand::Move(command) => command.run(&client, output).await,
            AdminCommand::Rebalance(command) => command.run(&client, output).await,
            AdminCommand::Drain(command) => command.run(&client, output).await,
            AdminCommand::Jobs { command, list } => {
                command.unwrap_or(JobsCommand::List(list)).run(&client, output).await
            }
            AdminCommand::Balancer { command, show } => {
                command.unwrap_or(BalancerCommand::Show(show)).run(&client, output).await
            }
            AdminCommand::Audit(command) => command.run(&client, output).await,
        }
    }
}
