//! Blobs on a shard: binary objects of a tenant, addressed by `(tenant, path)`, stored on the
//! tenant's home shard (the shard and vshard of its records) in chunks, and written through
//! uploads that become visible all at once.
//!
//! # Chunks
//!
//! A blob's bytes are cut into chunks of [`BLOB_CHUNK_BYTES`] (256 KiB); every chunk but the last
//! is full, so chunk `i` holds bytes `i * chunk_size .. (i + 1) * chunk_size` and a byte range
//! maps to a range of chunks ([`BlobMeta::chunks_covering`]). The chunk size is stored with each
//! blob, so blobs written before a change of the constant stay readable. Writers hand over one
//! chunk at a time. Readers fetch a *window* of consecutive chunks per statement
//! ([`BlobStore::read_window`], windows from [`BlobMeta::read_windows`]: at most
//! [`BLOB_READ_WINDOW_BYTES`], 1 MiB = 4 chunks, by default), fetched whole so that the
//! connection goes back to the pool before any byte reaches the client: a slow client never pins
//! a pooled connection, and a reader holds at most one window per statement in memory.
//!
//! # Tables (shard migration `0004_blobs.sql`)
//!
//! | table | key | holds |
//! | --- | --- | --- |
//! | `blob_uploads` | `upload_id` | tenant, path, vshard, `state` (`staging`, `live`, `superseded`, `aborted`), chunk size, `next_seq` / `received` / `last_chunk` (what arrived), `started_at`, `changed_at` |
//! | `blob_chunks` | `(upload_id, seq)` | one chunk's bytes (`BLOB` / `BYTEA`, stored out of line and uncompressed on PostgreSQL) |
//! | `blobs` | `(tenant, path)` | vshard, version, deleted, the live `upload_id`, size, SHA-256 (hex), content type, chunk size and count, `created_at`, `updated_at` |
//!
//! Paths compare in byte order on both engines (`COLLATE "C"` on PostgreSQL). Deleted blobs stay
//! in `blobs` as tombstones, so a path's version never goes backwards across delete and
//! re-create. Times are milliseconds since the Unix epoch, passed in by the caller.
//!
//! # Writing: stage, then switch
//!
//! [`BlobStore::begin_upload`] creates a `staging` upload under a new random id;
//! [`BlobStore::put_chunk`] appends one chunk: in one transaction it advances the upload's
//! counters (only if the upload is still `staging`, the chunk is the next one in order and the
//! previous one was full) and inserts the chunk row. Nothing staged is visible to readers, who
//! only ever reach chunks through the `upload_id` of a `blobs` row.
//!
//! [`BlobStore::commit`] reads the current blob, checks the caller's [`BlobCondition`] against
//! it, and then switches in one transaction:
//! 1. seal the upload (`staging` → `live`), only if the counters match the declared size and
//!    chunk count and the shard's fence is not newer than the map the write was routed on. This
//!    is the transaction's first statement and a write, so SQLite takes its write lock here
//!    (waiting out the busy timeout rather than failing on a stale snapshot);
//! 2. point the `blobs` row at the upload: a compare-and-swap on the version read before (an
//!    insert that does nothing on conflict when there was no row), again carrying the fence;
//! 3. mark the previous upload `superseded`.
//!
//! Readers see the `blobs` row before or after the transaction, never a mix, and the row names
//! one upload whose chunks are all in place (sealing checked them) and stay in place until the
//! garbage rules below remove them. When the swap finds another writer got there first, the
//! transaction rolls back (the upload is `staging` again) and the commit starts over from the
//! read, so of several writers racing with the same `If-Match` exactly one wins and the others
//! fail their precondition. A commit that is refused (precondition, fence, counters) aborts the
//! upload, so a rejected upload leaves nothing behind. Deleting writes a tombstone and marks the
//! live upload `superseded` the same way.
//!
//! # Garbage
//!
//! [`BlobStore::collect_garbage`] (run by a background janitor with a cut-off such as now minus
//! [`BLOB_GARBAGE_GRACE_MS`]):
//! - a `staging` upload whose last chunk (or start) is older than the cut-off is abandoned:
//!   marked `aborted` (which fences out any late chunk or commit, both of which require
//!   `staging`);
//! - `aborted` and `superseded` uploads that changed state before the cut-off lose their chunks
//!   (in batches, so SQLite's write lock is never held for long) and then their row.
//!
//! # Damage
//!
//! A `blobs` row promises `chunk_count` chunks of known lengths. A restore from backups of
//! different moments, or rows deleted by hand, can break that promise; sealing cannot prevent
//! it. [`BlobStore::tally_chunks`] compares the chunk rows of one blob with the promise in one
//! aggregate statement (lengths are read without reading the bytes), so a download can refuse a
//! damaged blob before any of its headers go out, and `shardgate check` makes the same
//! comparison over a whole shard ([`CHUNK_WRONG_LENGTH_SQL`]).
//!
//! `live` uploads are never collected. A superseded upload keeps its chunks for the grace period
//! so that a reader that looked up the old blob can finish streaming it; after that a chunk read
//! answers [`Error::BlobNotFound`]. [`BlobStore::abort`] deletes an upload's chunks at once
//! (they were never visible). An upload that nobody commits or aborts, because its request was
//! cancelled, is collected as abandoned.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use futures::{Stream, TryStreamExt};
use serde::{Serialize, Serializer};
use sqlx::Row;
use sqlx::any::AnyRow;

use crate::error::Error;
use crate::ids::{InvalidId, ShardId, TenantId, check_key_chars};
use crate::storage::db::Database;
use crate::storage::meter::Sample;
use crate::storage::records::{MAX_WRITE_ATTEMPTS, backoff};
use crate::storage::shard::{FencedShard, OnShard, ShardStore, plain_shard_store, shard_error};
use crate::storage::sql_comment::traced;

/// The size of every chunk of a blob but the last (which holds the remainder, at least a byte).
pub const BLOB_CHUNK_BYTES: usize = 256 * 1024;

/// The default bound of one read of consecutive chunks ([`BlobStore::read_window`]): 1 MiB, so
/// four chunks of [`BLOB_CHUNK_BYTES`] and a blob of up to 1 MiB in one statement.
pub const BLOB_READ_WINDOW_BYTES: usize = 1024 * 1024;

/// The longest blob path, in bytes.
pub const MAX_BLOB_PATH_BYTES: usize = 1024;

/// A suggested grace period for [`BlobStore::collect_garbage`]: one hour, both for readers still
/// streaming a replaced blob and for uploads that stopped sending chunks.
pub const BLOB_GARBAGE_GRACE_MS: i64 = 60 * 60 * 1000;

/// How many chunks one `DELETE` removes at most (16 MiB at the default chunk size).
const DELETE_BATCH_CHUNKS: i64 = 64;

