//! Comparing the two sides of a copy: the [`Checksum`] of the rows a pass takes, computed by
//! PostgreSQL in one statement or from the rows read in pages; checksums that add up over several
//! shards (a collection changing its distribution); and a comparison split at a moment, so that a
//! cut-over compares only the rows changed since ([`split_checksums`]).

use sqlx::Row;
use sqlx::any::AnyRow;

use super::driver::KeyPages;
use super::pace::Pace;
use super::pages::{Pages, Value, column_list};
use super::selection::{Pass, Selection, Since, Window};
use super::tables::{CopyTable, RowFilter};
use crate::error::Error;
use crate::storage::records::sql_text;
use crate::storage::shard::FencedShard;

/// What a side of a copy holds of a selection: how many rows, and a digest over all their
/// columns. Equal on source and target means the copy is exact.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Checksum {
    /// Rows.
    pub rows: u64,
    /// The digest of the rows: SHA-256 in hex when read in pages (`rows:` and hex for rows in
    /// any order), `sum64:` and the sum of each row's 64-bit hash when computed by PostgreSQL.
    pub digest: String,
}

/// The [`Checksum`]s of the rows of `table` that `pass` takes on `source` and on `target`,
/// computed the same way on both: by each database in one statement when both are PostgreSQL
/// (the sum of the 64-bit hashes of the rows' text forms), else by reading the rows in pages
/// ([`checksum`]).
pub async fn checksums(
    table: &CopyTable,
    source: FencedShard<'_>,
    target: FencedShard<'_>,
    pass: &Pass<'_>,
) -> Result<(Checksum, Checksum), Error> {
    if source.db().postgres().is_some() && target.db().postgres().is_some() {
        futures::try_join!(checksum_in_postgres(table, source, pass), checksum_in_postgres(table, target, pass))
    } else {
        futures::try_join!(checksum(table, source, pass), checksum(table, target, pass))
    }
}

async fn checksum_in_postgres(table: &CopyTable, shard: FencedShard<'_>, pass: &Pass<'_>) -> Result<Checksum, Error> {
    let mut tx = one_core(shard, false).await?;
    let row = sqlx::query(&postgres_checksum_sql(table, &pass.condition(table)))
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| shard.err(e))?;
    tx.commit().await.map_err(|e| shard.err(e))?;
    postgres_checksum(&shard, &row)
}

/// A transaction on a PostgreSQL `shard` whose statements run on one core (no parallel
/// workers): a comparison reads a whole tenant, and with parallel workers it would take every
/// core of the shard from its traffic while it runs. `snapshot`: one snapshot for all its
/// statements (`REPEATABLE READ`).
async fn one_core<'s>(shard: FencedShard<'s>, snapshot: bool) -> Result<sqlx::Transaction<'s, sqlx::Any>, Error> {
    let mut tx = shard.pool().begin().await.map_err(|e| shard.err(e))?;
    if snapshot {
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            .execute(&mut *tx)
            .await
            .map_err(|e| shard.err(e))?;
    }
    sqlx::query("SET LOCAL max_parallel_workers_per_gather = 0").execute(&mut *tx).await.map_err(|e| shard.err(e))?;
    Ok(tx)
}

/// One statement computing the [`Checksum`] of the rows of `table` meeting `condition`: the
/// sum (exact, as `numeric`) of each row's 64-bit hash (`hashtextextended`, the portable hash
/// of hash partitioning) of its text form, which holds its key. A sum needs no sorting, and
/// reads and hashes the rows about five times faster than an MD5 over them in key order, so a
/// comparison of a large tenant takes its shards' CPU from their traffic for less time.
fn postgres_checksum_sql(table: &CopyTable, condition: &str) -> String {
    postgres_sum_sql(table, &column_list(table), condition)
}

