//! Records on a shard: read, conditional write, tombstoning delete ([`RecordStore`], here), ordered
//! listing (`listing`), what the jobs that move data do with them (`maintenance`), the SQL of
//! the record tables (`sql`) and how point operations reach the database, alone or batched
//! (`batches`).
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

use crate::map::{Route, Strategy};
use crate::storage::batch::{BatchOutcome, BatchReply, Batcher, RowKey, RowRead, RowSwap, RowWrite, Swap};
use crate::storage::meter::Sample;
use crate::storage::shard::{FenceLayout, FencedShard, OnShard, ShardStore};

mod batches;
mod listing;
mod maintenance;
mod sql;

use batches::{lone_read, lone_swap, lone_write, read_batch, swap_batch, write_batch};
pub use sql::{CheckingListing, ListBounds, home_upsert_sql, listing_in_vshards_sql, postgres_batch_sql};
use sql::{HOME, SPREAD, Statements};
pub(crate) use sql::{keys_within, sql_text};

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
}
