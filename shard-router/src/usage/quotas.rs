//! What a tenant may keep: its quotas, each a limit on one part of its usage or none (unlimited).
//!
//! A tier has quotas (configuration, `quotas.tiers`); a tenant may override any of them (admin
//! API, kept in the catalog). Neither needs a restart: a tenant's quotas are its tier's with its
//! own overrides applied, read when a write asks.

use serde::{Deserialize, Serialize};

use crate::storage::usage::Usage;

/// One quota: which part of a tenant's usage it limits. Its name is the one the API, the
/// configuration and problem documents use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QuotaKind {
    /// Live records.
    Records,
    /// Their stored values' bytes.
    RecordBytes,
    /// Live blobs.
    Blobs,
    /// Their bytes.
    BlobBytes,
    /// Live index entries.
    IndexEntries,
}

impl QuotaKind {
    /// Every kind a write can grow, in the order they are checked and shown.
    pub const ALL: [QuotaKind; 5] =
        [QuotaKind::Records, QuotaKind::RecordBytes, QuotaKind::Blobs, QuotaKind::BlobBytes, QuotaKind::IndexEntries];

    /// The quota's name (`records`, `record_bytes`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            QuotaKind::Records => "records",
            QuotaKind::RecordBytes => "record_bytes",
            QuotaKind::Blobs => "blobs",
            QuotaKind::BlobBytes => "blob_bytes",
            QuotaKind::IndexEntries => "index_entries",
        }
    }

    /// The part of `usage` this quota limits.
    pub fn of(self, usage: &Usage) -> u64 {
        match self {
            QuotaKind::Records => usage.records,
            QuotaKind::RecordBytes => usage.record_bytes,
            QuotaKind::Blobs => usage.blobs,
            QuotaKind::BlobBytes => usage.blob_bytes,
            QuotaKind::IndexEntries => usage.index_entries,
        }
    }
}

/// A tenant's (or a tier's) quotas: `None` is unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Quotas {
    /// Most live records.
    pub records: Option<u64>,
    /// Most bytes of stored record values.
    pub record_bytes: Option<u64>,
    /// Most live blobs.
    pub blobs: Option<u64>,
    /// Most bytes of blobs.
    pub blob_bytes: Option<u64>,
    /// Most live index entries.
    pub index_entries: Option<u64>,
}

impl Quotas {
    /// The limit of one kind (`None`: unlimited).
    pub fn limit(&self, kind: QuotaKind) -> Option<u64> {
        match kind {
            QuotaKind::Records => self.records,
            QuotaKind::RecordBytes => self.record_bytes,
            QuotaKind::Blobs => self.blobs,
            QuotaKind::BlobBytes => self.blob_bytes,
            QuotaKind::IndexEntries => self.index_entries,
        }
    }

    /// Whether nothing is limited (then a write needs no quota check at all).
    pub fn unlimited(&self) -> bool {
        QuotaKind::ALL.iter().all(|kind| self.limit(*kind).is_none())
    }
}
