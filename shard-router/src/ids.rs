//! Validated identifiers. Each type can only be built through `parse`, so a value that exists is
//! valid and nothing downstream re-checks it.
//!
//! | type | rule |
//! | --- | --- |
//! | [`TenantId`] | `[a-z0-9][a-z0-9-]{0,62}` (1–63 characters) |
//! | [`ShardId`] | `[a-z0-9][a-z0-9-]{0,62}` (1–63 characters) |
//! | [`CollectionName`] | `[A-Za-z0-9][A-Za-z0-9_.-]{0,63}` (1–64 characters) |
//! | [`RecordKey`] | 1–512 bytes of UTF-8 without control characters (U+0000–U+001F, U+007F–U+009F), bidirectional controls (U+202A–U+202E, U+2066–U+2069) or Unicode noncharacters |

/// Why an identifier was rejected. The message names the broken rule and states the whole rule
/// of the identifier, so a client can fix its input in one go.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {kind}: {reason}{}", full_rule(.kind))]
pub struct InvalidId {
    /// Which identifier: `tenant id`, `shard id`, `collection name`, `record key`.
    pub kind: &'static str,
    /// What rule the value broke.
    pub reason: String,
}

/// The whole rule of an identifier of `kind`, in parentheses after a space (empty for kinds whose
/// reason says it all).
fn full_rule(kind: &str) -> &'static str {
    match kind {
        "tenant id" => {
            " (a tenant id is 1 to 63 characters, each a lowercase letter a-z, a digit 0-9 or '-', the first a letter or a digit)"
        }
        "shard id" => {
            " (a shard id is 1 to 63 characters, each a lowercase letter a-z, a digit 0-9 or '-', the first a letter or a digit)"
        }
        "collection name" => {
            " (a collection name is 1 to 64 characters, each an ASCII letter, a digit, '_', '.' or '-', the first a letter or a digit)"
        }
        "record key" => {
            " (a record key is 1 to 512 bytes of UTF-8 without control characters, bidirectional controls or Unicode noncharacters)"
        }
        _ => "",
    }
}

fn slug(kind: &'static str, value: &str) -> Result<(), InvalidId> {
    let bad = |reason: &str| InvalidId { kind, reason: reason.to_owned() };
    let bytes = value.as_bytes();
    if bytes.is_empty() {
        return Err(bad("must not be empty"));
    }
    if bytes.len() > 63 {
        return Err(bad("must be at most 63 characters"));
    }
    if !matches!(bytes[0], b'a'..=b'z' | b'0'..=b'9') {
        return Err(bad("must start with a lowercase letter or a digit"));
    }
    if !bytes.iter().all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'-')) {
        return Err(bad("may contain only lowercase letters, digits and '-'"));
    }
    Ok(())
}

/// Declares a validated string identifier: a type that can only be built through `parse`, which
/// runs `$check` (a `fn(&str) -> Result<(), $error>`). It gets `as_str`, `Display`, a `Debug` that
/// prints the quoted string, `AsRef<str>`, `Borrow<str>`, and serde as a string that is validated
/// again when deserialized. Cloning is cheap (the text is shared). Other crates declare their
/// identifiers with it too (`shardgate_shard_router::string_id!`), so every id in the gateway
/// behaves the same.
#[macro_export]
macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident, $check:expr) => {
        $crate::string_id!($(#[$doc])* $name, $check, $crate::ids::InvalidId);
    };
    ($(#[$doc:meta])* $name:ident, $check:expr, $error:ty) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(std::sync::Arc<str>);

        impl $name {
            /// Parses and validates `value`.
            pub fn parse(value: &str) -> Result<Self, $error> {
                let check: fn(&str) -> Result<(), $error> = $check;
                check(value)?;
                Ok(Self(value.into()))
            }

            /// The identifier as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Debug::fmt(&*self.0, f)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl $crate::ids::__serde::Serialize for $name {
            fn serialize<S: $crate::ids::__serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }

        impl<'de> $crate::ids::__serde::Deserialize<'de> for $name {
            fn deserialize<D: $crate::ids::__serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let raw = <String as $crate::ids::__serde::Deserialize>::deserialize(deserializer)?;
                Self::parse(&raw).map_err(<D::Error as $crate::ids::__serde::de::Error>::custom)
            }
        }
    };
}

#[doc(hidden)]
pub use serde as __serde;

string_id!(
    /// A tenant: `[a-z0-9][a-z0-9-]{0,62}`.
    TenantId,
    |v| slug("tenant id", v)
);

string_id!(
    /// A physical shard: `[a-z0-9][a-z0-9-]{0,62}`.
    ShardId,
    |v| slug("shard id", v)
);

string_id!(
    /// A collection of one tenant: `[A-Za-z0-9][A-Za-z0-9_.-]{0,63}`.
    CollectionName,
    check_collection
);

string_id!(
    /// A record key: 1–512 bytes of UTF-8 without control characters or noncharacters.
    /// Keys are compared and listed in byte order (the order of Unicode code points).
    RecordKey,
    check_record_key
);

fn check_collection(value: &str) -> Result<(), InvalidId> {
    let bad = |reason: &str| InvalidId { kind: "collection name", reason: reason.to_owned() };
    let bytes = value.as_bytes();
    if bytes.is_empty() {
        return Err(bad("must not be empty"));
    }
    if bytes.len() > 64 {
        return Err(bad("must be at most 64 characters"));
    }
    if !bytes[0].is_ascii_alphanumeric() {
        return Err(bad("must start with a letter or a digit"));
    }
    if !bytes.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')) {
        return Err(bad("may contain only letters, digits, '_', '.' and '-'"));
    }
    Ok(())
}

