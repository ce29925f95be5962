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

/// A set of scopes.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct Scopes(u8);

impl Scopes {
    /// Parses a space-separated `scope` claim; unknown scope names are ignored (they may belong
    /// to other services sharing the issuer).
    pub fn from_claim(claim: &str) -> Self {
        Self(claim.split_ascii_whitespace().filter_map(Scope::parse).fold(0, |acc, s| acc | s.bit()))
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
    /// The tenant the token is bound to (`tenant` claim); `None` for platform tokens.
    pub tenant: Option<String>,
    /// Granted scopes.
    pub scopes: Scopes,
    /// The `iat` claim (unix seconds), if the token has one: a token bound to a tenant is only
    /// accepted for a tenant created no later than this (see the api's `Caller::for_tenant`).
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
        let scopes = Scopes::from_claim("write  read openid");
        assert!(scopes.contains(Scope::Read));
        assert!(scopes.contains(Scope::Write));
        assert!(!scopes.contains(Scope::Admin));
        assert_eq!(scopes.to_claim(), "read write");
        assert_eq!(Scopes::from_claim(""), Scopes::default());
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
