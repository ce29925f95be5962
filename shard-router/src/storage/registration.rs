//! What makes a database safe to be a shard: a URL every instance reaches as the same database
//! ([`check_shard_url`]), and an identity marker in the database itself
//! ([`claim_identity`]), so that one database can never be two shards.
//!
//! # The URL rule
//!
//! - An in-memory SQLite database (`sqlite::memory:`, `sqlite://:memory:`, `mode=memory`, an
//!   empty path, a `file:` URI or the `memdb` VFS) is never a shard: every connection of a pool
//!   would see a database of its own, empty and without tables.
//! - A SQLite file is a shard only when the catalog is SQLite too (the embedded default, or a
//!   configured `sqlite://` catalog): such a deployment is one process on one host. With a
//!   PostgreSQL catalog, several instances share the shard map, and each would open a file of
//!   its own on its own host under the same shard id.
//! - A PostgreSQL URL's TLS parameters must be ones the gateway honours as libpq would
//!   ([`crate::storage::pg_tls`]): `sslmode=allow`, `sslpassword`, `sslcrl`, `sslrootcert=system` under
//!   less than `verify-full`, or an `sslcert` without its `sslkey` are refused before any
//!   connection is made, as are files named that cannot be used. A TLS failure when the shard is
//!   first reached (no TLS at the server, a certificate not trusted or not for the host name, a
//!   client certificate refused) is [`Error::Tls`]. The identity marker below is written and
//!   checked over whatever TLS the URL asks for.
//!
//! # The identity marker
//!
//! Each shard database holds one row `shard_identity (catalog_id, shard_id)`: the id of the
//! catalog it belongs to (`shard_map.catalog_id`, random, written once by catalog migration
//! 0009) and its shard id. Registering writes it if the table is empty; a database that carries
//! any other marker (another shard id of this catalog, registered or removed, or another
//! catalog's) is refused. Removing a shard erases its marker, so the database may be registered
//! again under any id; if that could not be done (the database was unreachable), it can be
//! registered again only under its old id. A shard registered before markers existed gets its
//! marker when an instance opens it.
//!
//! A registered shard's URL may change (a rotated password, a new host name): the new URL must
//! reach a database that carries the shard's own marker ([`read_identity`],
//! [`check_same_shard`]); nothing is written through it.

use secrecy::{ExposeSecret, SecretString};

use crate::clock::now_ms;
use crate::error::Error;
use crate::ids::ShardId;
use crate::storage::db::{Database, Engine};

/// Checks that `url` may be registered as a shard of a catalog on `catalog`: returns the
/// shard's engine, or [`Error::InvalidDatabaseUrl`] (no known scheme, TLS parameters that cannot
/// be honoured), [`Error::Tls`] (a TLS file that cannot be used) or [`Error::UnsafeShardUrl`]
/// (see the module's rules).
pub fn check_shard_url(url: &SecretString, catalog: Engine) -> Result<Engine, Error> {
    let raw = url.expose_secret();
    let engine = Engine::of_url(raw)?;
    if engine == Engine::Postgres {
        // Each host of a URL that names several, as the pools will connect to it.
        for host_url in crate::storage::hosts::split_hosts(raw)?.urls {
            crate::storage::pg_tls::prepare_url(&host_url, |var| std::env::var(var).ok())?;
        }
    }
    if engine == Engine::Sqlite {
        if is_in_memory_sqlite(raw) {
            return Err(Error::UnsafeShardUrl(
                "an in-memory SQLite database cannot be a shard: every connection would see an empty database \
                 of its own; give a file path (sqlite:///var/lib/shardgate/shard-4.db) or a postgres:// URL"
                    .to_owned(),
            ));
        }
        if catalog != Engine::Sqlite {
            return Err(Error::UnsafeShardUrl(
                "a SQLite shard needs a SQLite catalog: with a PostgreSQL catalog every gateway instance would \
                 open a file of its own on its own host; register a postgres:// shard"
                    .to_owned(),
            ));
        }
    }
    Ok(engine)
}

/// Whether a `sqlite:` URL names an in-memory database rather than a file.
fn is_in_memory_sqlite(raw: &str) -> bool {
    let rest = raw.trim_start_matches("sqlite://").trim_start_matches("sqlite:");
    let (path, params) = rest.split_once('?').unwrap_or((rest, ""));
    let path = path.trim();
    let memory_param = url::form_urlencoded::parse(params.as_bytes())
        .any(|(key, value)| (key == "mode" && value == "memory") || (key == "vfs" && value.contains("memdb")));
    path.is_empty() || path == ":memory:" || path.starts_with("file:") || memory_param
}

/// The identity marker a shard database carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardMarker {
    /// The catalog it belongs to.
    pub catalog_id: String,
    /// Its shard id there.
    pub shard_id: String,
}

