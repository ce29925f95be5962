//! Quota allowances (`quota_grants`, catalog migration 0023): what each instance may still let a
//! tenant's writes add before it asks again ([`crate::usage::grants`] decides and spends them).
//!
//! An instance decides its allowance for a tenant holding the tenant's turn (its `quota_turns`
//! row, written first in the deciding transaction), so no two instances decide one tenant's at
//! once: each decision sees every allowance decided before it. Other instances' allowances count
//! until their `expires_ms`, plus [`CLOCK_SKEW_MS`] for clocks that disagree.

use std::future::Future;

use super::{Catalog, catalog_err};
use crate::error::Error;
use crate::storage::usage::Usage;

/// How far instances' clocks may disagree: another instance's allowance counts this long after
/// its expiry by this instance's clock.
pub const CLOCK_SKEW_MS: i64 = 2_000;

/// Rows expired this long are deleted by the next decision for their tenant.
const KEPT_EXPIRED_MS: i64 = 60_000;

/// The sums of allowances' five amounts (`NULL` when there are none).
type GrantSums = (Option<i64>, Option<i64>, Option<i64>, Option<i64>, Option<i64>);

/// An amount as the catalog stores it.
fn stored(amount: u64) -> i64 {
    i64::try_from(amount).unwrap_or(i64::MAX)
}

impl Catalog {
    /// Decides `instance`'s allowance for `tenant`, holding the tenant's turn: `decide` gets what
    /// the other instances' live allowances (at `now_ms`) add up to and answers this instance's
    /// new allowance (stored until `expires_ms`), or an error, which leaves the stored allowance as
    /// it was. `decide` may take its time (it reads the shards): only deciders of the same tenant
    /// wait for it.
    pub async fn decide_quota_grant<F, Fut>(
        &self,
        tenant: &str,
        instance: &str,
        (now_ms, expires_ms): (i64, i64),
        decide: F,
    ) -> Result<Usage, Error>
    where
        F: FnOnce(Usage) -> Fut,
        Fut: Future<Output = Result<Usage, Error>>,
    {
        // `decide`'s own error (a shard's) is its answer, not the catalog's: it must not reach
        // the catalog's breaker.
        self.guarded(async {
            let mut tx = self.db.pool.begin().await.map_err(catalog_err)?;
            sqlx::query(
                "INSERT INTO quota_turns (tenant, turns) VALUES ($1, 1) \
                     ON CONFLICT (tenant) DO UPDATE SET turns = quota_turns.turns + 1",
            )
            .bind(tenant)
            .execute(&mut *tx)
            .await
            .map_err(catalog_err)?;
            let others: GrantSums = sqlx::query_as(
                "SELECT CAST(SUM(records) AS BIGINT), CAST(SUM(record_bytes) AS BIGINT), CAST(SUM(blobs) AS BIGINT), \
                     CAST(SUM(blob_bytes) AS BIGINT), CAST(SUM(index_entries) AS BIGINT) FROM quota_grants \
                     WHERE tenant = $1 AND instance <> $2 AND expires_ms > $3",
            )
            .bind(tenant)
            .bind(instance)
            .bind(now_ms - CLOCK_SKEW_MS)
            .fetch_one(&mut *tx)
            .await
            .map_err(catalog_err)?;
            let amount = |sum: Option<i64>| sum.map_or(0, |n| u64::try_from(n).unwrap_or(0));
            let others = Usage {
                records: amount(others.0),
                record_bytes: amount(others.1),
                blobs: amount(others.2),
                blob_bytes: amount(others.3),
                index_entries: amount(others.4),
            };
            let grant = match decide(others).await {
                Ok(grant) => grant,
                Err(refused) => return Ok(Err(refused)),
            };
            sqlx::query(
                "INSERT INTO quota_grants (tenant, instance, expires_ms, records, record_bytes, blobs, blob_bytes, \
                     index_entries) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
                     ON CONFLICT (tenant, instance) DO UPDATE SET expires_ms = excluded.expires_ms, \
                     records = excluded.records, record_bytes = excluded.record_bytes, blobs = excluded.blobs, \
                     blob_bytes = excluded.blob_bytes, index_entries = excluded.index_entries",
            )
            .bind(tenant)
            .bind(instance)
            .bind(expires_ms)
            .bind(stored(grant.records))
            .bind(stored(grant.record_bytes))
            .bind(stored(grant.blobs))
            .bind(stored(grant.blob_bytes))
            .bind(stored(grant.index_entries))
            .execute(&mut *tx)
            .await
            .map_err(catalog_err)?;
            sqlx::query("DELETE FROM quota_grants WHERE tenant = $1 AND expires_ms < $2")
                .bind(tenant)
                .bind(now_ms - KEPT_EXPIRED_MS)
                .execute(&mut *tx)
                .await
                .map_err(catalog_err)?;
            tx.commit().await.map_err(catalog_err)?;
            Ok(Ok(grant))
        })
        .await?
    }

    /// Deletes `instance`'s allowances (it stops): other instances may use at once what they
    /// held back.
    pub async fn release_quota_grants(&self, instance: &str) -> Result<(), Error> {
        self.guarded(async {
            sqlx::query("DELETE FROM quota_grants WHERE instance = $1")
                .bind(instance)
                .execute(&self.db.pool)
                .await
                .map_err(catalog_err)?;
            Ok(())
        })
        .await
    }
}
