//! What the shard-router integration tests share: a database of each engine for one test.

use secrecy::SecretString;
use shardgate_shard_router::db::{Database, PoolConfig, Schema};
use sqlx::Connection;

/// The PostgreSQL server's maintenance database.
const PG_ADMIN: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// A shard database for one test: a SQLite file in a temp dir, or a PostgreSQL database dropped
/// by [`TestDb::drop_db`].
pub struct TestDb {
    /// The migrated shard database.
    pub db: Database,
    pg_name: Option<String>,
    _dir: tempfile::TempDir,
}

impl TestDb {
    /// A SQLite shard.
    pub async fn sqlite() -> Self {
        let test = Self::sqlite_unmigrated();
        test.db.migrate(Schema::Shard).await.unwrap();
        test
    }

    /// A PostgreSQL shard in a new database named after `prefix`.
    pub async fn postgres(prefix: &str) -> Self {
        let test = Self::postgres_unmigrated(prefix).await;
        test.db.migrate(Schema::Shard).await.unwrap();
        test
    }

    /// An empty SQLite database, no migration run.
    pub fn sqlite_unmigrated() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let url = SecretString::from(format!("sqlite://{}", dir.path().join("shard.db").display()));
        let db = Database::open(&url, &PoolConfig::default()).unwrap();
        Self { db, pg_name: None, _dir: dir }
    }

    /// An empty PostgreSQL database named after `prefix`, no migration run.
    pub async fn postgres_unmigrated(prefix: &str) -> Self {
        let name = format!("{prefix}_{}", unique_suffix());
        let mut admin = sqlx::PgConnection::connect(PG_ADMIN).await.expect("PostgreSQL on 127.0.0.1:5432");
        sqlx::query(&format!("CREATE DATABASE {name}")).execute(&mut admin).await.unwrap();
        let url = SecretString::from(format!("postgres://postgres@127.0.0.1:5432/{name}"));
        let db = Database::open(&url, &PoolConfig::default()).unwrap();
        Self { db, pg_name: Some(name), _dir: tempfile::tempdir().unwrap() }
    }

    /// Closes the pool and drops a PostgreSQL database.
    pub async fn drop_db(self) {
        self.db.close().await;
        if let Some(name) = self.pg_name {
            let mut admin = sqlx::PgConnection::connect(PG_ADMIN).await.unwrap();
            sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).execute(&mut admin).await.unwrap();
        }
    }
}

/// A suffix no other test run uses at the same time.
fn unique_suffix() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("{:x}_{}", nanos, std::process::id())
}