/// How many uploads the garbage collector picks per round.
const GARBAGE_BATCH_UPLOADS: i64 = 64;

/// For a row `c` of `blob_chunks` of the blob row `b` (its `size`, `chunk_size` and
/// `chunk_count`): 1 when the chunk is not the length its position calls for (every chunk but
/// the last is `chunk_size` long, the last holds the rest), else 0. `length` of a `BYTEA` or a
/// `BLOB` reads the stored length, not the bytes, on both engines.
pub const CHUNK_WRONG_LENGTH_SQL: &str = "CASE WHEN length(c.data) = CASE WHEN c.seq = b.chunk_count - 1 \
                                          THEN b.size - c.seq * b.chunk_size ELSE b.chunk_size END THEN 0 ELSE 1 END";

/// The columns of `blobs` that [`BlobStore::meta`] reads, in its order.
const META_COLUMNS: &str = "tenant, path, vshard, version, upload_id, size, sha256, content_type, \
                            chunk_size, chunk_count, created_at, updated_at, deleted";

/// A blob's path within its tenant: 1–1024 bytes of UTF-8 without control characters or Unicode
/// noncharacters, made of `/`-separated segments that are neither empty nor `.` or `..` (so it
/// never starts or ends with `/` nor holds `//`). Paths are compared and listed in byte order.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlobPath(Arc<str>);

impl BlobPath {
    /// Parses and validates `value`.
    pub fn parse(value: &str) -> Result<Self, InvalidId> {
        const KIND: &str = "blob path";
        check_key_chars(KIND, value, MAX_BLOB_PATH_BYTES)?;
        if value.split('/').any(|segment| matches!(segment, "" | "." | "..")) {
            return Err(InvalidId {
                kind: KIND,
                reason: "segments between '/' must not be empty, '.' or '..'".to_owned(),
            });
        }
        Ok(Self(value.into()))
    }

    /// The path as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for BlobPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for BlobPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl AsRef<str> for BlobPath {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Serialize for BlobPath {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

/// A live blob's metadata: everything but its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobMeta {
    /// Its tenant.
    pub tenant: TenantId,
    /// Its path.
    pub path: BlobPath,
    /// The vshard it was placed by.
    pub vshard: u32,
    /// 1 on first create, +1 on every overwrite and delete.
    pub version: i64,
    /// The upload whose chunks hold its bytes.
    pub upload_id: String,
    /// Its length in bytes.
    pub size: u64,
    /// SHA-256 of its bytes, lowercase hex: the ETag.
    pub sha256: String,
    /// Its media type, as the writer gave it.
    pub content_type: String,
    /// The size of every chunk but the last.
    pub chunk_size: u32,
    /// How many chunks hold its bytes (0 for an empty blob).
    pub chunk_count: u64,
    /// When this incarnation was created (first write, or first write after a delete), ms since
    /// the Unix epoch.
    pub created_at_ms: i64,
    /// Last write, ms since the Unix epoch.
    pub updated_at_ms: i64,
}

impl BlobMeta {
    /// The chunks holding the bytes `bytes` (clipped to the blob): chunk `i` starts at byte
    /// `i * chunk_size`. Empty when the range is.
    pub fn chunks_covering(&self, bytes: Range<u64>) -> Range<u64> {
        let (start, end) = (bytes.start.min(self.size), bytes.end.min(self.size));
        if start >= end {
            return 0..0;
        }
        let size = u64::from(self.chunk_size);
        start / size..end.div_ceil(size)
    }

    /// How many chunks a read window of `window_bytes` holds: at least one, so a window is never
    /// empty, and at most `window_bytes` of chunk data when that is at least one chunk.
    pub fn chunks_per_window(&self, window_bytes: usize) -> u64 {
        (window_bytes as u64 / u64::from(self.chunk_size)).max(1)
    }

    /// The windows that read chunks `seqs`, in order: runs of at most
    /// [`BlobMeta::chunks_per_window`] chunks, aligned to multiples of that count (window `k`
    /// covers chunks `k * n .. (k + 1) * n`, clipped to `seqs`), so that reads of different
    /// ranges of one blob share their windows past the first.
    pub fn read_windows(&self, seqs: Range<u64>, window_bytes: usize) -> impl Iterator<Item = Range<u64>> + use<> {
        let per_window = self.chunks_per_window(window_bytes);
        let mut next = seqs.start;
        std::iter::from_fn(move || {
            if next >= seqs.end {
                return None;
            }
            let end = (next / per_window).saturating_add(1).saturating_mul(per_window).min(seqs.end);
            let window = next..end;
            next = end;
            Some(window)
        })
    }

    /// The length of chunk `seq`, if the blob has it.
    pub fn chunk_len(&self, seq: u64) -> Option<usize> {
        let size = u64::from(self.chunk_size);
        match seq.checked_add(1) {
            Some(next) if next < self.chunk_count => Some(self.chunk_size as usize),
            Some(next) if next == self.chunk_count => usize::try_from(self.size - seq * size).ok(),
            _ => None,
        }
    }
}

/// A blob's chunk rows against what its `blobs` row promises ([`BlobStore::tally_chunks`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkTally {
    /// The chunks the blob has: its `chunk_count`.
    pub expected: u64,
    /// How many of chunks `0..expected` have a row.
    pub present: u64,
    /// How many of those present are not the length their position calls for.
    pub wrong_length: u64,
}

impl ChunkTally {
    /// Whether every chunk is there at its length: the blob's bytes can be served.
    pub fn is_whole(&self) -> bool {
        self.present == self.expected && self.wrong_length == 0
    }
}

impl fmt::Display for ChunkTally {
    /// "2 of its 3 chunks are present, 1 of the wrong length".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self { expected, present, wrong_length } = self;
        write!(f, "{present} of its {expected} chunks are present, {wrong_length} of the wrong length")
    }
}

/// What the shard holds at a path, tombstones included (their version bounds caches).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlobRead {
    /// The blob exists.
    Live(BlobMeta),
    /// It was deleted at this version.
    Gone(i64),
    /// There never was a blob here.
    Absent,
}

impl BlobRead {
    /// The live blob, if there is one.
    pub fn live(&self) -> Option<&BlobMeta> {
        match self {
            BlobRead::Live(blob) => Some(blob),
            BlobRead::Gone(_) | BlobRead::Absent => None,
        }
    }
}

/// A client's precondition on a blob write or delete. ETags are the blobs' SHA-256 in hex.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlobCondition {
    /// No precondition.
    Always,
    /// `If-Match: *`: the blob must exist.
    Exists,
    /// `If-Match: "<sha256>", ...`: the blob must exist with one of these SHA-256 (compared
    /// without regard to case).
    Sha256In(Vec<String>),
    /// `If-None-Match: *`: the blob must not exist (create only).
    Absent,
}

