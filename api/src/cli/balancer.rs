//! `shardgate admin balancer`: the balancer's mode, settings, proposals and runs
//! (`/v1/admin/balancer`), switching its mode, what its policy would do now (`plan`), running it
//! once (`run`) and approving a proposal (`approve`, followed with `--wait`).

use std::fmt::Write as _;

use clap::{Args, Subcommand, ValueEnum};
use serde_json::{Value, json};

use super::client::{AdminClient, path_segment};
use super::failure::Failure;
use super::jobs::follow;
use super::output::{Fields, Output, Table, cell, number_cell, percent_cell};
use super::progress::WaitArgs;
use super::shape::{JOB, Kind, Shape};

/// The balancer's view (`GET /v1/admin/balancer`, and what switching its mode answers).
const VIEW: Shape =
    Shape::object("the balancer", &[("mode", Kind::Text), ("proposals", Kind::List), ("runs", Kind::List)]);
/// What its policy would do now.
const PLAN: Shape = Shape::object("a balancer plan", &[("shards", Kind::List), ("reason", Kind::Text)]);
/// One run.
const RUN: Shape = Shape::object(
    "a balancer run",
    &[("id", Kind::Number), ("outcome", Kind::Text), ("shards", Kind::List), ("reason", Kind::Text)],
);
/// An approved proposal and the job it started.
const APPROVAL: Shape = Shape::object("an approval", &[("proposal", Kind::Object), ("job", Kind::Of(&JOB))]);

/// The balancer's modes.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Mode {
    /// It only records what it sees.
    Off,
    /// It proposes moves for an operator to approve.
    Propose,
    /// It starts its moves itself.
    Apply,
}

impl Mode {
    fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Propose => "propose",
            Self::Apply => "apply",
        }
    }
}

/// What to do with the balancer.
#[derive(Debug, Subcommand)]
pub enum BalancerCommand {
    /// The mode in force, the settings, the pending proposals and the last runs (the default:
    /// `balancer --limit 5` is `balancer show --limit 5`).
    Show(ShowArgs),
    /// Switch the mode at runtime, for every instance (audited).
    Mode {
        /// `off`, `propose` or `apply`.
        #[arg(value_enum)]
        mode: Mode,
    },
    /// What the balancer's policy would do now: each shard's load and the move it would choose.
    Plan {
        /// The span of load to plan over, e.g. `5m` (the balancer's window by default).
        #[arg(long)]
        window: Option<String>,
    },
    /// Run the balancer once now, on the instance that answers.
    Run,
    /// Approve a pending proposal: the balancer plans again and, if it would still move the same
    /// thing, starts the move.
    Approve {
        /// The proposal's id (its run's id).
        id: String,
        #[command(flatten)]
        wait: WaitArgs,
    },
}

/// How much of the balancer to show.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// How many of the last runs to show, 1 to 200 (the API's default is 20).
    #[arg(long)]
    limit: Option<u32>,
}

impl BalancerCommand {
    /// Runs the command against `client`, printing through `output`.
    pub async fn run(self, client: &AdminClient, output: Output) -> Result<(), Failure> {
        match self {
            Self::Show(ShowArgs { limit }) => {
                let query = [("limit", limit.map(|l| l.to_string()))];
                output.print(&client.get("/v1/admin/balancer", &query, &VIEW).await?, view_text);
            }
            Self::Mode { mode } => {
                let view = client.put("/v1/admin/balancer/mode", &json!({"mode": mode.as_str()}), &VIEW).await?;
                output.print(&view, |v| format!("balancer mode: {}\n", cell(v, "mode")));
            }
            Self::Plan { window } => {
                let plan = client.get("/v1/admin/balancer/plan", &[("window", window)], &PLAN).await?;
                output.print(&plan, plan_text);
            }
            Self::Run => {
                let run = client.post_without_body("/v1/admin/balancer/runs", &RUN).await?;
                output.print(&run, |r| format!("run {}: {}\n{}", cell(r, "id"), cell(r, "outcome"), plan_text(r)));
            }
            Self::Approve { id, wait } => {
                let path = format!("/v1/admin/balancer/proposals/{}/approve", path_segment(&id));
                let approval = client.post_without_body(&path, &APPROVAL).await?;
                let job = approval.get("job").cloned().unwrap_or(Value::Null);
                let started = |j: &Value| format!("approved proposal {id}: job {}\n", cell(j, "id"));
                if wait.wait {
                    follow(client, output, &job, wait, &["done"], started).await?;
                } else {
                    output.print(&approval, |a| {
                        let job = a.get("job").unwrap_or(&Value::Null);
                        format!("{}follow it: shardgate admin jobs wait {}\n", started(job), cell(job, "id"))
                    });
                }
            }
        }
        Ok(())
    }
}

