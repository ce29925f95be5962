//! The two ids a valet URL carries: [`KeyId`] (which key signed it) and [`GrantId`] (which grant
//! it is). Both are validated strings; once one exists it obeys its rule.

use std::fmt;

use rand::RngCore;

use crate::ValetError;
use crate::fields::{check_grant_id, check_key_id};

/// A validated string id: `parse` (refusing a value that breaks `$check` as
/// [`ValetError::InvalidField`] named `$field`), `as_str`, `Display` and a `Debug` that prints
/// the string.
macro_rules! text_id {
    ($(#[$doc:meta])* $name:ident, $field:literal, $check:path) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            #[doc = concat!("Parses and validates a ", $field, ".")]
            pub fn parse(id: &str) -> Result<Self, ValetError> {
                $check(id).map_err(|reason| ValetError::InvalidField { field: $field, reason })?;
                Ok(Self(id.to_owned()))
            }

            /// The id as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&self.0, f)
            }
        }
    };
}

text_id!(
    /// The id of a signing key, `[a-z0-9-]{1,32}`: carried in every valet URL (`sg-kid`) so the
    /// verifier can pick the key, and retired (or rotated away from) to revoke every URL it signed.
    KeyId,
    "key_id",
    check_key_id
);

text_id!(
    /// The random id of one grant, 16 bytes written as 32 lowercase hex digits. The caller records
    /// it in the catalog to revoke the grant or to consume a single-use grant.
    GrantId,
    "grant_id",
    check_grant_id
);

impl KeyId {
    /// A new random key id: `k` and 12 lowercase hex digits (6 bytes from the thread-local
    /// CSPRNG).
    pub fn generate() -> Self {
        Self(format!("k{}", hex::encode(random_bytes::<6>())))
    }
}

impl GrantId {
    /// A new random grant id (16 bytes from the thread-local CSPRNG).
    pub fn generate() -> Self {
        Self(hex::encode(random_bytes::<16>()))
    }
}

fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    rand::rng().fill_bytes(&mut bytes);
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_ids_are_validated() {
        assert_eq!(KeyId::parse("k1").map(|id| id.to_string()), Ok("k1".to_owned()));
        assert_eq!(KeyId::parse("K1").map(|_| ()).unwrap_err().code(), "valet_invalid_field");
    }

    #[test]
    fn generated_ids_are_random_and_valid() {
        let a = GrantId::generate();
        assert_eq!(GrantId::parse(a.as_str()), Ok(a.clone()));
        assert_ne!(a, GrantId::generate());
        assert!(GrantId::parse("not-a-grant-id").is_err());
        let k = KeyId::generate();
        assert_eq!(KeyId::parse(k.as_str()), Ok(k.clone()));
        assert_eq!(k.as_str().len(), 13);
        assert_ne!(k, KeyId::generate());
    }

    #[test]
    fn debug_prints_the_id_quoted() {
        assert_eq!(format!("{:?}", KeyId::parse("k1").unwrap()), "\"k1\"");
    }
}
