//! Checking a restored fleet for consistency (`shardgate check`): the catalog and the shards are
//! ordinary databases, and after a restore from backups taken at different moments they may
//! disagree. Each check here compares what a shard holds with what the catalog says and reports a
//! [`Finding`]: its [`Kind`] (a stable code), where it is, what was found and what to do. Nothing
//! here writes: every statement is a `SELECT`.
//!
//! The checks, one file each:
//! - [`identity`]: each shard database's identity marker against the catalog's registration, and
//!   two registered shards that are one database;
//! - [`rows`]: where rows sit against where the catalog places them: vshard ownership of
//!   unpinned tenants' home rows, spread records and index entries; pinned tenants' rows off their
//!   pin; rows of tenants the catalog does not know; rows older than their tenant's incarnation;
//! - [`blobs`]: live blobs whose chunk rows are missing or of the wrong length;
//! - [`fences`]: fences left on a shard that no running job holds, and a write fence ahead of
//!   the catalog's epoch;
//! - [`usage`]: each tenant's kept usage on a shard against what its rows there add up to (the
//!   one check with a repair: `shardgate check --repair-usage`);
//! - [`fleet`]: opening the catalog and every registered shard without changing them, and running
//!   the checks above on each.
//!
//! Index entries whose record is missing are `index-tables`' to judge (the drift audit's rule);
//! the `check` command in `api` runs that check with the same [`Findings`].
//!
//! What a running job holds is never a finding: a move that is copying, cutting over or waiting
//! out `storage.moves.cleanup_grace` before it removes the old copy leaves rows and fences on
//! purpose, and the job (resumed by the next instance that starts) finishes or rolls them back.
//!
//! This room sits above the catalog and storage, beside the jobs: it reads both and changes
//! neither. It must not know HTTP or how a finding is printed.
//!
//! Every statement on a shard aggregates in SQL (`GROUP BY tenant, vshard`) or reads a bounded
//! table (fences), and its rows are streamed, so a large shard costs time, not memory; the
//! findings themselves are capped per kind and shard ([`Findings`]).

pub mod blobs;
pub mod fences;
pub mod fleet;
pub mod identity;
pub mod rows;
pub mod usage;

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;

use crate::catalog::Catalog;
use crate::error::Error;
use crate::ids::ShardId;
use crate::map::MapSnapshot;
use crate::storage::db::Database;

/// What kind of inconsistency a finding is: a stable `snake_case` code scripts may match on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A registered shard could not be reached or read: nothing on it was checked.
    ShardUnreachable,
    /// A shard database carries no identity marker.
    IdentityMissing,
    /// A shard database's marker names another catalog.
    IdentityOtherCatalog,
    /// A shard database's marker names another shard id of this catalog.
    IdentityOtherShard,
    /// Two registered shards are one database.
    IdentitySharedDatabase,
    /// The catalog maps vshards to a shard it does not register.
    VshardOwnerUnregistered,
    /// Rows of a vshard on a shard the catalog does not map that vshard to.
    RowsOffVshardOwner,
    /// Rows of a pinned tenant on a shard other than its pin (a move's old copy that was not
    /// removed).
    RowsOfMovedTenant,
    /// Rows of a tenant the catalog does not know (deleted, or never created in this catalog).
    RowsOfUnknownTenant,
    /// Rows on a tenant's shard written before the tenant was created: an earlier incarnation's.
    RowsOfEarlierIncarnation,
    /// A fence that freezes a subject's writes, with no running job that holds it.
    FenceWithoutJob,
    /// A `moved` fence on the shard the catalog places its subject on, with no running job.
    FenceOnOwner,
    /// The shard's write fence is ahead of the catalog's epoch: every write is refused.
    WriteFenceAhead,
    /// An index entry whose record does not exist, is deleted, or no longer holds its value.
    IndexEntryWithoutRecord,
    /// A live blob whose chunk rows are missing or of the wrong length: it cannot be served.
    BlobDamaged,
    /// A tenant's usage kept on a shard is not what its rows there add up to.
    UsageDisagrees,
    /// More findings of one kind on one shard than are listed.
    MoreFindings,
}

impl Kind {
    /// The code, as printed and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::ShardUnreachable => "shard_unreachable",
            Kind::IdentityMissing => "identity_missing",
            Kind::IdentityOtherCatalog => "identity_other_catalog",
            Kind::IdentityOtherShard => "identity_other_shard",
            Kind::IdentitySharedDatabase => "identity_shared_database",
            Kind::VshardOwnerUnregistered => "vshard_owner_unregistered",
            Kind::RowsOffVshardOwner => "rows_off_vshard_owner",
            Kind::RowsOfMovedTenant => "rows_of_moved_tenant",
            Kind::RowsOfUnknownTenant => "rows_of_unknown_tenant",
            Kind::RowsOfEarlierIncarnation => "rows_of_earlier_incarnation",
            Kind::FenceWithoutJob => "fence_without_job",
            Kind::FenceOnOwner => "fence_on_owner",
            Kind::WriteFenceAhead => "write_fence_ahead",
            Kind::IndexEntryWithoutRecord => "index_entry_without_record",
            Kind::BlobDamaged => "blob_damaged",
            Kind::UsageDisagrees => "usage_disagrees",
            Kind::MoreFindings => "more_findings",
        }
    }
}

