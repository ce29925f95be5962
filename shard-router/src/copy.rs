//! Copying placed rows from one shard to another: the bulk primitive the online moves build on
//! (copy, then catch up, then copy the last delta; see DESIGN.md §5 "Moving data").
//!
//! A copy takes the rows of one tenant or one vshard ([`Selection`]) from a table on the source
//! shard and merges them into the same table on the target. A copied row replaces the target's
//! row with the same key only if its version is newer, so a copy can be repeated (to catch up
//! with changes made meanwhile, or after a crash) and never moves a key's version backwards;
//! rows the target already holds at the same or a newer version are left alone. Tombstones are
//! rows like any other and are copied too. Copies are maintenance: they are not fenced.
//!
//! Two methods give the same result:
//!
//! - [`CopyMethod::Binary`], between two PostgreSQL shards: `COPY (SELECT ...) TO STDOUT (FORMAT
//!   binary)` on the source streams straight into `COPY ... FROM STDIN (FORMAT binary)` on the
//!   target, into a temporary table that one `INSERT ... SELECT ... ON CONFLICT` merges in the
//!   same transaction. No row is decoded on the way. This needs the native PostgreSQL driver
//!   ([`Database::postgres`]); `bench/src/bin/drivers.rs` measures what it gains.
//! - [`CopyMethod::Pages`], for any pair of engines: pages of rows in key order through the
//!   engine-neutral pool, each merged with one multi-row `INSERT ... ON CONFLICT`.

use sqlx::Row;
use sqlx::any::AnyRow;
use sqlx::postgres::{PgConnection, PgPool};

use crate::db::Database;
use crate::error::Error;
use crate::ids::TenantId;
use crate::shard::FencedShard;

/// How a column's values travel through [`CopyMethod::Pages`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnKind {
    /// `TEXT`.
    Text,
    /// `INTEGER` / `BIGINT`.
    Int,
    /// `BLOB` / `BYTEA`.
    Bytes,
}

/// A table whose rows can be copied: its columns, its primary key, the column holding a row's
/// version, and how big a page of [`CopyMethod::Pages`] is.
#[derive(Debug, Clone, Copy)]
pub struct CopyTable {
    /// The table's name.
    pub name: &'static str,
    /// Every column, with how its values travel.
    pub columns: &'static [(&'static str, ColumnKind)],
    /// The primary key's columns, in the order rows are paged by.
    pub key: &'static [&'static str],
    /// The column whose larger value wins when both shards hold a key.
    pub version: &'static str,
    /// Rows per page: small enough that a page stays a few megabytes and its parameters stay
    /// under both engines' limits (32,766 on SQLite).
    pub page_rows: usize,
}

/// The `records` table of a shard.
pub const RECORDS: CopyTable = CopyTable {
    name: "records",
    columns: &[
        ("tenant", ColumnKind::Text),
        ("collection", ColumnKind::Text),
        ("key", ColumnKind::Text),
        ("vshard", ColumnKind::Int),
        ("version", ColumnKind::Int),
        ("updated_at", ColumnKind::Int),
        ("deleted", ColumnKind::Int),
        ("value", ColumnKind::Text),
        ("live_since", ColumnKind::Int),
    ],
    key: &["tenant", "collection", "key"],
    version: "version",
    page_rows: 500,
};

/// Which rows a copy takes: every table copied this way has a `tenant` and a `vshard` column.
#[derive(Debug, Clone, Copy)]
pub enum Selection<'a> {
    /// The rows of one tenant.
    Tenant(&'a TenantId),
    /// The rows placed on one vshard.
    Vshard(u32),
}

impl Selection<'_> {
    /// The condition as SQL with the value inlined (`COPY (query)` takes no parameters).
    fn inline_condition(&self) -> String {
        match self {
            Selection::Tenant(tenant) => format!("tenant = {}", sql_string(tenant.as_str())),
            Selection::Vshard(vshard) => format!("vshard = {vshard}"),
        }
    }
}

/// `text` as an SQL string literal. Tenant ids hold no quote ([`TenantId::parse`]); one would be
/// doubled anyway, so the literal cannot end early.
fn sql_string(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// How a copy moves its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CopyMethod {
    /// Binary `COPY` from PostgreSQL to PostgreSQL.
    Binary,
    /// Pages of rows through the engine-neutral pool, on any engines.
    Pages,
}

impl CopyMethod {
    /// The fastest method the two databases allow: [`CopyMethod::Binary`] between two
    /// PostgreSQL databases, else [`CopyMethod::Pages`].
    pub fn best(source: &Database, target: &Database) -> Self {
        if source.postgres().is_some() && target.postgres().is_some() { Self::Binary } else { Self::Pages }
    }
}

