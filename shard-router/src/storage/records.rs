//! Records on a shard: read, conditional write, tombstoning delete, ordered listing.
//!
//! Writes are compare-and-swap on the record's version, one statement each, so they behave the
//! same on SQLite and PostgreSQL without explicit transactions: read the current version, check
//! the client's precondition against it, then write only if the version is still the one read
//! (retrying from the read when another writer got there first). Deleted records stay as
//! tombstones so that a key's version never goes backwards, even across delete and re-create.

use serde_json::value::RawValue;
use sqlx::Row;

use crate::error::Error;
use crate::ids::{CollectionName, RecordKey, TenantId};
use std::sync::LazyLock;

use crate::map::{Route, Strategy};
use crate::storage::batch::{BatchOutcome, BatchReply, Batcher, RowKey, RowRead, RowSwap, RowWrite, Swap, Written};
use crate::storage::db::{Database, Engine};
use crate::storage::meter::Sample;
use crate::storage::shard::{FenceLayout, FencedShard, OnShard, ShardStore};
use crate::storage::sql_comment::traced;

/// Where a record store keeps its records, and which fences guard them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `records`: tenants' home data (collections distributed `tenant`), guarded by the
    /// tenant's fence while the tenant moves.
    Home,
    /// `spread_records`, placed by this vshard, the one the key hashes to (collections
    /// distributed `hash`), guarded by the vshard's fence while it moves.
    Hash(u32),
    /// `spread_records`, placed by key range (collections distributed `range`), tagged vshard -1.
    Range,
}

impl Layout {
    /// The layout of the records `route` places.
    pub fn of(route: &Route) -> Self {
        match route.strategy {
            Strategy::Lookup | Strategy::Hash => Layout::Home,
            Strategy::RecordHash => Layout::Hash(route.vshard),
            Strategy::Range => Layout::Range,
        }
    }

    /// The rows of this layout as a collection fence names them.
    pub fn fenced_as(self) -> FenceLayout {
        match self {
            Layout::Home => FenceLayout::Home,
            Layout::Hash(_) | Layout::Range => FenceLayout::Spread,
        }
    }

    /// Its table's place in [`crate::storage::batch::Batches`]: `records`, then `spread_records`.
    fn table_index(self) -> usize {
        match self {
            Layout::Home => 0,
            Layout::Hash(_) | Layout::Range => 1,
        }
    }

    fn statements(self) -> &'static Statements {
        match self {
            Layout::Home => &HOME,
            Layout::Hash(_) | Layout::Range => &SPREAD,
        }
    }
}

/// The statements of one table. Parameters are documented on the templates below.
struct Statements {
    insert_or_nothing: String,
    insert_or_update: String,
    read: String,
    update: String,
    delete: String,
    delete_version: String,
    list: String,
    count_live: String,
    purge_tenant: String,
    count_collection: String,
    purge_collection: String,
    /// The batch of unconditional writes ([`crate::storage::batch`]): `$1` the writes as a JSON
    /// array of [`RowWrite`], each key once. Returns each written row's tenant, collection, key,
    /// version and the version it last became live at; a write a fence refused returns no row.
    /// SQLite's, then PostgreSQL's.
    batch_write: [String; 2],
    /// The batch of point reads: `$1` the addresses as a JSON array of [`RowKey`]. Returns the
    /// tenant and collection, then the columns of `read`, of each row found.
    batch_read: [String; 2],
    /// The batch of compare-and-swap writes ([`RowSwap`], each key once): first the inserts
    /// ([`Swap::Insert`]), then the updates and tombstones (the other kinds), each returning the
    /// tenant, collection, key and new version of every row it changed.
    batch_swap: [[String; 2]; 2],
}

/// The statement prefix that makes the JSON array `$1` the table `u` with `columns` (name and
/// PostgreSQL type) on SQLite, then on PostgreSQL.
fn json_rows(columns: &[(&str, &str)]) -> [String; 2] {
    let sqlite: Vec<String> = columns.iter().map(|(n, _)| format!("json_extract(j.value, '$.{n}') AS {n}")).collect();
    let postgres: Vec<String> = columns.iter().map(|(n, t)| format!("{n} {t}")).collect();
    [
        format!("WITH u AS (SELECT {} FROM json_each($1) AS j)", sqlite.join(", ")),
        format!("WITH u AS (SELECT * FROM json_to_recordset($1::json) AS j({}))", postgres.join(", ")),
    ]
}

/// The home table's statements: writes are refused while the tenant is fenced (`$T` is the
/// tenant's parameter) or its collection's home rows are (the collection changes its
/// distribution), reads once either has moved away.
static HOME: LazyLock<Statements> = LazyLock::new(|| {
    Statements::new(
        "records",
        "NOT EXISTS (SELECT 1 FROM tenant_fences WHERE tenant = $T) AND NOT EXISTS (SELECT 1 FROM collection_fences c \
         WHERE c.tenant = $T AND c.collection = $C AND c.layout = 'home')",
        "NOT EXISTS (SELECT 1 FROM tenant_fences WHERE tenant = $1 AND state = 'moved') AND NOT EXISTS \
         (SELECT 1 FROM collection_fences c WHERE c.tenant = $1 AND c.collection = $2 AND c.layout = 'home' \
         AND c.state = 'moved')",
    )
});

/// The distributed collections' statements: a row's own vshard fence guards it (range-placed
/// rows, tagged -1, have none; their key range's fence does), and so does its collection's
/// fence over spread rows (the collection changes its distribution).
///
/// A read's vshard and collection fences are `NOT IN` a list of the fences that moved, asked
/// once per statement, not `NOT EXISTS` per row: PostgreSQL turns `NOT EXISTS` into an anti
/// join, and once the (empty) fence tables have been analyzed it expects that join to leave
/// one row, so a listing sorted every row of the collection after its start key instead of
/// reading the key index in order (141 ms instead of 0.03 ms for 16 rows of 200,000). The
/// fence tables' key columns are `NOT NULL`, so `NOT IN` means the same as `NOT EXISTS`.
static SPREAD: LazyLock<Statements> = LazyLock::new(|| {
    Statements::new(
        "spread_records",
        "NOT EXISTS (SELECT 1 FROM vshard_fences f WHERE f.vshard = $V) AND ($V <> -1 OR NOT EXISTS \
         (SELECT 1 FROM range_fences r WHERE r.tenant = $T AND r.collection = $C AND r.from_key <= $K \
         AND (r.until_key IS NULL OR $K < r.until_key))) AND NOT EXISTS (SELECT 1 FROM collection_fences c \
         WHERE c.tenant = $T AND c.collection = $C AND c.layout = 'spread')",
        "spread_records.vshard NOT IN (SELECT f.vshard FROM vshard_fences f WHERE f.state = 'moved') \
         AND (spread_records.vshard <> -1 OR NOT EXISTS (SELECT 1 FROM range_fences r \
         WHERE r.tenant = spread_records.tenant AND r.collection = spread_records.collection \
         AND r.state = 'moved' AND r.from_key <= spread_records.key \
         AND (r.until_key IS NULL OR spread_records.key < r.until_key))) \
         AND (spread_records.tenant, spread_records.collection) NOT IN (SELECT c.tenant, c.collection \
         FROM collection_fences c WHERE c.layout = 'spread' AND c.state = 'moved')",
    )
});

