//! `shardgate admin audit`: page through the audit log of admin actions (`GET /v1/admin/audit`),
//! filtered by action (or an action prefix ending in `.`) and actor.

use clap::Args;
use serde_json::Value;

use super::client::AdminClient;
use super::failure::Failure;
use super::output::{Output, Table, cell, items, next_page_hint};
use super::shape::{Kind, Shape};

/// An audit record.
const RECORD: Shape = Shape::object("an audit record", &[("id", Kind::Number), ("action", Kind::Text)]);
/// A page of audit records.
const RECORD_PAGE: Shape = Shape::page("a page of audit records", &RECORD);

/// Which audit records to print.
#[derive(Debug, Args)]
pub struct AuditCommand {
    /// Only this action (`tenant.move`), or every action that begins with it when it ends in `.`
    /// (`tenant.`, `shard.`).
    #[arg(long)]
    action: Option<String>,
    /// Only this actor (a token subject), exactly.
    #[arg(long)]
    actor: Option<String>,
    /// Newest first (the default is oldest first).
    #[arg(long)]
    newest: bool,
    /// Page size (the API's default is 100).
    #[arg(long)]
    limit: Option<u32>,
    /// Continue after a previous page (its `next_cursor`; give the same filters and order).
    #[arg(long)]
    cursor: Option<String>,
}

impl AuditCommand {
    /// Prints one page of the audit log.
    pub async fn run(self, client: &AdminClient, output: Output) -> Result<(), Failure> {
        let query = [
            ("action", self.action),
            ("actor", self.actor),
            ("order", self.newest.then(|| "newest".to_owned())),
            ("limit", self.limit.map(|l| l.to_string())),
            ("cursor", self.cursor),
        ];
        output.print(&client.get("/v1/admin/audit", &query, &RECORD_PAGE).await?, audit_table);
        Ok(())
    }
}

fn audit_table(page: &Value) -> String {
    let mut table = Table::new(&["ID", "AT", "ACTOR", "ACTION", "TARGET"]);
    for record in items(page) {
        table.row(vec![
            cell(record, "id"),
            cell(record, "at"),
            cell(record, "actor"),
            cell(record, "action"),
            cell(record, "target"),
        ]);
    }
    table.render_or("no audit records") + &next_page_hint(page)
}
