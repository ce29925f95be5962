//! The last delta under a fence: the rows changed since a moment are read once, merged into the
//! target(s) and compared with what the target returned as stored.

use super::checksums::{Checksum, additive_columns, digest_rows, row_hash};
use super::method::{Copied, CopyMethod};
use super::pages::{Replace, Value, bind, column_list, in_chunks, merge_sql, read_row, values_placeholders};
use super::placed::placed_rows;
use super::selection::{Pass, Selection, Since, Window};
use super::tables::{CopyTable, RowFilter};
use crate::error::Error;
use crate::storage::shard::FencedShard;

/// The most rows [`copy_and_compare`] takes at once; with more, it gives up (the rows are
/// then copied and compared the usual way).
const MAX_FENCED_ROWS: usize = 20_000;

/// Under a fence (the source no longer changes them), copies the rows of `table` that
/// `selection` takes and changed since `since` to the target, and compares them there: reads
/// them once, merges them into the target (a row replaces one of the same or an older version:
/// the source is the truth under its fence), and gives the [`Checksum`] of the rows read and of
/// the rows the target returned as stored (SHA-256 over each row's values, order aside). A row
/// the target holds at a newer version is left alone and is missing from the second. A
/// cut-over's last delta and its comparison thus read the source once. Only for tables whose
/// rows carry their change (records, blobs); `None` for others, or for more than
/// [`MAX_FENCED_ROWS`] rows.
pub async fn copy_and_compare(
    table: &CopyTable,
    (source, target): (FencedShard<'_>, FencedShard<'_>),
    selection: Selection<'_>,
    since: &Since,
) -> Result<Option<(Copied, Checksum, Checksum)>, Error> {
    use crate::storage::shard::OnShard;
    let (RowFilter::Changed(_), Some(_)) = (table.rows, table.version) else {
        return Ok(None);
    };
    let condition = Pass { selection, window: Window::ChangedSince(since), pace: None }.condition(table);
    let (columns, name) = (column_list(table), table.name);
    let query = format!("SELECT {columns} FROM {name} WHERE {condition} LIMIT {}", MAX_FENCED_ROWS + 1);
    let found = sqlx::query(&query).fetch_all(source.pool()).on_shard(&source).await?;
    if found.len() > MAX_FENCED_ROWS {
        return Ok(None);
    }
    let ours =
        found.iter().map(|row| read_row(table, row)).collect::<Result<Vec<_>, _>>().map_err(|e| source.err(e))?;
    let mut copied = Copied { method: CopyMethod::Pages, read: ours.len() as u64, written: 0, bytes: 0 };
    let mut theirs = Vec::with_capacity(ours.len());
    for page in in_chunks(&ours) {
        let merge = merge_sql(table, &values_placeholders(table, page.len()), Replace::SameOrOlder);
        let merge = format!("{merge} RETURNING {columns}");
        let mut insert = sqlx::query(&merge);
        for value in page.iter().flatten() {
            insert = bind(insert, value);
        }
        let stored = insert.fetch_all(target.pool()).on_shard(&target).await?;
        copied.written += stored.len() as u64;
        copied.bytes += page.iter().flatten().map(Value::len).sum::<u64>();
        for row in &stored {
            theirs.push(read_row(table, row).map_err(|e| target.err(e))?);
        }
    }
    Ok(Some((copied, digest_rows(&ours), digest_rows(&theirs))))
}

/// Under a fence on `source` (its rows no longer change), copies the rows of a collection that
/// `selection` takes and that changed since `since` from `from` into `into` on `targets`, each
/// to the target `place` picks with the tag it gives (as [`copy_placed`](super::copy_placed)), and compares them
/// there: reads them once, merges them (a row replaces one of the same or an older version: the
/// source is the truth under its fence) and gives the `rowsum:` checksums (the vshard tag left
/// out) of the rows read and of the rows the targets returned as stored. A redistribution's last
/// delta and its comparison thus read the source once. `None` for more than
/// [`MAX_FENCED_ROWS`] rows (they are then copied and compared the usual way).
pub async fn copy_placed_and_compare(
    (from, into): (&CopyTable, &CopyTable),
    source: FencedShard<'_>,
    targets: &[FencedShard<'_>],
    (selection, since): (Selection<'_>, &Since),
    place: impl Fn(&str) -> (usize, i64),
) -> Result<Option<(Copied, Checksum, Checksum)>, Error> {
    use crate::storage::shard::OnShard;
    let condition = Pass { selection, window: Window::ChangedSince(since), pace: None }.condition(from);
    let columns = column_list(from);
    let query = format!("SELECT {columns} FROM {} WHERE {condition} LIMIT {}", from.name, MAX_FENCED_ROWS + 1);
    let found = sqlx::query(&query).fetch_all(source.pool()).on_shard(&source).await?;
    if found.len() > MAX_FENCED_ROWS {
        return Ok(None);
    }
    let kept = additive_columns(from);
    let read = found.iter().map(|row| read_row(from, row)).collect::<Result<Vec<_>, _>>().map_err(|e| source.err(e))?;
    let ours: i128 = read.iter().map(|row| row_hash(row, &kept)).sum();
    let bytes = read.iter().flatten().map(Value::len).sum();
    let mut copied = Copied { method: CopyMethod::Pages, read: read.len() as u64, written: 0, bytes };
    let placed = placed_rows(from, read, targets.len(), &place)?;
    let mut theirs = 0i128;
    let mut stored_rows = 0u64;
    for (rows, target) in placed.iter().zip(targets) {
        for page in in_chunks(rows) {
            let merge = merge_sql(into, &values_placeholders(into, page.len()), Replace::SameOrOlder);
            let merge = format!("{merge} RETURNING {columns}");
            let insert = page.iter().flatten().fold(sqlx::query(&merge), |q, value| bind(q, value));
            for row in insert.fetch_all(target.pool()).on_shard(target).await? {
                theirs += row_hash(&read_row(into, &row).map_err(|e| target.err(e))?, &kept);
                stored_rows += 1;
            }
        }
    }
    copied.written = stored_rows;
    let checksum = |rows, sum| Checksum { rows, digest: format!("rowsum:{sum}") };
    Ok(Some((copied, checksum(copied.read, ours), checksum(stored_rows, theirs))))
}
