//! The rules every signed field obeys, shared by issuing (where a broken rule is
//! [`crate::ValetError::InvalidField`]) and parsing (where it is [`crate::ValetError::Malformed`]).
//!
//! Together they guarantee that no field of the canonical string can contain a line feed, so the
//! line-per-field canonical form is unambiguous.

use percent_encoding::percent_decode_str;

/// The longest raw blob path a valet URL may carry, in bytes.
pub const MAX_PATH_LEN: usize = 2048;
/// The longest `content_type` constraint, in bytes.
pub const MAX_CONTENT_TYPE_LEN: usize = 255;
/// The longest `content_disposition` constraint, in bytes.
pub const MAX_CONTENT_DISPOSITION_LEN: usize = 1024;

/// A field's rule: `Ok` or the reason it was broken.
pub(crate) type Rule = Result<(), &'static str>;

/// The tenant id grammar of the design (`[a-z0-9][a-z0-9-]{0,62}`).
pub(crate) fn check_tenant(tenant: &str) -> Rule {
    let bytes = tenant.as_bytes();
    match bytes.first() {
        None => Err("must not be empty"),
        Some(_) if bytes.len() > 63 => Err("must be at most 63 characters"),
        Some(first) if !matches!(first, b'a'..=b'z' | b'0'..=b'9') => {
            Err("must start with a lowercase letter or a digit")
        }
        Some(_) if !bytes.iter().all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'-')) => {
            Err("may contain only lowercase letters, digits and '-'")
        }
        Some(_) => Ok(()),
    }
}

/// A raw (still percent-encoded) blob path as it appears in the URL after `/valet/{tenant}/`:
/// 1 to [`MAX_PATH_LEN`] bytes of RFC 3986 `pchar`s and `/`, every `%` starting a two-digit hex
/// escape, no empty segment and no `.` or `..` segment, written plainly or percent-encoded.
pub(crate) fn check_path(raw: &str) -> Rule {
    if raw.is_empty() {
        return Err("must not be empty");
    }
    if raw.len() > MAX_PATH_LEN {
        return Err("must be at most 2048 bytes");
    }
    if !raw.bytes().all(|b| is_pchar(b) || b == b'/' || b == b'%') {
        return Err("may contain only URL path characters (RFC 3986 pchar, '/' and %XX escapes)");
    }
    check_escapes(raw)?;
    for segment in raw.split('/') {
        if segment.is_empty() {
            return Err("must not have an empty segment (leading, trailing or double '/')");
        }
        let decoded: Vec<u8> = percent_decode_str(segment).collect();
        if decoded == b"." || decoded == b".." {
            return Err("must not have a '.' or '..' segment, plain or percent-encoded");
        }
    }
    Ok(())
}

/// A constraint that becomes an HTTP header value (`content_type`, `content_disposition`):
/// 1 to `max_len` bytes of visible ASCII and spaces, not starting or ending with a space.
pub(crate) fn check_header_value(value: &str, max_len: usize) -> Rule {
    if value.is_empty() {
        return Err("must not be empty");
    }
    if value.len() > max_len {
        return Err("is too long");
    }
    if !value.bytes().all(|b| matches!(b, b' '..=b'~')) {
        return Err("may contain only visible ASCII characters and spaces (no control characters)");
    }
    if value.starts_with(' ') || value.ends_with(' ') {
        return Err("must not start or end with a space");
    }
    Ok(())
}

/// A key id: `[a-z0-9-]{1,32}`.
pub(crate) fn check_key_id(id: &str) -> Rule {
    if id.is_empty() || id.len() > 32 {
        return Err("must be 1 to 32 characters");
    }
    if !id.bytes().all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'-')) {
        return Err("may contain only lowercase letters, digits and '-'");
    }
    Ok(())
}

/// A grant id: 32 lowercase hex digits (16 bytes).
pub(crate) fn check_grant_id(id: &str) -> Rule {
    if id.len() != 32 || !id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err("must be 32 lowercase hex digits");
    }
    Ok(())
}

/// A number in canonical decimal form: ASCII digits only, no sign, no leading zero (except `0`
/// itself), at most `u64::MAX`. One number has exactly one spelling.
pub(crate) fn parse_decimal(text: &str) -> Option<u64> {
    let canonical =
        !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) && (text == "0" || !text.starts_with('0'));
    if canonical { text.parse().ok() } else { None }
}