impl Statements {
    /// `write_fence` names the tenant as `$T`, the collection as `$C`, the key as `$K` and the
    /// row's vshard as `$V`.
    fn new(table: &str, write_fence: &str, read_fence: &str) -> Self {
        let fence = |[tenant, collection, key, vshard]: [&str; 4]| {
            write_fence.replace("$T", tenant).replace("$C", collection).replace("$K", key).replace("$V", vshard)
        };
        let columns = "(tenant, collection, key, vshard, version, updated_at, deleted, value, live_since)";
        // `$1`–`$7`: tenant, collection, key, vshard, now, value, map epoch. Inserts a new record
        // (version 1) unless the key exists or the shard's fence is newer than the map the write
        // was routed on.
        let insert = format!(
            "INSERT INTO {table} {columns} SELECT $1, $2, $3, $4, 1, $5, 0, $6, 1 \
             WHERE NOT EXISTS (SELECT 1 FROM shard_fence WHERE epoch > $7) AND {}",
            fence(["$1", "$2", "$3", "$4"])
        );
        // `$1` version, `$2` now, `$3` value, `$4` vshard, then `$5`–`$8` tenant, collection,
        // key, version, `$9` map epoch.
        let update = format!(
            "UPDATE {table} SET version = $1, updated_at = $2, value = $3, vshard = $4, \
             live_since = CASE WHEN deleted = 1 THEN $1 ELSE live_since END, deleted = 0 \
             WHERE tenant = $5 AND collection = $6 AND key = $7 AND version = $8 \
             AND NOT EXISTS (SELECT 1 FROM shard_fence WHERE epoch > $9) AND {} RETURNING version",
            fence(["$5", "$6", "$7", &format!("{table}.vshard")])
        );
        let upsert = format!(
            "ON CONFLICT (tenant, collection, key) DO UPDATE SET \
             version = {table}.version + 1, updated_at = excluded.updated_at, value = excluded.value, \
             vshard = excluded.vshard, \
             live_since = CASE WHEN {table}.deleted = 1 THEN {table}.version + 1 ELSE {table}.live_since END, \
             deleted = 0"
        );
        let writes = json_rows(&[
            ("t", "text"),
            ("c", "text"),
            ("k", "text"),
            ("v", "bigint"),
            ("n", "bigint"),
            ("val", "text"),
            ("e", "bigint"),
        ]);
        let batch_write = writes.map(|rows| {
            format!(
                "{rows} INSERT INTO {table} {columns} SELECT u.t, u.c, u.k, u.v, 1, u.n, 0, u.val, 1 FROM u \
                 WHERE NOT EXISTS (SELECT 1 FROM shard_fence WHERE epoch > u.e) AND {} {upsert} \
                 RETURNING tenant, collection, key, version, live_since",
                fence(["u.t", "u.c", "u.k", "u.v"])
            )
        });
        let [sqlite_swaps, postgres_swaps] = json_rows(&[
            ("t", "text"),
            ("c", "text"),
            ("k", "text"),
            ("x", "text"),
            ("ver", "bigint"),
            ("val", "text"),
            ("v", "bigint"),
            ("n", "bigint"),
            ("e", "bigint"),
        ]);
        let inserts = |rows: &str| {
            format!(
                "{rows} INSERT INTO {table} {columns} SELECT u.t, u.c, u.k, u.v, 1, u.n, 0, u.val, 1 FROM u \
                 WHERE u.x = 'i' AND NOT EXISTS (SELECT 1 FROM shard_fence WHERE epoch > u.e) AND {} \
                 ON CONFLICT (tenant, collection, key) DO NOTHING RETURNING tenant, collection, key, version",
                fence(["u.t", "u.c", "u.k", "u.v"])
            )
        };
        // `u` (update), `d` (tombstone from a version) and `a` (tombstone if live), the rows of
        // `u` joined to the table by `from` (which ends with `AND`).
        let updates = |rows: &str, from: &str, vshard: &str| {
            format!(
                "{rows} UPDATE {table} SET \
                 version = CASE WHEN u.x = 'a' THEN {table}.version + 1 ELSE u.ver + 1 END, \
                 updated_at = u.n, \
                 value = CASE WHEN u.x = 'u' THEN u.val ELSE 'null' END, \
                 vshard = CASE WHEN u.x = 'u' THEN u.v ELSE {table}.vshard END, \
                 live_since = CASE WHEN u.x = 'u' AND {table}.deleted = 1 THEN u.ver + 1 \
                 ELSE {table}.live_since END, \
                 deleted = CASE WHEN u.x = 'u' THEN 0 ELSE 1 END \
                 {from} u.x <> 'i' \
                 AND ((u.x = 'a' AND {table}.deleted = 0) OR (u.x <> 'a' AND {table}.version = u.ver)) \
                 AND NOT EXISTS (SELECT 1 FROM shard_fence WHERE epoch > u.e) AND {} \
                 RETURNING {table}.tenant, {table}.collection, {table}.key, {table}.version",
                fence(["u.t", "u.c", "u.k", vshard])
            )
        };
        // On PostgreSQL each row is found by its key first, in a lateral subquery the planner
        // cannot turn into a scan of the table (it expects a hundred rows of `u`), then updated
        // by its place (and only so: with the key's columns compared too, the planner is back to
        // a scan). A row another statement changed meanwhile has moved and is not updated: a
        // lost race, which the writer retries after reading again.
        let by_place = format!(
            "FROM u CROSS JOIN LATERAL (SELECT l.ctid AS place, l.vshard FROM {table} l WHERE l.tenant = u.t \
             AND l.collection = u.c AND l.key = u.k LIMIT 1) found WHERE {table}.ctid = found.place AND"
        );
        let batch_swap = [
            [inserts(&sqlite_swaps), inserts(&postgres_swaps)],
            [
                updates(
                    &sqlite_swaps,
                    &format!(
                        "FROM u WHERE {table}.tenant = u.t AND {table}.collection = u.c AND {table}.key = u.k AND"
                    ),
                    &format!("{table}.vshard"),
                ),
                // The row's vshard as the lookup found it (the same row: its place is): the
                // fences are then asked per row of `u`, after the lookup.
                updates(&postgres_swaps, &by_place, "found.vshard"),
            ],
        ];
        let row_fence =
            read_fence.replace("$1", &format!("{table}.tenant")).replace("$2", &format!("{table}.collection"));
        // Each address is looked up by its key: on PostgreSQL in a lateral subquery, which the
        // planner cannot turn into a scan of the table (it expects a hundred rows of `u`).
        let [sqlite_rows, postgres_rows] = json_rows(&[("t", "text"), ("c", "text"), ("k", "text")]);
        let row = format!(
            "SELECT {table}.tenant, {table}.collection, {table}.key, version, updated_at, value, deleted FROM {table}"
        );
        let batch_read = [
            format!(
                "{sqlite_rows} SELECT {table}.tenant, {table}.collection, {table}.key, version, updated_at, value, \
                 deleted FROM u JOIN {table} ON {table}.tenant = u.t AND {table}.collection = u.c \
                 AND {table}.key = u.k WHERE {row_fence}"
            ),
            format!(
                "{postgres_rows} SELECT found.* FROM u CROSS JOIN LATERAL ({row} WHERE {table}.tenant = u.t \
                 AND {table}.collection = u.c AND {table}.key = u.k AND {row_fence} LIMIT 1) found"
            ),
        ];
        Self {
            insert_or_nothing: format!("{insert} ON CONFLICT (tenant, collection, key) DO NOTHING RETURNING version"),
            // Also bumps an existing row's version (reviving a tombstone). Returns the version
            // and the version it last became live at.
            // Also bumps an existing row's version (reviving a tombstone). Returns the version
            // and the version it last became live at.
            insert_or_update: format!("{insert} {upsert} RETURNING version, live_since"),
            // `$1`–`$3`: tenant, collection, key.
            read: format!(
                "SELECT key, version, updated_at, value, deleted FROM {table} \
                 WHERE tenant = $1 AND collection = $2 AND key = $3 AND {read_fence}"
            ),
            update,
            // `$1` now, `$2`–`$4` tenant, collection, key, `$5` map epoch.
            delete: format!(
                "UPDATE {table} SET version = version + 1, updated_at = $1, deleted = 1, value = 'null' \
                 WHERE tenant = $2 AND collection = $3 AND key = $4 AND deleted = 0 \
                 AND NOT EXISTS (SELECT 1 FROM shard_fence WHERE epoch > $5) AND {} RETURNING version",
                fence(["$2", "$3", "$4", &format!("{table}.vshard")])
            ),
            // `$1` version, `$2` now, then `$3`–`$6` tenant, collection, key, version, `$7` epoch.
            delete_version: format!(
                "UPDATE {table} SET version = $1, updated_at = $2, deleted = 1, value = 'null' \
                 WHERE tenant = $3 AND collection = $4 AND key = $5 AND version = $6 \
                 AND NOT EXISTS (SELECT 1 FROM shard_fence WHERE epoch > $7) AND {} RETURNING version",
                fence(["$3", "$4", "$5", &format!("{table}.vshard")])
            ),
            // `$1` tenant, `$2` collection; the caller appends the key bounds.
            list: format!(
                "SELECT key, version, updated_at, value FROM {table} \
                 WHERE tenant = $1 AND collection = $2 AND deleted = 0 AND {read_fence}"
            ),
            count_live: format!("SELECT COUNT(*) FROM {table} WHERE deleted = 0"),
            purge_tenant: format!("DELETE FROM {table} WHERE tenant = $1"),
            count_collection: format!("SELECT COUNT(*) FROM {table} WHERE tenant = $1 AND collection = $2"),
            purge_collection: format!("DELETE FROM {table} WHERE tenant = $1 AND collection = $2"),
            batch_write,
            batch_read,
            batch_swap,
        }
    }
}

