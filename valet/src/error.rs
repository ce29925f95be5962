//! The crate's one error type. Only `api` turns it into a response; each variant says which
//! status it should become, and [`ValetError::code`] is the stable problem+json `code`.
//!
//! Messages never contain request data (no parameter values, no signatures), so an error can be
//! logged as is.

/// Why a valet URL was refused, or why a grant or key could not be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ValetError {
    /// The method, tenant, path or query of a valet request is not well formed: a required
    /// `sg-` parameter is missing, repeated or unknown, a number is not canonical decimal, a
    /// value has a bad percent escape or a forbidden character, the scheme version is not 1.
    /// Becomes 400.
    #[error("malformed valet URL: {0}")]
    Malformed(&'static str),
    /// The signature is not the HMAC of this request's canonical string under the key the URL
    /// names: some signed part of the URL was changed, or the key is not the one that signed it.
    /// Becomes 403.
    #[error("valet signature does not match")]
    BadSignature,
    /// The clock has reached `expires_at` (there is no grace period). Becomes 403.
    #[error("valet URL has expired")]
    Expired,
    /// The clock is before `not_before`. Becomes 403.
    #[error("valet URL is not valid yet")]
    NotYetValid,
    /// The HTTP method is not `GET`, `HEAD` or `PUT`, or its class (read or write) is not the
    /// URL's permission. Becomes 403 (405 with `Allow` for methods never allowed, if the api
    /// prefers).
    #[error("the HTTP method is not allowed by this valet URL")]
    WrongMethod,
    /// No usable key has the URL's key id (never existed, or retired). This crate does not know
    /// the key ring: the caller returns it when its look-up by [`crate::UnverifiedGrant::key_id`]
    /// finds nothing. Becomes 403.
    #[error("unknown valet signing key")]
    UnknownKey,
    /// A value given to build a grant or a key breaks its rule (control character, empty, too
    /// long, `not_before >= expires_at`, ...). Only returned when issuing, never when verifying.
    /// Becomes 400 when the value came from the client, 500 otherwise.
    #[error("invalid {field}: {reason}")]
    InvalidField {
        /// Which field: `tenant`, `path`, `key_id`, `grant_id`, `content_type`, ...
        field: &'static str,
        /// The rule it broke.
        reason: &'static str,
    },
}

impl ValetError {
    /// The stable, machine-readable code of this error, for problem+json's `code` member.
    pub fn code(&self) -> &'static str {
        match self {
            ValetError::Malformed(_) => "valet_malformed",
            ValetError::BadSignature => "valet_bad_signature",
            ValetError::Expired => "valet_expired",
            ValetError::NotYetValid => "valet_not_yet_valid",
            ValetError::WrongMethod => "valet_wrong_method",
            ValetError::UnknownKey => "valet_unknown_key",
            ValetError::InvalidField { .. } => "valet_invalid_field",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_stable() {
        let cases = [
            (ValetError::Malformed("x"), "valet_malformed"),
            (ValetError::BadSignature, "valet_bad_signature"),
            (ValetError::Expired, "valet_expired"),
            (ValetError::NotYetValid, "valet_not_yet_valid"),
            (ValetError::WrongMethod, "valet_wrong_method"),
            (ValetError::UnknownKey, "valet_unknown_key"),
            (ValetError::InvalidField { field: "path", reason: "x" }, "valet_invalid_field"),
        ];
        for (error, code) in cases {
            assert_eq!(error.code(), code);
            assert!(!error.to_string().is_empty());
        }
    }
}
