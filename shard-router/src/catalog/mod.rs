//! The catalog database: registered shards (with their URLs), the vshard table, tenants, tenant
//! pins and the map epoch. Every change of routing state runs in one transaction that first moves
//! the epoch on, so readers can tell maps apart and SQLite takes its write lock up front.
//!
//! Also the catalog's other tables: collections and their distributions, index definitions,
//! jobs with their leases, claims ([`crate::claims`]) and phases ([`phase`]), valet keys and grants, the
//! audit log, the load windows of the load picture ([`LoadRow`]), the balancer's mode, lease and
//! runs ([`RunRow`]), the instance registry ([`InstanceRow`]), and the quotas set through the
//! admin API ([`TierQuotaRow`], and the tenants' own in their rows), and the daily usage kept for
//! billing ([`UsageDayRow`]). It reaches its database through
//! [`crate::storage::db`] and builds the [`MapSnapshot`] of [`crate::map`]; it knows nothing of
//! the shard stores, the router, or the jobs that write its job rows.

pub mod phase;

use std::sync::Arc;

use secrecy::SecretString;
use sqlx::any::AnyRow;
use sqlx::{Any, AnyConnection, Row, Transaction};

use crate::error::Error;
use crate::ids::{ShardId, TenantId};
use crate::map::quotas::QuotaOverrides;
use crate::map::{Incarnation, MapSnapshot, ShardEntry, ShardState, TenantEntry, TenantRateLimit, Tier};
use crate::storage::db::{Database, Engine};
use crate::storage::password_file::PasswordFile;

mod balancer;
mod collections;
mod indexes;
mod instances;
mod load;
mod moves;
mod quota_grants;
mod quotas;
pub mod request_windows;
mod sealing;
mod usage_days;
mod valet;
mod windows;
pub use balancer::{BalancerRow, RunRow};
#[cfg(test)]
pub(crate) use collections::ranges_of;
pub use collections::{CollectionRow, RangeRow};
pub use indexes::{IndexDefInsert, IndexDefRow, JobRow};
pub use instances::{InstanceReport, InstanceRow, JobLease};
pub use load::{LoadRow, LoadScope};
pub use moves::{CancelRequest, Lease, Placement};
pub use quotas::TierQuotaRow;
pub use request_windows::{RequestCounts, RequestRow, RequestScope};
pub use sealing::{SEALED_PREFIX, Sealer, SecretsKeyFile, is_sealed};
pub use usage_days::{DayUsage, UsageAuditRow, UsageDayRow, ValetReservation};
pub use valet::{AUDIT_ROWS_PER_INSERT, Retirement, TimedAudit, ValetGrantRow, ValetKeyRow, ValetKeyState};

pub use crate::claims::{REBALANCE_SUBJECT, tenant_subject, vshard_subject};

/// The audit action of a tenant's deletion ([`Catalog::tenant_was_deleted`] looks for it).
pub const TENANT_DELETE_ACTION: &str = "tenant.delete";

/// A shard as the catalog stores it.
#[derive(Debug, Clone)]
pub struct ShardRow {
    /// Its id.
    pub id: ShardId,
    /// Its connection URL (a secret: it may hold a password).
    pub url: SecretString,
    /// The engine the URL points at.
    pub engine: Engine,
    /// Its state.
    pub state: ShardState,
    /// When it was registered (ms since the Unix epoch).
    pub created_at_ms: i64,
    /// When it last changed (ms since the Unix epoch).
    pub updated_at_ms: i64,
}

/// A tenant as the catalog stores it.
#[derive(Debug, Clone)]
pub struct TenantRow {
    /// Its id.
    pub id: TenantId,
    /// Display name.
    pub name: String,
    /// Tier.
    pub tier: Tier,
    /// The shard it is pinned to, if any.
    pub pinned_shard: Option<ShardId>,
    /// Its own rate limit, overriding the tier's.
    pub rate_limit: Option<TenantRateLimit>,
    /// Its own quotas over its tier's (`None`: none; never an empty set).
    pub quotas: Option<QuotaOverrides>,
    /// Which life of the id this is (set by [`Catalog::insert_tenant`]).
    pub incarnation: u64,
    /// Creation time (ms since the Unix epoch).
    pub created_at_ms: i64,
    /// Last change (ms since the Unix epoch).
    pub updated_at_ms: i64,
}

/// Who changed what, recorded with every admin change (in the change's transaction).
#[derive(Debug, Clone)]
pub struct Audit {
    /// The token subject of the caller (`system` for start-up bootstrap).
    pub actor: String,
    /// The tenant concerned, if any.
    pub tenant: Option<String>,
    /// What was done, e.g. `tenant.create`, `shard.state`.
    pub action: &'static str,
    /// What it was done to, e.g. `tenant:acme`, `shard:shard-2 read_only`.
    pub target: String,
    /// The request's id: the server's own (never one a client chose).
    pub request_id: String,
    /// The `x-request-id` the client sent, if any: kept beside the server's own.
    pub client_request_id: Option<String>,
    /// The client's address (its peer, or what trusted proxies or the gatekeeper said); none for
    /// actions of the system itself.
    pub client_address: Option<String>,
}

/// The columns of the audit log an [`Audit`] fills, in the order [`bind_audit`] binds them.
const AUDIT_COLUMNS: &str = "at, actor, tenant, action, target, request_id, client_request_id, client_address";