/// The statement an unconditional write of a tenant's home record runs (for the drivers'
/// benchmark): `$1`–`$7` tenant, collection, key, vshard, now, value, map epoch; returns the
/// version and the version the record last became live at.
pub fn home_upsert_sql() -> &'static str {
    &HOME.insert_or_update
}

/// The batch statements of PostgreSQL shards, each with its table: the point reads, the
/// unconditional writes, the inserts and the updates of compare-and-swap writes (for the test
/// that checks their plans look rows up by key, whatever the table's size).
#[doc(hidden)]
pub fn postgres_batch_sql() -> Vec<(&'static str, &'static str)> {
    [("records", &*HOME), ("spread_records", &*SPREAD)]
        .into_iter()
        .flat_map(|(table, sql)| {
            [&sql.batch_read[1], &sql.batch_write[1], &sql.batch_swap[0][1], &sql.batch_swap[1][1]]
                .map(|statement| (table, statement.as_str()))
        })
        .collect()
}

/// How many times a write re-reads after losing a race before giving up with
/// [`Error::WriteContention`].
pub const MAX_WRITE_ATTEMPTS: usize = 32;

/// Before a conditional write retries after losing a race: nothing the first time, then a
/// random pause of up to `attempt` milliseconds, so competing writers spread out.
pub async fn backoff(attempt: usize) {
    if attempt > 0 {
        let jitter =
            (crate::clock::now_ms() as u64 ^ (attempt as u64).wrapping_mul(0x9E37_79B9)) % (attempt as u64 + 1);
        tokio::time::sleep(std::time::Duration::from_millis(jitter)).await;
    }
}

/// A record as stored.
#[derive(Debug, Clone)]
pub struct StoredRecord {
    /// Its key.
    pub key: String,
    /// Its version: 1 on first create, +1 on every write and delete.
    pub version: i64,
    /// Last write (ms since the Unix epoch).
    pub updated_at_ms: i64,
    /// The JSON value, as the client sent it.
    pub value: Box<RawValue>,
}

impl StoredRecord {
    /// The record a write at `addr` just stored.
    fn written(addr: RecordAddress<'_>, version: i64, value: &RawValue, now_ms: i64) -> Self {
        Self { key: addr.key.as_str().to_owned(), version, updated_at_ms: now_ms, value: value.to_owned() }
    }
}

/// A row as stored, tombstone or not, with its vshard tag ([`RecordStore::placed_rows`]).
#[derive(Debug, Clone)]
pub struct PlacedRow {
    /// The record (a tombstone's value is `null`).
    pub record: StoredRecord,
    /// Whether it is a tombstone.
    pub deleted: bool,
    /// Its vshard tag: the vshard that places it, or -1 for a range-placed row.
    pub tag: i64,
}

/// A record read with its tombstone, if deleted.
#[derive(Debug, Clone)]
pub enum RecordRead {
    /// The record exists.
    Live(StoredRecord),
    /// It was deleted at this version.
    Gone(i64),
    /// There never was a record here.
    Absent,
}

/// A client's precondition on a write or delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteCondition {
    /// No precondition.
    Always,
    /// `If-Match: *`: the record must exist.
    Exists,
    /// `If-Match: "v1", "v2"`: the record must exist with one of these versions.
    VersionIn(Vec<i64>),
    /// `If-None-Match: *`: the record must not exist.
    Absent,
}

impl WriteCondition {
    /// Whether a record whose live version is `live_version` (`None`: none) meets it.
    pub fn allows(&self, live_version: Option<i64>) -> bool {
        match (self, live_version) {
            (WriteCondition::Always, _) => true,
            (WriteCondition::Exists, live) => live.is_some(),
            (WriteCondition::VersionIn(versions), Some(v)) => versions.contains(&v),
            (WriteCondition::VersionIn(_), None) => false,
            (WriteCondition::Absent, live) => live.is_none(),
        }
    }
}

/// The result of a put.
#[derive(Debug, Clone)]
pub struct PutOutcome {
    /// Whether the record did not exist before (201 rather than 200).
    pub created: bool,
    /// The record as written.
    pub record: StoredRecord,
}

/// Bounds of a listing. All bounds are on keys in byte order.
#[derive(Debug, Clone, Default)]
pub struct ListBounds {
    /// Only keys starting with this.
    pub prefix: Option<String>,
    /// Only keys `>=` this.
    pub start: Option<String>,
    /// Only keys `<` this.
    pub end: Option<String>,
    /// Only keys `>` this (the cursor).
    pub after: Option<String>,
}

/// Identifies one record.
#[derive(Debug, Clone, Copy)]
pub struct RecordAddress<'a> {
    /// Tenant.
    pub tenant: &'a TenantId,
    /// Collection.
    pub collection: &'a CollectionName,
    /// Key.
    pub key: &'a RecordKey,
}

impl RecordAddress<'_> {
    /// Tenant, collection and key, as a lone statement binds them.
    fn borrowed(&self) -> [&str; 3] {
        [self.tenant.as_str(), self.collection.as_str(), self.key.as_str()]
    }

    /// The address as a batched operation holds it.
    fn owned(&self) -> RowKey {
        RowKey {
            tenant: self.tenant.as_str().to_owned(),
            collection: self.collection.as_str().to_owned(),
            key: self.key.as_str().to_owned(),
        }
    }
}

/// Record operations on one shard database, in one [`Layout`] (home data unless told otherwise).
#[derive(Debug, Clone, Copy)]
pub struct RecordStore<'a> {
    shard: FencedShard<'a>,
    layout: Layout,
}

impl<'a> ShardStore<'a> for RecordStore<'a> {
    fn on(shard: FencedShard<'a>) -> Self {
        Self { shard, layout: Layout::Home }
    }

    fn shard_mut(&mut self) -> &mut FencedShard<'a> {
        &mut self.shard
    }
}

