//! The instance registry: each gateway instance's row (`instances`), written once per report
//! interval by the instance itself, with what it is (version, start, advertised address) and
//! the readiness of its components as one JSON document the catalog keeps without reading it;
//! and who holds the leases instances take (the balancer's, each running job's). Rows of
//! instances not seen for a while are deleted ([`Catalog::prune_instances`]), so the table
//! stays as small as the fleet.

use sqlx::any::AnyRow;

use super::{Catalog, catalog_err, column};
use crate::error::Error;

/// What an instance reports about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceReport {
    /// Its name: the one its load windows and its leases carry.
    pub id: String,
    /// The version of the binary it runs.
    pub version: String,
    /// When it started (ms since the Unix epoch).
    pub started_ms: i64,
    /// The address it advertises (configured, or the one it listens on).
    pub address: String,
    /// How often it reports (ms): it is gone when two of these pass without a report.
    pub report_interval_ms: i64,
    /// The readiness of its components, as a JSON document (the catalog does not read it).
    pub readiness: String,
}

/// An instance's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceRow {
    /// What it last reported.
    pub report: InstanceReport,
    /// When it last reported (ms since the Unix epoch).
    pub last_seen_ms: i64,
    /// When it stopped cleanly, if it did (ms since the Unix epoch).
    pub stopped_ms: Option<i64>,
}

impl InstanceRow {
    /// Whether it is gone at `now_ms`: stopped, or silent for two of its report intervals.
    pub fn gone_at(&self, now_ms: i64) -> bool {
        self.stopped_ms.is_some() || now_ms - self.last_seen_ms > 2 * self.report.report_interval_ms.max(1)
    }
}

/// A running job's lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobLease {
    /// The job's id.
    pub job: String,
    /// Its kind (`tenant.move`, `vshards.rebalance`, ...).
    pub kind: String,
    /// What it works on.
    pub target: String,
    /// The instance holding the lease.
    pub owner: String,
    /// Until when (ms since the Unix epoch).
    pub lease_until: i64,
}

const COLUMNS: &str = "id, version, started_ms, address, report_interval_ms, last_seen_ms, stopped_ms, readiness";

fn read_row(row: &AnyRow) -> Result<InstanceRow, Error> {
    Ok(InstanceRow {
        report: InstanceReport {
            id: column(row, 0)?,
            version: column(row, 1)?,
            started_ms: column(row, 2)?,
            address: column(row, 3)?,
            report_interval_ms: column(row, 4)?,
            readiness: column(row, 7)?,
        },
        last_seen_ms: column(row, 5)?,
        stopped_ms: column(row, 6)?,
    })
}

impl Catalog {
    /// Stores `report` as seen at `now_ms` (a new row, or the instance's row replaced). A stop
    /// stays recorded: a report that crossed it does not bring a stopped instance back (a
    /// process that starts again is a new instance, with a new name).
    pub async fn report_instance(&self, report: &InstanceReport, now_ms: i64) -> Result<(), Error> {
        let sql = format!(
            "INSERT INTO instances ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, NULL, $7) \
             ON CONFLICT (id) DO UPDATE SET version = excluded.version, started_ms = excluded.started_ms, \
             address = excluded.address, report_interval_ms = excluded.report_interval_ms, \
             last_seen_ms = excluded.last_seen_ms, readiness = excluded.readiness"
        );
        let upsert = sqlx::query(&sql)
            .bind(&report.id)
            .bind(&report.version)
            .bind(report.started_ms)
            .bind(&report.address)
            .bind(report.report_interval_ms)
            .bind(now_ms)
            .bind(&report.readiness);
        self.execute(upsert).await?;
        Ok(())
    }

    /// Marks instance `id` stopped at `now_ms` (a clean stop: it is gone at once).
    pub async fn instance_stopped(&self, id: &str, now_ms: i64) -> Result<(), Error> {
        self.execute(sqlx::query("UPDATE instances SET stopped_ms = $1 WHERE id = $2").bind(now_ms).bind(id)).await?;
        Ok(())
    }

    /// Deletes the rows of instances last seen before `before_ms`; returns how many.
    pub async fn prune_instances(&self, before_ms: i64) -> Result<u64, Error> {
        self.execute(sqlx::query("DELETE FROM instances WHERE last_seen_ms < $1").bind(before_ms)).await
    }

    /// The instances seen since `since_ms`, the longest running first.
    pub async fn instances(&self, since_ms: i64) -> Result<Vec<InstanceRow>, Error> {
        self.guarded(async {
            let rows = sqlx::query(&format!(
                "SELECT {COLUMNS} FROM instances WHERE last_seen_ms >= $1 ORDER BY started_ms, id"
            ))
            .bind(since_ms)
            .fetch_all(&self.db.pool)
            .await
            .map_err(catalog_err)?;
            rows.iter().map(read_row).collect()
        })
        .await
    }

    /// The leases of running jobs held at `now_ms` (a lease that ran out is nobody's: the next
    /// instance to look takes the job over), oldest job first.
    pub async fn job_leases(&self, now_ms: i64) -> Result<Vec<JobLease>, Error> {
        self.guarded(async {
            let rows = sqlx::query(
                "SELECT id, kind, target, owner, lease_until FROM jobs \
                 WHERE state = 'running' AND owner IS NOT NULL AND lease_until >= $1 ORDER BY created_at, id",
            )
            .bind(now_ms)
            .fetch_all(&self.db.pool)
            .await
            .map_err(catalog_err)?;
            rows.iter()
                .map(|row| {
                    Ok(JobLease {
                        job: column(row, 0)?,
                        kind: column(row, 1)?,
                        target: column(row, 2)?,
                        owner: column(row, 3)?,
                        lease_until: column(row, 4)?,
                    })
                })
                .collect()
        })
        .await
    }
}
