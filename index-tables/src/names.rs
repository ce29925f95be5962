//! The names an index definition is made of: the index's own name and the fields (JSON pointers)
//! it reads from records.

use std::borrow::Cow;
use std::fmt;

use serde::Deserializer as _;
use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

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
    /// The value at this path in `record`, if present, as its exact JSON text (a number keeps
    /// every digit it was written with). Only the objects and arrays on the path are read, one
    /// level each; when a key repeats (records stored before the record rules), the last one
    /// counts, as for any JSON reader that keeps one.
    pub fn extract<'a>(&self, record: &'a RawValue) -> Option<&'a RawValue> {
        self.as_str()
            .split('/')
            .skip(1)
            .map(|segment| segment.replace("~1", "/").replace("~0", "~"))
            .try_fold(record, |value, segment| child(value, &segment))
    }
}

/// The member `segment` of an object, or the element at index `segment` of an array.
fn child<'a>(value: &'a RawValue, segment: &str) -> Option<&'a RawValue> {
    let mut reader = serde_json::Deserializer::from_str(value.get());
    match value.get().as_bytes().first()? {
        b'{' => reader.deserialize_map(Child(segment)).ok().flatten(),
        b'[' => reader.deserialize_seq(Child(segment)).ok().flatten(),
        _ => None,
    }
}

/// Finds one member or element, borrowing its text; skips the others without building them.
struct Child<'s>(&'s str);

impl<'de> Visitor<'de> for Child<'_> {
    type Value = Option<&'de RawValue>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object or an array")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(Key(key)) = map.next_key()? {
            if key == self.0 {
                found = Some(map.next_value()?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        // RFC 6901 indexes: digits without a leading zero.
        let wanted = (!self.0.starts_with('+') && (self.0 == "0" || !self.0.starts_with('0')))
            .then(|| self.0.parse::<usize>().ok())
            .flatten();
        let (mut found, mut index) = (None, 0);
        while let Some(element) = seq.next_element::<&RawValue>()? {
            if Some(index) == wanted {
                found = Some(element);
            }
            index += 1;
        }
        Ok(found)
    }
}

/// An object key, borrowed from the text unless it holds escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_borrowed_str<E: de::Error>(self, key: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(key)))
            }

            fn visit_str<E: de::Error>(self, key: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(key.to_owned())))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
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
        let record = RawValue::from_string(
            r#"{"customer": {"email": "a@b.c", "a/b": 1, "m~n": 2, "\u0078": 3}, "n": [10, 9007199254740993.50, {"x": []}]}"#
                .to_owned(),
        )
        .unwrap();
        let at = |path: &str| FieldPath::parse(path).unwrap().extract(&record).map(RawValue::get);
        assert_eq!(at("/customer/email"), Some(r#""a@b.c""#));
        assert_eq!(at("/customer/a~1b"), Some("1"));
        assert_eq!(at("/customer/m~0n"), Some("2"));
        assert_eq!(at("/customer/x"), Some("3"), "an escaped key");
        assert_eq!(at("/n/1"), Some("9007199254740993.50"), "the exact text");
        assert_eq!(at("/n/2/x"), Some("[]"));
        assert_eq!(at("/customer"), Some(r#"{"email": "a@b.c", "a/b": 1, "m~n": 2, "\u0078": 3}"#));
        for missing in ["/missing", "/n/3", "/n/01", "/n/+1", "/n/x", "/customer/email/x", "/n/0/0"] {
            assert_eq!(at(missing), None, "{missing}");
        }
        let repeated = RawValue::from_string(r#"{"a": 1, "a": 2}"#.to_owned()).unwrap();
        assert_eq!(FieldPath::parse("/a").unwrap().extract(&repeated).map(RawValue::get), Some("2"));
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