impl<'a> RecordStore<'a> {
    /// The shard it works on, with the map epoch its writes are routed on.
    pub(crate) fn fenced_shard(&self) -> FencedShard<'a> {
        self.shard
    }

    /// The store of the records placed the way `layout` says.
    pub fn in_layout(mut self, layout: Layout) -> Self {
        self.layout = layout;
        self
    }

    /// The vshard tag a record placed at `vshard` gets in this layout.
    pub(crate) fn tag(&self, vshard: u32) -> i64 {
        match self.layout {
            Layout::Range => -1,
            Layout::Home | Layout::Hash(_) => i64::from(vshard),
        }
    }

    /// After a write changed nothing: [`Error::StaleMap`] if the shard's fence refused it,
    /// [`Error::TenantFenced`] or [`Error::VshardFenced`] if the fence of what places the record
    /// did (it is moving away).
    async fn check_write_fences(&self, addr: RecordAddress<'_>) -> Result<(), Error> {
        match self.layout {
            Layout::Home => self.shard.check_fences(addr.tenant).await?,
            Layout::Hash(vshard) => self.shard.check_vshard_fences(vshard).await?,
            Layout::Range => self.shard.check_range_fences(addr.tenant, addr.collection, addr.key.as_str()).await?,
        }
        match self.shard.collection_fence(addr.tenant, addr.collection, self.layout.fenced_as()).await? {
            Some(_) => Err(self.shard.collection_fenced(addr.tenant, addr.collection)),
            None => Ok(()),
        }
    }

    /// After a read of `tenant`'s `collection` found nothing: [`Error::CollectionFenced`] if
    /// the collection's rows in this layout have moved to another layout (its distribution
    /// changed; what is left here is an old copy, never to be read).
    async fn check_collection_moved(&self, tenant: &TenantId, collection: &CollectionName) -> Result<(), Error> {
        let fence = self.shard.collection_fence(tenant, collection, self.layout.fenced_as()).await?;
        if fence == Some(crate::storage::shard::TenantFence::Moved) {
            return Err(self.shard.collection_fenced(tenant, collection));
        }
        Ok(())
    }

    /// `written`, or if the write changed nothing, the fence that refused it if any
    /// ([`RecordStore::check_write_fences`]); `None` means a lost race.
    async fn unless_fenced_out<T>(&self, addr: RecordAddress<'_>, written: Option<T>) -> Result<Option<T>, Error> {
        if written.is_none() {
            self.check_write_fences(addr).await?;
        }
        Ok(written)
    }

    /// After a read found nothing: [`Error::TenantMoved`], [`Error::VshardFenced`] or
    /// [`Error::RangeFenced`] if what places the record has moved to another shard (what is
    /// left here is an old copy, never to be read).
    async fn check_moved(&self, addr: RecordAddress<'_>) -> Result<(), Error> {
        self.check_collection_moved(addr.tenant, addr.collection).await?;
        match self.layout {
            Layout::Home => self.shard.check_moved(addr.tenant).await,
            Layout::Hash(vshard) => {
                if self.shard.vshard_fence(vshard).await? == Some(crate::storage::shard::TenantFence::Moved) {
                    return Err(Error::VshardFenced { shard: self.shard.id().clone(), vshard });
                }
                Ok(())
            }
            Layout::Range => {
                let fence = self.shard.range_fence(addr.tenant, addr.collection, addr.key.as_str()).await?;
                if fence == Some(crate::storage::shard::TenantFence::Moved) {
                    return Err(self.shard.range_fenced(addr.tenant, addr.collection));
                }
                Ok(())
            }
        }
    }

    fn sql(&self) -> &'static Statements {
        self.layout.statements()
    }
    fn err(&self, source: sqlx::Error) -> Error {
        self.shard.err(source)
    }

    /// The row at `addr`, tombstone or not, read in a batch with other point reads of this shard
    /// ([`crate::storage::batch`]) or alone (once more on another connection if the first broke:
    /// [`FencedShard::read`]). The read excludes records whose tenant, vshard, key range or
    /// collection moved away: when no row comes back, [`RecordStore::check_moved`] tells whether
    /// that is why, so a stale copy is never read as the record.
    async fn read_row(&self, addr: RecordAddress<'_>) -> Result<Option<RowRead>, Error> {
        let batcher = &self.shard.db().batches().reads[self.layout.table_index()];
        let db = self.shard.db().clone();
        let sql = self.sql();
        let row =
            match self.batched(batcher, addr.owned(), false, move |keys| read_batch(db.clone(), sql, keys)).await? {
                Some(row) => row,
                None => {
                    let read = self.shard.read(|| lone_read(self.shard.db(), sql, addr.borrowed()));
                    crate::in_trace_span!(self.statement_span(false), read)?
                }
            };
        if row.is_none() {
            self.check_moved(addr).await?;
        }
        Ok(row)
    }

    /// The span of one point statement of this shard (`TRACE` level: made only when traces are
    /// on), batched or alone.
    fn statement_span(&self, write: bool) -> tracing::Span {
        tracing::trace_span!("shard.statement", shard = %self.shard.id(), write)
    }

    /// `op` sent through `batcher` when this shard batches (`run` runs a batch); `None` when it
    /// is to run alone (batching is off, or the batch's statement was refused by the database).
    /// The operation is counted for the load picture with its share of the batch's time.
    async fn batched<Op, Out, F, Fut>(
        &self,
        batcher: &std::sync::Arc<Batcher<Op, Out>>,
        op: Op,
        write: bool,
        run: F,
    ) -> Result<Option<Out>, Error>
    where
        Op: Send + 'static,
        Out: Send + 'static,
        F: Fn(Vec<Op>) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = (BatchOutcome<Out>, std::time::Duration)> + Send + 'static,
    {
        let config = self.shard.db().batches().config();
        let limit = config.limit();
        if limit <= 1 {
            return Ok(None);
        }
        let submitted = batcher.submit(op, (limit, config.in_flight()), run);
        match crate::in_trace_span!(self.statement_span(write), submitted) {
            BatchReply::Done(out, share) => {
                self.shard.measure_share(write, share, false);
                Ok(Some(out))
            }
            BatchReply::Refused(refusal, share) => {
                self.shard.measure_share(write, share, true);
                Err(self.shard.refused(refusal))
            }
            BatchReply::Alone => Ok(None),
        }
    }

    /// The live record at `addr`, if any.
    pub async fn get(&self, addr: RecordAddress<'_>) -> Result<Option<StoredRecord>, Error> {
        match self.read(addr).await? {
            RecordRead::Live(record) => Ok(Some(record)),
            RecordRead::Gone(_) | RecordRead::Absent => Ok(None),
        }
    }

    /// What the shard holds at `addr`, tombstones included (their version bounds caches).
    pub async fn read(&self, addr: RecordAddress<'_>) -> Result<RecordRead, Error> {
        let Some(row) = self.read_row(addr).await? else { return Ok(RecordRead::Absent) };
        if row.deleted {
            return Ok(RecordRead::Gone(row.version));
        }
        self.shard.count(Sample::rows_read(1, row.value.len() as u64));
        Ok(RecordRead::Live(StoredRecord {
            key: row.key,
            version: row.version,
            updated_at_ms: row.updated_at,
            value: RawValue::from_string(row.value)
                .map_err(|e| Error::Corrupt(format!("record value on shard {}: {e}", self.shard.id())))?,
        }))
    }

    /// The records of a page of rows, counted as read in one sample (one visit of the load meter
    /// per page, not per row).
    fn records(&self, rows: &[sqlx::any::AnyRow]) -> Result<Vec<StoredRecord>, Error> {
        let records: Vec<StoredRecord> = rows.iter().map(|r| self.record(r)).collect::<Result<_, _>>()?;
        if !records.is_empty() {
            let bytes = records.iter().map(|r| r.value.get().len() as u64).sum();
            self.shard.count(Sample::rows_read(records.len() as u64, bytes));
        }
        Ok(records)
    }

    /// One row of a page as a record (counted by [`RecordStore::records`]).
    fn record(&self, row: &sqlx::any::AnyRow) -> Result<StoredRecord, Error> {
        let value: String = row.try_get(3).map_err(|e| self.err(e))?;
        Ok(StoredRecord {
            key: row.try_get(0).map_err(|e| self.err(e))?,
            version: row.try_get(1).map_err(|e| self.err(e))?,
            updated_at_ms: row.try_get(2).map_err(|e| self.err(e))?,
            value: RawValue::from_string(value)
                .map_err(|e| Error::Corrupt(format!("record value on shard {}: {e}", self.shard.id())))?,
        })
    }

    /// The current version of `addr` and whether it is a tombstone.
    async fn current(&self, addr: RecordAddress<'_>) -> Result<Option<(i64, bool)>, Error> {
        Ok(self.read_row(addr).await?.map(|row| (row.version, row.deleted)))
    }

    /// Runs one compare-and-swap write of the record at `addr` (in a batch with others of this
    /// shard, or alone): `swap` from version `from`, writing `value` placed at `vshard` at
    /// `now_ms`. The new version, or `None` if it changed nothing (a lost race, a missing or
    /// deleted record, or a fence: see [`RecordStore::unless_fenced_out`]).
    async fn swap(
        &self,
        addr: RecordAddress<'_>,
        swap: Swap,
        from: Option<i64>,
        value: Option<&RawValue>,
        (vshard, now_ms): (u32, i64),
    ) -> Result<Option<i64>, Error> {
        let op = RowSwap {
            address: addr.owned(),
            swap,
            from,
            value: value.map(|v| v.get().to_owned()),
            tag: self.tag(vshard),
            now_ms,
            epoch: self.shard.map_epoch(),
        };
        let batcher = &self.shard.db().batches().swaps[self.layout.table_index()];
        let (db, sql) = (self.shard.db().clone(), self.sql());
        if let Some(written) =
            self.batched(batcher, op.clone(), true, move |ops| swap_batch(db.clone(), sql, ops)).await?
        {
            return Ok(written);
        }
        let swap = lone_swap(self.shard.db(), self.sql(), &op).on_shard(&self.shard);
        crate::in_trace_span!(self.statement_span(true), swap)
    }

    /// Writes `value` at `addr` if `condition` holds. `vshard` is recorded with the row.
    pub async fn put(
        &self,
        addr: RecordAddress<'_>,
        vshard: u32,
        value: &RawValue,
        condition: &WriteCondition,
        now_ms: i64,
    ) -> Result<PutOutcome, Error> {
        if *condition == WriteCondition::Always {
            return self.upsert(addr, vshard, value, now_ms).await;
        }
        for attempt in 0..MAX_WRITE_ATTEMPTS {
            backoff(attempt).await;
            let current = self.current(addr).await?;
            let live = current.and_then(|(v, deleted)| (!deleted).then_some(v));
            if !condition.allows(live) {
                return Err(Error::PreconditionFailed);
            }
            let (swap, from) = match current {
                None => (Swap::Insert, None),
                Some((version, _)) => (Swap::Update, Some(version)),
            };
            let written = self.swap(addr, swap, from, Some(value), (vshard, now_ms)).await?;
            if let Some(version) = self.unless_fenced_out(addr, written).await? {
                self.shard.count(Sample::rows_written(1, value.get().len() as u64));
                return Ok(PutOutcome {
                    created: live.is_none(),
                    record: StoredRecord::written(addr, version, value, now_ms),
                });
            }
        }
        Err(Error::WriteContention)
    }

    /// An unconditional write in one statement: no read, no race to lose. A tombstone or a new
    /// key counts as created.
    async fn upsert(
        &self,
        addr: RecordAddress<'_>,
        vshard: u32,
        value: &RawValue,
        now_ms: i64,
    ) -> Result<PutOutcome, Error> {
        let write = RowWrite {
            address: addr.owned(),
            tag: self.tag(vshard),
            now_ms,
            value: value.get().to_owned(),
            epoch: self.shard.map_epoch(),
        };
        let batcher = &self.shard.db().batches().writes[self.layout.table_index()];
        let db = self.shard.db().clone();
        let sql = self.sql();
        let written =
            match self.batched(batcher, write, true, move |writes| write_batch(db.clone(), sql, writes)).await? {
                Some(written) => written,
                None => {
                    let write = (self.tag(vshard), now_ms, value.get(), self.shard.map_epoch());
                    let written = lone_write(self.shard.db(), sql, addr.borrowed(), write).on_shard(&self.shard);
                    crate::in_trace_span!(self.statement_span(true), written)?
                }
            };
        let Some((version, live_since)) = written else {
            self.check_write_fences(addr).await?;
            return Err(Error::StaleMap(self.shard.id().clone()));
        };
        self.shard.count(Sample::rows_written(1, value.get().len() as u64));
        Ok(PutOutcome { created: version == live_since, record: StoredRecord::written(addr, version, value, now_ms) })
    }

    /// Deletes the record at `addr` if it exists and `condition` holds; returns the tombstone's
    /// version.
    pub async fn delete(&self, addr: RecordAddress<'_>, condition: &WriteCondition, now_ms: i64) -> Result<i64, Error> {
        if *condition == WriteCondition::Always {
            for attempt in 0..MAX_WRITE_ATTEMPTS {
                backoff(attempt).await;
                let written = self.swap(addr, Swap::DeleteLive, None, None, (0, now_ms)).await?;
                if let Some(version) = self.unless_fenced_out(addr, written).await? {
                    self.shard.count(Sample::rows_written(1, 0));
                    return Ok(version);
                }
                // Nothing deleted: no live record, or (in a batch on PostgreSQL, which finds the
                // row before it changes it) another write changed it meanwhile.
                if !matches!(self.current(addr).await?, Some((_, false))) {
                    return Err(Error::RecordNotFound);
                }
            }
            return Err(Error::WriteContention);
        }
        for attempt in 0..MAX_WRITE_ATTEMPTS {
            backoff(attempt).await;
            let Some((version, false)) = self.current(addr).await? else {
                return Err(Error::RecordNotFound);
            };
            if !condition.allows(Some(version)) {
                return Err(Error::PreconditionFailed);
            }
            let written = self.swap(addr, Swap::Delete, Some(version), None, (0, now_ms)).await?;
            if let Some(version) = self.unless_fenced_out(addr, written).await? {
                self.shard.count(Sample::rows_written(1, 0));
                return Ok(version);
            }
        }
        Err(Error::WriteContention)
    }

    /// Live records of a collection within `bounds`, ordered by key, at most `limit`.
    pub async fn list(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        bounds: &ListBounds,
        limit: u32,
    ) -> Result<Vec<StoredRecord>, Error> {
        self.list_where(tenant, collection, bounds, limit, "").await
    }

    /// [`RecordStore::list`] of the records placed by the vshards of `runs` (inclusive ranges
    /// of vshards) only: the ones this shard owns, so a copy a vshard move has made here before
    /// its switch is not listed. Also says whether this shard has handed one of those vshards to
    /// another shard (a map that says it owns them is out of date), asked in the same statement.
    pub async fn list_in_vshards(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        bounds: &ListBounds,
        limit: u32,
        runs: &[(u32, u32)],
    ) -> Result<(Vec<StoredRecord>, bool), Error> {
        let listing = vshard_listing(self.sql(), runs, bounds);
        self.list_checking(tenant, collection, limit, listing).await
    }

    /// [`RecordStore::list`] of a range-distributed collection's records within the key
    /// `intervals` this shard holds (each from its first key up to its second, excluded;
    /// `None`: to the end), so a copy a range move has made here before its switch is not
    /// listed. Also says whether this shard has given away a part of them (a map that says it
    /// holds them is out of date), asked in the same statement.
    pub async fn list_in_ranges(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        bounds: &ListBounds,
        limit: u32,
        intervals: &[(String, Option<String>)],
    ) -> Result<(Vec<StoredRecord>, bool), Error> {
        // A fence [f, u) overlaps [from, until) when f < until and (u is NULL or u > from).
        let overlapping = intervals
            .iter()
            .map(|(from, until)| {
                let after_from = format!("(until_key IS NULL OR until_key > {})", sql_text(from));
                match until {
                    Some(until) => format!("(from_key < {} AND {after_from})", sql_text(until)),
                    None => after_from,
                }
            })
            .collect::<Vec<_>>();
        let keys = keys_within(intervals);
        let moved = format!(
            "SELECT COUNT(*) FROM range_fences WHERE tenant = $1 AND collection = $2 AND state = 'moved' AND ({})",
            if overlapping.is_empty() { "1 = 0".to_owned() } else { overlapping.join(" OR ") }
        );
        self.list_checking(tenant, collection, limit, checking_listing(self.sql(), &keys, &moved, bounds)).await
    }

    /// Runs `listing` (a [`checking_listing`]): the rows it lists, and whether the caller's map
    /// is out of date, asked in the same statement, or alone when no row is listed.
    async fn list_checking(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        limit: u32,
        listing: CheckingListing,
    ) -> Result<(Vec<StoredRecord>, bool), Error> {
        let rows = self.fetch_list(&listing.bounded, tenant, collection, limit).await?;
        let Some(first) = rows.first() else {
            let count: i64 = self
                .shard
                .read(|| {
                    let moved = traced(&listing.moved);
                    async move {
                        moved
                            .query_scalar()
                            .bind(tenant.as_str())
                            .bind(collection.as_str())
                            .fetch_one(self.shard.pool())
                            .await
                    }
                })
                .await?;
            return Ok((Vec::new(), count > 0));
        };
        let count: i64 = first.try_get(4).map_err(|e| self.err(e))?;
        Ok((self.records(&rows)?, count > 0))
    }

    async fn list_where(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        bounds: &ListBounds,
        limit: u32,
        condition: &str,
    ) -> Result<Vec<StoredRecord>, Error> {
        let rows = self.fetch_list(&bounded(&self.sql().list, condition, bounds), tenant, collection, limit).await?;
        if rows.is_empty() && self.layout == Layout::Home {
            self.shard.check_moved(tenant).await?;
            self.check_collection_moved(tenant, collection).await?;
        }
        self.records(&rows)
    }

    /// Runs the listing statement `sql` (a [`bounded`] one: the tenant bound as `$1`, the
    /// collection as `$2`, then the key bounds' values, then `limit`).
    async fn fetch_list(
        &self,
        (sql, binds): &(String, Vec<String>),
        tenant: &TenantId,
        collection: &CollectionName,
        limit: u32,
    ) -> Result<Vec<sqlx::any::AnyRow>, Error> {
        let sql = traced(sql);
        let mut query = sql.query().bind(tenant.as_str()).bind(collection.as_str());
        for value in binds {
            query = query.bind(value.as_str());
        }
        query.bind(i64::from(limit)).fetch_all(self.shard.pool()).reading_on(&self.shard).await
    }

    /// Live records on this shard (all tenants).
    pub async fn count_live(&self) -> Result<u64, Error> {
        let count: i64 =
            sqlx::query_scalar(&self.sql().count_live).fetch_one(self.shard.pool()).reading_on(&self.shard).await?;
        Ok(count as u64)
    }

    /// How many rows (tombstones included) `tenant`'s `collection` has here.
    pub async fn count_collection(&self, tenant: &TenantId, collection: &CollectionName) -> Result<u64, Error> {
        let count: i64 = sqlx::query_scalar(&self.sql().count_collection)
            .bind(tenant.as_str())
            .bind(collection.as_str())
            .fetch_one(self.shard.pool())
            .reading_on(&self.shard)
            .await?;
        Ok(u64::try_from(count).unwrap_or(0))
    }

    /// Removes every row (tombstones included) of `tenant`'s `collection` here.
    pub async fn purge_collection(&self, tenant: &TenantId, collection: &CollectionName) -> Result<u64, Error> {
        let done = sqlx::query(&self.sql().purge_collection)
            .bind(tenant.as_str())
            .bind(collection.as_str())
            .execute(self.shard.pool())
            .on_shard(&self.shard)
            .await?;
        Ok(done.rows_affected())
    }

    /// Up to `limit` rows (tombstones included) of `tenant`'s `collection` here, in key order,
    /// each with its vshard tag: what a change of distribution settles row by row.
    pub async fn placed_rows(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        limit: u32,
    ) -> Result<Vec<PlacedRow>, Error> {
        let table = self.table();
        let sql = format!(
            "SELECT key, version, updated_at, value, deleted, vshard FROM {table} \
             WHERE tenant = $1 AND collection = $2 ORDER BY key LIMIT $3"
        );
        let rows = sqlx::query(&sql)
            .bind(tenant.as_str())
            .bind(collection.as_str())
            .bind(i64::from(limit))
            .fetch_all(self.shard.pool())
            .reading_on(&self.shard)
            .await?;
        rows.iter()
            .map(|row| {
                let value: String = row.try_get("value").map_err(|e| self.shard.err(e))?;
                let record = StoredRecord {
                    key: row.try_get("key").map_err(|e| self.shard.err(e))?,
                    version: row.try_get("version").map_err(|e| self.shard.err(e))?,
                    updated_at_ms: row.try_get("updated_at").map_err(|e| self.shard.err(e))?,
                    value: RawValue::from_string(value).map_err(|e| Error::Corrupt(e.to_string()))?,
                };
                let deleted: i64 = row.try_get("deleted").map_err(|e| self.shard.err(e))?;
                let tag: i64 = row.try_get("vshard").map_err(|e| self.shard.err(e))?;
                Ok(PlacedRow { record, deleted: deleted != 0, tag })
            })
            .collect()
    }

    /// Gives the row at `key` of `tenant`'s `collection` the tag a record placed at `vshard`
    /// has in this store's layout (the row stays where it is). Unfenced: only for a row whose
    /// collection changed its distribution, which no writer on an older map can reach any more.
    pub async fn retag(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        key: &str,
        vshard: u32,
    ) -> Result<(), Error> {
        let sql = format!("UPDATE {} SET vshard = $4 WHERE tenant = $1 AND collection = $2 AND key = $3", self.table());
        self.change_row(&sql, tenant, collection, key, Some(self.tag(vshard))).await
    }

    /// Removes the row at `key` of `tenant`'s `collection` (a tombstone too). Unfenced, like
    /// [`RecordStore::retag`]: for a row left where its collection's distribution no longer
    /// places it.
    pub async fn remove(&self, tenant: &TenantId, collection: &CollectionName, key: &str) -> Result<(), Error> {
        let sql = format!("DELETE FROM {} WHERE tenant = $1 AND collection = $2 AND key = $3", self.table());
        self.change_row(&sql, tenant, collection, key, None).await
    }

    /// Runs `sql` on one row: `$1`–`$3` tenant, collection, key, and `$4` `tag` if given.
    async fn change_row(
        &self,
        sql: &str,
        tenant: &TenantId,
        collection: &CollectionName,
        key: &str,
        tag: Option<i64>,
    ) -> Result<(), Error> {
        let query = sqlx::query(sql).bind(tenant.as_str()).bind(collection.as_str()).bind(key);
        let query = match tag {
            Some(tag) => query.bind(tag),
            None => query,
        };
        query.execute(self.shard.pool()).on_shard(&self.shard).await?;
        Ok(())
    }

    /// The table of this store's layout.
    fn table(&self) -> &'static str {
        match self.layout {
            Layout::Home => "records",
            Layout::Hash(_) | Layout::Range => "spread_records",
        }
    }

    /// Raises the shard's fence to `epoch` (see [`FencedShard::raise_fence`]).
    pub async fn raise_fence(&self, epoch: u64) -> Result<(), Error> {
        self.shard.raise_fence(epoch).await
    }

    /// Removes every record (and tombstone) of `tenant` on this shard.
    pub async fn purge_tenant(&self, tenant: &TenantId) -> Result<u64, Error> {
        let done = sqlx::query(&self.sql().purge_tenant)
            .bind(tenant.as_str())
            .execute(self.shard.pool())
            .on_shard(&self.shard)
            .await?;
        Ok(done.rows_affected())
    }
}

