//! The catalog's secrets at rest, on both engines (`storage.secrets_key_file`): after a start
//! with a key file, a dump of the catalog (`pg_dump`; every row of every table of SQLite's)
//! shows no shard URL, no password and no valet signing key, while the gateway reads them as
//! before; rotating the key file's key follows the documented steps (add, restart, remove,
//! restart) and an instance with only a dropped key, or with none, refuses to start with a reason.
//! A sealed URL moved onto another shard's row does not open.

use std::path::{Path, PathBuf};

use secrecy::{ExposeSecret, SecretString};
use shardgate_shard_router::catalog::{Audit, is_sealed};
use shardgate_shard_router::router::{ShardRouter, StorageConfig};
use shardgate_shard_router::{ShardId, ShardSeed};
use sqlx::{Connection, Row};

const PG_ADMIN: &str = "postgres://postgres@127.0.0.1:5432";

/// Two key-encryption keys (32 bytes each, base64).
const K1: &str = "k1 MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
const K2: &str = "k2 ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA=";

/// A valet signing key's secret; its hex form must never show in a dump.
const SIGNING_SECRET: [u8; 32] = *b"valet-signing-secret-of-32-bytes";

struct Fleet {
    dir: tempfile::TempDir,
    config: StorageConfig,
    /// PostgreSQL databases to drop (catalog first).
    pg: Vec<String>,
    /// The shards' URLs (with a password in PostgreSQL's).
    urls: Vec<String>,
    /// What no dump may show: the shards' URLs, their passwords, the signing secret in hex.
    secrets: Vec<String>,
}

impl Fleet {
    async fn new(engine: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut config = StorageConfig::default();
        let mut pg = Vec::new();
        let mut secrets = Vec::new();
        let mut urls = Vec::new();
        let suffix = format!("{:x}_{}", std::time::UNIX_EPOCH.elapsed().unwrap().as_nanos(), std::process::id());
        if engine == "postgres" {
            let mut admin = sqlx::PgConnection::connect(&format!("{PG_ADMIN}/postgres")).await.unwrap();
            for part in ["cat", "s0", "s1"] {
                let name = format!("sgseal_{part}_{suffix}");
                sqlx::query(&format!("CREATE DATABASE {name}")).execute(&mut admin).await.unwrap();
                pg.push(name);
            }
            config.catalog_url = Some(SecretString::from(format!("{PG_ADMIN}/{}", pg[0])));
            for (i, name) in pg[1..].iter().enumerate() {
                // The server trusts loopback: the password is never checked, only stored.
                let url = format!("postgres://postgres:pw-{i}-{suffix}@127.0.0.1:5432/{name}");
                urls.push(url.clone());
                secrets.push(format!("pw-{i}-{suffix}"));
                config.shards.push(seed(&format!("shard-{i}"), url));
            }
        } else {
            config.embedded_shards = 2;
            for i in 0..2 {
                urls.push(format!("sqlite://{}", dir.path().join("shards").join(format!("shard-{i}.db")).display()));
            }
        }
        secrets.extend(urls.iter().cloned());
        secrets.push(hex::encode(SIGNING_SECRET));
        Self { dir, config, pg, urls, secrets }
    }

    /// A key file named `name` holding `lines`.
    fn key_file(&self, name: &str, lines: &[&str]) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        path
    }

    async fn open(&self, key_file: Option<PathBuf>) -> Result<ShardRouter, String> {
        let config = StorageConfig { secrets_key_file: key_file, ..self.config.clone() };
        ShardRouter::open(&config, self.dir.path()).await.map_err(|e| e.to_string())
    }

    /// The catalog as a dump shows it: `pg_dump --data-only`, or every row of every SQLite table.
    async fn dump(&self) -> String {
        if let Some(catalog) = self.pg.first() {
            let out = std::process::Command::new("pg_dump")
                .args(["--data-only", "-h", "127.0.0.1", "-U", "postgres", catalog])
                .output()
                .expect("pg_dump (PostgreSQL's client)");
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            return String::from_utf8(out.stdout).unwrap();
        }
        sqlite_dump(&self.dir.path().join("catalog.db")).await
    }

    async fn stored_urls(&self) -> Vec<String> {
        sqlx::any::install_default_drivers();
        let url = match self.pg.first() {
            Some(catalog) => format!("{PG_ADMIN}/{catalog}"),
            None => format!("sqlite://{}", self.dir.path().join("catalog.db").display()),
        };
        let mut conn = sqlx::AnyConnection::connect(&url).await.unwrap();
        sqlx::query("SELECT url FROM shards ORDER BY id")
            .fetch_all(&mut conn)
            .await
            .unwrap()
            .iter()
            .map(|row| row.get::<String, _>(0))
            .collect()
    }

    async fn catalog_sql(&self, sql: &str) {
        sqlx::any::install_default_drivers();
        let url = match self.pg.first() {
            Some(catalog) => format!("{PG_ADMIN}/{catalog}"),
            None => format!("sqlite://{}", self.dir.path().join("catalog.db").display()),
        };
        let mut conn = sqlx::AnyConnection::connect(&url).await.unwrap();
        sqlx::query(sql).execute(&mut conn).await.unwrap();
    }

    async fn wrapping_keys(&self) -> Vec<String> {
        let dump = self.dump().await;
        ["k1", "k2"]
            .into_iter()
            .filter(|k| dump.contains(&format!("data-1\t{k}")) || dump.contains(&format!("'data-1','{k}'")))
            .map(str::to_owned)
            .collect()
    }

    async fn drop(self) {
        if self.pg.is_empty() {
            return;
        }
        let mut admin = sqlx::PgConnection::connect(&format!("{PG_ADMIN}/postgres")).await.unwrap();
        for name in &self.pg {
            sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).execute(&mut admin).await.unwrap();
        }
    }
}

