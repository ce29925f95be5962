//! One shard database as the stores on it (records, blobs, index entries) see it: the pool, the
//! shard's id (named in errors), and the epoch of the shard map a write was routed on, which the
//! shard's write fence is checked against.
//!
//! # The write fence
//!
//! Every shard holds one row `shard_fence (id = 1, epoch)`. When the map changes so that instances
//! still routing on an older one must stop writing here (the shard leaves the active state, a
//! tenant is deleted), the fence is raised to the new map's epoch
//! ([`FencedShard::raise_fence`]). Every fenced
//! write carries its map epoch as a condition, `... AND NOT EXISTS (SELECT 1 FROM shard_fence
//! WHERE epoch > $n)`, bound to [`FencedShard::map_epoch`]. A write that changed nothing is then
//! either a lost race or a refusal by the fence; [`FencedShard::check_fence`] tells which.

use std::time::Instant;

use crate::error::Error;
use crate::ids::{CollectionName, ShardId, TenantId};
use crate::storage::db::Database;
use crate::storage::health::Refusal;
use crate::storage::meter::Sample;

/// A shard database and the map epoch its writes are routed on. A store on a shard holds one
/// and reaches its pool, its id and its fence through it.
#[derive(Debug, Clone, Copy)]
pub struct FencedShard<'a> {
    db: &'a Database,
    id: &'a ShardId,
    /// The epoch of the map the writes were routed on; the shard refuses them if its fence is
    /// newer. `i64::MAX` when not fenced.
    map_epoch: i64,
}

impl<'a> FencedShard<'a> {
    /// Shard `id` reached through `db`. Writes are not fenced (for maintenance such as purges
    /// and backfills); use [`FencedShard::routed_at`] for routed requests.
    pub fn new(db: &'a Database, id: &'a ShardId) -> Self {
        Self { db, id, map_epoch: i64::MAX }
    }

    /// Fenced writes will be refused with [`Error::StaleMap`] if the shard's fence is newer than
    /// `epoch` (the map they were routed on).
    pub fn routed_at(self, epoch: u64) -> Self {
        Self { map_epoch: epoch_param(epoch), ..self }
    }

