//! How a copy moves its rows ([`CopyMethod`]) and what it did ([`Copied`]).

use crate::storage::db::Database;

/// How a copy moves its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CopyMethod {
    /// Binary `COPY` from PostgreSQL to PostgreSQL.
    Binary,
    /// Pages of rows through the engine-neutral pool, on any engines.
    Pages,
}

impl CopyMethod {
    /// The fastest method the two databases allow: [`CopyMethod::Binary`] between two
    /// PostgreSQL databases, else [`CopyMethod::Pages`].
    pub fn best(source: &Database, target: &Database) -> Self {
        if source.postgres().is_some() && target.postgres().is_some() { Self::Binary } else { Self::Pages }
    }
}

/// What a copy did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Copied {
    /// The method that ran (a binary copy asked of a SQLite shard runs in pages).
    pub method: CopyMethod,
    /// Rows read from the source.
    pub read: u64,
    /// Rows the target took (new keys, and keys whose version was older there).
    pub written: u64,
    /// Bytes read from the source (the binary stream, or the values of the pages).
    pub bytes: u64,
}
