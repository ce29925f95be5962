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
//!   ([`crate::storage::db::Database::postgres`]); `bench/src/bin/drivers.rs` measures what it gains.
//! - [`CopyMethod::Pages`], for any pair of engines: pages of rows in key order through the
//!   engine-neutral pool, each merged with one multi-row `INSERT ... ON CONFLICT`.
//!
//! The files, in the order a copy meets them: `tables.rs` (what is copied), `selection.rs`
//! (which rows, as a `WHERE` condition), `pace.rs` (how fast: a feedback loop on the shards'
//! request latency, below a ceiling), `driver.rs` (the copies the jobs run), `method.rs`,
//! `binary.rs` and `pages.rs` (the two ways rows travel), `placed.rs` (into another layout),
//! `checksums.rs` (comparing the sides), `fenced.rs` (the last delta, copied and compared in
//! one read), `size.rs` (how much a copy takes, for a job's progress) and `tally.rs` (how much
//! it has read so far, as its rows pass).
//!
//! It is the row-level SQL of the moves room: it reaches the shards through
//! [`crate::storage::shard::FencedShard`] and knows nothing of jobs, phases or the router.

mod binary;
mod checksums;
mod driver;
mod fenced;
mod method;
mod pace;
mod pages;
mod placed;
mod selection;
mod size;
mod tables;
mod tally;

pub use checksums::{
    Checksum, Part, add_checksums, additive_checksum, changed_keys_and_sum, checksum, checksums, compared_in_pages,
    split_checksums, split_checksums_in_pages, sum_by_keys,
};
pub use driver::{
    Batch, KeyPages, KeyValue, RowKey, SCAN_PAGE_ROWS, copy_batch, copy_batch_counted, copy_rows, purge_rows,
};
pub use fenced::{copy_and_compare, copy_placed_and_compare};
pub use method::{Copied, CopyMethod};
pub use pace::{Pace, PaceReport, PaceSettings};
pub use placed::copy_placed;
pub use selection::{Owned, Pass, Selection, Since, Window};
pub use size::{CopySize, copy_size};
pub use tables::{
    BLOB_CHUNKS, BLOB_UPLOADS, BLOBS, ColumnKind, CopyTable, INDEX_ENTRIES, RECORDS, RowFilter, SPREAD_RECORDS,
    TENANT_TABLES,
};
pub use tally::Tally;
