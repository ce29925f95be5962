//! Daily usage for billing: per UTC day and tenant, storage byte-hours, requests, bytes received
//! and sent, and bytes moved through valet URLs, kept in the catalog
//! ([`crate::catalog::UsageDayRow`]) for `usage.retention_days`.
//!
//! - **Requests and bytes** are counted in memory by each instance ([`DailyMeter::note`]: one
//!   short lock per request) and added to the catalog every `usage.flush_interval`, and once more
//!   when the instance stops. A flush that fails is tried again with the next; what an instance
//!   counted since its last flush is lost if it is killed (at most one interval's worth).
//! - **Storage** is sampled once an hour by one instance: every tenant's kept usage (one statement
//!   per shard, [`super::every_tenant_usage`]) adds its record and blob bytes, for one hour, to the
//!   day of that hour. The sample and its claim are one catalog transaction, so an hour counts
//!   once however many instances take it; an hour no instance was running for is not counted,
//!   and a shard that does not answer leaves its tenants' bytes out of that hour (the sample
//!   records how many shards were missing).
//! - **Valet bytes** of a tenant whose `valet_bytes_per_day` is limited are reserved in the
//!   catalog before they move ([`ValetTransfer`]), so instances together never let a day's
//!   transfers exceed the quota; what a transfer reserved and did not move is given back when it
//!   ends. An unlimited tenant's valet bytes are counted as moved, like requests.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::catalog::{Catalog, DayUsage, UsageDayRow, ValetReservation};
use crate::clock::Clock;
use crate::error::Error;
use crate::router::ShardRouter;
use crate::usage::quotas::Quotas;

pub use crate::clock::{DAY_MS, HOUR_MS};

/// The UTC day (days since 1970-01-01) of `ms` since the Unix epoch.
pub fn day_of(ms: i64) -> i64 {
    ms.div_euclid(DAY_MS)
}

/// An upload of unknown length reserves valet bytes at least this many at a time (or exactly what
/// it needs, when that many would not fit the quota).
pub const VALET_RESERVATION_STEP: u64 = 4 << 20;

/// How daily usage is kept (`[usage]`).
#[derive(Debug, Clone, Copy)]
pub struct DailyConfig {
    /// How often an instance adds what it counted to the catalog.
    pub flush_interval: Duration,
    /// How many days are kept (today included).
    pub retention_days: u32,
}

/// What this instance counted and has not stored yet, by tenant and day: one short lock and one
/// look-up of the tenant per note.
#[derive(Debug, Default)]
pub struct DailyMeter {
    tenants: Mutex<HashMap<Box<str>, Counted, foldhash::fast::RandomState>>,
}

/// One tenant's counts not stored yet: the latest day's, and any earlier day's still waiting.
#[derive(Debug, Default)]
struct Counted {
    day: i64,
    usage: DayUsage,
    earlier: Vec<(i64, DayUsage)>,
}

impl Counted {
    fn add(&mut self, day: i64, usage: &DayUsage) {
        if day == self.day {
            self.usage.add(usage);
        } else if day > self.day {
            let previous = std::mem::replace(&mut self.usage, *usage);
            if !previous.is_empty() {
                self.earlier.push((self.day, previous));
            }
            self.day = day;
        } else {
            match self.earlier.iter_mut().find(|(d, _)| *d == day) {
                Some((_, counted)) => counted.add(usage),
                None => self.earlier.push((day, *usage)),
            }
        }
    }

    fn on(&self, day: i64) -> Option<&DayUsage> {
        if day == self.day {
            return Some(&self.usage);
        }
        self.earlier.iter().find(|(d, _)| *d == day).map(|(_, usage)| usage)
    }
}

impl DailyMeter {
    /// Adds `usage` to `tenant`'s `day`.
    pub fn note(&self, tenant: &str, day: i64, usage: &DayUsage) {
        let mut tenants = self.tenants.lock();
        if let Some(counted) = tenants.get_mut(tenant) {
            counted.add(day, usage);
            return;
        }
        tenants.insert(tenant.into(), Counted { day, usage: *usage, earlier: Vec::new() });
    }

