//! Secondary indexes at work (the Index Table pattern): the definitions every instance keeps in
//! memory, index maintenance around record writes, look-ups that verify every candidate against
//! its record, and the backfill job.
//!
//! Consistency without distributed transactions:
//! - a write puts the entry of the record's new value (state `pending`) on its index shard
//!   *before* the record commits, and removes the old value's entry *after*; a failure in between
//!   leaves at most an extra entry, never a missing one;
//! - a look-up reads each candidate's record and keeps it only if the record holds the value now;
//!   an entry whose record does not (and that is not a fresh in-flight claim) is removed on the
//!   spot (conditionally on what was read);
//! - a unique index lets one record claim a value: the database refuses a second claim, and a
//!   claim is taken over only when its record no longer holds the value and it is not a fresh
//!   in-flight write.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::http::StatusCode;
use parking_lot::RwLock;
use serde_json::Value;
use shardgate_index_tables::{IndexDef, RecordVersion, ValueKey, merge_pages};
use shardgate_shard_router::catalog::{Audit, JobRow};
use shardgate_shard_router::index_entries::{Claim, EntryAfter, IndexEntry, IndexEntryStore, IndexScope, StoredEntry};
use shardgate_shard_router::records::{ListBounds, RecordAddress, RecordRead, RecordStore, StoredRecord};
use shardgate_shard_router::{Access, CollectionName, Database, RecordKey, ShardId, TenantId, now_ms};

use crate::app::App;
use crate::error::ApiError;

/// A pending claim younger than this is a write in flight: it blocks a unique value and is not
/// repaired away.
const IN_FLIGHT_MS: i64 = 30_000;

/// Whether an index answers look-ups yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexState {
    /// Its backfill runs: writes maintain it, look-ups get 409 `index_building`.
    Building,
    /// Complete.
    Active,
}

/// One index as this instance knows it.
#[derive(Debug, Clone)]
pub struct LiveIndex {
    /// Tenant.
    pub tenant: TenantId,
    /// Collection.
    pub collection: CollectionName,
    /// The definition.
    pub def: IndexDef,
    /// Building or active.
    pub state: IndexState,
    /// Its backfill job.
    pub job_id: Option<String>,
    /// Creation time (ms).
    pub created_at_ms: i64,
}

impl LiveIndex {
    fn scope(&self) -> IndexScope<'_> {
        IndexScope { tenant: &self.tenant, collection: &self.collection, index: self.def.name().as_str() }
    }
}

/// The indexes of each tenant's collections (nested, so a record write looks its collection up
/// without allocating).
type ByCollection = HashMap<String, HashMap<String, Vec<Arc<LiveIndex>>>>;

/// The index definitions of every tenant collection, reloaded when the map epoch moves.
#[derive(Debug, Default)]
pub struct IndexRegistry {
    by_collection: RwLock<ByCollection>,
    loaded_epoch: AtomicU64,
}

impl IndexRegistry {
    /// Reloads the definitions from the catalog if the map epoch moved since the last load.
    pub async fn follow(&self, app: &App, epoch: u64) -> Result<(), ApiError> {
        if self.loaded_epoch.load(Ordering::Acquire) == epoch && epoch != 0 {
            return Ok(());
        }
        let rows = app.router.catalog().index_defs().await?;
        let mut by_collection = ByCollection::new();
        for row in rows {
            let (Ok(def), Ok(tenant), Ok(collection)) = (
                serde_json::from_str::<IndexDef>(&row.definition),
                TenantId::parse(&row.tenant),
                CollectionName::parse(&row.collection),
            ) else {
                tracing::error!(tenant = row.tenant, index = row.name, "unreadable index definition in the catalog");
                continue;
            };
            let state = if row.state == "active" { IndexState::Active } else { IndexState::Building };
            let index =
                LiveIndex { tenant, collection, def, state, job_id: row.job_id, created_at_ms: row.created_at_ms };
            by_collection.entry(row.tenant).or_default().entry(row.collection).or_default().push(Arc::new(index));
        }
        *self.by_collection.write() = by_collection;
        self.loaded_epoch.store(epoch, Ordering::Release);
        Ok(())
    }

    /// The indexes of a collection.
    pub fn for_collection(&self, tenant: &str, collection: &str) -> Vec<Arc<LiveIndex>> {
        self.by_collection.read().get(tenant).and_then(|c| c.get(collection)).cloned().unwrap_or_default()
    }

