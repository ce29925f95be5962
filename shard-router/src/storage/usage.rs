//! What each tenant stores on one shard, as the shard database keeps it: the `tenant_usage`
//! table of shard migration 0012, which triggers on `records`, `spread_records`, `blobs` and
//! `index_entries` change in the same transaction as the rows (on both engines, whoever writes:
//! a lone statement, a batch, a move's copy or clean-up, a purge). Nothing here writes it.
//!
//! What counts ([`Usage`]): live records (home and spread; tombstones do not) and their bytes
//! (the stored value's length in bytes), live blobs and their bytes (their size; uploads in
//! progress and superseded content awaiting the janitor do not), and live index entries (a
//! pending entry counts once its record committed and it was marked live).
//!
//! Each part is kept by what places it ([`Placement`]), so that a reader summing a tenant over
//! the fleet counts it only on the shard the map places it on: a copy a move has not switched to
//! yet, or has left behind until its clean-up, is then not counted twice. On PostgreSQL a change
//! goes to a row of its (tenant, placement) that no other transaction holds (`FOR UPDATE SKIP
//! LOCKED`), or to a new row (a new stripe) when all are held, so that a tenant's writers never
//! wait for one another's usage (nor deadlock over it); [`tenant_usage`] sums the stripes.
//!
//! Records of range-distributed collections, and both layouts of a collection whose
//! distribution is being changed, are kept where they lie, whatever places them: a reader passes
//! how the map places the tenant's collections as seen from the shard ([`Placing`]), and the
//! rows there that the map places elsewhere (a copy not switched to yet, or one left behind
//! until its clean-up) are taken off in the same snapshot ([`tenant_usage`],
//! [`every_tenant_usage`]), so that no copy counts twice.
//!
//! [`counted_tenant_usage`] counts the same from the rows themselves (a scan of the tenant's
//! rows, for checks and tests).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::error::Error;
use crate::ids::TenantId;
use crate::storage::db::Engine;
use crate::storage::shard::{FencedShard, OnShard};

/// What a tenant stores: counts and bytes of its live data.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Live records (home and spread).
    pub records: u64,
    /// Their stored values' bytes.
    pub record_bytes: u64,
    /// Live blobs.
    pub blobs: u64,
    /// Their bytes.
    pub blob_bytes: u64,
    /// Live index entries.
    pub index_entries: u64,
}

impl Usage {
    /// Adds `other`.
    pub fn add(&mut self, other: &Usage) {
        self.records = self.records.saturating_add(other.records);
        self.record_bytes = self.record_bytes.saturating_add(other.record_bytes);
        self.blobs = self.blobs.saturating_add(other.blobs);
        self.blob_bytes = self.blob_bytes.saturating_add(other.blob_bytes);
        self.index_entries = self.index_entries.saturating_add(other.index_entries);
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        *self == Usage::default()
    }

    /// `self` less `other`, part by part, never below nothing.
    pub fn less(&self, other: &Usage) -> Usage {
        Usage {
            records: self.records.saturating_sub(other.records),
            record_bytes: self.record_bytes.saturating_sub(other.record_bytes),
            blobs: self.blobs.saturating_sub(other.blobs),
            blob_bytes: self.blob_bytes.saturating_sub(other.blob_bytes),
            index_entries: self.index_entries.saturating_sub(other.index_entries),
        }
    }

    /// `self`, each part at most `other`'s.
    pub fn capped(&self, other: &Usage) -> Usage {
        Usage {
            records: self.records.min(other.records),
            record_bytes: self.record_bytes.min(other.record_bytes),
            blobs: self.blobs.min(other.blobs),
            blob_bytes: self.blob_bytes.min(other.blob_bytes),
            index_entries: self.index_entries.min(other.index_entries),
        }
    }

    /// Whether every part is at most `other`'s.
    pub fn fits_in(&self, other: &Usage) -> bool {
        self.capped(other) == *self
    }
}