impl Kind {
    /// Whether a finding of this kind says that the database on its shard is not the one the
    /// catalog registers there (another shard's, another catalog's, or one database registered
    /// twice): every other finding on that shard follows from it ([`group`]).
    pub fn is_wrong_database(self) -> bool {
        matches!(self, Kind::IdentityOtherShard | Kind::IdentityOtherCatalog | Kind::IdentitySharedDatabase)
    }
}

/// A finding with the findings that follow from it nested under it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Grouped {
    /// The finding (the cause, when it has consequences).
    #[serde(flatten)]
    pub finding: Finding,
    /// The findings it causes, in the order found; deal with the cause first, and they may go
    /// with it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub consequences: Vec<Finding>,
}

/// Nests the consequences of a wrong database under their cause. The rule: a finding of a
/// kind that [`Kind::is_wrong_database`] (`identity_other_shard`, `identity_other_catalog`,
/// `identity_shared_database`) is the cause of every other finding placed on its shard, except
/// `shard_unreachable` and the other identity findings: what lies in a database that is not the
/// shard's says nothing about the shard until the right database is in place. Nothing else is
/// nested, and the order of the causes and the other findings is kept.
pub fn group(findings: Vec<Finding>) -> Vec<Grouped> {
    let causes: Vec<Option<String>> =
        findings.iter().filter(|f| f.kind.is_wrong_database()).map(|f| f.place.shard.clone()).collect();
    let follows = |f: &Finding| {
        !f.kind.is_wrong_database()
            && !matches!(
                f.kind,
                Kind::ShardUnreachable
                    | Kind::IdentityMissing
                    | Kind::IdentityOtherCatalog
                    | Kind::IdentityOtherShard
                    | Kind::IdentitySharedDatabase
            )
            && f.place.shard.is_some()
            && causes.contains(&f.place.shard)
    };
    let (consequences, standing): (Vec<Finding>, Vec<Finding>) = findings.into_iter().partition(|f| follows(f));
    let mut grouped: Vec<Grouped> =
        standing.into_iter().map(|finding| Grouped { finding, consequences: Vec::new() }).collect();
    for consequence in consequences {
        if let Some(cause) = grouped
            .iter_mut()
            .find(|g| g.finding.kind.is_wrong_database() && g.finding.place.shard == consequence.place.shard)
        {
            cause.consequences.push(consequence);
        }
    }
    grouped
}

/// Where a finding is: whichever of these apply.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Place {
    /// The shard.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// The tenant.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The vshard.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vshard: Option<u32>,
    /// The table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
}

impl Place {
    /// On `shard`.
    pub fn shard(shard: &ShardId) -> Self {
        Self { shard: Some(shard.to_string()), ..Self::default() }
    }

    /// And of `tenant`.
    pub fn tenant(self, tenant: &str) -> Self {
        Self { tenant: Some(tenant.to_owned()), ..self }
    }

    /// And in `vshard`.
    pub fn vshard(self, vshard: u32) -> Self {
        Self { vshard: Some(vshard), ..self }
    }

    /// And in `table`.
    pub fn table(self, table: &str) -> Self {
        Self { table: Some(table.to_owned()), ..self }
    }
}

/// One inconsistency: what, where, and what an operator should do about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Its kind.
    pub kind: Kind,
    /// Where it is.
    #[serde(rename = "where")]
    pub place: Place,
    /// What was found, in a sentence.
    pub found: String,
    /// What to do, in one or two sentences.
    pub action: String,
}

/// The most findings of one kind listed per shard; the rest are counted in one
/// [`Kind::MoreFindings`].
pub const LISTED_PER_KIND_AND_SHARD: usize = 50;

/// The findings of a check, capped per kind and shard so that a shard full of one problem does
/// not fill memory.
#[derive(Debug, Default)]
pub struct Findings {
    listed: Vec<Finding>,
    counts: BTreeMap<(Kind, Option<String>), usize>,
}

impl Findings {
    /// Adds `finding` (listed if fewer than [`LISTED_PER_KIND_AND_SHARD`] of its kind and shard are).
    pub fn push(&mut self, finding: Finding) {
        let count = self.counts.entry((finding.kind, finding.place.shard.clone())).or_default();
        *count += 1;
        if *count <= LISTED_PER_KIND_AND_SHARD {
            self.listed.push(finding);
        }
    }