    /// One index.
    pub fn get(&self, tenant: &str, collection: &str, name: &str) -> Option<Arc<LiveIndex>> {
        self.for_collection(tenant, collection).into_iter().find(|i| i.def.name().as_str() == name)
    }
}

fn index_error(e: shardgate_index_tables::IndexError) -> ApiError {
    ApiError::bad_request("invalid_index_value", e.to_string())
}

fn unique_violation(index: &LiveIndex) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "unique_violation",
        format!("another record already has this value in the unique index {}", index.def.name()),
    )
}

/// Labels of the per-shard index query counter.
#[derive(Debug, Clone, Hash, PartialEq, Eq, prometheus_client::encoding::EncodeLabelSet)]
pub struct ShardLabels {
    /// Shard id.
    pub shard: String,
}

/// The counter of index entry statements run by look-ups on `shard`.
fn queries_on(app: &App, shard: &ShardId) -> prometheus_client::metrics::counter::Counter {
    app.index_queries.get_or_create(&ShardLabels { shard: shard.to_string() }).clone()
}

/// The shard store holding `entry`'s vshard.
fn entry_store(app: &App, vshard: u32, access: Access) -> Result<(ShardId, Database, u64), ApiError> {
    Ok(app.router.resolve_vshard(vshard, access)?)
}

/// An entry written before a record commit, to be made live (or removed) after.
#[derive(Debug)]
pub struct PendingEntry {
    index: Arc<LiveIndex>,
    entry: IndexEntry,
}

/// What a record write does to the collection's indexes, prepared before the commit.
#[derive(Debug)]
pub struct Maintenance {
    record_key: RecordKey,
    written: Vec<PendingEntry>,
    removals: Vec<(Arc<LiveIndex>, ValueKey)>,
}

/// The record's current value and version (for index maintenance), if the collection has indexes.
pub async fn current_value(
    db: &Database,
    shard: &ShardId,
    addr: RecordAddress<'_>,
) -> Result<Option<(Value, i64)>, ApiError> {
    Ok(match RecordStore::new(db, shard).read(addr).await? {
        RecordRead::Live(record) => {
            Some((serde_json::from_str(record.value.get()).unwrap_or(Value::Null), record.version))
        }
        RecordRead::Gone(_) | RecordRead::Absent => None,
    })
}

/// Before a record write turns `old` into `new` (`None`: deleted) in a collection with
/// `indexes`: writes the new values' entries (pending) and claims unique values; 409 `unique_violation` if another record holds one.
pub async fn prepare(
    app: &App,
    indexes: Vec<Arc<LiveIndex>>,
    addr: RecordAddress<'_>,
    record_vshard: u32,
    old: Option<&(Value, i64)>,
    new: Option<&Value>,
) -> Result<Maintenance, ApiError> {
    let mut maintenance = Maintenance { record_key: addr.key.clone(), written: Vec::new(), removals: Vec::new() };
    let expected_version = old.map_or(1, |(_, version)| version + 1);
    let vshard_count = app.router.vshard_count();
    for index in indexes {
        let change = index.def.change(old.map(|(v, _)| v), new).map_err(index_error)?;
        if let Some(old_key) = change.remove {
            maintenance.removals.push((index.clone(), old_key));
        }
        let (Some(new_key), Some(value)) = (change.write, new) else { continue };
        let record = RecordVersion {
            tenant: addr.tenant,
            collection: addr.collection,
            key: addr.key,
            vshard: record_vshard,
            version: expected_version,
            value,
        };
        let entry = index.def.entry(&record, &new_key, vshard_count, now_ms());
        let (shard, db, epoch) = entry_store(app, entry.vshard, Access::Write)?;
        let store = IndexEntryStore::new(&db, &shard).routed_at(epoch);
        if index.def.is_unique() {
            if let Err(e) = claim(app, &index, &store, &entry, addr).await {
                abandon(app, maintenance).await;
                return Err(e);
            }
        } else {
            store.put_pending(&entry).await?;
        }
        maintenance.written.push(PendingEntry { index, entry });
    }
    Ok(maintenance)
}