    /// The shard's database.
    pub fn db(&self) -> &'a Database {
        self.db
    }

    /// The shard's pool.
    pub fn pool(&self) -> &'a sqlx::AnyPool {
        &self.db.pool
    }

    /// The shard's id.
    pub fn id(&self) -> &'a ShardId {
        self.id
    }

    /// The value to bind to a fenced write's `shard_fence WHERE epoch > $n` condition.
    pub fn map_epoch(&self) -> i64 {
        self.map_epoch
    }

    /// A driver error on this shard, as [`Error::Database`] naming it.
    pub fn err(&self, source: sqlx::Error) -> Error {
        shard_error(self.id, source)
    }

    /// A statement's refusal by the shard's [`crate::storage::health::Health`], as an error naming it.
    pub fn refused(&self, refusal: Refusal) -> Error {
        match refusal {
            Refusal::Sql(source) => self.err(source),
            refusal => Error::ShardRefused { shard: self.id.clone(), refusal },
        }
    }

    /// Runs a read that may safely run twice through the shard's health (breaker, bulkhead,
    /// deadline, one retry on a broken connection: [`crate::storage::health::Health::run_idempotent`]).
    pub async fn read<T, F, Fut>(&self, statement: F) -> Result<T, Error>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<T, sqlx::Error>>,
    {
        let started = self.db.is_metered().then(Instant::now);
        let result = self.db.health().run_idempotent(statement).await;
        self.measure(false, started, result.is_err());
        result.map_err(|r| self.refused(r))
    }

    /// Runs `statement`, which writes, on this shard ([`OnShard::on_shard`]); what it returns is
    /// left aside.
    async fn execute<'q>(
        &self,
        statement: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    ) -> Result<(), Error> {
        statement.execute(self.pool()).on_shard(self).await?;
        Ok(())
    }

    /// Counts an operation's share `elapsed` of a batch's statement time for this shard (see
    /// [`crate::storage::batch`]): the load picture counts each operation, not each batch.
    pub(crate) fn measure_share(&self, write: bool, elapsed: std::time::Duration, failed: bool) {
        if self.db.is_metered() {
            self.db.record(self.id, Sample::statement(write, elapsed, failed));
        }
    }

    /// Counts a statement that began at `started` (if the database is metered) for this shard.
    fn measure(&self, write: bool, started: Option<Instant>, failed: bool) {
        if let Some(started) = started {
            self.db.record(self.id, Sample::statement(write, started.elapsed(), failed));
        }
    }

    /// Counts rows and bytes a statement read or wrote ([`Sample::rows_read`],
    /// [`Sample::rows_written`]) for this shard.
    pub fn count(&self, sample: Sample) {
        self.db.record(self.id, sample);
    }

    /// After a fenced write changed nothing: [`Error::StaleMap`] if the fence is why.
    pub async fn check_fence(&self) -> Result<(), Error> {
        let fence: i64 = sqlx::query_scalar("SELECT epoch FROM shard_fence WHERE id = 1")
            .fetch_one(self.pool())
            .on_shard(self)
            .await?;
        if fence > self.map_epoch { Err(Error::StaleMap(self.id.clone())) } else { Ok(()) }
    }

    /// What a fenced write returned (`None`: it changed nothing), unless the fence is why it
    /// changed nothing: then [`Error::StaleMap`]. A `None` that comes back is a lost race.
    pub async fn unless_fenced_out<T>(&self, written: Option<T>) -> Result<Option<T>, Error> {
        if written.is_none() {
            self.check_fence().await?;
        }
        Ok(written)
    }

    /// After a fenced write of `tenant` changed nothing: [`Error::StaleMap`] if the shard's fence
    /// is why, [`Error::TenantFenced`] if the tenant's own fence is (it is moving or has moved to
    /// another shard: see `moves::mover`).
    pub async fn check_fences(&self, tenant: &TenantId) -> Result<(), Error> {
        self.check_fence().await?;
        match self.tenant_fence(tenant).await? {
            Some(_) => Err(Error::TenantFenced { shard: self.id.clone(), tenant: tenant.clone() }),
            None => Ok(()),
        }
    }

    /// [`FencedShard::unless_fenced_out`] for a write of `tenant`, which the tenant's fence
    /// refuses too ([`FencedShard::check_fences`]).
    pub async fn unless_fenced_out_for<T>(&self, tenant: &TenantId, written: Option<T>) -> Result<Option<T>, Error> {
        if written.is_none() {
            self.check_fences(tenant).await?;
        }
        Ok(written)
    }

    /// After a read of `tenant` found nothing: [`Error::TenantMoved`] if the tenant has moved to
    /// another shard (what is left here is an old copy, never to be read).
    pub async fn check_moved(&self, tenant: &TenantId) -> Result<(), Error> {
        match self.tenant_fence(tenant).await? {
            Some(TenantFence::Moved) => Err(Error::TenantMoved { shard: self.id.clone(), tenant: tenant.clone() }),
            _ => Ok(()),
        }
    }

    /// The fence this shard holds for `tenant`, if any.
    pub async fn tenant_fence(&self, tenant: &TenantId) -> Result<Option<TenantFence>, Error> {
        self.fence_state("tenant_fences", "tenant = $1", tenant.as_str().to_owned(), "tenant").await
    }

    /// The fence this shard holds for `vshard`, if any.
    pub async fn vshard_fence(&self, vshard: u32) -> Result<Option<TenantFence>, Error> {
        self.fence_state("vshard_fences", "vshard = $1", i64::from(vshard), "vshard").await
    }

    /// The state of the fence in `table` where `condition` (on `$1`, bound to `value`) holds.
    async fn fence_state<V>(
        &self,
        table: &str,
        condition: &str,
        value: V,
        kind: &str,
    ) -> Result<Option<TenantFence>, Error>
    where
        V: for<'q> sqlx::Encode<'q, sqlx::Any> + sqlx::Type<sqlx::Any> + Clone + Send,
    {
        let sql = format!("SELECT state FROM {table} WHERE {condition}");
        let state: Option<String> =
            self.read(|| sqlx::query_scalar(&sql).bind(value.clone()).fetch_optional(self.pool())).await?;
        self.fence_of(state, kind)
    }

    /// The fence a `kind` fence's stored `state` names, if there is one.
    fn fence_of(&self, state: Option<String>, kind: &str) -> Result<Option<TenantFence>, Error> {
        state
            .map(|s| {
                TenantFence::parse(&s)
                    .ok_or_else(|| Error::Corrupt(format!("{kind} fence state {s:?} on shard {}", self.id)))
            })
            .transpose()
    }

    /// After a fenced write of an index entry placed by `vshard` changed nothing:
    /// [`Error::StaleMap`] if the shard's fence is why, [`Error::VshardFenced`] if the vshard's
    /// own fence is (it is moving or has moved to another shard).
    pub async fn check_vshard_fences(&self, vshard: u32) -> Result<(), Error> {
        self.check_fence().await?;
        match self.vshard_fence(vshard).await? {
            Some(_) => Err(Error::VshardFenced { shard: self.id.clone(), vshard }),
            None => Ok(()),
        }
    }

    /// The fence this shard holds over the key `key` of `tenant`'s range-distributed
    /// `collection`, if any.
    pub async fn range_fence(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        key: &str,
    ) -> Result<Option<TenantFence>, Error> {
        let sql = "SELECT state FROM range_fences WHERE tenant = $1 AND collection = $2 AND from_key <= $3 \
                   AND (until_key IS NULL OR $3 < until_key)";
        self.collection_fence_state(sql, [tenant.as_str(), collection.as_str(), key], "range").await
    }

    /// The state `sql` reads (binding `binds` as `$1`–`$3`) of a `kind` fence, if any.
    async fn collection_fence_state(
        &self,
        sql: &str,
        binds: [&str; 3],
        kind: &str,
    ) -> Result<Option<TenantFence>, Error> {
        let state: Option<String> = self
            .read(|| {
                let query = sqlx::query_scalar(sql);
                binds.iter().fold(query, |q, b| q.bind(*b)).fetch_optional(self.pool())
            })
            .await?;
        self.fence_of(state, kind)
    }

    /// After a fenced write of the record at `key` of a range-distributed collection changed
    /// nothing: [`Error::StaleMap`] if the shard's fence is why, [`Error::RangeFenced`] if the
    /// fence of the key's range is (it is moving or has moved to another shard).
    pub async fn check_range_fences(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        key: &str,
    ) -> Result<(), Error> {
        self.check_fence().await?;
        match self.range_fence(tenant, collection, key).await? {
            Some(_) => Err(self.range_fenced(tenant, collection)),
            None => Ok(()),
        }
    }

    /// [`Error::RangeFenced`] on this shard.
    pub fn range_fenced(&self, tenant: &TenantId, collection: &CollectionName) -> Error {
        Error::RangeFenced { shard: self.id.clone(), tenant: tenant.clone(), collection: collection.clone() }
    }

    /// The fence this shard holds over `tenant`'s `collection` in `layout`, if any (the
    /// collection changes, or has changed, its distribution).
    pub async fn collection_fence(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        layout: FenceLayout,
    ) -> Result<Option<TenantFence>, Error> {
        let sql = "SELECT state FROM collection_fences WHERE tenant = $1 AND collection = $2 AND layout = $3";
        self.collection_fence_state(sql, [tenant.as_str(), collection.as_str(), layout.as_str()], "collection").await
    }

    /// [`Error::CollectionFenced`] on this shard.
    pub fn collection_fenced(&self, tenant: &TenantId, collection: &CollectionName) -> Error {
        Error::CollectionFenced { shard: self.id.clone(), tenant: tenant.clone(), collection: collection.clone() }
    }

    /// Fences `tenant`'s `collection` in `layout` on this shard for job `job`: `frozen` (its
    /// writes refused, reads served; a fence already there stays as it is) or `moved` (its
    /// reads refused too).
    pub async fn fence_collection(
        &self,
        (tenant, collection, layout): (&TenantId, &CollectionName, FenceLayout),
        state: TenantFence,
        job: &str,
        now_ms: i64,
    ) -> Result<(), Error> {
        let on_conflict = match state {
            TenantFence::Moved => "DO UPDATE SET state = 'moved', job_id = excluded.job_id, since = excluded.since",
            TenantFence::Frozen => "DO NOTHING",
        };
        let sql = format!(
            "INSERT INTO collection_fences (tenant, collection, layout, state, job_id, since) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (tenant, collection, layout) {on_conflict}"
        );
        let insert = sqlx::query(&sql)
            .bind(tenant.as_str())
            .bind(collection.as_str())
            .bind(layout.as_str())
            .bind(state.as_str())
            .bind(job)
            .bind(now_ms);
        self.execute(insert).await
    }

    /// Removes the fences of `tenant`'s `collection` in `layout` (all layouts if `None`), or
    /// only the `frozen` one (`only_frozen`: a change of distribution rolled back).
    pub async fn unfence_collection(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        layout: Option<FenceLayout>,
        only_frozen: bool,
    ) -> Result<(), Error> {
        let frozen = if only_frozen { " AND state = 'frozen'" } else { "" };
        let sql = format!(
            "DELETE FROM collection_fences WHERE tenant = $1 AND collection = $2 AND ($3 IS NULL OR layout = $3){frozen}"
        );
        self.execute(
            sqlx::query(&sql).bind(tenant.as_str()).bind(collection.as_str()).bind(layout.map(FenceLayout::as_str)),
        )
        .await
    }

    /// Whether this shard has given away a part of the `intervals` (each from its first key up
    /// to its second, excluded; `None`: to the end) of `tenant`'s `collection`: a map that says
    /// it holds them is out of date.
    pub async fn moved_any_range(
        &self,
        tenant: &TenantId,
        collection: &CollectionName,
        intervals: &[(String, Option<String>)],
    ) -> Result<bool, Error> {
        let mut binds: Vec<&str> = Vec::new();
        let mut overlaps = Vec::new();
        for (from, until) in intervals {
            binds.push(from);
            let from = binds.len() + 2;
            // The fence overlaps [from, until).
            match until {
                Some(until) => {
                    binds.push(until);
                    let until = binds.len() + 2;
                    overlaps.push(format!("(from_key < ${until} AND (until_key IS NULL OR until_key > ${from}))"));
                }
                None => overlaps.push(format!("(until_key IS NULL OR until_key > ${from})")),
            }
        }
        if overlaps.is_empty() {
            return Ok(false);
        }
        let sql = format!(
            "SELECT COUNT(*) FROM range_fences WHERE tenant = $1 AND collection = $2 AND state = 'moved' AND ({})",
            overlaps.join(" OR ")
        );
        let moved: i64 = self
            .read(|| {
                let query = sqlx::query_scalar(&sql).bind(tenant.as_str()).bind(collection.as_str());
                binds.iter().fold(query, |q, b| q.bind(*b)).fetch_one(self.pool())
            })
            .await?;
        Ok(moved > 0)
    }

    /// Fences `subject` on this shard for move `job`: its writes are refused from now on, its
    /// reads still served. Fences already there (frozen or moved) are left as they are.
    pub async fn freeze(&self, subject: MoveSubject<'_>, job: &str, now_ms: i64) -> Result<(), Error> {
        self.set_fences(subject, TenantFence::Frozen, job, now_ms).await
    }

    /// Marks `subject` as moved away: its reads are refused here too from now on.
    pub async fn mark_moved(&self, subject: MoveSubject<'_>, job: &str, now_ms: i64) -> Result<(), Error> {
        self.set_fences(subject, TenantFence::Moved, job, now_ms).await
    }

    async fn set_fences(
        &self,
        subject: MoveSubject<'_>,
        state: TenantFence,
        job: &str,
        now_ms: i64,
    ) -> Result<(), Error> {
        let state = state.as_str();
        // Freezing keeps a fence that is there; marking moved overrides a frozen one.
        let on_conflict = |key: &str| match state {
            "moved" => format!(
                "ON CONFLICT ({key}) DO UPDATE SET state = 'moved', job_id = excluded.job_id, since = excluded.since"
            ),
            _ => format!("ON CONFLICT ({key}) DO NOTHING"),
        };
        for (table, key, keys) in fence_keys(subject) {
            for batch in keys.chunks(FENCE_BATCH) {
                let rows = (0..batch.len()).map(|i| format!("(${}, '{state}', $1, $2)", i + 3)).collect::<Vec<_>>();
                let sql = format!(
                    "INSERT INTO {table} ({key}, state, job_id, since) VALUES {} {}",
                    rows.join(", "),
                    on_conflict(key)
                );
                let insert = sqlx::query(&sql).bind(job).bind(now_ms);
                self.execute(batch.iter().fold(insert, |q, k| k.bind(q))).await?;
            }
        }
        if let MoveSubject::Range(range) = subject {
            let sql = format!(
                "INSERT INTO range_fences (tenant, collection, from_key, until_key, state, job_id, since) \
                 VALUES ($1, $2, $3, $4, '{state}', $5, $6) {}",
                on_conflict("tenant, collection, from_key")
            );
            let insert = sqlx::query(&sql)
                .bind(range.tenant.as_str())
                .bind(range.collection.as_str())
                .bind(range.from)
                .bind(range.until)
                .bind(job)
                .bind(now_ms);
            self.execute(insert).await?;
        }
        Ok(())
    }

    /// Lifts the `frozen` fences of `subject` (a move rolled back: it stays here). `moved`
    /// fences stay: what they fence lives elsewhere.
    pub async fn thaw(&self, subject: MoveSubject<'_>) -> Result<(), Error> {
        self.remove_fences(subject, " AND state = 'frozen'").await
    }

    /// Removes every fence of `subject` (it moves onto this shard).
    pub async fn clear_fences(&self, subject: MoveSubject<'_>) -> Result<(), Error> {
        self.remove_fences(subject, "").await
    }

    async fn remove_fences(&self, subject: MoveSubject<'_>, only: &str) -> Result<(), Error> {
        for (table, key, keys) in fence_keys(subject) {
            for batch in keys.chunks(FENCE_BATCH) {
                let list = (1..=batch.len()).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ");
                let sql = format!("DELETE FROM {table} WHERE {key} IN ({list}){only}");
                self.execute(batch.iter().fold(sqlx::query(&sql), |q, k| k.bind(q))).await?;
            }
        }
        let tenants = subject.tenants();
        if only.is_empty() && !tenants.is_empty() {
            // The tenants' home data comes here whole: fences an earlier distribution change of
            // one of their collections left over the home rows here are not theirs now.
            for batch in tenants.chunks(FENCE_BATCH) {
                let list = (1..=batch.len()).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ");
                let sql = format!("DELETE FROM collection_fences WHERE layout = 'home' AND tenant IN ({list})");
                self.execute(batch.iter().fold(sqlx::query(&sql), |q, t| q.bind(t.as_str()))).await?;
            }
        }
        if let MoveSubject::Range(range) = subject {
            if only.is_empty() {
                return self.clear_range_fences(range).await;
            }
            let sql = format!("DELETE FROM range_fences WHERE tenant = $1 AND collection = $2 AND from_key = $3{only}");
            self.execute(
                sqlx::query(&sql).bind(range.tenant.as_str()).bind(range.collection.as_str()).bind(range.from),
            )
            .await?;
        }
        Ok(())
    }

    /// Removes the fences of `range` (it moves onto this shard): a fence reaching beyond it
    /// keeps the part outside, in one transaction.
    async fn clear_range_fences(&self, range: KeyRange<'_>) -> Result<(), Error> {
        let trim = async {
            let mut tx = self.pool().begin().await?;
            let overlapping: Vec<(String, Option<String>, String, String, i64)> = sqlx::query_as(
                "SELECT from_key, until_key, state, job_id, since FROM range_fences \
                 WHERE tenant = $1 AND collection = $2 AND ($4 IS NULL OR from_key < $4) \
                 AND (until_key IS NULL OR until_key > $3)",
            )
            .bind(range.tenant.as_str())
            .bind(range.collection.as_str())
            .bind(range.from)
            .bind(range.until)
            .fetch_all(&mut *tx)
            .await?;
            for (from, until, state, job, since) in overlapping {
                sqlx::query("DELETE FROM range_fences WHERE tenant = $1 AND collection = $2 AND from_key = $3")
                    .bind(range.tenant.as_str())
                    .bind(range.collection.as_str())
                    .bind(&from)
                    .execute(&mut *tx)
                    .await?;
                let below = (from.as_str() < range.from).then(|| (from.clone(), Some(range.from.to_owned())));
                let above = match (range.until, &until) {
                    (Some(end), None) => Some((end.to_owned(), None)),
                    (Some(end), Some(fence_end)) if fence_end.as_str() > end => {
                        Some((end.to_owned(), Some(fence_end.clone())))
                    }
                    _ => None,
                };
                for (piece_from, piece_until) in below.into_iter().chain(above) {
                    sqlx::query(
                        "INSERT INTO range_fences (tenant, collection, from_key, until_key, state, job_id, since) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7)",
                    )
                    .bind(range.tenant.as_str())
                    .bind(range.collection.as_str())
                    .bind(piece_from)
                    .bind(piece_until)
                    .bind(&state)
                    .bind(&job)
                    .bind(since)
                    .execute(&mut *tx)
                    .await?;
                }
            }
            tx.commit().await
        };
        trim.on_shard(self).await
    }

    /// Removes every range and collection fence of `tenant`'s `collection` (its distribution
    /// is set anew), or of all its collections (the tenant is deleted).
    pub async fn drop_range_fences(&self, tenant: &TenantId, collection: Option<&CollectionName>) -> Result<(), Error> {
        for table in ["range_fences", "collection_fences"] {
            let sql = format!("DELETE FROM {table} WHERE tenant = $1 AND ($2 IS NULL OR collection = $2)");
            self.execute(sqlx::query(&sql).bind(tenant.as_str()).bind(collection.map(CollectionName::as_str))).await?;
        }
        Ok(())
    }

    /// Raises the shard's fence to `epoch`: writes routed on older maps are refused from now on.
    pub async fn raise_fence(&self, epoch: u64) -> Result<(), Error> {
        self.execute(
            sqlx::query("UPDATE shard_fence SET epoch = $1 WHERE id = 1 AND epoch < $1").bind(epoch_param(epoch)),
        )
        .await
    }
}