/// Binds `audit`, recorded at `at_ms`, to the next eight parameters of `query` (the
/// [`AUDIT_COLUMNS`] of one row).
fn bind_audit<'q>(
    query: sqlx::query::Query<'q, Any, sqlx::any::AnyArguments<'q>>,
    at_ms: i64,
    audit: &'q Audit,
) -> sqlx::query::Query<'q, Any, sqlx::any::AnyArguments<'q>> {
    query
        .bind(at_ms)
        .bind(&audit.actor)
        .bind(audit.tenant.as_deref())
        .bind(audit.action)
        .bind(&audit.target)
        .bind(&audit.request_id)
        .bind(audit.client_request_id.as_deref())
        .bind(audit.client_address.as_deref())
}

/// One recorded admin action.
#[derive(Debug, Clone)]
pub struct AuditEntry {
    /// Increasing id (the listing cursor).
    pub id: i64,
    /// When (ms since the Unix epoch).
    pub at_ms: i64,
    /// The token subject of the caller.
    pub actor: String,
    /// The tenant concerned, if any.
    pub tenant: Option<String>,
    /// The action.
    pub action: String,
    /// The target.
    pub target: String,
    /// The request id (the server's own).
    pub request_id: String,
    /// The request id the client sent, if any.
    pub client_request_id: Option<String>,
    /// The client's address, if the action came from a request.
    pub client_address: Option<String>,
}

/// Which audit entries a listing reads, and in which order ([`Catalog::list_audit`]).
#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    /// Only this action, or, when it ends in `.` (`tenant.`), every action it begins.
    pub action: Option<String>,
    /// Only this actor.
    pub actor: Option<String>,
    /// Newest first instead of oldest first.
    pub newest_first: bool,
}

impl AuditFilter {
    /// Whether `action` is a prefix (it ends in `.`) rather than one action.
    fn action_is_prefix(&self) -> bool {
        self.action.as_deref().is_some_and(|a| a.ends_with('.'))
    }
}

/// The catalog's change counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CatalogHeads {
    /// The shard map epoch.
    pub epoch: u64,
    /// The cache generation.
    pub cache_generation: u64,
    /// The valet generation: moves on with every grant revocation and key retirement.
    pub valet_generation: u64,
}

/// The catalog database.
#[derive(Debug, Clone)]
pub struct Catalog {
    db: Database,
    /// Where its password is read from, with the URL it completes
    /// (`storage.catalog_password_file`), if it is.
    password: Option<Arc<(PasswordFile, SecretString)>>,
    /// The open data keys of its sealed secrets, once [`Catalog::open_secrets`] found a key
    /// file (`storage.secrets_key_file`).
    sealer: Option<Arc<Sealer>>,
}

fn catalog_err(source: sqlx::Error) -> Error {
    Error::Database { target: "catalog".to_owned(), source }
}

/// Column `index` of a catalog row.
fn column<'r, T>(row: &'r AnyRow, index: usize) -> Result<T, Error>
where
    T: sqlx::Decode<'r, Any> + sqlx::Type<Any>,
{
    row.try_get(index).map_err(catalog_err)
}

/// Runs `statement` in `tx`, then commits.
async fn commit_with<'q>(
    mut tx: Transaction<'static, Any>,
    statement: sqlx::query::Query<'q, Any, sqlx::any::AnyArguments<'q>>,
) -> Result<(), Error> {
    statement.execute(&mut *tx).await.map_err(catalog_err)?;
    tx.commit().await.map_err(catalog_err)
}

/// Runs `statement` (a change of one row) in `tx` and commits if it changed a row. `false`: no
/// row matched, and the transaction was rolled back (with the epoch and audit entry it holds).
async fn commit_if_changed<'q>(
    mut tx: Transaction<'static, Any>,
    statement: sqlx::query::Query<'q, Any, sqlx::any::AnyArguments<'q>>,
) -> Result<bool, Error> {
    let done = statement.execute(&mut *tx).await.map_err(catalog_err)?;
    if done.rows_affected() == 0 {
        return Ok(false);
    }
    tx.commit().await.map_err(catalog_err)?;
    Ok(true)
}

/// The job claiming `subject`, if any, as `conn` sees the claims.
async fn claim_holder<'c>(
    conn: impl sqlx::Executor<'c, Database = Any>,
    subject: &str,
) -> Result<Option<String>, Error> {
    sqlx::query_scalar("SELECT job_id FROM job_claims WHERE subject = $1")
        .bind(subject)
        .fetch_optional(conn)
        .await
        .map_err(catalog_err)
}

/// [`Error::JobConflict`] naming the job that claims `subject`, if one does (as the caller's
/// transaction `conn` sees the claims).
async fn refuse_claimed(conn: &mut AnyConnection, subject: &str) -> Result<(), Error> {
    match claim_holder(conn, subject).await? {
        Some(job) => Err(Error::JobConflict { subject: subject.to_owned(), job }),
        None => Ok(()),
    }
}

fn corrupt(what: String) -> Error {
    Error::Corrupt(what)
}

impl Catalog {
    /// Wraps an open (and migrated) catalog database.
    pub fn new(db: Database) -> Self {
        Self { db, password: None, sealer: None }
    }

