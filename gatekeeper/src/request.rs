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

use crate::principal::Scope;

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
    // Every rule below is about an escape or a dot segment: a path with neither byte (almost
    // every request's) passes them all, and is read once.
    if !bytes.iter().any(|&b| b == b'%' || b == b'.') {
        return Ok(());
    }
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

/// What a request needs from its caller, decided from its method and raw path alone (the
/// standalone gatekeeper's route table; the backend's handlers check the same again).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// No token needed: docs, probes, metrics.
    Open,
    /// Any valid token (other `/v1` paths).
    Authenticated,
    /// The platform `admin` scope: `/v1/admin/...`.
    Admin,
    /// A token bound to `tenant` with `scope`: `/v1/tenants/{tenant}/...`.
    Tenant {
        /// The tenant of the path (percent-decoded).
        tenant: String,
        /// `read` for GET and HEAD; `manage` for changing index definitions; `write` otherwise.
        scope: Scope,
    },
}

/// The access rule of `method path`.
pub fn access(method: &str, path: &str) -> Access {
    if path == "/v1/admin" || path.starts_with("/v1/admin/") {
        return Access::Admin;
    }
    if let Some(rest) = path.strip_prefix("/v1/tenants/") {
        let mut segments = rest.split('/');
        let tenant = percent_decode_str(segments.next().unwrap_or_default()).decode_utf8_lossy().into_owned();
        let reads = matches!(method, "GET" | "HEAD");
        let rest: Vec<&str> = segments.collect();
        let index_definition = matches!(rest.as_slice(), ["collections", _, "indexes", _]);
        // Issuing a valet key needs the scope of its permission, which only the body says: `read`
        // here, and the handler checks the rest.
        let valet_issue = method == "POST" && rest.as_slice() == ["valet-keys"];
        let scope = match (reads || valet_issue, index_definition) {
            (true, _) => Scope::Read,
            (false, true) => Scope::Manage,
            (false, false) => Scope::Write,
        };
        return Access::Tenant { tenant, scope };
    }
    if path == "/v1" || path.starts_with("/v1/") { Access::Authenticated } else { Access::Open }
}

/// Whether a `Content-Type` value declares JSON in UTF-8, the only body the JSON operations take:
/// `application/json` (case-insensitive) with no parameter or with `charset=utf-8` (the value
/// case-insensitive, optionally quoted). Other charsets, other parameters and other media types
/// are not, `+json` types included: `application/merge-patch+json` means a patch, and a record
/// stored from it would be a replacement.
pub fn is_json_media_type(value: &str) -> bool {
    let mut parts = value.split(';');
    if !parts.next().unwrap_or_default().trim().eq_ignore_ascii_case("application/json") {
        return false;
    }
    let mut charset = false;
    for parameter in parts.map(str::trim).filter(|p| !p.is_empty()) {
        let Some((name, value)) = parameter.split_once('=') else { return false };
        let value = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or(value);
        if charset || !name.eq_ignore_ascii_case("charset") || !value.eq_ignore_ascii_case("utf-8") {
            return false;
        }
        charset = true;
    }
    true
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
    fn access_rules_follow_the_route_families() {
        let tenant = |t: &str, scope| Access::Tenant { tenant: t.into(), scope };
        assert_eq!(access("GET", "/v1/tenants/acme/collections/c/records/k"), tenant("acme", Scope::Read));
        assert_eq!(access("HEAD", "/v1/tenants/acme/collections/c/records"), tenant("acme", Scope::Read));
        assert_eq!(access("PUT", "/v1/tenants/acme/collections/c/records/k"), tenant("acme", Scope::Write));
        assert_eq!(access("DELETE", "/v1/tenants/%61cme/blobs/x"), tenant("acme", Scope::Write));
        assert_eq!(access("PUT", "/v1/tenants/acme/collections/c/indexes/by-email"), tenant("acme", Scope::Manage));
        assert_eq!(access("GET", "/v1/tenants/acme/collections/c/indexes/by-email"), tenant("acme", Scope::Read));
        assert_eq!(access("POST", "/v1/admin/tenants"), Access::Admin);
        assert_eq!(access("GET", "/v1/admin"), Access::Admin);
        assert_eq!(access("POST", "/v1/tenants/acme/valet-keys"), tenant("acme", Scope::Read));
        assert_eq!(access("DELETE", "/v1/tenants/acme/valet-keys/abc"), tenant("acme", Scope::Write));
        assert_eq!(access("GET", "/v1/nope"), Access::Authenticated);
        assert_eq!(access("GET", "/v1administrator"), Access::Open);
        for open in ["/healthz", "/readyz", "/metrics", "/docs/", "/openapi.json", "/"] {
            assert_eq!(access("GET", open), Access::Open, "{open}");
        }
    }

    #[test]
    fn json_media_types() {
        for accepted in [
            "application/json",
            "Application/JSON; charset=utf-8",
            "application/json;charset=UTF-8",
            "application/json; charset=\"utf-8\"",
            "application/json;",
        ] {
            assert!(is_json_media_type(accepted), "{accepted}");
        }
        for refused in [
            "application/json; charset=latin1",
            "application/json; charset=iso-8859-1",
            "application/json; charset=utf-16",
            "application/json; charset=utf-8; charset=latin1",
            "application/json; charset",
            "application/json; profile=x",
            "application/merge-patch+json",
            "application/vnd.api+json",
            "application/+json",
            "text/plain",
            "text/json",
            "application/x-www-form-urlencoded",
            "application/jsonp",
            "",
        ] {
            assert!(!is_json_media_type(refused), "{refused}");
        }
    }
}
