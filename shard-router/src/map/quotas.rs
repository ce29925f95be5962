//! Quotas as the map carries them: each tier's (configured, or set through the admin API and kept
//! in the catalog), and a tenant's own overrides, resolved into the [`Quotas`] a write is held to.
//!
//! Values and pure functions only, like the rest of the map: the catalog fills them in, the
//! router answers a tenant's quotas from them (`ShardRouter::tenant_quotas`), and what each
//! quota limits of a tenant's usage is `crate::usage::quotas`'s.

use std::collections::HashMap;

use foldhash::fast::RandomState;
use serde::{Deserialize, Serialize};

use crate::map::tier::Tier;

/// A tenant id as the map keys it (`crate::map::TenantKey`).
type TenantKey = compact_str::CompactString;

/// A tenant's (or a tier's) quotas: the most it may keep of each; `None` (a key left out) is
/// unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Quotas {
    /// Most live records (every collection and distribution).
    pub records: Option<u64>,
    /// Most bytes of stored record values (the JSON as stored).
    pub record_bytes: Option<u64>,
    /// Most live blobs.
    pub blobs: Option<u64>,
    /// Most bytes of live blobs.
    pub blob_bytes: Option<u64>,
    /// Most live index entries (one per record and index that covers it).
    pub index_entries: Option<u64>,
    /// Most collections holding records (or given a distribution of their own).
    pub collections: Option<u64>,
    /// Most bytes transferred through valet URLs in a UTC day, uploads and downloads together.
    pub valet_bytes_per_day: Option<u64>,
}

/// The quotas of a `free` tier the configuration does not set: 1,000,000 records of 1 GiB,
/// 100,000 blobs of 10 GiB, 5,000,000 index entries, 100 collections, 10 GiB through valet URLs
/// a day.
pub const FREE_TIER_QUOTAS: Quotas = Quotas {
    records: Some(1_000_000),
    record_bytes: Some(1 << 30),
    blobs: Some(100_000),
    blob_bytes: Some(10 << 30),
    index_entries: Some(5_000_000),
    collections: Some(100),
    valet_bytes_per_day: Some(10 << 30),
};

/// One value per tier.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ByTier<T> {
    /// The `free` tier's.
    pub free: T,
    /// The `standard` tier's.
    pub standard: T,
    /// The `premium` tier's.
    pub premium: T,
}

impl<T> ByTier<T> {
    /// `tier`'s value.
    pub fn get(&self, tier: Tier) -> &T {
        match tier {
            Tier::Free => &self.free,
            Tier::Standard => &self.standard,
            Tier::Premium => &self.premium,
        }
    }

    /// `tier`'s value, to change.
    pub fn get_mut(&mut self, tier: Tier) -> &mut T {
        match tier {
            Tier::Free => &mut self.free,
            Tier::Standard => &mut self.standard,
            Tier::Premium => &mut self.premium,
        }
    }
}

/// The tiers' quotas: what `quotas.tiers` configures (the defaults for a tier it does not list:
/// [`FREE_TIER_QUOTAS`] for `free`, unlimited for `standard` and `premium`).
pub type TierQuotas = ByTier<Quotas>;

impl TierQuotas {
    /// The quotas of a configuration that lists no tier.
    pub const DEFAULT: TierQuotas =
        ByTier { free: FREE_TIER_QUOTAS, standard: Quotas::UNLIMITED, premium: Quotas::UNLIMITED };
}

impl Quotas {
    /// No quota at all.
    pub const UNLIMITED: Quotas = Quotas {
        records: None,
        record_bytes: None,
        blobs: None,
        blob_bytes: None,
        index_entries: None,
        collections: None,
        valet_bytes_per_day: None,
    };
}

/// A tenant's own quotas over its tier's (admin API, `tenants.quotas` in the catalog): each
/// field absent (`None`) keeps the tier's quota, `Some(None)` makes it unlimited for the tenant,
/// `Some(Some(n))` sets it to `n`. As JSON: a key absent, `null`, or a number.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuotaOverrides {
    /// Most live records.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub records: Option<Option<u64>>,
    /// Most bytes of stored record values.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub record_bytes: Option<Option<u64>>,
    /// Most live blobs.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub blobs: Option<Option<u64>>,
    /// Most bytes of blobs.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub blob_bytes: Option<Option<u64>>,
    /// Most live index entries.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub index_entries: Option<Option<u64>>,
    /// Most collections.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub collections: Option<Option<u64>>,
    /// Most bytes through valet URLs in a UTC day.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub valet_bytes_per_day: Option<Option<u64>>,
}

/// A field that may be absent (`None`), `null` (`Some(None)`) or a value.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<u64>>, D::Error> {
    Option::<u64>::deserialize(d).map(Some)
}

impl QuotaOverrides {
    /// `tier`'s quotas with these overrides applied.
    pub fn apply(&self, tier: Quotas) -> Quotas {
        let or = |own: Option<Option<u64>>, tier: Option<u64>| own.unwrap_or(tier);
        Quotas {
            records: or(self.records, tier.records),
            record_bytes: or(self.record_bytes, tier.record_bytes),
            blobs: or(self.blobs, tier.blobs),
            blob_bytes: or(self.blob_bytes, tier.blob_bytes),
            index_entries: or(self.index_entries, tier.index_entries),
            collections: or(self.collections, tier.collections),
            valet_bytes_per_day: or(self.valet_bytes_per_day, tier.valet_bytes_per_day),
        }
    }