fn seed(id: &str, url: String) -> ShardSeed {
    ShardSeed { id: ShardId::parse(id).unwrap(), url: SecretString::from(url), password_file: None }
}

/// The first column of every row `sql` selects, as text.
async fn first_column(conn: &mut sqlx::AnyConnection, sql: &str) -> Vec<String> {
    sqlx::query(sql).fetch_all(conn).await.unwrap().iter().map(|row| row.get(0)).collect()
}

/// Every row of every table of the SQLite database at `path`, each value quoted as SQL text.
async fn sqlite_dump(path: &Path) -> String {
    sqlx::any::install_default_drivers();
    let mut conn = sqlx::AnyConnection::connect(&format!("sqlite://{}", path.display())).await.unwrap();
    let tables = first_column(&mut conn, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").await;
    let mut dump = String::new();
    for table in tables {
        let columns = first_column(&mut conn, &format!("SELECT name FROM pragma_table_info('{table}')")).await;
        let quoted = columns.iter().map(|c| format!("quote(\"{c}\")")).collect::<Vec<_>>().join(" || ',' || ");
        for row in sqlx::query(&format!("SELECT {quoted} FROM \"{table}\"")).fetch_all(&mut conn).await.unwrap() {
            dump.push_str(&format!("{table}: {}\n", row.get::<String, _>(0)));
        }
    }
    dump
}

fn audit() -> Audit {
    Audit {
        actor: "test".to_owned(),
        tenant: None,
        action: "valet_key.rotate",
        target: "valet_key:v1".to_owned(),
        request_id: "test".to_owned(),
        client_request_id: None,
        client_address: None,
    }
}

/// What the gateway reads of the catalog's secrets: the shards' URLs and the signing secret.
async fn read_back(router: &ShardRouter) -> (Vec<String>, Vec<[u8; 32]>) {
    let shards = router.catalog().list_shards().await.unwrap();
    let keys = router.catalog().valet_keys().await.unwrap();
    (shards.iter().map(|s| s.url.expose_secret().to_owned()).collect(), keys.iter().map(|k| k.secret).collect())
}

async fn a_catalog_sealed_later_shows_no_secret_and_its_key_rotates(engine: &str) {
    let fleet = Fleet::new(engine).await;
    // Before: a catalog in the clear, as every catalog was until now. The dump shows all.
    let router = fleet.open(None).await.unwrap();
    router.catalog().rotate_valet_key("v1", &SIGNING_SECRET, &audit()).await.unwrap();
    let clear = read_back(&router).await;
    drop(router);
    let dump = fleet.dump().await;
    for secret in &fleet.secrets {
        assert!(dump.contains(secret.as_str()), "the dump of a clear catalog shows {secret}, so the check can fail");
    }

    // A start with a key file seals what is stored in the clear; the gateway reads the same.
    let k1 = fleet.key_file("k1.key", &[K1]);
    let router = fleet.open(Some(k1.clone())).await.unwrap();
    assert_eq!(read_back(&router).await, clear);
    drop(router);
    if engine == "sqlite" {
        // docs/security.md: sealing leaves the old clear rows in free pages until VACUUM.
        fleet.catalog_sql("VACUUM").await;
    }
    let dump = fleet.dump().await;
    for secret in &fleet.secrets {
        assert!(!dump.contains(secret.as_str()), "a sealed catalog's dump shows {secret}:\n{dump}");
    }
    let sealed = fleet.stored_urls().await;
    assert!(sealed.iter().all(|url| is_sealed(url)), "{sealed:?}");
    assert_eq!(fleet.wrapping_keys().await, ["k1"]);

    // Rotation, step 1: the new key first, the old one still listed: the data key is wrapped
    // under both, and the secrets themselves are not re-encrypted.
    let both = fleet.key_file("k2-k1.key", &[K2, K1]);
    let router = fleet.open(Some(both)).await.unwrap();
    assert_eq!(read_back(&router).await, clear);
    drop(router);
    assert_eq!(fleet.wrapping_keys().await, ["k1", "k2"]);
    assert_eq!(fleet.stored_urls().await, sealed, "rotation rewraps the data key only");

    // Step 2: the old key removed: its wrapping goes.
    let k2 = fleet.key_file("k2.key", &[K2]);
    let router = fleet.open(Some(k2.clone())).await.unwrap();
    assert_eq!(read_back(&router).await, clear);
    drop(router);
    assert_eq!(fleet.wrapping_keys().await, ["k2"]);

    // An instance left with only the old key, or with none, refuses to start and says why.
    let refused = fleet.open(Some(k1)).await.unwrap_err();
    assert!(
        refused.contains("none of its keys (k1) opens the catalog's data key data-1, which is wrapped under k2"),
        "{refused}"
    );
    let refused = fleet.open(None).await.unwrap_err();
    assert!(refused.contains("secrets_key_file is not set"), "{refused}");
    assert!(!refused.contains("pw-"), "{refused}");

    // A sealed URL copied onto another shard's row does not open as that shard's.
    fleet
        .catalog_sql(&format!("UPDATE shards SET url = '{}' WHERE id = 'shard-1'", sealed[0].replace('\'', "''")))
        .await;
    let refused = fleet.open(Some(k2)).await.unwrap_err();
    assert!(refused.contains("shards.url/shard-1") && refused.contains("does not open"), "{refused}");
    fleet.drop().await;
}

async fn a_catalog_sealed_from_its_first_start_never_holds_a_secret_in_the_clear(engine: &str) {
    let fleet = Fleet::new(engine).await;
    let key = fleet.key_file("k1.key", &[K1]);
    let router = fleet.open(Some(key.clone())).await.unwrap();
    router.catalog().rotate_valet_key("v1", &SIGNING_SECRET, &audit()).await.unwrap();
    // A URL changed through the API (PATCH /v1/admin/shards/{id}) is sealed too.
    let id = ShardId::parse("shard-1").unwrap();
    let option = if engine == "postgres" { "application_name=rotated" } else { "mode=rwc" };
    let new_url = format!("{}?{option}", fleet.urls[1]);
    router.catalog().set_shard_url(&id, &SecretString::from(new_url.clone()), 1, &audit()).await.unwrap();
    let (urls, keys) = read_back(&router).await;
    assert_eq!(urls[1], new_url);
    assert_eq!(keys, [SIGNING_SECRET]);
    drop(router);
    if engine == "sqlite" {
        // Nothing was ever written in the clear: the file's own bytes (free pages included) show
        // no secret.
        let bytes = std::fs::read(fleet.dir.path().join("catalog.db")).unwrap();
        let wal = std::fs::read(fleet.dir.path().join("catalog.db-wal")).unwrap_or_default();
        let text = String::from_utf8_lossy(&[bytes, wal].concat()).into_owned();
        for secret in fleet.secrets.iter().chain([&new_url]) {
            assert!(!text.contains(secret.as_str()), "the catalog file holds {secret}");
        }
    }
    let dump = fleet.dump().await;
    for secret in fleet.secrets.iter().chain([&new_url]) {
        assert!(!dump.contains(secret.as_str()), "the dump shows {secret}");
    }
    let router = fleet.open(Some(key)).await.unwrap();
    assert_eq!(read_back(&router).await, (urls, keys), "a restart reads them back");
    drop(router);
    fleet.drop().await;
}

macro_rules! on_both_engines {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(#[tokio::test] async fn $name() { super::$name("sqlite").await })*
        }
        mod postgres {
            $(#[tokio::test] async fn $name() { super::$name("postgres").await })*
        }
    };
}

on_both_engines!(
    a_catalog_sealed_later_shows_no_secret_and_its_key_rotates,
    a_catalog_sealed_from_its_first_start_never_holds_a_secret_in_the_clear,
);
