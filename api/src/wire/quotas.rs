//! Quotas on the wire: a tier's (or a tenant's resolved) quotas, a tenant's own overrides, and
//! each quota beside the usage it limits, as the admin and usage routes show them.

use serde::{Deserialize, Serialize};
use shardgate_shard_router::storage::usage::Usage;
use shardgate_shard_router::usage::quotas::{QuotaKind, Quotas};
use utoipa::ToSchema;

/// Quotas: the most a tenant may keep of each part of its usage; `null` (or, in a request, a key
/// left out) is unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct QuotaLimits {
    /// Most live records (every collection and distribution).
    #[schema(minimum = 0, example = 1000000)]
    pub records: Option<u64>,
    /// Most bytes of stored record values (the JSON as stored).
    #[schema(minimum = 0)]
    pub record_bytes: Option<u64>,
    /// Most live blobs.
    #[schema(minimum = 0)]
    pub blobs: Option<u64>,
    /// Most bytes of live blobs.
    #[schema(minimum = 0)]
    pub blob_bytes: Option<u64>,
    /// Most live index entries.
    #[schema(minimum = 0)]
    pub index_entries: Option<u64>,
    /// Most collections holding records (or given a distribution of their own).
    #[schema(minimum = 0)]
    pub collections: Option<u64>,
    /// Most bytes transferred through valet URLs in a UTC day, uploads and downloads together.
    #[schema(minimum = 0)]
    pub valet_bytes_per_day: Option<u64>,
}

impl From<Quotas> for QuotaLimits {
    fn from(q: Quotas) -> Self {
        let Quotas { records, record_bytes, blobs, blob_bytes, index_entries, collections, valet_bytes_per_day } = q;
        Self { records, record_bytes, blobs, blob_bytes, index_entries, collections, valet_bytes_per_day }
    }
}

impl From<QuotaLimits> for Quotas {
    fn from(q: QuotaLimits) -> Self {
        let QuotaLimits { records, record_bytes, blobs, blob_bytes, index_entries, collections, valet_bytes_per_day } =
            q;
        Self { records, record_bytes, blobs, blob_bytes, index_entries, collections, valet_bytes_per_day }
    }
}

/// A tenant's own quotas over its tier's: each key a number (the tenant's quota) or `null`
/// (unlimited for the tenant); a key left out keeps the tier's quota. (Read and written as
/// shard-router's `QuotaOverrides`: this type only documents it.)
#[derive(Debug, ToSchema)]
pub struct TenantQuotas {
    /// Most live records.
    #[schema(minimum = 0, example = 5000)]
    pub records: Option<u64>,
    /// Most bytes of stored record values.
    #[schema(minimum = 0)]
    pub record_bytes: Option<u64>,
    /// Most live blobs.
    #[schema(minimum = 0)]
    pub blobs: Option<u64>,
    /// Most bytes of live blobs.
    #[schema(minimum = 0)]
    pub blob_bytes: Option<u64>,
    /// Most live index entries.
    #[schema(minimum = 0)]
    pub index_entries: Option<u64>,
    /// Most collections.
    #[schema(minimum = 0)]
    pub collections: Option<u64>,
    /// Most bytes through valet URLs in a UTC day.
    #[schema(minimum = 0)]
    pub valet_bytes_per_day: Option<u64>,
}

/// One quota beside what it limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub struct QuotaUse {
    /// The tenant's quota (`null`: unlimited).
    #[schema(required = true)]
    pub limit: Option<u64>,
    /// What the tenant uses of it (over the shards that answered).
    pub used: u64,
}

/// Each of a tenant's quotas beside the usage it limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub struct QuotaUses {
    /// Live records.
    pub records: QuotaUse,
    /// Bytes of stored record values.
    pub record_bytes: QuotaUse,
    /// Live blobs.
    pub blobs: QuotaUse,
    /// Bytes of live blobs.
    pub blob_bytes: QuotaUse,
    /// Live index entries.
    pub index_entries: QuotaUse,
    /// Collections (holding records, or with a distribution of their own).
    pub collections: QuotaUse,
    /// Bytes through valet URLs today (UTC).
    pub valet_bytes_per_day: QuotaUse,
}

impl QuotaUses {
    /// `quotas` beside `usage`, the tenant's `collections` and its valet bytes today.
    pub fn new(quotas: &Quotas, usage: &Usage, (collections, valet_today): (u64, u64)) -> Self {
        let of = |kind: QuotaKind| QuotaUse { limit: quotas.limit(kind), used: kind.of(usage) };
        Self {
            records: of(QuotaKind::Records),
            record_bytes: of(QuotaKind::RecordBytes),
            blobs: of(QuotaKind::Blobs),
            blob_bytes: of(QuotaKind::BlobBytes),
            index_entries: of(QuotaKind::IndexEntries),
            collections: QuotaUse { limit: quotas.collections, used: collections },
            valet_bytes_per_day: QuotaUse { limit: quotas.valet_bytes_per_day, used: valet_today },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quota_shows_null_when_unlimited() {
        let quotas = Quotas { records: Some(10), ..Quotas::default() };
        let usage = Usage { records: 3, blob_bytes: 7, ..Usage::default() };
        let shown = serde_json::to_value(QuotaUses::new(&quotas, &usage, (2, 5))).unwrap();
        assert_eq!(shown["records"], serde_json::json!({"limit": 10, "used": 3}));
        assert_eq!(shown["blob_bytes"], serde_json::json!({"limit": null, "used": 7}));
        assert_eq!(shown["collections"], serde_json::json!({"limit": null, "used": 2}));
        assert_eq!(shown["valet_bytes_per_day"], serde_json::json!({"limit": null, "used": 5}));
    }

    #[test]
    fn limits_take_null_or_absent_as_unlimited_and_refuse_the_rest() {
        let limits: QuotaLimits = serde_json::from_str(r#"{"records": 5, "blobs": null}"#).unwrap();
        assert_eq!(Quotas::from(limits), Quotas { records: Some(5), ..Quotas::default() });
        assert!(serde_json::from_str::<QuotaLimits>(r#"{"rows": 5}"#).is_err());
        assert!(serde_json::from_str::<QuotaLimits>(r#"{"records": -5}"#).is_err());
        assert!(serde_json::from_str::<QuotaLimits>(r#"{"records": 1.5}"#).is_err());
    }
}
