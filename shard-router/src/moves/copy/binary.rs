//! The binary method, between two PostgreSQL shards: the source's `COPY ... TO STDOUT (FORMAT
//! binary)` streams undecoded into the target's `COPY ... FROM STDIN`, into a staging table merged
//! in the same transaction, or into the table itself when it holds none of the rows.

use sqlx::postgres::{PgConnection, PgPool};

use super::method::{Copied, CopyMethod};
use super::pages::{Replace, column_list, merge_sql};
use super::selection::Rows;
use super::tables::CopyTable;
use super::tally::TupleCounter;
use crate::error::Error;
use crate::storage::shard::FencedShard;

/// Where a binary copy writes the rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Landing {
    /// A staging table, merged into the table (a row replaces only an older version).
    Staged,
    /// The table itself, which must hold none of the rows' keys.
    Table,
}

/// The binary method: the source's `COPY TO` bytes go, undecoded, into the target's `COPY FROM`.
/// After a failure either connection may be mid-protocol (sqlx leaves a failed `COPY` start
/// unread), so both are closed rather than returned to their pools.
pub(super) async fn copy_binary(
    table: &CopyTable,
    (source, from): (FencedShard<'_>, &PgPool),
    (target, to): (FencedShard<'_>, &PgPool),
    rows: &Rows<'_>,
    into: Landing,
) -> Result<Option<Copied>, Error> {
    let writer = to.acquire().await.map_err(|e| target.err(e))?;
    let reader = from.acquire().await.map_err(|e| source.err(e))?;
    let mut ends = CopyEnds { reader, writer, clean: false };
    let copied = pump(table, (source, &mut ends.reader), (target, &mut ends.writer), rows, into).await;
    ends.clean = matches!(copied, Ok(Some(_)));
    copied
}

/// The two connections of a binary copy. Unless the copy ended cleanly (it failed, or its
/// future was dropped: its job lost its lease), both are closed rather than returned to their
/// pools: either may be mid-protocol, and closing them ends their statements on the servers at
/// once (a `COPY TO` writing into a closed socket fails, a `COPY FROM` reading from one rolls
/// back), where a connection returned to its pool would first read the rest of the copy.
struct CopyEnds {
    reader: sqlx::pool::PoolConnection<sqlx::Postgres>,
    writer: sqlx::pool::PoolConnection<sqlx::Postgres>,
    clean: bool,
}

impl Drop for CopyEnds {
    fn drop(&mut self) {
        if !self.clean {
            self.reader.close_on_drop();
            self.writer.close_on_drop();
        }
    }
}

/// Whether `e` is a unique violation: a key the target already holds.
fn is_unique_violation(e: &sqlx::Error) -> bool {
    e.as_database_error().and_then(|db| db.code()).as_deref() == Some("23505")
}

async fn pump(
    table: &CopyTable,
    (source, reader): (FencedShard<'_>, &mut PgConnection),
    (target, writer): (FencedShard<'_>, &mut PgConnection),
    rows: &Rows<'_>,
    into: Landing,
) -> Result<Option<Copied>, Error> {
    use futures::TryStreamExt;
    use sqlx::Connection;

    let columns = column_list(table);
    let name = table.name;
    let incoming = match into {
        Landing::Staged => format!("sg_copy_{name}"),
        Landing::Table => name.to_owned(),
    };
    let mut tx = writer.begin().await.map_err(|e| target.err(e))?;
    if into == Landing::Staged {
        // Dropped at commit, and with the transaction if it fails: nothing is left behind.
        sqlx::query(&format!("CREATE TEMPORARY TABLE {incoming} (LIKE {name} INCLUDING DEFAULTS) ON COMMIT DROP"))
            .execute(&mut *tx)
            .await
            .map_err(|e| target.err(e))?;
    }
    let mut sink = tx
        .copy_in_raw(&format!("COPY {incoming} ({columns}) FROM STDIN (FORMAT binary)"))
        .await
        .map_err(|e| target.err(e))?;
    let query = format!("COPY (SELECT {columns} FROM {name} WHERE {}) TO STDOUT (FORMAT binary)", rows.condition);
    let mut total = 0u64;
    let mut tuples = TupleCounter::default();
    // A unique violation into the table itself: `None`, the transaction rolls back.
    let conflict =
        |e: sqlx::Error| if into == Landing::Table && is_unique_violation(&e) { None } else { Some(target.err(e)) };
    let pumped: Result<Option<()>, Error> = async {
        let mut bytes = reader.copy_out_raw(&query).await.map_err(|e| source.err(e))?;
        while let Some(data) = bytes.try_next().await.map_err(|e| source.err(e))? {
            let len = data.len() as u64;
            total += len;
            if let Some(tally) = rows.tally {
                tally.add(tuples.feed(&data), len);
            }
            if let Err(e) = sink.send(data).await {
                return conflict(e).map_or(Ok(None), Err);
            }
            if let Some(pace) = rows.pace {
                pace.take(len).await;
            }
        }
        Ok(Some(()))
    }
    .await;
    match pumped {
        Ok(Some(())) => {}
        Ok(None) => return Ok(None),
        Err(e) => {
            // Ends the target's COPY; the transaction then rolls back when dropped.
            let _ = sink.abort("the source of the copy failed").await;
            return Err(e);
        }
    }
    let read = match sink.finish().await {
        Ok(read) => read,
        Err(e) => return conflict(e).map_or(Ok(None), Err),
    };
    if into == Landing::Table {
        tx.commit().await.map_err(|e| target.err(e))?;
        return Ok(Some(Copied { method: CopyMethod::Binary, read, written: read, bytes: total }));
    }
    let merged = sqlx::query(&merge_sql(table, &format!("SELECT {columns} FROM {incoming}"), Replace::Older))
        .execute(&mut *tx)
        .await
        .map_err(|e| target.err(e))?;
    tx.commit().await.map_err(|e| target.err(e))?;
    Ok(Some(Copied { method: CopyMethod::Binary, read, written: merged.rows_affected(), bytes: total }))
}
