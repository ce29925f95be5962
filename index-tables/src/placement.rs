//! Where an index entry lives: `vshard_table[h(tenant, collection, index, value_key) mod V]`,
//! with shard-router's routing hash ([`stable_hash`], xxh3-64, seed 0, parts joined by `0x00`).
//! All entries of one value of one index share a vshard, so an equality look-up and a unique
//! claim touch one shard; neighbouring values are scattered, so a range look-up asks every
//! shard. The placement is part of the on-disk format, frozen by the golden test below.

use shardgate_shard_router::hash::{stable_hash, vshard_of};
use shardgate_shard_router::{CollectionName, TenantId};

use crate::names::IndexName;
use crate::value_key::ValueKey;

/// The vshard of the entries holding `value_key` in `index` of `collection`, in `0..vshard_count`.
pub fn entry_vshard(
    tenant: &TenantId,
    collection: &CollectionName,
    index: &IndexName,
    value_key: &ValueKey,
    vshard_count: u32,
) -> u32 {
    let parts = [tenant.as_str(), collection.as_str(), index.as_str(), value_key.as_str()];
    vshard_of(stable_hash(&parts), vshard_count)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Golden values, cross-checked with an independent implementation (Python's `xxhash`
    /// package: `xxh3_64_intdigest(b"acme\x00customers\x00by_email\x00sann@example.com\x01") % 1024`).
    /// Never update these numbers: every index entry would be looked for on the wrong shard.
    #[test]
    fn golden_entry_vshards_never_change() {
        let acme = TenantId::parse("acme").unwrap();
        let email = ValueKey::from_query("ann@example.com").unwrap();
        assert_eq!(email.as_str(), "sann@example.com\u{1}");
        let customers = CollectionName::parse("customers").unwrap();
        let by_email = IndexName::parse("by_email").unwrap();
        assert_eq!(entry_vshard(&acme, &customers, &by_email, &email, 1024), 790);
        // The number 1's key changed with exact numbers (it was `nbff0000000000000`, vshard 992;
        // `docs/operations.md`, "Upgrading indexes over numbers"); the hash of a key did not.
        let one = ValueKey::from_query("1").unwrap();
        assert_eq!(one.as_str(), "nPb11.");
        let orders = CollectionName::parse("orders").unwrap();
        let by_total = IndexName::parse("by_total").unwrap();
        assert_eq!(entry_vshard(&acme, &orders, &by_total, &one, 1024), 913);
    }

    #[test]
    fn the_value_and_every_name_move_the_entry() {
        let acme = TenantId::parse("acme").unwrap();
        let customers = CollectionName::parse("customers").unwrap();
        let by_email = IndexName::parse("by_email").unwrap();
        let spread: std::collections::HashSet<u32> = (0..200)
            .map(|i| entry_vshard(&acme, &customers, &by_email, &ValueKey::from_query(&format!("u{i}")).unwrap(), 1024))
            .collect();
        assert!(spread.len() > 150, "200 values landed on only {} vshards", spread.len());
        let value = ValueKey::from_query("x").unwrap();
        let base = entry_vshard(&acme, &customers, &by_email, &value, 1 << 20);
        let other_index = IndexName::parse("by_name").unwrap();
        assert_ne!(base, entry_vshard(&acme, &customers, &other_index, &value, 1 << 20));
        let other_tenant = TenantId::parse("globex").unwrap();
        assert_ne!(base, entry_vshard(&other_tenant, &customers, &by_email, &value, 1 << 20));
    }
}
