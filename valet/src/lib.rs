//! # shardgate-valet
//!
//! Valet keys: signed, time-limited URLs that grant one operation on one blob. This crate owns
//! the canonical string, signing and verification and the key ring; it does no I/O and knows
//! nothing of HTTP servers or databases.
//!
//! So far it holds the permission model the canonical form binds; signing and verification
//! arrive with the valet-key issue.

/// What a valet key lets its holder do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Permission {
    /// Download (`GET`, and `HEAD`, which is canonicalised as `GET`).
    Read,
    /// Upload (`PUT`).
    Write,
}

impl Permission {
    /// The permission an HTTP method needs, or `None` for methods valet URLs never allow.
    /// `HEAD` needs the same permission as `GET`.
    pub fn for_method(method: &str) -> Option<Self> {
        match method {
            "GET" | "HEAD" => Some(Permission::Read),
            "PUT" => Some(Permission::Write),
            _ => None,
        }
    }

    /// The token used in the canonical string.
    pub fn as_str(self) -> &'static str {
        match self {
            Permission::Read => "read",
            Permission::Write => "write",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_is_read_and_unknown_methods_are_refused() {
        assert_eq!(Permission::for_method("HEAD"), Some(Permission::Read));
        assert_eq!(Permission::for_method("GET"), Some(Permission::Read));
        assert_eq!(Permission::for_method("PUT"), Some(Permission::Write));
        assert_eq!(Permission::for_method("DELETE"), None);
        assert_eq!(Permission::for_method("get"), None);
    }
}
