//! Secondary index entries on a shard: the SQL of the Index Table pattern, on both engines.
//!
//! An entry says "record `record_key` holds value `value_key` in index `index_name`". It lives
//! on the shard that owns its own vshard (`h(tenant, collection, index, value_key) mod V`), so
//! every entry of one value sits on one shard, and it refers to its record by key and by the
//! record's vshard, never by physical shard. This module does not know how values are encoded or
//! placed (that is `value_key.rs` and `placement.rs`): it takes the index name and
//! the value key as opaque text and relies on one property only, that the byte order of value
//! keys is the order of the values.
//!
//! The write protocol, run by `maintenance.rs`, never needs a transaction that spans two
//! shards:
//! 1. before the record commits, write an entry for the new value as `pending`
//!    ([`IndexEntryStore::put_pending`], or [`IndexEntryStore::claim_unique`] for a unique
//!    index), with the record version the write expects to commit;
//! 2. commit the record;
//! 3. [`IndexEntryStore::mark_live`] with the committed version, then
//!    [`IndexEntryStore::remove`] the old value's entry, only if no newer version rewrote it.
//!
//! A crash between the steps leaves a `pending` entry or a stale `live` one, never a record that
//! a look-up cannot find. Readers therefore check a `pending` entry (and any entry they doubt)
//! against its record, and delete the stale ones with
//! [`IndexEntryStore::remove_if_unchanged`], which only deletes the entry as it was read, so a
//! concurrent rewrite survives.
//!
//! Unique indexes: entries written by [`IndexEntryStore::claim_unique`] carry `unique_claim = 1`,
//! and a partial unique index lets at most one such entry exist per value, so the database
//! decides races between claimers, on both engines, in one statement. A loser learns who holds
//! the value ([`Claim::Held`]); if the holder is stale, [`IndexEntryStore::take_over`] moves the
//! claim to the new record only if it is still exactly what was read (compare-and-swap).
//!
//! Every statement is bound to one shard: a store serves one [`Database`], and the caller picks
//! the shard from the entry's vshard. An equality look-up is one statement on one shard; a range
//! look-up must ask every shard (entries are placed by hash) and merge the sorted pages. Each
//! store can count the statements it runs ([`IndexEntryStore::counting`]), so a test or a metric
//! can show which shards a look-up touched.

use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};

use sqlx::Row;

use shardgate_shard_router::records::{MAX_WRITE_ATTEMPTS, backoff};
use shardgate_shard_router::shard::OnShard;
use shardgate_shard_router::sql_comment::{Sql, traced};
use shardgate_shard_router::{CollectionName, Error as StoreError, FencedShard, RecordKey, ShardStore, TenantId};

use crate::error::IndexError;

/// The columns every read returns, in the order [`IndexEntryStore::entry`] reads them.
const ENTRY_COLUMNS: &str = "value_key, record_key, vshard, record_vshard, record_version, state, claimed_at, copy";

/// Inserts an entry unless the shard's fence is newer than the map the write was routed on.
/// `$1`–`$10`: tenant, collection, index, value key, record key, vshard, record vshard, record
/// version, claimed at, copy; `$11` the map epoch. The state and `unique_claim` are spliced in
/// by [`insert_sql`], the conflict clause appended.
const INSERT_ENTRY: &str = "INSERT INTO index_entries \
     (tenant, collection, index_name, value_key, record_key, vshard, record_vshard, record_version, \
      state, claimed_at, copy, unique_claim) \
     SELECT $1, $2, $3, $4, $5, $6, $7, $8, '{state}', $9, $10, {unique} \
     WHERE NOT EXISTS (SELECT 1 FROM shard_fence WHERE epoch > $11) \
     AND NOT EXISTS (SELECT 1 FROM vshard_fences WHERE vshard = $6)";

/// The condition that keeps an update or delete off the entries of a vshard that is moving off
/// this shard (or has moved: see the shard migration `0008_vshard_fences`).
const NOT_VSHARD_FENCED: &str = "NOT EXISTS (SELECT 1 FROM vshard_fences f WHERE f.vshard = index_entries.vshard)";

/// On a conflict with the same record's entry, rewrite it unless it already holds a newer
/// record version.
const UPSERT_NEWER: &str = " ON CONFLICT (tenant, collection, index_name, value_key, record_key) DO UPDATE SET \
     vshard = excluded.vshard, record_vshard = excluded.record_vshard, \
     record_version = excluded.record_version, state = excluded.state, claimed_at = excluded.claimed_at, \
     copy = excluded.copy \
     WHERE index_entries.record_version <= excluded.record_version \
     RETURNING record_version";

