//! The routing hash. It decides which vshard every tenant (and, later, every hash-distributed
//! record and index entry) lives on, so it is part of the on-disk format: changing it would move
//! every tenant. The golden test below freezes it.
//!
//! Definition: `h(parts) = xxh3_64(encode(parts))` with seed 0, where `encode` joins the parts'
//! UTF-8 bytes with a single `0x00` byte between them (identifiers never contain `0x00`, so the
//! encoding is unambiguous). `vshard = h(parts) mod vshard_count`.

use xxhash_rust::xxh3::{Xxh3Default, xxh3_64};

/// The number of virtual shards a new catalog is created with.
pub const DEFAULT_VSHARD_COUNT: u32 = 1024;

/// `xxh3_64` (seed 0) of the parts joined by `0x00`.
pub fn stable_hash(parts: &[&str]) -> u64 {
    match parts {
        [single] => xxh3_64(single.as_bytes()),
        _ => {
            let mut hasher = Xxh3Default::new();
            for (i, part) in parts.iter().enumerate() {
                if i > 0 {
                    hasher.update(&[0]);
                }
                hasher.update(part.as_bytes());
            }
            hasher.digest()
        }
    }
}

/// The vshard a tenant's home data hashes to.
pub fn tenant_vshard(tenant: &str, vshard_count: u32) -> u32 {
    vshard_of(stable_hash(&[tenant]), vshard_count)
}

/// Reduces a hash to a vshard number in `0..vshard_count`.
pub fn vshard_of(hash: u64, vshard_count: u32) -> u32 {
    debug_assert!(vshard_count > 0);
    (hash % u64::from(vshard_count)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Golden values, cross-checked with an independent implementation (Python's `xxhash`
    /// package: `xxh3_64_intdigest(b"acme\x00orders\x00k1")`). If this test fails, the hash changed and every tenant would move.
    /// Never update these numbers; fix the hash instead.
    #[test]
    fn golden_hash_values_never_change() {
        assert_eq!(stable_hash(&[""]), 0x2d06800538d394c2);
        assert_eq!(stable_hash(&["acme"]), GOLDEN_ACME);
        assert_eq!(tenant_vshard("acme", 1024), (GOLDEN_ACME % 1024) as u32);
        assert_eq!(stable_hash(&["acme", "orders", "k1"]), GOLDEN_ACME_ORDERS_K1);
        let golden_vshards: Vec<u32> =
            ["demo", "tenant-1", "tenant-2", "globex", "initech"].iter().map(|t| tenant_vshard(t, 1024)).collect();
        assert_eq!(golden_vshards, GOLDEN_VSHARDS);
    }

    #[test]
    fn joined_parts_equal_hash_of_nul_separated_bytes() {
        assert_eq!(stable_hash(&["a", "b"]), xxh3_64(b"a\0b"));
        assert_ne!(stable_hash(&["ab", ""]), stable_hash(&["a", "b"]));
    }

    const GOLDEN_ACME: u64 = 0x44ad98655d8858e1;
    const GOLDEN_ACME_ORDERS_K1: u64 = 0x0a78a2888fb80db4;
    const GOLDEN_VSHARDS: [u32; 5] = [816, 195, 402, 815, 350];
}