    /// Whether a shard was unreachable (the check is incomplete).
    pub fn incomplete(&self) -> bool {
        self.counts.keys().any(|(kind, _)| *kind == Kind::ShardUnreachable)
    }

    /// The findings, with one [`Kind::MoreFindings`] per kind and shard that had more than are
    /// listed.
    pub fn into_list(self) -> Vec<Finding> {
        let mut listed = self.listed;
        for ((kind, shard), count) in self.counts {
            if count > LISTED_PER_KIND_AND_SHARD {
                listed.push(Finding {
                    kind: Kind::MoreFindings,
                    place: Place { shard, ..Place::default() },
                    found: format!(
                        "{} more findings of kind {} than are listed here",
                        count - LISTED_PER_KIND_AND_SHARD,
                        kind.as_str()
                    ),
                    action: "Deal with the listed ones first, then run `shardgate check` again.".to_owned(),
                });
            }
        }
        listed
    }
}

/// What the checks read from the catalog once: the map, and what running jobs hold.
#[derive(Debug)]
pub struct CatalogView {
    /// The shard map.
    pub map: MapSnapshot,
    /// Ids of the running jobs.
    pub running_jobs: HashSet<String>,
    /// Subjects (`tenant:<id>`, `vshard:<n>`, `rebalance`) claimed by running jobs.
    pub claimed: HashSet<String>,
}

impl CatalogView {
    /// Reads the map and the running jobs' claims. The catalog is not changed.
    pub async fn read(catalog: &Catalog) -> Result<Self, Error> {
        let map = catalog.load_map().await?;
        let running = catalog.running_jobs().await?;
        let running_jobs: HashSet<String> = running.iter().map(|j| j.id.clone()).collect();
        let claims: Vec<(String, String)> = sqlx::query_as("SELECT subject, job_id FROM job_claims")
            .fetch_all(&catalog.database().pool)
            .await
            .map_err(|source| Error::Database { target: "the catalog".to_owned(), source })?;
        let claimed =
            claims.into_iter().filter(|(_, job)| running_jobs.contains(job)).map(|(subject, _)| subject).collect();
        Ok(Self { map, running_jobs, claimed })
    }

    /// Whether a running job holds `tenant`'s home rows (a tenant move, or a vshard move of the
    /// vshard an unpinned tenant hashes to).
    pub fn holds_tenant(&self, tenant: &str, vshard: u32) -> bool {
        self.claimed.contains(&format!("tenant:{tenant}")) || self.holds_vshard(vshard)
    }

    /// Whether a running job holds `vshard` (a vshard move, or a rebalance or drain).
    pub fn holds_vshard(&self, vshard: u32) -> bool {
        self.claimed.contains(&format!("vshard:{vshard}")) || self.claimed.contains(crate::claims::REBALANCE_SUBJECT)
    }

    /// The shard the catalog maps `vshard` to.
    pub fn vshard_owner(&self, vshard: u32) -> Option<&ShardId> {
        let index = *self.map.vshards.get(usize::try_from(vshard).ok()?)?;
        self.map.shards.get(usize::from(index)).map(|s| &s.id)
    }
}

/// One registered shard as the checks reach it.
#[derive(Debug, Clone)]
pub struct ShardUnderCheck {
    /// Its id.
    pub id: ShardId,
    /// Its database.
    pub db: Database,
}

/// Vshards the catalog maps to shards it does not register (the catalog's foreign key is not
/// enforced on SQLite, and a restore may pair tables of different moments). Read before the
/// map, which cannot be loaded while any exist.
pub async fn vshard_owners_unregistered(catalog: &Catalog, findings: &mut Findings) -> Result<(), Error> {
    let rows: Vec<(String, i64, i64, i64)> = sqlx::query_as(
        "SELECT v.shard, COUNT(*), MIN(v.vshard), MAX(v.vshard) FROM vshards v \
         LEFT JOIN shards s ON s.id = v.shard WHERE s.id IS NULL GROUP BY v.shard ORDER BY v.shard",
    )
    .fetch_all(&catalog.database().pool)
    .await
    .map_err(|source| Error::Database { target: "the catalog".to_owned(), source })?;
    for (shard, count, first, last) in rows {
        findings.push(Finding {
            kind: Kind::VshardOwnerUnregistered,
            place: Place { shard: Some(shard.clone()), vshard: u32::try_from(first).ok(), ..Place::default() }
                .table("vshards"),
            found: format!(
                "the catalog maps {count} vshards ({first} to {last}) to shard {shard}, which it does not register"
            ),
            action: format!(
                "Restore the catalog from a backup in which shard {shard} is registered, or register the database \
                 that holds those vshards as shard {shard} (POST /v1/admin/shards) before starting the gateway."
            ),
        });
    }
    Ok(())
}
