//! The catalog's `load_windows`: every instance's closed windows of the load it put on the
//! shards ([`crate::storage::meter`]), stored, rolled up and pruned as every table of windows is
//! ([`super::windows`]), and read back for the load picture (`crate::balance`). Rows are written many at a time in one statement: the rows travel
//! as one JSON parameter that the database unpacks (`jsonb_to_recordset` on PostgreSQL,
//! `json_each` on SQLite), and a row that exists already is added to.

use serde::{Deserialize, Serialize};
use sqlx::Row;

use super::windows::WindowTable;
use super::{Catalog, catalog_err, column};
use crate::error::Error;
use crate::storage::db::Engine;
use crate::storage::meter::{Counters, WindowLoad};

/// What a load row counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadScope {
    /// Every statement on a vshard of the shard (`subject` is the vshard, `-1` for none).
    Vshard,
    /// One of the heaviest tenants' requests on the shard (`subject` is the tenant).
    Tenant,
}

impl LoadScope {
    /// Its name in the catalog and the API.
    pub fn as_str(self) -> &'static str {
        match self {
            LoadScope::Vshard => "vshard",
            LoadScope::Tenant => "tenant",
        }
    }

    fn parse(name: &str) -> Result<Self, Error> {
        match name {
            "vshard" => Ok(LoadScope::Vshard),
            "tenant" => Ok(LoadScope::Tenant),
            other => Err(Error::Corrupt(format!("load scope {other:?}"))),
        }
    }
}

/// One row of `load_windows`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadRow {
    /// The window's start (ms since the Unix epoch).
    pub start_ms: i64,
    /// Its width (ms).
    pub width_ms: i64,
    /// The instance that counted it.
    pub instance: String,
    /// The shard.
    pub shard: String,
    /// What it counts.
    pub scope: LoadScope,
    /// The vshard (as text) or the tenant.
    pub subject: String,
    /// Whose work (`request`, `move`, `maintenance`).
    pub work: String,
    /// The counters.
    #[serde(flatten)]
    pub counters: Counters,
    /// A tenant row's rank weight inherited from a tenant it displaced (µs; see
    /// [`crate::storage::meter::TenantLoad::overcount`]).
    pub overcount_us: u64,
}

impl LoadRow {
    /// The rows of `window`, counted by `instance`.
    pub fn of_window(instance: &str, window: &WindowLoad) -> Vec<LoadRow> {
        let row = |shard: &str, scope, subject: String, work: &str, counters: Counters, overcount_us| LoadRow {
            start_ms: window.start_ms,
            width_ms: window.width_ms,
            instance: instance.to_owned(),
            shard: shard.to_owned(),
            scope,
            subject,
            work: work.to_owned(),
            counters,
            overcount_us,
        };
        let vshards = window
            .vshards
            .iter()
            .map(|v| row(v.shard.as_str(), LoadScope::Vshard, v.vshard.to_string(), v.work.as_str(), v.counters, 0));
        let tenants = window.tenants.iter().map(|t| {
            row(t.shard.as_str(), LoadScope::Tenant, t.tenant.to_string(), "request", t.counters, t.overcount)
        });
        vshards.chain(tenants).collect()
    }
}

const COLUMNS: &str = "start_ms, width_ms, instance, shard, scope, subject, work, reads, writes, rows_read, \
                       rows_written, bytes_read, bytes_written, statement_us, errors, overcount_us";

/// The counters a stored row adds to when the same row is stored again.
const ADDED: [&str; 9] = [
    "reads",
    "writes",
    "rows_read",
    "rows_written",
    "bytes_read",
    "bytes_written",
    "statement_us",
    "errors",
    "overcount_us",
];

impl WindowTable for LoadRow {
    const TABLE: &'static str = "load_windows";
    const ORDER: &'static str = "shard, subject";
    type Key = (String, String, LoadScope, String, String);