/// What a copy did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Copied {
    /// The method that ran (a binary copy asked of a SQLite shard runs in pages).
    pub method: CopyMethod,
    /// Rows read from the source.
    pub read: u64,
    /// Rows the target took (new keys, and keys whose version was older there).
    pub written: u64,
}

/// Copies the rows of `table` that `selection` takes from `source` to `target` (see the module
/// documentation), with `method` if both databases allow it, else in pages.
pub async fn copy_rows(
    table: &CopyTable,
    source: FencedShard<'_>,
    target: FencedShard<'_>,
    selection: Selection<'_>,
    method: CopyMethod,
) -> Result<Copied, Error> {
    match (method, source.db().postgres(), target.db().postgres()) {
        (CopyMethod::Binary, Some(from), Some(to)) => copy_binary(table, (source, from), (target, to), selection).await,
        _ => copy_pages(table, source, target, selection).await,
    }
}

/// `INSERT INTO t (columns) <rows> ON CONFLICT (key) DO UPDATE SET ... WHERE t.version <
/// excluded.version`: the merge both methods end with.
fn merge_sql(table: &CopyTable, rows: &str) -> String {
    let columns = column_list(table);
    let key = table.key.join(", ");
    let updates = table
        .columns
        .iter()
        .filter(|(name, _)| !table.key.contains(name))
        .map(|(name, _)| format!("{name} = excluded.{name}"))
        .collect::<Vec<_>>()
        .join(", ");
    let (name, version) = (table.name, table.version);
    format!(
        "INSERT INTO {name} ({columns}) {rows} ON CONFLICT ({key}) DO UPDATE SET {updates} \
         WHERE {name}.{version} < excluded.{version}"
    )
}

fn column_list(table: &CopyTable) -> String {
    table.columns.iter().map(|(name, _)| *name).collect::<Vec<_>>().join(", ")
}