/// What [`claim_identity`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The database had no marker; it now carries ours.
    Written,
    /// It already carried ours.
    Ours,
    /// It carries another marker, left as it is.
    Other(ShardMarker),
}

impl Claim {
    /// [`Error::ShardDatabaseClaimed`] for a database that carries another marker; `Ok`
    /// otherwise. `registered` says whether a shard id is registered in this catalog now (the
    /// message differs for a removed shard's leftover marker).
    pub fn refuse_other(
        &self,
        shard: &ShardId,
        catalog_id: &str,
        registered: impl Fn(&str) -> bool,
    ) -> Result<(), Error> {
        let Claim::Other(marker) = self else { return Ok(()) };
        let holder = if marker.catalog_id != catalog_id {
            format!("shard {} of another shardgate catalog (catalog id {})", marker.shard_id, marker.catalog_id)
        } else if registered(&marker.shard_id) {
            format!("shard {} of this catalog", marker.shard_id)
        } else {
            format!(
                "marked as shard {} of this catalog, which was removed without erasing its marker; register it \
                 again as {}",
                marker.shard_id, marker.shard_id
            )
        };
        Err(Error::ShardDatabaseClaimed { shard: shard.clone(), holder })
    }
}

/// Writes the marker `(catalog_id, shard)` into `db` unless it carries one already, and says
/// which marker it carries now. Two instances claiming one database at once cannot both win:
/// the row is inserted only if there is none, then read back.
pub async fn claim_identity(db: &Database, shard: &ShardId, catalog_id: &str) -> Result<Claim, Error> {
    let inserted = sqlx::query(
        "INSERT INTO shard_identity (id, catalog_id, shard_id, claimed_at) VALUES (1, $1, $2, $3) \
         ON CONFLICT (id) DO NOTHING",
    )
    .bind(catalog_id)
    .bind(shard.as_str())
    .bind(now_ms())
    .execute(&db.pool)
    .await
    .map_err(|e| shard_err(shard, e))?;
    if inserted.rows_affected() == 1 {
        return Ok(Claim::Written);
    }
    let (found_catalog, found_shard): (String, String) =
        sqlx::query_as("SELECT catalog_id, shard_id FROM shard_identity WHERE id = 1")
            .fetch_one(&db.pool)
            .await
            .map_err(|e| shard_err(shard, e))?;
    if found_catalog == catalog_id && found_shard == shard.as_str() {
        return Ok(Claim::Ours);
    }
    Ok(Claim::Other(ShardMarker { catalog_id: found_catalog, shard_id: found_shard }))
}

/// Erases `db`'s marker if it is `(catalog_id, shard)`: the shard was removed (or its
/// registration did not complete), so the database may become a shard again.
pub async fn release_identity(db: &Database, shard: &ShardId, catalog_id: &str) -> Result<(), Error> {
    sqlx::query("DELETE FROM shard_identity WHERE id = 1 AND catalog_id = $1 AND shard_id = $2")
        .bind(catalog_id)
        .bind(shard.as_str())
        .execute(&db.pool)
        .await
        .map_err(|e| shard_err(shard, e))?;
    Ok(())
}

/// The marker `db` carries, without writing one: `None` if it carries none (or has no marker
/// table: it was never a shard). Used to check that a new URL for a registered shard reaches
/// the same database ([`check_same_shard`]).
pub async fn read_identity(db: &Database, shard: &ShardId) -> Result<Option<ShardMarker>, Error> {
    let table = match db.engine {
        Engine::Sqlite => "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'shard_identity'",
        Engine::Postgres => {
            "SELECT COUNT(*) FROM pg_catalog.pg_tables WHERE tablename = 'shard_identity' \
                             AND schemaname = ANY (current_schemas(false))"
        }
    };
    let tables: i64 = sqlx::query_scalar(table).fetch_one(&db.pool).await.map_err(|e| shard_err(shard, e))?;
    if tables == 0 {
        return Ok(None);
    }
    let found: Option<(String, String)> =
        sqlx::query_as("SELECT catalog_id, shard_id FROM shard_identity WHERE id = 1")
            .fetch_optional(&db.pool)
            .await
            .map_err(|e| shard_err(shard, e))?;
    Ok(found.map(|(catalog_id, shard_id)| ShardMarker { catalog_id, shard_id }))
}

/// [`Error::ShardIdentityMismatch`] unless `found` (what [`read_identity`] read through a new
/// URL of `shard`) is `shard`'s own marker in catalog `catalog_id`.
pub fn check_same_shard(found: Option<&ShardMarker>, shard: &ShardId, catalog_id: &str) -> Result<(), Error> {
    let found = match found {
        Some(m) if m.catalog_id == catalog_id && m.shard_id == shard.as_str() => return Ok(()),
        Some(m) if m.catalog_id == catalog_id => format!("it is shard {} of this catalog", m.shard_id),
        Some(m) => format!("it is shard {} of another shardgate catalog (catalog id {})", m.shard_id, m.catalog_id),
        None => "it carries no shard identity marker (another database, or one never registered)".to_owned(),
    };
    Err(Error::ShardIdentityMismatch { shard: shard.clone(), found })
}

