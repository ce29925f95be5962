//! Who is calling and what they may do.

use std::fmt;

/// One permission a token can carry (space-separated in the `scope` claim).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Read records and blobs of the token's tenant.
    Read,
    /// Write and delete records and blobs of the token's tenant.
    Write,
    /// Manage the tenant's indexes and valet keys.
    Manage,
    /// Platform administration (`/v1/admin/...`).
    Admin,
}

impl Scope {
    /// Parses one scope name.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "read" => Some(Scope::Read),
            "write" => Some(Scope::Write),
            "manage" => Some(Scope::Manage),
            "admin" => Some(Scope::Admin),
            _ => None,
        }
    }

    /// The scope's name in the `scope` claim.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Write => "write",
            Scope::Manage => "manage",
            Scope::Admin => "admin",
        }
    }

    const fn bit(self) -> u8 {
        match self {
            Scope::Read => 1,
            Scope::Write => 2,
            Scope::Manage => 4,
            Scope::Admin => 8,
        }
    }
}

/// A `scope` claim that is not scope names separated by single spaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "the `scope` claim must be scope names separated by single spaces, with no tab and no leading, trailing or \
     repeated space"
)]
pub struct ScopeClaimError;

/// A set of scopes.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct Scopes(u8);

impl Scopes {
    /// Parses a `scope` claim: scope names separated by single spaces (RFC 6749 §3.3), each of
    /// printable ASCII but `"` and `\\`; the empty claim is no scope. Unknown scope names are
    /// ignored (they may belong to other services sharing the issuer), but a claim of any other
    /// shape (a tab, a leading, trailing or doubled space) is refused: a claim other parsers
    /// could split differently grants nothing.
    pub fn parse_claim(claim: &str) -> Result<Self, ScopeClaimError> {
        if claim.is_empty() {
            return Ok(Self::default());
        }
        let mut bits = 0;
        for name in claim.split(' ') {
            if name.is_empty() || !name.bytes().all(|b| matches!(b, 0x21 | 0x23..=0x5b | 0x5d..=0x7e)) {
                return Err(ScopeClaimError);
            }
            bits |= Scope::parse(name).map_or(0, Scope::bit);
        }
        Ok(Self(bits))
    }

    /// A set of the given scopes.
    pub fn of(scopes: &[Scope]) -> Self {
        Self(scopes.iter().fold(0, |acc, s| acc | s.bit()))
    }

    /// Whether `scope` is in the set.
    pub fn contains(self, scope: Scope) -> bool {
        self.0 & scope.bit() != 0
    }

    /// The scopes as a space-separated claim value.
    pub fn to_claim(self) -> String {
        [Scope::Read, Scope::Write, Scope::Manage, Scope::Admin]
            .into_iter()
            .filter(|s| self.contains(*s))
            .map(Scope::as_str)
            .collect::<Vec<_>>()
            .join(" ")
    }
}

impl fmt::Debug for Scopes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Scopes({})", self.to_claim())
    }
}

/// The verified caller of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The `sub` claim, for logs and audit.
    pub subject: String,
    /// The `iss` claim of the issuer that verified the token.
    pub issuer: String,
    /// The tenant the token is bound to (`tenant` claim); `None` for platform tokens, the only
    /// ones that may carry [`Scope::Admin`] (a token with both is refused when verified).
    pub tenant: Option<String>,
    /// Granted scopes.
    pub scopes: Scopes,
    /// The `iat` claim (unix seconds), if the token has one: a token bound to a tenant is only
    /// accepted for a tenant created no later than this (see the api's `Caller::bound_tenant`).
    pub issued_at: Option<u64>,
}

impl Principal {
    /// Whether this caller may act on `tenant`'s data: the tenant must be the one in the token.
    /// Callers answer `false` with 404 (not 403), so other tenants' existence does not leak.
    pub fn is_bound_to(&self, tenant: &str) -> bool {
        self.tenant.as_deref() == Some(tenant)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_claims_round_trip_and_ignore_unknown_names() {
        let scopes = Scopes::parse_claim("write read openid").unwrap();
        assert!(scopes.contains(Scope::Read));
        assert!(scopes.contains(Scope::Write));
        assert!(!scopes.contains(Scope::Admin));
        assert_eq!(scopes.to_claim(), "read write");
        assert_eq!(Scopes::parse_claim(&scopes.to_claim()), Ok(scopes));
        assert_eq!(Scopes::parse_claim(""), Ok(Scopes::default()));
        assert_eq!(Scopes::parse_claim("api:read https://example.com/x"), Ok(Scopes::default()));
    }

    #[test]
    fn scope_claims_split_on_single_spaces_only() {
        for claim in ["read\tadmin", "read  write", " read", "read ", " ", "read\nwrite", "read\u{a0}write", "re\"ad"] {
            assert_eq!(Scopes::parse_claim(claim), Err(ScopeClaimError), "{claim:?}");
        }
    }

    #[test]
    fn binding_requires_the_same_tenant() {
        let p = Principal {
            subject: "s".into(),
            issuer: "i".into(),
            tenant: Some("acme".into()),
            scopes: Scopes::default(),
            issued_at: None,
        };
        assert!(p.is_bound_to("acme"));
        assert!(!p.is_bound_to("globex"));
        let admin = Principal { tenant: None, ..p };
        assert!(!admin.is_bound_to("acme"));
    }
}
