//! Listings of a record store: ordered pages of a collection, of the vshards or key ranges a
//! shard holds, each asking in the same statement whether the caller's map is out of date.

use sqlx::Row;

use super::sql::{bounded, checking_listing, keys_within, sql_text, vshard_listing};
use super::{CheckingListing, Layout, ListBounds, RecordStore, StoredRecord};
use crate::error::Error;
use crate::ids::{CollectionName, TenantId};
use crate::storage::shard::OnShard;
use crate::storage::sql_comment::traced;

impl<'a> RecordStore<'a> {
    /// Live records of a collection within `bounds`, ordered by key, at most `limit`.
    pub async fn list(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        bounds: &ListBounds,
        limit: u32,
    ) -> Result<Vec<StoredRecord>, Error> {
        self.list_where(tenant, collection, bounds, limit, "").await
    }

    /// [`RecordStore::list`] of the records placed by the vshards of `runs` (inclusive ranges
    /// of vshards) only: the ones this shard owns, so a copy a vshard move has made here before
    /// its switch is not listed. Also says whether this shard has handed one of those vshards to
    /// another shard (a map that says it owns them is out of date), asked in the same statement.
    pub async fn list_in_vshards(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        bounds: &ListBounds,
        limit: u32,
        runs: &[(u32, u32)],
    ) -> Result<(Vec<StoredRecord>, bool), Error> {
        let listing = vshard_listing(self.sql(), runs, bounds);
        self.list_checking(tenant, collection, limit, listing).await
    }

    /// [`RecordStore::list`] of a range-distributed collection's records within the key
    /// `intervals` this shard holds (each from its first key up to its second, excluded;
    /// `None`: to the end), so a copy a range move has made here before its switch is not
    /// listed. Also says whether this shard has given away a part of them (a map that says it
    /// holds them is out of date), asked in the same statement.
    pub async fn list_in_ranges(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        bounds: &ListBounds,
        limit: u32,
        intervals: &[(String, Option<String>)],
    ) -> Result<(Vec<StoredRecord>, bool), Error> {
        // A fence [f, u) overlaps [from, until) when f < until and (u is NULL or u > from).
        let overlapping = intervals
            .iter()
            .map(|(from, until)| {
                let after_from = format!("(until_key IS NULL OR until_key > {})", sql_text(from));
                match until {
                    Some(until) => format!("(from_key < {} AND {after_from})", sql_text(until)),
                    None => after_from,
                }
            })
            .collect::<Vec<_>>();
        let keys = keys_within(intervals);
        let moved = format!(
            "SELECT COUNT(*) FROM range_fences WHERE tenant = $1 AND collection = $2 AND state = 'moved' AND ({})",
            if overlapping.is_empty() { "1 = 0".to_owned() } else { overlapping.join(" OR ") }
        );
        self.list_checking(tenant, collection, limit, checking_listing(self.sql(), &keys, &moved, bounds)).await
    }

    /// Runs `listing` (a [`checking_listing`]): the rows it lists, and whether the caller's map
    /// is out of date, asked in the same statement, or alone when no row is listed.
    async fn list_checking(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        limit: u32,
        listing: CheckingListing,
    ) -> Result<(Vec<StoredRecord>, bool), Error> {
        let rows = self.fetch_list(&listing.bounded, tenant, collection, limit).await?;
        let Some(first) = rows.first() else {
            let count: i64 = self
                .shard
                .read(|| {
                    let moved = traced(&listing.moved);
                    async move {
                        moved
                            .query_scalar()
                            .bind(tenant.as_str())
                            .bind(collection.as_str())
                            .fetch_one(self.shard.pool())
                            .await
                    }
                })
                .await?;
            return Ok((Vec::new(), count > 0));
        };
        let count: i64 = first.try_get(4).map_err(|e| self.err(e))?;
        Ok((self.records(&rows)?, count > 0))
    }

    async fn list_where(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        bounds: &ListBounds,
        limit: u32,
        condition: &str,
    ) -> Result<Vec<StoredRecord>, Error> {
        let rows = self.fetch_list(&bounded(&self.sql().list, condition, bounds), tenant, collection, limit).await?;
        if rows.is_empty() && self.layout == Layout::Home {
            self.shard.check_moved(tenant).await?;
            self.check_collection_moved(tenant, collection).await?;
        }
        self.records(&rows)
    }

    /// Runs the listing statement `sql` (a [`bounded`] one: the tenant bound as `$1`, the
    /// collection as `$2`, then the key bounds' values, then `limit`).
    async fn fetch_list(
        &self,
        (sql, binds): &(String, Vec<String>),
        tenant: &TenantId,
        collection: &CollectionName,
        limit: u32,
    ) -> Result<Vec<sqlx::any::AnyRow>, Error> {
        let sql = traced(sql);
        let mut query = sql.query().bind(tenant.as_str()).bind(collection.as_str());
        for value in binds {
            query = query.bind(value.as_str());
        }
        query.bind(i64::from(limit)).fetch_all(self.shard.pool()).reading_on(&self.shard).await
    }
}