/// `text` as an SQL string literal, for statements with their values inlined (here, and the
/// copies of `moves::copy`): a quote is doubled, so the literal cannot end early (keys may hold
/// quotes; they hold no NUL).
pub(crate) fn sql_text(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// The condition that a row's `key` is within one of the key `intervals` (each from its first
/// key up to its second, excluded; `None`: to the end), values inlined; one no row meets for
/// none.
pub(crate) fn keys_within(intervals: &[(String, Option<String>)]) -> String {
    if intervals.is_empty() {
        return "1 = 0".to_owned();
    }
    let keys = intervals
        .iter()
        .map(|(from, until)| match until {
            Some(until) => format!("(key >= {} AND key < {})", sql_text(from), sql_text(until)),
            None => format!("key >= {}", sql_text(from)),
        })
        .collect::<Vec<_>>();
    format!("({})", keys.join(" OR "))
}

/// The listing statement `select` with `condition` and `bounds`' key bounds appended, ordered by
/// key, its limit the last parameter; and the values of the key bounds, bound after the tenant
/// (`$1`) and the collection (`$2`), before the limit.
fn bounded(select: &str, condition: &str, bounds: &ListBounds) -> (String, Vec<String>) {
    let mut sql = select.to_owned();
    sql.push_str(condition);
    let mut binds: Vec<String> = Vec::new();
    let mut push = |sql: &mut String, op: &str, value: String| {
        binds.push(value);
        sql.push_str(&format!(" AND key {op} ${}", binds.len() + 2));
    };
    if let Some(prefix) = &bounds.prefix {
        push(&mut sql, ">=", prefix.clone());
        // No valid key contains U+10FFFF (a noncharacter), so every key with this prefix sorts
        // below prefix + U+10FFFF.
        push(&mut sql, "<", format!("{prefix}\u{10FFFF}"));
    }
    if let Some(start) = &bounds.start {
        push(&mut sql, ">=", start.clone());
    }
    if let Some(end) = &bounds.end {
        push(&mut sql, "<", end.clone());
    }
    if let Some(after) = &bounds.after {
        push(&mut sql, ">", after.clone());
    }
    sql.push_str(&format!(" ORDER BY key LIMIT ${}", binds.len() + 3));
    (sql, binds)
}

/// A listing that also asks whether the caller's map is out of date: the [`bounded`] statement
/// and its key bounds' values, with the count of moved fences as a fifth column; and that count
/// alone, for when no row is listed.
#[doc(hidden)]
#[derive(Debug)]
pub struct CheckingListing {
    pub bounded: (String, Vec<String>),
    pub moved: String,
}

/// The listing of `statements`' table of the rows meeting `condition` within `bounds`, with
/// `moved` (a count, not zero when the caller's map is out of date; it may name the tenant and
/// collection as `$1` and `$2`) and the count of the collection's moved fence over spread rows
/// (its distribution changed) added as a fifth column.
fn checking_listing(statements: &Statements, condition: &str, moved: &str, bounds: &ListBounds) -> CheckingListing {
    let moved = format!(
        "SELECT ({moved}) + (SELECT COUNT(*) FROM collection_fences WHERE tenant = $1 AND collection = $2 \
         AND layout = 'spread' AND state = 'moved')"
    );
    let select = statements.list.replacen(" FROM ", &format!(", ({moved}) AS moved FROM "), 1);
    CheckingListing { bounded: bounded(&select, &format!(" AND {condition}"), bounds), moved }
}

/// The listing on a shard of the records placed by the vshard `runs` it holds, asking whether
/// one of them has moved away in the same statement.
fn vshard_listing(statements: &Statements, runs: &[(u32, u32)], bounds: &ListBounds) -> CheckingListing {
    let condition = vshard_runs_condition(runs);
    let moved = format!("SELECT COUNT(*) FROM vshard_fences WHERE state = 'moved' AND {condition}");
    checking_listing(statements, &condition, &moved, bounds)
}

/// The listing a hash-distributed collection's listing runs on a shard holding the vshard
/// `runs` (the very statement [`RecordStore::list_in_vshards`] runs): for the test that checks
/// its plan reads the key index in order.
#[doc(hidden)]
pub fn listing_in_vshards_sql(runs: &[(u32, u32)], bounds: &ListBounds) -> CheckingListing {
    vshard_listing(&SPREAD, runs, bounds)
}

/// `(vshard BETWEEN a AND b OR ...)` for inclusive `runs`, or a condition no row meets for none.
fn vshard_runs_condition(runs: &[(u32, u32)]) -> String {
    if runs.is_empty() {
        return "1 = 0".to_owned();
    }
    let parts: Vec<String> = runs.iter().map(|(first, last)| format!("vshard BETWEEN {first} AND {last}")).collect();
    format!("({})", parts.join(" OR "))
}

/// The row a point read returned, its columns from `first` on: key, version, updated_at, value,
/// deleted.
fn row_read(row: &sqlx::any::AnyRow, first: usize) -> Result<RowRead, sqlx::Error> {
    let deleted: i64 = row.try_get(first + 4)?;
    Ok(RowRead {
        key: row.try_get(first)?,
        version: row.try_get(first + 1)?,
        updated_at: row.try_get(first + 2)?,
        value: row.try_get(first + 3)?,
        deleted: deleted != 0,
    })
}

/// `sql`'s statement for `db`'s engine (SQLite's first).
fn for_engine<'a>(db: &Database, sql: &'a [String; 2]) -> &'a str {
    match db.engine {
        Engine::Sqlite => &sql[0],
        Engine::Postgres => &sql[1],
    }
}

