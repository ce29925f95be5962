//! The SQL of the record tables: each table's statements (templates with their parameters),
//! and the listing statements built from a listing's bounds.

use std::sync::LazyLock;

#[cfg(doc)]
use crate::storage::batch::{RowKey, RowSwap, RowWrite, Swap};

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

/// The statements of one table. Parameters are documented on the templates below.
pub(super) struct Statements {
    pub(super) insert_or_nothing: String,
    pub(super) insert_or_update: String,
    pub(super) read: String,
    pub(super) update: String,
    pub(super) delete: String,
    pub(super) delete_version: String,
    pub(super) list: String,
    pub(super) count_live: String,
    pub(super) purge_tenant: String,
    pub(super) count_collection: String,
    pub(super) purge_collection: String,
    /// The batch of unconditional writes ([`crate::storage::batch`]): `$1` the writes as a JSON
    /// array of [`RowWrite`], each key once. Returns each written row's tenant, collection, key,
    /// version and the version it last became live at; a write a fence refused returns no row.
    /// SQLite's, then PostgreSQL's.
    pub(super) batch_write: [String; 2],
    /// The batch of point reads: `$1` the addresses as a JSON array of [`RowKey`]. Returns the
    /// tenant and collection, then the columns of `read`, of each row found.
    pub(super) batch_read: [String; 2],
    /// The batch of compare-and-swap writes ([`RowSwap`], each key once): first the inserts
    /// ([`Swap::Insert`]), then the updates and tombstones (the other kinds), each returning the
    /// tenant, collection, key and new version of every row it changed.
    pub(super) batch_swap: [[String; 2]; 2],
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
pub(super) static HOME: LazyLock<Statements> = LazyLock::new(|| {
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
pub(super) static SPREAD: LazyLock<Statements> = LazyLock::new(|| {
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
pub(super) fn bounded(select: &str, condition: &str, bounds: &ListBounds) -> (String, Vec<String>) {
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
pub(super) fn checking_listing(
    statements: &Statements,
    condition: &str,
    moved: &str,
    bounds: &ListBounds,
) -> CheckingListing {
    let moved = format!(
        "SELECT ({moved}) + (SELECT COUNT(*) FROM collection_fences WHERE tenant = $1 AND collection = $2 \
         AND layout = 'spread' AND state = 'moved')"
    );
    let select = statements.list.replacen(" FROM ", &format!(", ({moved}) AS moved FROM "), 1);
    CheckingListing { bounded: bounded(&select, &format!(" AND {condition}"), bounds), moved }
}

/// The listing on a shard of the records placed by the vshard `runs` it holds, asking whether
/// one of them has moved away in the same statement.
pub(super) fn vshard_listing(statements: &Statements, runs: &[(u32, u32)], bounds: &ListBounds) -> CheckingListing {
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
