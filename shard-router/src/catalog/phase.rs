//! The phases of a job that moves data (the job runner in `moves::job` runs them), apart from
//! the runner, so that the catalog can read a job's phase without depending on it.

use serde::{Deserialize, Serialize};

/// Where a move stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// The first, full copy.
    Copy,
    /// Copying what changed meanwhile.
    CatchUp,
    /// Fenced on the source: last delta, checksums, pin switch.
    CutOver,
    /// Pinned to the target; the source's old copy is removed after the grace period.
    Cleanup,
    /// Finished.
    Done,
    /// Rolled back (failed or cancelled): the tenant stays on its source shard.
    RolledBack,
}