    /// The valet bytes counted for `tenant` on `day`.
    fn valet_bytes(&self, tenant: &str, day: i64) -> u64 {
        self.tenants.lock().get(tenant).and_then(|counted| counted.on(day)).map_or(0, |usage| usage.valet_bytes)
    }

    /// Everything counted, emptied out.
    fn take(&self) -> Vec<UsageDayRow> {
        let tenants = std::mem::take(&mut *self.tenants.lock());
        tenants
            .into_iter()
            .flat_map(|(tenant, counted)| {
                let tenant: String = tenant.into();
                std::iter::once((counted.day, counted.usage))
                    .chain(counted.earlier)
                    .map(move |(day, usage)| UsageDayRow { day, tenant: tenant.clone(), usage })
            })
            .filter(|row| !row.usage.is_empty())
            .collect()
    }

    /// Puts `rows` back (their flush failed).
    fn put_back(&self, rows: Vec<UsageDayRow>) {
        for row in rows {
            self.note(&row.tenant, row.day, &row.usage);
        }
    }
}

/// Keeps daily usage: counts, flushes, samples storage and prunes.
#[derive(Debug)]
pub struct DailyUsage {
    router: Arc<ShardRouter>,
    meter: DailyMeter,
    config: DailyConfig,
    instance: String,
    clock: Arc<dyn Clock>,
}

impl DailyUsage {
    /// Daily usage kept in `router`'s catalog as `instance`, its days and hours told by `clock`.
    pub fn new(router: &Arc<ShardRouter>, config: DailyConfig, instance: String, clock: Arc<dyn Clock>) -> Arc<Self> {
        Arc::new(DailyUsage { router: router.clone(), meter: DailyMeter::default(), config, instance, clock })
    }

    /// Milliseconds since the Unix epoch, now, by its clock.
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Counts `usage` for `tenant` today.
    pub fn note(&self, tenant: &str, usage: &DayUsage) {
        self.meter.note(tenant, day_of(self.now_ms()), usage);
    }

    /// Counts one request of `tenant` that received `written` and sent `read` body bytes.
    pub fn note_request(&self, tenant: &str, written: u64, read: u64) {
        self.note(tenant, &DayUsage { requests: 1, bytes_read: read, bytes_written: written, ..DayUsage::default() });
    }

    /// `tenant`'s valet bytes today: those stored, and those this instance counted and has not
    /// stored yet.
    pub async fn valet_bytes_today(&self, tenant: &str) -> Result<u64, Error> {
        let day = day_of(self.now_ms());
        let stored = self.router.catalog().valet_bytes_on(day, tenant).await?;
        Ok(stored.saturating_add(self.meter.valet_bytes(tenant, day)))
    }

    /// Adds what this instance counted to the catalog; on failure it is kept for the next flush.
    pub async fn flush(&self) -> Result<(), Error> {
        let rows = self.meter.take();
        if let Err(e) = self.router.catalog().add_usage_days(&rows).await {
            self.meter.put_back(rows);
            return Err(e);
        }
        Ok(())
    }

    /// Takes the storage sample of the hour of `now_ms` unless it was taken: every tenant's
    /// record and blob bytes, for one hour, to that hour's day. `Ok(true)` if this instance's
    /// sample counted.
    pub async fn sample_storage(&self, now_ms: i64) -> Result<bool, Error> {
        let router = &self.router;
        let hour = now_ms.div_euclid(HOUR_MS);
        if router.catalog().usage_hour_sampled(hour).await? {
            return Ok(false);
        }
        let fleet = super::every_tenant_usage(router).await?;
        let day = day_of(now_ms);
        let rows: Vec<UsageDayRow> = fleet
            .tenants
            .iter()
            .map(|(tenant, usage)| UsageDayRow {
                day,
                tenant: tenant.to_string(),
                usage: DayUsage {
                    storage_byte_hours: usage.record_bytes.saturating_add(usage.blob_bytes),
                    ..DayUsage::default()
                },
            })
            .filter(|row| !row.usage.is_empty())
            .collect();
        if !fleet.unreachable.is_empty() {
            tracing::warn!(hour, unreachable = ?fleet.unreachable, "the hourly storage sample misses the tenants' bytes on shards that did not answer");
        }
        router.catalog().record_usage_sample((hour, &self.instance, now_ms), &rows, fleet.unreachable.len()).await
    }