/// What places a part of a tenant's data on a shard (the `placement` column).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Placement {
    /// The tenant's home data (`records`, `blobs`): on its pin, else on the owner of its home
    /// vshard; it moves with the tenant.
    Home,
    /// Records of range-distributed collections (`spread_records` with vshard -1): their
    /// collection's ranges place them.
    Range,
    /// Rows a vshard places: records of hash-distributed collections and index entries.
    Vshard(u32),
}

impl Placement {
    /// The placement a `placement` column's value stands for; `None` for one no trigger writes.
    fn from_column(value: i64) -> Option<Self> {
        match value {
            -1 => Some(Placement::Home),
            -2 => Some(Placement::Range),
            v => u32::try_from(v).ok().map(Placement::Vshard),
        }
    }
}

/// The statement summing every tenant's stripes on the shard, by tenant then placement; parts that
/// sum to nothing are left out.
const SUM_BY_TENANT_AND_PLACEMENT: &str = "SELECT tenant, placement, CAST(SUM(records) AS BIGINT), \
     CAST(SUM(record_bytes) AS BIGINT), CAST(SUM(blobs) AS BIGINT), CAST(SUM(blob_bytes) AS BIGINT), \
     CAST(SUM(index_entries) AS BIGINT) FROM tenant_usage GROUP BY tenant, placement \
     HAVING SUM(records) <> 0 OR SUM(record_bytes) <> 0 OR SUM(blobs) <> 0 OR SUM(blob_bytes) <> 0 \
     OR SUM(index_entries) <> 0 ORDER BY tenant, placement";

/// The same sums counted from the rows, each table through its primary key's tenant prefix: of
/// the tenant `$1`, or of every tenant (`every_tenant`) with the tenant first in each row.
/// `value_bytes` is the engine's expression for the bytes of a row's `value`.
fn count_by_placement(value_bytes: &str, every_tenant: bool) -> String {
    let (select, of, group) =
        if every_tenant { ("d.tenant AS tenant, ", "", "d.tenant, ") } else { ("", " AND tenant = $1", "") };
    format!(
        "SELECT {select}d.placement AS placement, CAST(SUM(d.records) AS BIGINT) AS records, \
         CAST(SUM(d.record_bytes) AS BIGINT) AS record_bytes, CAST(SUM(d.blobs) AS BIGINT) AS blobs, \
         CAST(SUM(d.blob_bytes) AS BIGINT) AS blob_bytes, CAST(SUM(d.index_entries) AS BIGINT) AS index_entries \
         FROM (\
           SELECT tenant, -1 AS placement, 1 AS records, {value_bytes} AS record_bytes, 0 AS blobs, 0 AS blob_bytes, \
             0 AS index_entries FROM records WHERE deleted = 0{of} \
           UNION ALL SELECT tenant, CASE WHEN vshard >= 0 THEN vshard ELSE -2 END, 1, {value_bytes}, 0, 0, 0 \
             FROM spread_records WHERE deleted = 0{of} \
           UNION ALL SELECT tenant, -1, 0, 0, 1, size, 0 FROM blobs WHERE deleted = 0{of} \
           UNION ALL SELECT tenant, vshard, 0, 0, 0, 0, 1 FROM index_entries WHERE state = 'live'{of}\
         ) d GROUP BY {group}d.placement ORDER BY {group}d.placement"
    )
}

/// The engine's expression for the bytes of a row's `value`: PostgreSQL's octet_length; on
/// SQLite the length of the text read as a blob (its bytes in the database's encoding, UTF-8).
fn value_bytes(engine: Engine) -> &'static str {
    match engine {
        Engine::Postgres => "octet_length(value)",
        Engine::Sqlite => "length(CAST(value AS BLOB))",
    }
}

/// How the map places a tenant's data, seen from one shard: what a reader needs to tell the rows
/// there that the map places elsewhere.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placing {
    /// Whether the shard is the tenant's home: its home records of a collection the map spreads
    /// are then the old layout awaiting its clean-up, or a copy of a change of distribution not
    /// switched to yet.
    pub home: bool,
    /// The tenant's collections distributed `hash` or `range`, in byte order of their names.
    /// Spread rows of any other collection are a copy of a change of distribution and count
    /// nowhere.
    pub spread: Vec<(String, SpreadHere)>,
}