impl BlobCondition {
    /// Whether the condition holds when `current` is the live blob (`None`: absent or deleted).
    /// Callers can check it before receiving a body, to refuse early; [`BlobStore::commit`] and
    /// [`BlobStore::delete`] check it again when they write.
    pub fn is_met_by(&self, current: Option<&BlobMeta>) -> bool {
        match (self, current) {
            (BlobCondition::Always, _) => true,
            (BlobCondition::Exists, current) => current.is_some(),
            (BlobCondition::Sha256In(etags), Some(blob)) => etags.iter().any(|e| e.eq_ignore_ascii_case(&blob.sha256)),
            (BlobCondition::Sha256In(_), None) => false,
            (BlobCondition::Absent, current) => current.is_none(),
        }
    }
}

/// Where an upload stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UploadState {
    /// Chunks are arriving; invisible to readers.
    Staging,
    /// It is a blob's current content.
    Live,
    /// It was a blob's content until replaced or deleted; its chunks go after the grace period.
    Superseded,
    /// Abandoned or refused; never visible. Its chunks are (being) deleted.
    Aborted,
}

impl UploadState {
    fn parse(raw: &str) -> Option<Self> {
        match raw {
            "staging" => Some(UploadState::Staging),
            "live" => Some(UploadState::Live),
            "superseded" => Some(UploadState::Superseded),
            "aborted" => Some(UploadState::Aborted),
            _ => None,
        }
    }
}

/// An upload in progress, from [`BlobStore::begin_upload`].
#[derive(Debug, Clone)]
pub struct Upload {
    id: String,
    tenant: TenantId,
    path: BlobPath,
    vshard: u32,
    chunk_size: u32,
}

impl Upload {
    /// Its random id (the key of its chunks).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The tenant it writes for.
    pub fn tenant(&self) -> &TenantId {
        &self.tenant
    }

    /// The path it will replace when committed.
    pub fn path(&self) -> &BlobPath {
        &self.path
    }

    /// The vshard the blob is placed by.
    pub fn vshard(&self) -> u32 {
        self.vshard
    }

    /// The size every chunk but the last must have.
    pub fn chunk_size(&self) -> usize {
        self.chunk_size as usize
    }
}

/// What the writer declares when committing an upload; the store checks size and chunk count
/// against what it received (the SHA-256 is the writer's, computed while streaming).
#[derive(Debug, Clone)]
pub struct BlobCommit {
    /// Total bytes.
    pub size: u64,
    /// SHA-256 of the bytes, hex (stored lowercase).
    pub sha256_hex: String,
    /// The media type to store.
    pub content_type: String,
    /// How many chunks were put.
    pub chunk_count: u64,
    /// The client's precondition, checked against the blob being replaced.
    pub condition: BlobCondition,
}

/// The result of a commit.
#[derive(Debug, Clone)]
pub struct CommitOutcome {
    /// Whether the path held no live blob before (201 rather than 200).
    pub created: bool,
    /// The blob as now visible.
    pub blob: BlobMeta,
}

plain_shard_store!(
    /// Blob operations on one shard database.
    BlobStore
);

impl<'a> BlobStore<'a> {
    fn err(&self, source: sqlx::Error) -> Error {
        self.shard.err(source)
    }

