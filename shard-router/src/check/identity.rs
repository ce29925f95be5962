//! The identity check: each registered shard's database carries the marker
//! `shard_identity (catalog_id, shard_id)` that registration wrote
//! ([`crate::storage::registration`]), naming this catalog and the shard id the catalog
//! registers for its URL; and no two registered shards are one database (the same SQLite file,
//! or the same database on the same PostgreSQL server), which markers alone cannot tell from a
//! copy restored into the wrong place.

use std::collections::BTreeMap;

use secrecy::ExposeSecret;

use crate::catalog::ShardRow;
use crate::check::{Finding, Findings, Kind, Place, ShardUnderCheck};
use crate::error::Error;
use crate::storage::db::Engine;

/// Checks `shard`'s marker against `catalog_id`. `shared` says whether the shard is one database
/// with another registered shard (then a marker naming that shard is reported there, not here).
pub async fn check_marker(
    shard: &ShardUnderCheck,
    catalog_id: &str,
    shared: bool,
    findings: &mut Findings,
) -> Result<(), Error> {
    let marker: Option<(String, String)> =
        sqlx::query_as("SELECT catalog_id, shard_id FROM shard_identity WHERE id = 1")
            .fetch_optional(&shard.db.pool)
            .await
            .map_err(|source| Error::Database { target: format!("shard {}", shard.id), source })?;
    let place = Place::shard(&shard.id).table("shard_identity");
    let id = &shard.id;
    match marker {
        None => findings.push(Finding {
            kind: Kind::IdentityMissing,
            place,
            found: format!("the database of shard {id} carries no identity marker"),
            action: format!(
                "Make sure this database is the one restored for shard {id}; then start the gateway once, which writes \
                 the missing marker, or restore shard {id} from a backup that has it."
            ),
        }),
        Some((other_catalog, other_shard)) if other_catalog != catalog_id => findings.push(Finding {
            kind: Kind::IdentityOtherCatalog,
            place,
            found: format!(
                "the database registered as shard {id} is shard {other_shard} of another shardgate catalog (catalog \
                 id {other_catalog}, this one is {catalog_id})"
            ),
            action: format!(
                "Point shard {id}'s URL in the catalog at the database restored for it, or restore the catalog that \
                 goes with this database; the gateway refuses to use shard {id} until then."
            ),
        }),
        Some((_, other_shard)) if other_shard != id.as_str() && !shared => findings.push(Finding {
            kind: Kind::IdentityOtherShard,
            place,
            found: format!("the database registered as shard {id} is marked as shard {other_shard} of this catalog"),
            action: format!(
                "Restore shard {id}'s own backup into its database (this looks like shard {other_shard}'s), or \
                 correct the URL the catalog registers for shard {id}; the gateway refuses to use it until then."
            ),
        }),
        Some(_) => {}
    }
    Ok(())
}

/// Which registered shards are one database, by where their URLs lead: the canonical path of a
/// SQLite file, or the server address, port and database name PostgreSQL reports. Returns the
/// groups of two or more, and reports each as a finding.
pub async fn shared_databases(shards: &[(&ShardRow, &ShardUnderCheck)], findings: &mut Findings) -> Vec<Vec<String>> {
    let mut by_database: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (row, shard) in shards {
        if let Some(key) = database_key(row, shard).await {
            by_database.entry(key).or_default().push(row.id.to_string());
        }
    }
    let groups: Vec<Vec<String>> = by_database.into_values().filter(|ids| ids.len() > 1).collect();
    for ids in &groups {
        let list = ids.join(", ");
        findings.push(Finding {
            kind: Kind::IdentitySharedDatabase,
            place: Place { shard: Some(ids[0].clone()), ..Place::default() }.table("shards"),
            found: format!("the catalog registers shards {list} at URLs that lead to one database"),
            action: format!(
                "Give each of {list} its own database: correct the URLs in the catalog's shards table (or restore \
                 the catalog), and restore each shard's own backup into its database."
            ),
        });
    }
    groups
}

/// Where `row`'s URL leads, as a key equal for one database; `None` if that cannot be told.
async fn database_key(row: &ShardRow, shard: &ShardUnderCheck) -> Option<String> {
    match shard.db.engine {
        Engine::Sqlite => {
            let path = sqlite_path(row.url.expose_secret())?;
            std::fs::canonicalize(path).ok().map(|p| format!("sqlite:{}", p.display()))
        }
        Engine::Postgres => sqlx::query_scalar::<_, String>(
            "SELECT COALESCE(host(inet_server_addr()), 'local') || ':' || COALESCE(CAST(inet_server_port() AS TEXT), '') \
             || '/' || current_database()",
        )
        .fetch_one(&shard.db.pool)
        .await
        .ok()
        .map(|key| format!("postgres:{key}")),
    }
}

/// The file a `sqlite:` URL names (without its query).
pub fn sqlite_path(url: &str) -> Option<&str> {
    let rest = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split_once('?').map_or(rest, |(path, _)| path);
    (!path.is_empty()).then_some(path)
}
