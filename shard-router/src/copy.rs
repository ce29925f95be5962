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
//!   ([`Database::postgres`]); `bench/src/bin/drivers.rs` measures what it gains.
//! - [`CopyMethod::Pages`], for any pair of engines: pages of rows in key order through the
//!   engine-neutral pool, each merged with one multi-row `INSERT ... ON CONFLICT`.

use sqlx::Row;
use sqlx::any::AnyRow;
use sqlx::postgres::{PgConnection, PgPool};

use crate::db::{Database, Engine};
use crate::error::Error;
use crate::ids::{CollectionName, TenantId};
use crate::shard::{FencedShard, KeyRange, MoveSubject};

/// How a column's values travel through [`CopyMethod::Pages`].
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
/// version, and how big a page of [`CopyMethod::Pages`] is.
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
    /// About how many bytes a row holds: a batch of a move's first copy ([`copy_batch`]) takes
    /// as many rows as make `moves.copy_batch_bytes`.
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

/// One copy of one selection: which rows (and since when), and at what pace.
#[derive(Debug, Clone, Copy)]
pub struct Pass<'a> {
    /// The rows of a tenant or vshard.
    pub selection: Selection<'a>,
    /// Which of them by when they last changed.
    pub window: Window<'a>,
    /// The rate to keep to, if any.
    pub pace: Option<&'a Pace>,
}

/// Which rows of a selection a pass takes by when they last changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window<'a> {
    /// All of them.
    All,
    /// Those changed since a moment (a catch-up pass; the part a cut-over compares).
    ChangedSince(&'a Since),
    /// Those not changed since a moment: the settled part a checksum compares while the rest
    /// may still change.
    SettledBefore(&'a Since),
    /// Those changed since the first moment and not since the second.
    Between(&'a Since, &'a Since),
}

/// A moment on a source shard that later passes take the rows changed since.
///
/// On PostgreSQL it is exact: the transactions that had not committed by then (those still
/// running, and every later one). A row changed by one of them carries its id as `xmin`,
/// whichever instance wrote it and whatever its clock said; no other row does. Elsewhere
/// (SQLite) it is a time compared with the rows' change times, which the writing instances'
/// clocks set, so it is taken a margin (`moves.clock_margin`) early.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Since {
    /// The source's transactions not yet committed at the moment (64-bit ids).
    Transactions {
        /// The first id not yet assigned then: it and every later one.
        next: u64,
        /// The ids running then.
        running: Vec<u64>,
    },
    /// A change time (ms since the Unix epoch).
    Time(i64),
}

impl Since {
    /// Now on `shard`: the transactions not yet committed on PostgreSQL, else the clock less
    /// `margin`.
    pub async fn now(shard: FencedShard<'_>, margin: std::time::Duration) -> Result<Since, Error> {
        use crate::shard::OnShard;
        if shard.db().engine != Engine::Postgres {
            let margin = i64::try_from(margin.as_millis()).unwrap_or(i64::MAX);
            return Ok(Since::Time(crate::clock::now_ms().saturating_sub(margin)));
        }
        let snapshot: String = sqlx::query_scalar("SELECT CAST(pg_current_snapshot() AS text)")
            .fetch_one(shard.pool())
            .on_shard(&shard)
            .await?;
        Self::from_snapshot(&snapshot)
            .ok_or_else(|| Error::Corrupt(format!("shard {}: unreadable snapshot {snapshot:?}", shard.id())))
    }

    /// A PostgreSQL snapshot's text form, `xmin:xmax:running,...`.
    fn from_snapshot(text: &str) -> Option<Since> {
        let mut parts = text.split(':');
        let (_, next, running) = (parts.next()?, parts.next()?, parts.next()?);
        let running = running.split(',').filter(|id| !id.is_empty()).map(str::parse).collect::<Result<_, _>>();
        Some(Since::Transactions { next: next.parse().ok()?, running: running.ok()? })
    }

    /// The SQL condition "changed since": on the row's `xmin`, or on its change-time `column`.
    /// A row's `xmin` holds the low 32 bits of the transaction id, and PostgreSQL keeps every
    /// unfrozen one within 2^31 of the newest: "at least `next`" is "no older than it"
    /// (`age`, counted back from the statement's newest transaction, wraps the same way).
    fn condition(&self, column: &str) -> String {
        let xid = |id: &u64| format!("CAST('{}' AS xid)", id % (1 << 32));
        match self {
            Since::Transactions { next, running } => {
                let later = format!("age(xmin) <= age({})", xid(next));
                if running.is_empty() {
                    return later;
                }
                let running = running.iter().map(xid).collect::<Vec<_>>();
                format!("({later} OR xmin IN ({}))", running.join(", "))
            }
            Since::Time(ms) => format!("{column} >= {ms}"),
        }
    }
}