/// How the map spreads one collection, seen from one shard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpreadHere {
    /// By vshard: its rows count on their vshard's owner (the reader tells that by placement).
    Hash,
    /// By range: the key intervals (from, inclusive; until, exclusive, `None`: to the end) the
    /// map places on other shards. Rows of these here are a range move's copy not switched to
    /// yet, or its old copy awaiting the clean-up.
    Range(Vec<(String, Option<String>)>),
}

/// Values bound after `$1` (the tenant), numbered as they are added.
struct Binds<'p>(Vec<&'p str>);

impl<'p> Binds<'p> {
    /// Binds `value`: its placeholder.
    fn add(&mut self, value: &'p str) -> String {
        self.0.push(value);
        format!("${}", self.0.len() + 1)
    }
}

/// The rows of the tenant `$1` on a shard that the map (as `placing` gives it) places elsewhere,
/// as `UNION ALL` branches of (placement, records, record bytes, blobs, blob bytes, index
/// entries) with every count negated, and the values bound after `$1`. Each branch reads an
/// interval of a primary key (`records` or `spread_records`: tenant, collection, key), so one
/// holding no rows, as outside of moves, costs an index probe. Blobs and index entries never
/// lie elsewhere than their placement says (blobs move with their tenant, entries with their
/// vshard).
fn misplaced_branches(engine: Engine, placing: &Placing) -> (String, Vec<&str>) {
    let bytes = value_bytes(engine);
    let mut binds = Binds(Vec::new());
    let spread_rows = |condition: &str| {
        format!(
            "SELECT CASE WHEN vshard >= 0 THEN vshard ELSE -2 END AS placement, -1 AS records, \
             -{bytes} AS record_bytes, 0 AS blobs, 0 AS blob_bytes, 0 AS index_entries \
             FROM spread_records WHERE tenant = $1 AND deleted = 0{condition}"
        )
    };
    let mut branches = Vec::new();
    // Spread rows of the collections the map does not spread: those between its names.
    let names: Vec<&str> = placing.spread.iter().map(|(name, _)| name.as_str()).collect();
    for i in 0..=names.len() {
        let mut condition = String::new();
        if let Some(below) = i.checked_sub(1).map(|j| names[j]) {
            condition += &format!(" AND collection > {}", binds.add(below));
        }
        if let Some(above) = names.get(i) {
            condition += &format!(" AND collection < {}", binds.add(above));
        }
        branches.push(spread_rows(&condition));
    }
    for (name, here) in &placing.spread {
        if let SpreadHere::Range(elsewhere) = here {
            for (from, until) in elsewhere {
                let mut condition =
                    format!(" AND collection = {} AND vshard = -1 AND key >= {}", binds.add(name), binds.add(from));
                if let Some(until) = until {
                    condition += &format!(" AND key < {}", binds.add(until));
                }
                branches.push(spread_rows(&condition));
            }
        }
        if placing.home {
            branches.push(format!(
                "SELECT -1 AS placement, -1 AS records, -{bytes} AS record_bytes, 0 AS blobs, 0 AS blob_bytes, \
                 0 AS index_entries FROM records WHERE tenant = $1 AND deleted = 0 AND collection = {}",
                binds.add(name)
            ));
        }
    }
    (branches.join(" UNION ALL "), binds.0)
}

/// The sums per placement of `rows` (a `FROM` source of `placement` and the five counts, named
/// as in `tenant_usage`); with `having`, placements summing to nothing are left out.
fn sums_of(rows: &str, having: bool) -> String {
    let having = if having {
        " HAVING SUM(records) <> 0 OR SUM(record_bytes) <> 0 OR SUM(blobs) <> 0 OR SUM(blob_bytes) <> 0 \
         OR SUM(index_entries) <> 0"
    } else {
        ""
    };
    format!(
        "SELECT placement, CAST(SUM(records) AS BIGINT), CAST(SUM(record_bytes) AS BIGINT), \
         CAST(SUM(blobs) AS BIGINT), CAST(SUM(blob_bytes) AS BIGINT), CAST(SUM(index_entries) AS BIGINT) \
         FROM ({rows}) AS d \
         GROUP BY placement{having} ORDER BY placement"
    )
}