/// The lone point read of the record at `[tenant, collection, key]`.
async fn lone_read(
    db: &Database,
    sql: &'static Statements,
    [tenant, collection, key]: [&str; 3],
) -> Result<Option<RowRead>, sqlx::Error> {
    let statement = traced(&sql.read);
    let row = statement.query().bind(tenant).bind(collection).bind(key).fetch_optional(&db.pool).await?;
    row.as_ref().map(|row| row_read(row, 0)).transpose()
}

/// The lone unconditional write of the record at `[tenant, collection, key]`: its vshard tag,
/// time, value and map epoch.
async fn lone_write(
    db: &Database,
    sql: &'static Statements,
    [tenant, collection, key]: [&str; 3],
    (tag, now_ms, value, epoch): (i64, i64, &str, i64),
) -> Result<Written, sqlx::Error> {
    let statement = traced(&sql.insert_or_update);
    let row = statement
        .query()
        .bind(tenant)
        .bind(collection)
        .bind(key)
        .bind(tag)
        .bind(now_ms)
        .bind(value)
        .bind(epoch)
        .fetch_optional(&db.pool)
        .await?;
    row.map(|row| Ok((row.try_get(0)?, row.try_get(1)?))).transpose()
}

/// Runs a batch of point reads as one statement through `db`'s health (a read: once more on
/// another connection if the first broke). A batch of one runs the lone read; each address is
/// asked once however many reads name it.
async fn read_batch(
    db: Database,
    sql: &'static Statements,
    keys: Vec<RowKey>,
) -> (BatchOutcome<Option<RowRead>>, std::time::Duration) {
    let started = std::time::Instant::now();
    let outcome = if let [key] = keys.as_slice() {
        db.health().run_idempotent(|| lone_read(&db, sql, key.borrowed())).await.map(|row| vec![row])
    } else {
        let mut unique: Vec<&RowKey> = keys.iter().collect();
        unique.sort();
        unique.dedup();
        let json = serde_json::to_string(&unique).unwrap_or_default();
        let statement = traced(for_engine(&db, &sql.batch_read));
        let read = || statement.query().bind(&json).fetch_all(&db.pool);
        db.health().run_idempotent(read).await.and_then(|rows| {
            let mut found = std::collections::HashMap::with_capacity(rows.len());
            for row in &rows {
                let read = row_read(row, 2)?;
                let address = RowKey { tenant: row.try_get(0)?, collection: row.try_get(1)?, key: read.key.clone() };
                found.insert(address, read);
            }
            Ok(keys.iter().map(|k| found.get(k).cloned()).collect())
        })
    };
    (outcome, started.elapsed())
}