/// Claims a unique value for `addr`'s record.
async fn claim(
    app: &App,
    index: &LiveIndex,
    store: &IndexEntryStore<'_>,
    entry: &IndexEntry,
    addr: RecordAddress<'_>,
) -> Result<(), ApiError> {
    let mut attempt = store.claim_unique(entry).await?;
    for _ in 0..3 {
        let held = match attempt {
            Claim::Won => return Ok(()),
            Claim::Held(held) => held,
        };
        if held.record_key == addr.key.as_str() {
            // Our own record's claim (a rewrite with the same value): ours to update.
            store.put_pending(entry).await?;
            return Ok(());
        }
        if holds_value(app, index, addr.tenant, addr.collection, &held).await? != Holds::No {
            return Err(unique_violation(index));
        }
        attempt = store.take_over(&held, entry).await?;
    }
    Err(unique_violation(index))
}

#[derive(Debug, PartialEq, Eq)]
enum Holds {
    Yes,
    InFlight,
    No,
}

/// Whether the record an entry names holds the entry's value now (or may be about to: a fresh
/// pending claim).
async fn holds_value(
    app: &App,
    index: &LiveIndex,
    tenant: &TenantId,
    collection: &CollectionName,
    entry: &StoredEntry,
) -> Result<Holds, ApiError> {
    let Ok(key) = RecordKey::parse(&entry.record_key) else { return Ok(Holds::No) };
    let (route, db) = app.router.resolve(tenant, Access::Read)?;
    let read = RecordStore::new(&db, &route.shard).read(RecordAddress { tenant, collection, key: &key }).await?;
    if let RecordRead::Live(record) = read
        && value_key_of(index, &record) == Some(entry.value_key.clone())
    {
        return Ok(Holds::Yes);
    }
    let fresh = now_ms() - entry.claimed_at_ms < IN_FLIGHT_MS;
    Ok(if entry.state.as_str() == "pending" && fresh { Holds::InFlight } else { Holds::No })
}

fn value_key_of(index: &LiveIndex, record: &StoredRecord) -> Option<String> {
    let value: Value = serde_json::from_str(record.value.get()).ok()?;
    index.def.value_key(&value).ok().flatten().map(ValueKey::into_string)
}

/// After the record committed at `version`: the new entries go live, the old values' go.
pub async fn complete(app: &App, maintenance: Maintenance, version: i64, new: Option<&Value>) {
    for PendingEntry { index, entry } in maintenance.written {
        let result = async {
            let (shard, db, _) = entry_store(app, entry.vshard, Access::Write)?;
            let copy = new.and_then(|v| index.def.copy(v));
            IndexEntryStore::new(&db, &shard).mark_live(entry.key(), version, copy.as_deref()).await?;
            Ok::<_, ApiError>(())
        }
        .await;
        if let Err(e) = result {
            tracing::warn!(index = %index.def.name(), code = e.code(), "index entry left pending; look-ups verify it");
        }
    }
    let record_key = maintenance.record_key;
    let vshard_count = app.router.vshard_count();
    for (index, old_key) in maintenance.removals {
        let vshard = shardgate_index_tables::entry_vshard(
            &index.tenant,
            &index.collection,
            index.def.name(),
            &old_key,
            vshard_count,
        );
        let result = async {
            let (shard, db, _) = entry_store(app, vshard, Access::Write)?;
            let key = shardgate_shard_router::index_entries::EntryKey {
                scope: index.scope(),
                value_key: old_key.as_str(),
                record_key: record_key.as_str(),
            };
            IndexEntryStore::new(&db, &shard).remove(key, version).await?;
            Ok::<_, ApiError>(())
        }
        .await;
        if let Err(e) = result {
            tracing::warn!(index = %index.def.name(), code = e.code(), "old index entry left; look-ups repair it");
        }
    }
}

/// After a record write failed: its pending entries go (look-ups would drop them anyway).
pub async fn abandon(app: &App, maintenance: Maintenance) {
    for PendingEntry { entry, .. } in maintenance.written {
        if let Ok((shard, db, _)) = entry_store(app, entry.vshard, Access::Write) {
            let _ = IndexEntryStore::new(&db, &shard).remove(entry.key(), entry.record_version).await;
        }
    }
}

/// A page of look-up results.
#[derive(Debug)]
pub struct Found {
    /// The records that hold the value now, in (value, key) order.
    pub records: Vec<StoredRecord>,
    /// Where the next page starts: (value key, record key) of the last entry scanned.
    pub next: Option<(String, String)>,
    /// Index shards the look-up queried.
    pub shards_queried: usize,
}