    /// Begins a transaction with a fenced write whose last parameter is the map epoch (bound
    /// here). `None` if the write changed nothing: the transaction is rolled back and the caller
    /// finds out why.
    async fn begin_with_fenced_write<'q>(
        &self,
        write: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    ) -> Result<Option<sqlx::Transaction<'static, sqlx::Any>>, Error> {
        let mut tx = self.shard.pool().begin().on_shard(&self.shard).await?;
        let written = write.bind(self.shard.map_epoch()).fetch_optional(&mut *tx).on_shard(&self.shard).await?;
        if written.is_none() {
            tx.rollback().on_shard(&self.shard).await?;
            return Ok(None);
        }
        Ok(Some(tx))
    }

    /// Starts an upload to `path`: a new random id, `staging`, nothing visible yet.
    pub async fn begin_upload(
        &self,
        tenant: &TenantId,
        path: &BlobPath,
        vshard: u32,
        now_ms: i64,
    ) -> Result<Upload, Error> {
        let upload = Upload {
            id: uuid::Uuid::new_v4().simple().to_string(),
            tenant: tenant.clone(),
            path: path.clone(),
            vshard,
            chunk_size: BLOB_CHUNK_BYTES as u32,
        };
        // last_chunk starts "full", so the first chunk may follow it.
        let begin = traced(
            "INSERT INTO blob_uploads (upload_id, tenant, path, vshard, state, chunk_size, next_seq, received, \
             last_chunk, started_at, changed_at) \
             SELECT $1, $2, $3, $4, 'staging', $5, 0, 0, $5, $6, $6 \
             WHERE NOT EXISTS (SELECT 1 FROM shard_fence WHERE epoch > $7) \
             AND NOT EXISTS (SELECT 1 FROM tenant_fences WHERE tenant = $2) RETURNING upload_id",
        );
        let begun = begin
            .query()
            .bind(&upload.id)
            .bind(tenant.as_str())
            .bind(path.as_str())
            .bind(i64::from(vshard))
            .bind(i64::from(upload.chunk_size))
            .bind(now_ms)
            .bind(self.shard.map_epoch())
            .fetch_optional(self.shard.pool())
            .on_shard(&self.shard)
            .await?;
        match begun {
            Some(_) => Ok(upload),
            None => {
                self.shard.check_fences(tenant).await?;
                Err(Error::StaleMap(self.shard.id().clone()))
            }
        }
    }

    /// Appends chunk `seq` (0, 1, 2, ... in order) to a staging upload. Every chunk but the last
    /// must be exactly [`Upload::chunk_size`] bytes, and no chunk may be empty.
    ///
    /// Errors: [`Error::UploadClosed`] if the upload was committed, aborted or collected;
    /// [`Error::StaleMap`] if the fence is newer than the routing map; [`Error::BlobProtocol`]
    /// for a chunk out of order, of a wrong size, or after a short chunk. The upload stays as it
    /// was; the caller aborts it.
    #[tracing::instrument(level = "trace", name = "blob.chunk_write", skip_all, fields(seq = seq, bytes = data.len()))]
    pub async fn put_chunk(&self, upload: &Upload, seq: u64, data: &[u8], now_ms: i64) -> Result<(), Error> {
        if data.is_empty() || data.len() > upload.chunk_size() {
            return Err(Error::BlobProtocol(format!(
                "chunk {seq} of upload {} has {} bytes; chunks hold 1 to {} bytes",
                upload.id,
                data.len(),
                upload.chunk_size
            )));
        }
        let seq_i64 = to_i64(seq)?;
        // First statement, and a write: it takes SQLite's write lock and, on PostgreSQL, locks
        // the upload's row against a concurrent abort or abandonment.
        let append = traced(
            "UPDATE blob_uploads SET next_seq = next_seq + 1, received = received + $1, last_chunk = $1, \
             changed_at = $2 \
             WHERE upload_id = $3 AND state = 'staging' AND next_seq = $4 AND last_chunk = chunk_size \
             AND NOT EXISTS (SELECT 1 FROM shard_fence WHERE epoch > $5) RETURNING next_seq",
        );
        let append = append.query().bind(data.len() as i64).bind(now_ms).bind(&upload.id).bind(seq_i64);
        let Some(mut tx) = self.begin_with_fenced_write(append).await? else {
            return Err(self.chunk_refused(upload, seq).await?);
        };
        traced("INSERT INTO blob_chunks (upload_id, seq, data) VALUES ($1, $2, $3)")
            .query()
            .bind(&upload.id)
            .bind(seq_i64)
            .bind(data)
            .execute(&mut *tx)
            .on_shard(&self.shard)
            .await?;
        tx.commit().on_shard(&self.shard).await?;
        self.shard.count(Sample::rows_written(1, data.len() as u64));
        Ok(())
    }

    /// Why [`BlobStore::put_chunk`] could not append: the error to return.
    async fn chunk_refused(&self, upload: &Upload, seq: u64) -> Result<Error, Error> {
        let (next, _) = match self.staging_counters(upload).await? {
            Ok(counters) => counters,
            Err(refusal) => return Ok(refusal),
        };
        Ok(if i64::try_from(seq).ok() != Some(next) {
            Error::BlobProtocol(format!("chunk {seq} of upload {} arrived, chunk {next} was expected", upload.id))
        } else {
            Error::BlobProtocol(format!("chunk {seq} of upload {} follows a short chunk", upload.id))
        })
    }

    /// After a fenced write to a staging upload changed nothing, the reasons that are not the
    /// write's own: `Err` [`Error::StaleMap`] if the fence is newer, `Err` [`Error::UploadClosed`]
    /// if the upload is no longer staging; otherwise its counters (`next_seq`, `received`).
    async fn staging_counters(&self, upload: &Upload) -> Result<Result<(i64, i64), Error>, Error> {
        if let Err(stale) = self.shard.check_fence().await {
            return Ok(Err(stale));
        }
        let row = sqlx::query("SELECT state, next_seq, received FROM blob_uploads WHERE upload_id = $1")
            .bind(&upload.id)
            .fetch_optional(self.shard.pool())
            .on_shard(&self.shard)
            .await?;
        let Some(row) = row else { return Ok(Err(Error::UploadClosed)) };
        let state: String = row.try_get(0).map_err(|e| self.err(e))?;
        if state != "staging" {
            return Ok(Err(Error::UploadClosed));
        }
        let next: i64 = row.try_get(1).map_err(|e| self.err(e))?;
        let received: i64 = row.try_get(2).map_err(|e| self.err(e))?;
        Ok(Ok((next, received)))
    }

    /// Makes the upload the blob at its path, if `commit.condition` holds for the blob there now
    /// and the upload holds exactly `commit.size` bytes in `commit.chunk_count` chunks. Readers
    /// see the old blob or the new one, never a mix; the old upload becomes `superseded` and its
    /// chunks stay readable for the garbage grace period.
    ///
    /// A refused commit aborts the upload (nothing stays staged): [`Error::PreconditionFailed`],
    /// [`Error::StaleMap`], [`Error::BlobProtocol`] (totals or SHA-256 malformed or disagreeing),
    /// [`Error::WriteContention`]. [`Error::UploadClosed`] if it was already committed or aborted.
    /// On a database error the upload stays staging: abort it, or the janitor will.
    pub async fn commit(&self, upload: &Upload, commit: BlobCommit, now_ms: i64) -> Result<CommitOutcome, Error> {
        let Some(sha256) = parse_sha256_hex(&commit.sha256_hex) else {
            self.abort(upload, now_ms).await?;
            return Err(Error::BlobProtocol(format!("{:?} is not a SHA-256 in hex", commit.sha256_hex)));
        };
        let (size, chunk_count) = (to_i64(commit.size)?, to_i64(commit.chunk_count)?);
        for attempt in 0..MAX_WRITE_ATTEMPTS {
            backoff(attempt).await;
            let current = self.read(&upload.tenant, &upload.path).await?;
            let live = current.live();
            if !commit.condition.is_met_by(live) {
                self.abort(upload, now_ms).await?;
                return Err(Error::PreconditionFailed);
            }
            // 1. Seal: the first statement is a write (SQLite's write lock is taken here).
            let seal = sqlx::query(
                "UPDATE blob_uploads SET state = 'live', changed_at = $1 \
                 WHERE upload_id = $2 AND state = 'staging' AND next_seq = $3 AND received = $4 \
                 AND NOT EXISTS (SELECT 1 FROM shard_fence WHERE epoch > $5) RETURNING upload_id",
            )
            .bind(now_ms)
            .bind(&upload.id)
            .bind(chunk_count)
            .bind(size);
            let Some(mut tx) = self.begin_with_fenced_write(seal).await? else {
                let refusal = self.commit_refused(upload, size, chunk_count).await?;
                if !matches!(refusal, Error::UploadClosed) {
                    self.abort(upload, now_ms).await?;
                }
                return Err(refusal);
            };
            // 2. Switch: compare-and-swap on the version read above. Both statements take the
            // blob's content as $1-$6.
            let with_content = |sql| {
                sqlx::query_scalar(sql)
                    .bind(&upload.id)
                    .bind(size)
                    .bind(&sha256)
                    .bind(&commit.content_type)
                    .bind(i64::from(upload.chunk_size))
                    .bind(chunk_count)
            };
            let switch = match &current {
                BlobRead::Absent => with_content(
                    "INSERT INTO blobs (upload_id, size, sha256, content_type, chunk_size, chunk_count, \
                     tenant, path, vshard, version, deleted, created_at, updated_at) \
                     SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, 1, 0, $10, $10 \
                     WHERE NOT EXISTS (SELECT 1 FROM shard_fence WHERE epoch > $11) \
                     AND NOT EXISTS (SELECT 1 FROM tenant_fences WHERE tenant = $7) \
                     ON CONFLICT (tenant, path) DO NOTHING RETURNING created_at",
                )
                .bind(upload.tenant.as_str())
                .bind(upload.path.as_str())
                .bind(i64::from(upload.vshard))
                .bind(now_ms),
                BlobRead::Live(BlobMeta { version, .. }) | BlobRead::Gone(version) => with_content(
                    "UPDATE blobs SET version = version + 1, deleted = 0, upload_id = $1, size = $2, sha256 = $3, \
                     content_type = $4, chunk_size = $5, chunk_count = $6, vshard = $7, \
                     created_at = CASE WHEN deleted = 1 THEN $8 ELSE created_at END, updated_at = $8 \
                     WHERE tenant = $9 AND path = $10 AND version = $11 \
                     AND NOT EXISTS (SELECT 1 FROM shard_fence WHERE epoch > $12) \
                     AND NOT EXISTS (SELECT 1 FROM tenant_fences WHERE tenant = $9) RETURNING created_at",
                )
                .bind(i64::from(upload.vshard))
                .bind(now_ms)
                .bind(upload.tenant.as_str())
                .bind(upload.path.as_str())
                .bind(*version),
            };
            let switched: Option<i64> =
                switch.bind(self.shard.map_epoch()).fetch_optional(&mut *tx).on_shard(&self.shard).await?;
            let Some(created_at_ms) = switched else {
                // Another writer (or a fence) got there first: the upload is staging again.
                tx.rollback().on_shard(&self.shard).await?;
                if let Err(fenced) = self.shard.check_fences(&upload.tenant).await {
                    self.abort(upload, now_ms).await?;
                    return Err(fenced);
                }
                continue;
            };
            // 3. The replaced upload's chunks stay for readers still streaming them.
            if let Some(old) = live {
                self.supersede(&mut tx, &old.upload_id, now_ms).await?;
            }
            tx.commit().on_shard(&self.shard).await?;
            let version = match &current {
                BlobRead::Absent => 1,
                BlobRead::Live(BlobMeta { version, .. }) | BlobRead::Gone(version) => version + 1,
            };
            return Ok(CommitOutcome {
                created: live.is_none(),
                blob: BlobMeta {
                    tenant: upload.tenant.clone(),
                    path: upload.path.clone(),
                    vshard: upload.vshard,
                    version,
                    upload_id: upload.id.clone(),
                    size: commit.size,
                    sha256,
                    content_type: commit.content_type,
                    chunk_size: upload.chunk_size,
                    chunk_count: commit.chunk_count,
                    created_at_ms,
                    updated_at_ms: now_ms,
                },
            });
        }
        self.abort(upload, now_ms).await?;
        Err(Error::WriteContention)
    }

    /// Why sealing an upload failed: the error to return.
    async fn commit_refused(&self, upload: &Upload, size: i64, chunk_count: i64) -> Result<Error, Error> {
        let (next, received) = match self.staging_counters(upload).await? {
            Ok(counters) => counters,
            Err(refusal) => return Ok(refusal),
        };
        Ok(Error::BlobProtocol(format!(
            "upload {} holds {next} chunks and {received} bytes, the commit declares {chunk_count} chunks and {size} bytes",
            upload.id
        )))
    }

    /// Marks a blob's previous live upload `superseded`, within the switching transaction.
    async fn supersede(
        &self,
        tx: &mut sqlx::Transaction<'static, sqlx::Any>,
        upload_id: &str,
        now_ms: i64,
    ) -> Result<(), Error> {
        sqlx::query(
            "UPDATE blob_uploads SET state = 'superseded', changed_at = $1 WHERE upload_id = $2 AND state = 'live'",
        )
        .bind(now_ms)
        .bind(upload_id)
        .execute(&mut **tx)
        .on_shard(&self.shard)
        .await?;
        Ok(())
    }

    /// Gives up an upload: marks it `aborted` and deletes its chunks, so an interrupted or
    /// rejected upload leaves nothing behind. Repeating it is harmless; an upload already
    /// collected is fine too. [`Error::UploadClosed`] if it was committed (delete the blob
    /// instead). Not fenced: removing garbage is always allowed.
    pub async fn abort(&self, upload: &Upload, now_ms: i64) -> Result<(), Error> {
        let aborted: Option<i64> = sqlx::query_scalar(
            "UPDATE blob_uploads SET state = 'aborted', changed_at = $1 \
             WHERE upload_id = $2 AND state IN ('staging', 'aborted') RETURNING next_seq",
        )
        .bind(now_ms)
        .bind(&upload.id)
        .fetch_optional(self.shard.pool())
        .on_shard(&self.shard)
        .await?;
        match aborted {
            Some(chunks) => self.delete_chunks(&upload.id, chunks).await.map(drop),
            None if self.upload_state(&upload.id).await?.is_none() => Ok(()),
            None => Err(Error::UploadClosed),
        }
    }

    /// Deletes chunks `0..count` of an upload that no reader can reach any more, a batch at a
    /// time. Returns how many were deleted.
    async fn delete_chunks(&self, upload_id: &str, count: i64) -> Result<u64, Error> {
        let mut deleted = 0;
        let mut low = 0;
        while low < count {
            let done = sqlx::query("DELETE FROM blob_chunks WHERE upload_id = $1 AND seq >= $2 AND seq < $3")
                .bind(upload_id)
                .bind(low)
                .bind(low + DELETE_BATCH_CHUNKS)
                .execute(self.shard.pool())
                .on_shard(&self.shard)
                .await?;
            deleted += done.rows_affected();
            low += DELETE_BATCH_CHUNKS;
        }
        Ok(deleted)
    }

    /// Where an upload stands; `None` once it was collected (or never existed).
    pub async fn upload_state(&self, upload_id: &str) -> Result<Option<UploadState>, Error> {
        let state: Option<String> = sqlx::query_scalar("SELECT state FROM blob_uploads WHERE upload_id = $1")
            .bind(upload_id)
            .fetch_optional(self.shard.pool())
            .on_shard(&self.shard)
            .await?;
        state
            .map(|s| {
                UploadState::parse(&s)
                    .ok_or_else(|| Error::Corrupt(format!("upload state {s:?} on shard {}", self.shard.id())))
            })
            .transpose()
    }

    /// The live blob at `path`, if any.
    pub async fn head(&self, tenant: &TenantId, path: &BlobPath) -> Result<Option<BlobMeta>, Error> {
        Ok(self.read(tenant, path).await?.live().cloned())
    }

    /// What the shard holds at `path`, tombstones included.
    pub async fn read(&self, tenant: &TenantId, path: &BlobPath) -> Result<BlobRead, Error> {
        let row = sqlx::query(&format!(
            "SELECT {META_COLUMNS} FROM blobs WHERE tenant = $1 AND path = $2 \
             AND NOT EXISTS (SELECT 1 FROM tenant_fences WHERE tenant = $1 AND state = 'moved')"
        ))
        .bind(tenant.as_str())
        .bind(path.as_str())
        .fetch_optional(self.shard.pool())
        .on_shard(&self.shard)
        .await?;
        let Some(row) = row else {
            self.shard.check_moved(tenant).await?;
            return Ok(BlobRead::Absent);
        };
        let deleted: i64 = row.try_get(12).map_err(|e| self.err(e))?;
        if deleted != 0 {
            return Ok(BlobRead::Gone(row.try_get(3).map_err(|e| self.err(e))?));
        }
        Ok(BlobRead::Live(self.meta(&row)?))
    }

    /// A live blob from a row of [`META_COLUMNS`].
    fn meta(&self, row: &AnyRow) -> Result<BlobMeta, Error> {
        let corrupt = |what: &str| Error::Corrupt(format!("blob {what} on shard {}", self.shard.id()));
        let text = |i: usize| -> Result<String, Error> { row.try_get(i).map_err(|e| self.err(e)) };
        let int = |i: usize| -> Result<i64, Error> { row.try_get(i).map_err(|e| self.err(e)) };
        let upload_id: Option<String> = row.try_get(4).map_err(|e| self.err(e))?;
        Ok(BlobMeta {
            tenant: TenantId::parse(&text(0)?).map_err(|_| corrupt("tenant"))?,
            path: BlobPath::parse(&text(1)?).map_err(|_| corrupt("path"))?,
            vshard: u32::try_from(int(2)?).map_err(|_| corrupt("vshard"))?,
            version: int(3)?,
            upload_id: upload_id.ok_or_else(|| corrupt("without an upload"))?,
            size: u64::try_from(int(5)?).map_err(|_| corrupt("size"))?,
            sha256: text(6)?,
            content_type: text(7)?,
            chunk_size: u32::try_from(int(8)?).ok().filter(|&s| s > 0).ok_or_else(|| corrupt("chunk size"))?,
            chunk_count: u64::try_from(int(9)?).map_err(|_| corrupt("chunk count"))?,
            created_at_ms: int(10)?,
            updated_at_ms: int(11)?,
        })
    }

    /// How many of `blob`'s chunks have a row, and how many of those are not the length their
    /// position calls for, in one aggregate statement that reads lengths, not bytes: what a
    /// download checks before it answers ([`ChunkTally::is_whole`]). A blob replaced or deleted
    /// since it was looked up, whose chunks were collected after the grace period, tallies as
    /// missing chunks too: look the blob up again before calling it damaged.
    pub async fn tally_chunks(&self, blob: &BlobMeta) -> Result<ChunkTally, Error> {
        let expected = blob.chunk_count;
        if expected == 0 {
            return Ok(ChunkTally { expected, present: 0, wrong_length: 0 });
        }
        let last = expected - 1;
        let last_len = blob.chunk_len(last).unwrap_or(0);
        let (present, wrong_length): (i64, i64) = sqlx::query_as(
            "SELECT COUNT(*), COALESCE(SUM(CASE WHEN length(data) = CASE WHEN seq = $2 THEN $3 ELSE $4 END \
             THEN 0 ELSE 1 END), 0) FROM blob_chunks WHERE upload_id = $1 AND seq >= 0 AND seq <= $2",
        )
        .bind(&blob.upload_id)
        .bind(to_i64(last)?)
        .bind(to_i64(last_len as u64)?)
        .bind(i64::from(blob.chunk_size))
        .fetch_one(self.shard.pool())
        .on_shard(&self.shard)
        .await?;
        let count = |n: i64| u64::try_from(n).map_err(|_| Error::Corrupt(format!("a chunk count of {n}")));
        Ok(ChunkTally { expected, present: count(present)?, wrong_length: count(wrong_length)? })
    }

    /// Chunk `seq` of `blob` (a value from [`BlobStore::head`] or [`BlobStore::list`]).
    /// [`Error::BlobNotFound`] if the blob was replaced or deleted and its chunks collected since.
    pub async fn read_chunk(&self, blob: &BlobMeta, seq: u64) -> Result<Bytes, Error> {
        let mut chunks = read_window(self.shard.db(), self.shard.id(), blob, seq..seq.saturating_add(1)).await?;
        chunks.pop().ok_or_else(|| Error::BlobProtocol(format!("chunk {seq} was not read")))
    }

    /// Chunks `seqs` of `blob`, in order, in one statement whose rows are fetched whole before
    /// this returns (the connection is back in the pool by then). Each chunk's length is checked
    /// against the blob's size: [`Error::Corrupt`] if one differs, [`Error::BlobNotFound`] if one
    /// is missing (the blob was replaced or deleted and its chunks collected since it was looked
    /// up), [`Error::BlobProtocol`] for chunks past the blob's end. The caller bounds the window
    /// ([`BlobMeta::read_windows`]): it is held in memory whole.
    pub async fn read_window(&self, blob: &BlobMeta, seqs: Range<u64>) -> Result<Vec<Bytes>, Error> {
        read_window(self.shard.db(), self.shard.id(), blob, seqs).await
    }

    /// Chunks `seqs` of `blob`, in order, one statement per window of [`BLOB_READ_WINDOW_BYTES`]
    /// (the connection is released between windows and at most one window is held): for
    /// streaming a body or a byte range (see [`BlobMeta::chunks_covering`]). The stream owns what
    /// it needs and ends after an error.
    pub fn read_chunks(
        &self,
        blob: &BlobMeta,
        seqs: Range<u64>,
    ) -> Result<impl Stream<Item = Result<Bytes, Error>> + Send + 'static, Error> {
        check_chunk_range(blob, &seqs)?;
        let windows = blob.read_windows(seqs, BLOB_READ_WINDOW_BYTES);
        let state = (self.shard.db().clone(), self.shard.id().clone(), blob.clone(), windows);
        let windows = futures::stream::try_unfold(state, |(db, shard, blob, mut windows)| async move {
            let Some(window) = windows.next() else { return Ok::<_, Error>(None) };
            let chunks = read_window(&db, &shard, &blob, window).await?;
            let chunks = futures::stream::iter(chunks.into_iter().map(Ok::<Bytes, Error>));
            Ok(Some((chunks, (db, shard, blob, windows))))
        });
        Ok(windows.try_flatten())
    }

    /// Deletes the blob at `path` if `condition` holds: writes a tombstone (version + 1) and marks
    /// its upload `superseded`. Returns the blob as it was before, or `None` if there was no live
    /// blob and the condition allows that ([`BlobCondition::Always`] or
    /// [`BlobCondition::Absent`]); `If-Match` on a missing blob is [`Error::PreconditionFailed`].
    pub async fn delete(
        &self,
        tenant: &TenantId,
        path: &BlobPath,
        condition: &BlobCondition,
        now_ms: i64,
    ) -> Result<Option<BlobMeta>, Error> {
        for attempt in 0..MAX_WRITE_ATTEMPTS {
            backoff(attempt).await;
            let live = self.head(tenant, path).await?;
            if !condition.is_met_by(live.as_ref()) {
                return Err(Error::PreconditionFailed);
            }
            let Some(live) = live else { return Ok(None) };
            let mut tx = self.shard.pool().begin().on_shard(&self.shard).await?;
            let tombstoned = sqlx::query(
                "UPDATE blobs SET version = version + 1, deleted = 1, upload_id = NULL, size = 0, sha256 = '', \
                 content_type = '', chunk_count = 0, updated_at = $1 \
                 WHERE tenant = $2 AND path = $3 AND version = $4 AND deleted = 0 \
                 AND NOT EXISTS (SELECT 1 FROM shard_fence WHERE epoch > $5) \
                 AND NOT EXISTS (SELECT 1 FROM tenant_fences WHERE tenant = $2) RETURNING version",
            )
            .bind(now_ms)
            .bind(tenant.as_str())
            .bind(path.as_str())
            .bind(live.version)
            .bind(self.shard.map_epoch())
            .fetch_optional(&mut *tx)
            .on_shard(&self.shard)
            .await?;
            if tombstoned.is_none() {
                tx.rollback().on_shard(&self.shard).await?;
                self.shard.check_fences(tenant).await?;
                continue;
            }
            self.supersede(&mut tx, &live.upload_id, now_ms).await?;
            tx.commit().on_shard(&self.shard).await?;
            return Ok(Some(live));
        }
        Err(Error::WriteContention)
    }

    /// Live blobs of `tenant` whose path starts with `prefix` and sorts after `after` (an
    /// exclusive cursor), in byte order of the paths, at most `limit`.
    pub async fn list(
        &self,
        tenant: &TenantId,
        prefix: Option<&str>,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<BlobMeta>, Error> {
        let mut sql = format!(
            "SELECT {META_COLUMNS} FROM blobs WHERE tenant = $1 AND deleted = 0 \
             AND NOT EXISTS (SELECT 1 FROM tenant_fences WHERE tenant = $1 AND state = 'moved')"
        );
        let mut binds: Vec<String> = Vec::new();
        let mut push = |sql: &mut String, op: &str, value: String| {
            binds.push(value);
            sql.push_str(&format!(" AND path {op} ${}", binds.len() + 1));
        };
        if let Some(prefix) = prefix {
            push(&mut sql, ">=", prefix.to_owned());
            // No valid path contains U+10FFFF (a noncharacter), so every path with this prefix
            // sorts below prefix + U+10FFFF.
            push(&mut sql, "<", format!("{prefix}\u{10FFFF}"));
        }
        if let Some(after) = after {
            push(&mut sql, ">", after.to_owned());
        }
        sql.push_str(&format!(" ORDER BY path LIMIT ${}", binds.len() + 2));
        let mut query = sqlx::query(&sql).bind(tenant.as_str());
        for value in binds {
            query = query.bind(value);
        }
        let rows = query.bind(i64::from(limit)).fetch_all(self.shard.pool()).on_shard(&self.shard).await?;
        if rows.is_empty() {
            self.shard.check_moved(tenant).await?;
        }
        rows.iter().map(|row| self.meta(row)).collect()
    }

    /// Removes blob garbage older than `older_than_ms` (a time, such as now minus
    /// [`BLOB_GARBAGE_GRACE_MS`]): staging uploads with no chunk since then are abandoned, and the
    /// chunks and rows of aborted and superseded uploads that changed state before then are
    /// deleted. Live uploads are never touched. Returns how many chunks were deleted.
    pub async fn collect_garbage(&self, older_than_ms: i64) -> Result<u64, Error> {
        // Abandoning first makes any late chunk or commit of these uploads fail: both require
        // `staging`, and on PostgreSQL both lock the upload's row first.
        sqlx::query("UPDATE blob_uploads SET state = 'aborted' WHERE state = 'staging' AND changed_at < $1")
            .bind(older_than_ms)
            .execute(self.shard.pool())
            .on_shard(&self.shard)
            .await?;
        let mut chunks = 0;
        loop {
            let rows = sqlx::query(
                "SELECT upload_id, next_seq FROM blob_uploads \
                 WHERE state IN ('aborted', 'superseded') AND changed_at < $1 ORDER BY changed_at LIMIT $2",
            )
            .bind(older_than_ms)
            .bind(GARBAGE_BATCH_UPLOADS)
            .fetch_all(self.shard.pool())
            .on_shard(&self.shard)
            .await?;
            let removed = self.remove_uploads(&rows, "state IN ('aborted', 'superseded')").await?;
            chunks += removed.chunks;
            if removed.uploads == 0 {
                return Ok(chunks);
            }
        }
    }

    /// Deletes the chunks, then the row, of each upload in `rows` (`upload_id`, `next_seq`) that
    /// still matches `state_clause` (no reader can reach those).
    async fn remove_uploads(&self, rows: &[AnyRow], state_clause: &str) -> Result<Removed, Error> {
        let mut removed = Removed { uploads: 0, chunks: 0 };
        let sql = format!("DELETE FROM blob_uploads WHERE upload_id = $1 AND {state_clause}");
        for row in rows {
            let upload_id: String = row.try_get(0).map_err(|e| self.err(e))?;
            let next_seq: i64 = row.try_get(1).map_err(|e| self.err(e))?;
            removed.chunks += self.delete_chunks(&upload_id, next_seq).await?;
            let done = sqlx::query(&sql).bind(&upload_id).execute(self.shard.pool()).on_shard(&self.shard).await?;
            removed.uploads += done.rows_affected();
        }
        Ok(removed)
    }

    /// Removes every blob (and tombstone), upload and chunk of `tenant` on this shard. Returns how
    /// many blob rows were removed. Not fenced. An upload begun while this runs (by an instance
    /// on an old map) is left staging and collected as abandoned.
    pub async fn purge_tenant(&self, tenant: &TenantId) -> Result<u64, Error> {
        let blobs = sqlx::query("DELETE FROM blobs WHERE tenant = $1")
            .bind(tenant.as_str())
            .execute(self.shard.pool())
            .on_shard(&self.shard)
            .await?
            .rows_affected();
        // Aborting first stops further chunks and commits of these uploads.
        sqlx::query("UPDATE blob_uploads SET state = 'aborted' WHERE tenant = $1 AND state <> 'aborted'")
            .bind(tenant.as_str())
            .execute(self.shard.pool())
            .on_shard(&self.shard)
            .await?;
        loop {
            let rows = sqlx::query(
                "SELECT upload_id, next_seq FROM blob_uploads WHERE tenant = $1 AND state = 'aborted' LIMIT $2",
            )
            .bind(tenant.as_str())
            .bind(GARBAGE_BATCH_UPLOADS)
            .fetch_all(self.shard.pool())
            .on_shard(&self.shard)
            .await?;
            if self.remove_uploads(&rows, "state = 'aborted'").await?.uploads == 0 {
                return Ok(blobs);
            }
        }
    }
}

