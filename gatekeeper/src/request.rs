//! Request rules checked before routing, the same in the gateway and in the standalone
//! gatekeeper: the raw path's shape and the body's media type.
//!
//! Path rules (on the raw, still percent-encoded path):
//! - at most [`MAX_PATH_BYTES`] bytes (longer: 414);
//! - no segment that is, or decodes to, `.` or `..` (`%2e%2e` included): such paths mean different
//!   things to different proxies and clients, so none is accepted;
//! - no percent-encoded control character (`%00`–`%1F`, `%7F`) and no invalid escape;
//! - `%2F` (an encoded `/`) is data, not a separator: a record key containing `/` is sent as one
//!   segment with `%2F`, and identifiers (tenant, collection) reject it by their character set.

use percent_encoding::percent_decode_str;

/// The longest raw path accepted.
pub const MAX_PATH_BYTES: usize = 2048;

/// Why a path was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PathProblem {
    /// Longer than [`MAX_PATH_BYTES`].
    #[error("the path is longer than 2048 bytes")]
    TooLong,
    /// A `.` or `..` segment, plain or encoded.
    #[error("the path has a `.` or `..` segment (plain or percent-encoded)")]
    DotSegment,
    /// A `%` not followed by two hex digits.
    #[error("the path has an invalid percent-escape")]
    BadEscape,
    /// An encoded control character.
    #[error("the path has a percent-encoded control character")]
    ControlCharacter,
}

/// Checks a raw request path against the rules above.
pub fn check_path(raw: &str) -> Result<(), PathProblem> {
    if raw.len() > MAX_PATH_BYTES {
        return Err(PathProblem::TooLong);
    }
    let bytes = raw.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'%' {
            let hex = bytes.get(i + 1..i + 3).ok_or(PathProblem::BadEscape)?;
            let value = std::str::from_utf8(hex)
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or(PathProblem::BadEscape)?;
            if value < 0x20 || value == 0x7f {
                return Err(PathProblem::ControlCharacter);
            }
        }
    }
    for segment in raw.split('/') {
        if segment.len() <= 6 && segment.contains(['.', '%']) {
            let decoded = percent_decode_str(segment).collect::<Vec<u8>>();
            if decoded == b"." || decoded == b".." {
                return Err(PathProblem::DotSegment);
            }
        }
    }
    Ok(())
}

/// Whether a `Content-Type` value is JSON: `application/json` or `application/<anything>+json`,
/// with any parameters.
pub fn is_json_media_type(value: &str) -> bool {
    let essence = value.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    match essence.strip_prefix("application/") {
        Some(subtype) => subtype == "json" || (subtype.ends_with("+json") && subtype.len() > "+json".len()),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_segments_are_refused_plain_and_encoded() {
        for path in [
            "/v1/tenants/acme/../bob",
            "/v1/tenants/acme/collections/c/records/..",
            "/v1/tenants/./acme",
            "/v1/tenants/acme/collections/c/records/%2e%2e",
            "/v1/tenants/acme/collections/c/records/%2E.",
            "/v1/tenants/acme/collections/c/records/.%2E",
            "/v1/tenants/acme/collections/c/records/%2e",
        ] {
            assert_eq!(check_path(path), Err(PathProblem::DotSegment), "{path}");
        }
    }

    #[test]
    fn dots_inside_segments_and_encoded_slashes_are_data() {
        for path in [
            "/v1/tenants/acme/collections/c.v2/records/a..b",
            "/v1/tenants/acme/collections/c/records/...",
            "/v1/tenants/acme/collections/c/records/a%2F..%2Fb",
            "/v1/tenants/acme/collections/c/records/%E2%9C%93",
            "/",
        ] {
            assert_eq!(check_path(path), Ok(()), "{path}");
        }
    }

    #[test]
    fn control_characters_bad_escapes_and_long_paths_are_refused() {
        assert_eq!(check_path("/v1/tenants/a%00b"), Err(PathProblem::ControlCharacter));
        assert_eq!(check_path("/v1/tenants/a%0Ab"), Err(PathProblem::ControlCharacter));
        assert_eq!(check_path("/v1/tenants/a%7fb"), Err(PathProblem::ControlCharacter));
        assert_eq!(check_path("/v1/tenants/a%zzb"), Err(PathProblem::BadEscape));
        assert_eq!(check_path("/v1/tenants/a%2"), Err(PathProblem::BadEscape));
        assert_eq!(check_path(&format!("/{}", "a".repeat(MAX_PATH_BYTES))), Err(PathProblem::TooLong));
    }

    #[test]
    fn json_media_types() {
        assert!(is_json_media_type("application/json"));
        assert!(is_json_media_type("Application/JSON; charset=utf-8"));
        assert!(is_json_media_type("application/merge-patch+json"));
        assert!(!is_json_media_type("application/+json"));
        assert!(!is_json_media_type("text/plain"));
        assert!(!is_json_media_type("application/x-www-form-urlencoded"));
        assert!(!is_json_media_type("application/jsonp"));
        assert!(!is_json_media_type(""));
    }
}
