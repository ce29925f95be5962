//! The crate's one error type. Only `api` turns it into a response; each variant says which
//! status and which stable problem+json `code` ([`ValetError::code`]) it becomes.
//!
//! Messages never contain request data (no parameter values, no signatures), so an error can be
//! logged as is.

/// Why a valet URL was refused, or why a grant or key could not be built.
///
/// The first six variants come from this crate's own checks; the next five name refusals that
/// need state or the request (the key ring, the catalog's grant rows, the upload's headers), which
/// the caller decides and reports with them, so every valet refusal has one type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ValetError {
    /// The method, tenant, path or query of a valet request is not well formed: a required
    /// `sg-` parameter is missing, repeated or unknown, a number is not canonical decimal, a
    /// value has a bad percent escape or a forbidden character, the scheme version is not 1.
    /// Becomes 403 `valet_malformed`.
    #[error("malformed valet URL: {0}")]
    Malformed(&'static str),
    /// The signature is not the HMAC of this request's canonical string under the key the URL
    /// names: some signed part of the URL was changed, or the key is not the one that signed it.
    /// Becomes 403 `valet_bad_signature`.
    #[error("valet signature does not match")]
    BadSignature,
    /// The clock has reached `expires_at` (there is no grace period). Becomes 403 `valet_expired`.
    #[error("valet URL has expired")]
    Expired,
    /// The clock is before `not_before`. Becomes 403 `valet_not_yet_valid`.
    #[error("valet URL is not valid yet")]
    NotYetValid,
    /// The HTTP method is not `GET`, `HEAD` or `PUT`, or its class (read or write) is not the
    /// URL's permission. Becomes 403 `valet_wrong_method`.
    #[error("the HTTP method is not allowed by this valet URL")]
    WrongMethod,
    /// No key has the URL's key id: [`crate::KeyRing::verifying_key`] found none. Becomes 403
    /// `valet_unknown_key`.
    #[error("unknown valet signing key")]
    UnknownKey,
    /// The key that signed the URL was retired ([`crate::KeyState::check_verifies`]): every URL
    /// it signed is refused, after its signature proved it genuine. Becomes 403
    /// `valet_key_retired`.
    #[error("the key that signed this URL was retired")]
    KeyRetired,
    /// The URL is genuine but its grant id was never recorded by the issuer. Becomes 403
    /// `valet_unknown_grant`.
    #[error("this valet key was never issued here")]
    UnknownGrant,
    /// The grant was revoked. Becomes 403 `valet_revoked`.
    #[error("this valet key was revoked")]
    Revoked,
    /// A single-use grant was used already. Becomes 403 `valet_used`.
    #[error("this single-use valet key was used already")]
    Used,
    /// An upload's `Content-Type` is not the one the grant signed
    /// ([`crate::Grant::check_upload_content_type`]). Becomes 415 `valet_content_type`.
    #[error("this valet key uploads another media type only")]
    WrongContentType,
    /// A value given to build a grant or a key breaks its rule (control character, empty, too
    /// long, `not_before >= expires_at`, ...). Only returned when issuing, never when verifying.
    /// The api issues grants from the client's request body, so it becomes 400 `invalid_body`
    /// ([`ValetError::code`] says `valet_invalid_field` for callers that want their own code).
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
            ValetError::KeyRetired => "valet_key_retired",
            ValetError::UnknownGrant => "valet_unknown_grant",
            ValetError::Revoked => "valet_revoked",
            ValetError::Used => "valet_used",
            ValetError::WrongContentType => "valet_content_type",
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
            (ValetError::KeyRetired, "valet_key_retired"),
            (ValetError::UnknownGrant, "valet_unknown_grant"),
            (ValetError::Revoked, "valet_revoked"),
            (ValetError::Used, "valet_used"),
            (ValetError::WrongContentType, "valet_content_type"),
            (ValetError::InvalidField { field: "path", reason: "x" }, "valet_invalid_field"),
        ];
        for (error, code) in cases {
            assert_eq!(error.code(), code);
            assert!(!error.to_string().is_empty());
        }
    }
}
