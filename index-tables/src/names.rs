//! The names an index definition is made of: the index's own name and the fields (JSON pointers)
//! it reads from records.

use serde_json::Value;

use crate::error::IndexError;

shardgate_shard_router::string_id!(
    /// An index name: `[a-z0-9][a-z0-9_-]{0,62}`.
    IndexName,
    check_index_name,
    IndexError
);

fn check_index_name(value: &str) -> Result<(), IndexError> {
    let bytes = value.as_bytes();
    let valid = !bytes.is_empty()
        && bytes.len() <= 63
        && matches!(bytes[0], b'a'..=b'z' | b'0'..=b'9')
        && bytes.iter().all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-'));
    if valid { Ok(()) } else { Err(IndexError::InvalidName) }
}

/// The longest field path, in bytes.
pub const MAX_FIELD_PATH_BYTES: usize = 256;

shardgate_shard_router::string_id!(
    /// An indexed (or copied) field, as a JSON pointer (`/customer/email`, RFC 6901); the empty
    /// pointer is not allowed (an index over the whole record makes no sense).
    FieldPath,
    check_field_path,
    IndexError
);

fn check_field_path(value: &str) -> Result<(), IndexError> {
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
    Ok(())
}

impl FieldPath {
    /// The value at this path in `record`, if present.
    pub fn extract<'a>(&self, record: &'a Value) -> Option<&'a Value> {
        record.pointer(self.as_str())
    }
}

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
