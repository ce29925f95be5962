//! Collection distributions in the catalog: which collections are spread over shards (`hash` or
//! `range`) rather than kept whole on their tenant's home shard. They are part of the shard
//! map: loading fills [`MapSnapshot::spread`], and every change moves the epoch on.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sqlx::any::AnyRow;

use super::{Audit, Catalog, catalog_err, column, corrupt};
use crate::error::Error;
use crate::ids::{CollectionName, ShardId, TenantId};
use crate::map::{Distribution, MapSnapshot, RangeBound, Spread, TenantKey};

/// One bound of a range-distributed collection as stored and shown: keys from `from` up to the
/// next bound live on `shard`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RangeRow {
    /// The smallest key of the range (the first range starts at `""`).
    pub from: String,
    /// The shard holding the range.
    pub shard: ShardId,
}

/// Ranges from `(from, shard)` pairs, for tests.
#[cfg(test)]
pub(crate) fn ranges_of(bounds: &[(&str, &str)]) -> Vec<RangeRow> {
    bounds
        .iter()
        .map(|(from, shard)| RangeRow { from: (*from).to_owned(), shard: ShardId::parse(shard).unwrap() })
        .collect()
}

/// A collection's distribution as the catalog stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectionRow {
    /// The tenant.
    pub tenant: TenantId,
    /// The collection.
    pub collection: CollectionName,
    /// `hash` or `range` (a collection distributed `tenant` has no row).
    pub distribution: Distribution,
    /// The ranges of a `range` collection, ascending; empty otherwise.
    pub ranges: Vec<RangeRow>,
    /// When the distribution was first set (ms since the Unix epoch).
    pub created_at_ms: i64,
    /// When it last changed.
    pub updated_at_ms: i64,
}

impl Catalog {
    /// Fills `map.spread` (and the tenants' `spread` flags) from the catalog.
    pub(super) async fn load_spread(&self, map: &mut MapSnapshot) -> Result<(), Error> {
        let rows = sqlx::query(
            "SELECT tenant, collection, distribution, ranges, created_at, updated_at FROM collection_distributions",
        )
        .fetch_all(&self.db.pool)
        .await
        .map_err(catalog_err)?;
        for row in rows {
            let row = collection_row(&row)?;
            let Some(entry) = map.tenants.get_mut(row.tenant.as_str()) else { continue };
            entry.spread = true;
            let spread = match row.distribution {
                Distribution::Hash => Spread::Hash,
                Distribution::Range => {
                    let mut bounds = Vec::with_capacity(row.ranges.len());
                    for range in &row.ranges {
                        let shard = map.shard_index(range.shard.as_str()).ok_or_else(|| {
                            corrupt(format!(
                                "collection {} of {} names unknown shard {}",
                                row.collection, row.tenant, range.shard
                            ))
                        })?;
                        bounds.push(RangeBound { from: range.from.clone(), shard });
                    }
                    Spread::Range(Arc::from(bounds))
                }
                Distribution::Tenant => continue,
            };
            map.spread
                .entry(TenantKey::from(row.tenant.as_str()))
                .or_default()
                .insert(row.collection.as_str().to_owned(), spread);
        }
        Ok(())
    }

    /// Sets `row`'s distribution (a `tenant` distribution removes the row). Returns the new
    /// epoch. [`Error::TenantNotFound`] if the tenant does not exist, [`Error::ShardNotFound`]
    /// if a range names an unknown shard.
    pub async fn set_distribution(&self, row: &CollectionRow, audit: &Audit) -> Result<u64, Error> {
        self.guarded(async {
            let (mut tx, epoch) = self.begin_change(audit).await?;
            let exists: Option<String> = sqlx::query_scalar("SELECT id FROM tenants WHERE id = $1")
                .bind(row.tenant.as_str())
                .fetch_optional(&mut *tx)
                .await
                .map_err(catalog_err)?;
            if exists.is_none() {
                return Err(Error::TenantNotFound);
            }
            // A job moving the tenant's data (a range move of this collection among them) ends
            // first: it relies on the distribution it began with.
            super::refuse_claimed(&mut tx, &super::tenant_subject(&row.tenant)).await?;
            for range in &row.ranges {
                let shard: Option<String> = sqlx::query_scalar("SELECT id FROM shards WHERE id = $1")
                    .bind(range.shard.as_str())
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(catalog_err)?;
                if shard.is_none() {
                    return Err(Error::ShardNotFound(range.shard.clone()));
                }
            }
            write_distribution(&mut tx, row).await?;
            tx.commit().await.map_err(catalog_err)?;
            Ok(epoch)
        })
        .await
    }

