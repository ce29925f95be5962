//! `shardgate gatekeeper --upstream URL` in front of `shardgate serve --trusted`, as two real
//! processes: requests through the gatekeeper work, direct requests to the backend are refused,
//! and the gatekeeper refuses a configuration holding a catalog URL.

use serde_json::json;
use support::{Process, shardgate};

#[expect(dead_code, reason = "these tests use part of the process harness")]
mod support;

const INTERNAL: &str = "gatekeeper-process-internal-secret-0123456789";

fn token(data_dir: &std::path::Path, args: &[&str]) -> String {
    let output = shardgate(&[&["token"], args].concat(), data_dir).output().expect("shardgate token runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

#[tokio::test]
async fn a_gatekeeper_process_fronts_a_trusted_backend_process() {
    let data_dir = tempfile::tempdir().unwrap();
    let client = reqwest::Client::new();
    let internal = [("SHARDGATE_INTERNAL__SECRET", INTERNAL)];
    let backend = Process::start(&["serve", "--trusted"], data_dir.path(), internal);
    backend.wait_until_ok(&client, "/healthz").await;
    // The gatekeeper shares only the token secret's directory (the embedded issuer) and the
    // internal secret: no storage configuration at all.
    let gatekeeper = Process::start(&["gatekeeper", "--upstream", &backend.base], data_dir.path(), internal);
    gatekeeper.wait_until_ok(&client, "/healthz").await;

    let admin = token(data_dir.path(), &["--admin"]);
    gatekeeper.create_tenant(&client, &admin, "demo").await;
    let tenant = token(data_dir.path(), &["--tenant", "demo", "--scopes", "read,write"]);
    let record = "/v1/tenants/demo/collections/orders/records/o1";
    let response = client
        .put(format!("{}{record}", gatekeeper.base))
        .bearer_auth(&tenant)
        .json(&json!({"total": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let response = client.get(format!("{}{record}", gatekeeper.base)).bearer_auth(&tenant).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.headers().get("ratelimit").is_some());

    // The same token straight to the backend: refused.
    let response = client.get(format!("{}{record}", backend.base)).bearer_auth(&tenant).send().await.unwrap();
    assert_eq!(response.status(), 401);
    let problem: serde_json::Value = response.json().await.unwrap();
    assert_eq!(problem["code"], "invalid_internal_credential");
}

#[test]
fn a_gatekeeper_configured_with_storage_refuses_to_start() {
    let data_dir = tempfile::tempdir().unwrap();
    let output =
        shardgate(&["gatekeeper", "--upstream", "http://127.0.0.1:1", "--listen", "127.0.0.1:0"], data_dir.path())
            .env("SHARDGATE_INTERNAL__SECRET", INTERNAL)
            .env("SHARDGATE_STORAGE__CATALOG_URL", "postgres://postgres@127.0.0.1:5432/nothing")
            .output()
            .expect("the binary runs");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("storage"), "the error names the refused key: {stderr}");
}

/// The standalone gatekeeper has no record cache: its Redis link serves the rate limits alone,
/// and its log says so, not "cache in use".
#[tokio::test]
async fn a_gatekeepers_redis_link_says_it_shares_rate_limits_not_a_cache() {
    let data_dir = tempfile::tempdir().unwrap();
    let client = reqwest::Client::new();
    let internal = ("SHARDGATE_INTERNAL__SECRET", INTERNAL);
    let backend = Process::start(&["serve", "--trusted"], data_dir.path(), [internal]);
    backend.wait_until_ok(&client, "/healthz").await;
    let gatekeeper = Process::start(
        &["gatekeeper", "--upstream", &backend.base],
        data_dir.path(),
        [internal, ("SHARDGATE_LOG__FILTER", "info"), ("SHARDGATE_RATE_LIMITS__REDIS_URL", "redis://127.0.0.1:6379")],
    );
    gatekeeper.wait_until_ok(&client, "/healthz").await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !gatekeeper.log().contains("redis reachable") && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let log = gatekeeper.log();
    assert!(log.contains("redis reachable: rate limits shared across instances"), "{log}");
    assert!(!log.contains("cache in use"), "the gatekeeper has no cache: {log}");
}