/// What to look up.
#[derive(Debug)]
pub enum Lookup {
    /// One value (one index shard).
    Eq(ValueKey),
    /// Values in `[from, to)` (every shard holding entries, merged).
    Range {
        /// Lowest value (inclusive).
        from: Option<ValueKey>,
        /// Highest value (exclusive).
        to: Option<ValueKey>,
    },
}

/// Runs a look-up and verifies every candidate against its record.
pub async fn lookup(
    app: &App,
    index: &LiveIndex,
    what: &Lookup,
    after: Option<(String, String)>,
    limit: u32,
) -> Result<Found, ApiError> {
    let scope = index.scope();
    let after_ref = after.as_ref().map(|(v, r)| EntryAfter { value_key: v, record_key: r });
    let (entries, next, shards_queried) = match what {
        Lookup::Eq(value) => {
            let vshard = shardgate_index_tables::entry_vshard(
                &index.tenant,
                &index.collection,
                index.def.name(),
                value,
                app.router.vshard_count(),
            );
            let (shard, db, _) = entry_store(app, vshard, Access::Read)?;
            let after_key = after.as_ref().filter(|(v, _)| v == value.as_str()).map(|(_, r)| r.as_str());
            let counter = queries_on(app, &shard);
            let store = IndexEntryStore::new(&db, &shard).counting(counter.inner());
            let mut entries = store.lookup_eq(scope, value.as_str(), after_key, limit + 1).await?;
            let next = if entries.len() > limit as usize {
                entries.truncate(limit as usize);
                entries.last().map(|e| (e.value_key.clone(), e.record_key.clone()))
            } else {
                None
            };
            (entries, next, 1)
        }
        Lookup::Range { from, to } => {
            use std::ops::Bound;
            let from = from.as_ref().map_or(Bound::Unbounded, |v| Bound::Included(v.as_str()));
            let to = to.as_ref().map_or(Bound::Unbounded, |v| Bound::Excluded(v.as_str()));
            let shards: Vec<_> = app
                .router
                .shard_dbs()
                .into_iter()
                .filter(|(_, state, _)| *state != shardgate_shard_router::ShardState::Offline)
                .collect();
            let pages = futures::future::try_join_all(shards.iter().map(|(shard, _, db)| {
                let after = after_ref.as_ref().map(|a| EntryAfter { value_key: a.value_key, record_key: a.record_key });
                let counter = queries_on(app, shard);
                async move {
                    let store = IndexEntryStore::new(db, shard).counting(counter.inner());
                    store.lookup_range(scope, from, to, after, limit + 1).await
                }
            }))
            .await?;
            let merged = merge_pages(pages, limit);
            let next = merged.next.map(|c| (c.value_key, c.record_key));
            (merged.entries, next, shards.len())
        }
    };
    let (records, _) = verify(app, index, entries).await?;
    Ok(Found { records, next, shards_queried })
}

/// Reads each candidate's record (in parallel, from the tenant's home shard) and keeps those that
/// hold the entry's value now; repairs the others. Returns the records kept and how many entries
/// were removed.
async fn verify(app: &App, index: &LiveIndex, entries: Vec<StoredEntry>) -> Result<(Vec<StoredRecord>, u64), ApiError> {
    let (route, db) = app.router.resolve(&index.tenant, Access::Read)?;
    let store = RecordStore::new(&db, &route.shard);
    let reads = futures::future::try_join_all(entries.iter().map(|entry| {
        let store = &store;
        async move {
            let Ok(key) = RecordKey::parse(&entry.record_key) else { return Ok(RecordRead::Absent) };
            store.read(RecordAddress { tenant: &index.tenant, collection: &index.collection, key: &key }).await
        }
    }))
    .await?;
    let mut found = Vec::with_capacity(entries.len());
    let mut repaired = 0;
    for (entry, read) in entries.iter().zip(reads) {
        match read {
            RecordRead::Live(record) if value_key_of(index, &record).as_deref() == Some(entry.value_key.as_str()) => {
                found.push(record);
            }
            _ => {
                let in_flight = entry.state.as_str() == "pending" && now_ms() - entry.claimed_at_ms < IN_FLIGHT_MS;
                if !in_flight && repair(app, index, entry).await {
                    repaired += 1;
                }
            }
        }
    }
    Ok((found, repaired))
}

