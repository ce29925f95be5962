//! A catalog and shards in new PostgreSQL databases (dropped at the end of the test), and the
//! HS256 issuer that the `shardgate` processes started on them trust: the set-up shared by the
//! tests in `api/tests/` that run several processes on one PostgreSQL catalog. Knows nothing of
//! the processes themselves (that is `support`).

use serde_json::json;
use sqlx::Connection;

const PG_ADMIN: &str = "postgres://postgres@127.0.0.1:5432/postgres";
/// The issuer the processes trust, and its HS256 secret.
const ISSUER: &str = "crash";
const SECRET: &str = "process-test-secret-0123456789abcdef";

/// A token of the test issuer for `tenant` (none: an operator's token) with `scope`, valid for
/// ten minutes.
pub fn token(tenant: Option<&str>, scope: &str) -> String {
    use jsonwebtoken::{EncodingKey, Header, encode};
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let mut claims = json!({"iss": ISSUER, "sub": "test", "scope": scope, "iat": now, "exp": now + 600});
    if let Some(t) = tenant {
        claims["tenant"] = json!(t);
    }
    encode(&Header::default(), &claims, &EncodingKey::from_secret(SECRET.as_bytes())).unwrap()
}

/// New databases `<tag>_cat` (the catalog) and `<tag>_s0`, `<tag>_s1`, ... (the shards), where
/// the tag is a prefix and a number of the moment.
pub struct Databases {
    /// The catalog's database first, then shard `s<i>`'s at `1 + i`.
    pub names: Vec<String>,
    admin_db: sqlx::PgConnection,
}

impl Databases {
    /// Creates the catalog's database and `shards` shard databases.
    pub async fn create(prefix: &str, shards: usize) -> Self {
        let tag = format!(
            "{prefix}_{:x}",
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() % 0xffff_ffff
        );
        let names: Vec<String> =
            std::iter::once(format!("{tag}_cat")).chain((0..shards).map(|i| format!("{tag}_s{i}"))).collect();
        let mut admin_db = sqlx::PgConnection::connect(PG_ADMIN).await.expect("PostgreSQL on 127.0.0.1:5432");
        for name in &names {
            sqlx::query(&format!("CREATE DATABASE {name}")).execute(&mut admin_db).await.unwrap();
        }
        Self { names, admin_db }
    }

    /// The URL of database `names[i]`.
    pub fn url(&self, i: usize) -> String {
        format!("postgres://postgres@127.0.0.1:5432/{}", self.names[i])
    }

    /// The environment of an instance on these databases that trusts the test issuer:
    /// `SHARDGATE_STORAGE__CATALOG_URL`, `SHARDGATE_STORAGE__SHARDS` and `SHARDGATE_AUTH__ISSUERS`;
    /// with `redis`, a record cache in Redis on 127.0.0.1:6379 under a key prefix of its own.
    pub fn envs(&self, redis: bool) -> Vec<(String, String)> {
        let shards: Vec<String> =
            (1..self.names.len()).map(|i| format!("{{id=\"s{}\",url=\"{}\"}}", i - 1, self.url(i))).collect();
        let mut envs = vec![
            ("SHARDGATE_STORAGE__CATALOG_URL".to_owned(), self.url(0)),
            ("SHARDGATE_STORAGE__SHARDS".to_owned(), format!("[{}]", shards.join(","))),
            (
                "SHARDGATE_AUTH__ISSUERS".to_owned(),
                format!("[{{issuer=\"{ISSUER}\",algorithm=\"HS256\",secret=\"{SECRET}\",allow_any_audience=true}}]"),
            ),
        ];
        if redis {
            envs.push(("SHARDGATE_CACHE__REDIS_URL".to_owned(), "redis://127.0.0.1:6379".to_owned()));
            envs.push(("SHARDGATE_CACHE__KEY_PREFIX".to_owned(), self.names[0].clone()));
        }
        envs
    }

    /// Drops every database (the processes on them may still be connected).
    pub async fn drop_all(mut self) {
        for name in &self.names {
            sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                .execute(&mut self.admin_db)
                .await
                .unwrap();
        }
    }
}
