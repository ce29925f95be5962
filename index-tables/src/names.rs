//! The names an index definition is made of: the index's own name and the fields (JSON pointers)
//! it reads from records.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::error::IndexError;

/// An index name: `[a-z0-9][a-z0-9_-]{0,62}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IndexName(String);

impl IndexName {
    /// Parses and validates an index name.
    pub fn parse(value: &str) -> Result<Self, IndexError> {
        let bytes = value.as_bytes();
        let valid = !bytes.is_empty()
            && bytes.len() <= 63
            && matches!(bytes[0], b'a'..=b'z' | b'0'..=b'9')
            && bytes.iter().all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-'));
        if valid { Ok(Self(value.to_owned())) } else { Err(IndexError::InvalidName) }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for IndexName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The longest field path, in bytes.
pub const MAX_FIELD_PATH_BYTES: usize = 256;

/// An indexed (or copied) field, as a JSON pointer (`/customer/email`, RFC 6901).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldPath(String);

impl FieldPath {
    /// Parses a JSON pointer: empty is not allowed (an index over the whole record makes no sense).
    pub fn parse(value: &str) -> Result<Self, IndexError> {
        if !value.starts_with('/') || value.len() > MAX_FIELD_PATH_BYTES {
            return Err(IndexError::InvalidField);
        }
        // `~` must be followed by 0 or 1 (RFC 6901 escapes).
        let mut chars = value.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
                return Err(IndexError::InvalidField);
            }
        }
        Ok(Self(value.to_owned()))
    }

    /// The pointer.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The value at this path in `record`, if present.
    pub fn extract<'a>(&self, record: &'a Value) -> Option<&'a Value> {
        record.pointer(&self.0)
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

macro_rules! serde_as_parsed_string {
    ($name:ident) => {
        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let raw = String::deserialize(deserializer)?;
                Self::parse(&raw).map_err(serde::de::Error::custom)
            }
        }
    };
}

serde_as_parsed_string!(IndexName);
serde_as_parsed_string!(FieldPath);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_slugs() {
        assert!(IndexName::parse("by_email").is_ok());
        assert!(matches!(IndexName::parse("By-Email"), Err(IndexError::InvalidName)));
        assert!(matches!(IndexName::parse(""), Err(IndexError::InvalidName)));
        assert!(matches!(IndexName::parse(&"a".repeat(64)), Err(IndexError::InvalidName)));
    }

    #[test]
    fn field_paths_extract_nested_values() {
        let record = serde_json::json!({"customer": {"email": "a@b.c", "a/b": 1}});
        let email = FieldPath::parse("/customer/email").unwrap();
        assert_eq!(email.extract(&record), Some(&serde_json::json!("a@b.c")));
        let escaped = FieldPath::parse("/customer/a~1b").unwrap();
        assert_eq!(escaped.extract(&record), Some(&serde_json::json!(1)));
        assert_eq!(FieldPath::parse("/missing").unwrap().extract(&record), None);
        assert!(matches!(FieldPath::parse("customer"), Err(IndexError::InvalidField)));
        assert!(matches!(FieldPath::parse("/a~2"), Err(IndexError::InvalidField)));
    }

    #[test]
    fn names_and_paths_deserialize_only_when_valid() {
        let path: FieldPath = serde_json::from_str(r#""/a/b""#).unwrap();
        assert_eq!(serde_json::to_string(&path).unwrap(), r#""/a/b""#);
        assert!(serde_json::from_str::<FieldPath>(r#""a""#).is_err());
        assert!(serde_json::from_str::<IndexName>(r#""Bad Name""#).is_err());
    }
}