/// [`postgres_checksum_sql`] over `columns` of the rows only.
fn postgres_sum_sql(table: &CopyTable, columns: &str, condition: &str) -> String {
    let name = table.name;
    format!(
        "SELECT COUNT(*), CAST(COALESCE(SUM(CAST(hashtextextended(CAST(t AS text), 0) AS numeric)), 0) AS text) \
         FROM (SELECT {columns} FROM {name} WHERE {condition}) t"
    )
}

fn postgres_checksum(shard: &FencedShard<'_>, row: &AnyRow) -> Result<Checksum, Error> {
    let rows: i64 = row.try_get(0).map_err(|e| shard.err(e))?;
    let digest: String = row.try_get(1).map_err(|e| shard.err(e))?;
    Ok(Checksum { rows: u64::try_from(rows).unwrap_or(0), digest: format!("sum64:{digest}") })
}

/// The [`Checksum`] of the rows of `table` that `pass` takes on `shard`, leaving their vshard
/// tag out (a row keeps everything else when its collection changes layout), computed so that
/// the checksums of several shards add up ([`add_checksums`]): by PostgreSQL if `in_postgres`
/// (`sum64:`, the sum of each row's 64-bit hash, as [`checksums`] computes it), else from the
/// rows read in pages (`rowsum:`, the sum of each row's SHA-256 cut to 64 bits).
pub async fn additive_checksum(
    table: &CopyTable,
    shard: FencedShard<'_>,
    pass: &Pass<'_>,
    in_postgres: bool,
) -> Result<Checksum, Error> {
    additive_where(table, shard, &pass.condition(table), in_postgres).await
}

/// [`additive_checksum`] of the rows meeting `condition`.
async fn additive_where(
    table: &CopyTable,
    shard: FencedShard<'_>,
    condition: &str,
    in_postgres: bool,
) -> Result<Checksum, Error> {
    if in_postgres {
        let mut tx = one_core(shard, false).await?;
        let sum = additive_in_postgres(&mut tx, table, shard, condition).await?;
        tx.commit().await.map_err(|e| shard.err(e))?;
        return Ok(sum);
    }
    let kept = additive_columns(table);
    let mut pages = Pages::new(table, condition);
    let (mut rows, mut sum) = (0u64, 0i128);
    while let Some(values) = pages.next(shard).await? {
        sum += values.iter().map(|row| row_hash(row, &kept)).sum::<i128>();
        rows += values.len() as u64;
    }
    Ok(Checksum { rows, digest: format!("rowsum:{sum}") })
}

/// A row's part of a `rowsum:` checksum: the first 64 bits of the SHA-256 of its `kept` values.
pub(super) fn row_hash(row: &[Value], kept: &[usize]) -> i128 {
    use sha2::Digest;
    let mut hash = sha2::Sha256::new();
    kept.iter().for_each(|&i| row[i].digest(&mut hash));
    let digest: [u8; 32] = hash.finalize().into();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    i128::from(i64::from_be_bytes(first))
}

/// The columns an [`additive_checksum`] covers: all but the vshard tag.
pub(super) fn additive_columns(table: &CopyTable) -> Vec<usize> {
    (0..table.columns.len()).filter(|&i| table.columns[i].0 != "vshard").collect()
}

/// [`additive_checksum`] by PostgreSQL, in transaction `tx`.
async fn additive_in_postgres(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    table: &CopyTable,
    shard: FencedShard<'_>,
    condition: &str,
) -> Result<Checksum, Error> {
    let columns = additive_columns(table).iter().map(|&i| table.columns[i].0).collect::<Vec<_>>().join(", ");
    let row = sqlx::query(&postgres_sum_sql(table, &columns, condition))
        .fetch_one(&mut **tx)
        .await
        .map_err(|e| shard.err(e))?;
    postgres_checksum(&shard, &row)
}

