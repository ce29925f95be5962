//! Quotas set through the admin API: each tier's (`tier_quotas`, replacing the configured ones
//! fleet-wide) and each tenant's own overrides (`tenants.quotas`, read and written with the rest
//! of its row in `mod.rs`). Both are JSON in the catalog and reach every instance with the map
//! ([`Catalog::load_map`]): a change moves the epoch on, so every instance reloads within one
//! catalog poll.

use sqlx::any::AnyRow;

use super::{Audit, Catalog, catalog_err, column, corrupt};
use crate::error::Error;
use crate::map::Tier;
use crate::map::quotas::{MapQuotas, Quotas};

/// A tier's quotas as set through the admin API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TierQuotaRow {
    /// The quotas, replacing the configured ones.
    pub quotas: Quotas,
    /// When they were set (ms since the Unix epoch).
    pub updated_at_ms: i64,
}

impl Catalog {
    /// `tier`'s quotas as set through the admin API, if they are.
    pub async fn tier_quotas(&self, tier: Tier) -> Result<Option<TierQuotaRow>, Error> {
        self.guarded(async {
            let row = sqlx::query("SELECT quotas, updated_at_ms FROM tier_quotas WHERE tier = $1")
                .bind(tier.as_str())
                .fetch_optional(&self.db.pool)
                .await
                .map_err(catalog_err)?;
            row.map(|row| Ok(TierQuotaRow { quotas: tier_quotas_column(&row, tier)?, updated_at_ms: column(&row, 1)? }))
                .transpose()
        })
        .await
    }

    /// Sets `tier`'s quotas, replacing its configured ones on every instance: a change of the map
    /// (a new epoch), audited. Returns the new epoch.
    pub async fn set_tier_quotas(&self, tier: Tier, quotas: &Quotas, now_ms: i64, audit: &Audit) -> Result<u64, Error> {
        let json = serde_json::to_string(quotas).map_err(|e| corrupt(format!("quotas: {e}")))?;
        self.guarded(async {
            let (tx, epoch) = self.begin_change(audit).await?;
            let upsert = sqlx::query(
                "INSERT INTO tier_quotas (tier, quotas, updated_at_ms) VALUES ($1, $2, $3) \
                 ON CONFLICT (tier) DO UPDATE SET quotas = excluded.quotas, updated_at_ms = excluded.updated_at_ms",
            )
            .bind(tier.as_str())
            .bind(json)
            .bind(now_ms);
            super::commit_with(tx, upsert).await?;
            Ok(epoch)
        })
        .await
    }

    /// Removes `tier`'s quotas set through the admin API, so its configured ones apply again
    /// (also when none were set): a change of the map, audited. Returns the new epoch.
    pub async fn reset_tier_quotas(&self, tier: Tier, audit: &Audit) -> Result<u64, Error> {
        self.guarded(async {
            let (tx, epoch) = self.begin_change(audit).await?;
            super::commit_with(tx, sqlx::query("DELETE FROM tier_quotas WHERE tier = $1").bind(tier.as_str())).await?;
            Ok(epoch)
        })
        .await
    }

    /// Reads every tier's quotas set through the admin API into `quotas` (inside
    /// [`Catalog::load_map`]'s guard).
    pub(super) async fn load_tier_quotas(&self, quotas: &mut MapQuotas) -> Result<(), Error> {
        let rows =
            sqlx::query("SELECT quotas, tier FROM tier_quotas").fetch_all(&self.db.pool).await.map_err(catalog_err)?;
        for row in rows {
            let name: String = column(&row, 1)?;
            // A tier this version does not know (written by a newer one) is left to it.
            let Some(tier) = Tier::parse(&name) else { continue };
            *quotas.tiers.get_mut(tier) = Some(tier_quotas_column(&row, tier)?);
        }
        Ok(())
    }
}

/// The quotas of `tier` in column 0 of `row`.
fn tier_quotas_column(row: &AnyRow, tier: Tier) -> Result<Quotas, Error> {
    let json: String = column(row, 0)?;
    serde_json::from_str(&json).map_err(|e| corrupt(format!("tier {}'s quotas: {e}", tier.as_str())))
}