impl Pass<'_> {
    /// The `WHERE` condition of `table`'s rows this pass takes, values inlined (`COPY (query)`
    /// takes no parameters; every value is an integer or a quoted tenant id).
    fn condition(&self, table: &CopyTable) -> String {
        let selected = self.selection.inline_condition();
        let window = |column: &str| match self.window {
            Window::All => String::new(),
            Window::ChangedSince(since) => format!(" AND {}", since.condition(column)),
            Window::SettledBefore(since) => format!(" AND NOT ({})", since.condition(column)),
            Window::Between(since, until) => {
                format!(" AND {} AND NOT ({})", since.condition(column), until.condition(column))
            }
        };
        match table.rows {
            RowFilter::Changed(column) => format!("{selected}{}", window(column)),
            RowFilter::All => selected,
            RowFilter::LiveUploads => format!("{selected} AND state = 'live'{}", window("changed_at")),
            RowFilter::LiveUploadChunks => format!(
                "upload_id IN (SELECT upload_id FROM blob_uploads WHERE {selected} AND state = 'live'{})",
                window("changed_at")
            ),
        }
    }
}

/// A copy's speed limit: bytes per second, kept on average over the copy.
#[derive(Debug)]
pub struct Pace {
    bytes_per_second: u64,
    started: std::time::Instant,
    sent: std::sync::atomic::AtomicU64,
}

impl Pace {
    /// At most `bytes_per_second` (0: no limit).
    pub fn new(bytes_per_second: u64) -> Self {
        Self { bytes_per_second, started: std::time::Instant::now(), sent: std::sync::atomic::AtomicU64::new(0) }
    }

    /// Counts `bytes` sent and waits until sending them keeps to the rate.
    pub async fn take(&self, bytes: u64) {
        let sent = self.sent.fetch_add(bytes, std::sync::atomic::Ordering::Relaxed) + bytes;
        if self.bytes_per_second == 0 {
            return;
        }
        let due = std::time::Duration::from_secs_f64(sent as f64 / self.bytes_per_second as f64);
        let elapsed = self.started.elapsed();
        if due > elapsed {
            tokio::time::sleep(due - elapsed).await;
        }
    }
}

/// Which rows a copy takes: every table copied this way has a `tenant` and a `vshard` column.
#[derive(Debug, Clone, Copy)]
pub enum Selection<'a> {
    /// The rows of one tenant.
    Tenant(&'a TenantId),
    /// The rows placed on these vshards; none selects nothing.
    Vshards(&'a [u32]),
    /// The rows of these tenants placed on these vshards: the unpinned tenants a vshard move
    /// takes (tenants pinned to the shard keep their rows, tagged with the same vshards, there).
    Tenants {
        /// The vshards.
        vshards: &'a [u32],
        /// The tenants; none selects nothing.
        tenants: &'a [TenantId],
    },
    /// The records of one key range of a range-distributed collection (`spread_records` rows
    /// tagged vshard -1).
    Range(KeyRange<'a>),
    /// The records of one collection of one tenant, in the table of its layout, that a shard
    /// holds for that layout (a collection changing its distribution).
    Collection {
        /// The tenant.
        tenant: &'a TenantId,
        /// The collection.
        collection: &'a CollectionName,
        /// Which of them the shard holds.
        owned: Owned<'a>,
    },
}

/// Which rows of a collection a shard holds in its layout.
#[derive(Debug, Clone, Copy)]
pub enum Owned<'a> {
    /// All of them (its tenant's home shard; a table the collection's old rows were removed
    /// from).
    All,
    /// Those placed by these vshards (a hash distribution).
    Vshards(&'a [u32]),
    /// Those with keys in these intervals, each from its first key up to its second (excluded;
    /// `None`: to the end): a range distribution.
    Keys(&'a [(String, Option<String>)]),
}

impl Selection<'_> {
    /// The condition as SQL with the value inlined (`COPY (query)` takes no parameters).
    pub(crate) fn inline_condition(&self) -> String {
        match self {
            Selection::Tenant(tenant) => format!("tenant = {}", sql_string(tenant.as_str())),
            Selection::Vshards(vshards) => vshard_condition(vshards),
            Selection::Tenants { vshards, tenants: [] } => format!("{} AND 1 = 0", vshard_condition(vshards)),
            Selection::Tenants { vshards, tenants } => {
                let list = tenants.iter().map(|t| sql_string(t.as_str())).collect::<Vec<_>>().join(", ");
                format!("{} AND tenant IN ({list})", vshard_condition(vshards))
            }
            Selection::Range(range) => {
                let until = range.until.map(|until| format!(" AND key < {}", sql_string(until))).unwrap_or_default();
                format!(
                    "tenant = {} AND collection = {} AND vshard = -1 AND key >= {}{until}",
                    sql_string(range.tenant.as_str()),
                    sql_string(range.collection.as_str()),
                    sql_string(range.from)
                )
            }
            Selection::Collection { tenant, collection, owned } => {
                let rows = format!(
                    "tenant = {} AND collection = {}",
                    sql_string(tenant.as_str()),
                    sql_string(collection.as_str())
                );
                match owned {
                    Owned::All => rows,
                    Owned::Vshards(vshards) => format!("{rows} AND {}", vshard_condition(vshards)),
                    Owned::Keys([]) => format!("{rows} AND 1 = 0"),
                    Owned::Keys(intervals) => {
                        let keys = intervals
                            .iter()
                            .map(|(from, until)| match until {
                                Some(until) => format!("(key >= {} AND key < {})", sql_string(from), sql_string(until)),
                                None => format!("key >= {}", sql_string(from)),
                            })
                            .collect::<Vec<_>>();
                        format!("{rows} AND ({})", keys.join(" OR "))
                    }
                }
            }
        }
    }
}

impl<'a> From<MoveSubject<'a>> for Selection<'a> {
    /// The rows of the tenants' home data a move of `subject` copies.
    fn from(subject: MoveSubject<'a>) -> Self {
        match subject {
            MoveSubject::Tenant(tenant) => Selection::Tenant(tenant),
            MoveSubject::Vshards { vshards, tenants } => Selection::Tenants { vshards, tenants },
            MoveSubject::Range(range) => Selection::Range(range),
        }
    }
}

/// `vshard IN (...)`, or a condition no row meets for no vshard.
fn vshard_condition(vshards: &[u32]) -> String {
    if vshards.is_empty() {
        return "1 = 0".to_owned();
    }
    let list = vshards.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
    format!("vshard IN ({list})")
}

/// `text` as an SQL string literal. Tenant ids and collection names hold no quote
/// ([`TenantId::parse`]); a key may, and a quote is doubled, so the literal cannot end early.
fn sql_string(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// How a copy moves its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CopyMethod {
    /// Binary `COPY` from PostgreSQL to PostgreSQL.
    Binary,
    /// Pages of rows through the engine-neutral pool, on any engines.
    Pages,
}

impl CopyMethod {
    /// The fastest method the two databases allow: [`CopyMethod::Binary`] between two
    /// PostgreSQL databases, else [`CopyMethod::Pages`].
    pub fn best(source: &Database, target: &Database) -> Self {
        if source.postgres().is_some() && target.postgres().is_some() { Self::Binary } else { Self::Pages }
    }
}

/// What a copy did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Copied {
    /// The method that ran (a binary copy asked of a SQLite shard runs in pages).
    pub method: CopyMethod,
    /// Rows read from the source.
    pub read: u64,
    /// Rows the target took (new keys, and keys whose version was older there).
    pub written: u64,
    /// Bytes read from the source (the binary stream, or the values of the pages).
    pub bytes: u64,
}