/// The binary method: the source's `COPY TO` bytes go, undecoded, into the target's `COPY FROM`.
/// After a failure either connection may be mid-protocol (sqlx leaves a failed `COPY` start
/// unread), so both are closed rather than returned to their pools.
async fn copy_binary(
    table: &CopyTable,
    (source, from): (FencedShard<'_>, &PgPool),
    (target, to): (FencedShard<'_>, &PgPool),
    selection: Selection<'_>,
) -> Result<Copied, Error> {
    let mut writer = to.acquire().await.map_err(|e| target.err(e))?;
    let mut reader = from.acquire().await.map_err(|e| source.err(e))?;
    let copied = pump(table, (source, &mut reader), (target, &mut writer), selection).await;
    if copied.is_err() {
        reader.close_on_drop();
        writer.close_on_drop();
    }
    copied
}

async fn pump(
    table: &CopyTable,
    (source, reader): (FencedShard<'_>, &mut PgConnection),
    (target, writer): (FencedShard<'_>, &mut PgConnection),
    selection: Selection<'_>,
) -> Result<Copied, Error> {
    use futures::TryStreamExt;
    use sqlx::Connection;

    let columns = column_list(table);
    let name = table.name;
    let incoming = format!("sg_copy_{name}");
    let mut tx = writer.begin().await.map_err(|e| target.err(e))?;
    // Dropped at commit, and with the transaction if it fails: nothing is left behind.
    sqlx::query(&format!("CREATE TEMPORARY TABLE {incoming} (LIKE {name} INCLUDING DEFAULTS) ON COMMIT DROP"))
        .execute(&mut *tx)
        .await
        .map_err(|e| target.err(e))?;
    let mut sink = tx
        .copy_in_raw(&format!("COPY {incoming} ({columns}) FROM STDIN (FORMAT binary)"))
        .await
        .map_err(|e| target.err(e))?;
    let query =
        format!("COPY (SELECT {columns} FROM {name} WHERE {}) TO STDOUT (FORMAT binary)", selection.inline_condition());
    let pumped: Result<(), Error> = async {
        let mut bytes = reader.copy_out_raw(&query).await.map_err(|e| source.err(e))?;
        while let Some(data) = bytes.try_next().await.map_err(|e| source.err(e))? {
            sink.send(data).await.map_err(|e| target.err(e))?;
        }
        Ok(())
    }
    .await;
    if let Err(e) = pumped {
        // Ends the target's COPY; the transaction then rolls back when dropped.
        let _ = sink.abort("the source of the copy failed").await;
        return Err(e);
    }
    let read = sink.finish().await.map_err(|e| target.err(e))?;
    let merged = sqlx::query(&merge_sql(table, &format!("SELECT {columns} FROM {incoming}")))
        .execute(&mut *tx)
        .await
        .map_err(|e| target.err(e))?;
    tx.commit().await.map_err(|e| target.err(e))?;
    Ok(Copied { method: CopyMethod::Binary, read, written: merged.rows_affected() })
}

/// One value read from a page.
enum Value {
    Text(String),
    Int(i64),
    Bytes(Vec<u8>),
}

/// The page method: key-ordered pages through the engine-neutral pools.
async fn copy_pages(
    table: &CopyTable,
    source: FencedShard<'_>,
    target: FencedShard<'_>,
    selection: Selection<'_>,
) -> Result<Copied, Error> {
    let columns = column_list(table);
    let key = table.key.join(", ");
    let placeholders = |from: usize, n: usize| (from..from + n).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ");
    let selected = match selection {
        Selection::Tenant(_) => "tenant = $1",
        Selection::Vshard(_) => "vshard = $1",
    };
    let first_page = format!(
        "SELECT {columns} FROM {name} WHERE {selected} ORDER BY {key} LIMIT {rows}",
        name = table.name,
        rows = table.page_rows
    );
    let next_page = format!(
        "SELECT {columns} FROM {name} WHERE {selected} AND ({key}) > ({after}) ORDER BY {key} LIMIT {rows}",
        name = table.name,
        after = placeholders(2, table.key.len()),
        rows = table.page_rows
    );
    let key_positions: Vec<usize> = table
        .key
        .iter()
        .map(|k| table.columns.iter().position(|(name, _)| name == k).expect("a key column is a column"))
        .collect();
    let mut last_key: Option<Vec<Value>> = None;
    let mut copied = Copied { method: CopyMethod::Pages, read: 0, written: 0 };
    loop {
        let sql = if last_key.is_some() { &next_page } else { &first_page };
        let mut query = sqlx::query(sql);
        query = match selection {
            Selection::Tenant(tenant) => query.bind(tenant.as_str()),
            Selection::Vshard(vshard) => query.bind(i64::from(vshard)),
        };
        for value in last_key.iter().flatten() {
            query = bind(query, value);
        }
        let rows = query.fetch_all(source.pool()).await.map_err(|e| source.err(e))?;
        if rows.is_empty() {
            return Ok(copied);
        }
        let values =
            rows.iter().map(|row| read_row(table, row)).collect::<Result<Vec<_>, _>>().map_err(|e| source.err(e))?;
        let width = table.columns.len();
        let tuples = (0..values.len()).map(|i| format!("({})", placeholders(1 + i * width, width))).collect::<Vec<_>>();
        let merge = merge_sql(table, &format!("VALUES {}", tuples.join(", ")));
        let mut insert = sqlx::query(&merge);
        for value in values.iter().flatten() {
            insert = bind(insert, value);
        }
        let merged = insert.execute(target.pool()).await.map_err(|e| target.err(e))?;
        copied.read += values.len() as u64;
        copied.written += merged.rows_affected();
        let full = values.len() == table.page_rows;
        let mut last = values.into_iter().next_back().expect("a page has rows");
        if !full {
            return Ok(copied);
        }
        last_key = Some(key_positions.iter().map(|&i| std::mem::replace(&mut last[i], Value::Int(0))).collect());
    }
}

fn read_row(table: &CopyTable, row: &AnyRow) -> Result<Vec<Value>, sqlx::Error> {
    table
        .columns
        .iter()
        .enumerate()
        .map(|(i, (_, kind))| {
            Ok(match kind {
                ColumnKind::Text => Value::Text(row.try_get(i)?),
                ColumnKind::Int => Value::Int(row.try_get(i)?),
                ColumnKind::Bytes => Value::Bytes(row.try_get(i)?),
            })
        })
        .collect()
}

type AnyQuery<'q> = sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>;

fn bind<'q>(query: AnyQuery<'q>, value: &'q Value) -> AnyQuery<'q> {
    match value {
        Value::Text(text) => query.bind(text.as_str()),
        Value::Int(n) => query.bind(*n),
        Value::Bytes(bytes) => query.bind(bytes.as_slice()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_merge_keeps_the_newer_version() {
        let sql = merge_sql(&RECORDS, "VALUES ($1)");
        assert!(sql.contains("ON CONFLICT (tenant, collection, key) DO UPDATE SET vshard = excluded.vshard"), "{sql}");
        assert!(sql.ends_with("WHERE records.version < excluded.version"), "{sql}");
        assert!(!sql.contains("tenant = excluded"), "key columns are not updated: {sql}");
    }

    #[test]
    fn an_inlined_string_cannot_close_its_quote() {
        assert_eq!(sql_string("o'brien'); DROP TABLE records; --"), "'o''brien''); DROP TABLE records; --'");
        let tenant = TenantId::parse("acme").unwrap();
        assert_eq!(Selection::Tenant(&tenant).inline_condition(), "tenant = 'acme'");
        assert_eq!(Selection::Vshard(7).inline_condition(), "vshard = 7");
    }
}