/// What `tenant` stores on `shard`, per placement (home, range, then by vshard), as the shard
/// keeps it, less its rows there that the map places elsewhere (`placing`), in one statement:
/// the tenant's prefix of `tenant_usage` (on PostgreSQL as many rows per placement as writers
/// ever held them at once, one on SQLite) and an index probe per interval of `placing`'s
/// (`misplaced_branches`), each finding nothing outside of moves. Placements holding nothing are
/// left out.
pub async fn tenant_usage(
    shard: &FencedShard<'_>,
    tenant: &TenantId,
    placing: &Placing,
) -> Result<Vec<(Placement, Usage)>, Error> {
    let (misplaced, binds) = misplaced_branches(shard.db().engine, placing);
    let sql = sums_of(
        &format!(
            "SELECT placement, records, record_bytes, blobs, blob_bytes, index_entries FROM tenant_usage \
             WHERE tenant = $1 UNION ALL {misplaced}"
        ),
        true,
    );
    let mut query = sqlx::query_as(&sql).bind(tenant.as_str());
    for value in binds {
        query = query.bind(value);
    }
    let rows: Vec<(i64, i64, i64, i64, i64, i64)> = query.fetch_all(shard.pool()).reading_on(shard).await?;
    Ok(sorted_parts(shard, rows))
}

/// The collections of `tenant` holding live records among its home records on `shard`
/// (collections distributed `tenant`), in byte order. A loose scan of the primary key: one
/// look-up per collection, however many records each holds.
pub async fn home_collections(shard: &FencedShard<'_>, tenant: &TenantId) -> Result<Vec<String>, Error> {
    const SQL: &str = "WITH RECURSIVE c(name) AS (\
           SELECT (SELECT MIN(collection) FROM records WHERE tenant = $1 AND deleted = 0) \
           UNION ALL SELECT (SELECT MIN(r.collection) FROM records r \
             WHERE r.tenant = $1 AND r.deleted = 0 AND r.collection > c.name) FROM c WHERE c.name IS NOT NULL\
         ) SELECT name FROM c WHERE name IS NOT NULL";
    let names: Vec<(String,)> =
        sqlx::query_as(SQL).bind(tenant.as_str()).fetch_all(shard.pool()).reading_on(shard).await?;
    Ok(names.into_iter().map(|(name,)| name).collect())
}

/// Whether `tenant`'s `collection` holds a live record among its home records on `shard`.
pub async fn holds_collection(shard: &FencedShard<'_>, tenant: &TenantId, collection: &str) -> Result<bool, Error> {
    const SQL: &str = "SELECT 1 FROM records WHERE tenant = $1 AND collection = $2 AND deleted = 0 LIMIT 1";
    let found: Option<(i32,)> = sqlx::query_as(SQL)
        .bind(tenant.as_str())
        .bind(collection)
        .fetch_optional(shard.pool())
        .reading_on(shard)
        .await?;
    Ok(found.is_some())
}

/// What `tenant` stores on `shard`, per placement as [`tenant_usage`] orders them, counted from its rows now (a scan of every
/// row of the tenant on the shard: for checks and tests, not for requests).
pub async fn counted_tenant_usage(
    shard: &FencedShard<'_>,
    tenant: &TenantId,
) -> Result<Vec<(Placement, Usage)>, Error> {
    let sql = count_by_placement(value_bytes(shard.db().engine), false);
    placed_sums(shard, tenant, &sql).await
}