/// On a source of a collection changing its distribution, from one snapshot: the keys of the
/// rows `selection` takes that changed since `since` (for [`Part::Until`], not those changed
/// since its later moment too), and the [`additive_checksum`] of one part of the rows:
/// [`Part::Settled`] (not changed since), [`Part::Changed`], or [`Part::Until`]. `None` when more
/// than [`MAX_CHANGED_KEYS`] keys changed. With [`sum_by_keys`] on the targets, it splits a
/// comparison of two layouts at a moment, as [`split_checksums`] does for one pair of shards.
pub async fn changed_keys_and_sum(
    table: &CopyTable,
    source: FencedShard<'_>,
    selection: Selection<'_>,
    (since, part): (&Since, Part<'_>),
    in_postgres: bool,
) -> Result<Option<(Vec<String>, Checksum)>, Error> {
    let RowFilter::Changed(column) = table.rows else {
        return Err(Error::Corrupt(format!("table {} has no change column", table.name)));
    };
    // Each key changed since, and whether it changed since the later moment too (those are left
    // out of an `Until` part on both sides).
    let later = match part {
        Part::Until(until) => format!("CAST(CASE WHEN {} THEN 1 ELSE 0 END AS BIGINT)", until.condition(column)),
        Part::Settled | Part::Changed => "CAST(0 AS BIGINT)".to_owned(),
    };
    let keys_sql = format!(
        "SELECT key, {later} FROM {} WHERE {} AND {} LIMIT {}",
        table.name,
        selection.inline_condition(),
        since.condition(column),
        MAX_CHANGED_KEYS + 1
    );
    let window = match part {
        Part::Settled => Window::SettledBefore(since),
        Part::Changed => Window::ChangedSince(since),
        Part::Until(until) => Window::Between(since, until),
    };
    let condition = Pass { selection, window, pace: None }.condition(table);
    let (keys, sum): (Vec<(String, i64)>, Checksum) = if in_postgres {
        // Both statements read one snapshot.
        let mut tx = one_core(source, true).await?;
        let keys = sqlx::query_as(&keys_sql).fetch_all(&mut *tx).await.map_err(|e| source.err(e))?;
        let sum = additive_in_postgres(&mut tx, table, source, &condition).await?;
        tx.commit().await.map_err(|e| source.err(e))?;
        (keys, sum)
    } else {
        // Keys first: a row that changes in between leaves the settled part on the source
        // only, which makes the checksums differ, never agree wrongly.
        let keys = sqlx::query_as(&keys_sql).fetch_all(source.pool()).await.map_err(|e| source.err(e))?;
        (keys, additive_where(table, source, &condition, false).await?)
    };
    if keys.len() > MAX_CHANGED_KEYS {
        return Ok(None);
    }
    Ok(Some((keys.into_iter().filter(|(_, later)| *later == 0).map(|(key, _)| key).collect(), sum)))
}

/// On a target of a collection changing its distribution: the [`additive_checksum`] of the rows
/// `selection` takes whose key is one of `keys` (`inside`), or is none of them.
pub async fn sum_by_keys(
    table: &CopyTable,
    target: FencedShard<'_>,
    selection: Selection<'_>,
    (keys, inside): (&[String], bool),
    in_postgres: bool,
) -> Result<Checksum, Error> {
    let mut condition = selection.inline_condition();
    match (keys.is_empty(), inside) {
        (true, true) => condition.push_str(" AND 1 = 0"),
        (true, false) => {}
        (false, inside) => {
            let list = keys.iter().map(|key| sql_text(key)).collect::<Vec<_>>().join(", ");
            condition.push_str(&format!(" AND key {}IN ({list})", if inside { "" } else { "NOT " }));
        }
    }
    additive_where(table, target, &condition, in_postgres).await
}

/// The [`Checksum`] of the rows of several parts (shards), each from [`additive_checksum`]
/// computed the same way. [`Error::Corrupt`] if they were not.
pub fn add_checksums(parts: &[Checksum]) -> Result<Checksum, Error> {
    let mut kind: Option<&str> = None;
    let (mut rows, mut sum) = (0u64, 0i128);
    for part in parts {
        let (prefix, value) = part
            .digest
            .split_once(':')
            .ok_or_else(|| Error::Corrupt(format!("checksum {:?} cannot be added", part.digest)))?;
        if kind.is_some_and(|kind| kind != prefix) {
            return Err(Error::Corrupt(format!("checksums {kind:?} and {prefix:?} cannot be added")));
        }
        kind = Some(prefix);
        let value: i128 =
            value.parse().map_err(|_| Error::Corrupt(format!("checksum {:?} cannot be added", part.digest)))?;
        rows += part.rows;
        sum += value;
    }
    Ok(Checksum { rows, digest: format!("{}:{sum}", kind.unwrap_or("sum64")) })
}

/// The most keys changed since a moment that [`split_checksums`] takes apart from the rest;
/// with more, it gives up (the cut-over then compares everything).
const MAX_CHANGED_KEYS: usize = 20_000;

/// The part of a selection's rows that [`split_checksums`] compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part<'a> {
    /// The rows not changed since the moment: compared while the source still changes (before
    /// a move's fence), so that the cut-over need only compare the rest.
    Settled,
    /// The rows changed since the moment: compared under the fence, after the last delta.
    Changed,
    /// The rows changed since the moment and not since a later one that a pass began at:
    /// compared after that pass, while the source still changes.
    Until(&'a Since),
}

/// The [`Checksum`]s of one part of the rows of `table` that `selection` takes, on source and
/// target, split at a moment `since` on the source.
///
/// Only the source knows which rows changed since (on PostgreSQL the moment is a transaction,
/// and the target's rows are the copy's own), so the source gives, from one snapshot, the keys
/// it changed since and its checksum of the part; the target's checksum takes the same keys
/// ([`Part::Changed`]) or every key but them ([`Part::Settled`]). While the source changes, the
/// target holds an older version of some keys changed since: those are left out of the settled
/// part on both sides. Equal checksums of the two parts, the settled one taken after `since`
/// and the changed one taken under the fence, mean that the target holds every row of the
/// source as it is. `None` when more than [`MAX_CHANGED_KEYS`] keys changed (or the table's
/// rows are always compared whole).
pub async fn split_checksums(
    table: &CopyTable,
    sides: (FencedShard<'_>, FencedShard<'_>),
    selection: Selection<'_>,
    since: &Since,
    part: Part<'_>,
) -> Result<Option<(Checksum, Checksum)>, Error> {
    split_within(table, sides, selection, (since, part), "").await
}

/// [`split_checksums`] a page at a time ([`KeyPages`]), resting after each as `pace` says
/// ([`Pace::rest`]), when both shards are PostgreSQL (whose checksums add up) and the table's
/// rows carry their change (else in one go). Each page is compared from a snapshot of its own,
/// so a row that changes between two pages is left out of the settled part on the source only:
/// the checksums then differ (and the cut-over compares everything), never agree wrongly.
pub async fn split_checksums_in_pages(
    table: &CopyTable,
    sides: (FencedShard<'_>, FencedShard<'_>),
    selection: Selection<'_>,
    (since, part): (&Since, Part<'_>),
    (pages, pace): (&KeyPages, Option<&Pace>),
) -> Result<Option<(Checksum, Checksum)>, Error> {
    if !compared_in_pages(table, sides) {
        return split_checksums(table, sides, selection, since, part).await;
    }
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for page in pages.conditions(table)? {
        let started = std::time::Instant::now();
        let Some((mine, yours)) = split_within(table, sides, selection, (since, part), &page).await? else {
            return Ok(None);
        };
        ours.push(mine);
        theirs.push(yours);
        if let Some(pace) = pace {
            pace.rest(started.elapsed()).await;
        }
    }
    Ok(Some((add_checksums(&ours)?, add_checksums(&theirs)?)))
}

/// Whether [`split_checksums_in_pages`] compares `table` between `sides` page by page: both
/// PostgreSQL (whose checksums add up) and rows that carry their change; else in one go, so
/// reading [`KeyPages`] for it would be wasted.
pub fn compared_in_pages(table: &CopyTable, (source, target): (FencedShard<'_>, FencedShard<'_>)) -> bool {
    source.db().postgres().is_some() && target.db().postgres().is_some() && matches!(table.rows, RowFilter::Changed(_))
}

/// [`split_checksums`] of the rows within `page` of the key (a condition; "" for all, the only
/// page of a table whose rows do not carry their change).
async fn split_within(
    table: &CopyTable,
    (source, target): (FencedShard<'_>, FencedShard<'_>),
    selection: Selection<'_>,
    (since, part): (&Since, Part<'_>),
    page: &str,
) -> Result<Option<(Checksum, Checksum)>, Error> {
    let within = |condition: String| if page.is_empty() { condition } else { format!("{condition} AND {page}") };
    let selected = within(selection.inline_condition());
    // Each key changed since, and whether it changed since the later moment too (those are
    // left out of an `Until` part on both sides).
    let later = |column: &str| match part {
        Part::Until(until) => format!("CAST(CASE WHEN {} THEN 1 ELSE 0 END AS BIGINT)", until.condition(column)),
        Part::Settled | Part::Changed => "CAST(0 AS BIGINT)".to_owned(),
    };
    let (columns, changed) = match table.rows {
        RowFilter::Changed(column) => {
            let key = table.key.join(", ");
            let query = format!(
                "SELECT {key}, {} FROM {} WHERE {selected} AND {}",
                later(column),
                table.name,
                since.condition(column)
            );
            (key, query)
        }
        RowFilter::LiveUploads | RowFilter::LiveUploadChunks => (
            "upload_id".to_owned(),
            format!(
                "SELECT upload_id, {} FROM blob_uploads WHERE {selected} AND {}",
                later("changed_at"),
                since.condition("changed_at")
            ),
        ),
        RowFilter::All => return Ok(None),
    };
    let window = match part {
        Part::Settled => Window::SettledBefore(since),
        Part::Changed => Window::ChangedSince(since),
        Part::Until(until) => Window::Between(since, until),
    };
    let ours_condition = within(Pass { selection, window, pace: None }.condition(table));
    let width = columns.split(", ").count();
    let (keys, ours) = match source.db().postgres() {
        Some(_) => {
            // Both statements read one snapshot.
            let mut tx = one_core(source, true).await?;
            let keys = sqlx::query(&changed).fetch_all(&mut *tx).await.map_err(|e| source.err(e))?;
            let row = sqlx::query(&postgres_checksum_sql(table, &ours_condition))
                .fetch_one(&mut *tx)
                .await
                .map_err(|e| source.err(e))?;
            tx.commit().await.map_err(|e| source.err(e))?;
            (keys, postgres_checksum(&source, &row)?)
        }
        None => {
            // Keys first: a row that changes in between leaves the settled part on the source
            // only, which makes the checksums differ, never agree wrongly.
            let keys = sqlx::query(&changed).fetch_all(source.pool()).await.map_err(|e| source.err(e))?;
            (keys, checksum_where(table, source, &ours_condition).await?)
        }
    };
    if keys.len() > MAX_CHANGED_KEYS {
        return Ok(None);
    }
    let mut theirs_condition = within(Pass { selection, window: Window::All, pace: None }.condition(table));
    let mut tuples = Vec::with_capacity(keys.len());
    for row in &keys {
        let changed_later: i64 = row.try_get(width).map_err(|e| source.err(e))?;
        if changed_later == 1 {
            continue;
        }
        let values = (0..width)
            .map(|i| row.try_get::<String, _>(i).map(|v| sql_text(&v)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| source.err(e))?;
        tuples.push(format!("({})", values.join(", ")));
    }
    match (part, tuples.is_empty()) {
        (Part::Settled, true) => {}
        (Part::Changed | Part::Until(_), true) => theirs_condition.push_str(" AND 1 = 0"),
        (Part::Settled, false) => {
            theirs_condition.push_str(&format!(" AND ({columns}) NOT IN (VALUES {})", tuples.join(", ")))
        }
        (Part::Changed | Part::Until(_), false) => {
            theirs_condition.push_str(&format!(" AND ({columns}) IN (VALUES {})", tuples.join(", ")))
        }
    }
    let theirs = match (source.db().postgres(), target.db().postgres()) {
        (Some(_), Some(_)) => {
            let mut tx = one_core(target, false).await?;
            let row = sqlx::query(&postgres_checksum_sql(table, &theirs_condition))
                .fetch_one(&mut *tx)
                .await
                .map_err(|e| target.err(e))?;
            tx.commit().await.map_err(|e| target.err(e))?;
            postgres_checksum(&target, &row)?
        }
        _ => checksum_where(table, target, &theirs_condition).await?,
    };
    // Computed the same way on both sides: by PostgreSQL only when both are PostgreSQL.
    let ours = match (source.db().postgres(), target.db().postgres()) {
        (Some(_), None) => checksum_where(table, source, &ours_condition).await?,
        _ => ours,
    };
    Ok(Some((ours, theirs)))
}

/// The [`Checksum`] of rows in any order: SHA-256 over their own SHA-256s, sorted.
pub(super) fn digest_rows(rows: &[Vec<Value>]) -> Checksum {
    use sha2::Digest;
    let mut each: Vec<[u8; 32]> = rows
        .iter()
        .map(|row| {
            let mut hash = sha2::Sha256::new();
            row.iter().for_each(|value| value.digest(&mut hash));
            hash.finalize().into()
        })
        .collect();
    each.sort_unstable();
    let mut hash = sha2::Sha256::new();
    each.iter().for_each(|row| hash.update(row));
    Checksum { rows: rows.len() as u64, digest: format!("rows:{}", hex::encode(hash.finalize())) }
}

/// The [`Checksum`] of the rows of `table` that `pass` takes on `shard` (its pace is not kept).
pub async fn checksum(table: &CopyTable, shard: FencedShard<'_>, pass: &Pass<'_>) -> Result<Checksum, Error> {
    checksum_where(table, shard, &pass.condition(table)).await
}

/// The [`Checksum`] of the rows of `table` meeting `condition` on `shard`, read in pages.
async fn checksum_where(table: &CopyTable, shard: FencedShard<'_>, condition: &str) -> Result<Checksum, Error> {
    use sha2::Digest;
    let mut pages = Pages::new(table, condition);
    let mut hash = sha2::Sha256::new();
    let mut rows = 0u64;
    while let Some(values) = pages.next(shard).await? {
        for row in &values {
            for value in row {
                value.digest(&mut hash);
            }
        }
        rows += values.len() as u64;
    }
    Ok(Checksum { rows, digest: hex::encode(hash.finalize()) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums_of_parts_add_up_only_when_computed_alike() {
        let part = |rows, digest: &str| Checksum { rows, digest: digest.to_owned() };
        let sum = add_checksums(&[part(2, "sum64:-5"), part(3, "sum64:9223372036854775807")]).unwrap();
        assert_eq!(sum, part(5, "sum64:9223372036854775802"));
        let big = add_checksums(&[part(1, "rowsum:9223372036854775807"), part(1, "rowsum:9223372036854775807")]);
        assert_eq!(big.unwrap(), part(2, "rowsum:18446744073709551614"), "no overflow");
        assert!(add_checksums(&[part(1, "sum64:1"), part(1, "rowsum:1")]).is_err());
        assert!(add_checksums(&[part(1, "rows:ab")]).is_err(), "an ordered digest does not add");
    }
}