/// The rows a collection fence covers: a collection's rows in one table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FenceLayout {
    /// `records`: a collection distributed `tenant`, on its tenant's home shard.
    Home,
    /// `spread_records`: a collection distributed `hash` or `range`.
    Spread,
}

impl FenceLayout {
    /// As stored in `collection_fences.layout`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Home => "home",
            Self::Spread => "spread",
        }
    }
}

/// The fence a shard holds for one tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TenantFence {
    /// Moving away: writes refused, reads served.
    Frozen,
    /// Moved away: reads and writes refused.
    Moved,
}

impl TenantFence {
    fn parse(state: &str) -> Option<Self> {
        match state {
            "frozen" => Some(Self::Frozen),
            "moved" => Some(Self::Moved),
            _ => None,
        }
    }

    /// As stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Frozen => "frozen",
            Self::Moved => "moved",
        }
    }
}

/// One fenced thing, as bound to a statement.
#[derive(Debug, Clone, Copy)]
enum FenceKey<'a> {
    Tenant(&'a str),
    Vshard(u32),
}

impl FenceKey<'_> {
    fn bind<'q>(
        self,
        query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    ) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>
    where
        Self: 'q,
    {
        match self {
            FenceKey::Tenant(tenant) => query.bind(tenant),
            FenceKey::Vshard(vshard) => query.bind(i64::from(vshard)),
        }
    }
}