    /// This catalog, whose password `file` holds for `url` (`storage.catalog_password_file`):
    /// [`Catalog::follow_password_file`] reads it again.
    pub fn with_password_file(self, file: PasswordFile, url: SecretString) -> Self {
        Self { password: Some(Arc::new((file, url))), ..self }
    }

    /// On each catalog poll: if the catalog's password file changed, new catalog connections use
    /// its new content (those open stay).
    pub fn follow_password_file(&self) {
        let Some(password) = &self.password else { return };
        let (file, url) = &**password;
        if !file.changed() {
            return;
        }
        match file.apply(url).and_then(|url| self.db.set_url(&url)) {
            Ok(()) => tracing::info!("the catalog's password file changed: new connections use its new content"),
            Err(e) => tracing::warn!(error = %e, "cannot use the catalog's changed password file"),
        }
    }

    /// Runs `statement` on its own (no audit entry, no new epoch) in its own [`Catalog::guarded`]
    /// operation; returns how many rows it changed.
    async fn execute<'q>(
        &self,
        statement: sqlx::query::Query<'q, Any, sqlx::any::AnyArguments<'q>>,
    ) -> Result<u64, Error> {
        self.guarded(async { Ok(statement.execute(&self.db.pool).await.map_err(catalog_err)?.rows_affected()) }).await
    }

    /// Runs `statement` on its own (no audit entry, no new epoch); true if it changed exactly one
    /// row.
    async fn changes_one_row<'q>(
        &self,
        statement: sqlx::query::Query<'q, Any, sqlx::any::AnyArguments<'q>>,
    ) -> Result<bool, Error> {
        let done = statement.execute(&self.db.pool).await.map_err(catalog_err)?;
        Ok(done.rows_affected() == 1)
    }

    /// Runs one catalog operation (its statements and its transaction) through the catalog
    /// database's [`crate::storage::health::Health`], as shard statements run through theirs: it must
    /// finish within the statement deadline (`storage.pool.statement_timeout`), takes a place in
    /// the catalog's bulkhead, and is refused at once while the catalog's breaker is open. So a
    /// frozen catalog costs a bounded time. Every public method runs in exactly one `guarded`
    /// (never nested: a nested one would take two places and be judged twice).
    async fn guarded<T>(&self, operation: impl std::future::Future<Output = Result<T, Error>>) -> Result<T, Error> {
        // The breaker judges the driver's error; every other error is the operation's answer.
        let outcome = self
            .db
            .health()
            .run(async {
                match operation.await {
                    Err(Error::Database { source, .. }) => Err(source),
                    answer => Ok(answer),
                }
            })
            .await;
        match outcome {
            Ok(answer) => answer,
            Err(crate::storage::health::Refusal::Sql(source)) => Err(catalog_err(source)),
            Err(refusal) => Err(Error::CatalogRefused(refusal)),
        }
    }

    /// The underlying database (for readiness probes).
    pub fn database(&self) -> &Database {
        &self.db
    }

    /// Reads the whole routing state.
    pub async fn load_map(&self) -> Result<MapSnapshot, Error> {
        self.guarded(async {
            let pool = &self.db.pool;
            let head = sqlx::query("SELECT epoch, vshard_count FROM shard_map WHERE id = 1")
                .fetch_one(pool)
                .await
                .map_err(catalog_err)?;
            let epoch: i64 = column(&head, 0)?;
            let vshard_count: i64 = column(&head, 1)?;
            let mut map = MapSnapshot::empty(u32::try_from(vshard_count).map_err(|_| corrupt("vshard_count".into()))?);
            map.epoch = epoch as u64;
            for shard in self.shard_rows().await? {
                map.shards.push(ShardEntry { id: shard.id, state: shard.state });
            }
            let rows = sqlx::query("SELECT vshard, shard FROM vshards ORDER BY vshard")
                .fetch_all(pool)
                .await
                .map_err(catalog_err)?;
            if !rows.is_empty() {
                if rows.len() != map.vshard_count as usize {
                    return Err(corrupt(format!(
                        "vshard table has {} rows, expected {}",
                        rows.len(),
                        map.vshard_count
                    )));
                }
                for (expected, row) in rows.iter().enumerate() {
                    let vshard: i64 = column(row, 0)?;
                    let shard: String = column(row, 1)?;
                    if vshard != expected as i64 {
                        return Err(corrupt(format!("vshard table is missing vshard {expected}")));
                    }
                    let index = map
                        .shard_index(&shard)
                        .ok_or_else(|| corrupt(format!("vshard {vshard} names unknown shard {shard}")))?;
                    map.vshards.push(index);
                }
            }
            let rows = sqlx::query(
                "SELECT t.id, t.tier, p.shard, t.rate_per_second, t.rate_burst, t.incarnation, t.created_at, t.quotas \
                 FROM tenants t LEFT JOIN tenant_pins p ON p.tenant = t.id",
            )
            .fetch_all(pool)
            .await
            .map_err(catalog_err)?;
            map.tenants.reserve(rows.len());
            for row in rows {
                let id: String = column(&row, 0)?;
                let tier: String = column(&row, 1)?;
                let pin: Option<String> = column(&row, 2)?;
                let id = TenantId::parse(&id).map_err(|e| corrupt(e.to_string()))?;
                let tier = Tier::parse(&tier).ok_or_else(|| corrupt(format!("tenant {id} has tier {tier:?}")))?;
                let pin = match pin {
                    Some(shard) => Some(
                        map.shard_index(&shard)
                            .ok_or_else(|| corrupt(format!("tenant {id} pinned to unknown shard {shard}")))?,
                    ),
                    None => None,
                };
                let rate_limit = rate_limit_columns(&row, 3)?;
                let incarnation = Incarnation { id: incarnation_column(&row, 5)?, created_at_ms: column(&row, 6)? };
                map.quotas.set_tenant(id.as_str(), overrides_column(&row, 7)?);
                map.tenants.insert(
                    crate::map::TenantKey::from(id.as_str()),
                    TenantEntry { pin, tier, rate_limit, incarnation, spread: false },
                );
            }
            self.load_spread(&mut map).await?;
            self.load_tier_quotas(&mut map.quotas).await?;
            Ok(map)
        })
        .await
    }

    /// Every registered shard, ordered by id.
    pub async fn list_shards(&self) -> Result<Vec<ShardRow>, Error> {
        self.guarded(self.shard_rows()).await
    }

    /// The shards removed through the API ([`Catalog::delete_shard`]) and not registered again
    /// since: start-up does not register them from `storage.shards`.
    pub async fn removed_shards(&self) -> Result<Vec<String>, Error> {
        self.guarded(async {
            sqlx::query_scalar("SELECT id FROM removed_shards ORDER BY id")
                .fetch_all(&self.db.pool)
                .await
                .map_err(catalog_err)
        })
        .await
    }

    async fn shard_rows(&self) -> Result<Vec<ShardRow>, Error> {
        let rows = sqlx::query("SELECT id, url, engine, state, created_at, updated_at FROM shards ORDER BY id")
            .fetch_all(&self.db.pool)
            .await
            .map_err(catalog_err)?;
        rows.iter().map(|row| self.shard_row(row)).collect()
    }

    /// The current map epoch, cache generation and valet generation (polled by every instance).
    pub async fn heads(&self) -> Result<CatalogHeads, Error> {
        self.guarded(async {
            let row = sqlx::query("SELECT epoch, cache_generation, valet_generation FROM shard_map WHERE id = 1")
                .fetch_one(&self.db.pool)
                .await
                .map_err(catalog_err)?;
            let counter = |i: usize| column::<i64>(&row, i).map(|v| v as u64);
            Ok(CatalogHeads { epoch: counter(0)?, cache_generation: counter(1)?, valet_generation: counter(2)? })
        })
        .await
    }

    /// The catalog's identity: a random id written once (catalog migration 0009), which each
    /// shard database of this catalog carries in its identity marker (see
    /// [`crate::storage::registration`]).
    pub async fn identity(&self) -> Result<String, Error> {
        self.guarded(async {
            let id: String = sqlx::query_scalar("SELECT catalog_id FROM shard_map WHERE id = 1")
                .fetch_one(&self.db.pool)
                .await
                .map_err(catalog_err)?;
            if id.is_empty() {
                return Err(corrupt("the catalog has no identity (shard_map.catalog_id)".into()));
            }
            Ok(id)
        })
        .await
    }

    /// Moves the cache generation on; returns the new one.
    pub async fn bump_cache_generation(&self) -> Result<u64, Error> {
        self.guarded(async {
            let generation: i64 = sqlx::query_scalar(
                "UPDATE shard_map SET cache_generation = cache_generation + 1 WHERE id = 1 RETURNING cache_generation",
            )
            .fetch_one(&self.db.pool)
            .await
            .map_err(catalog_err)?;
            Ok(generation as u64)
        })
        .await
    }

    /// Starts a routing change: opens a transaction, moves the epoch on and records `audit` in
    /// the same transaction (so the change and its audit entry commit or roll back together).
    /// Returns the new epoch.
    async fn begin_change(&self, audit: &Audit) -> Result<(Transaction<'static, Any>, u64), Error> {
        let mut tx = self.begin_audited(audit).await?;
        let epoch: i64 = sqlx::query_scalar("UPDATE shard_map SET epoch = epoch + 1 WHERE id = 1 RETURNING epoch")
            .fetch_one(&mut *tx)
            .await
            .map_err(catalog_err)?;
        Ok((tx, epoch as u64))
    }

    /// Opens a transaction that records `audit`, for a change that does not touch routing.
    async fn begin_audited(&self, audit: &Audit) -> Result<Transaction<'static, Any>, Error> {
        let mut tx = self.db.pool.begin().await.map_err(catalog_err)?;
        let sql = format!("INSERT INTO audit_log ({AUDIT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)");
        bind_audit(sqlx::query(&sql), crate::clock::now_ms(), audit).execute(&mut *tx).await.map_err(catalog_err)?;
        Ok(tx)
    }

    /// Audit entries that `filter` selects, in its order, after the entry `after` (the id of the
    /// last entry of the previous page: later entries oldest first, earlier ones newest first),
    /// at most `limit`.
    pub async fn list_audit(
        &self,
        filter: &AuditFilter,
        after: Option<i64>,
        limit: u32,
    ) -> Result<Vec<AuditEntry>, Error> {
        let (beyond, order) = if filter.newest_first { ("id < $1", "DESC") } else { ("id > $1", "ASC") };
        let after = after.unwrap_or(if filter.newest_first { i64::MAX } else { 0 });
        self.guarded(async {
            let rows = sqlx::query(&format!(
                "SELECT id, at, actor, tenant, action, target, request_id, client_request_id, client_address \
                 FROM audit_log \
             WHERE {beyond} \
             AND ($2 IS NULL OR action = $2 OR ($3 AND substr(action, 1, length(CAST($2 AS TEXT))) = $2)) \
             AND ($4 IS NULL OR actor = $4) \
             ORDER BY id {order} LIMIT $5"
            ))
            .bind(after)
            .bind(filter.action.as_deref())
            .bind(filter.action_is_prefix())
            .bind(filter.actor.as_deref())
            .bind(i64::from(limit))
            .fetch_all(&self.db.pool)
            .await
            .map_err(catalog_err)?;
            rows.iter()
                .map(|row| {
                    Ok(AuditEntry {
                        id: column(row, 0)?,
                        at_ms: column(row, 1)?,
                        actor: column(row, 2)?,
                        tenant: column(row, 3)?,
                        action: column(row, 4)?,
                        target: column(row, 5)?,
                        request_id: column(row, 6)?,
                        client_request_id: column(row, 7)?,
                        client_address: column(row, 8)?,
                    })
                })
                .collect()
        })
        .await
    }

    /// Registers a shard. When the vshard table is still empty, the shard takes every vshard.
    /// Returns the new epoch and whether the shard received the vshards.
    pub async fn insert_shard(
        &self,
        shard: &ShardRow,
        owns_all_if_first: bool,
        audit: &Audit,
    ) -> Result<(u64, bool), Error> {
        self.guarded(async {
            let (mut tx, epoch) = self.begin_change(audit).await?;
            if !insert_shard_row(&mut tx, shard, &self.stored_shard_url(&shard.id, &shard.url)).await? {
                return Err(Error::ShardExists(shard.id.clone()));
            }
            // Registered through the API again: start-up registers it from `storage.shards` again.
            sqlx::query("DELETE FROM removed_shards WHERE id = $1")
                .bind(shard.id.as_str())
                .execute(&mut *tx)
                .await
                .map_err(catalog_err)?;
            let mut took_vshards = false;
            if owns_all_if_first {
                let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM vshards")
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(catalog_err)?;
                if count == 0 {
                    let vshard_count: i64 = sqlx::query_scalar("SELECT vshard_count FROM shard_map WHERE id = 1")
                        .fetch_one(&mut *tx)
                        .await
                        .map_err(catalog_err)?;
                    let owners = vec![shard.id.clone(); vshard_count as usize];
                    insert_vshards(&mut tx, &owners).await?;
                    took_vshards = true;
                }
            }
            tx.commit().await.map_err(catalog_err)?;
            Ok((epoch, took_vshards))
        })
        .await
    }

    /// Registers several shards at once and spreads the (empty) vshard table evenly over them.
    /// Used to bootstrap a new catalog.
    pub async fn bootstrap_shards(&self, shards: &[ShardRow], owners: &[ShardId], audit: &Audit) -> Result<u64, Error> {
        self.guarded(async {
            let (mut tx, epoch) = self.begin_change(audit).await?;
            for shard in shards {
                insert_shard_row(&mut tx, shard, &self.stored_shard_url(&shard.id, &shard.url)).await?;
            }
            let count: i64 =
                sqlx::query_scalar("SELECT COUNT(*) FROM vshards").fetch_one(&mut *tx).await.map_err(catalog_err)?;
            if count == 0 && !owners.is_empty() {
                insert_vshards(&mut tx, owners).await?;
            }
            tx.commit().await.map_err(catalog_err)?;
            Ok(epoch)
        })
        .await
    }

    /// Changes a shard's state. Returns the new epoch.
    pub async fn set_shard_state(
        &self,
        id: &ShardId,
        state: ShardState,
        now_ms: i64,
        audit: &Audit,
    ) -> Result<u64, Error> {
        let update = "UPDATE shards SET state = $1, updated_at = $2 WHERE id = $3";
        self.set_shard_column(id, update, state.as_str(), now_ms, audit).await
    }

    /// Points a shard at a new URL (the same database reached another way: a new password, host
    /// or TLS setting). Moves the epoch on, so every instance reopens its pool. Returns the new
    /// epoch.
    pub async fn set_shard_url(
        &self,
        id: &ShardId,
        url: &SecretString,
        now_ms: i64,
        audit: &Audit,
    ) -> Result<u64, Error> {
        let update = "UPDATE shards SET url = $1, updated_at = $2 WHERE id = $3";
        self.set_shard_column(id, update, &self.stored_shard_url(id, url), now_ms, audit).await
    }

    /// Runs `update` (one column of a shard's row as `$1`, `updated_at` as `$2`, the shard's id as
    /// `$3`) as a change of the map: a new epoch, audited. Returns the new epoch.
    async fn set_shard_column(
        &self,
        id: &ShardId,
        update: &'static str,
        value: &str,
        now_ms: i64,
        audit: &Audit,
    ) -> Result<u64, Error> {
        self.guarded(async {
            let (tx, epoch) = self.begin_change(audit).await?;
            let update = sqlx::query(update).bind(value).bind(now_ms).bind(id.as_str());
            if !commit_if_changed(tx, update).await? {
                return Err(Error::ShardNotFound(id.clone()));
            }
            Ok(epoch)
        })
        .await
    }

    /// Removes a shard that owns no vshard and has no pinned tenant. Returns the new epoch.
    pub async fn delete_shard(&self, id: &ShardId, audit: &Audit) -> Result<u64, Error> {
        self.guarded(async {
            let (mut tx, epoch) = self.begin_change(audit).await?;
            let vshards: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM vshards WHERE shard = $1")
                .bind(id.as_str())
                .fetch_one(&mut *tx)
                .await
                .map_err(catalog_err)?;
            let pins: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM tenant_pins WHERE shard = $1")
                .bind(id.as_str())
                .fetch_one(&mut *tx)
                .await
                .map_err(catalog_err)?;
            if vshards > 0 || pins > 0 {
                return Err(Error::ShardInUse {
                    shard: id.clone(),
                    vshards: vshards as u64,
                    pinned_tenants: pins as u64,
                });
            }
            // Remembered, so that start-up does not register it again from `storage.shards`.
            sqlx::query(
                "INSERT INTO removed_shards (id, removed_at) VALUES ($1, $2) \
                 ON CONFLICT (id) DO UPDATE SET removed_at = excluded.removed_at",
            )
            .bind(id.as_str())
            .bind(crate::clock::now_ms())
            .execute(&mut *tx)
            .await
            .map_err(catalog_err)?;
            if !commit_if_changed(tx, sqlx::query("DELETE FROM shards WHERE id = $1").bind(id.as_str())).await? {
                return Err(Error::ShardNotFound(id.clone()));
            }
            Ok(epoch)
        })
        .await
    }

    /// Creates a tenant (and its pin). Returns the new epoch, which is also the new tenant's
    /// incarnation (`tenant.incarnation` is not read). [`Error::JobConflict`] if a job holds
    /// `unclaimed` (the vshard an unpinned tenant would be placed by, while it moves).
    pub async fn insert_tenant(
        &self,
        tenant: &TenantRow,
        unclaimed: Option<&str>,
        audit: &Audit,
    ) -> Result<u64, Error> {
        self.guarded(async {
            let (mut tx, epoch) = self.begin_change(audit).await?;
            if let Some(subject) = unclaimed {
                refuse_claimed(&mut tx, subject).await?;
            }
            let inserted = sqlx::query(
                "INSERT INTO tenants (id, name, tier, created_at, updated_at, rate_per_second, rate_burst, incarnation, \
             quotas) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (id) DO NOTHING",
            )
            .bind(tenant.id.as_str())
            .bind(&tenant.name)
            .bind(tenant.tier.as_str())
            .bind(tenant.created_at_ms)
            .bind(tenant.updated_at_ms)
            .bind(tenant.rate_limit.map(|r| i64::from(r.per_second)))
            .bind(tenant.rate_limit.map(|r| i64::from(r.burst)))
            .bind(incarnation_value(epoch)?)
            .bind(overrides_value(tenant.quotas.as_ref())?)
            .execute(&mut *tx)
            .await
            .map_err(catalog_err)?;
            if inserted.rows_affected() == 0 {
                return Err(Error::TenantExists(tenant.id.clone()));
            }
            if let Some(shard) = &tenant.pinned_shard {
                sqlx::query("INSERT INTO tenant_pins (tenant, shard) VALUES ($1, $2)")
                    .bind(tenant.id.as_str())
                    .bind(shard.as_str())
                    .execute(&mut *tx)
                    .await
                    .map_err(catalog_err)?;
            }
            tx.commit().await.map_err(catalog_err)?;
            Ok(epoch)
        })
        .await
    }

    /// Changes a tenant's name, tier, rate limit and quotas. Returns the updated row and the new
    /// epoch.
    pub async fn update_tenant(
        &self,
        id: &TenantId,
        change: &TenantChange,
        now_ms: i64,
        audit: &Audit,
    ) -> Result<(TenantRow, u64), Error> {
        self.guarded(async {
            let (mut tx, epoch) = self.begin_change(audit).await?;
            // `$5` says whether the rate limit changes at all (it may change to none), `$8` whether
            // the quotas do.
            let done = sqlx::query(
                "UPDATE tenants SET name = COALESCE($1, name), tier = COALESCE($2, tier), updated_at = $3, \
             rate_per_second = CASE WHEN $5 = 1 THEN $6 ELSE rate_per_second END, \
             rate_burst = CASE WHEN $5 = 1 THEN $7 ELSE rate_burst END, \
             quotas = CASE WHEN $8 = 1 THEN $9 ELSE quotas END WHERE id = $4",
            )
            .bind(change.name.as_deref())
            .bind(change.tier.map(Tier::as_str))
            .bind(now_ms)
            .bind(id.as_str())
            .bind(i64::from(change.rate_limit.is_some()))
            .bind(change.rate_limit.flatten().map(|r| i64::from(r.per_second)))
            .bind(change.rate_limit.flatten().map(|r| i64::from(r.burst)))
            .bind(i64::from(change.quotas.is_some()))
            .bind(overrides_value(change.quotas.flatten().as_ref())?)
            .execute(&mut *tx)
            .await
            .map_err(catalog_err)?;
            if done.rows_affected() == 0 {
                return Err(Error::TenantNotFound);
            }
            let row = fetch_tenant(&mut tx, id).await?.ok_or(Error::TenantNotFound)?;
            tx.commit().await.map_err(catalog_err)?;
            Ok((row, epoch))
        })
        .await
    }

    /// Removes a tenant (and its pin and index definitions, cancelling their jobs), and revokes
    /// every valet grant it was issued, so no URL of it opens a later tenant of the same name
    /// (grants also name the tenant's incarnation, which a later tenant does not share). Returns
    /// the new epoch.
    pub async fn delete_tenant(&self, id: &TenantId, audit: &Audit) -> Result<u64, Error> {
        self.guarded(async {
            let (mut tx, epoch) = self.begin_change(audit).await?;
            for table in ["tenant_pins", "index_defs", "collection_distributions"] {
                sqlx::query(&format!("DELETE FROM {table} WHERE tenant = $1"))
                    .bind(id.as_str())
                    .execute(&mut *tx)
                    .await
                    .map_err(catalog_err)?;
            }
            sqlx::query(
                "UPDATE jobs SET state = 'cancelled', error = 'the tenant was deleted', updated_at = $1 \
                 WHERE tenant = $2 AND state = 'running'",
            )
            .bind(crate::clock::now_ms())
            .bind(id.as_str())
            .execute(&mut *tx)
            .await
            .map_err(catalog_err)?;
            revoke_tenant_grants(&mut tx, id.as_str()).await?;
            if !commit_if_changed(tx, sqlx::query("DELETE FROM tenants WHERE id = $1").bind(id.as_str())).await? {
                return Err(Error::TenantNotFound);
            }
            Ok(epoch)
        })
        .await
    }

    /// Whether a tenant of this id was ever deleted: its audit entry
    /// ([`TENANT_DELETE_ACTION`]) is written in the deletion's transaction and never removed.
    /// Only then can rows of an earlier tenant of the id be left on a shard.
    pub async fn tenant_was_deleted(&self, id: &TenantId) -> Result<bool, Error> {
        self.guarded(async {
            let found: Option<i64> =
                sqlx::query_scalar("SELECT id FROM audit_log WHERE tenant = $1 AND action = $2 LIMIT 1")
                    .bind(id.as_str())
                    .bind(TENANT_DELETE_ACTION)
                    .fetch_optional(&self.db.pool)
                    .await
                    .map_err(catalog_err)?;
            Ok(found.is_some())
        })
        .await
    }

    /// One tenant.
    pub async fn get_tenant(&self, id: &TenantId) -> Result<Option<TenantRow>, Error> {
        self.guarded(async {
            let mut conn = self.db.pool.acquire().await.map_err(catalog_err)?;
            fetch_tenant(&mut conn, id).await
        })
        .await
    }

    /// Tenants ordered by id, after `after` (exclusive), at most `limit`.
    pub async fn list_tenants(&self, after: Option<&str>, limit: u32) -> Result<Vec<TenantRow>, Error> {
        self.guarded(async {
            let rows = sqlx::query(
                "SELECT t.id, t.name, t.tier, p.shard, t.created_at, t.updated_at, t.rate_per_second, t.rate_burst, \
             t.incarnation, t.quotas FROM tenants t \
             LEFT JOIN tenant_pins p ON p.tenant = t.id WHERE t.id > $1 ORDER BY t.id LIMIT $2",
            )
            .bind(after.unwrap_or(""))
            .bind(i64::from(limit))
            .fetch_all(&self.db.pool)
            .await
            .map_err(catalog_err)?;
            rows.iter().map(tenant_row).collect()
        })
        .await
    }
}

