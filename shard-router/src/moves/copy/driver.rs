//! The copies the jobs run: a pass of a table's rows with the best method both shards allow
//! ([`copy_rows`]), a move's first copy in resumable batches ([`copy_batch`]), and the purge of a
//! selection's rows.

use sqlx::Row;

use super::binary::{Landing, copy_binary};
use super::method::{Copied, CopyMethod};
use super::pages::{copy_pages, key_positions};
use super::selection::{Pass, Rows, Selection, Window};
use super::tables::{ColumnKind, CopyTable, RECORDS};
use super::tally::Tally;
use crate::error::Error;
use crate::storage::records::{RecordStore, sql_text};
use crate::storage::shard::FencedShard;

/// Copies the rows of `table` that `selection` takes from `source` to `target` (see the module
/// documentation), with `method` if both databases allow it, else in pages.
pub async fn copy_rows(
    table: &CopyTable,
    source: FencedShard<'_>,
    target: FencedShard<'_>,
    pass: &Pass<'_>,
    method: CopyMethod,
) -> Result<Copied, Error> {
    copy_where(
        table,
        (source, target),
        &Rows { condition: pass.condition(table), pace: pass.pace, tally: None },
        method,
    )
    .await
}

/// [`copy_rows`] of the rows `rows` takes.
async fn copy_where(
    table: &CopyTable,
    (source, target): (FencedShard<'_>, FencedShard<'_>),
    rows: &Rows<'_>,
    method: CopyMethod,
) -> Result<Copied, Error> {
    match (method, source.db().postgres(), target.db().postgres()) {
        (CopyMethod::Binary, Some(from), Some(to)) => {
            let copied = copy_binary(table, (source, from), (target, to), rows, Landing::Staged).await?;
            Ok(copied.expect("a staged copy merges every conflict"))
        }
        _ => copy_pages(table, source, target, rows).await,
    }
}

/// [`copy_where`] into a target that holds none of the rows `rows` takes (a move's first copy,
/// after it removed them there: [`copy_batch`]). Between PostgreSQL shards the rows then go
/// straight into the table, without the staging table and the merge: about half the target's
/// work, and what a copy costs the shards' other traffic most. Should one be there after all (a
/// unique violation), that copy is undone and the rows are copied the usual way.
async fn copy_where_into_empty(
    table: &CopyTable,
    (source, target): (FencedShard<'_>, FencedShard<'_>),
    rows: &Rows<'_>,
    method: CopyMethod,
) -> Result<Copied, Error> {
    if let (CopyMethod::Binary, Some(from), Some(to)) = (method, source.db().postgres(), target.db().postgres())
        && let Some(copied) = copy_binary(table, (source, from), (target, to), rows, Landing::Table).await?
    {
        return Ok(copied);
    }
    copy_where(table, (source, target), rows, method).await
}

/// One value of a row's primary key, as a resumable copy remembers where it stands.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum KeyValue {
    /// An integer column.
    Int(i64),
    /// A text column.
    Text(String),
}

/// The primary key of a row of a [`CopyTable`], its columns in [`CopyTable::key`] order.
pub type RowKey = Vec<KeyValue>;

/// What one batch of [`copy_batch`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// What the copy did.
    pub copied: Copied,
    /// The key of the batch's last row, the next batch starting after it; `None` when the
    /// batch took every row left.
    pub last: Option<RowKey>,
}

/// One batch of a move's first, resumable copy: the rows of `table` that `pass` takes whose
/// keys come after `after` (from the first with `None`), in key order, as many as make about
/// `batch_bytes` ([`CopyTable::row_bytes`] each), copied as [`copy_where_into_empty`] does (the target holds none of them,
/// unless a batch committed just before the instance copying it stopped: then they merge).
/// Each batch commits on the target on its own; the caller stores [`Batch::last`] and a copy
/// taken over resumes after it, never from the start.
pub async fn copy_batch(
    table: &CopyTable,
    sides: (FencedShard<'_>, FencedShard<'_>),
    pass: &Pass<'_>,
    after: Option<&RowKey>,
    batch_bytes: u64,
    method: CopyMethod,
) -> Result<Batch, Error> {
    copy_batch_counted(table, sides, pass, (after, batch_bytes), method, None).await
}

/// [`copy_batch`] of the batch of about `batch_bytes` after `after`, counting the rows and bytes
/// it reads in `tally` as they pass (a page, a chunk of the binary stream), so that the job can
/// show how far the batch is before it ends.
pub async fn copy_batch_counted(
    table: &CopyTable,
    (source, target): (FencedShard<'_>, FencedShard<'_>),
    pass: &Pass<'_>,
    (after, batch_bytes): (Option<&RowKey>, u64),
    method: CopyMethod,
    tally: Option<&Tally>,
) -> Result<Batch, Error> {
    let mut condition = pass.condition(table);
    if let Some(after) = after {
        condition = format!("{condition} AND ({}) > ({})", table.key.join(", "), inline_key(table, after)?);
    }
    let rows = (batch_bytes / table.row_bytes.max(1)).max(1);
    let last = batch_end(table, source, &condition, rows).await?;
    if let Some(last) = &last {
        condition = format!("{condition} AND ({}) <= ({})", table.key.join(", "), inline_key(table, last)?);
    }
    let copied =
        copy_where_into_empty(table, (source, target), &Rows { condition, pace: pass.pace, tally }, method).await?;
    Ok(Batch { copied, last })
}