/// Copies the rows of `table` that `selection` takes from `source` to `target` (see the module
/// documentation), with `method` if both databases allow it, else in pages.
pub async fn copy_rows(
    table: &CopyTable,
    source: FencedShard<'_>,
    target: FencedShard<'_>,
    pass: &Pass<'_>,
    method: CopyMethod,
) -> Result<Copied, Error> {
    copy_where(table, (source, target), &Rows { condition: pass.condition(table), pace: pass.pace }, method).await
}

/// The rows of a table a copy takes: a `WHERE` condition, values inlined, and the pace to keep.
struct Rows<'a> {
    condition: String,
    pace: Option<&'a Pace>,
}

/// [`copy_rows`] of the rows `rows` takes.
async fn copy_where(
    table: &CopyTable,
    (source, target): (FencedShard<'_>, FencedShard<'_>),
    rows: &Rows<'_>,
    method: CopyMethod,
) -> Result<Copied, Error> {
    match (method, source.db().postgres(), target.db().postgres()) {
        (CopyMethod::Binary, Some(from), Some(to)) => {
            let copied = copy_binary(table, (source, from), (target, to), rows, Landing::Staged).await?;
            Ok(copied.expect("a staged copy merges every conflict"))
        }
        _ => copy_pages(table, source, target, rows).await,
    }
}

/// [`copy_where`] into a target that holds none of the rows `rows` takes (a move's first copy,
/// after it removed them there: [`copy_batch`]). Between PostgreSQL shards the rows then go
/// straight into the table, without the staging table and the merge: about half the target's
/// work, and what a copy costs the shards' other traffic most. Should one be there after all (a
/// unique violation), that copy is undone and the rows are copied the usual way.
async fn copy_where_into_empty(
    table: &CopyTable,
    (source, target): (FencedShard<'_>, FencedShard<'_>),
    rows: &Rows<'_>,
    method: CopyMethod,
) -> Result<Copied, Error> {
    if let (CopyMethod::Binary, Some(from), Some(to)) = (method, source.db().postgres(), target.db().postgres())
        && let Some(copied) = copy_binary(table, (source, from), (target, to), rows, Landing::Table).await?
    {
        return Ok(copied);
    }
    copy_where(table, (source, target), rows, method).await
}

/// One value of a row's primary key, as a resumable copy remembers where it stands.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum KeyValue {
    /// An integer column.
    Int(i64),
    /// A text column.
    Text(String),
}

/// The primary key of a row of a [`CopyTable`], its columns in [`CopyTable::key`] order.
pub type RowKey = Vec<KeyValue>;

/// What one batch of [`copy_batch`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// What the copy did.
    pub copied: Copied,
    /// The key of the batch's last row, the next batch starting after it; `None` when the
    /// batch took every row left.
    pub last: Option<RowKey>,
}

