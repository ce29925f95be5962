//! What the jobs that move data do with a record store: counts, purges, a collection's rows
//! with their tags, and the re-tagging and removal of single rows.

use serde_json::value::RawValue;
use sqlx::Row;

use super::{Layout, PlacedRow, RecordStore, StoredRecord};
use crate::error::Error;
use crate::ids::{CollectionName, TenantId};
use crate::storage::shard::OnShard;

impl<'a> RecordStore<'a> {
    /// Live records on this shard (all tenants).
    pub async fn count_live(&self) -> Result<u64, Error> {
        let count: i64 =
            sqlx::query_scalar(&self.sql().count_live).fetch_one(self.shard.pool()).reading_on(&self.shard).await?;
        Ok(count as u64)
    }

    /// How many rows (tombstones included) `tenant`'s `collection` has here.
    pub async fn count_collection(&self, tenant: &TenantId, collection: &CollectionName) -> Result<u64, Error> {
        let count: i64 = sqlx::query_scalar(&self.sql().count_collection)
            .bind(tenant.as_str())
            .bind(collection.as_str())
            .fetch_one(self.shard.pool())
            .reading_on(&self.shard)
            .await?;
        Ok(u64::try_from(count).unwrap_or(0))
    }

    /// Removes every row (tombstones included) of `tenant`'s `collection` here.
    pub async fn purge_collection(&self, tenant: &TenantId, collection: &CollectionName) -> Result<u64, Error> {
        let done = sqlx::query(&self.sql().purge_collection)
            .bind(tenant.as_str())
            .bind(collection.as_str())
            .execute(self.shard.pool())
            .on_shard(&self.shard)
            .await?;
        Ok(done.rows_affected())
    }

    /// Up to `limit` rows (tombstones included) of `tenant`'s `collection` here, in key order,
    /// each with its vshard tag: what a change of distribution settles row by row.
    pub async fn placed_rows(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        limit: u32,
    ) -> Result<Vec<PlacedRow>, Error> {
        let table = self.table();
        let sql = format!(
            "SELECT key, version, updated_at, value, deleted, vshard FROM {table} \
             WHERE tenant = $1 AND collection = $2 ORDER BY key LIMIT $3"
        );
        let rows = sqlx::query(&sql)
            .bind(tenant.as_str())
            .bind(collection.as_str())
            .bind(i64::from(limit))
            .fetch_all(self.shard.pool())
            .reading_on(&self.shard)
            .await?;
        rows.iter()
            .map(|row| {
                let value: String = row.try_get("value").map_err(|e| self.shard.err(e))?;
                let record = StoredRecord {
                    key: row.try_get("key").map_err(|e| self.shard.err(e))?,
                    version: row.try_get("version").map_err(|e| self.shard.err(e))?,
                    updated_at_ms: row.try_get("updated_at").map_err(|e| self.shard.err(e))?,
                    value: RawValue::from_string(value).map_err(|e| Error::Corrupt(e.to_string()))?,
                };
                let deleted: i64 = row.try_get("deleted").map_err(|e| self.shard.err(e))?;
                let tag: i64 = row.try_get("vshard").map_err(|e| self.shard.err(e))?;
                Ok(PlacedRow { record, deleted: deleted != 0, tag })
            })
            .collect()
    }

    /// Gives the row at `key` of `tenant`'s `collection` the tag a record placed at `vshard`
    /// has in this store's layout (the row stays where it is). Unfenced: only for a row whose
    /// collection changed its distribution, which no writer on an older map can reach any more.
    pub async fn retag(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        key: &str,
        vshard: u32,
    ) -> Result<(), Error> {
        let sql = format!("UPDATE {} SET vshard = $4 WHERE tenant = $1 AND collection = $2 AND key = $3", self.table());
        self.change_row(&sql, tenant, collection, key, Some(self.tag(vshard))).await
    }

    /// Removes the row at `key` of `tenant`'s `collection` (a tombstone too). Unfenced, like
    /// [`RecordStore::retag`]: for a row left where its collection's distribution no longer
    /// places it.
    pub async fn remove(&self, tenant: &TenantId, collection: &CollectionName, key: &str) -> Result<(), Error> {
        let sql = format!("DELETE FROM {} WHERE tenant = $1 AND collection = $2 AND key = $3", self.table());
        self.change_row(&sql, tenant, collection, key, None).await
    }

    /// Runs `sql` on one row: `$1`–`$3` tenant, collection, key, and `$4` `tag` if given.
    async fn change_row(
        &self,
        sql: &str,
        tenant: &TenantId,
        collection: &CollectionName,
        key: &str,
        tag: Option<i64>,
    ) -> Result<(), Error> {
        let query = sqlx::query(sql).bind(tenant.as_str()).bind(collection.as_str()).bind(key);
        let query = match tag {
            Some(tag) => query.bind(tag),
            None => query,
        };
        query.execute(self.shard.pool()).on_shard(&self.shard).await?;
        Ok(())
    }

    /// The table of this store's layout.
    fn table(&self) -> &'static str {
        match self.layout {
            Layout::Home => "records",
            Layout::Hash(_) | Layout::Range => "spread_records",
        }
    }

    /// Raises the shard's fence to `epoch` (see [`crate::storage::shard::FencedShard::raise_fence`]).
    pub async fn raise_fence(&self, epoch: u64) -> Result<(), Error> {
        self.shard.raise_fence(epoch).await
    }

    /// Removes every record (and tombstone) of `tenant` on this shard.
    pub async fn purge_tenant(&self, tenant: &TenantId) -> Result<u64, Error> {
        let done = sqlx::query(&self.sql().purge_tenant)
            .bind(tenant.as_str())
            .execute(self.shard.pool())
            .on_shard(&self.shard)
            .await?;
        Ok(done.rows_affected())
    }
}