/// Inserts a shard's row unless its id is taken. Whether it was inserted.
/// `url` is the shard's URL as stored ([`Catalog::stored_shard_url`]).
async fn insert_shard_row(tx: &mut Transaction<'static, Any>, shard: &ShardRow, url: &str) -> Result<bool, Error> {
    let inserted = sqlx::query(
        "INSERT INTO shards (id, url, engine, state, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING",
    )
    .bind(shard.id.as_str())
    .bind(url)
    .bind(shard.engine.as_str())
    .bind(shard.state.as_str())
    .bind(shard.created_at_ms)
    .bind(shard.updated_at_ms)
    .execute(&mut **tx)
    .await
    .map_err(catalog_err)?;
    Ok(inserted.rows_affected() > 0)
}

async fn insert_vshards(tx: &mut Transaction<'static, Any>, owners: &[ShardId]) -> Result<(), Error> {
    // Batched multi-row inserts keep bootstrap to a handful of round trips.
    for (chunk_index, chunk) in owners.chunks(128).enumerate() {
        let mut sql = String::from("INSERT INTO vshards (vshard, shard) VALUES ");
        for i in 0..chunk.len() {
            if i > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&format!("(${}, ${})", 2 * i + 1, 2 * i + 2));
        }
        let mut query = sqlx::query(&sql);
        for (i, owner) in chunk.iter().enumerate() {
            query = query.bind((chunk_index * 128 + i) as i64).bind(owner.as_str());
        }
        query.execute(&mut **tx).await.map_err(catalog_err)?;
    }
    Ok(())
}