/// Runs a batch of unconditional writes through `db`'s health as one statement, or, when it
/// writes one key more than once, as one statement per round (each key at most once per round,
/// in the order the writes came) in one transaction: PostgreSQL lets one statement change a row
/// only once. Either way the batch commits once. A batch of one runs the lone write.
async fn write_batch(
    db: Database,
    sql: &'static Statements,
    writes: Vec<RowWrite>,
) -> (BatchOutcome<Written>, std::time::Duration) {
    let started = std::time::Instant::now();
    let outcome = if let [w] = writes.as_slice() {
        let write = lone_write(&db, sql, w.address.borrowed(), (w.tag, w.now_ms, &w.value, w.epoch));
        db.health().run(write).await.map(|written| vec![written])
    } else {
        let statement = for_engine(&db, &sql.batch_write);
        let rounds = rounds_by_key(&writes.iter().map(|w| &w.address).collect::<Vec<_>>());
        let statements: Vec<(&str, Vec<usize>)> = rounds.into_iter().map(|round| (statement, round)).collect();
        db.health().run(run_statements(&db, &statements, &writes)).await
    };
    (outcome, started.elapsed())
}

/// Runs `statements` (each a statement and the writes of `ops` it takes, by index) in order:
/// alone if there is one, else in one transaction. What each write's statement returned for it,
/// in the order of `ops` (nothing for a write that changed no row).
async fn run_statements<W: RoundWrite>(
    db: &Database,
    statements: &[(&str, Vec<usize>)],
    ops: &[W],
) -> Result<Vec<Option<W::Out>>, sqlx::Error> {
    let mut written: Vec<Option<W::Out>> = ops.iter().map(|_| None).collect();
    if let [(statement, round)] = statements {
        run_round(&db.pool, statement, ops, round, &mut written).await?;
    } else {
        let mut tx = db.pool.begin().await?;
        for (statement, round) in statements {
            run_round(&mut *tx, statement, ops, round, &mut written).await?;
        }
        tx.commit().await?;
    }
    Ok(written)
}