/// What [`BlobStore::remove_uploads`] removed.
struct Removed {
    uploads: u64,
    chunks: u64,
}

/// [`Error::BlobProtocol`] unless `seqs` is a range of chunks `blob` has.
fn check_chunk_range(blob: &BlobMeta, seqs: &Range<u64>) -> Result<(), Error> {
    if seqs.start > seqs.end || seqs.end > blob.chunk_count {
        return Err(Error::BlobProtocol(format!(
            "chunks {seqs:?} requested of a blob with {} chunks",
            blob.chunk_count
        )));
    }
    Ok(())
}

/// Reads chunks `seqs` of `blob` in one statement and checks each one's presence and length.
#[tracing::instrument(level = "trace", name = "blob.chunk_read", skip_all, fields(from = seqs.start, to = seqs.end))]
async fn read_window(db: &Database, shard: &ShardId, blob: &BlobMeta, seqs: Range<u64>) -> Result<Vec<Bytes>, Error> {
    check_chunk_range(blob, &seqs)?;
    if seqs.is_empty() {
        return Ok(Vec::new());
    }
    let started = db.is_metered().then(Instant::now);
    let rows = traced("SELECT seq, data FROM blob_chunks WHERE upload_id = $1 AND seq >= $2 AND seq < $3 ORDER BY seq")
        .query()
        .bind(&blob.upload_id)
        .bind(to_i64(seqs.start)?)
        .bind(to_i64(seqs.end)?)
        .fetch_all(&db.pool)
        .await;
    if let Some(started) = started {
        db.record(shard, Sample::statement(false, started.elapsed(), rows.is_err()));
    }
    let rows = rows.map_err(|e| shard_error(shard, e))?;
    let mut bytes = 0;
    let count = rows.len() as u64;
    let mut rows = rows.into_iter();
    let chunks = seqs
        .map(|seq| {
            // Rows come in order and the key is unique: the next row is chunk `seq` or it is missing.
            let row = rows.next().ok_or(Error::BlobNotFound)?;
            let found: i64 = row.try_get(0).map_err(|e| shard_error(shard, e))?;
            if u64::try_from(found).ok() != Some(seq) {
                return Err(Error::BlobNotFound);
            }
            let data: Vec<u8> = row.try_get(1).map_err(|e| shard_error(shard, e))?;
            let expected = blob.chunk_len(seq).unwrap_or(0);
            if data.len() != expected {
                return Err(Error::Corrupt(format!(
                    "chunk {seq} of upload {} on shard {shard} has {} bytes, {expected} expected",
                    blob.upload_id,
                    data.len()
                )));
            }
            bytes += data.len() as u64;
            Ok(Bytes::from(data))
        })
        .collect();
    db.record(shard, Sample::rows_read(count, bytes));
    chunks
}