fn view_text(view: &Value) -> String {
    let mut fields = Fields::default();
    let switched = match view.get("mode_switched_by").and_then(Value::as_str) {
        Some(by) => format!(" (switched by {by} at {})", cell(view, "mode_switched_at")),
        None => " (as configured)".to_owned(),
    };
    fields.add("mode", format!("{}{switched}", cell(view, "mode")));
    let runner = match view.get("runner").and_then(Value::as_str) {
        Some(runner) => format!("{runner} (lease until {})", cell(view, "lease_until")),
        None => "none".to_owned(),
    };
    fields.add("runner", runner).add("this instance", cell(view, "this_instance"));
    if let Some(settings) = view.get("settings") {
        fields
            .add(
                "every",
                format!(
                    "{} s over a window of {} s",
                    number_cell(settings, "interval_s"),
                    number_cell(settings, "window_s")
                ),
            )
            .add("threshold", format!("{} above the mean", percent_cell(settings, "threshold")))
            .add("moves at once", cell(settings, "max_concurrent_moves"));
    }
    let mut out = fields.render();
    let runs = |key: &str| view.get(key).and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    out.push_str("\npending proposals:\n");
    out.push_str(&run_table(runs("proposals")).render_or("none"));
    out.push_str("\nlast runs:\n");
    out.push_str(&run_table(runs("runs")).render_or("none"));
    out
}

fn run_table(runs: &[Value]) -> Table {
    let mut table = Table::new(&["ID", "AT", "MODE", "OUTCOME", "MOVE", "JOB", "REASON"]);
    for run in runs {
        table.row(vec![
            cell(run, "id"),
            cell(run, "at"),
            cell(run, "mode"),
            cell(run, "outcome"),
            planned_move(run.get("move").unwrap_or(&Value::Null)),
            job_id(run),
            cell(run, "reason"),
        ]);
    }
    table
}

/// The id of the job a run started (the API names it by its path, `/v1/admin/jobs/{id}`), `-`
/// when none.
fn job_id(run: &Value) -> String {
    let job = cell(run, "job");
    job.rsplit('/').next().unwrap_or(&job).to_owned()
}

/// The move a plan or run chose (its `move`): `vshard 12 shard-0 -> shard-1`, `tenant acme
/// shard-0 -> shard-2`, `-` when none.
fn planned_move(planned: &Value) -> String {
    if planned.is_null() {
        return "-".to_owned();
    }
    let what = match planned.get("kind").and_then(Value::as_str) {
        Some("tenant") => format!("tenant {}", cell(planned, "tenant")),
        _ => format!("vshard {}", cell(planned, "vshard")),
    };
    format!("{what} {} -> {}", cell(planned, "from"), cell(planned, "to"))
}

fn plan_text(plan: &Value) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "load from {} to {}: mean {} ms/s, overfull above {} ms/s",
        cell(plan, "since"),
        cell(plan, "until"),
        number_cell(plan, "mean_statement_ms_per_s"),
        number_cell(plan, "overfull_above_ms_per_s")
    );
    let mut shards = Table::new(&["SHARD", "LOAD ms/s", "HOT SHARE", "HELD"]);
    for shard in plan.get("shards").and_then(Value::as_array).map_or(&[][..], Vec::as_slice) {
        shards.row(vec![
            cell(shard, "shard"),
            number_cell(shard, "statement_ms_per_s"),
            percent_cell(shard, "hot_share"),
            cell(shard, "held"),
        ]);
    }
    out.push_str(&shards.render_or("no shard load"));
    let _ = writeln!(out, "move: {}", planned_move(plan.get("move").unwrap_or(&Value::Null)));
    let _ = writeln!(out, "why: {}", cell(plan, "reason"));
    out
}