/// A database URL as it may be shown (in the audit log, a log line): scheme, user, host(s), port
/// and database; never the password or the query (which may hold `sslpassword`). A URL that
/// does not parse is not shown at all.
pub fn shown_database_url(url: &SecretString) -> String {
    let raw = url.expose_secret();
    if raw.starts_with("sqlite:") {
        let path = raw.split_once('?').map_or(raw, |(path, _)| path);
        return path.to_owned();
    }
    let hidden = || "(a URL that is not shown)".to_owned();
    let Ok(list) = crate::storage::hosts::split_hosts(raw) else { return hidden() };
    let Ok(parsed) = list.urls.iter().map(|u| url::Url::parse(u)).collect::<Result<Vec<_>, _>>() else {
        return hidden();
    };
    let hosts: Vec<String> = parsed
        .iter()
        .map(|p| match p.port() {
            Some(port) => format!("{}:{port}", p.host_str().unwrap_or("")),
            None => p.host_str().unwrap_or("").to_owned(),
        })
        .collect();
    let first = &parsed[0];
    let user = if first.username().is_empty() { String::new() } else { format!("{}@", first.username()) };
    format!("{}://{user}{}{}", first.scheme(), hosts.join(","), first.path())
}

fn shard_err(shard: &ShardId, source: sqlx::Error) -> Error {
    Error::Database { target: format!("shard {shard}"), source }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(url: &str, catalog: Engine) -> Result<Engine, Error> {
        check_shard_url(&SecretString::from(url.to_owned()), catalog)
    }

    #[test]
    fn a_shown_database_url_has_no_password_and_no_query() {
        let url = SecretString::from(
            "postgres://app:s3cr%40t@db.internal:6432/shard4?sslmode=verify-full&sslpassword=k".to_owned(),
        );
        assert_eq!(shown_database_url(&url), "postgres://app@db.internal:6432/shard4");
        let file = SecretString::from("sqlite:///var/lib/s.db?mode=rwc".to_owned());
        assert_eq!(shown_database_url(&file), "sqlite:///var/lib/s.db");
        assert_eq!(
            shown_database_url(&SecretString::from("postgres://u:p@[bad".to_owned())),
            "(a URL that is not shown)"
        );
        let several = SecretString::from(
            "postgres://app:s3cr%40t@pg-a:5432,pg-b/shard4?target_session_attrs=read-write&sslpassword=k".to_owned(),
        );
        assert_eq!(shown_database_url(&several), "postgres://app@pg-a:5432,pg-b/shard4");
    }

    #[test]
    fn in_memory_sqlite_is_never_a_shard() {
        for url in [
            "sqlite::memory:",
            "sqlite://:memory:",
            "sqlite://",
            "sqlite:",
            "sqlite://?mode=memory",
            "sqlite:///tmp/x.db?mode=memory&cache=shared",
            "sqlite://file::memory:?cache=shared",
            "sqlite:///tmp/x.db?vfs=memdb",
        ] {
            assert!(matches!(check(url, Engine::Sqlite), Err(Error::UnsafeShardUrl(_))), "{url}");
            assert!(matches!(check(url, Engine::Postgres), Err(Error::UnsafeShardUrl(_))), "{url}");
        }
    }

    #[test]
    fn sqlite_files_need_a_sqlite_catalog_and_postgres_tls_parameters_must_be_honourable() {
        assert_eq!(check("sqlite:///var/lib/s.db", Engine::Sqlite).unwrap(), Engine::Sqlite);
        assert_eq!(check("sqlite://./data/s.db?mode=rwc", Engine::Sqlite).unwrap(), Engine::Sqlite);
        assert!(matches!(check("sqlite:///var/lib/s.db", Engine::Postgres), Err(Error::UnsafeShardUrl(_))));
        for catalog in [Engine::Sqlite, Engine::Postgres] {
            assert_eq!(check("postgres://u@db/s", catalog).unwrap(), Engine::Postgres);
            assert_eq!(check("postgres://u@db/s?sslrootcert=system", catalog).unwrap(), Engine::Postgres);
            for refused in ["postgres://u@db/s?sslmode=allow", "postgres://u@db/s?sslmode=require&sslrootcert=system"] {
                assert!(matches!(check(refused, catalog), Err(Error::InvalidDatabaseUrl(_))), "{refused}");
            }
            let unreadable = "postgres://u@db/s?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem";
            assert!(matches!(check(unreadable, catalog), Err(Error::Tls { .. })), "{unreadable}");
            assert!(matches!(check("mysql://db/s", catalog), Err(Error::InvalidDatabaseUrl(_))));
        }
    }
}
