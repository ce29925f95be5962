//! Two `shardgate serve` processes share a PostgreSQL catalog, PostgreSQL shards and Redis:
//! writes through one are never read stale through the other.

use serde_json::{Value, json};
use shared_catalog::{Databases, token};
use support::serve_two;

mod shared_catalog;
#[expect(dead_code, reason = "these tests use part of the process harness")]
mod support;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_through_one_process_are_never_read_stale_through_the_other() {
    let databases = Databases::create("sg2p", 2).await;
    let envs = databases.envs(true);
    let client = reqwest::Client::new();
    let ([a, b], _dirs) = serve_two(&client, envs).await;

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
            let got = reader.get_json(&client, &record, &tenant).await;
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
    databases.drop_all().await;
}