fn to_i64(n: u64) -> Result<i64, Error> {
    i64::try_from(n).map_err(|_| Error::BlobProtocol(format!("{n} is out of range")))
}

/// `raw` in lowercase if it is 64 hex digits.
fn parse_sha256_hex(raw: &str) -> Option<String> {
    (raw.len() == 64 && raw.bytes().all(|b| b.is_ascii_hexdigit())).then(|| raw.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(size: u64, chunk_size: u32) -> BlobMeta {
        BlobMeta {
            tenant: TenantId::parse("acme").unwrap(),
            path: BlobPath::parse("a/b").unwrap(),
            vshard: 1,
            version: 1,
            upload_id: "u".into(),
            size,
            sha256: "ab".repeat(32),
            content_type: "application/octet-stream".into(),
            chunk_size,
            chunk_count: size.div_ceil(u64::from(chunk_size)),
            created_at_ms: 0,
            updated_at_ms: 0,
        }
    }

    #[test]
    fn blob_paths_are_segments_of_key_characters() {
        for good in ["a", "photos/2024/cat.jpg", "ünï/cödé ✓", "a%2Fb", ".hidden/x", "a..b"] {
            assert!(BlobPath::parse(good).is_ok(), "{good:?} should be accepted");
        }
        for bad in ["", "/a", "a/", "a//b", "./a", "a/../b", "..", "a\nb", "a\u{10FFFF}", "a\u{FDD0}"] {
            assert!(BlobPath::parse(bad).is_err(), "{bad:?} should be rejected");
        }
        assert!(BlobPath::parse(&"p".repeat(MAX_BLOB_PATH_BYTES)).is_ok());
        assert!(BlobPath::parse(&"p".repeat(MAX_BLOB_PATH_BYTES + 1)).is_err());
        assert_eq!(BlobPath::parse("").unwrap_err().kind, "blob path");
    }

    #[test]
    fn byte_ranges_map_to_the_chunks_holding_them() {
        let blob = meta(25, 10); // chunks: 0..10, 10..20, 20..25
        assert_eq!(blob.chunk_count, 3);
        assert_eq!(blob.chunks_covering(0..25), 0..3);
        assert_eq!(blob.chunks_covering(0..10), 0..1);
        assert_eq!(blob.chunks_covering(9..11), 0..2);
        assert_eq!(blob.chunks_covering(10..20), 1..2);
        assert_eq!(blob.chunks_covering(24..100), 2..3);
        assert_eq!(blob.chunks_covering(25..30), 0..0);
        assert_eq!(blob.chunks_covering(5..5), 0..0);
        assert_eq!((blob.chunk_len(0), blob.chunk_len(2), blob.chunk_len(3)), (Some(10), Some(5), None));
        let empty = meta(0, 10);
        assert_eq!((empty.chunk_count, empty.chunk_len(0)), (0, None));
        assert_eq!(empty.chunks_covering(0..1), 0..0);
    }

    #[test]
    fn conditions_compare_etags_without_case() {
        let blob = meta(1, 10);
        let upper = blob.sha256.to_ascii_uppercase();
        assert!(BlobCondition::Sha256In(vec!["x".into(), upper]).is_met_by(Some(&blob)));
        assert!(!BlobCondition::Sha256In(vec!["cd".repeat(32)]).is_met_by(Some(&blob)));
        assert!(!BlobCondition::Sha256In(vec![blob.sha256.clone()]).is_met_by(None));
        assert!(BlobCondition::Exists.is_met_by(Some(&blob)) && !BlobCondition::Exists.is_met_by(None));
        assert!(BlobCondition::Absent.is_met_by(None) && !BlobCondition::Absent.is_met_by(Some(&blob)));
        assert!(BlobCondition::Always.is_met_by(None));
    }

    #[test]
    fn sha256_must_be_64_hex_digits() {
        assert_eq!(parse_sha256_hex(&"AB".repeat(32)), Some("ab".repeat(32)));
        assert_eq!(parse_sha256_hex(&"ab".repeat(31)), None);
        assert_eq!(parse_sha256_hex(&"zz".repeat(32)), None);
    }
}
