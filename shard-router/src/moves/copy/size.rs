//! How much a copy takes: the rows of a table a pass selects and their bytes, counted on the
//! source in one statement, so a job can show how far its copy is.

use super::selection::Pass;
use super::tables::{ColumnKind, CopyTable};
use crate::error::Error;
use crate::storage::shard::{FencedShard, OnShard};

/// The rows a pass takes of a table and their bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CopySize {
    /// Rows.
    pub rows: u64,
    /// Their bytes as a copy in pages counts them ([`super::Copied::bytes`]): text and binary
    /// values by their length in bytes (record values, blob chunks), integers as 8. A binary
    /// `COPY` between PostgreSQL shards counts its stream, a little more.
    pub bytes: u64,
}

impl CopySize {
    /// Adds `other`.
    pub fn add(&mut self, other: CopySize) {
        self.rows += other.rows;
        self.bytes += other.bytes;
    }
}

/// The [`CopySize`] of the rows of `table` that `pass` takes on `shard`: one statement over the
/// rows the copy reads (the lengths of long values come from their headers, not their bytes).
pub async fn copy_size(table: &CopyTable, shard: FencedShard<'_>, pass: &Pass<'_>) -> Result<CopySize, Error> {
    let row_bytes = table
        .columns
        .iter()
        .map(|(name, kind)| match kind {
            ColumnKind::Int => "8".to_owned(),
            ColumnKind::OptText => format!("COALESCE(octet_length({name}), 0)"),
            ColumnKind::Text | ColumnKind::Bytes => format!("octet_length({name})"),
        })
        .collect::<Vec<_>>()
        .join(" + ");
    let sql = format!(
        "SELECT COUNT(*), CAST(COALESCE(SUM({row_bytes}), 0) AS BIGINT) FROM {} WHERE {}",
        table.name,
        pass.condition(table)
    );
    let (rows, bytes): (i64, i64) = sqlx::query_as(&sql).fetch_one(shard.pool()).reading_on(&shard).await?;
    Ok(CopySize { rows: u64::try_from(rows).unwrap_or(0), bytes: u64::try_from(bytes).unwrap_or(0) })
}
