//! The permission model: which HTTP methods a valet URL may be used with.

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

    /// The token used in the canonical string and in the `sg-perm` query parameter.
    pub fn as_str(self) -> &'static str {
        match self {
            Permission::Read => "read",
            Permission::Write => "write",
        }
    }

    /// The permission named by `token` (the inverse of [`Permission::as_str`]).
    pub fn parse(token: &str) -> Option<Self> {
        match token {
            "read" => Some(Permission::Read),
            "write" => Some(Permission::Write),
            _ => None,
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

    #[test]
    fn tokens_round_trip() {
        for permission in [Permission::Read, Permission::Write] {
            assert_eq!(Permission::parse(permission.as_str()), Some(permission));
        }
        assert_eq!(Permission::parse("READ"), None);
        assert_eq!(Permission::parse("delete"), None);
    }
}