/// The operations on `addresses` (by index) in rounds where each key appears at most once, in order:
/// a key's n-th write is in the n-th round.
fn rounds_by_key(addresses: &[&RowKey]) -> Vec<Vec<usize>> {
    let mut seen: std::collections::HashMap<&RowKey, usize> = std::collections::HashMap::new();
    let mut rounds: Vec<Vec<usize>> = Vec::new();
    for (i, address) in addresses.iter().enumerate() {
        let n = seen.entry(*address).or_insert(0);
        if rounds.len() <= *n {
            rounds.push(Vec::new());
        }
        rounds[*n].push(i);
        *n += 1;
    }
    rounds
}

/// A write a batch sends in rounds: its record, and what its statement returns for it (after
/// the tenant, collection and key that name its row).
trait RoundWrite: serde::Serialize {
    type Out;
    fn address(&self) -> &RowKey;
    fn decode(row: &sqlx::any::AnyRow) -> Result<Self::Out, sqlx::Error>;
}

impl RoundWrite for RowWrite {
    /// Version and live-since version.
    type Out = (i64, i64);
    fn address(&self) -> &RowKey {
        &self.address
    }
    fn decode(row: &sqlx::any::AnyRow) -> Result<Self::Out, sqlx::Error> {
        Ok((row.try_get(3)?, row.try_get(4)?))
    }
}

impl RoundWrite for RowSwap {
    /// The new version.
    type Out = i64;
    fn address(&self) -> &RowKey {
        &self.address
    }
    fn decode(row: &sqlx::any::AnyRow) -> Result<Self::Out, sqlx::Error> {
        row.try_get(3)
    }
}

/// Runs the writes `round` (indexes into `ops`, each key at most once) in one `statement`; what
/// it returns for each goes to its place in `written` (nothing for a write that changed no
/// row).
async fn run_round<'e, E, W: RoundWrite>(
    executor: E,
    statement: &str,
    ops: &[W],
    round: &[usize],
    written: &mut [Option<W::Out>],
) -> Result<(), sqlx::Error>
where
    E: sqlx::Executor<'e, Database = sqlx::Any>,
{
    let json = serde_json::to_string(&round.iter().map(|&i| &ops[i]).collect::<Vec<_>>())
        .map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
    let statement = traced(statement);
    let rows = statement.query().bind(json).fetch_all(executor).await?;
    let mut returned = std::collections::HashMap::with_capacity(rows.len());
    for row in &rows {
        let address = RowKey { tenant: row.try_get(0)?, collection: row.try_get(1)?, key: row.try_get(2)? };
        returned.insert(address, W::decode(row)?);
    }
    for &i in round {
        written[i] = returned.remove(ops[i].address());
    }
    Ok(())
}

/// The lone statement of one compare-and-swap write, as an unbatched write runs it.
async fn lone_swap(db: &Database, sql: &'static Statements, op: &RowSwap) -> Result<Option<i64>, sqlx::Error> {
    let RowKey { tenant, collection, key } = &op.address;
    let value = op.value.as_deref().unwrap_or("null");
    let from = op.from.unwrap_or(0);
    let statement = traced(match op.swap {
        Swap::Insert => &sql.insert_or_nothing,
        Swap::Update => &sql.update,
        Swap::Delete => &sql.delete_version,
        Swap::DeleteLive => &sql.delete,
    });
    let query = match op.swap {
        Swap::Insert => statement
            .query_scalar()
            .bind(tenant)
            .bind(collection)
            .bind(key)
            .bind(op.tag)
            .bind(op.now_ms)
            .bind(value)
            .bind(op.epoch),
        Swap::Update => statement
            .query_scalar()
            .bind(from + 1)
            .bind(op.now_ms)
            .bind(value)
            .bind(op.tag)
            .bind(tenant)
            .bind(collection)
            .bind(key)
            .bind(from)
            .bind(op.epoch),
        Swap::Delete => statement
            .query_scalar()
            .bind(from + 1)
            .bind(op.now_ms)
            .bind(tenant)
            .bind(collection)
            .bind(key)
            .bind(from)
            .bind(op.epoch),
        Swap::DeleteLive => {
            statement.query_scalar().bind(op.now_ms).bind(tenant).bind(collection).bind(key).bind(op.epoch)
        }
    };
    query.fetch_optional(&db.pool).await
}

/// Runs a batch of compare-and-swap writes through `db`'s health: per round (each key at most
/// once, in the order the writes came), the inserts in one statement and the updates and
/// tombstones in another; in one transaction when that is more than one statement. A batch of
/// one runs the lone statement.
async fn swap_batch(
    db: Database,
    sql: &'static Statements,
    swaps: Vec<RowSwap>,
) -> (BatchOutcome<Option<i64>>, std::time::Duration) {
    let started = std::time::Instant::now();
    let outcome = if let [op] = swaps.as_slice() {
        db.health().run(lone_swap(&db, sql, op)).await.map(|written| vec![written])
    } else {
        let addresses: Vec<&RowKey> = swaps.iter().map(|s| &s.address).collect();
        let rounds = rounds_by_key(&addresses);
        // Per round, the statements it needs: the inserts', the updates'.
        let statements: Vec<(&str, Vec<usize>)> = rounds
            .iter()
            .flat_map(|round| {
                let (inserts, others): (Vec<usize>, Vec<usize>) =
                    round.iter().partition(|&&i| swaps[i].swap == Swap::Insert);
                [(for_engine(&db, &sql.batch_swap[0]), inserts), (for_engine(&db, &sql.batch_swap[1]), others)]
            })
            .filter(|(_, ops)| !ops.is_empty())
            .collect();
        db.health().run(run_statements(&db, &statements, &swaps)).await
    };
    (outcome, started.elapsed())
}