/// The fence rows of `subject`: per table, its key column and the keys.
fn fence_keys(subject: MoveSubject<'_>) -> [(&'static str, &'static str, Vec<FenceKey<'_>>); 2] {
    [
        ("tenant_fences", "tenant", subject.tenants().iter().map(|t| FenceKey::Tenant(t.as_str())).collect()),
        ("vshard_fences", "vshard", subject.vshards().iter().map(|v| FenceKey::Vshard(*v)).collect()),
    ]
}

/// Tenants fenced per statement: far below both engines' parameter limits.
const FENCE_BATCH: usize = 500;

/// What a move takes from one shard to another, and fences on the source while it does.
#[derive(Debug, Clone, Copy)]
pub enum MoveSubject<'a> {
    /// One (pinned or unpinned) tenant's home data.
    Tenant(&'a TenantId),
    /// Vshards: the index entries they place and the home data of the unpinned tenants they
    /// place (each fenced as a tenant, so their records and blobs need no second fence).
    Vshards {
        /// The vshards.
        vshards: &'a [u32],
        /// The unpinned tenants that hash to them.
        tenants: &'a [TenantId],
    },
    /// The records of one key range of a range-distributed collection (fenced as that range).
    Range(KeyRange<'a>),
}

/// A key range of a tenant's range-distributed collection: the keys from `from` up to `until`
/// (excluded; `None`: every key from `from` on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyRange<'a> {
    /// The tenant.
    pub tenant: &'a TenantId,
    /// The collection.
    pub collection: &'a CollectionName,
    /// The smallest key.
    pub from: &'a str,
    /// The first key after the range, if any.
    pub until: Option<&'a str>,
}

