//! Listings: pages of results with an opaque cursor, and page sizes.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Serialize;

use crate::error::{ApiError, Code};

/// An opaque cursor: the last key (or id) of a page, base64url-encoded with a version tag.
pub fn encode_cursor(last: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!("1:{last}"))
}

/// Decodes a cursor made by [`encode_cursor`]; 400 `invalid_cursor` otherwise.
pub fn decode_cursor(cursor: &str) -> Result<String, ApiError> {
    let invalid = ApiError::invalid_cursor;
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| invalid())?;
    let text = String::from_utf8(bytes).map_err(|_| invalid())?;
    text.strip_prefix("1:").filter(|k| !k.is_empty()).map(str::to_owned).ok_or_else(invalid)
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
    fn limits_are_capped_and_zero_is_refused() {
        assert_eq!(page_limit(None, 100, 1000).unwrap(), 100);
        assert_eq!(page_limit(Some(5000), 100, 1000).unwrap(), 1000);
        assert!(page_limit(Some(0), 100, 1000).is_err());
    }
}