/// The key of the `rows`-th row meeting `condition` in key order; `None` when fewer rows meet
/// it (the batch takes them all).
async fn batch_end(
    table: &CopyTable,
    source: FencedShard<'_>,
    condition: &str,
    rows: u64,
) -> Result<Option<RowKey>, Error> {
    let key = table.key.join(", ");
    let sql = format!("SELECT {key} FROM {} WHERE {condition} ORDER BY {key} LIMIT 1 OFFSET {}", table.name, rows - 1);
    let row = sqlx::query(&sql).fetch_optional(source.pool()).await.map_err(|e| source.err(e))?;
    let Some(row) = row else { return Ok(None) };
    read_key(table, &row).map(Some).map_err(|e| source.err(e))
}

/// The key of `table` a row read from its key columns (in key order) holds.
fn read_key(table: &CopyTable, row: &sqlx::any::AnyRow) -> Result<RowKey, sqlx::Error> {
    let kinds = key_positions(table).into_iter().map(|i| table.columns[i].1);
    kinds
        .enumerate()
        .map(|(i, kind)| match kind {
            ColumnKind::Int => row.try_get(i).map(KeyValue::Int),
            _ => row.try_get(i).map(KeyValue::Text),
        })
        .collect()
}

/// About how many rows a page of a scan holds ([`KeyPages`]).
pub const SCAN_PAGE_ROWS: u64 = 10_000;

/// Where a scan of the rows a selection takes of a table (the comparison of a move's settled
/// rows) is cut into pages, each one statement that the pace can rest after ([`super::Pace::rest`]): every
/// `rows`-th key on the source, in key order. Any sorted list of keys cuts the key space into
/// pages that together hold every row, so bounds taken once serve every later scan, however the
/// rows changed since; stale bounds only make pages bigger or smaller.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyPages {
    bounds: Vec<RowKey>,
}

impl KeyPages {
    /// The bounds of the pages of about `rows` rows of `table` that `selection` takes on
    /// `source`, read in one statement over the key columns.
    pub async fn of(
        table: &CopyTable,
        source: FencedShard<'_>,
        selection: Selection<'_>,
        rows: u64,
    ) -> Result<Self, Error> {
        let key = table.key.join(", ");
        let condition = Pass { selection, window: Window::All, pace: None }.condition(table);
        let sql = format!(
            "SELECT {key} FROM (SELECT {key}, ROW_NUMBER() OVER (ORDER BY {key}) AS page_row FROM {} WHERE {condition}) t \
             WHERE page_row % {} = 0 ORDER BY {key}",
            table.name,
            rows.max(1)
        );
        let found = sqlx::query(&sql).fetch_all(source.pool()).await.map_err(|e| source.err(e))?;
        let bounds =
            found.iter().map(|row| read_key(table, row)).collect::<Result<_, _>>().map_err(|e| source.err(e))?;
        Ok(Self { bounds })
    }

    /// Each page's condition on `table`'s key, to be added to a condition with `AND`: the first
    /// from the smallest key, the last up to the largest; "" for the one page of no bounds.
    pub fn conditions(&self, table: &CopyTable) -> Result<Vec<String>, Error> {
        let key = table.key.join(", ");
        let bounds = self.bounds.iter().map(|bound| inline_key(table, bound)).collect::<Result<Vec<_>, _>>()?;
        Ok((0..=bounds.len())
            .map(|i| {
                let after = i.checked_sub(1).map(|j| format!("({key}) > ({})", bounds[j]));
                let until = bounds.get(i).map(|bound| format!("({key}) <= ({bound})"));
                after.into_iter().chain(until).collect::<Vec<_>>().join(" AND ")
            })
            .collect())
    }
}

/// `key` as SQL literals, in the order of `table`'s key (a `COPY` takes no parameters).
fn inline_key(table: &CopyTable, key: &RowKey) -> Result<String, Error> {
    if key.len() != table.key.len() {
        return Err(Error::Corrupt(format!("a copy's place in {} has {} key values", table.name, key.len())));
    }
    Ok(key
        .iter()
        .map(|value| match value {
            KeyValue::Int(n) => n.to_string(),
            KeyValue::Text(text) => sql_text(text),
        })
        .collect::<Vec<_>>()
        .join(", "))
}

/// Deletes the rows of `table` that `selection` takes from `shard`, in one statement (for tables
/// whose selections stay small, such as the index entries of one vshard); returns how many.
pub async fn purge_rows(table: &CopyTable, shard: &FencedShard<'_>, selection: Selection<'_>) -> Result<u64, Error> {
    use crate::storage::shard::OnShard;
    let sql = format!("DELETE FROM {} WHERE {}", table.name, selection.inline_condition());
    let done = sqlx::query(&sql).execute(shard.pool()).on_shard(shard).await?;
    Ok(done.rows_affected())
}

impl RecordStore<'_> {
    /// Copies the records `selection` takes, tombstones included, to `target`, where each
    /// replaces an older version of its key and leaves a newer one alone (see [`crate::moves::copy`]).
    pub async fn copy_to(
        &self,
        target: &RecordStore<'_>,
        selection: Selection<'_>,
        method: CopyMethod,
    ) -> Result<Copied, Error> {
        let pass = Pass { selection, window: Window::All, pace: None };
        copy_rows(&RECORDS, self.fenced_shard(), target.fenced_shard(), &pass, method).await
    }
}