/// Removes an entry whose record no longer holds its value (only if it is still as read).
/// Returns whether it did.
async fn repair(app: &App, index: &LiveIndex, entry: &StoredEntry) -> bool {
    let result = async {
        let (shard, db, _) = entry_store(app, entry.vshard, Access::Write)?;
        Ok::<_, ApiError>(IndexEntryStore::new(&db, &shard).remove_if_unchanged(index.scope(), entry).await?)
    }
    .await;
    match result {
        Ok(true) => {
            app.index_repairs.inc();
            tracing::info!(index = %index.def.name(), record = entry.record_key, "removed a stale index entry");
            true
        }
        Ok(false) => false,
        Err(e) => {
            tracing::warn!(index = %index.def.name(), code = e.code(), "could not repair a stale index entry");
            false
        }
    }
}

/// The entry a stored record needs in `index` (`None`: the record is not indexed).
fn expected_entry(
    index: &LiveIndex,
    record: &StoredRecord,
    record_vshard: u32,
    vshard_count: u32,
) -> Result<Option<(RecordKey, IndexEntry)>, ApiError> {
    let Ok(key) = RecordKey::parse(&record.key) else { return Ok(None) };
    let value: Value = serde_json::from_str(record.value.get()).unwrap_or(Value::Null);
    let version = RecordVersion {
        tenant: &index.tenant,
        collection: &index.collection,
        key: &key,
        vshard: record_vshard,
        version: record.version,
        value: &value,
    };
    let entry = index.def.entry_for(&version, vshard_count, now_ms()).map_err(index_error)?;
    Ok(entry.map(|entry| (key, entry)))
}

/// How many records a backfill reads per page.
const BACKFILL_PAGE: u32 = 500;

/// Starts (or resumes) the backfill `job` of an index in the background.
pub fn spawn_backfill(app: std::sync::Weak<App>, job: JobRow) {
    tokio::spawn(async move {
        // Let every instance learn the definition first (they poll the catalog every 500 ms), so
        // that writes after the scan passed a key maintain the index themselves.
        tokio::time::sleep(Duration::from_millis(1_200)).await;
        let Some(strong) = app.upgrade() else { return };
        if let Err(e) = backfill(&strong, &job).await {
            tracing::error!(job = job.id, code = e.code(), detail = e.detail(), "index backfill failed");
            let _ = strong.router.catalog().update_job(&job.id, "failed", &job.progress, Some(e.detail())).await;
        }
    });
}

async fn backfill(app: &App, job: &JobRow) -> Result<(), ApiError> {
    app.indexes.follow(app, app.router.epoch()).await?;
    let index = job_index(app, job)?;
    let (tenant, collection, name) = (index.tenant.as_str(), index.collection.as_str(), index.def.name().as_str());
    let progress: Value = serde_json::from_str(&job.progress).unwrap_or(Value::Null);
    let mut after = progress["after"].as_str().map(str::to_owned);
    let mut indexed = progress["indexed"].as_u64().unwrap_or(0);
    let vshard_count = app.router.vshard_count();
    loop {
        let (route, db) = app.router.resolve(&index.tenant, Access::Read)?;
        let bounds = ListBounds { after: after.clone(), ..ListBounds::default() };
        let page =
            RecordStore::new(&db, &route.shard).list(&index.tenant, &index.collection, &bounds, BACKFILL_PAGE).await?;
        for record in &page {
            let Some((key, entry)) = expected_entry(&index, record, route.vshard, vshard_count)? else { continue };
            let (shard, entry_db, epoch) = entry_store(app, entry.vshard, Access::Write)?;
            let store = IndexEntryStore::new(&entry_db, &shard).routed_at(epoch);
            if index.def.is_unique() {
                let addr = RecordAddress { tenant: &index.tenant, collection: &index.collection, key: &key };
                claim(app, &index, &store, &entry, addr).await.map_err(|_| {
                    ApiError::new(
                        StatusCode::CONFLICT,
                        "unique_violation",
                        format!("two records hold the same value of the unique index (one is {})", record.key),
                    )
                })?;
                store.mark_live(entry.key(), record.version, entry.copy.as_deref()).await?;
            } else {
                store.put_live(&entry).await?;
            }
            indexed += 1;
        }
        after = page.last().map(|r| r.key.clone()).or(after);
        let progress = serde_json::json!({"after": after, "indexed": indexed}).to_string();
        if !app.router.catalog().update_job(&job.id, "running", &progress, None).await? {
            return Ok(()); // cancelled (the index was deleted)
        }
        if page.len() < BACKFILL_PAGE as usize {
            let audit = Audit {
                actor: "system".into(),
                tenant: Some(index.tenant.to_string()),
                action: "index.active",
                target: format!("index:{}", job.target),
                request_id: job.id.clone(),
            };
            app.router.catalog().set_index_state(tenant, collection, name, "active", &audit).await?;
            app.router.catalog().update_job(&job.id, "done", &progress, None).await?;
            app.indexes.follow(app, app.router.refresh().await?.epoch).await?;
            return Ok(());
        }
    }
}

