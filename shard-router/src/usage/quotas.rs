//! What a tenant may keep: its quotas, each a limit on one part of its usage or none (unlimited).
//!
//! A tier has quotas (configuration, `quotas.tiers`, or the admin API's
//! `PUT /v1/admin/tiers/{tier}/quotas`, kept in the catalog); a tenant may override any of them
//! (admin API, kept in the catalog). Neither needs a restart: a tenant's quotas are its tier's
//! with its own overrides applied ([`crate::ShardRouter::tenant_quotas`]), read from the map
//! when a write asks; the catalog's changes reach every instance with the map.

use crate::catalog::Audit;
use crate::clock::now_ms;
use crate::error::Error;
use crate::map::Tier;
use crate::router::ShardRouter;
use crate::storage::usage::Usage;

// The values live with the map, which carries the tiers' and tenants' quotas to every instance
// (and which the catalog, below this room, fills in).
pub use crate::map::quotas::{ByTier, FREE_TIER_QUOTAS, QuotaOverrides, Quotas, TierQuotas};

/// One quota: which part of a tenant's usage it limits. Its name is the one the API, the
/// configuration and problem documents use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QuotaKind {
    /// Live records.
    Records,
    /// Their stored values' bytes.
    RecordBytes,
    /// Live blobs.
    Blobs,
    /// Their bytes.
    BlobBytes,
    /// Live index entries.
    IndexEntries,
}

impl QuotaKind {
    /// Every kind a write can grow, in the order they are checked and shown.
    pub const ALL: [QuotaKind; 5] =
        [QuotaKind::Records, QuotaKind::RecordBytes, QuotaKind::Blobs, QuotaKind::BlobBytes, QuotaKind::IndexEntries];

    /// The quota's name (`records`, `record_bytes`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            QuotaKind::Records => "records",
            QuotaKind::RecordBytes => "record_bytes",
            QuotaKind::Blobs => "blobs",
            QuotaKind::BlobBytes => "blob_bytes",
            QuotaKind::IndexEntries => "index_entries",
        }
    }

    /// The part of `usage` this quota limits.
    pub fn of(self, usage: &Usage) -> u64 {
        match self {
            QuotaKind::Records => usage.records,
            QuotaKind::RecordBytes => usage.record_bytes,
            QuotaKind::Blobs => usage.blobs,
            QuotaKind::BlobBytes => usage.blob_bytes,
            QuotaKind::IndexEntries => usage.index_entries,
        }
    }
}

impl Quotas {
    /// The limit of one kind (`None`: unlimited).
    pub fn limit(&self, kind: QuotaKind) -> Option<u64> {
        match kind {
            QuotaKind::Records => self.records,
            QuotaKind::RecordBytes => self.record_bytes,
            QuotaKind::Blobs => self.blobs,
            QuotaKind::BlobBytes => self.blob_bytes,
            QuotaKind::IndexEntries => self.index_entries,
        }
    }

    /// Whether a record write needs no quota check at all: none of the parts of usage a write
    /// can grow is limited, nor the number of collections.
    pub fn unlimited(&self) -> bool {
        QuotaKind::ALL.iter().all(|kind| self.limit(*kind).is_none()) && self.collections.is_none()
    }
}

/// Sets `tier`'s quotas on every instance (`Some`, replacing its configured ones) or goes back to
/// the configured ones (`None`): in the catalog first (a new epoch, audited in the same
/// transaction), then in this instance's map; the others take it with the map within one catalog
/// poll. Returns the new epoch.
pub async fn set_tier_quotas(
    router: &ShardRouter,
    tier: Tier,
    quotas: Option<Quotas>,
    audit: &Audit,
) -> Result<u64, Error> {
    let _guard = router.lock_admin().await;
    let epoch = match &quotas {
        Some(quotas) => router.catalog().set_tier_quotas(tier, quotas, now_ms(), audit).await?,
        None => router.catalog().reset_tier_quotas(tier, audit).await?,
    };
    let mut map = router.write_map();
    *map.quotas.tiers.get_mut(tier) = quotas;
    // A change made elsewhere in between is not in this map yet: the next poll loads it whole.
    if map.epoch + 1 == epoch {
        map.epoch = epoch;
    }
    Ok(epoch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::TenantChange;
    use crate::ids::TenantId;
    use crate::router::StorageConfig;
    use crate::topology::Topology;

    /// A tenant's quotas on an embedded router: its tier's configured ones, then the catalog's
    /// for its tier, with its own overrides on top; the same once the map is loaded again from
    /// the catalog (as another instance loads it).
    #[tokio::test]
    async fn a_tenants_quotas_are_its_tiers_with_its_own_applied_and_survive_a_reload() {
        let dir = tempfile::tempdir().unwrap();
        let configured = TierQuotas { free: Quotas { records: Some(50), ..Quotas::UNLIMITED }, ..TierQuotas::DEFAULT };
        let router =
            ShardRouter::open(&StorageConfig::default(), dir.path()).await.unwrap().with_tier_quotas(configured);
        let audit = Audit {
            actor: "test".into(),
            tenant: None,
            action: "test",
            target: "test".into(),
            request_id: "r".into(),
            client_request_id: None,
            client_address: None,
        };
        let acme = TenantId::parse("acme").unwrap();
        assert!(matches!(router.tenant_quotas(&acme), Err(Error::TenantNotFound)));
        Topology::of(&router).create_tenant(acme.clone(), "Acme".into(), Tier::Free, None, None, &audit).await.unwrap();
        assert_eq!(router.tenant_quotas(&acme).unwrap(), configured.free);

        let set = Quotas { records: Some(7), blobs: Some(3), ..Quotas::UNLIMITED };
        set_tier_quotas(&router, Tier::Free, Some(set), &audit).await.unwrap();
        assert_eq!(router.tenant_quotas(&acme).unwrap(), set, "the catalog's replace the configured ones");
        let own = QuotaOverrides { records: Some(None), blob_bytes: Some(Some(9)), ..QuotaOverrides::default() };
        let change = TenantChange { quotas: Some(Some(own)), ..TenantChange::default() };
        let row = Topology::of(&router).update_tenant(&acme, &change, &audit).await.unwrap();
        assert_eq!(row.quotas, Some(own));
        let expected = Quotas { records: None, blobs: Some(3), blob_bytes: Some(9), ..Quotas::UNLIMITED };
        assert_eq!(router.tenant_quotas(&acme).unwrap(), expected);

        let reloaded = router.catalog().load_map().await.unwrap();
        assert_eq!(
            reloaded.quotas.of_tenant("acme", Tier::Free, &configured),
            expected,
            "as another instance reads it"
        );

        set_tier_quotas(&router, Tier::Free, None, &audit).await.unwrap();
        let change = TenantChange { quotas: Some(None), ..TenantChange::default() };
        Topology::of(&router).update_tenant(&acme, &change, &audit).await.unwrap();
        assert_eq!(router.tenant_quotas(&acme).unwrap(), configured.free, "back to the configured ones");
        let reloaded = router.catalog().load_map().await.unwrap();
        assert!(reloaded.quotas.tenants.is_empty() && reloaded.quotas.tiers == ByTier::default());
    }
}
