//! Where rows sit against where the catalog places them. Every table that carries a vshard is
//! read once per shard, aggregated by `(tenant, vshard)` in SQL:
//!
//! | table | placed by | checked against |
//! | --- | --- | --- |
//! | `records`, `blobs` | the tenant's home: its pin, else the owner of the vshard its id hashes to (the `vshard` column) | pin, or vshard owner |
//! | `spread_records` (`vshard >= 0`) | the vshard `h(tenant, collection, key)` picks | vshard owner |
//! | `index_entries` | the vshard `h(tenant, collection, index, value)` picks | vshard owner |
//!
//! Index entries are read here only as placed rows (tenant and vshard), as moves copy them;
//! whether an entry's record holds its value is index-tables' to judge. Range-placed spread
//! records (`vshard = -1`) are not checked here. Shard rows carry no
//! incarnation, so rows of an earlier incarnation of a tenant id are told by time: rows on the
//! tenant's home written before the tenant was created (less [`CLOCK_MARGIN_MS`] for instances
//! whose clocks differ). Rows that a running job holds (a move copying, or waiting out its
//! cleanup grace) are not findings.

use futures::TryStreamExt;

use crate::check::{CatalogView, Finding, Findings, Kind, Place, ShardUnderCheck};
use crate::error::Error;

/// How far instances' clocks may differ: a row written up to this long before its tenant's
/// creation time is still taken as the tenant's own.
pub const CLOCK_MARGIN_MS: i64 = 5_000;

/// What places a table's rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Placement {
    /// The tenant's home (pin or vshard owner).
    Home,
    /// The vshard of the row itself.
    Vshard,
}

/// The tables checked: name, the statement aggregating them, what places their rows.
const TABLES: [(&str, &str, Placement); 4] = [
    (
        "records",
        "SELECT tenant, vshard, COUNT(*), MIN(updated_at) FROM records GROUP BY tenant, vshard",
        Placement::Home,
    ),
    ("blobs", "SELECT tenant, vshard, COUNT(*), MIN(updated_at) FROM blobs GROUP BY tenant, vshard", Placement::Home),
    (
        "spread_records",
        "SELECT tenant, vshard, COUNT(*), MIN(updated_at) FROM spread_records WHERE vshard >= 0 GROUP BY tenant, vshard",
        Placement::Vshard,
    ),
    (
        "index_entries",
        "SELECT tenant, vshard, COUNT(*), MIN(claimed_at) FROM index_entries GROUP BY tenant, vshard",
        Placement::Vshard,
    ),
];

/// One `(tenant, vshard)` group of a table on a shard.
struct Group<'a> {
    table: &'a str,
    tenant: String,
    vshard: u32,
    rows: i64,
    oldest_ms: i64,
}

/// Checks every table of `shard` against `view`.
pub async fn check_rows(shard: &ShardUnderCheck, view: &CatalogView, findings: &mut Findings) -> Result<(), Error> {
    for (table, sql, placement) in TABLES {
        let mut groups = sqlx::query_as::<_, (String, i64, i64, i64)>(sql).fetch(&shard.db.pool);
        while let Some((tenant, vshard, rows, oldest_ms)) = groups
            .try_next()
            .await
            .map_err(|source| Error::Database { target: format!("shard {}", shard.id), source })?
        {
            let Ok(vshard) = u32::try_from(vshard) else { continue };
            let group = Group { table, tenant, vshard, rows, oldest_ms };
            if let Some(finding) = judge(shard, view, placement, &group) {
                findings.push(finding);
            }
        }
    }
    Ok(())
}

/// The finding `group` is, if any.
fn judge(shard: &ShardUnderCheck, view: &CatalogView, placement: Placement, group: &Group<'_>) -> Option<Finding> {
    let Group { table, tenant, vshard, rows, oldest_ms } = group;
    let (tenant, vshard, rows) = (tenant.as_str(), *vshard, *rows);
    let here = &shard.id;
    let place = Place::shard(here).tenant(tenant).vshard(vshard).table(table);
    let Some(entry) = view.map.tenants.get(tenant) else {
        return Some(Finding {
            kind: Kind::RowsOfUnknownTenant,
            place,
            found: format!(
                "{rows} rows of tenant {tenant}, which the catalog does not know, in {table} on shard {here}"
            ),
            action: format!(
                "If tenant {tenant} was deleted, these rows are leftovers: delete them from {table} on shard {here} \
                 (DELETE FROM {table} WHERE tenant = '{tenant}'). If it should exist, the catalog was restored from \
                 before its creation: restore a newer catalog."
            ),
        });
    };
    if view.holds_tenant(tenant, vshard) {
        return None;
    }
    let owner = view.vshard_owner(vshard);
    if (placement == Placement::Vshard || entry.pin.is_none()) && owner != Some(here) {
        let owner = owner.map_or_else(|| "no shard".to_owned(), |o| format!("shard {o}"));
        return Some(Finding {
            kind: Kind::RowsOffVshardOwner,
            place,
            found: format!(
                "{rows} rows of tenant {tenant} in vshard {vshard} in {table} on shard {here}, but the catalog maps \
                 vshard {vshard} to {owner}"
            ),
            action: format!(
                "Compare them with the copy on {owner}: if it has them, delete these from shard {here}; if only \
                 shard {here} has them (the catalog is older than the shards), restore a catalog that maps vshard \
                 {vshard} to shard {here}, or move the vshard there."
            ),
        });
    }
    if placement == Placement::Vshard {
        return None;
    }
    if let Some(pin) = entry.pin.and_then(|i| view.map.shards.get(usize::from(i))).map(|s| &s.id)
        && pin != here
    {
        let pin = format!("shard {pin}");
        return Some(Finding {
            kind: Kind::RowsOfMovedTenant,
            place,
            found: format!(
                "{rows} rows of tenant {tenant} in {table} on shard {here}, but the catalog pins the tenant to {pin} \
                 and no running job holds them"
            ),
            action: format!(
                "These are the old copy of a move whose cleanup did not run, or rows restored from an older backup: \
                 check that {pin} holds the tenant's data, then delete these from {table} on shard {here}."
            ),
        });
    }
    let created = entry.incarnation.created_at_ms;
    if entry.incarnation.id != 0 && *oldest_ms < created - CLOCK_MARGIN_MS {
        return Some(Finding {
            kind: Kind::RowsOfEarlierIncarnation,
            place,
            found: format!(
                "rows of tenant {tenant} in {table} on shard {here} written before the tenant was created \
                 ({oldest_ms} < {created} ms since the Unix epoch): left by an earlier tenant of the same id"
            ),
            action: format!(
                "Delete the rows of tenant {tenant} in {table} on shard {here} older than its creation \
                 (updated_at < {created}); the current tenant must not see them."
            ),
        });
    }
    None
}
