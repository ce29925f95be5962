//! The catalog's daily usage (`usage_days` and `usage_samples`, catalog migration 0024; the
//! usage audits' `usage_audits`, 0025), kept for
//! billing by [`crate::usage::daily`]: per UTC day and tenant, storage byte-hours, requests, bytes
//! received and sent, and bytes moved through valet URLs.
//!
//! - Every instance adds what it counted, many rows in one statement (one JSON parameter unpacked
//!   by the database); a row that exists is added to, so instances never overwrite each other.
//! - A tenant whose valet bytes are limited reserves them here before they move, in one
//!   conditional statement ([`Catalog::reserve_valet_bytes`]): two instances can never both take
//!   the last bytes of a day.
//! - An hourly storage sample is written with its claim in one transaction
//!   ([`Catalog::record_usage_sample`]): whichever instance commits first counts the hour, the
//!   others' samples of it are rolled back.
//! - A background usage audit ([`crate::usage::audit`]) is claimed per run in `usage_audits`, and
//!   its outcome written to the run's row.

use serde::{Deserialize, Serialize};

use super::{Catalog, catalog_err, column};
use crate::error::Error;
use crate::storage::db::Engine;

/// What a tenant used on a day (or what is added to it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DayUsage {
    /// Bytes of records and blobs held, times the hours they were held (one hourly sample each).
    pub storage_byte_hours: u64,
    /// Requests answered for the tenant (valet transfers included).
    pub requests: u64,
    /// Bytes of response bodies sent to the tenant (valet downloads not included).
    pub bytes_read: u64,
    /// Bytes of request bodies received from the tenant (valet uploads not included).
    pub bytes_written: u64,
    /// Bytes moved through the tenant's valet URLs, uploads and downloads together.
    pub valet_bytes: u64,
}

impl DayUsage {
    /// Adds `other` to `self`.
    pub fn add(&mut self, other: &DayUsage) {
        self.storage_byte_hours = self.storage_byte_hours.saturating_add(other.storage_byte_hours);
        self.requests = self.requests.saturating_add(other.requests);
        self.bytes_read = self.bytes_read.saturating_add(other.bytes_read);
        self.bytes_written = self.bytes_written.saturating_add(other.bytes_written);
        self.valet_bytes = self.valet_bytes.saturating_add(other.valet_bytes);
    }

    /// Whether it counts nothing.
    pub fn is_empty(&self) -> bool {
        *self == DayUsage::default()
    }
}

/// One tenant's usage on one day.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageDayRow {
    /// The UTC day (days since 1970-01-01).
    pub day: i64,
    /// The tenant.
    pub tenant: String,
    /// What it used.
    #[serde(flatten)]
    pub usage: DayUsage,
}

/// What a reservation of valet bytes found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValetReservation {
    /// The bytes were added; the day's valet bytes are now this many.
    Reserved(u64),
    /// They would have taken the day over the limit; nothing was added. The day's valet bytes
    /// so far.
    Refused(u64),
}

/// One background usage audit, as `usage_audits` keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageAuditRow {
    /// Its number: the time it was due divided by the interval.
    pub run: i64,
    /// The instance that ran it.
    pub instance: String,
    /// When it began (ms since the Unix epoch).
    pub started_ms: i64,
    /// When it ended, if it did.
    pub finished_ms: Option<i64>,
    /// Shards audited.
    pub shards: u64,
    /// Tenants and shards found disagreeing.
    pub disagreements: u64,
    /// Shards whose kept usage was rewritten.
    pub repaired: u64,
}

/// The counted columns, in the order rows are read.
const COUNTED: [&str; 5] = ["storage_byte_hours", "requests", "bytes_read", "bytes_written", "valet_bytes"];

/// An amount as the catalog stores it.
fn stored(amount: u64) -> i64 {
    i64::try_from(amount).unwrap_or(i64::MAX)
}

/// The statement that adds the rows given as a JSON array in `$1`.
fn add_sql(engine: Engine) -> String {
    let columns = format!("day, tenant, {}", COUNTED.join(", "));
    let added = COUNTED.map(|c| format!("{c} = usage_days.{c} + excluded.{c}")).join(", ");
    let conflict = format!("ON CONFLICT (day, tenant) DO UPDATE SET {added}");
    match engine {
        Engine::Postgres => format!(
            "INSERT INTO usage_days ({columns}) SELECT {columns} FROM jsonb_to_recordset($1::jsonb) AS r(day BIGINT, \
             tenant TEXT, storage_byte_hours BIGINT, requests BIGINT, bytes_read BIGINT, bytes_written BIGINT, \
             valet_bytes BIGINT) {conflict}"
        ),
        Engine::Sqlite => {
            let fields = columns.split(", ").map(|c| format!("json_extract(value, '$.{c}')")).collect::<Vec<_>>();
            // `WHERE true` keeps SQLite from reading `ON CONFLICT` as part of the SELECT.
            format!(
                "INSERT INTO usage_days ({columns}) SELECT {} FROM json_each($1) WHERE true {conflict}",
                fields.join(", ")
            )
        }
    }
}