/// Matches one entry: `$1`–`$5` tenant, collection, index, value key, record key.
const WHERE_ENTRY: &str = "tenant = $1 AND collection = $2 AND index_name = $3 AND value_key = $4 AND record_key = $5";

/// Whether an entry's record has committed with the entry's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryState {
    /// Written before the record's write; the record may or may not hold the value (yet).
    Pending,
    /// The record committed with this value at the entry's record version.
    Live,
}

impl EntryState {
    /// The name stored in the `state` column.
    pub fn as_str(self) -> &'static str {
        match self {
            EntryState::Pending => "pending",
            EntryState::Live => "live",
        }
    }

    /// Parses a stored state.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "pending" => Some(EntryState::Pending),
            "live" => Some(EntryState::Live),
            _ => None,
        }
    }
}

/// One index of one collection: the scope of look-ups, scans and deletes.
#[derive(Debug, Clone, Copy)]
pub struct IndexScope<'a> {
    /// Tenant.
    pub tenant: &'a TenantId,
    /// Collection.
    pub collection: &'a CollectionName,
    /// The index name, as validated by `IndexName`.
    pub index: &'a str,
}

/// Identifies one entry.
#[derive(Debug, Clone, Copy)]
pub struct EntryKey<'a> {
    /// The index.
    pub scope: IndexScope<'a>,
    /// The encoded value.
    pub value_key: &'a str,
    /// The record holding the value.
    pub record_key: &'a str,
}

/// An entry to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexEntry {
    /// Tenant.
    pub tenant: TenantId,
    /// Collection.
    pub collection: CollectionName,
    /// The index name, as validated by `IndexName`.
    pub index: String,
    /// The encoded value (byte order is value order; never contains `0x00`).
    pub value_key: String,
    /// The record holding the value.
    pub record_key: RecordKey,
    /// The entry's own vshard: `h(tenant, collection, index, value_key) mod V`.
    pub vshard: u32,
    /// The record's vshard, so a reader finds the record without hashing again.
    pub record_vshard: u32,
    /// For a pending entry, the version the record's write expects to commit (the committed
    /// version is at least this); for a live one, the committed version.
    pub record_version: i64,
    /// When the entry is written (ms since the Unix epoch); a claim older than the caller's
    /// patience is stale.
    pub claimed_at_ms: i64,
    /// The covering or full copy of the record as JSON; `None` for normalized indexes.
    pub copy: Option<String>,
}

impl IndexEntry {
    /// The index this entry belongs to.
    pub fn scope(&self) -> IndexScope<'_> {
        IndexScope { tenant: &self.tenant, collection: &self.collection, index: &self.index }
    }

    /// The entry's key.
    pub fn key(&self) -> EntryKey<'_> {
        EntryKey { scope: self.scope(), value_key: &self.value_key, record_key: self.record_key.as_str() }
    }
}

/// An entry as stored (within a known [`IndexScope`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEntry {
    /// The encoded value.
    pub value_key: String,
    /// The record holding the value.
    pub record_key: String,
    /// The entry's own vshard.
    pub vshard: u32,
    /// The record's vshard.
    pub record_vshard: u32,
    /// See [`IndexEntry::record_version`].
    pub record_version: i64,
    /// Pending or live.
    pub state: EntryState,
    /// When the entry was last (re)claimed, ms since the Unix epoch.
    pub claimed_at_ms: i64,
    /// The covering or full copy, if the index keeps one.
    pub copy: Option<String>,
}

impl StoredEntry {
    /// This entry's key within `scope`.
    pub fn key<'a>(&'a self, scope: IndexScope<'a>) -> EntryKey<'a> {
        EntryKey { scope, value_key: &self.value_key, record_key: &self.record_key }
    }
}

/// The outcome of claiming a value of a unique index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The entry is written (pending): the value belongs to this record until its write ends.
    Won,
    /// Another record's entry holds the value. The caller reads that record (at
    /// `record_vshard`): if it holds the value, or the claim is pending and fresh, the answer is
    /// 409; if the holder is stale, [`IndexEntryStore::take_over`] with this entry.
    Held(StoredEntry),
}