    /// Whether nothing is overridden (the tenant's quotas are its tier's).
    pub fn is_empty(&self) -> bool {
        *self == QuotaOverrides::default()
    }
}

/// What the map knows of quotas beside the tenant directory (both from the catalog).
#[derive(Debug, Clone, Default)]
pub struct MapQuotas {
    /// The tiers' quotas set through the admin API (catalog `tier_quotas`): each replaces the
    /// configured quotas of its tier; `None` leaves them.
    pub tiers: ByTier<Option<Quotas>>,
    /// The tenants with overrides of their own, and those overrides (none of them empty). Apart
    /// from the directory so that its entries stay small: few tenants have any, and a look-up
    /// in an empty map hashes nothing.
    pub tenants: HashMap<TenantKey, QuotaOverrides, RandomState>,
}

impl MapQuotas {
    /// `tier`'s quotas in force: the catalog's, else `configured`'s.
    pub fn of_tier(&self, tier: Tier, configured: &TierQuotas) -> Quotas {
        self.tiers.get(tier).unwrap_or(*configured.get(tier))
    }

    /// The quotas of `tenant`, of tier `tier`: its tier's in force with its own overrides applied.
    pub fn of_tenant(&self, tenant: &str, tier: Tier, configured: &TierQuotas) -> Quotas {
        let quotas = self.of_tier(tier, configured);
        match self.tenants.get(tenant) {
            Some(own) => own.apply(quotas),
            None => quotas,
        }
    }

    /// Records `tenant`'s overrides (`None` or empty: it has none).
    pub fn set_tenant(&mut self, tenant: &str, own: Option<QuotaOverrides>) {
        match own.filter(|own| !own.is_empty()) {
            Some(own) => {
                self.tenants.insert(TenantKey::from(tenant), own);
            }
            None => {
                self.tenants.remove(tenant);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_read_absent_null_and_numbers_apart() {
        let own: QuotaOverrides = serde_json::from_str(r#"{"records": 5, "blobs": null}"#).unwrap();
        assert_eq!(own.records, Some(Some(5)));
        assert_eq!(own.blobs, Some(None));
        assert_eq!(own.blob_bytes, None);
        assert_eq!(serde_json::to_string(&own).unwrap(), r#"{"records":5,"blobs":null}"#, "as stored");
        assert!(serde_json::from_str::<QuotaOverrides>(r#"{"rows": 5}"#).is_err(), "unknown key");
        assert!(serde_json::from_str::<QuotaOverrides>(r#"{"records": -1}"#).is_err(), "negative");
        assert!(serde_json::from_str::<QuotaOverrides>("{}").unwrap().is_empty());
    }

    #[test]
    fn overrides_win_over_the_tier_key_by_key() {
        let own = QuotaOverrides { records: Some(Some(5)), blobs: Some(None), ..QuotaOverrides::default() };
        let quotas = own.apply(FREE_TIER_QUOTAS);
        assert_eq!(quotas.records, Some(5), "a number wins");
        assert_eq!(quotas.blobs, None, "null is unlimited");
        assert_eq!(quotas.blob_bytes, FREE_TIER_QUOTAS.blob_bytes, "absent keeps the tier's");
        assert_eq!(QuotaOverrides::default().apply(FREE_TIER_QUOTAS), FREE_TIER_QUOTAS);
    }

    #[test]
    fn a_tier_set_in_the_catalog_replaces_the_configured_one() {
        let mut map = MapQuotas::default();
        let configured = TierQuotas::DEFAULT;
        assert_eq!(map.of_tier(Tier::Free, &configured), FREE_TIER_QUOTAS);
        assert_eq!(map.of_tier(Tier::Premium, &configured), Quotas::UNLIMITED);
        let set = Quotas { records: Some(10), ..Quotas::default() };
        *map.tiers.get_mut(Tier::Free) = Some(set);
        assert_eq!(map.of_tier(Tier::Free, &configured), set, "the whole set, not merged");
        assert_eq!(map.of_tier(Tier::Standard, &configured), Quotas::UNLIMITED);
    }

    #[test]
    fn a_tenant_gets_its_tiers_quotas_with_its_own_overrides() {
        let mut map = MapQuotas::default();
        let configured = TierQuotas::DEFAULT;
        assert_eq!(map.of_tenant("acme", Tier::Free, &configured), FREE_TIER_QUOTAS);
        let own = QuotaOverrides { records: Some(Some(3)), index_entries: Some(None), ..QuotaOverrides::default() };
        map.set_tenant("acme", Some(own));
        let quotas = map.of_tenant("acme", Tier::Free, &configured);
        assert_eq!((quotas.records, quotas.index_entries, quotas.blobs), (Some(3), None, FREE_TIER_QUOTAS.blobs));
        assert_eq!(map.of_tenant("bob", Tier::Free, &configured), FREE_TIER_QUOTAS, "another tenant's are its own");
        // A tier changed through the admin API stays under the tenant's overrides.
        *map.tiers.get_mut(Tier::Free) = Some(Quotas { blobs: Some(7), records: Some(70), ..Quotas::default() });
        let quotas = map.of_tenant("acme", Tier::Free, &configured);
        assert_eq!((quotas.records, quotas.blobs, quotas.blob_bytes), (Some(3), Some(7), None));
        map.set_tenant("acme", Some(QuotaOverrides::default()));
        assert!(map.tenants.is_empty(), "no overrides is none");
        assert_eq!(map.of_tenant("acme", Tier::Premium, &configured), Quotas::UNLIMITED);
    }
}