/// Starts a drift audit of an index (job kind `index.audit`): every record must have its entry
/// (missing ones are written) and every entry must name a record holding its value (dangling ones
/// are removed). The counts are the job's progress and the `index_audit_*` metrics.
pub fn spawn_audit(app: std::sync::Weak<App>, job: JobRow) {
    tokio::spawn(async move {
        let Some(strong) = app.upgrade() else { return };
        if let Err(e) = audit(&strong, &job).await {
            tracing::error!(job = job.id, code = e.code(), detail = e.detail(), "index audit failed");
            let _ = strong.router.catalog().update_job(&job.id, "failed", &job.progress, Some(e.detail())).await;
        }
    });
}

/// The index a job works on (`tenant/collection/index`).
fn job_index(app: &App, job: &JobRow) -> Result<Arc<LiveIndex>, ApiError> {
    let mut parts = job.target.splitn(3, '/');
    let (Some(tenant), Some(collection), Some(name)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(ApiError::internal(&format!("job {} has target {}", job.id, job.target)));
    };
    app.indexes.get(tenant, collection, name).ok_or_else(|| {
        ApiError::new(StatusCode::NOT_FOUND, "index_not_found", format!("job {}: the index is gone", job.id))
    })
}

async fn audit(app: &App, job: &JobRow) -> Result<(), ApiError> {
    let index = job_index(app, job)?;
    let vshard_count = app.router.vshard_count();
    let (mut records, mut entries_seen, mut missing, mut dangling) = (0u64, 0u64, 0u64, 0u64);
    // Every record has its entry.
    let mut after: Option<String> = None;
    loop {
        let (route, db) = app.router.resolve(&index.tenant, Access::Read)?;
        let bounds = ListBounds { after: after.clone(), ..ListBounds::default() };
        let page =
            RecordStore::new(&db, &route.shard).list(&index.tenant, &index.collection, &bounds, BACKFILL_PAGE).await?;
        for record in &page {
            records += 1;
            let Ok(Some((key, entry))) = expected_entry(&index, record, route.vshard, vshard_count) else { continue };
            let (shard, entry_db, epoch) = entry_store(app, entry.vshard, Access::Write)?;
            let store = IndexEntryStore::new(&entry_db, &shard).routed_at(epoch);
            if store.get(entry.key()).await?.is_none() {
                missing += 1;
                if index.def.is_unique() {
                    let addr = RecordAddress { tenant: &index.tenant, collection: &index.collection, key: &key };
                    if claim(app, &index, &store, &entry, addr).await.is_ok() {
                        store.mark_live(entry.key(), record.version, entry.copy.as_deref()).await?;
                    }
                } else {
                    store.put_live(&entry).await?;
                }
            }
        }
        after = page.last().map(|r| r.key.clone()).or(after);
        if page.len() < BACKFILL_PAGE as usize {
            break;
        }
    }
    // Every entry names a record holding its value.
    for (shard, state, db) in app.router.shard_dbs() {
        if state == shardgate_shard_router::ShardState::Offline {
            continue;
        }
        let store = IndexEntryStore::new(&db, &shard);
        let mut cursor: Option<(String, String)> = None;
        loop {
            let after = cursor.as_ref().map(|(v, r)| EntryAfter { value_key: v, record_key: r });
            let page = store.scan_entries(index.scope(), after, BACKFILL_PAGE).await?;
            entries_seen += page.len() as u64;
            cursor = page.last().map(|e| (e.value_key.clone(), e.record_key.clone()));
            let full = page.len() == BACKFILL_PAGE as usize;
            dangling += verify(app, &index, page).await?.1;
            if !full {
                break;
            }
        }
    }
    app.index_audit_missing.inc_by(missing);
    app.index_audit_dangling.inc_by(dangling);
    let progress =
        serde_json::json!({"records": records, "entries": entries_seen, "missing": missing, "dangling": dangling})
            .to_string();
    app.router.catalog().update_job(&job.id, "done", &progress, None).await?;
    Ok(())
}