    /// The distribution of one collection, if it is `hash` or `range`.
    pub async fn get_distribution(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
    ) -> Result<Option<CollectionRow>, Error> {
        self.guarded(async {
            let row = sqlx::query(
                "SELECT tenant, collection, distribution, ranges, created_at, updated_at \
                 FROM collection_distributions WHERE tenant = $1 AND collection = $2",
            )
            .bind(tenant.as_str())
            .bind(collection.as_str())
            .fetch_optional(&self.db.pool)
            .await
            .map_err(catalog_err)?;
            row.as_ref().map(collection_row).transpose()
        })
        .await
    }

    /// The collections of `tenant` distributed `hash` or `range`, by name.
    pub async fn tenant_distributions(&self, tenant: &TenantId) -> Result<Vec<CollectionRow>, Error> {
        self.guarded(async {
            let rows = sqlx::query(
                "SELECT tenant, collection, distribution, ranges, created_at, updated_at \
                 FROM collection_distributions WHERE tenant = $1 ORDER BY collection",
            )
            .bind(tenant.as_str())
            .fetch_all(&self.db.pool)
            .await
            .map_err(catalog_err)?;
            rows.iter().map(collection_row).collect()
        })
        .await
    }
}

/// Stores `row`'s distribution in `tx` (a `tenant` distribution removes the row).
pub(super) async fn write_distribution(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    row: &CollectionRow,
) -> Result<(), Error> {
    let statement = if row.distribution == Distribution::Tenant {
        sqlx::query("DELETE FROM collection_distributions WHERE tenant = $1 AND collection = $2")
            .bind(row.tenant.as_str())
            .bind(row.collection.as_str())
    } else {
        let ranges = (row.distribution == Distribution::Range)
            .then(|| serde_json::to_string(&row.ranges))
            .transpose()
            .map_err(|e| Error::Corrupt(e.to_string()))?;
        sqlx::query(
            "INSERT INTO collection_distributions \
             (tenant, collection, distribution, ranges, incarnation, created_at, updated_at) \
             SELECT $1, $2, $3, $4, incarnation, $5, $5 FROM tenants WHERE id = $1 \
             ON CONFLICT (tenant, collection) DO UPDATE SET distribution = excluded.distribution, \
             ranges = excluded.ranges, updated_at = excluded.updated_at",
        )
        .bind(row.tenant.as_str())
        .bind(row.collection.as_str())
        .bind(row.distribution.as_str())
        .bind(ranges)
        .bind(row.updated_at_ms)
    };
    statement.execute(&mut **tx).await.map_err(catalog_err)?;
    Ok(())
}

fn collection_row(row: &AnyRow) -> Result<CollectionRow, Error> {
    let tenant: String = column(row, 0)?;
    let collection: String = column(row, 1)?;
    let distribution: String = column(row, 2)?;
    let ranges: Option<String> = column(row, 3)?;
    let tenant = TenantId::parse(&tenant).map_err(|e| corrupt(e.to_string()))?;
    let collection = CollectionName::parse(&collection).map_err(|e| corrupt(e.to_string()))?;
    let distribution = match distribution.as_str() {
        "hash" => Distribution::Hash,
        "range" => Distribution::Range,
        other => return Err(corrupt(format!("collection {collection} of {tenant} has distribution {other:?}"))),
    };
    let ranges = match ranges {
        Some(json) => serde_json::from_str(&json)
            .map_err(|e| corrupt(format!("ranges of collection {collection} of {tenant}: {e}")))?,
        None => Vec::new(),
    };
    Ok(CollectionRow {
        tenant,
        collection,
        distribution,
        ranges,
        created_at_ms: column(row, 4)?,
        updated_at_ms: column(row, 5)?,
    })
}
