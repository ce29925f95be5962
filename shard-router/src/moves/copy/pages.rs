//! The page method, for any pair of engines: rows read in key order a page at a time through
//! the engine-neutral pool ([`Pages`]), their values decoded, and merged on the target with one
//! multi-row `INSERT ... ON CONFLICT` per page (or per chunk of a page split between targets).

use sqlx::Row;
use sqlx::any::AnyRow;

use super::method::{Copied, CopyMethod};
use super::selection::Rows;
use super::tables::{ColumnKind, CopyTable};
use crate::error::Error;
use crate::storage::shard::FencedShard;

/// Which rows of the target with the same key a merged row replaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Replace {
    /// Those of an older version.
    Older,
    /// Those of the same or an older version.
    SameOrOlder,
}

/// `INSERT INTO t (columns) <rows> ON CONFLICT (key) DO UPDATE SET ... WHERE t.version <
/// excluded.version` (`<=` for [`Replace::SameOrOlder`]): the merge every copy ends with.
pub(super) fn merge_sql(table: &CopyTable, rows: &str, replace: Replace) -> String {
    let columns = column_list(table);
    let key = table.key.join(", ");
    let updates = table
        .columns
        .iter()
        .filter(|(name, _)| !table.key.contains(name))
        .map(|(name, _)| format!("{name} = excluded.{name}"))
        .collect::<Vec<_>>()
        .join(", ");
    let name = table.name;
    match table.version {
        Some(version) => format!(
            "INSERT INTO {name} ({columns}) {rows} ON CONFLICT ({key}) DO UPDATE SET {updates} \
             WHERE {name}.{version} {} excluded.{version}",
            if replace == Replace::Older { "<" } else { "<=" }
        ),
        None => format!("INSERT INTO {name} ({columns}) {rows} ON CONFLICT ({key}) DO NOTHING"),
    }
}

pub(super) fn column_list(table: &CopyTable) -> String {
    table.columns.iter().map(|(name, _)| *name).collect::<Vec<_>>().join(", ")
}

/// One value read from a page.
#[derive(Debug, Clone)]
pub(super) enum Value {
    Text(String),
    OptText(Option<String>),
    Int(i64),
    Bytes(Vec<u8>),
}

impl Value {
    /// Bytes it holds (for the pace and the progress).
    pub(super) fn len(&self) -> u64 {
        match self {
            Value::Text(text) | Value::OptText(Some(text)) => text.len() as u64,
            Value::OptText(None) => 0,
            Value::Int(_) => 8,
            Value::Bytes(bytes) => bytes.len() as u64,
        }
    }

    /// Feeds the value, tagged and length-prefixed, to a checksum.
    pub(super) fn digest(&self, hash: &mut sha2::Sha256) {
        use sha2::Digest;
        let (tag, bytes): (u8, &[u8]) = match self {
            Value::Text(text) | Value::OptText(Some(text)) => (b't', text.as_bytes()),
            Value::OptText(None) => (b'n', &[]),
            Value::Int(n) => {
                hash.update([b'i']);
                hash.update(n.to_be_bytes());
                return;
            }
            Value::Bytes(bytes) => (b'b', bytes),
        };
        hash.update([tag]);
        hash.update((bytes.len() as u64).to_be_bytes());
        hash.update(bytes);
    }
}

/// The page method: key-ordered pages through the engine-neutral pools.
pub(super) async fn copy_pages(
    table: &CopyTable,
    source: FencedShard<'_>,
    target: FencedShard<'_>,
    rows: &Rows<'_>,
) -> Result<Copied, Error> {
    let mut copied = Copied { method: CopyMethod::Pages, read: 0, written: 0, bytes: 0 };
    let mut pages = Pages::new(table, &rows.condition);
    while let Some(values) = pages.next(source).await? {
        let (written, bytes) = merge_page(table, target, &values).await?;
        copied.read += values.len() as u64;
        copied.written += written;
        copied.bytes += bytes;
        if let Some(tally) = rows.tally {
            tally.add(values.len() as u64, bytes);
        }
        if let Some(pace) = rows.pace {
            pace.take(bytes).await;
        }
    }
    Ok(copied)
}

/// The rows of a table that a condition takes, read in key order, one page at a time.
pub(super) struct Pages<'t> {
    table: &'t CopyTable,
    first_page: String,
    next_page: String,
    key_positions: Vec<usize>,
    last_key: Option<Vec<Value>>,
    done: bool,
}

impl<'t> Pages<'t> {
    pub(super) fn new(table: &'t CopyTable, condition: &str) -> Self {
        let columns = column_list(table);
        let key = table.key.join(", ");
        let after = (1..=table.key.len()).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ");
        let (name, rows) = (table.name, table.page_rows);
        Self {
            table,
            first_page: format!("SELECT {columns} FROM {name} WHERE {condition} ORDER BY {key} LIMIT {rows}"),
            next_page: format!(
                "SELECT {columns} FROM {name} WHERE {condition} AND ({key}) > ({after}) ORDER BY {key} LIMIT {rows}"
            ),
            key_positions: key_positions(table),
            last_key: None,
            done: false,
        }
    }