    /// Deletes the days older than the retention.
    pub async fn prune(&self, now_ms: i64) -> Result<(), Error> {
        self.router.catalog().prune_usage_days(self.oldest_kept_day(now_ms)).await
    }

    /// The oldest day kept at `now_ms`.
    pub fn oldest_kept_day(&self, now_ms: i64) -> i64 {
        day_of(now_ms) - i64::from(self.config.retention_days.max(1)) + 1
    }

    /// Flushes every `usage.flush_interval`, and takes each hour's storage sample (and prunes)
    /// the first time it flushes in the hour; ends when the usage keeper is dropped.
    pub fn spawn(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let daily = Arc::downgrade(self);
        let interval = self.config.flush_interval.max(Duration::from_millis(100));
        tokio::spawn(async move {
            let mut sampled_hour = None;
            loop {
                tokio::time::sleep(interval).await;
                let Some(daily) = daily.upgrade() else { return };
                if let Err(e) = daily.flush().await {
                    tracing::warn!(error = %e, "cannot store the daily usage counted; keeping it for the next flush");
                }
                let now = daily.now_ms();
                let hour = now.div_euclid(HOUR_MS);
                if sampled_hour == Some(hour) {
                    continue;
                }
                match daily.sample_storage(now).await {
                    Ok(_) => sampled_hour = Some(hour),
                    Err(e) => tracing::warn!(error = %e, "cannot take the hourly storage sample; trying again"),
                }
                if let Err(e) = daily.prune(now).await {
                    tracing::warn!(error = %e, "cannot delete the daily usage older than the retention");
                }
            }
        })
    }
}

/// One valet transfer (a request, and its bytes) counted to its tenant's day. For a tenant whose
/// `valet_bytes_per_day` is limited, bytes are reserved in the catalog before they move
/// ([`ValetTransfer::grow_to`]); when the transfer ends (dropped), what was reserved and not moved
/// is given back. For other tenants what moved is counted when the transfer ends.
#[derive(Debug)]
pub struct ValetTransfer {
    daily: Arc<DailyUsage>,
    tenant: Box<str>,
    day: i64,
    limit: Option<u64>,
    reserved: u64,
    moved: u64,
}

impl ValetTransfer {
    /// A transfer of `tenant` (under `quotas`) that starts now, reserving `expected` bytes
    /// first (a download's length, an upload's declared length; 0 when unknown). 409
    /// `quota_exceeded` ([`Error::QuotaExceeded`], quota `valet_bytes_per_day`) when they do not
    /// fit the day's quota.
    pub async fn begin(daily: &Arc<DailyUsage>, tenant: &str, quotas: &Quotas, expected: u64) -> Result<Self, Error> {
        let mut transfer = ValetTransfer {
            daily: daily.clone(),
            tenant: tenant.into(),
            day: day_of(daily.now_ms()),
            limit: quotas.valet_bytes_per_day,
            reserved: 0,
            moved: 0,
        };
        transfer.reserve(expected, false).await?;
        Ok(transfer)
    }

    /// Lets the transfer grow to `total` bytes: reserves what is missing (at least
    /// [`VALET_RESERVATION_STEP`] at a time when that fits), or refuses.
    pub async fn grow_to(&mut self, total: u64) -> Result<(), Error> {
        if total > self.reserved {
            self.reserve(total - self.reserved, true).await?;
        }
        Ok(())
    }

