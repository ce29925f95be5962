//! `shardgate admin move TENANT --to SHARD`: move a tenant's data to another shard while its
//! traffic flows (`POST /v1/admin/tenants/{id}/move`), and follow the job with `--wait`.

use clap::Args;
use serde_json::json;

use super::client::{AdminClient, path_segment};
use super::failure::Failure;
use super::jobs::follow;
use super::output::{Output, cell};
use super::progress::WaitArgs;
use super::shape::JOB;

/// A tenant move.
#[derive(Debug, Args)]
pub struct MoveCommand {
    /// The tenant to move.
    tenant: String,
    /// The shard to move it to (registered and `active`).
    #[arg(long)]
    to: String,
    #[command(flatten)]
    wait: WaitArgs,
}

impl MoveCommand {
    /// Starts the move and prints its job (or follows it with `--wait`).
    pub async fn run(self, client: &AdminClient, output: Output) -> Result<(), Failure> {
        let path = format!("/v1/admin/tenants/{}/move", path_segment(&self.tenant));
        let job = client.post(&path, &json!({"to": self.to}), &JOB).await?;
        let (tenant, to) = (self.tenant, self.to);
        follow(client, output, &job, self.wait, &["done"], |j| {
            format!("moving tenant {tenant} to {to}: job {}\n", cell(j, "id"))
        })
        .await
    }
}