impl<'a> MoveSubject<'a> {
    /// The tenants whose home data moves.
    pub fn tenants(&self) -> &'a [TenantId] {
        match *self {
            MoveSubject::Tenant(tenant) => std::slice::from_ref(tenant),
            MoveSubject::Vshards { tenants, .. } => tenants,
            MoveSubject::Range(_) => &[],
        }
    }

    /// The vshards whose index entries move (none for a tenant).
    pub fn vshards(&self) -> &'a [u32] {
        match *self {
            MoveSubject::Tenant(_) | MoveSubject::Range(_) => &[],
            MoveSubject::Vshards { vshards, .. } => vshards,
        }
    }
}

/// Every statement on a shard runs through the shard's [`crate::storage::health::Health`] (breaker,
/// bulkhead, deadline), written `statement.on_shard(&shard).await` (a statement that writes) or
/// `statement.reading_on(&shard).await` (one that only reads); its errors name the shard, and the
/// shard's load meter counts it ([`crate::storage::meter`]).
pub trait OnShard<T>: std::future::Future<Output = Result<T, sqlx::Error>> + Sized {
    /// Runs the statement, which writes, on `shard` ([`crate::storage::health::Health::run`]).
    fn on_shard<'s>(self, shard: &'s FencedShard<'_>) -> impl std::future::Future<Output = Result<T, Error>> + Send + 's
    where
        Self: Send + 's,
        T: Send,
    {
        run_on(shard, true, self)
    }