/// What every tenant stores on `shard`, per tenant (byte order of their ids) and placement (in
/// [`tenant_usage`]'s order), as the shard keeps it, less the rows the map places elsewhere: [`tenant_usage`] of all of them,
/// in one snapshot (a read-only transaction, repeatable read on PostgreSQL). One statement
/// scans `tenant_usage` (a few rows per tenant); the tenants that may have rows here placed
/// elsewhere (those holding spread rows here, found by a loose scan of `spread_records`'
/// tenants, and those at home here with a spread collection: `placings` gives how the map
/// places each tenant with a spread collection) then take one statement each. For the admin
/// API's listings, metrics and the daily export, not for requests. Tenants storing nothing are
/// left out.
pub async fn every_tenant_usage(
    shard: &FencedShard<'_>,
    placings: &HashMap<String, Placing>,
) -> Result<Vec<(String, Vec<(Placement, Usage)>)>, Error> {
    const SPREAD_TENANTS: &str = "WITH RECURSIVE t(name) AS (\
           SELECT (SELECT MIN(tenant) FROM spread_records) \
           UNION ALL SELECT (SELECT MIN(s.tenant) FROM spread_records s WHERE s.tenant > t.name) \
             FROM t WHERE t.name IS NOT NULL\
         ) SELECT name FROM t WHERE name IS NOT NULL";
    let err = |source| Error::Database { target: format!("shard {}", shard.id()), source };
    let mut tx = read_snapshot(shard).await?;
    let rows: Vec<(String, i64, i64, i64, i64, i64, i64)> =
        sqlx::query_as(SUM_BY_TENANT_AND_PLACEMENT).fetch_all(&mut *tx).await.map_err(err)?;
    let mut tenants = by_tenant(shard, rows);
    let spread_here: Vec<String> = sqlx::query_scalar(SPREAD_TENANTS).fetch_all(&mut *tx).await.map_err(err)?;
    let plain = Placing::default();
    let mut looked: BTreeSet<&str> = BTreeSet::new();
    let at_home = placings.iter().filter(|(_, placing)| placing.home).map(|(tenant, _)| tenant.as_str());
    for tenant in spread_here.iter().map(String::as_str).chain(at_home) {
        if !looked.insert(tenant) {
            continue;
        }
        let Ok(position) = tenants.binary_search_by(|(t, _)| t.as_str().cmp(tenant)) else { continue };
        let (misplaced, binds) = misplaced_branches(shard.db().engine, placings.get(tenant).unwrap_or(&plain));
        let sql = sums_of(&misplaced, false);
        let mut query = sqlx::query_as(&sql).bind(tenant);
        for value in binds {
            query = query.bind(value);
        }
        let less: Vec<(i64, i64, i64, i64, i64, i64)> = query.fetch_all(&mut *tx).await.map_err(err)?;
        let parts = &mut tenants[position].1;
        for (placement, gone) in less.into_iter().filter_map(|(placement, a, b, c, d, e)| {
            // The branches negate what they count.
            placed(shard, (placement, -a, -b, -c, -d, -e))
        }) {
            if let Some((_, part)) = parts.iter_mut().find(|(p, _)| *p == placement) {
                *part = part.less(&gone);
            }
        }
        parts.retain(|(_, part)| !part.is_empty());
    }
    tx.commit().await.map_err(err)?;
    tenants.retain(|(_, parts)| !parts.is_empty());
    for (_, parts) in &mut tenants {
        parts.sort_by_key(|(placement, _)| *placement);
    }
    Ok(tenants)
}

/// A read-only transaction on `shard` whose statements all read one snapshot (repeatable read
/// on PostgreSQL; on SQLite a read transaction's snapshot is taken by its first statement).
async fn read_snapshot<'s>(shard: &FencedShard<'s>) -> Result<sqlx::Transaction<'s, sqlx::Any>, Error> {
    let err = |source| Error::Database { target: format!("shard {}", shard.id()), source };
    let mut tx = shard.pool().begin().await.map_err(err)?;
    if shard.db().engine == Engine::Postgres {
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .execute(&mut *tx)
            .await
            .map_err(err)?;
    }
    Ok(tx)
}