    fn insert_sql(engine: Engine) -> String {
        let added = ADDED.map(|c| format!("{c} = load_windows.{c} + excluded.{c}")).join(", ");
        let conflict =
            format!("ON CONFLICT (start_ms, width_ms, instance, shard, scope, subject, work) DO UPDATE SET {added}");
        match engine {
            Engine::Postgres => format!(
                "INSERT INTO load_windows ({COLUMNS}) SELECT {COLUMNS} FROM jsonb_to_recordset($1::jsonb) AS r(\
                 start_ms BIGINT, width_ms BIGINT, instance TEXT, shard TEXT, scope TEXT, subject TEXT, work TEXT, \
                 reads BIGINT, writes BIGINT, rows_read BIGINT, rows_written BIGINT, bytes_read BIGINT, \
                 bytes_written BIGINT, statement_us BIGINT, errors BIGINT, overcount_us BIGINT) {conflict}"
            ),
            Engine::Sqlite => {
                let fields = COLUMNS.split(", ").map(|c| format!("json_extract(value, '$.{c}')")).collect::<Vec<_>>();
                // `WHERE true` keeps SQLite from reading `ON CONFLICT` as part of the SELECT.
                format!(
                    "INSERT INTO load_windows ({COLUMNS}) SELECT {} FROM json_each($1) WHERE true {conflict}",
                    fields.join(", ")
                )
            }
        }
    }
    fn columns() -> String {
        COLUMNS.to_owned()
    }
    fn read(row: &sqlx::any::AnyRow) -> Result<Self, Error> {
        let count = |i: usize| -> Result<u64, Error> { column::<i64>(row, i).map(|n| u64::try_from(n).unwrap_or(0)) };
        Ok(LoadRow {
            start_ms: column(row, 0)?,
            width_ms: column(row, 1)?,
            instance: column(row, 2)?,
            shard: column(row, 3)?,
            scope: LoadScope::parse(&column::<String>(row, 4)?)?,
            subject: column(row, 5)?,
            work: column(row, 6)?,
            counters: Counters {
                reads: count(7)?,
                writes: count(8)?,
                rows_read: count(9)?,
                rows_written: count(10)?,
                bytes_read: count(11)?,
                bytes_written: count(12)?,
                statement_us: count(13)?,
                errors: count(14)?,
            },
            overcount_us: count(15)?,
        })
    }
    fn json(rows: &[Self]) -> Result<String, Error> {
        serde_json::to_string(rows).map_err(|e| Error::Corrupt(format!("load rows: {e}")))
    }
    fn start_ms(&self) -> i64 {
        self.start_ms
    }
    fn key(&self) -> Self::Key {
        (self.instance.clone(), self.shard.clone(), self.scope, self.subject.clone(), self.work.clone())
    }
    fn emptied(&self, start_ms: i64, width_ms: i64) -> Self {
        LoadRow { start_ms, width_ms, counters: Counters::default(), overcount_us: 0, ..self.clone() }
    }
    fn add(&mut self, other: &Self) {
        self.counters.add(&other.counters);
        self.overcount_us += other.overcount_us;
    }
}

impl Catalog {
    /// The rows of `scope` of the windows that overlap `[since_ms, until_ms)`, in time order.
    pub async fn load_rows(&self, scope: LoadScope, since_ms: i64, until_ms: i64) -> Result<Vec<LoadRow>, Error> {
        self.rows_in_span(scope.as_str(), since_ms, until_ms).await
    }

    /// The instances that stored rows of windows that overlap `[since_ms, until_ms)`.
    pub async fn load_instances(&self, since_ms: i64, until_ms: i64) -> Result<Vec<String>, Error> {
        self.guarded(async {
            let rows = sqlx::query(
                "SELECT DISTINCT instance FROM load_windows WHERE start_ms < $2 AND start_ms + width_ms > $1 \
                 ORDER BY instance",
            )
            .bind(since_ms)
            .bind(until_ms)
            .fetch_all(&self.db.pool)
            .await
            .map_err(catalog_err)?;
            rows.iter().map(|r| r.try_get::<String, _>(0).map_err(catalog_err)).collect()
        })
        .await
    }
}