/// One batch of a move's first, resumable copy: the rows of `table` that `pass` takes whose
/// keys come after `after` (from the first with `None`), in key order, as many as make about
/// `batch_bytes` ([`CopyTable::row_bytes`] each), copied as [`copy_where_into_empty`] does (the target holds none of them,
/// unless a batch committed just before the instance copying it stopped: then they merge).
/// Each batch commits on the target on its own; the caller stores [`Batch::last`] and a copy
/// taken over resumes after it, never from the start.
pub async fn copy_batch(
    table: &CopyTable,
    (source, target): (FencedShard<'_>, FencedShard<'_>),
    pass: &Pass<'_>,
    after: Option<&RowKey>,
    batch_bytes: u64,
    method: CopyMethod,
) -> Result<Batch, Error> {
    let mut condition = pass.condition(table);
    if let Some(after) = after {
        condition = format!("{condition} AND ({}) > ({})", table.key.join(", "), inline_key(table, after)?);
    }
    let rows = (batch_bytes / table.row_bytes.max(1)).max(1);
    let last = batch_end(table, source, &condition, rows).await?;
    if let Some(last) = &last {
        condition = format!("{condition} AND ({}) <= ({})", table.key.join(", "), inline_key(table, last)?);
    }
    let copied = copy_where_into_empty(table, (source, target), &Rows { condition, pace: pass.pace }, method).await?;
    Ok(Batch { copied, last })
}

/// The key of the `rows`-th row meeting `condition` in key order; `None` when fewer rows meet
/// it (the batch takes them all).
async fn batch_end(
    table: &CopyTable,
    source: FencedShard<'_>,
    condition: &str,
    rows: u64,
) -> Result<Option<RowKey>, Error> {
    let key = table.key.join(", ");
    let sql = format!("SELECT {key} FROM {} WHERE {condition} ORDER BY {key} LIMIT 1 OFFSET {}", table.name, rows - 1);
    let row = sqlx::query(&sql).fetch_optional(source.pool()).await.map_err(|e| source.err(e))?;
    let Some(row) = row else { return Ok(None) };
    let kinds = key_positions(table).into_iter().map(|i| table.columns[i].1);
    let values = kinds
        .enumerate()
        .map(|(i, kind)| match kind {
            ColumnKind::Int => row.try_get(i).map(KeyValue::Int),
            _ => row.try_get(i).map(KeyValue::Text),
        })
        .collect::<Result<RowKey, _>>()
        .map_err(|e| source.err(e))?;
    Ok(Some(values))
}

/// `key` as SQL literals, in the order of `table`'s key (a `COPY` takes no parameters).
fn inline_key(table: &CopyTable, key: &RowKey) -> Result<String, Error> {
    if key.len() != table.key.len() {
        return Err(Error::Corrupt(format!("a copy's place in {} has {} key values", table.name, key.len())));
    }
    Ok(key
        .iter()
        .map(|value| match value {
            KeyValue::Int(n) => n.to_string(),
            KeyValue::Text(text) => sql_string(text),
        })
        .collect::<Vec<_>>()
        .join(", "))
}

/// Where a binary copy writes the rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Landing {
    /// A staging table, merged into the table (a row replaces only an older version).
    Staged,
    /// The table itself, which must hold none of the rows' keys.
    Table,
}

/// Which rows of the target with the same key a merged row replaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Replace {
    /// Those of an older version.
    Older,
    /// Those of the same or an older version.
    SameOrOlder,
}

/// `INSERT INTO t (columns) <rows> ON CONFLICT (key) DO UPDATE SET ... WHERE t.version <
/// excluded.version` (`<=` for [`Replace::SameOrOlder`]): the merge every copy ends with.
fn merge_sql(table: &CopyTable, rows: &str, replace: Replace) -> String {
    let columns = column_list(table);
    let key = table.key.join(", ");
    let updates = table
        .columns
        .iter()
        .filter(|(name, _)| !table.key.contains(name))
        .map(|(name, _)| format!("{name} = excluded.{name}"))
        .collect::<Vec<_>>()
        .join(", ");
    let name = table.name;
    match table.version {
        Some(version) => format!(
            "INSERT INTO {name} ({columns}) {rows} ON CONFLICT ({key}) DO UPDATE SET {updates} \
             WHERE {name}.{version} {} excluded.{version}",
            if replace == Replace::Older { "<" } else { "<=" }
        ),
        None => format!("INSERT INTO {name} ({columns}) {rows} ON CONFLICT ({key}) DO NOTHING"),
    }
}

fn column_list(table: &CopyTable) -> String {
    table.columns.iter().map(|(name, _)| *name).collect::<Vec<_>>().join(", ")
}