/// The longest record key, in bytes.
pub const MAX_RECORD_KEY_BYTES: usize = 512;

fn check_record_key(value: &str) -> Result<(), InvalidId> {
    check_key_text("record key", value)
}

/// Whether `c` is allowed inside record keys (and key bounds such as prefixes, and blob paths):
/// not a control character, not a Unicode noncharacter, and not a bidirectional control, which
/// makes a name read differently than it is (`"admin\u{202e}gnp.exe"` shows as `adminexe.png`).
pub fn is_key_char(c: char) -> bool {
    let cp = u32::from(c);
    !(c.is_control() || is_bidi_control(c) || (0xFDD0..=0xFDEF).contains(&cp) || (cp & 0xFFFE) == 0xFFFE)
}

/// Whether `c` is a bidirectional control: an embedding, override or pop (U+202A–U+202E) or an
/// isolate (U+2066–U+2069).
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Validates a key or a key bound (prefix, start, end): the record key rules, but `kind` names
/// what was given.
pub fn check_key_text(kind: &'static str, value: &str) -> Result<(), InvalidId> {
    check_key_chars(kind, value, MAX_RECORD_KEY_BYTES)
}

/// Validates key-like text (record keys, key bounds, blob paths): 1 to `max_bytes` bytes of
/// UTF-8 made of [`is_key_char`] characters; `kind` names what was given.
pub(crate) fn check_key_chars(kind: &'static str, value: &str, max_bytes: usize) -> Result<(), InvalidId> {
    let bad = |reason: String| InvalidId { kind, reason };
    if value.is_empty() {
        return Err(bad("must not be empty".to_owned()));
    }
    if value.len() > max_bytes {
        return Err(bad(format!("must be at most {max_bytes} bytes of UTF-8")));
    }
    if !value.chars().all(is_key_char) {
        return Err(bad(
            "must not contain control characters, bidirectional controls or Unicode noncharacters".to_owned()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Asserts that `parse` accepts every one of `good` and rejects every one of `bad`.
    fn assert_parses<T>(parse: impl Fn(&str) -> Result<T, InvalidId>, good: &[&str], bad: &[&str]) {
        for value in good {
            assert!(parse(value).is_ok(), "{value:?} should be accepted");
        }
        for value in bad {
            assert!(parse(value).is_err(), "{value:?} should be rejected");
        }
    }

    #[test]
    fn tenant_ids_follow_the_slug_rule() {
        assert_parses(
            TenantId::parse,
            &["acme", "a", "0-team-9", &"a".repeat(63)],
            &["", "-acme", "Acme", "ac_me", "acme!", "ac me", "é", &"a".repeat(64)],
        );
    }

    #[test]
    fn collection_names_allow_mixed_case_and_dots() {
        assert_parses(CollectionName::parse, &["Orders.v2_eu-1"], &[".hidden", "a/b", &"c".repeat(65)]);
    }

    #[test]
    fn record_keys_allow_unicode_and_slashes_but_not_controls() {
        assert_parses(
            RecordKey::parse,
            &["user/42 ünïcode ✓", &"k".repeat(512)],
            &[&"k".repeat(513), "", "a\nb", "a\u{0}b", "a\u{10FFFF}", "a\u{FDD0}"],
        );
    }

    #[test]
    fn record_keys_refuse_bidirectional_controls() {
        let bidi = [
            '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{202E}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}',
        ];
        for c in bidi {
            let err = RecordKey::parse(&format!("admin{c}gnp.exe")).unwrap_err();
            assert!(err.to_string().contains("bidirectional controls"), "{err}");
        }
        // Their neighbours are ordinary text.
        assert_parses(RecordKey::parse, &["a\u{2029}b", "a\u{206A}b", "a\u{2065}b", "a\u{200F}b"], &[]);
    }

    #[test]
    fn errors_name_the_identifier() {
        let err = TenantId::parse("Bad").unwrap_err();
        assert_eq!(err.kind, "tenant id");
        assert!(err.to_string().starts_with("invalid tenant id"));
        assert!(err.to_string().ends_with("the first a letter or a digit)"), "the whole rule: {err}");
    }
}
