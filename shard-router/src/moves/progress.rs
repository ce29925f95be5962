//! A move's progress, as its job stores it (`progress`) and `GET /v1/admin/jobs/{id}` shows it:
//! the phase, the copy's counters and pace, the cut-over's record, and what a range move splits.
//! [`crate::moves::mover`] writes it.

use serde::{Deserialize, Serialize};

use crate::catalog::{JobRow, RangeRow};
use crate::ids::{CollectionName, ShardId};
use crate::moves::copy::{CopyMethod, PaceReport, RowKey, Since};
use crate::moves::job::{Checksums, CopyCounters, CutOverRecord, Phase};

/// A move's progress, stored as the job's `progress` (and shown by `GET /v1/admin/jobs/{id}`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MoveProgress {
    /// The phase.
    pub phase: Phase,
    /// The shard the tenant leaves.
    pub from: String,
    /// The shard it goes to.
    pub to: String,
    /// Rows and bytes copied, passes made.
    #[serde(flatten)]
    pub copied: CopyCounters,
    /// How the rows travel (`binary` between PostgreSQL shards, else `pages`).
    pub method: Option<CopyMethod>,
    /// When the last pass began (ms since the Unix epoch).
    pub pass_started_ms: Option<i64>,
    /// The moment on the source the last pass began at: the next pass takes the rows changed
    /// since ([`Since`]).
    #[serde(default)]
    pub pass_since: Option<Since>,
    /// The checksums of the settled rows (not changed since `settled_since`) on source and
    /// target, compared before the fence.
    pub settled: Option<Checksums>,
    /// Where the compared rows end: the cut-over compares the rows changed since. It moves to
    /// the moment of the pass just before the fence once that pass is compared; `null` when a
    /// comparison found a difference (the cut-over then compares everything).
    #[serde(default)]
    pub settled_since: Option<Since>,
    /// The checksums compared under the fence, the fence, the pin switch, and why the move
    /// rolled back, if it did.
    #[serde(flatten)]
    pub cut_over: CutOverRecord,
    /// The vshards a vshard move takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vshards: Option<Vec<u32>>,
    /// The unpinned tenants those vshards place, listed once the vshards are claimed (no tenant
    /// of them is created or deleted while the move runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenants: Option<Vec<String>>,
    /// The rebalance or drain job this move is a step of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// The key range a range move takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<RangeMove>,
    /// Where the first, full copy stands, stored after each batch: an instance taking the job
    /// over resumes it there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_copy: Option<FirstCopy>,
    /// The rows the first, full copy takes, counted on the source before the job is recorded
    /// (so the answer that starts it has them) and again as the copy begins: with
    /// `rows_copied`, which moves within a batch too, how far the copy phase is (the catch-up
    /// passes copy more).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows_to_copy: Option<u64>,
    /// The bytes of those rows (blob chunks, record values and the rest of the rows, as
    /// `bytes_copied` counts them), counted with them: with `bytes_copied`, how far the copy
    /// phase is and how long it will take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_to_copy: Option<u64>,
    /// The pace of the copy and its changes, stored after each batch and pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pace: Option<PaceReport>,
}

/// Where a move's first copy stands: it copies each table in key order, in batches that each
/// commit on the target ([`crate::moves::copy::copy_batch`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FirstCopy {
    /// The moment on the source the copy began at: the first catch-up pass takes the rows
    /// changed since, whichever batch had copied them.
    pub began: Since,
    /// The table being copied, by its place among the tables the move copies.
    pub table: usize,
    /// The key of the last row of that table copied so far; `null` before its first batch.
    pub after: Option<RowKey>,
}

/// What a range move takes: the keys of a range-distributed collection from `from` up to
/// `until`, and the collection's ranges once it has switched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RangeMove {
    /// The collection.
    pub collection: CollectionName,
    /// The smallest key that moves.
    pub from: String,
    /// The first key after them, if any.
    pub until: Option<String>,
    /// The collection's ranges when the move was asked for (checked before anything is
    /// copied: once the job holds its claim, nothing else changes them).
    pub ranges_before: Vec<RangeRow>,
    /// The collection's ranges after the switch.
    pub ranges_after: Vec<RangeRow>,
}

/// What a split of a range-distributed collection's range did.
#[derive(Debug, Clone)]
pub enum RangeSplit {
    /// The keys stay on their shard: the catalog alone changed (map epoch).
    Switched(u64),
    /// The keys move to another shard: the job doing it.
    Moving(JobRow),
}

impl MoveProgress {
    /// A move from `from` to `to` that has not begun.
    pub fn new(from: &ShardId, to: &ShardId) -> Self {
        Self {
            phase: Phase::Copy,
            from: from.to_string(),
            to: to.to_string(),
            copied: CopyCounters::default(),
            method: None,
            pass_started_ms: None,
            pass_since: None,
            settled: None,
            settled_since: None,
            cut_over: CutOverRecord::default(),
            vshards: None,
            tenants: None,
            parent: None,
            range: None,
            first_copy: None,
            rows_to_copy: None,
            bytes_to_copy: None,
            pace: None,
        }
    }
}
