//! With logging at its most verbose, no log line holds a bearer token, a cookie or a signature
//! query parameter, while the request spans (request id, route, tenant) are there.

use in_process::{CapturedLog, Served};
use secrecy::SecretString;
use shardgate_api::Config;
use shardgate_gatekeeper::{IssuerConfig, Scope, Scopes, TokenRequest, mint_token};

mod in_process;

const SECRET: &str = "log-test-secret-0123456789abcdef0123";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_log_line_holds_a_token_cookie_or_signature() {
    let logs = CapturedLog::install("trace");

    let dir = tempfile::tempdir().unwrap();
    let mut config =
        Config { listen: "127.0.0.1:0".parse().unwrap(), data_dir: dir.path().to_path_buf(), ..Config::default() };
    config.auth.issuers =
        vec![IssuerConfig { allow_any_audience: true, ..IssuerConfig::hs256("logs", SecretString::from(SECRET)) }];
    let served = Served::start(config).await;
    let base = &served.base;

    let mint = |tenant: Option<&str>, scopes: &[Scope]| {
        let request = TokenRequest {
            issuer: "logs".into(),
            subject: "log-tester".into(),
            tenant: tenant.map(str::to_owned),
            scopes: Scopes::of(scopes),
            ttl: std::time::Duration::from_secs(300),
        };
        mint_token(&SecretString::from(SECRET), &request).unwrap()
    };
    let admin = mint(None, &[Scope::Admin]);
    let tenant = mint(Some("acme"), &[Scope::Read, Scope::Write]);
    let client = reqwest::Client::new();
    let created = client
        .post(format!("{base}/v1/admin/tenants"))
        .bearer_auth(&admin)
        .json(&serde_json::json!({"id": "acme"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let signature = "sig-5f3c9a1b7e2d4c6a8b0f";
    let cookie = "session=cookie-value-9d8c7b6a";
    let record = format!("{base}/v1/tenants/acme/collections/c/records/k?signature={signature}");
    for method in [reqwest::Method::PUT, reqwest::Method::GET] {
        let response = client
            .request(method, &record)
            .bearer_auth(&tenant)
            .header("cookie", cookie)
            .body("{\"v\":1}")
            .send()
            .await
            .unwrap();
        assert!(response.status().is_client_error() || response.status().is_success());
    }
    let bad =
        client.get(format!("{base}/v1/admin/shards")).bearer_auth("not.a.valid-token-abcdef").send().await.unwrap();
    assert_eq!(bad.status(), 401);

    served.stop().await;
    let text = logs.text();
    assert!(text.contains("request_id="), "request spans are logged (the capture works)");
    assert!(
        text.contains("/v1/tenants/{tenant}/collections/{collection}/records/{key}"),
        "spans carry the route template"
    );
    for secret in
        [admin.as_str(), tenant.as_str(), "not.a.valid-token-abcdef", signature, "cookie-value-9d8c7b6a", SECRET]
    {
        // Any 16-character piece of a secret is enough to count as a leak.
        let probe = &secret[secret.len().saturating_sub(16)..];
        assert!(!text.contains(probe), "a log line holds a secret ({probe})");
    }
}