    /// Notes that `bytes` more moved (within what was reserved, for a limited tenant).
    pub fn moved(&mut self, bytes: u64) {
        self.moved = self.moved.saturating_add(bytes);
    }

    /// Notes that `total` bytes have moved in all.
    pub fn moved_to(&mut self, total: u64) {
        self.moved = self.moved.max(total);
    }

    /// What this transfer holds reserved in the catalog.
    fn reserved_in_catalog(&self) -> u64 {
        if self.limit.is_some() { self.reserved } else { 0 }
    }

    async fn reserve(&mut self, needed: u64, stepped: bool) -> Result<(), Error> {
        let Some(limit) = self.limit else {
            self.reserved = self.reserved.saturating_add(needed);
            return Ok(());
        };
        if needed == 0 {
            return Ok(());
        }
        let catalog: &Catalog = self.daily.router.catalog();
        let mut attempts = vec![needed];
        if stepped && needed < VALET_RESERVATION_STEP {
            attempts.insert(0, VALET_RESERVATION_STEP);
        }
        let mut used = 0;
        for amount in attempts {
            match catalog.reserve_valet_bytes(self.day, &self.tenant, amount, limit).await? {
                ValetReservation::Reserved(_) => {
                    self.reserved = self.reserved.saturating_add(amount);
                    return Ok(());
                }
                ValetReservation::Refused(now) => used = now,
            }
        }
        Err(Error::QuotaExceeded { quota: "valet_bytes_per_day", limit, used, requested: needed })
    }
}

impl Drop for ValetTransfer {
    fn drop(&mut self) {
        // The request counts when the transfer ends, with the bytes that moved unreserved (all
        // of an unlimited tenant's; none of a limited one's, whose transfers reserve first).
        let valet_bytes = self.moved.saturating_sub(self.reserved_in_catalog());
        self.daily.meter.note(&self.tenant, self.day, &DayUsage { requests: 1, valet_bytes, ..DayUsage::default() });
        if self.limit.is_none() {
            return;
        }
        let unused = self.reserved.saturating_sub(self.moved);
        if unused == 0 {
            return;
        }
        let (daily, tenant, day) = (self.daily.clone(), std::mem::take(&mut self.tenant), self.day);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        runtime.spawn(async move {
            if let Err(e) = daily.router.catalog().give_back_valet_bytes(day, &tenant, unused).await {
                tracing::warn!(error = %e, tenant = %tenant, unused, "cannot give back valet bytes reserved and not moved");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_begin_at_utc_midnight() {
        assert_eq!(day_of(0), 0);
        assert_eq!(day_of(DAY_MS - 1), 0);
        assert_eq!(day_of(DAY_MS), 1);
        assert_eq!(day_of(-1), -1);
    }

    #[test]
    fn the_meter_adds_by_day_and_tenant_and_keeps_what_a_failed_flush_puts_back() {
        let meter = DailyMeter::default();
        let one = DayUsage { requests: 1, bytes_written: 10, ..DayUsage::default() };
        meter.note("acme", 3, &one);
        meter.note("acme", 3, &one);
        meter.note("acme", 4, &one);
        meter.note("beta", 3, &DayUsage::default());
        let mut rows = meter.take();
        rows.sort_by(|a, b| (a.day, &a.tenant).cmp(&(b.day, &b.tenant)));
        assert_eq!(rows.len(), 2, "an empty count is not stored: {rows:?}");
        assert_eq!((rows[0].day, rows[0].usage.requests, rows[0].usage.bytes_written), (3, 2, 20));
        assert_eq!((rows[1].day, rows[1].usage.requests), (4, 1));
        assert!(meter.take().is_empty());
        meter.put_back(rows.clone());
        meter.note("acme", 3, &one);
        let again = meter.take();
        let day3 = again.iter().find(|row| row.day == 3).unwrap();
        assert_eq!(day3.usage.requests, 3);
    }
}
