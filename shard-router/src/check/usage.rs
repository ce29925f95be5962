//! Usage that disagrees with the rows: each shard keeps what each tenant stores on it in
//! `tenant_usage`, changed by triggers in the same transaction as the rows
//! ([`crate::storage::usage`]), so the two agree unless something went around the triggers: a
//! shard restored from a backup of `tenant_usage` taken apart from its other tables, rows or
//! usage edited by hand, a version before the usage was kept writing rows. Two statements per
//! shard in one snapshot, each grouped by tenant and placement in SQL: the kept usage, and the
//! same counted from the live rows. `shardgate check --repair-usage` rewrites the kept usage of a shard from its
//! rows ([`crate::storage::usage::rewrite_usage`]).

use crate::check::{Finding, Findings, Kind, Place, ShardUnderCheck};
use crate::error::Error;
use crate::storage::shard::FencedShard;
use crate::storage::usage::disagreements;

/// Compares the kept usage of every tenant on `shard` with its rows; one finding per tenant
/// whose kept usage differs in any placement.
pub async fn check_usage(shard: &ShardUnderCheck, findings: &mut Findings) -> Result<(), Error> {
    let on = FencedShard::new(&shard.db, &shard.id);
    let here = &shard.id;
    for (tenant, k, c) in disagreements(&on).await? {
        findings.push(Finding {
            kind: Kind::UsageDisagrees,
            place: Place::shard(here).tenant(&tenant).table("tenant_usage"),
            found: format!(
                "tenant {tenant}'s usage kept on shard {here} is not what its rows there add up to: kept {} records \
                 of {} bytes, {} blobs of {} bytes, {} index entries; the rows {} records of {} bytes, {} blobs of \
                 {} bytes, {} index entries",
                k.records,
                k.record_bytes,
                k.blobs,
                k.blob_bytes,
                k.index_entries,
                c.records,
                c.record_bytes,
                c.blobs,
                c.blob_bytes,
                c.index_entries
            ),
            action: format!(
                "Run `shardgate check --repair-usage`: it rewrites shard {here}'s kept usage from its rows (quotas \
                 and usage reports read it) and checks again."
            ),
        });
    }
    Ok(())
}