/// [`every_tenant_usage`] beside the same counted from the rows, both read in one snapshot (a
/// read-only transaction, repeatable read on PostgreSQL): a write commits its rows and its usage
/// together, so the two disagree only where something went around the triggers, never because a
/// write landed between the two reads. The count scans every live row on the shard: for
/// `shardgate check` and the background usage audit, not for requests.
pub async fn kept_and_counted(shard: &FencedShard<'_>) -> Result<(TenantsUsage, TenantsUsage), Error> {
    let err = |source| Error::Database { target: format!("shard {}", shard.id()), source };
    let mut tx = read_snapshot(shard).await?;
    let kept: Vec<(String, i64, i64, i64, i64, i64, i64)> =
        sqlx::query_as(SUM_BY_TENANT_AND_PLACEMENT).fetch_all(&mut *tx).await.map_err(err)?;
    let sql = count_by_placement(value_bytes(shard.db().engine), true);
    let counted: Vec<(String, i64, i64, i64, i64, i64, i64)> =
        sqlx::query_as(&sql).fetch_all(&mut *tx).await.map_err(err)?;
    tx.commit().await.map_err(err)?;
    Ok((by_tenant(shard, kept), by_tenant(shard, counted)))
}

/// The tenants on `shard` whose kept usage differs from their rows in any placement, each with
/// its kept and its counted usage summed over the placements (read in one snapshot:
/// [`kept_and_counted`]). Shared by `shardgate check` (`check/usage.rs`) and the background usage audit
/// (`usage/audit.rs`).
pub async fn disagreements(shard: &FencedShard<'_>) -> Result<Vec<(String, Usage, Usage)>, Error> {
    let (kept, counted) = kept_and_counted(shard).await?;
    let kept: BTreeMap<String, Vec<(Placement, Usage)>> = kept.into_iter().collect();
    let counted: BTreeMap<String, Vec<(Placement, Usage)>> = counted.into_iter().collect();
    let sum = |parts: &[(Placement, Usage)]| {
        parts.iter().fold(Usage::default(), |mut total, (_, part)| {
            total.add(part);
            total
        })
    };
    let tenants: BTreeSet<&String> = kept.keys().chain(counted.keys()).collect();
    Ok(tenants
        .into_iter()
        .filter_map(|tenant| {
            let kept = kept.get(tenant).map_or(&[][..], Vec::as_slice);
            let counted = counted.get(tenant).map_or(&[][..], Vec::as_slice);
            (kept != counted).then(|| (tenant.clone(), sum(kept), sum(counted)))
        })
        .collect())
}

/// Every tenant's parts on a shard, per placement, by tenant.
pub type TenantsUsage = Vec<(String, Vec<(Placement, Usage)>)>;

/// Rewrites the shard's kept usage from its rows, for every tenant, in one transaction that
/// holds writers off until it commits (on PostgreSQL a lock on the four tables, which waits for
/// the writes in progress and makes new ones wait; on SQLite the database's write lock, taken
/// by the first statement): a write's trigger then adds to what was rewritten, never to what
/// was replaced. For `shardgate check --repair-usage`. Returns how many rows it wrote.
pub async fn rewrite_usage(db: &crate::storage::db::Database, shard: &crate::ids::ShardId) -> Result<u64, Error> {
    let err = |source| Error::Database { target: format!("shard {shard}"), source };
    let mut tx = db.pool.begin().await.map_err(err)?;
    if db.engine == Engine::Postgres {
        sqlx::query("LOCK TABLE records, spread_records, blobs, index_entries IN SHARE MODE")
            .execute(&mut *tx)
            .await
            .map_err(err)?;
    }
    sqlx::query("DELETE FROM tenant_usage").execute(&mut *tx).await.map_err(err)?;
    let insert = format!(
        "INSERT INTO tenant_usage (tenant, placement, stripe, records, record_bytes, blobs, blob_bytes, index_entries) \
         SELECT c.tenant, c.placement, 0, c.records, c.record_bytes, c.blobs, c.blob_bytes, c.index_entries \
         FROM ({}) AS c",
        count_by_placement(value_bytes(db.engine), true)
    );
    let written = sqlx::query(&insert).execute(&mut *tx).await.map_err(err)?.rows_affected();
    tx.commit().await.map_err(err)?;
    Ok(written)
}