async fn fetch_tenant(conn: &mut sqlx::AnyConnection, id: &TenantId) -> Result<Option<TenantRow>, Error> {
    let row = sqlx::query(
        "SELECT t.id, t.name, t.tier, p.shard, t.created_at, t.updated_at, t.rate_per_second, t.rate_burst, \
             t.incarnation, t.quotas FROM tenants t \
         LEFT JOIN tenant_pins p ON p.tenant = t.id WHERE t.id = $1",
    )
    .bind(id.as_str())
    .fetch_optional(conn)
    .await
    .map_err(catalog_err)?;
    row.as_ref().map(tenant_row).transpose()
}

/// A tenant's rate limit from the two columns starting at `first` (both NULL: none).
fn rate_limit_columns(row: &AnyRow, first: usize) -> Result<Option<TenantRateLimit>, Error> {
    let per_second: Option<i64> = column(row, first)?;
    let burst: Option<i64> = column(row, first + 1)?;
    match (per_second, burst) {
        (None, None) => Ok(None),
        (Some(per_second), Some(burst)) => Ok(Some(TenantRateLimit {
            per_second: u32::try_from(per_second).map_err(|_| corrupt(format!("rate limit {per_second}")))?,
            burst: u32::try_from(burst).map_err(|_| corrupt(format!("rate burst {burst}")))?,
        })),
        _ => Err(corrupt("a tenant's rate limit has only one of its two columns".into())),
    }
}