fn rows_json(rows: &[UsageDayRow]) -> Result<String, Error> {
    serde_json::to_string(rows).map_err(|e| Error::Corrupt(format!("usage rows: {e}")))
}

impl Catalog {
    /// Adds `rows` to the days and tenants they name.
    pub async fn add_usage_days(&self, rows: &[UsageDayRow]) -> Result<(), Error> {
        if rows.is_empty() {
            return Ok(());
        }
        let json = rows_json(rows)?;
        self.guarded(async {
            sqlx::query(&add_sql(self.db.engine)).bind(json).execute(&self.db.pool).await.map_err(catalog_err)?;
            Ok(())
        })
        .await
    }

    /// Every tenant's usage on `day`, by tenant.
    pub async fn usage_day(&self, day: i64) -> Result<Vec<UsageDayRow>, Error> {
        self.guarded(async {
            let rows = sqlx::query(&format!(
                "SELECT tenant, {} FROM usage_days WHERE day = $1 ORDER BY tenant",
                COUNTED.join(", ")
            ))
            .bind(day)
            .fetch_all(&self.db.pool)
            .await
            .map_err(catalog_err)?;
            rows.iter()
                .map(|row| {
                    let count = |i: usize| -> Result<u64, Error> {
                        column::<i64>(row, i).map(|n| u64::try_from(n).unwrap_or(0))
                    };
                    Ok(UsageDayRow {
                        day,
                        tenant: column(row, 0)?,
                        usage: DayUsage {
                            storage_byte_hours: count(1)?,
                            requests: count(2)?,
                            bytes_read: count(3)?,
                            bytes_written: count(4)?,
                            valet_bytes: count(5)?,
                        },
                    })
                })
                .collect()
        })
        .await
    }

    /// Adds `bytes` to `tenant`'s valet bytes of `day` if they stay within `limit`
    /// ([`ValetReservation::Reserved`]); else changes nothing ([`ValetReservation::Refused`]).
    pub async fn reserve_valet_bytes(
        &self,
        day: i64,
        tenant: &str,
        bytes: u64,
        limit: u64,
    ) -> Result<ValetReservation, Error> {
        self.guarded(async {
            if bytes <= limit {
                let now: Option<(i64,)> = sqlx::query_as(
                    "INSERT INTO usage_days (day, tenant, valet_bytes) VALUES ($1, $2, $3) \
                     ON CONFLICT (day, tenant) DO UPDATE SET valet_bytes = usage_days.valet_bytes + excluded.valet_bytes \
                     WHERE usage_days.valet_bytes + excluded.valet_bytes <= $4 RETURNING valet_bytes",
                )
                .bind(day)
                .bind(tenant)
                .bind(stored(bytes))
                .bind(stored(limit))
                .fetch_optional(&self.db.pool)
                .await
                .map_err(catalog_err)?;
                if let Some((now,)) = now {
                    return Ok(ValetReservation::Reserved(u64::try_from(now).unwrap_or(0)));
                }
            }
            Ok(ValetReservation::Refused(self.valet_bytes_on(day, tenant).await?))
        })
        .await
    }

    /// `tenant`'s valet bytes of `day` as stored.
    pub async fn valet_bytes_on(&self, day: i64, tenant: &str) -> Result<u64, Error> {
        self.guarded(async {
            let used: Option<(i64,)> =
                sqlx::query_as("SELECT valet_bytes FROM usage_days WHERE day = $1 AND tenant = $2")
                    .bind(day)
                    .bind(tenant)
                    .fetch_optional(&self.db.pool)
                    .await
                    .map_err(catalog_err)?;
            Ok(used.map_or(0, |(n,)| u64::try_from(n).unwrap_or(0)))
        })
        .await
    }

    /// Takes `bytes` reserved but not moved off `tenant`'s valet bytes of `day` (never below 0).
    pub async fn give_back_valet_bytes(&self, day: i64, tenant: &str, bytes: u64) -> Result<(), Error> {
        self.guarded(async {
            sqlx::query(
                "UPDATE usage_days SET valet_bytes = CASE WHEN valet_bytes > $3 THEN valet_bytes - $3 ELSE 0 END \
                 WHERE day = $1 AND tenant = $2",
            )
            .bind(day)
            .bind(tenant)
            .bind(stored(bytes))
            .execute(&self.db.pool)
            .await
            .map_err(catalog_err)?;
            Ok(())
        })
        .await
    }

