//! `shardgate admin shards`: list, read, register, change the state of and unregister shards
//! (`/v1/admin/shards[/{id}]`).

use clap::Subcommand;
use serde_json::{Value, json};

use super::client::{AdminClient, path_segment};
use super::failure::Failure;
use super::output::{Fields, Output, Table, bytes_cell, cell};
use super::shape::{Kind, Shape};

/// A shard.
const SHARD: Shape = Shape::object("a shard", &[("id", Kind::Text), ("state", Kind::Text)]);
/// The list of shards.
const SHARD_LIST: Shape = Shape::page("a list of shards", &SHARD);

/// What to do with shards.
#[derive(Debug, Subcommand)]
pub enum ShardsCommand {
    /// List the shards with their statistics (the default).
    List,
    /// Read one shard with its statistics, breaker and connections.
    Show {
        /// Shard id.
        id: String,
    },
    /// Register a shard by its database URL.
    Add {
        /// Shard id: `[a-z0-9][a-z0-9-]{0,62}`.
        id: String,
        /// `postgres://user:password@host/db`, or `sqlite://path` when the catalog is SQLite.
        database_url: String,
    },
    /// Change a shard's state: `active`, `read_only`, `offline` or `draining` (to move its data
    /// away, use `shardgate admin drain`).
    State {
        /// Shard id.
        id: String,
        /// The new state.
        state: String,
    },
    /// Unregister a shard that owns no vshard and no pinned tenant (drain it first).
    Remove {
        /// Shard id.
        id: String,
    },
}

impl ShardsCommand {
    /// Runs the command against `client`, printing through `output`.
    pub async fn run(self, client: &AdminClient, output: Output) -> Result<(), Failure> {
        match self {
            Self::List => output.print(&client.get("/v1/admin/shards", &[], &SHARD_LIST).await?, shard_table),
            Self::Show { id } => output.print(&client.get(&shard_path(&id), &[], &SHARD).await?, shard_fields),
            Self::Add { id, database_url } => {
                let shard = client.post("/v1/admin/shards", &json!({"id": id, "url": database_url}), &SHARD).await?;
                output.print(&shard, |s| format!("registered shard {}\n{}", cell(s, "id"), shard_fields(s)));
            }
            Self::State { id, state } => {
                let shard = client.patch(&shard_path(&id), &json!({"state": state}), &SHARD).await?;
                output.print(&shard, |s| format!("shard {} is {}\n", cell(s, "id"), cell(s, "state")));
            }
            Self::Remove { id } => {
                let answer = client.delete(&shard_path(&id)).await?;
                output.print(&answer, |_| format!("unregistered shard {id}\n"));
            }
        }
        Ok(())
    }
}

fn shard_path(id: &str) -> String {
    format!("/v1/admin/shards/{}", path_segment(id))
}

fn shard_table(list: &Value) -> String {
    let mut table =
        Table::new(&["ID", "ENGINE", "STATE", "VSHARDS", "TENANTS", "PINNED", "RECORDS", "DATA", "SIZE", "BREAKER"]);
    for shard in super::output::items(list) {
        let breaker = shard.get("breaker").map_or_else(|| "-".to_owned(), |b| cell(b, "state"));
        table.row(vec![
            cell(shard, "id"),
            cell(shard, "engine"),
            cell(shard, "state"),
            cell(shard, "vshards"),
            cell(shard, "tenants"),
            cell(shard, "pinned_tenants"),
            cell(shard, "records"),
            bytes_cell(shard, "data_bytes"),
            bytes_cell(shard, "bytes"),
            breaker,
        ]);
    }
    table.render_or("no shards")
}

fn shard_fields(shard: &Value) -> String {
    let mut fields = Fields::default();
    let shown = [
        ("id", "id"),
        ("engine", "engine"),
        ("state", "state"),
        ("vshards", "vshards"),
        ("tenants", "tenants"),
        ("pinned tenants", "pinned_tenants"),
        ("records", "records"),
    ];
    fields.cells(shard, &shown).add("data", bytes_cell(shard, "data_bytes")).add("size", bytes_cell(shard, "bytes"));
    if let Some(breaker) = shard.get("breaker").filter(|b| !b.is_null()) {
        let reason = breaker.get("reason").and_then(Value::as_str).map(|r| format!(" ({r})")).unwrap_or_default();
        fields.add("breaker", format!("{}{reason}, opened {} times", cell(breaker, "state"), cell(breaker, "opens")));
    }
    if let Some(pool) = shard.get("connections").filter(|c| !c.is_null()) {
        fields.add(
            "connections",
            format!("{} open, {} idle, at most {}", cell(pool, "open"), cell(pool, "idle"), cell(pool, "max")),
        );
    }
    if let Some(problem) = shard.get("problem").and_then(Value::as_str) {
        fields.add("problem", problem);
    }
    fields.add("registered", cell(shard, "created_at")).add("state since", cell(shard, "updated_at"));
    fields.render()
}
