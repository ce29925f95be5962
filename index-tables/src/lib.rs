//! # shardgate-index-tables
//!
//! Secondary index tables over one field of a collection's records. Index entries are sharded
//! by `h(tenant, index, value)` and refer to records by key, never by physical shard.
//!
//! This crate depends only on `shard-router` (for identifiers and storage); it knows nothing of
//! HTTP. So far it holds the index name and field path types; entry maintenance, look-ups and
//! backfill arrive with the index-table issue.

use serde_json::Value;

/// Why an index definition was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexError {
    /// The index name breaks the naming rule.
    #[error("invalid index name: must match [a-z0-9][a-z0-9_-]{{0,62}}")]
    InvalidName,
    /// The field is not a JSON pointer (RFC 6901).
    #[error("invalid field: expected a JSON pointer such as /customer/email")]
    InvalidField,
}

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

/// The indexed field, as a JSON pointer (`/customer/email`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldPath(String);

impl FieldPath {
    /// Parses a JSON pointer: empty is not allowed (an index over the whole record makes no sense).
    pub fn parse(value: &str) -> Result<Self, IndexError> {
        if !value.starts_with('/') || value.len() > 256 {
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

    /// The value at this path in `record`, if present.
    pub fn extract<'a>(&self, record: &'a Value) -> Option<&'a Value> {
        record.pointer(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_slugs() {
        assert!(IndexName::parse("by_email").is_ok());
        assert_eq!(IndexName::parse("By-Email"), Err(IndexError::InvalidName));
        assert_eq!(IndexName::parse(""), Err(IndexError::InvalidName));
    }

    #[test]
    fn field_paths_extract_nested_values() {
        let record = serde_json::json!({"customer": {"email": "a@b.c", "a/b": 1}});
        let email = FieldPath::parse("/customer/email").unwrap();
        assert_eq!(email.extract(&record), Some(&serde_json::json!("a@b.c")));
        let escaped = FieldPath::parse("/customer/a~1b").unwrap();
        assert_eq!(escaped.extract(&record), Some(&serde_json::json!(1)));
        assert_eq!(FieldPath::parse("/missing").unwrap().extract(&record), None);
        assert_eq!(FieldPath::parse("customer"), Err(IndexError::InvalidField));
        assert_eq!(FieldPath::parse("/a~2"), Err(IndexError::InvalidField));
    }
}
