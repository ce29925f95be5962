//! Two `shardgate serve` processes share a PostgreSQL catalog, PostgreSQL shards and Redis:
//! writes through one are never read stale through the other.

use serde_json::{Value, json};
use sqlx::Connection;
use support::Process;

mod support;

const PG_ADMIN: &str = "postgres://postgres@127.0.0.1:5432/postgres";
const SECRET: &str = "two-processes-test-secret-0123456789abcdef";

fn token(tenant: Option<&str>, scope: &str) -> String {
    use jsonwebtoken::{EncodingKey, Header, encode};
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let mut claims = json!({"iss": "two", "sub": "test", "scope": scope, "iat": now, "exp": now + 600});
    if let Some(t) = tenant {
        claims["tenant"] = json!(t);
    }
    encode(&Header::default(), &claims, &EncodingKey::from_secret(SECRET.as_bytes())).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_through_one_process_are_never_read_stale_through_the_other() {
    let tag = format!(
        "sg2p_{:x}",
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() % 0xffff_ffff
    );
    let names = [format!("{tag}_cat"), format!("{tag}_s0"), format!("{tag}_s1")];
    let mut admin = sqlx::PgConnection::connect(PG_ADMIN).await.expect("PostgreSQL on 127.0.0.1:5432");
    for name in &names {
        sqlx::query(&format!("CREATE DATABASE {name}")).execute(&mut admin).await.unwrap();
    }
    let url = |db: &str| format!("postgres://postgres@127.0.0.1:5432/{db}");
    let envs = vec![
        ("SHARDGATE_STORAGE__CATALOG_URL".to_owned(), url(&names[0])),
        (
            "SHARDGATE_STORAGE__SHARDS".to_owned(),
            format!("[{{id=\"s0\",url=\"{}\"}},{{id=\"s1\",url=\"{}\"}}]", url(&names[1]), url(&names[2])),
        ),
        ("SHARDGATE_CACHE__REDIS_URL".to_owned(), "redis://127.0.0.1:6379".to_owned()),
        ("SHARDGATE_CACHE__KEY_PREFIX".to_owned(), tag.clone()),
        ("SHARDGATE_AUTH__ISSUERS".to_owned(), format!("[{{issuer=\"two\",algorithm=\"HS256\",secret=\"{SECRET}\"}}]")),
    ];
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let client = reqwest::Client::new();
    // The first process creates the catalog; the second joins it.
    let a = Process::start(&["serve"], dirs[0].path(), envs.clone());
    a.wait_until_ok(&client, "/readyz").await;
    let b = Process::start(&["serve"], dirs[1].path(), envs);
    b.wait_until_ok(&client, "/readyz").await;

    a.create_tenant(&client, &token(None, "admin"), "acme").await;
    let tenant = token(Some("acme"), "read write");
    for round in 1..=40i64 {
        let (writer, reader) = if round % 2 == 0 { (&a, &b) } else { (&b, &a) };
        let record = format!("/v1/tenants/acme/collections/c/records/k{}", round % 3);
        let put = client
            .put(format!("{}{record}", writer.base))
            .bearer_auth(&tenant)
            .json(&json!({"round": round}))
            .send()
            .await
            .unwrap();
        assert!(put.status().is_success(), "PUT through {} answered {}", writer.base, put.status());
        let written: Value = put.json().await.unwrap();
        // Read through the other process, twice (the second read may come from Redis).
        for _ in 0..2 {
            let got: Value = client
                .get(format!("{}{record}", reader.base))
                .bearer_auth(&tenant)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            assert_eq!(
                got["version"], written["version"],
                "read through {} after a write through {}",
                reader.base, writer.base
            );
            assert_eq!(got["value"], json!({"round": round}));
        }
    }
    drop(a);
    drop(b);
    for name in &names {
        sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).execute(&mut admin).await.unwrap();
    }
}
