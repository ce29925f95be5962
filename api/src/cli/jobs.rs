//! `shardgate admin jobs`: list, read, cancel and wait for background jobs
//! (`/v1/admin/jobs[/{id}[/cancel]]`), and the job views the commands that start one share.

use clap::{Args, Subcommand};
use serde_json::Value;

use super::client::{AdminClient, path_segment};
use super::failure::Failure;
use super::output::{Fields, Output, Table, cell, items, next_page_hint, number_runs, show};
use super::progress::{Progress, Until, WaitArgs, settled, stand, wait_for_job};
use super::shape::{JOB, Shape};

/// A page of jobs.
const JOB_PAGE: Shape = Shape::page("a page of jobs", &JOB);

/// What to do with jobs.
#[derive(Debug, Subcommand)]
pub enum JobsCommand {
    /// List jobs, newest first (the default: `jobs --state running` is `jobs list --state
    /// running`).
    List(ListArgs),
    /// Read one job: its state, where it stands and why it failed.
    Show {
        /// Job id.
        id: String,
    },
    /// Ask a running job to cancel (a move past its switch can no longer be cancelled).
    Cancel {
        /// Job id.
        id: String,
        /// Then follow it until it ends.
        #[command(flatten)]
        wait: WaitArgs,
    },
    /// Follow a job until it switches (a move's new placement is in force; with
    /// --until-cleaned: until it ends), drawing its progress on standard error; exit 5 if it
    /// fails or is cancelled. Ctrl-C stops the waiting, not the job.
    Wait {
        /// Job id.
        id: String,
        /// How to draw the progress: `auto` is a bar on a terminal and lines otherwise.
        #[arg(long, value_enum, default_value_t = Progress::Auto)]
        progress: Progress,
        /// Wait until the job has ended, its cleanup included.
        #[arg(long)]
        until_cleaned: bool,
    },
}

/// Which jobs to list.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only jobs in this state: `running`, `done`, `failed` or `cancelled`.
    #[arg(long)]
    state: Option<String>,
    /// Only jobs of this kind: `tenant.move`, `vshard.move`, `range.move`,
    /// `collection.redistribute`, `vshards.rebalance`, `index.backfill` or `index.audit`.
    #[arg(long)]
    kind: Option<String>,
    /// Page size (the API's default is 100).
    #[arg(long)]
    limit: Option<u32>,
    /// Continue after a previous page (its `next_cursor`).
    #[arg(long)]
    cursor: Option<String>,
}

impl JobsCommand {
    /// Runs the command against `client`, printing through `output`.
    pub async fn run(self, client: &AdminClient, output: Output) -> Result<(), Failure> {
        match self {
            Self::List(ListArgs { state, kind, limit, cursor }) => {
                let query =
                    [("state", state), ("kind", kind), ("limit", limit.map(|l| l.to_string())), ("cursor", cursor)];
                output.print(&client.get("/v1/admin/jobs", &query, &JOB_PAGE).await?, job_table);
            }
            Self::Show { id } => {
                let job = client.get(&format!("/v1/admin/jobs/{}", path_segment(&id)), &[], &JOB).await?;
                output.print(&job, job_fields);
            }
            Self::Cancel { id, wait } => {
                let path = format!("/v1/admin/jobs/{}/cancel", path_segment(&id));
                let job = client.post_without_body(&path, &JOB).await?;
                let asked = |j: &Value| format!("asked job {} to cancel ({})\n", cell(j, "id"), cell(j, "state"));
                follow(client, output, &job, wait, &["cancelled", "done"], asked).await?;
            }
            Self::Wait { id, progress, until_cleaned } => {
                let until = if until_cleaned { Until::Ended } else { Until::Switched };
                let job = wait_for_job(client, &id, progress, until).await?;
                output.print(&job, job_fields);
                settled(&job, &["done"])?;
            }
        }
        Ok(())
    }
}

/// Prints the job a command started (`started` says what for people), or, with `--wait`,
/// follows it to its switch (or its end, `--until-cleaned`), prints it as it was then and fails
/// unless it switched or ended in a `wanted` state.
pub async fn follow(
    client: &AdminClient,
    output: Output,
    job: &Value,
    wait: WaitArgs,
    wanted: &[&str],
    started: impl FnOnce(&Value) -> String,
) -> Result<(), Failure> {
    let id = job.get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
    if !wait.wait || id.is_empty() {
        output.print(job, |j| {
            let follow =
                if id.is_empty() { String::new() } else { format!("follow it: shardgate admin jobs wait {id}\n") };
            started(j) + &follow
        });
        return Ok(());
    }
    output.say(&started(job));
    let ended = wait_for_job(client, &id, wait.progress, wait.until()).await?;
    output.print(&ended, job_fields);
    settled(&ended, wanted)
}

fn job_table(page: &Value) -> String {
    let mut table = Table::new(&["ID", "KIND", "TARGET", "STATE", "PROGRESS", "UPDATED"]);
    for job in items(page) {
        table.row(vec![
            cell(job, "id"),
            cell(job, "kind"),
            number_runs(&cell(job, "target")),
            cell(job, "state"),
            stand_text(job),
            cell(job, "updated_at"),
        ]);
    }
    table.render_or("no jobs") + &next_page_hint(page)
}

/// Where a job stands in a few words: `100% done`, `45% copy 1.0 MiB of 2.2 MiB`.
fn stand_text(job: &Value) -> String {
    stand(job).summary()
}

/// A job as `field: value` lines.
pub fn job_fields(job: &Value) -> String {
    let mut fields = Fields::default();
    fields
        .add("id", cell(job, "id"))
        .add("kind", cell(job, "kind"))
        .add("target", number_runs(&cell(job, "target")))
        .add("state", cell(job, "state"))
        .add("progress", stand_text(job));
    let progress = job.get("progress").unwrap_or(&Value::Null);
    for key in ["from", "to", "passes", "method", "cutover_ms", "epoch", "drain"] {
        if let Some(value) = progress.get(key).filter(|v| v.is_string() || v.is_number()) {
            fields.add(key, super::output::show(value));
        }
    }
    if let Some(error) = job.get("error").filter(|e| e.is_string()) {
        fields.add("error", number_runs(&show(error)));
    }
    fields
        .add("handovers", cell(job, "handovers"))
        .add("created", cell(job, "created_at"))
        .add("updated", cell(job, "updated_at"));
    fields.render()
}