/// What an update changes in a tenant; `None` fields stay as they are.
#[derive(Debug, Clone, Default)]
pub struct TenantChange {
    /// New display name.
    pub name: Option<String>,
    /// New tier.
    pub tier: Option<Tier>,
    /// New rate limit: `Some(None)` removes the tenant's own limit (its tier's applies).
    pub rate_limit: Option<Option<TenantRateLimit>>,
    /// New quotas of its own, replacing the ones it has: `Some(None)` (or an empty set) removes
    /// them all (its tier's apply).
    pub quotas: Option<Option<QuotaOverrides>>,
}

fn tenant_row(row: &AnyRow) -> Result<TenantRow, Error> {
    let id: String = column(row, 0)?;
    let tier: String = column(row, 2)?;
    let pin: Option<String> = column(row, 3)?;
    let id = TenantId::parse(&id).map_err(|e| corrupt(e.to_string()))?;
    Ok(TenantRow {
        name: column(row, 1)?,
        tier: Tier::parse(&tier).ok_or_else(|| corrupt(format!("tenant {id} tier {tier:?}")))?,
        pinned_shard: pin.map(|s| ShardId::parse(&s)).transpose().map_err(|e| corrupt(e.to_string()))?,
        rate_limit: rate_limit_columns(row, 6)?,
        quotas: overrides_column(row, 9)?,
        incarnation: incarnation_column(row, 8)?,
        created_at_ms: column(row, 4)?,
        updated_at_ms: column(row, 5)?,
        id,
    })
}