    /// Whether the storage sample of `hour` (hours since the Unix epoch) was taken.
    pub async fn usage_hour_sampled(&self, hour: i64) -> Result<bool, Error> {
        self.guarded(async {
            let found: Option<(i64,)> = sqlx::query_as("SELECT hour FROM usage_samples WHERE hour = $1")
                .bind(hour)
                .fetch_optional(&self.db.pool)
                .await
                .map_err(catalog_err)?;
            Ok(found.is_some())
        })
        .await
    }

    /// How many hours of `day` have a storage sample.
    pub async fn usage_hours_sampled(&self, day: i64) -> Result<u64, Error> {
        self.guarded(async {
            let (count,): (i64,) =
                sqlx::query_as("SELECT CAST(COUNT(*) AS BIGINT) FROM usage_samples WHERE hour >= $1 AND hour < $2")
                    .bind(day.saturating_mul(24))
                    .bind(day.saturating_mul(24).saturating_add(24))
                    .fetch_one(&self.db.pool)
                    .await
                    .map_err(catalog_err)?;
            Ok(u64::try_from(count).unwrap_or(0))
        })
        .await
    }

    /// Records `instance`'s storage sample of `hour` (taken at `taken_ms`, missing
    /// `unreachable_shards`) and adds its `rows`, unless the hour was sampled already: then
    /// nothing is written and the answer is `false`.
    pub async fn record_usage_sample(
        &self,
        (hour, instance, taken_ms): (i64, &str, i64),
        rows: &[UsageDayRow],
        unreachable_shards: usize,
    ) -> Result<bool, Error> {
        let json = rows_json(rows)?;
        let tenants = i64::try_from(rows.len()).unwrap_or(i64::MAX);
        let unreachable = i64::try_from(unreachable_shards).unwrap_or(i64::MAX);
        self.guarded(async {
            let mut tx = self.db.pool.begin().await.map_err(catalog_err)?;
            let claimed = sqlx::query(
                "INSERT INTO usage_samples (hour, instance, taken_ms, tenants, unreachable_shards) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (hour) DO NOTHING",
            )
            .bind(hour)
            .bind(instance)
            .bind(taken_ms)
            .bind(tenants)
            .bind(unreachable)
            .execute(&mut *tx)
            .await
            .map_err(catalog_err)?
            .rows_affected();
            if claimed == 0 {
                tx.rollback().await.map_err(catalog_err)?;
                return Ok(false);
            }
            if !rows.is_empty() {
                sqlx::query(&add_sql(self.db.engine)).bind(json).execute(&mut *tx).await.map_err(catalog_err)?;
            }
            tx.commit().await.map_err(catalog_err)?;
            Ok(true)
        })
        .await
    }

    /// Claims audit `run` for `instance` (at `now_ms`): `false` if another instance claimed it.
    pub async fn claim_usage_audit(&self, run: i64, instance: &str, now_ms: i64) -> Result<bool, Error> {
        self.guarded(async {
            let claimed = sqlx::query(
                "INSERT INTO usage_audits (run, instance, started_ms) VALUES ($1, $2, $3) ON CONFLICT (run) DO NOTHING",
            )
            .bind(run)
            .bind(instance)
            .bind(now_ms)
            .execute(&self.db.pool)
            .await
            .map_err(catalog_err)?
            .rows_affected();
            Ok(claimed == 1)
        })
        .await
    }

    /// Writes what audit `row.run` found.
    pub async fn finish_usage_audit(&self, row: &UsageAuditRow) -> Result<(), Error> {
        self.guarded(async {
            sqlx::query(
                "UPDATE usage_audits SET finished_ms = $2, shards = $3, disagreements = $4, repaired = $5                  WHERE run = $1 AND instance = $6",
            )
            .bind(row.run)
            .bind(row.finished_ms)
            .bind(stored(row.shards))
            .bind(stored(row.disagreements))
            .bind(stored(row.repaired))
            .bind(&row.instance)
            .execute(&self.db.pool)
            .await
            .map_err(catalog_err)?;
            Ok(())
        })
        .await
    }

    /// Deletes the usage of days before `day`, their samples and the audits begun before it.
    pub async fn prune_usage_days(&self, day: i64) -> Result<(), Error> {
        self.guarded(async {
            sqlx::query("DELETE FROM usage_days WHERE day < $1")
                .bind(day)
                .execute(&self.db.pool)
                .await
                .map_err(catalog_err)?;
            sqlx::query("DELETE FROM usage_samples WHERE hour < $1")
                .bind(day.saturating_mul(24))
                .execute(&self.db.pool)
                .await
                .map_err(catalog_err)?;
            sqlx::query("DELETE FROM usage_audits WHERE started_ms < $1")
                .bind(day.saturating_mul(crate::clock::DAY_MS))
                .execute(&self.db.pool)
                .await
                .map_err(catalog_err)?;
            Ok(())
        })
        .await
    }
}
