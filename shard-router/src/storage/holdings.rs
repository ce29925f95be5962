//! What a shard database holds, measured cheaply: its size on disk, its data's size and its
//! rows from the database's own statistics (for `/metrics`, sampled, and the admin API), the
//! live records of each tenant it holds, and one tenant's records and blobs, and
//! its collections with their records (counted on demand through the tenant's index, for the
//! admin API).

use crate::error::Error;
use crate::ids::TenantId;
use crate::storage::db::Engine;
use crate::storage::shard::{FencedShard, OnShard};

/// A shard database's size.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShardSize {
    /// Bytes on disk (PostgreSQL: `pg_database_size`; SQLite: pages × page size).
    pub bytes: u64,
    /// Bytes of its data: the shard's tables with their indexes and TOAST (PostgreSQL:
    /// `pg_total_relation_size` of each table, without the database's catalogs, which take
    /// several MiB of an empty database; SQLite: the pages in use, free pages left out).
    pub data_bytes: u64,
    /// Rows of records (home and spread, tombstones included): PostgreSQL's statistics
    /// (`pg_stat_user_tables.n_live_tup`, as of its last analysis), SQLite's count.
    pub record_rows: u64,
}

/// Measures `shard` ([`ShardSize`]).
pub async fn shard_size(shard: &FencedShard<'_>) -> Result<ShardSize, Error> {
    let sql = match shard.db().engine {
        Engine::Postgres => {
            "SELECT pg_database_size(current_database()), \
             (SELECT COALESCE(SUM(pg_total_relation_size(relid)), 0)::BIGINT FROM pg_stat_user_tables \
              WHERE schemaname = ANY (current_schemas(false))), \
             (SELECT COALESCE(SUM(n_live_tup), 0)::BIGINT FROM pg_stat_user_tables \
              WHERE relname IN ('records', 'spread_records'))"
        }
        Engine::Sqlite => {
            "SELECT (SELECT page_count FROM pragma_page_count()) * (SELECT page_size FROM pragma_page_size()), \
             ((SELECT page_count FROM pragma_page_count()) - (SELECT freelist_count FROM pragma_freelist_count())) \
               * (SELECT page_size FROM pragma_page_size()), \
             (SELECT COUNT(*) FROM records) + (SELECT COUNT(*) FROM spread_records)"
        }
    };
    let (bytes, data_bytes, rows): (i64, i64, i64) =
        sqlx::query_as(sql).fetch_one(shard.pool()).reading_on(shard).await?;
    let count = |n: i64| u64::try_from(n).unwrap_or(0);
    Ok(ShardSize { bytes: count(bytes), data_bytes: count(data_bytes), record_rows: count(rows) })
}

/// The live records of each tenant in the `records` table of `shard` (its tenants' home data),
/// one row per tenant there: the caller keeps those of the tenants the catalog places on the
/// shard, so a tenant's copy on a shard it is moving to or has just left (until the move's
/// clean-up) is not counted twice.
pub async fn home_records_by_tenant(shard: &FencedShard<'_>) -> Result<Vec<(String, u64)>, Error> {
    let sql = "SELECT tenant, COUNT(*) FROM records WHERE deleted = 0 GROUP BY tenant";
    let rows: Vec<(String, i64)> = sqlx::query_as(sql).fetch_all(shard.pool()).reading_on(shard).await?;
    Ok(rows.into_iter().map(|(tenant, n)| (tenant, u64::try_from(n).unwrap_or(0))).collect())
}

/// What one tenant holds on one shard.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TenantHolding {
    /// Live records (home and spread).
    pub records: u64,
    /// Live blobs.
    pub blobs: u64,
    /// Their bytes.
    pub blob_bytes: u64,
}

impl TenantHolding {
    /// Adds `other`.
    pub fn add(&mut self, other: &TenantHolding) {
        self.records += other.records;
        self.blobs += other.blobs;
        self.blob_bytes += other.blob_bytes;
    }
}

/// What `tenant` holds on `shard`: nothing when the tenant has moved away from it (the copy
/// left behind until the move's clean-up is not its data).
pub async fn tenant_holding(shard: &FencedShard<'_>, tenant: &TenantId) -> Result<TenantHolding, Error> {
    let sql = "SELECT \
        (SELECT COUNT(*) FROM records WHERE tenant = $1 AND deleted = 0) \
          + (SELECT COUNT(*) FROM spread_records WHERE tenant = $1 AND deleted = 0), \
        (SELECT COUNT(*) FROM blobs WHERE tenant = $1 AND deleted = 0), \
        (SELECT CAST(COALESCE(SUM(size), 0) AS BIGINT) FROM blobs WHERE tenant = $1 AND deleted = 0), \
        (SELECT COUNT(*) FROM tenant_fences WHERE tenant = $1 AND state = 'moved')";
    let (records, blobs, blob_bytes, moved): (i64, i64, i64, i64) =
        sqlx::query_as(sql).bind(tenant.as_str()).fetch_one(shard.pool()).reading_on(shard).await?;
    if moved > 0 {
        return Ok(TenantHolding::default());
    }
    let count = |n: i64| u64::try_from(n).unwrap_or(0);
    Ok(TenantHolding { records: count(records), blobs: count(blobs), blob_bytes: count(blob_bytes) })
}

/// Which table of a shard holds the records a count reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordTable {
    /// `records`: the data of collections distributed `tenant`, on the tenant's home shard.
    Home,
    /// `spread_records`: the records of collections distributed `hash` or `range`.
    Spread,
}

/// The collections of `tenant` that have live records in `table` on `shard`, each with their
/// number, by name.
pub async fn tenant_collection_records(
    shard: &FencedShard<'_>,
    tenant: &TenantId,
    table: RecordTable,
) -> Result<Vec<(String, u64)>, Error> {
    let sql = match table {
        RecordTable::Home => {
            "SELECT collection, COUNT(*) FROM records WHERE tenant = $1 AND deleted = 0 \
             GROUP BY collection ORDER BY collection"
        }
        RecordTable::Spread => {
            "SELECT collection, COUNT(*) FROM spread_records WHERE tenant = $1 AND deleted = 0 \
             GROUP BY collection ORDER BY collection"
        }
    };
    let rows: Vec<(String, i64)> =
        sqlx::query_as(sql).bind(tenant.as_str()).fetch_all(shard.pool()).reading_on(shard).await?;
    Ok(rows.into_iter().map(|(collection, n)| (collection, u64::try_from(n).unwrap_or(0))).collect())
}
