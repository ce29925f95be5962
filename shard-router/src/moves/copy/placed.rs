//! Copying a collection's rows into another layout: each row to the shard its key is placed on
//! now, with the vshard tag it has there (a collection changing its distribution).

use super::method::{Copied, CopyMethod};
use super::pages::{Pages, Value, in_chunks, merge_page};
use super::selection::Pass;
use super::tables::CopyTable;
use crate::error::Error;
use crate::storage::shard::FencedShard;

/// Copies the rows of a collection that `pass` takes from `from` on `source` into `into` (a
/// table with the same columns) on `targets`, each row to the target `place` picks for its key
/// (its index in `targets`) with the vshard tag `place` gives it: a collection changing its
/// distribution, whose rows change table and shard. Pages of rows in key order, each row
/// merged as [`copy_rows`](super::copy_rows) merges (a newer version on the target stays), at `pass`'s pace.
pub async fn copy_placed(
    (from, into): (&CopyTable, &CopyTable),
    source: FencedShard<'_>,
    targets: &[FencedShard<'_>],
    pass: &Pass<'_>,
    place: impl Fn(&str) -> (usize, i64),
) -> Result<Copied, Error> {
    let mut copied = Copied { method: CopyMethod::Pages, read: 0, written: 0, bytes: 0 };
    let mut pages = Pages::new(from, &pass.condition(from));
    while let Some(values) = pages.next(source).await? {
        copied.read += values.len() as u64;
        let placed = placed_rows(from, values, targets.len(), &place)?;
        let merges = placed.iter().zip(targets).filter(|(rows, _)| !rows.is_empty()).map(|(rows, target)| async move {
            let (mut written, mut bytes) = (0, 0);
            for chunk in in_chunks(rows) {
                let (took, chunk_bytes) = merge_page(into, *target, chunk).await?;
                written += took;
                bytes += chunk_bytes;
            }
            Ok::<_, Error>((written, bytes))
        });
        let mut bytes = 0;
        for (written, page_bytes) in futures::future::try_join_all(merges).await? {
            copied.written += written;
            bytes += page_bytes;
        }
        copied.bytes += bytes;
        if let Some(pace) = pass.pace {
            pace.take(bytes).await;
        }
    }
    Ok(copied)
}

/// `rows` of `table` by the target `place` picks for each key (its index among `targets`
/// targets), each with the vshard tag `place` gives it.
pub(super) fn placed_rows(
    table: &CopyTable,
    rows: Vec<Vec<Value>>,
    targets: usize,
    place: &impl Fn(&str) -> (usize, i64),
) -> Result<Vec<Vec<Vec<Value>>>, Error> {
    let position = |name: &str| table.columns.iter().position(|(column, _)| *column == name);
    let (Some(key_at), Some(tag_at)) = (position("key"), position("vshard")) else {
        return Err(Error::Corrupt(format!("table {} has no key or vshard column", table.name)));
    };
    let mut placed: Vec<Vec<Vec<Value>>> = vec![Vec::new(); targets];
    for mut row in rows {
        let Value::Text(key) = &row[key_at] else {
            return Err(Error::Corrupt(format!("a key in table {} is not text", table.name)));
        };
        let (target, tag) = place(key);
        row[tag_at] = Value::Int(tag);
        placed
            .get_mut(target)
            .ok_or_else(|| Error::Corrupt(format!("row placed on target {target} of {targets}")))?
            .push(row);
    }
    Ok(placed)
}