/// The incarnation stored in column `index`.
fn incarnation_column(row: &AnyRow, index: usize) -> Result<u64, Error> {
    let value: i64 = column(row, index)?;
    u64::try_from(value).map_err(|_| corrupt(format!("incarnation {value}")))
}

/// An incarnation as the catalog stores it.
fn incarnation_value(incarnation: u64) -> Result<i64, Error> {
    i64::try_from(incarnation).map_err(|_| corrupt(format!("incarnation {incarnation}")))
}

/// [`Error::TenantNotFound`] unless `tenant` exists in incarnation `incarnation` (as stored; as
/// `tx` sees it): what was issued to an earlier life of the id must not be recorded for the
/// current one.
async fn require_incarnation(tx: &mut Transaction<'static, Any>, tenant: &str, incarnation: i64) -> Result<(), Error> {
    let current: Option<i64> = sqlx::query_scalar("SELECT incarnation FROM tenants WHERE id = $1")
        .bind(tenant)
        .fetch_optional(&mut **tx)
        .await
        .map_err(catalog_err)?;
    if current == Some(incarnation) { Ok(()) } else { Err(Error::TenantNotFound) }
}

/// Revokes every grant of `tenant` inside `tx` (and moves the valet generation on).
async fn revoke_tenant_grants(tx: &mut Transaction<'static, Any>, tenant: &str) -> Result<(), Error> {
    sqlx::query("UPDATE valet_grants SET revoked_at = $1 WHERE tenant = $2 AND revoked_at IS NULL")
        .bind(crate::clock::now_ms())
        .bind(tenant)
        .execute(&mut **tx)
        .await
        .map_err(catalog_err)?;
    bump_valet_generation(tx).await
}

/// Moves the valet generation on inside `tx`: every instance drops its cached valet checks once
/// the change commits and it sees the new generation.
async fn bump_valet_generation(tx: &mut Transaction<'static, Any>) -> Result<(), Error> {
    sqlx::query("UPDATE shard_map SET valet_generation = valet_generation + 1 WHERE id = 1")
        .execute(&mut **tx)
        .await
        .map_err(catalog_err)?;
    Ok(())
}

/// A tenant's own quotas in column `index` (NULL: none).
fn overrides_column(row: &AnyRow, index: usize) -> Result<Option<QuotaOverrides>, Error> {
    let json: Option<String> = column(row, index)?;
    json.map(|json| serde_json::from_str(&json).map_err(|e| corrupt(format!("a tenant's quotas: {e}")))).transpose()
}

/// A tenant's own quotas as the catalog stores them: NULL when there are none.
fn overrides_value(own: Option<&QuotaOverrides>) -> Result<Option<String>, Error> {
    own.filter(|own| !own.is_empty())
        .map(|own| serde_json::to_string(own).map_err(|e| corrupt(format!("a tenant's quotas: {e}"))))
        .transpose()
}
