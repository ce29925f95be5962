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

use crate::db::Database;
use crate::error::Error;
use crate::health::Refusal;
use crate::ids::{ShardId, TenantId};

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

    /// A statement's refusal by the shard's [`crate::health::Health`], as an error naming it.
    pub fn refused(&self, refusal: Refusal) -> Error {
        match refusal {
            Refusal::Sql(source) => self.err(source),
            refusal => Error::ShardRefused { shard: self.id.clone(), refusal },
        }
    }

    /// Runs a read that may safely run twice through the shard's health (breaker, bulkhead,
    /// deadline, one retry on a broken connection: [`crate::health::Health::run_idempotent`]).
    pub async fn read<T, F, Fut>(&self, statement: F) -> Result<T, Error>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<T, sqlx::Error>>,
    {
        self.db.health().run_idempotent(statement).await.map_err(|r| self.refused(r))
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
    /// another shard: see [`crate::mover`]).
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
                batch.iter().fold(insert, |q, k| k.bind(q)).execute(self.pool()).on_shard(self).await?;
            }
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
                batch.iter().fold(sqlx::query(&sql), |q, k| k.bind(q)).execute(self.pool()).on_shard(self).await?;
            }
        }
        Ok(())
    }

    /// Raises the shard's fence to `epoch`: writes routed on older maps are refused from now on.
    pub async fn raise_fence(&self, epoch: u64) -> Result<(), Error> {
        sqlx::query("UPDATE shard_fence SET epoch = $1 WHERE id = 1 AND epoch < $1")
            .bind(epoch_param(epoch))
            .execute(self.pool())
            .on_shard(self)
            .await?;
        Ok(())
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

    fn as_str(self) -> &'static str {
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
}

impl<'a> MoveSubject<'a> {
    /// The tenants whose home data moves.
    pub fn tenants(&self) -> &'a [TenantId] {
        match *self {
            MoveSubject::Tenant(tenant) => std::slice::from_ref(tenant),
            MoveSubject::Vshards { tenants, .. } => tenants,
        }
    }

    /// The vshards whose index entries move (none for a tenant).
    pub fn vshards(&self) -> &'a [u32] {
        match *self {
            MoveSubject::Tenant(_) => &[],
            MoveSubject::Vshards { vshards, .. } => vshards,
        }
    }
}

/// Every statement on a shard runs through the shard's [`crate::health::Health`] (breaker,
/// bulkhead, deadline), written `statement.on_shard(&shard).await`; its errors name the shard.
pub trait OnShard<T>: std::future::Future<Output = Result<T, sqlx::Error>> + Sized {
    /// Runs the statement on `shard` ([`crate::health::Health::run`]).
    fn on_shard<'s>(
        self,
        shard: &'s FencedShard<'_>,
    ) -> impl std::future::Future<Output = Result<T, Error>> + Send + 's
    where
        Self: Send + 's,
        T: Send;
}

impl<T, F> OnShard<T> for F
where
    F: std::future::Future<Output = Result<T, sqlx::Error>>,
{
    #[expect(clippy::manual_async_fn, reason = "an `async fn` here would tie `T` to the shard's lifetime")]
    fn on_shard<'s>(self, shard: &'s FencedShard<'_>) -> impl std::future::Future<Output = Result<T, Error>> + Send + 's
    where
        Self: Send + 's,
        T: Send,
    {
        async move { shard.db.health().run(self).await.map_err(|r| shard.refused(r)) }
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