/// A position in (value key, record key) order: look-ups continue strictly after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryAfter<'a> {
    /// The value key of the last entry seen.
    pub value_key: &'a str,
    /// The record key of the last entry seen.
    pub record_key: &'a str,
}

/// Index entry operations on one shard database.
#[derive(Debug, Clone, Copy)]
pub struct IndexEntryStore<'a> {
    shard: FencedShard<'a>,
    /// Incremented once per statement run, if set.
    statements: Option<&'a AtomicU64>,
}

impl<'a> ShardStore<'a> for IndexEntryStore<'a> {
    fn on(shard: FencedShard<'a>) -> Self {
        Self { shard, statements: None }
    }

    fn shard_mut(&mut self) -> &mut FencedShard<'a> {
        &mut self.shard
    }
}

impl<'a> IndexEntryStore<'a> {
    /// Adds one to `counter` for every statement this store runs on its shard (keep one counter
    /// per shard to see which shards a look-up touched).
    pub fn counting(self, counter: &'a AtomicU64) -> Self {
        Self { statements: Some(counter), ..self }
    }

    fn err(&self, source: sqlx::Error) -> IndexError {
        self.shard.err(source).into()
    }

    fn count(&self) {
        if let Some(counter) = self.statements {
            counter.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// After a fenced write changed nothing: [`StoreError::StaleMap`] if the shard's fence is
    /// why; [`StoreError::VshardFenced`] if the fence of `vshard` (when the caller knows which
    /// vshard placed the entry) is. A write the vshard fence refused whose vshard is not given
    /// looks like a lost race: entries left behind that way are what look-ups verify and repair.
    async fn check_fences(&self, vshard: Option<u32>) -> Result<(), IndexError> {
        self.count();
        match vshard {
            Some(vshard) => Ok(self.shard.check_vshard_fences(vshard).await?),
            None => Ok(self.shard.check_fence().await?),
        }
    }

    /// Whether a fenced write changed a row; one that changed nothing because of a fence is an
    /// error ([`IndexEntryStore::check_fences`]).
    async fn unless_fenced_out(&self, written: bool, vshard: Option<u32>) -> Result<bool, IndexError> {
        if !written {
            self.check_fences(vshard).await?;
        }
        Ok(written)
    }

    /// Runs a fenced write that returns the row it wrote or deleted (at most one); true if there
    /// was one (see [`IndexEntryStore::unless_fenced_out`]).
    async fn returned_row<'q>(
        &self,
        query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
        vshard: Option<u32>,
    ) -> Result<bool, IndexError> {
        self.count();
        let row = query.fetch_optional(self.shard.pool()).on_shard(&self.shard).await?;
        self.unless_fenced_out(row.is_some(), vshard).await
    }

    /// Binds an entry's values to `sql`, written with [`INSERT_ENTRY`]'s parameters.
    fn bind_entry<'q>(
        &self,
        sql: &'q Sql<'_>,
        entry: &'q IndexEntry,
    ) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
        sql.query()
            .bind(entry.tenant.as_str())
            .bind(entry.collection.as_str())
            .bind(entry.index.as_str())
            .bind(entry.value_key.as_str())
            .bind(entry.record_key.as_str())
            .bind(i64::from(entry.vshard))
            .bind(i64::from(entry.record_vshard))
            .bind(entry.record_version)
            .bind(entry.claimed_at_ms)
            .bind(entry.copy.as_deref())
            .bind(self.shard.map_epoch())
    }

    /// Runs an insert-or-update of `entry`; true if a row was written. A write that changed
    /// nothing because of the fence is [`StoreError::StaleMap`].
    async fn upsert(&self, entry: &IndexEntry, state: EntryState) -> Result<bool, IndexError> {
        let sql = format!("{}{UPSERT_NEWER}", insert_sql(state, false));
        self.returned_row(self.bind_entry(&traced(&sql), entry), Some(entry.vshard)).await
    }

    /// Writes `entry` as `pending` for a new value of a non-unique index, before the record's
    /// write. The same record's existing entry for this value is rewritten (as pending, with the
    /// new copy) unless it holds a newer record version; false if it did (nothing to do).
    ///
    /// Unique indexes use [`IndexEntryStore::claim_unique`] instead.
    pub async fn put_pending(&self, entry: &IndexEntry) -> Result<bool, IndexError> {
        self.upsert(entry, EntryState::Pending).await
    }

    /// Writes `entry` as `live` for a non-unique index, where its record is known to hold the
    /// value at `entry.record_version` (backfills, repairs); same rules as
    /// [`IndexEntryStore::put_pending`].
    pub async fn put_live(&self, entry: &IndexEntry) -> Result<bool, IndexError> {
        self.upsert(entry, EntryState::Live).await
    }

    /// Claims `entry`'s value of a unique index for its record: writes the entry as `pending`
    /// unless another record's entry holds the value, in which case that entry comes back as
    /// [`Claim::Held`]. Of concurrent claimers of one value exactly one wins (the database's
    /// unique index decides). A claim by the record that already holds the value is renewed
    /// (pending, new claim time, version and copy) unless that entry holds a newer version.
    ///
    /// Errors: [`StoreError::StaleMap`] if the fence is newer than the routing map;
    /// [`StoreError::WriteContention`] if the holder keeps changing under the claim.
    pub async fn claim_unique(&self, entry: &IndexEntry) -> Result<Claim, IndexError> {
        let insert =
            format!("{} ON CONFLICT DO NOTHING RETURNING record_version", insert_sql(EntryState::Pending, true));
        for attempt in 0..MAX_WRITE_ATTEMPTS {
            backoff(attempt).await;
            self.count();
            let inserted = self
                .bind_entry(&traced(&insert), entry)
                .fetch_optional(self.shard.pool())
                .on_shard(&self.shard)
                .await?;
            if inserted.is_some() {
                return Ok(Claim::Won);
            }
            self.check_fences(Some(entry.vshard)).await?;
            let Some(holder) = self.unique_holder(entry.scope(), &entry.value_key).await? else {
                // The holder went away between the two statements: claim again.
                continue;
            };
            if holder.record_key != entry.record_key.as_str() {
                return Ok(Claim::Held(holder));
            }
            if holder.record_version > entry.record_version || self.replace_claim(&holder, entry).await? {
                return Ok(Claim::Won);
            }
        }
        Err(StoreError::WriteContention.into())
    }

    /// Moves a unique value's claim from the stale holder `expected` (as returned in
    /// [`Claim::Held`]) to `entry`'s record, in one compare-and-swap: only if the holder's entry
    /// is still exactly as read (same record, state, claim time and record version). If it
    /// changed, the claim is refused and the current holder comes back as [`Claim::Held`]; if
    /// the holder's entry is gone, the value is claimed as by [`IndexEntryStore::claim_unique`].
    pub async fn take_over(&self, expected: &StoredEntry, entry: &IndexEntry) -> Result<Claim, IndexError> {
        if self.replace_claim(expected, entry).await? {
            return Ok(Claim::Won);
        }
        self.claim_unique(entry).await
    }

    /// Rewrites the unique entry `expected` as `entry` (pending) if it is unchanged; true if it
    /// was. [`StoreError::StaleMap`] if the fence refused the write.
    async fn replace_claim(&self, expected: &StoredEntry, entry: &IndexEntry) -> Result<bool, IndexError> {
        // The entry's values are bound as in [`INSERT_ENTRY`] ($1–$11); $12–$15 are what was read.
        let sql = "UPDATE index_entries SET record_key = $5, vshard = $6, record_vshard = $7, record_version = $8, \
                   state = 'pending', claimed_at = $9, copy = $10, unique_claim = 1 \
                   WHERE tenant = $1 AND collection = $2 AND index_name = $3 AND value_key = $4 AND record_key = $12 \
                   AND state = $13 AND claimed_at = $14 AND record_version = $15 AND unique_claim = 1 \
                   AND NOT EXISTS (SELECT 1 FROM shard_fence WHERE epoch > $11) \
                   AND NOT EXISTS (SELECT 1 FROM vshard_fences WHERE vshard = $6) RETURNING record_version";
        let sql = traced(sql);
        let query = self
            .bind_entry(&sql, entry)
            .bind(expected.record_key.as_str())
            .bind(expected.state.as_str())
            .bind(expected.claimed_at_ms)
            .bind(expected.record_version);
        self.returned_row(query, Some(entry.vshard)).await
    }

    /// The entry holding `value_key` in a unique index, if any.
    async fn unique_holder(&self, scope: IndexScope<'_>, value_key: &str) -> Result<Option<StoredEntry>, IndexError> {
        self.count();
        let sql = format!(
            "SELECT {ENTRY_COLUMNS} FROM index_entries \
             WHERE tenant = $1 AND collection = $2 AND index_name = $3 AND value_key = $4 AND unique_claim = 1"
        );
        let row = bind_scope(&traced(&sql), scope)
            .bind(value_key)
            .fetch_optional(self.shard.pool())
            .on_shard(&self.shard)
            .await?;
        row.map(|r| self.entry(&r)).transpose()
    }

    /// After the record committed at `record_version`: marks the entry `live` with that version
    /// and `copy`. False if there is no such entry (it was taken over or removed: the caller
    /// decides whether to write it again) or it already holds a newer version.
    pub async fn mark_live(
        &self,
        key: EntryKey<'_>,
        record_version: i64,
        copy: Option<&str>,
    ) -> Result<bool, IndexError> {
        let sql = format!(
            "UPDATE index_entries SET state = 'live', record_version = $6, copy = $7 \
             WHERE {WHERE_ENTRY} AND record_version <= $6 \
             AND NOT EXISTS (SELECT 1 FROM shard_fence WHERE epoch > $8) AND {NOT_VSHARD_FENCED} RETURNING record_version"
        );
        let sql = traced(&sql);
        self.returned_row(bind_key(&sql, key).bind(record_version).bind(copy).bind(self.shard.map_epoch()), None).await
    }

    /// After the record committed at `record_version` without this value: deletes the entry,
    /// pending or live, only if its record version is at most `record_version` (so the entry of
    /// a later write that set the value again survives). True if it was deleted.
    pub async fn remove(&self, key: EntryKey<'_>, record_version: i64) -> Result<bool, IndexError> {
        let sql = format!(
            "DELETE FROM index_entries WHERE {WHERE_ENTRY} AND record_version <= $6 \
             AND NOT EXISTS (SELECT 1 FROM shard_fence WHERE epoch > $7) AND {NOT_VSHARD_FENCED} RETURNING record_version"
        );
        let sql = traced(&sql);
        self.returned_row(bind_key(&sql, key).bind(record_version).bind(self.shard.map_epoch()), None).await
    }

    /// Deletes a stale entry found at read time (its record no longer holds the value), only if
    /// it is still exactly as read: same state, claim time and record version. True if deleted;
    /// false if a writer changed it meanwhile (it is then not stale, or its writer cleans up).
    pub async fn remove_if_unchanged(&self, scope: IndexScope<'_>, seen: &StoredEntry) -> Result<bool, IndexError> {
        let sql = format!(
            "DELETE FROM index_entries WHERE {WHERE_ENTRY} AND state = $6 AND claimed_at = $7 \
             AND record_version = $8 AND NOT EXISTS (SELECT 1 FROM shard_fence WHERE epoch > $9) \
             AND {NOT_VSHARD_FENCED} RETURNING record_version"
        );
        let sql = traced(&sql);
        let query = bind_key(&sql, seen.key(scope))
            .bind(seen.state.as_str())
            .bind(seen.claimed_at_ms)
            .bind(seen.record_version)
            .bind(self.shard.map_epoch());
        self.returned_row(query, None).await
    }

    /// The entry at `key`, if any.
    pub async fn get(&self, key: EntryKey<'_>) -> Result<Option<StoredEntry>, IndexError> {
        self.count();
        let sql = format!("SELECT {ENTRY_COLUMNS} FROM index_entries WHERE {WHERE_ENTRY}");
        let row = bind_key(&traced(&sql), key).fetch_optional(self.shard.pool()).on_shard(&self.shard).await?;
        row.map(|r| self.entry(&r)).transpose()
    }

    /// Entries (pending and live) holding exactly `value_key`, in record key order, after
    /// `after_record_key`, at most `limit`. One statement on this shard: all entries of a value
    /// live on the shard of the value's vshard.
    pub async fn lookup_eq(
        &self,
        scope: IndexScope<'_>,
        value_key: &str,
        after_record_key: Option<&str>,
        limit: u32,
    ) -> Result<Vec<StoredEntry>, IndexError> {
        // Entries of a vshard that moved off this shard are an old copy, never to be read.
        let mut sql = format!(
            "SELECT {ENTRY_COLUMNS} FROM index_entries \
             WHERE tenant = $1 AND collection = $2 AND index_name = $3 AND value_key = $4 \
             AND NOT EXISTS (SELECT 1 FROM vshard_fences f WHERE f.vshard = index_entries.vshard AND f.state = 'moved')"
        );
        let mut binds = vec![value_key.to_owned()];
        if let Some(after) = after_record_key {
            binds.push(after.to_owned());
            sql.push_str(" AND record_key > $5");
        }
        sql.push_str(&format!(" ORDER BY record_key LIMIT ${}", binds.len() + 4));
        self.fetch_entries(&sql, scope, binds, limit).await
    }

    /// Whether `vshard` has moved off this shard (its entries here are an old copy): a
    /// look-up that found nothing here then looks again on the shard of a newer map.
    pub async fn vshard_moved(&self, vshard: u32) -> Result<bool, IndexError> {
        self.count();
        let moved: Option<i64> = self
            .shard
            .read(|| {
                sqlx::query_scalar("SELECT vshard FROM vshard_fences WHERE vshard = $1 AND state = 'moved'")
                    .bind(i64::from(vshard))
                    .fetch_optional(self.shard.pool())
            })
            .await?;
        Ok(moved.is_some())
    }

    /// Entries (pending and live) of this shard whose value key lies within `from` and `to`,
    /// in (value key, record key) order, strictly after `after`, at most `limit`. Entries are
    /// placed by hash, so a range spans every shard: the caller asks each shard with the same
    /// bounds and cursor and merges the sorted pages.
    pub async fn lookup_range(
        &self,
        scope: IndexScope<'_>,
        from: Bound<&str>,
        to: Bound<&str>,
        after: Option<EntryAfter<'_>>,
        limit: u32,
    ) -> Result<Vec<StoredEntry>, IndexError> {
        let mut sql = format!(
            "SELECT {ENTRY_COLUMNS} FROM index_entries WHERE tenant = $1 AND collection = $2 AND index_name = $3"
        );
        let mut binds: Vec<String> = Vec::new();
        let mut bound = |sql: &mut String, op: &str, value: &str| {
            binds.push(value.to_owned());
            sql.push_str(&format!(" AND value_key {op} ${}", binds.len() + 3));
        };
        match from {
            Bound::Included(v) => bound(&mut sql, ">=", v),
            Bound::Excluded(v) => bound(&mut sql, ">", v),
            Bound::Unbounded => {}
        }
        match to {
            Bound::Included(v) => bound(&mut sql, "<=", v),
            Bound::Excluded(v) => bound(&mut sql, "<", v),
            Bound::Unbounded => {}
        }
        if let Some(after) = after {
            binds.push(after.value_key.to_owned());
            binds.push(after.record_key.to_owned());
            let (v, r) = (binds.len() + 2, binds.len() + 3);
            // The first condition lets both engines start the index scan at the cursor.
            sql.push_str(&format!(
                " AND value_key >= ${v} AND (value_key > ${v} OR (value_key = ${v} AND record_key > ${r}))"
            ));
        }
        sql.push_str(&format!(" ORDER BY value_key, record_key LIMIT ${}", binds.len() + 4));
        self.fetch_entries(&sql, scope, binds, limit).await
    }

    /// Every entry of the index on this shard, in (value key, record key) order after `after`,
    /// at most `limit`: the drift audit's walk.
    pub async fn scan_entries(
        &self,
        scope: IndexScope<'_>,
        after: Option<EntryAfter<'_>>,
        limit: u32,
    ) -> Result<Vec<StoredEntry>, IndexError> {
        self.lookup_range(scope, Bound::Unbounded, Bound::Unbounded, after, limit).await
    }

    /// Runs a look-up whose parameters are the scope, then `binds`, then the limit.
    async fn fetch_entries(
        &self,
        sql: &str,
        scope: IndexScope<'_>,
        binds: Vec<String>,
        limit: u32,
    ) -> Result<Vec<StoredEntry>, IndexError> {
        let sql = traced(sql);
        let mut query = bind_scope(&sql, scope);
        for value in binds {
            query = query.bind(value);
        }
        self.count();
        let rows = query.bind(i64::from(limit)).fetch_all(self.shard.pool()).on_shard(&self.shard).await?;
        rows.iter().map(|r| self.entry(r)).collect()
    }

    /// Deletes every entry of the index on this shard, `batch` entries per statement (so no
    /// statement holds locks for long); returns how many were deleted.
    pub async fn delete_index(&self, scope: IndexScope<'_>, batch: u32) -> Result<u64, IndexError> {
        let sql = "DELETE FROM index_entries WHERE tenant = $1 AND collection = $2 AND index_name = $3 \
                   AND (value_key, record_key) IN (SELECT value_key, record_key FROM index_entries \
                   WHERE tenant = $1 AND collection = $2 AND index_name = $3 ORDER BY value_key, record_key LIMIT $4)";
        let batch = batch.max(1);
        let mut deleted = 0;
        loop {
            self.count();
            let done = bind_scope(&traced(sql), scope)
                .bind(i64::from(batch))
                .execute(self.shard.pool())
                .on_shard(&self.shard)
                .await?;
            deleted += done.rows_affected();
            if done.rows_affected() < u64::from(batch) {
                return Ok(deleted);
            }
        }
    }

    /// Removes every entry of `tenant` on this shard.
    pub async fn purge_tenant(&self, tenant: &TenantId) -> Result<u64, IndexError> {
        self.count();
        let done = sqlx::query("DELETE FROM index_entries WHERE tenant = $1")
            .bind(tenant.as_str())
            .execute(self.shard.pool())
            .on_shard(&self.shard)
            .await?;
        Ok(done.rows_affected())
    }

    /// How many live entries `tenant` has here (of every index; pending ones not counted).
    pub async fn count_tenant(&self, tenant: &TenantId) -> Result<u64, IndexError> {
        self.count();
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM index_entries WHERE tenant = $1 AND state = 'live'")
            .bind(tenant.as_str())
            .fetch_one(self.shard.pool())
            .reading_on(&self.shard)
            .await?;
        Ok(u64::try_from(count).unwrap_or(0))
    }

    /// Reads a row of [`ENTRY_COLUMNS`].
    fn entry(&self, row: &sqlx::any::AnyRow) -> Result<StoredEntry, IndexError> {
        let corrupt = |what: &str| {
            IndexError::from(StoreError::Corrupt(format!("index entry {what} on shard {}", self.shard.id())))
        };
        let state: String = row.try_get(5).map_err(|e| self.err(e))?;
        let vshard: i64 = row.try_get(2).map_err(|e| self.err(e))?;
        let record_vshard: i64 = row.try_get(3).map_err(|e| self.err(e))?;
        Ok(StoredEntry {
            value_key: row.try_get(0).map_err(|e| self.err(e))?,
            record_key: row.try_get(1).map_err(|e| self.err(e))?,
            vshard: u32::try_from(vshard).map_err(|_| corrupt("vshard"))?,
            record_vshard: u32::try_from(record_vshard).map_err(|_| corrupt("record vshard"))?,
            record_version: row.try_get(4).map_err(|e| self.err(e))?,
            state: EntryState::parse(&state).ok_or_else(|| corrupt("state"))?,
            claimed_at_ms: row.try_get(6).map_err(|e| self.err(e))?,
            copy: row.try_get(7).map_err(|e| self.err(e))?,
        })
    }
}