/// The binary method: the source's `COPY TO` bytes go, undecoded, into the target's `COPY FROM`.
/// After a failure either connection may be mid-protocol (sqlx leaves a failed `COPY` start
/// unread), so both are closed rather than returned to their pools.
async fn copy_binary(
    table: &CopyTable,
    (source, from): (FencedShard<'_>, &PgPool),
    (target, to): (FencedShard<'_>, &PgPool),
    rows: &Rows<'_>,
    into: Landing,
) -> Result<Option<Copied>, Error> {
    let writer = to.acquire().await.map_err(|e| target.err(e))?;
    let reader = from.acquire().await.map_err(|e| source.err(e))?;
    let mut ends = CopyEnds { reader, writer, clean: false };
    let copied = pump(table, (source, &mut ends.reader), (target, &mut ends.writer), rows, into).await;
    ends.clean = matches!(copied, Ok(Some(_)));
    copied
}

/// The two connections of a binary copy. Unless the copy ended cleanly (it failed, or its
/// future was dropped: its job lost its lease), both are closed rather than returned to their
/// pools: either may be mid-protocol, and closing them ends their statements on the servers at
/// once (a `COPY TO` writing into a closed socket fails, a `COPY FROM` reading from one rolls
/// back), where a connection returned to its pool would first read the rest of the copy.
struct CopyEnds {
    reader: sqlx::pool::PoolConnection<sqlx::Postgres>,
    writer: sqlx::pool::PoolConnection<sqlx::Postgres>,
    clean: bool,
}

impl Drop for CopyEnds {
    fn drop(&mut self) {
        if !self.clean {
            self.reader.close_on_drop();
            self.writer.close_on_drop();
        }
    }
}

/// Whether `e` is a unique violation: a key the target already holds.
fn is_unique_violation(e: &sqlx::Error) -> bool {
    e.as_database_error().and_then(|db| db.code()).as_deref() == Some("23505")
}

async fn pump(
    table: &CopyTable,
    (source, reader): (FencedShard<'_>, &mut PgConnection),
    (target, writer): (FencedShard<'_>, &mut PgConnection),
    rows: &Rows<'_>,
    into: Landing,
) -> Result<Option<Copied>, Error> {
    use futures::TryStreamExt;
    use sqlx::Connection;

    let columns = column_list(table);
    let name = table.name;
    let incoming = match into {
        Landing::Staged => format!("sg_copy_{name}"),
        Landing::Table => name.to_owned(),
    };
    let mut tx = writer.begin().await.map_err(|e| target.err(e))?;
    if into == Landing::Staged {
        // Dropped at commit, and with the transaction if it fails: nothing is left behind.
        sqlx::query(&format!("CREATE TEMPORARY TABLE {incoming} (LIKE {name} INCLUDING DEFAULTS) ON COMMIT DROP"))
            .execute(&mut *tx)
            .await
            .map_err(|e| target.err(e))?;
    }
    let mut sink = tx
        .copy_in_raw(&format!("COPY {incoming} ({columns}) FROM STDIN (FORMAT binary)"))
        .await
        .map_err(|e| target.err(e))?;
    let query = format!("COPY (SELECT {columns} FROM {name} WHERE {}) TO STDOUT (FORMAT binary)", rows.condition);
    let mut total = 0u64;
    // A unique violation into the table itself: `None`, the transaction rolls back.
    let conflict =
        |e: sqlx::Error| if into == Landing::Table && is_unique_violation(&e) { None } else { Some(target.err(e)) };
    let pumped: Result<Option<()>, Error> = async {
        let mut bytes = reader.copy_out_raw(&query).await.map_err(|e| source.err(e))?;
        while let Some(data) = bytes.try_next().await.map_err(|e| source.err(e))? {
            let len = data.len() as u64;
            total += len;
            if let Err(e) = sink.send(data).await {
                return conflict(e).map_or(Ok(None), Err);
            }
            if let Some(pace) = rows.pace {
                pace.take(len).await;
            }
        }
        Ok(Some(()))
    }
    .await;
    match pumped {
        Ok(Some(())) => {}
        Ok(None) => return Ok(None),
        Err(e) => {
            // Ends the target's COPY; the transaction then rolls back when dropped.
            let _ = sink.abort("the source of the copy failed").await;
            return Err(e);
        }
    }
    let read = match sink.finish().await {
        Ok(read) => read,
        Err(e) => return conflict(e).map_or(Ok(None), Err),
    };
    if into == Landing::Table {
        tx.commit().await.map_err(|e| target.err(e))?;
        return Ok(Some(Copied { method: CopyMethod::Binary, read, written: read, bytes: total }));
    }
    let merged = sqlx::query(&merge_sql(table, &format!("SELECT {columns} FROM {incoming}"), Replace::Older))
        .execute(&mut *tx)
        .await
        .map_err(|e| target.err(e))?;
    tx.commit().await.map_err(|e| target.err(e))?;
    Ok(Some(Copied { method: CopyMethod::Binary, read, written: merged.rows_affected(), bytes: total }))
}

/// One value read from a page.
#[derive(Debug, Clone)]
enum Value {
    Text(String),
    OptText(Option<String>),
    Int(i64),
    Bytes(Vec<u8>),
}

impl Value {
    /// Bytes it holds (for the pace and the progress).
    fn len(&self) -> u64 {
        match self {
            Value::Text(text) | Value::OptText(Some(text)) => text.len() as u64,
            Value::OptText(None) => 0,
            Value::Int(_) => 8,
            Value::Bytes(bytes) => bytes.len() as u64,
        }
    }

    /// Feeds the value, tagged and length-prefixed, to a checksum.
    fn digest(&self, hash: &mut sha2::Sha256) {
        use sha2::Digest;
        let (tag, bytes): (u8, &[u8]) = match self {
            Value::Text(text) | Value::OptText(Some(text)) => (b't', text.as_bytes()),
            Value::OptText(None) => (b'n', &[]),
            Value::Int(n) => {
                hash.update([b'i']);
                hash.update(n.to_be_bytes());
                return;
            }
            Value::Bytes(bytes) => (b'b', bytes),
        };
        hash.update([tag]);
        hash.update((bytes.len() as u64).to_be_bytes());
        hash.update(bytes);
    }
}

/// The page method: key-ordered pages through the engine-neutral pools.
async fn copy_pages(
    table: &CopyTable,
    source: FencedShard<'_>,
    target: FencedShard<'_>,
    rows: &Rows<'_>,
) -> Result<Copied, Error> {
    let mut copied = Copied { method: CopyMethod::Pages, read: 0, written: 0, bytes: 0 };
    let mut pages = Pages::new(table, &rows.condition);
    while let Some(values) = pages.next(source).await? {
        let (written, bytes) = merge_page(table, target, &values).await?;
        copied.read += values.len() as u64;
        copied.written += written;
        copied.bytes += bytes;
        if let Some(pace) = rows.pace {
            pace.take(bytes).await;
        }
    }
    Ok(copied)
}

/// The rows of a table that a condition takes, read in key order, one page at a time.
struct Pages<'t> {
    table: &'t CopyTable,
    first_page: String,
    next_page: String,
    key_positions: Vec<usize>,
    last_key: Option<Vec<Value>>,
    done: bool,
}

impl<'t> Pages<'t> {
    fn new(table: &'t CopyTable, condition: &str) -> Self {
        let columns = column_list(table);
        let key = table.key.join(", ");
        let after = (1..=table.key.len()).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ");
        let (name, rows) = (table.name, table.page_rows);
        Self {
            table,
            first_page: format!("SELECT {columns} FROM {name} WHERE {condition} ORDER BY {key} LIMIT {rows}"),
            next_page: format!(
                "SELECT {columns} FROM {name} WHERE {condition} AND ({key}) > ({after}) ORDER BY {key} LIMIT {rows}"
            ),
            key_positions: key_positions(table),
            last_key: None,
            done: false,
        }
    }

    /// The next page, `None` after the last.
    async fn next(&mut self, source: FencedShard<'_>) -> Result<Option<Vec<Vec<Value>>>, Error> {
        if self.done {
            return Ok(None);
        }
        let sql = if self.last_key.is_some() { &self.next_page } else { &self.first_page };
        let mut query = sqlx::query(sql);
        for value in self.last_key.iter().flatten() {
            query = bind(query, value);
        }
        let rows = query.fetch_all(source.pool()).await.map_err(|e| source.err(e))?;
        let values = rows
            .iter()
            .map(|row| read_row(self.table, row))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| source.err(e))?;
        self.done = values.len() < self.table.page_rows;
        if let Some(last) = values.last() {
            self.last_key = Some(self.key_positions.iter().map(|&i| last[i].clone()).collect());
        }
        Ok((!values.is_empty()).then_some(values))
    }
}

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

/// Deletes the rows of `table` that `selection` takes from `shard`, in one statement (for tables
/// whose selections stay small, such as the index entries of one vshard); returns how many.
pub async fn purge_rows(table: &CopyTable, shard: &FencedShard<'_>, selection: Selection<'_>) -> Result<u64, Error> {
    use crate::shard::OnShard;
    let sql = format!("DELETE FROM {} WHERE {}", table.name, selection.inline_condition());
    let done = sqlx::query(&sql).execute(shard.pool()).on_shard(shard).await?;
    Ok(done.rows_affected())
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

/// Copies the rows of a collection that `pass` takes from `from` on `source` into `into` (a
/// table with the same columns) on `targets`, each row to the target `place` picks for its key
/// (its index in `targets`) with the vshard tag `place` gives it: a collection changing its
/// distribution, whose rows change table and shard. Pages of rows in key order, each row
/// merged as [`copy_rows`] merges (a newer version on the target stays), at `pass`'s pace.
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
fn row_hash(row: &[Value], kept: &[usize]) -> i128 {
    use sha2::Digest;
    let mut hash = sha2::Sha256::new();
    kept.iter().for_each(|&i| row[i].digest(&mut hash));
    let digest: [u8; 32] = hash.finalize().into();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    i128::from(i64::from_be_bytes(first))
}

/// Under a fence on `source` (its rows no longer change), copies the rows of a collection that
/// `selection` takes and that changed since `since` from `from` into `into` on `targets`, each
/// to the target `place` picks with the tag it gives (as [`copy_placed`]), and compares them
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
    use crate::shard::OnShard;
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

/// The columns an [`additive_checksum`] covers: all but the vshard tag.
fn additive_columns(table: &CopyTable) -> Vec<usize> {
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
            let list = keys.iter().map(|key| sql_string(key)).collect::<Vec<_>>().join(", ");
            condition.push_str(&format!(" AND key {}IN ({list})", if inside { "" } else { "NOT " }));
        }
    }
    additive_where(table, target, &condition, in_postgres).await
}

/// Rows merged per statement when a page is split between targets ([`in_chunks`]).
const CHUNK_ROWS: usize = 64;

/// `rows` in chunks of [`CHUNK_ROWS`], the rest in chunks of descending powers of two: a
/// statement per chunk, of a handful of shapes whatever the number of rows. Each shape is
/// prepared once per connection, and the merges of a page split between targets (any number
/// of rows each) do not fill the shard pool's statement caches, shared with the requests, with
/// statements used once.
fn in_chunks<T>(rows: &[T]) -> impl Iterator<Item = &[T]> {
    let mut rest = rows;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let size = if rest.len() >= CHUNK_ROWS { CHUNK_ROWS } else { 1 << rest.len().ilog2() };
        let (chunk, tail) = rest.split_at(size);
        rest = tail;
        Some(chunk)
    })
}

