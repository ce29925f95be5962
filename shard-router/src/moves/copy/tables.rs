//! The tables a copy moves, and how: their columns and how each travels, their key, the version
//! a copied row must beat, which of their rows a pass takes ([`RowFilter`]), and how big a page is.

/// How a column's values travel through [`CopyMethod::Pages`](super::CopyMethod::Pages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnKind {
    /// `TEXT`.
    Text,
    /// `TEXT` that may be `NULL`.
    OptText,
    /// `INTEGER` / `BIGINT`.
    Int,
    /// `BLOB` / `BYTEA`.
    Bytes,
}

/// A table whose rows can be copied: its columns, its primary key, the column holding a row's
/// version, and how big a page of [`CopyMethod::Pages`](super::CopyMethod::Pages) is.
#[derive(Debug, Clone, Copy)]
pub struct CopyTable {
    /// The table's name.
    pub name: &'static str,
    /// Every column, with how its values travel.
    pub columns: &'static [(&'static str, ColumnKind)],
    /// The primary key's columns, in the order rows are paged by.
    pub key: &'static [&'static str],
    /// The column whose larger value wins when both shards hold a key; `None` for rows that
    /// never change once written (a copy leaves a row the target has alone).
    pub version: Option<&'static str>,
    /// Which of the selected rows a copy takes.
    pub rows: RowFilter,
    /// Rows per page: small enough that a page stays a few megabytes and its parameters stay
    /// under both engines' limits (32,766 on SQLite).
    pub page_rows: usize,
    /// About how many bytes a row holds: a batch of a move's first copy
    /// ([`copy_batch`](super::copy_batch)) takes as many rows as make `moves.copy_batch_bytes`.
    pub row_bytes: u64,
}

/// The `records` table of a shard.
pub const RECORDS: CopyTable = CopyTable {
    name: "records",
    columns: &[
        ("tenant", ColumnKind::Text),
        ("collection", ColumnKind::Text),
        ("key", ColumnKind::Text),
        ("vshard", ColumnKind::Int),
        ("version", ColumnKind::Int),
        ("updated_at", ColumnKind::Int),
        ("deleted", ColumnKind::Int),
        ("value", ColumnKind::Text),
        ("live_since", ColumnKind::Int),
    ],
    key: &["tenant", "collection", "key"],
    version: Some("version"),
    rows: RowFilter::Changed("updated_at"),
    page_rows: 500,
    row_bytes: 1024,
};

/// The `spread_records` table: records of collections distributed `hash` (taken with the
/// vshards their keys hash to) or `range` (tagged vshard -1, which no vshard move takes). Same
/// columns and rules as [`RECORDS`].
pub const SPREAD_RECORDS: CopyTable = CopyTable { name: "spread_records", ..RECORDS };

/// The `blobs` table of a shard: which upload each path shows, and tombstones.
pub const BLOBS: CopyTable = CopyTable {
    name: "blobs",
    columns: &[
        ("tenant", ColumnKind::Text),
        ("path", ColumnKind::Text),
        ("vshard", ColumnKind::Int),
        ("version", ColumnKind::Int),
        ("deleted", ColumnKind::Int),
        ("upload_id", ColumnKind::OptText),
        ("size", ColumnKind::Int),
        ("sha256", ColumnKind::Text),
        ("content_type", ColumnKind::Text),
        ("chunk_size", ColumnKind::Int),
        ("chunk_count", ColumnKind::Int),
        ("created_at", ColumnKind::Int),
        ("updated_at", ColumnKind::Int),
    ],
    key: &["tenant", "path"],
    version: Some("version"),
    rows: RowFilter::Changed("updated_at"),
    page_rows: 500,
    row_bytes: 256,
};

/// The `blob_uploads` table: only live uploads (the content of a blob) are copied; staging
/// uploads stay behind (their commit is refused once the tenant is fenced).
pub const BLOB_UPLOADS: CopyTable = CopyTable {
    name: "blob_uploads",
    columns: &[
        ("upload_id", ColumnKind::Text),
        ("tenant", ColumnKind::Text),
        ("path", ColumnKind::Text),
        ("vshard", ColumnKind::Int),
        ("state", ColumnKind::Text),
        ("chunk_size", ColumnKind::Int),
        ("next_seq", ColumnKind::Int),
        ("received", ColumnKind::Int),
        ("last_chunk", ColumnKind::Int),
        ("started_at", ColumnKind::Int),
        ("changed_at", ColumnKind::Int),
    ],
    key: &["upload_id"],
    version: None,
    rows: RowFilter::LiveUploads,
    page_rows: 500,
    row_bytes: 128,
};

/// The `blob_chunks` table: the chunks of the live uploads copied.
pub const BLOB_CHUNKS: CopyTable = CopyTable {
    name: "blob_chunks",
    columns: &[("upload_id", ColumnKind::Text), ("seq", ColumnKind::Int), ("data", ColumnKind::Bytes)],
    key: &["upload_id", "seq"],
    version: None,
    rows: RowFilter::LiveUploadChunks,
    // 64 chunks of at most 256 KiB: a page stays at 16 MiB.
    page_rows: 64,
    row_bytes: 256 << 10,
};

/// Every table that holds a tenant's home data, in the order a copy takes them: an upload's
/// chunks before the blob row that shows it, so a copied blob never points at nothing.
pub const TENANT_TABLES: [&CopyTable; 4] = [&BLOB_UPLOADS, &BLOB_CHUNKS, &BLOBS, &RECORDS];

/// The `index_entries` table: the entries a vshard places. Entries are removed without a
/// tombstone, so "changed since" does not find everything: a vshard move copies them whole,
/// under its fence, into a target that holds none of the vshard's entries.
pub const INDEX_ENTRIES: CopyTable = CopyTable {
    name: "index_entries",
    columns: &[
        ("tenant", ColumnKind::Text),
        ("collection", ColumnKind::Text),
        ("index_name", ColumnKind::Text),
        ("value_key", ColumnKind::Text),
        ("record_key", ColumnKind::Text),
        ("vshard", ColumnKind::Int),
        ("record_vshard", ColumnKind::Int),
        ("record_version", ColumnKind::Int),
        ("state", ColumnKind::Text),
        ("claimed_at", ColumnKind::Int),
        ("copy", ColumnKind::OptText),
        ("unique_claim", ColumnKind::Int),
    ],
    key: &["tenant", "collection", "index_name", "value_key", "record_key"],
    version: None,
    rows: RowFilter::All,
    page_rows: 500,
    row_bytes: 256,
};

/// Which of the rows a selection takes a copy of a table takes.
#[derive(Debug, Clone, Copy)]
pub enum RowFilter {
    /// Every selected row; with a `since`, those whose column (a time in ms) is at least it.
    Changed(&'static str),
    /// Uploads in state `live`; with a `since`, those that became live since.
    LiveUploads,
    /// Chunks of the uploads [`RowFilter::LiveUploads`] takes.
    LiveUploadChunks,
    /// Every selected row, whatever the pass's `since` and `before`.
    All,
}