    /// The next page, `None` after the last.
    pub(super) async fn next(&mut self, source: FencedShard<'_>) -> Result<Option<Vec<Vec<Value>>>, Error> {
        if self.done {
            return Ok(None);
        }
        let sql = if self.last_key.is_some() { &self.next_page } else { &self.first_page };
        let mut query = sqlx::query(sql);
        for value in self.last_key.iter().flatten() {
            query = bind(query, value);
        }
        let rows = query.fetch_all(source.pool()).await.map_err(|e| source.err(e))?;
        let values = rows
            .iter()
            .map(|row| read_row(self.table, row))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| source.err(e))?;
        self.done = values.len() < self.table.page_rows;
        if let Some(last) = values.last() {
            self.last_key = Some(self.key_positions.iter().map(|&i| last[i].clone()).collect());
        }
        Ok((!values.is_empty()).then_some(values))
    }
}

/// Where `table`'s key columns are among its columns.
pub(super) fn key_positions(table: &CopyTable) -> Vec<usize> {
    table
        .key
        .iter()
        .map(|k| table.columns.iter().position(|(name, _)| name == k).expect("a key column is a column"))
        .collect()
}

/// Merges one page of rows into `table` on `target`; how many it took, and their bytes.
pub(super) async fn merge_page(
    table: &CopyTable,
    target: FencedShard<'_>,
    values: &[Vec<Value>],
) -> Result<(u64, u64), Error> {
    let merge = merge_sql(table, &values_placeholders(table, values.len()), Replace::Older);
    let mut insert = sqlx::query(&merge);
    for value in values.iter().flatten() {
        insert = bind(insert, value);
    }
    let merged = insert.execute(target.pool()).await.map_err(|e| target.err(e))?;
    Ok((merged.rows_affected(), values.iter().flatten().map(Value::len).sum()))
}

/// `VALUES ($1, ...), ...`: `rows` rows of `table`'s columns as parameters.
pub(super) fn values_placeholders(table: &CopyTable, rows: usize) -> String {
    let width = table.columns.len();
    let tuple = |row: usize| (1..=width).map(|i| format!("${}", row * width + i)).collect::<Vec<_>>().join(", ");
    format!("VALUES {}", (0..rows).map(|row| format!("({})", tuple(row))).collect::<Vec<_>>().join(", "))
}

pub(super) fn read_row(table: &CopyTable, row: &AnyRow) -> Result<Vec<Value>, sqlx::Error> {
    table
        .columns
        .iter()
        .enumerate()
        .map(|(i, (_, kind))| {
            Ok(match kind {
                ColumnKind::Text => Value::Text(row.try_get(i)?),
                ColumnKind::OptText => Value::OptText(row.try_get(i)?),
                ColumnKind::Int => Value::Int(row.try_get(i)?),
                ColumnKind::Bytes => Value::Bytes(row.try_get(i)?),
            })
        })
        .collect()
}

pub(super) type AnyQuery<'q> = sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>;

pub(super) fn bind<'q>(query: AnyQuery<'q>, value: &'q Value) -> AnyQuery<'q> {
    match value {
        Value::Text(text) => query.bind(text.as_str()),
        Value::OptText(text) => query.bind(text.as_deref()),
        Value::Int(n) => query.bind(*n),
        Value::Bytes(bytes) => query.bind(bytes.as_slice()),
    }
}

/// Rows merged per statement when a page is split between targets ([`in_chunks`]).
const CHUNK_ROWS: usize = 64;

/// `rows` in chunks of [`CHUNK_ROWS`], the rest in chunks of descending powers of two: a
/// statement per chunk, of a handful of shapes whatever the number of rows. Each shape is
/// prepared once per connection, and the merges of a page split between targets (any number
/// of rows each) do not fill the shard pool's statement caches, shared with the requests, with
/// statements used once.
pub(super) fn in_chunks<T>(rows: &[T]) -> impl Iterator<Item = &[T]> {
    let mut rest = rows;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let size = if rest.len() >= CHUNK_ROWS { CHUNK_ROWS } else { 1 << rest.len().ilog2() };
        let (chunk, tail) = rest.split_at(size);
        rest = tail;
        Some(chunk)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::moves::copy::tables::{BLOB_CHUNKS, RECORDS};

    #[test]
    fn the_merge_keeps_the_newer_version() {
        let sql = merge_sql(&RECORDS, "VALUES ($1)", Replace::Older);
        assert!(
            merge_sql(&BLOB_CHUNKS, "VALUES ($1)", Replace::Older).ends_with("ON CONFLICT (upload_id, seq) DO NOTHING")
        );
        assert!(sql.contains("ON CONFLICT (tenant, collection, key) DO UPDATE SET vshard = excluded.vshard"), "{sql}");
        assert!(sql.ends_with("WHERE records.version < excluded.version"), "{sql}");
        assert!(!sql.contains("tenant = excluded"), "key columns are not updated: {sql}");
    }

    #[test]
    fn rows_split_between_targets_merge_in_a_handful_of_statement_shapes() {
        let sizes = |n: usize| in_chunks(&vec![0u8; n]).map(<[u8]>::len).collect::<Vec<_>>();
        assert_eq!(sizes(0), Vec::<usize>::new());
        assert_eq!(sizes(1), [1]);
        assert_eq!(sizes(150), [64, 64, 16, 4, 2]);
        assert_eq!(sizes(63), [32, 16, 8, 4, 2, 1]);
        let mut shapes = std::collections::BTreeSet::new();
        for n in 0..=500 {
            let chunks = sizes(n);
            assert_eq!(chunks.iter().sum::<usize>(), n);
            shapes.extend(chunks);
        }
        assert_eq!(shapes.into_iter().collect::<Vec<_>>(), [1, 2, 4, 8, 16, 32, 64]);
    }
}