/// Percent-decodes a query component strictly: every `%` must start a two-digit hex escape and
/// the result must be UTF-8. `+` is a literal plus, not a space.
pub(crate) fn percent_decode_strict(raw: &str) -> Result<String, &'static str> {
    check_escapes(raw)?;
    percent_decode_str(raw).decode_utf8().map(|decoded| decoded.into_owned()).map_err(|_| "is not UTF-8 once decoded")
}

fn check_escapes(raw: &str) -> Rule {
    let bytes = raw.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3).ok_or("has a truncated percent escape")?;
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return Err("has a percent escape that is not two hex digits");
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    Ok(())
}

/// RFC 3986 `pchar` without `%` (handled as escapes): unreserved, sub-delims, `:` and `@`.
fn is_pchar(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(b, b'-' | b'.' | b'_' | b'~')
        || matches!(b, b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'=')
        || matches!(b, b':' | b'@')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenants_follow_the_design_grammar() {
        assert!(check_tenant("acme").is_ok());
        assert!(check_tenant("0-a").is_ok());
        assert!(check_tenant(&"a".repeat(63)).is_ok());
        for bad in ["", "-acme", "Acme", "ac me", "acme\n", "a/b", "a%2Fb", &"a".repeat(64)] {
            assert!(check_tenant(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn paths_are_raw_url_paths_without_dot_or_empty_segments() {
        for good in ["a", "a/b.txt", "a%2Fb", "r%C3%A9sum%C3%A9.pdf", "x/...", "a:b@c!$&'()*+,;=", "%2e%2e%2e"] {
            assert!(check_path(good).is_ok(), "{good:?}");
        }
        let bad = [
            "",
            "/a",
            "a/",
            "a//b",
            ".",
            "..",
            "a/../b",
            "a/./b",
            "%2e%2e",
            "a/%2E%2e/b",
            "%2e",
            "a b",
            "a\nb",
            "a\rb",
            "a\0b",
            "a?b",
            "a#b",
            "r\u{e9}sum\u{e9}",
            "%zz",
            "a%2",
            "a%",
        ];
        for bad in bad {
            assert!(check_path(bad).is_err(), "{bad:?}");
        }
        assert!(check_path(&"a".repeat(MAX_PATH_LEN)).is_ok());
        assert!(check_path(&"a".repeat(MAX_PATH_LEN + 1)).is_err());
    }

    #[test]
    fn header_values_refuse_control_characters() {
        assert!(check_header_value("text/plain; charset=utf-8", 255).is_ok());
        for bad in ["", " text/plain", "text/plain ", "text/plain\r\nx-evil: 1", "a\tb", "a\0", "caf\u{e9}"] {
            assert!(check_header_value(bad, 255).is_err(), "{bad:?}");
        }
        assert!(check_header_value("abcd", 3).is_err());
    }

    #[test]
    fn numbers_have_one_spelling() {
        assert_eq!(parse_decimal("0"), Some(0));
        assert_eq!(parse_decimal("1700000000"), Some(1_700_000_000));
        assert_eq!(parse_decimal("18446744073709551615"), Some(u64::MAX));
        for bad in ["", "+5", "-5", "05", "00", "1e3", " 5", "5 ", "0x10", "18446744073709551616", "１"] {
            assert_eq!(parse_decimal(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn percent_decoding_is_strict() {
        assert_eq!(percent_decode_strict("text%2Fplain").as_deref(), Ok("text/plain"));
        assert_eq!(percent_decode_strict("a+b").as_deref(), Ok("a+b"));
        for bad in ["%", "%2", "%zz", "%ff", "%C3"] {
            assert!(percent_decode_strict(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn ids_follow_their_grammars() {
        assert!(check_key_id("k-2024-01").is_ok());
        assert!(check_key_id(&"k".repeat(32)).is_ok());
        for bad in ["", "K1", "k_1", "k 1", &"k".repeat(33)] {
            assert!(check_key_id(bad).is_err(), "{bad:?}");
        }
        assert!(check_grant_id("00112233445566778899aabbccddeeff").is_ok());
        for bad in [
            "",
            "00112233445566778899AABBCCDDEEFF",
            "00112233445566778899aabbccddeef",
            "g0112233445566778899aabbccddeeff",
        ] {
            assert!(check_grant_id(bad).is_err(), "{bad:?}");
        }
    }
}
