//! `shardgate admin tenants`: list, read and create tenants (`/v1/admin/tenants[/{id}]`).

use clap::{Args, Subcommand};
use serde_json::{Map, Value};

use super::client::{AdminClient, path_segment};
use super::failure::Failure;
use super::output::{Fields, Output, Table, cell, items, next_page_hint};
use super::shape::{Kind, Shape};

/// A tenant.
const TENANT: Shape = Shape::object("a tenant", &[("id", Kind::Text), ("tier", Kind::Text)]);
/// A page of tenants.
const TENANT_PAGE: Shape = Shape::page("a page of tenants", &TENANT);

/// What to do with tenants.
#[derive(Debug, Subcommand)]
pub enum TenantsCommand {
    /// List tenants ordered by id (the default: `tenants --limit 2` is `tenants list --limit 2`).
    List(ListArgs),
    /// Read one tenant: its home shard, tier and rate limit.
    Show {
        /// Tenant id.
        id: String,
    },
    /// Create a tenant.
    Create {
        /// Tenant id: `[a-z0-9][a-z0-9-]{0,62}`.
        id: String,
        /// Display name (default: the id).
        #[arg(long)]
        name: Option<String>,
        /// `free`, `standard` (the default) or `premium`.
        #[arg(long)]
        tier: Option<String>,
        /// Pin the tenant to this shard instead of placing it by its hash.
        #[arg(long)]
        shard: Option<String>,
    },
}

/// Which tenants to list.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Page size (the API's default is 100).
    #[arg(long)]
    limit: Option<u32>,
    /// Continue after a previous page (its `next_cursor`).
    #[arg(long)]
    cursor: Option<String>,
}

impl TenantsCommand {
    /// Runs the command against `client`, printing through `output`.
    pub async fn run(self, client: &AdminClient, output: Output) -> Result<(), Failure> {
        match self {
            Self::List(ListArgs { limit, cursor }) => {
                let query = [("limit", limit.map(|l| l.to_string())), ("cursor", cursor)];
                output.print(&client.get("/v1/admin/tenants", &query, &TENANT_PAGE).await?, tenant_table);
            }
            Self::Show { id } => {
                let tenant = client.get(&format!("/v1/admin/tenants/{}", path_segment(&id)), &[], &TENANT).await?;
                output.print(&tenant, tenant_fields);
            }
            Self::Create { id, name, tier, shard } => {
                let mut body = Map::new();
                body.insert("id".into(), id.into());
                for (key, value) in [("name", name), ("tier", tier), ("shard", shard)] {
                    if let Some(value) = value {
                        body.insert(key.into(), value.into());
                    }
                }
                let tenant = client.post("/v1/admin/tenants", &Value::Object(body), &TENANT).await?;
                output.print(&tenant, |t| format!("created tenant {}\n{}", cell(t, "id"), tenant_fields(t)));
            }
        }
        Ok(())
    }
}

fn tenant_table(page: &Value) -> String {
    let mut table = Table::new(&["ID", "NAME", "TIER", "SHARD", "PINNED", "CREATED"]);
    for tenant in items(page) {
        table.row(vec![
            cell(tenant, "id"),
            cell(tenant, "name"),
            cell(tenant, "tier"),
            cell(tenant, "shard"),
            cell(tenant, "pinned"),
            cell(tenant, "created_at"),
        ]);
    }
    table.render_or("no tenants") + &next_page_hint(page)
}

fn tenant_fields(tenant: &Value) -> String {
    let limit = |key: &str| {
        tenant.get(key).filter(|l| !l.is_null()).map_or_else(
            || "-".to_owned(),
            |l| format!("{} requests/s, burst {}", cell(l, "per_second"), cell(l, "burst")),
        )
    };
    let mut fields = Fields::default();
    fields
        .cells(tenant, &[("id", "id"), ("name", "name"), ("tier", "tier"), ("shard", "shard"), ("pinned", "pinned")])
        .add("rate limit", limit("effective_rate_limit"))
        .add("own rate limit", limit("rate_limit"))
        .cells(tenant, &[("created", "created_at"), ("updated", "updated_at")]);
    fields.render()
}