/// [`INSERT_ENTRY`] with the state and the unique flag spliced in (constants, never input).
fn insert_sql(state: EntryState, unique: bool) -> String {
    INSERT_ENTRY.replace("{state}", state.as_str()).replace("{unique}", if unique { "1" } else { "0" })
}

/// `sql` with `$1`–`$3` bound to the scope.
fn bind_scope<'q>(
    sql: &'q Sql<'_>,
    scope: IndexScope<'q>,
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    sql.query().bind(scope.tenant.as_str()).bind(scope.collection.as_str()).bind(scope.index)
}

/// `sql` with `$1`–`$5` bound to the entry key ([`WHERE_ENTRY`]).
fn bind_key<'q>(sql: &'q Sql<'_>, key: EntryKey<'q>) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    bind_scope(sql, key.scope).bind(key.value_key).bind(key.record_key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_round_trip() {
        for state in [EntryState::Pending, EntryState::Live] {
            assert_eq!(EntryState::parse(state.as_str()), Some(state));
        }
        assert_eq!(EntryState::parse("gone"), None);
    }

    #[test]
    fn insert_statements_splice_only_constants() {
        let sql = insert_sql(EntryState::Live, true);
        assert!(sql.contains("'live', $9, $10, 1"), "{sql}");
        assert!(!sql.contains('{'));
    }
}