    /// Runs the statement, which only reads, on `shard` (not retried: see
    /// [`FencedShard::read`] for a read that may run twice).
    fn reading_on<'s>(
        self,
        shard: &'s FencedShard<'_>,
    ) -> impl std::future::Future<Output = Result<T, Error>> + Send + 's
    where
        Self: Send + 's,
        T: Send,
    {
        run_on(shard, false, self)
    }
}

impl<T, F> OnShard<T> for F where F: std::future::Future<Output = Result<T, sqlx::Error>> {}

#[expect(clippy::manual_async_fn, reason = "an `async fn` here would tie `T` to the shard's lifetime")]
fn run_on<'s, T, F>(
    shard: &'s FencedShard<'_>,
    write: bool,
    statement: F,
) -> impl std::future::Future<Output = Result<T, Error>> + Send + 's
where
    F: std::future::Future<Output = Result<T, sqlx::Error>> + Send + 's,
    T: Send,
{
    async move {
        let started = shard.db.is_metered().then(Instant::now);
        let result = shard.db.health().run(statement).await;
        shard.measure(write, started, result.is_err());
        result.map_err(|r| shard.refused(r))
    }
}

/// A store on one shard (records, blobs, index entries): built on a [`FencedShard`], so every
/// store is opened and fenced the same way.
pub trait ShardStore<'a>: Sized {
    /// The store on `shard`.
    fn on(shard: FencedShard<'a>) -> Self;

    /// The shard it works on.
    fn shard_mut(&mut self) -> &mut FencedShard<'a>;

    /// The store on `db`, which is shard `id` (named in errors). Writes are not fenced (for
    /// maintenance such as purges and backfills); use [`ShardStore::routed_at`] for routed
    /// requests.
    fn new(db: &'a Database, id: &'a ShardId) -> Self {
        Self::on(FencedShard::new(db, id))
    }

    /// Writes will be refused with [`Error::StaleMap`] if the shard's fence is newer than
    /// `epoch` (the map they were routed on).
    fn routed_at(mut self, epoch: u64) -> Self {
        let shard = self.shard_mut();
        *shard = shard.routed_at(epoch);
        self
    }
}

/// Declares a store that holds its [`FencedShard`] and nothing else.
macro_rules! plain_shard_store {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name<'a> {
            shard: FencedShard<'a>,
        }

        impl<'a> ShardStore<'a> for $name<'a> {
            fn on(shard: FencedShard<'a>) -> Self {
                Self { shard }
            }

            fn shard_mut(&mut self) -> &mut FencedShard<'a> {
                &mut self.shard
            }
        }
    };
}
pub(crate) use plain_shard_store;

/// A driver error on shard `id`, as [`Error::Database`] naming it (for code that owns the id
/// rather than borrowing a [`FencedShard`], such as a chunk stream).
pub(crate) fn shard_error(id: &ShardId, source: sqlx::Error) -> Error {
    Error::Database { target: format!("shard {id}"), source }
}

/// A map epoch as the shard stores it (saturating: an epoch beyond `i64` fences nothing out).
fn epoch_param(epoch: u64) -> i64 {
    i64::try_from(epoch).unwrap_or(i64::MAX)
}
