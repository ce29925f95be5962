//! A tenant's collections, as the admin API lists them: the ones the catalog distributes (`hash`
//! or `range`, with their ranges) and the ones that only exist as records on the tenant's home
//! shard (distributed `tenant`, which has no catalog row), each with its live records counted now.

use std::collections::{BTreeMap, BTreeSet};

use crate::catalog::RangeRow;
use crate::error::Error;
use crate::ids::{ShardId, TenantId};
use crate::map::{Distribution, ShardState};
use crate::storage::holdings::{RecordTable, tenant_collection_records};
use crate::storage::shard::FencedShard;

use super::Topology;

/// One collection of a tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantCollection {
    /// Its name.
    pub name: String,
    /// Its distribution.
    pub distribution: Distribution,
    /// For `range`: its ranges, ascending; empty otherwise.
    pub ranges: Vec<RangeRow>,
    /// Its live records, over the shards that answered.
    pub records: u64,
}

/// A tenant's collections, by name, and the shards that did not answer (their records are
/// missing from the counts and, for the home shard, the collections it alone would name).
#[derive(Debug, Clone, Default)]
pub struct TenantCollections {
    /// The collections, in byte order of their names.
    pub collections: Vec<TenantCollection>,
    /// Shards that did not answer within the probe timeout, or are offline.
    pub unreachable: Vec<ShardId>,
}

impl Topology<'_> {
    /// `tenant`'s collections: those the catalog distributes, and those with live records on its
    /// home shard, each with its live records (a statement per shard that may hold some, through
    /// the tenant's index: its home shard, and the shards of its distributed collections).
    /// Records left on the other layout's table by a redistribution not yet cleaned up are not
    /// counted. [`Error::TenantNotFound`] if neither the map nor the catalog knows the tenant.
    pub async fn tenant_collections(&self, tenant: &TenantId) -> Result<TenantCollections, Error> {
        self.router.incarnation(tenant).await?;
        let home = self.router.route_tenant(tenant)?.shard;
        let distributed = self.router.catalog().tenant_distributions(tenant).await?;
        let mut collections: BTreeMap<String, TenantCollection> = distributed
            .into_iter()
            .map(|row| {
                let name = row.collection.as_str().to_owned();
                let collection = TenantCollection {
                    name: name.clone(),
                    distribution: row.distribution,
                    ranges: row.ranges,
                    records: 0,
                };
                (name, collection)
            })
            .collect();
        // Shards that may hold spread records: every shard for a hashed collection, else those
        // its ranges name.
        let any_hashed = collections.values().any(|c| c.distribution == Distribution::Hash);
        let range_shards: BTreeSet<&str> =
            collections.values().flat_map(|c| c.ranges.iter().map(|r| r.shard.as_str())).collect();
        let shards = self.router.shard_dbs();
        let counted = futures::future::join_all(shards.iter().map(|(id, state, db)| {
            let holds_home = *id == home;
            let holds_spread = any_hashed || range_shards.contains(id.as_str());
            async move {
                if !holds_home && !holds_spread {
                    return Some((Vec::new(), Vec::new()));
                }
                if *state == ShardState::Offline {
                    return None;
                }
                let shard = FencedShard::new(db, id);
                let count = async {
                    let home_rows = if holds_home {
                        tenant_collection_records(&shard, tenant, RecordTable::Home).await?
                    } else {
                        Vec::new()
                    };
                    let spread_rows = if holds_spread {
                        tenant_collection_records(&shard, tenant, RecordTable::Spread).await?
                    } else {
                        Vec::new()
                    };
                    Ok::<_, Error>((home_rows, spread_rows))
                };
                self.within_probe(id, "count a tenant's collections", count).await
            }
        }))
        .await;
        let mut unreachable = Vec::new();
        for ((id, _, _), counts) in shards.iter().zip(counted) {
            let Some((home_rows, spread_rows)) = counts else {
                unreachable.push(id.clone());
                continue;
            };
            for (name, records) in spread_rows {
                if let Some(c) = collections.get_mut(&name).filter(|c| c.distribution != Distribution::Tenant) {
                    c.records += records;
                }
            }
            for (name, records) in home_rows {
                // A distributed collection's rows left in the home table belong to no layout in force.
                collections.entry(name.clone()).or_insert(TenantCollection {
                    name,
                    distribution: Distribution::Tenant,
                    ranges: Vec::new(),
                    records,
                });
            }
        }
        Ok(TenantCollections { collections: collections.into_values().collect(), unreachable })
    }
}