/// `rows` of `table` by the target `place` picks for each key (its index among `targets`
/// targets), each with the vshard tag `place` gives it.
fn placed_rows(
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
    (source, target): (FencedShard<'_>, FencedShard<'_>),
    selection: Selection<'_>,
    since: &Since,
    part: Part<'_>,
) -> Result<Option<(Checksum, Checksum)>, Error> {
    let selected = selection.inline_condition();
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
    let ours_condition = Pass { selection, window, pace: None }.condition(table);
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
    let mut theirs_condition = Pass { selection, window: Window::All, pace: None }.condition(table);
    let mut tuples = Vec::with_capacity(keys.len());
    for row in &keys {
        let changed_later: i64 = row.try_get(width).map_err(|e| source.err(e))?;
        if changed_later == 1 {
            continue;
        }
        let values = (0..width)
            .map(|i| row.try_get::<String, _>(i).map(|v| sql_string(&v)))
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
    use crate::shard::OnShard;
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

/// Where `table`'s key columns are among its columns.
fn key_positions(table: &CopyTable) -> Vec<usize> {
    table
        .key
        .iter()
        .map(|k| table.columns.iter().position(|(name, _)| name == k).expect("a key column is a column"))
        .collect()
}

/// Merges one page of rows into `table` on `target`; how many it took, and their bytes.
async fn merge_page(table: &CopyTable, target: FencedShard<'_>, values: &[Vec<Value>]) -> Result<(u64, u64), Error> {
    let merge = merge_sql(table, &values_placeholders(table, values.len()), Replace::Older);
    let mut insert = sqlx::query(&merge);
    for value in values.iter().flatten() {
        insert = bind(insert, value);
    }
    let merged = insert.execute(target.pool()).await.map_err(|e| target.err(e))?;
    Ok((merged.rows_affected(), values.iter().flatten().map(Value::len).sum()))
}

/// `VALUES ($1, ...), ...`: `rows` rows of `table`'s columns as parameters.
fn values_placeholders(table: &CopyTable, rows: usize) -> String {
    let width = table.columns.len();
    let tuple = |row: usize| (1..=width).map(|i| format!("${}", row * width + i)).collect::<Vec<_>>().join(", ");
    format!("VALUES {}", (0..rows).map(|row| format!("({})", tuple(row))).collect::<Vec<_>>().join(", "))
}

/// The [`Checksum`] of rows in any order: SHA-256 over their own SHA-256s, sorted.
fn digest_rows(rows: &[Vec<Value>]) -> Checksum {
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

fn read_row(table: &CopyTable, row: &AnyRow) -> Result<Vec<Value>, sqlx::Error> {
    table
        .columns
        .iter()
        .enumerate()
        .map(|(i, (_, kind))| {
            Ok(match kind {
                ColumnKind::Text => Value::Text(row.try_get(i)?),
                ColumnKind::OptText => Value::OptText(row.try_get(i)?),
                ColumnKind::Int => Value::Int(row.try_get(i)?),
                ColumnKind::Bytes => Value::Bytes(row.try_get(i)?),
            })
        })
        .collect()
}

type AnyQuery<'q> = sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>;

fn bind<'q>(query: AnyQuery<'q>, value: &'q Value) -> AnyQuery<'q> {
    match value {
        Value::Text(text) => query.bind(text.as_str()),
        Value::OptText(text) => query.bind(text.as_deref()),
        Value::Int(n) => query.bind(*n),
        Value::Bytes(bytes) => query.bind(bytes.as_slice()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_merge_keeps_the_newer_version() {
        let sql = merge_sql(&RECORDS, "VALUES ($1)", Replace::Older);
        assert!(
            merge_sql(&BLOB_CHUNKS, "VALUES ($1)", Replace::Older).ends_with("ON CONFLICT (upload_id, seq) DO NOTHING")
        );
        assert!(sql.contains("ON CONFLICT (tenant, collection, key) DO UPDATE SET vshard = excluded.vshard"), "{sql}");
        assert!(sql.ends_with("WHERE records.version < excluded.version"), "{sql}");
        assert!(!sql.contains("tenant = excluded"), "key columns are not updated: {sql}");
    }

    #[test]
    fn an_inlined_string_cannot_close_its_quote() {
        assert_eq!(sql_string("o'brien'); DROP TABLE records; --"), "'o''brien''); DROP TABLE records; --'");
        let tenant = TenantId::parse("acme").unwrap();
        assert_eq!(Selection::Tenant(&tenant).inline_condition(), "tenant = 'acme'");
        assert_eq!(Selection::Vshards(&[7, 9]).inline_condition(), "vshard IN (7, 9)");
        assert_eq!(Selection::Vshards(&[]).inline_condition(), "1 = 0");
        let two = [tenant.clone(), TenantId::parse("beta").unwrap()];
        assert_eq!(
            Selection::Tenants { vshards: &[7], tenants: &two }.inline_condition(),
            "vshard IN (7) AND tenant IN ('acme', 'beta')"
        );
        assert_eq!(Selection::Tenants { vshards: &[7], tenants: &[] }.inline_condition(), "vshard IN (7) AND 1 = 0");
        let collection = crate::ids::CollectionName::parse("events").unwrap();
        let range = KeyRange { tenant: &tenant, collection: &collection, from: "it's", until: Some("m") };
        assert_eq!(
            Selection::Range(range).inline_condition(),
            "tenant = 'acme' AND collection = 'events' AND vshard = -1 AND key >= 'it''s' AND key < 'm'"
        );
        let all =
            Pass { selection: Selection::Vshards(&[7]), window: Window::SettledBefore(&Since::Time(50)), pace: None };
        assert_eq!(all.condition(&INDEX_ENTRIES), "vshard IN (7)", "entries are always copied whole");
        let pass =
            Pass { selection: Selection::Tenant(&tenant), window: Window::ChangedSince(&Since::Time(42)), pace: None };
        assert_eq!(pass.condition(&RECORDS), "tenant = 'acme' AND updated_at >= 42");
        let settled = Pass { window: Window::SettledBefore(&Since::Time(42)), ..pass };
        assert_eq!(settled.condition(&RECORDS), "tenant = 'acme' AND NOT (updated_at >= 42)");
        assert_eq!(
            pass.condition(&BLOB_CHUNKS),
            "upload_id IN (SELECT upload_id FROM blob_uploads WHERE tenant = 'acme' AND state = 'live' AND changed_at >= 42)"
        );
    }

    #[test]
    fn a_collection_selection_takes_the_rows_its_shard_holds_in_its_layout() {
        let tenant = TenantId::parse("acme").unwrap();
        let collection = CollectionName::parse("events").unwrap();
        let select =
            |owned| Selection::Collection { tenant: &tenant, collection: &collection, owned }.inline_condition();
        assert_eq!(select(Owned::All), "tenant = 'acme' AND collection = 'events'");
        assert_eq!(select(Owned::Vshards(&[3, 4])), "tenant = 'acme' AND collection = 'events' AND vshard IN (3, 4)");
        assert_eq!(select(Owned::Vshards(&[])), "tenant = 'acme' AND collection = 'events' AND 1 = 0");
        let intervals = [("".to_owned(), Some("f".to_owned())), ("o'k".to_owned(), None)];
        assert_eq!(
            select(Owned::Keys(&intervals)),
            "tenant = 'acme' AND collection = 'events' AND ((key >= '' AND key < 'f') OR key >= 'o''k')"
        );
        assert_eq!(select(Owned::Keys(&[])), "tenant = 'acme' AND collection = 'events' AND 1 = 0");
    }

    #[test]
    fn rows_split_between_targets_merge_in_a_handful_of_statement_shapes() {
        let sizes = |n: usize| in_chunks(&vec![0u8; n]).map(<[u8]>::len).collect::<Vec<_>>();
        assert_eq!(sizes(0), Vec::<usize>::new());
        assert_eq!(sizes(1), [1]);
        assert_eq!(sizes(150), [64, 64, 16, 4, 2]);
        assert_eq!(sizes(63), [32, 16, 8, 4, 2, 1]);
        let mut shapes = std::collections::BTreeSet::new();
        for n in 0..=500 {
            let chunks = sizes(n);
            assert_eq!(chunks.iter().sum::<usize>(), n);
            shapes.extend(chunks);
        }
        assert_eq!(shapes.into_iter().collect::<Vec<_>>(), [1, 2, 4, 8, 16, 32, 64]);
    }

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

    #[test]
    fn a_snapshot_moment_takes_the_transactions_running_then_and_every_later_one() {
        // 2^32 + 10 and later, and the two running: the rows' xmin holds the low 32 bits.
        let since = Since::from_snapshot("4294967290:4294967306:4294967290,4294967295").unwrap();
        assert_eq!(since, Since::Transactions { next: 4_294_967_306, running: vec![4_294_967_290, 4_294_967_295] });
        assert_eq!(
            since.condition("updated_at"),
            "(age(xmin) <= age(CAST('10' AS xid)) OR xmin IN (CAST('4294967290' AS xid), CAST('4294967295' AS xid)))"
        );
        let quiet = Since::from_snapshot("700:700:").unwrap();
        assert_eq!(quiet.condition("x"), "age(xmin) <= age(CAST('700' AS xid))");
        assert_eq!(Since::from_snapshot("nonsense"), None);
        assert_eq!(Since::Time(42).condition("changed_at"), "changed_at >= 42");
    }
}
