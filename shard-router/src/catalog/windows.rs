//! What the catalog's tables of time windows share (`load_windows`: [`super::load`],
//! `request_windows`: [`super::request_windows`]): rows written many at a time in one statement
//! (added to when they exist), rolled up into wider windows, pruned, and read back over a span of
//! time. A table says how its rows are written and read ([`WindowTable`]); storing, rolling up,
//! pruning and reading a span are written once here, and called for a table by its row type
//! ([`super::LoadRow`], [`super::RequestRow`]): `catalog.roll_up_windows::<LoadRow>(..)`. The
//! trait is public in this private module, so no other crate can add a table.

use std::collections::BTreeMap;

use super::{Catalog, catalog_err};
use crate::error::Error;
use crate::storage::db::Engine;

/// A catalog table of windows whose rows add up: rows with the same key (the window and what
/// it is about) merge by adding their counts.
pub trait WindowTable: Clone + Sized {
    /// The table.
    const TABLE: &'static str;
    /// The order of the rows of one window in a read ([`Catalog::rows_in_span`]): the columns
    /// after the window's start.
    const ORDER: &'static str;
    /// What identifies a row within its window (its key without the window's start).
    type Key: Ord;

    /// The statement that stores the rows given as a JSON array in `$1` (see [`Self::json`]),
    /// adding to a row that exists.
    fn insert_sql(engine: Engine) -> String;
    /// The columns [`Self::read`] reads, in its order.
    fn columns() -> String;
    /// A row as read with [`Self::columns`].
    fn read(row: &sqlx::any::AnyRow) -> Result<Self, Error>;
    /// `rows` as the JSON array [`Self::insert_sql`] takes.
    fn json(rows: &[Self]) -> Result<String, Error>;

    /// The window's start.
    fn start_ms(&self) -> i64;
    /// What identifies the row within its window.
    fn key(&self) -> Self::Key;
    /// The row with no counts, moved to the window `[start_ms, start_ms + width_ms)`.
    fn emptied(&self, start_ms: i64, width_ms: i64) -> Self;
    /// Adds `other`'s counts.
    fn add(&mut self, other: &Self);
}

impl Catalog {
    /// Stores `rows` in one statement (a row stored before is added to).
    pub async fn store_windows<T: WindowTable>(&self, rows: &[T]) -> Result<(), Error> {
        if rows.is_empty() {
            return Ok(());
        }
        let json = T::json(rows)?;
        let sql = T::insert_sql(self.db.engine);
        self.guarded(async {
            sqlx::query(&sql).bind(json).execute(&self.db.pool).await.map_err(catalog_err)?;
            Ok(())
        })
        .await
    }

    /// Rolls the rows of width `from_ms` that ended by `before_ms` up into rows of width `to_ms`
    /// (their counts summed), in one transaction: the rows are deleted and their sums stored, so
    /// two instances rolling up at once never count a row twice (the second finds it gone).
    /// Returns how many rows were rolled up.
    pub async fn roll_up_windows<T: WindowTable>(
        &self,
        from_ms: i64,
        to_ms: i64,
        before_ms: i64,
    ) -> Result<u64, Error> {
        let insert = T::insert_sql(self.db.engine);
        let take = format!(
            "DELETE FROM {} WHERE width_ms = $1 AND start_ms + width_ms <= $2 RETURNING {}",
            T::TABLE,
            T::columns()
        );
        self.guarded(async {
            let mut tx = self.db.pool.begin().await.map_err(catalog_err)?;
            let taken =
                sqlx::query(&take).bind(from_ms).bind(before_ms).fetch_all(&mut *tx).await.map_err(catalog_err)?;
            let mut sums: BTreeMap<(i64, T::Key), T> = BTreeMap::new();
            for row in &taken {
                let row = T::read(row)?;
                let start_ms = row.start_ms() - row.start_ms().rem_euclid(to_ms);
                sums.entry((start_ms, row.key())).or_insert_with(|| row.emptied(start_ms, to_ms)).add(&row);
            }
            let rows: Vec<T> = sums.into_values().collect();
            if !rows.is_empty() {
                sqlx::query(&insert).bind(T::json(&rows)?).execute(&mut *tx).await.map_err(catalog_err)?;
            }
            tx.commit().await.map_err(catalog_err)?;
            Ok(taken.len() as u64)
        })
        .await
    }

    /// The rows of `scope` (the table's `scope` column) of the windows that overlap
    /// `[since_ms, until_ms)`, in time order, then in [`WindowTable::ORDER`].
    pub(super) async fn rows_in_span<T: WindowTable>(
        &self,
        scope: &str,
        since_ms: i64,
        until_ms: i64,
    ) -> Result<Vec<T>, Error> {
        let sql = format!(
            "SELECT {} FROM {} WHERE scope = $1 AND start_ms < $3 AND start_ms + width_ms > $2 ORDER BY start_ms, {}",
            T::columns(),
            T::TABLE,
            T::ORDER
        );
        self.guarded(async {
            let rows = sqlx::query(&sql)
                .bind(scope)
                .bind(since_ms)
                .bind(until_ms)
                .fetch_all(&self.db.pool)
                .await
                .map_err(catalog_err)?;
            rows.iter().map(T::read).collect()
        })
        .await
    }

    /// Deletes the rows of width `width_ms` that ended by `before_ms`; returns how many.
    pub async fn prune_windows<T: WindowTable>(&self, width_ms: i64, before_ms: i64) -> Result<u64, Error> {
        let sql = format!("DELETE FROM {} WHERE width_ms = $1 AND start_ms + width_ms <= $2", T::TABLE);
        self.guarded(async {
            let done =
                sqlx::query(&sql).bind(width_ms).bind(before_ms).execute(&self.db.pool).await.map_err(catalog_err)?;
            Ok(done.rows_affected())
        })
        .await
    }
}
