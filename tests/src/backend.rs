//! The database engines a test app runs on: which one, the PostgreSQL databases a test creates
//! (and drops, even when it panics), and direct access to a shard database.

use std::sync::Mutex;

use sqlx::Connection;

use crate::TestApp;

/// The PostgreSQL server the `postgres` variants use (trust auth, no password).
pub const POSTGRES_SERVER: &str = "postgres://postgres@127.0.0.1:5432";
/// The ids of the four shards every test app starts with, on both engines.
pub const SEEDED_SHARDS: [&str; 4] = ["shard-0", "shard-1", "shard-2", "shard-3"];
/// Number of virtual shards.
pub const VSHARD_COUNT: u64 = 1024;

/// The database engine a test app runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The embedded default: SQLite catalog and four SQLite shards in the data directory.
    Sqlite,
    /// A PostgreSQL catalog and four PostgreSQL shards, each its own fresh database.
    Postgres,
}

impl Backend {
    /// The `engine` string the admin API reports for shards of this backend.
    pub fn engine(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

/// PostgreSQL databases created for one test; dropped (with `FORCE`) on drop, from a thread of
/// its own so that it happens even while a test panics inside an async runtime.
#[derive(Debug, Default)]
pub struct PgDatabases {
    names: Mutex<Vec<String>>,
}

impl PgDatabases {
    /// Creates a database with a fresh unique name ending in `suffix` and returns its URL.
    pub async fn create(&self, prefix: &str, suffix: &str) -> String {
        let name = format!("{prefix}_{suffix}");
        self.names.lock().unwrap().push(name.clone());
        let mut conn = maintenance_connection().await.expect("PostgreSQL at 127.0.0.1:5432 accepts connections");
        sqlx::query(&format!("CREATE DATABASE \"{name}\"")).execute(&mut conn).await.expect("create database");
        conn.close().await.ok();
        format!("{POSTGRES_SERVER}/{name}")
    }

    /// Drops one database now (to simulate an outage).
    pub async fn drop_now(&self, name: &str) {
        let mut conn = maintenance_connection().await.unwrap();
        drop_database(&mut conn, name).await.unwrap();
        conn.close().await.ok();
    }
}

impl Drop for PgDatabases {
    fn drop(&mut self) {
        let names = std::mem::take(&mut *self.names.lock().unwrap_or_else(|e| e.into_inner()));
        if names.is_empty() {
            return;
        }
        let cleanup = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async move {
                let Ok(mut conn) = maintenance_connection().await else {
                    eprintln!("cannot connect to PostgreSQL to drop test databases {names:?}");
                    return;
                };
                for name in names {
                    if let Err(e) = drop_database(&mut conn, &name).await {
                        eprintln!("cannot drop test database {name}: {e}");
                    }
                }
                conn.close().await.ok();
            });
        });
        cleanup.join().ok();
    }
}

/// A connection to the server's `postgres` database, from which databases are created and dropped.
async fn maintenance_connection() -> Result<sqlx::PgConnection, sqlx::Error> {
    sqlx::PgConnection::connect(&format!("{POSTGRES_SERVER}/postgres")).await
}

/// `DROP DATABASE IF EXISTS ... WITH (FORCE)`: connected sessions are ended.
async fn drop_database(conn: &mut sqlx::PgConnection, name: &str) -> Result<(), sqlx::Error> {
    sqlx::query(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)")).execute(conn).await.map(drop)
}

/// Opens a shard database directly (read access for placement checks).
pub async fn open_shard(url: &str) -> sqlx::AnyPool {
    sqlx::any::install_default_drivers();
    sqlx::pool::PoolOptions::<sqlx::Any>::new()
        .max_connections(1)
        .connect(url)
        .await
        .unwrap_or_else(|e| panic!("cannot open shard database: {e}"))
}

impl TestApp {
    /// The rows `sql` selects in each seeded shard database, shard after shard.
    pub async fn rows_on_every_shard<T>(&self, sql: &str) -> Vec<T>
    where
        T: for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow> + Send + Unpin,
    {
        let mut all = Vec::new();
        for (_, url) in self.shard_urls() {
            let pool = open_shard(&url).await;
            all.extend(sqlx::query_as::<_, T>(sql).fetch_all(&pool).await.unwrap());
            pool.close().await;
        }
        all
    }
}