/// Rows of a tenant, a placement and the five sums, in tenant order, gathered by tenant.
fn by_tenant(
    shard: &FencedShard<'_>,
    rows: Vec<(String, i64, i64, i64, i64, i64, i64)>,
) -> Vec<(String, Vec<(Placement, Usage)>)> {
    let mut tenants: Vec<(String, Vec<(Placement, Usage)>)> = Vec::new();
    for (tenant, placement, records, record_bytes, blobs, blob_bytes, index_entries) in rows {
        let Some(part) = placed(shard, (placement, records, record_bytes, blobs, blob_bytes, index_entries)) else {
            continue;
        };
        match tenants.last_mut() {
            Some((last, parts)) if *last == tenant => parts.push(part),
            _ => tenants.push((tenant, vec![part])),
        }
    }
    tenants
}

/// One row of sums (the placement and the five sums) read as a placed part of a tenant's
/// usage; `None` for a part holding nothing or a placement no trigger writes.
fn placed(shard: &FencedShard<'_>, row: (i64, i64, i64, i64, i64, i64)) -> Option<(Placement, Usage)> {
    let (placement, records, record_bytes, blobs, blob_bytes, index_entries) = row;
    let Some(placement) = Placement::from_column(placement) else {
        tracing::warn!(shard = %shard.id(), placement, "tenant_usage row with an unknown placement, left out");
        return None;
    };
    // A negative sum would be a bug in the triggers, not usage: it reads as nothing.
    let count = |n: i64| u64::try_from(n).unwrap_or(0);
    let usage = Usage {
        records: count(records),
        record_bytes: count(record_bytes),
        blobs: count(blobs),
        blob_bytes: count(blob_bytes),
        index_entries: count(index_entries),
    };
    (!usage.is_empty()).then_some((placement, usage))
}

/// Runs `sql` (one row per placement: the placement and the five sums) for `tenant`.
async fn placed_sums(shard: &FencedShard<'_>, tenant: &TenantId, sql: &str) -> Result<Vec<(Placement, Usage)>, Error> {
    let rows: Vec<(i64, i64, i64, i64, i64, i64)> =
        sqlx::query_as(sql).bind(tenant.as_str()).fetch_all(shard.pool()).reading_on(shard).await?;
    Ok(sorted_parts(shard, rows))
}

/// Rows of a placement and the five sums read as placed parts, in placement order.
fn sorted_parts(shard: &FencedShard<'_>, rows: Vec<(i64, i64, i64, i64, i64, i64)>) -> Vec<(Placement, Usage)> {
    let mut placed_parts: Vec<(Placement, Usage)> = rows.into_iter().filter_map(|row| placed(shard, row)).collect();
    placed_parts.sort_by_key(|(placement, _)| *placement);
    placed_parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placements_read_from_their_column() {
        assert_eq!(Placement::from_column(-1), Some(Placement::Home));
        assert_eq!(Placement::from_column(-2), Some(Placement::Range));
        assert_eq!(Placement::from_column(0), Some(Placement::Vshard(0)));
        assert_eq!(Placement::from_column(1023), Some(Placement::Vshard(1023)));
        assert_eq!(Placement::from_column(-3), None);
    }

    #[test]
    fn usage_adds_field_by_field() {
        let mut total = Usage { records: 1, record_bytes: 10, blobs: 2, blob_bytes: 20, index_entries: 3 };
        total.add(&Usage { records: 4, record_bytes: 40, blobs: 5, blob_bytes: 50, index_entries: 6 });
        assert_eq!(total, Usage { records: 5, record_bytes: 50, blobs: 7, blob_bytes: 70, index_entries: 9 });
        assert!(!total.is_empty());
        assert!(Usage::default().is_empty());
    }
}
