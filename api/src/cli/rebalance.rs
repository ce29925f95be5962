//! `shardgate admin rebalance` and `shardgate admin drain SHARD`: plan or carry out a rebalance
//! of the vshards over the active shards (`POST /v1/admin/vshards/rebalance`), or move
//! everything off one shard (`POST /v1/admin/shards/{id}/drain`); both print the plan and follow
//! the job with `--wait`.

use std::fmt::Write as _;

use clap::Args;
use serde_json::{Map, Value};

use super::client::{AdminClient, path_segment};
use super::failure::Failure;
use super::jobs::follow;
use super::output::{Output, Table, cell};
use super::progress::WaitArgs;
use super::shape::{JOB, Kind, Shape};

/// What a rebalance or drain answers: its plan, and its job (none for a dry run).
const PLANNED: Shape =
    Shape::object("a rebalance plan", &[("plan", Kind::Object), ("job", Kind::OrNull(&Kind::Of(&JOB)))]);

/// How a rebalance or drain is planned and run.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// Only compute and print the plan; move nothing.
    #[arg(long)]
    dry_run: bool,
    /// `count` (the default: the same number of vshards on each shard) or `bytes`.
    #[arg(long)]
    balance: Option<String>,
    /// How many moves run at once, 1 to 16 (the API's default is 2).
    #[arg(long)]
    parallel: Option<u32>,
    #[command(flatten)]
    wait: WaitArgs,
}

impl PlanArgs {
    fn body(&self) -> Value {
        let mut body = Map::new();
        body.insert("dry_run".into(), self.dry_run.into());
        if let Some(balance) = &self.balance {
            body.insert("balance".into(), balance.clone().into());
        }
        if let Some(parallel) = self.parallel {
            body.insert("parallel".into(), parallel.into());
        }
        Value::Object(body)
    }
}

/// A rebalance of the vshards over the active shards.
#[derive(Debug, Args)]
pub struct RebalanceCommand {
    #[command(flatten)]
    plan: PlanArgs,
}

impl RebalanceCommand {
    /// Plans or starts the rebalance and prints the plan (following the job with `--wait`).
    pub async fn run(self, client: &AdminClient, output: Output) -> Result<(), Failure> {
        let answer = client.post("/v1/admin/vshards/rebalance", &self.plan.body(), &PLANNED).await?;
        carry_out(client, output, &answer, self.plan.wait, "rebalance").await
    }
}

/// A drain of one shard.
#[derive(Debug, Args)]
pub struct DrainCommand {
    /// The shard to drain: it is set `draining` and everything it holds moves away.
    shard: String,
    #[command(flatten)]
    plan: PlanArgs,
}

impl DrainCommand {
    /// Plans or starts the drain and prints the plan (following the job with `--wait`).
    pub async fn run(self, client: &AdminClient, output: Output) -> Result<(), Failure> {
        let path = format!("/v1/admin/shards/{}/drain", path_segment(&self.shard));
        let answer = client.post(&path, &self.plan.body(), &PLANNED).await?;
        carry_out(client, output, &answer, self.plan.wait, &format!("drain of {}", self.shard)).await
    }
}

/// Prints a rebalance answer: the plan, and the job that carries it out (followed with `--wait`).
async fn carry_out(
    client: &AdminClient,
    output: Output,
    answer: &Value,
    wait: WaitArgs,
    what: &str,
) -> Result<(), Failure> {
    match answer.get("job").filter(|j| !j.is_null()) {
        Some(job) if wait.wait => {
            output.say(&plan_text(answer));
            follow(client, output, job, wait, &["done"], |j| format!("{what}: job {}\n", cell(j, "id"))).await
        }
        Some(job) => {
            let id = cell(job, "id");
            output.print(answer, |a| {
                format!("{}{what}: job {id}\nfollow it: shardgate admin jobs wait {id}\n", plan_text(a))
            });
            Ok(())
        }
        None => {
            output.print(answer, plan_text);
            Ok(())
        }
    }
}

/// A plan for people: what moves, then each shard's load before and after.
fn plan_text(answer: &Value) -> String {
    let plan = answer.get("plan").unwrap_or(&Value::Null);
    let list = |key: &str| plan.get(key).and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let (vshards, tenants, ranges) = (list("vshards"), list("tenants"), list("ranges"));
    let mut out = String::new();
    if vshards.is_empty() && tenants.is_empty() && ranges.is_empty() {
        out.push_str("nothing to move: the shards are balanced\n");
    } else {
        let _ = writeln!(
            out,
            "plan ({} balance): {} vshards, {} pinned tenants, {} ranges move",
            cell(plan, "balance"),
            vshards.len(),
            tenants.len(),
            ranges.len()
        );
        let mut moves = Table::new(&["MOVES", "FROM", "TO"]);
        for (first, last, from, to) in vshard_runs(vshards) {
            let what = if first == last { format!("vshard {first}") } else { format!("vshards {first}\u{2013}{last}") };
            moves.row(vec![what, from, to]);
        }
        for tenant in tenants {
            moves.row(vec![format!("tenant {}", cell(tenant, "tenant")), cell(tenant, "from"), cell(tenant, "to")]);
        }
        for range in ranges {
            let what = format!(
                "range {}/{} from {}",
                cell(range, "tenant"),
                cell(range, "collection"),
                cell(range, "from_key")
            );
            moves.row(vec![what, cell(range, "from"), cell(range, "to")]);
        }
        out.push_str(&moves.render_or(""));
    }
    let mut loads = Table::new(&["SHARD", "STATE", "BEFORE", "AFTER"]);
    for load in list("loads") {
        loads.row(vec![cell(load, "shard"), cell(load, "state"), cell(load, "before"), cell(load, "after")]);
    }
    if !loads.is_empty() {
        out.push_str(&loads.render_or(""));
    }
    out
}

/// The vshard moves of a plan as runs of consecutive vshards between the same two shards:
/// `(first, last, from, to)`, ordered by source, target and vshard.
fn vshard_runs(moves: &[Value]) -> Vec<(u64, u64, String, String)> {
    let mut moves: Vec<(String, String, u64)> =
        moves.iter().filter_map(|m| Some((cell(m, "from"), cell(m, "to"), m.get("vshard")?.as_u64()?))).collect();
    moves.sort();
    let mut runs: Vec<(u64, u64, String, String)> = Vec::new();
    for (from, to, vshard) in moves {
        match runs.last_mut() {
            Some(run) if run.2 == from && run.3 == to && run.1 + 1 == vshard => run.1 = vshard,
            _ => runs.push((vshard, vshard, from, to)),
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_plan_says_its_vshards_as_runs() {
        let answer = json!({"plan": {"balance": "count", "vshards": [
            {"vshard": 342, "from": "shard-0", "to": "shard-4"},
            {"vshard": 344, "from": "shard-0", "to": "shard-4"},
            {"vshard": 343, "from": "shard-0", "to": "shard-4"},
            {"vshard": 345, "from": "shard-1", "to": "shard-4"},
            {"vshard": 900, "from": "shard-0", "to": "shard-4"},
        ], "tenants": [], "ranges": [], "loads": []}});
        assert_eq!(
            plan_text(&answer),
            "plan (count balance): 5 vshards, 0 pinned tenants, 0 ranges move\n\
             MOVES            FROM     TO\n\
             vshards 342–344  shard-0  shard-4\n\
             vshard 900       shard-0  shard-4\n\
             vshard 345       shard-1  shard-4\n"
        );
    }
}
