//! Listings: pages of results with an opaque cursor, and page sizes.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Serialize;
use shardgate_shard_router::RecordKey;
use shardgate_shard_router::ids::is_key_char;

use crate::wire::error::{ApiError, Code};

/// An opaque cursor: the last key (or id) of a page, base64url-encoded with a version tag.
pub fn encode_cursor(last: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!("1:{last}"))
}

/// Decodes a cursor made by [`encode_cursor`]; 400 `invalid_cursor` otherwise. What it holds is
/// text no issued cursor lacks: UTF-8 without control characters or noncharacters (a key, a
/// blob path, a tenant id, a number), so no database ever sees a NUL or a bad byte from one.
pub fn decode_cursor(cursor: &str) -> Result<String, ApiError> {
    let invalid = ApiError::invalid_cursor;
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| invalid())?;
    let text = String::from_utf8(bytes).map_err(|_| invalid())?;
    text.strip_prefix("1:")
        .filter(|k| !k.is_empty() && k.chars().all(is_key_char))
        .map(str::to_owned)
        .ok_or_else(invalid)
}

/// Decodes the cursor of a listing of records: it holds the last key of a page, so anything
/// but a key a record could have ([`RecordKey::parse`]: too long, say) is 400 `invalid_cursor`.
pub fn decode_key_cursor(cursor: &str) -> Result<RecordKey, ApiError> {
    RecordKey::parse(&decode_cursor(cursor)?).map_err(|_| ApiError::invalid_cursor())
}

/// Resolves a requested page size: default when absent, capped at `max`, 400 when zero.
pub fn page_limit(requested: Option<u32>, default: u32, max: u32) -> Result<u32, ApiError> {
    match requested {
        None => Ok(default.min(max)),
        Some(0) => Err(ApiError::new(Code::InvalidQuery, "limit must be at least 1")),
        Some(n) => Ok(n.min(max)),
    }
}

impl<T> Page<T> {
    /// Builds a page from `fetched`, which was read with `limit + 1` to learn whether more
    /// follow: the extra row is dropped and the cursor points after the last kept row
    /// (`cursor_of` gives its key). `view` turns each row into its API form.
    pub fn from_overfetch<R>(
        mut fetched: Vec<R>,
        limit: u32,
        cursor_of: impl Fn(&R) -> String,
        view: impl FnMut(R) -> T,
    ) -> Self {
        let next_cursor = if fetched.len() > limit as usize {
            fetched.truncate(limit as usize);
            fetched.last().map(|row| encode_cursor(&cursor_of(row)))
        } else {
            None
        };
        Self { items: fetched.into_iter().map(view).collect(), next_cursor }
    }
}

/// A page of results with the cursor of the next page.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Page<T> {
    /// This page's items.
    pub items: Vec<T>,
    /// Pass as `cursor` to get the next page; `null` on the last page.
    pub next_cursor: Option<String>,
}

/// Makes each `Page_X` schema of `openapi` name its items by reference to the schema `X`, which
/// utoipa inlines into a generic's instances: generators would otherwise make a second class for
/// the same item (`PageRecordEnvelopeItemsItem` beside `RecordEnvelope`). Only an inlined item
/// equal to its component is replaced; `tests/openapi_drift.rs` checks that none is left inline.
pub fn reference_page_items(openapi: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::schema::{ArrayItems, Schema};
    use utoipa::openapi::{Ref, RefOr};
    let Some(components) = openapi.components.as_mut() else { return };
    let pages: Vec<String> = components.schemas.keys().filter(|name| name.starts_with("Page_")).cloned().collect();
    for page in pages {
        let item = &page["Page_".len()..];
        let Some(component) = components.schemas.get(item).map(serde_json::to_value) else { continue };
        let Some(RefOr::T(Schema::Object(object))) = components.schemas.get_mut(&page) else { continue };
        let Some(RefOr::T(Schema::Array(array))) = object.properties.get_mut("items") else { continue };
        let ArrayItems::RefOrSchema(inlined) = &array.items else { continue };
        if serde_json::to_value(&**inlined).ok() == component.ok() {
            array.items = ArrayItems::RefOrSchema(Box::new(RefOr::Ref(Ref::from_schema_name(item))));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_reject_garbage() {
        let c = encode_cursor("user/ü 1");
        assert_eq!(decode_cursor(&c).unwrap(), "user/ü 1");
        assert_eq!(decode_cursor("%%%").unwrap_err().code(), "invalid_cursor");
        assert_eq!(decode_cursor(&URL_SAFE_NO_PAD.encode("2:x")).unwrap_err().code(), "invalid_cursor");
    }

    #[test]
    fn a_record_cursor_holds_a_valid_key_or_is_refused() {
        let wrapped = |text: &[u8]| URL_SAFE_NO_PAD.encode([b"1:".as_slice(), text].concat());
        let longest = "k".repeat(shardgate_shard_router::ids::MAX_RECORD_KEY_BYTES);
        for key in ["a", "user/ü 1", "日本", longest.as_str()] {
            assert_eq!(decode_key_cursor(&encode_cursor(key)).unwrap().as_str(), key);
        }
        let too_long = "k".repeat(shardgate_shard_router::ids::MAX_RECORD_KEY_BYTES + 1);
        let malformed: Vec<String> = vec![
            String::new(),
            "%%%".into(),
            "MTo".into(), // "1:" with nothing after it
            "=".into(),
            "MTphAA==".into(), // padded
            wrapped(b"\0"),
            wrapped(b"a\0b"),
            wrapped(b"\xff\xfe"),
            wrapped(b"\xc3"),         // a truncated two-byte sequence
            wrapped(b"\xed\xa0\x80"), // an encoded surrogate
            wrapped(b"a\nb"),
            wrapped(b"\x7f"),
            wrapped("\u{fdd0}".as_bytes()),
            wrapped("\u{fffe}".as_bytes()),
            wrapped(too_long.as_bytes()),
            URL_SAFE_NO_PAD.encode("2:a"),
            URL_SAFE_NO_PAD.encode("a"),
            URL_SAFE_NO_PAD.encode(b"\x001:a"),
            "MTphfn5+".into(), // "1:a~~~" in standard base64: '+' is not base64url
            "MTphPz8/".into(), // "1:a???": nor is '/'
        ];
        for cursor in &malformed {
            let refused = decode_key_cursor(cursor).map(|k| k.as_str().to_owned());
            assert_eq!(refused.map_err(|e| e.code()), Err("invalid_cursor"), "{cursor:?}");
        }
        // Random bytes behind the tag, and random text in place of a cursor: a valid key or
        // 400, never anything else (and never a key that breaks the key rule).
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for round in 0..20_000 {
            let len = (next() % 40) as usize;
            let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            let cursor = if round % 2 == 0 { wrapped(&bytes) } else { String::from_utf8_lossy(&bytes).into_owned() };
            match decode_key_cursor(&cursor) {
                Ok(key) => assert!(RecordKey::parse(key.as_str()).is_ok(), "{cursor:?}"),
                Err(e) => assert_eq!(e.code(), "invalid_cursor", "{cursor:?}"),
            }
        }
    }

    #[test]
    fn limits_are_capped_and_zero_is_refused() {
        assert_eq!(page_limit(None, 100, 1000).unwrap(), 100);
        assert_eq!(page_limit(Some(5000), 100, 1000).unwrap(), 1000);
        assert!(page_limit(Some(0), 100, 1000).is_err());
    }
}
