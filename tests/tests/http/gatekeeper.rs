//! The standalone gatekeeper and its trusted backend: the backend answers only what the
//! gatekeeper forwarded, the gatekeeper refuses before forwarding, and nothing a client sends can
//! pass for the internal credential. (Every conformance story also runs through a gatekeeper:
//! the `via_gatekeeper` variants.)

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::json;
use shardgate_api::config::GatekeeperConfig;
use shardgate_tests::{Backend, TestApp, expect_json, expect_problem, record_path, records_path};

async fn gatekept() -> (TestApp, String) {
    let app = TestApp::spawn_via_gatekeeper(Backend::Sqlite).await;
    let backend = app.backend_url().expect("a backend behind the gatekeeper").to_owned();
    app.create_tenant("acme").await;
    app.create_tenant("bob").await;
    (app, backend)
}

#[tokio::test]
async fn the_trusted_backend_refuses_everything_without_the_internal_credential() {
    let (app, backend) = gatekept().await;
    let token = app.rw_token("acme");
    let admin = app.admin_token();
    // Through the gatekeeper: fine.
    let response = app.put_record("acme", "docs", "k", &json!({"v": 1})).await;
    expect_json(response, StatusCode::CREATED).await;

    let direct = |method: Method, path: &str, bearer: Option<&str>| {
        let mut request = app.client.request(method, format!("{backend}{path}"));
        if let Some(token) = bearer {
            request = request.bearer_auth(token);
        }
        request
    };
    let refused = [
        direct(Method::GET, &record_path("acme", "docs", "k"), Some(&token)),
        direct(Method::GET, &records_path("acme", "docs"), Some(&token)),
        direct(Method::PUT, &record_path("acme", "docs", "k2"), Some(&token)).json(&json!(2)),
        direct(Method::GET, "/v1/admin/tenants", Some(&admin)),
        direct(Method::POST, "/v1/admin/tenants", Some(&admin)).json(&json!({"id": "mallory"})),
        direct(Method::GET, "/openapi.json", None),
        // Forged internal headers: a principal claiming admin, with a made-up signature.
        direct(Method::GET, "/v1/admin/tenants", None)
            .header("x-shardgate-principal", "eyJpc3MiOiJ4Iiwic3ViIjoieCIsInRlbmFudCI6bnVsbCwic2NvcGUiOiJhZG1pbiJ9")
            .header("x-shardgate-timestamp", "1")
            .header("x-shardgate-signature", "00".repeat(32)),
    ];
    for request in refused {
        let response = request.send().await.unwrap();
        expect_problem(response, StatusCode::UNAUTHORIZED, "invalid_internal_credential").await;
    }
    // Nothing was written by the refused requests.
    let listing = expect_json(app.list_records("acme", "docs", "").await, StatusCode::OK).await;
    assert_eq!(listing["items"].as_array().unwrap().len(), 1);
    let tenants = expect_json(app.admin(Method::GET, "/v1/admin/tenants", None).await, StatusCode::OK).await;
    assert!(!tenants.to_string().contains("mallory"));
    // Probes and metrics stay open for the orchestrator and the scraper.
    for path in ["/healthz", "/readyz", "/metrics"] {
        assert_eq!(direct(Method::GET, path, None).send().await.unwrap().status(), StatusCode::OK, "{path}");
    }
}

#[tokio::test]
async fn a_client_cannot_smuggle_internal_headers_through_the_gatekeeper() {
    let (app, _) = gatekept().await;
    let token = app.rw_token("acme");
    // A tenant token with hand-made internal headers claiming an admin principal: the gatekeeper
    // drops them and signs for the verified caller, who is no admin.
    let response = app
        .client
        .get(app.url("/v1/admin/tenants"))
        .bearer_auth(&token)
        .header("x-shardgate-principal", "eyJpc3MiOiJ4Iiwic3ViIjoieCIsInRlbmFudCI6bnVsbCwic2NvcGUiOiJhZG1pbiJ9")
        .header("x-shardgate-timestamp", "1")
        .header("x-shardgate-signature", "00".repeat(32))
        .send()
        .await
        .unwrap();
    expect_problem(response, StatusCode::FORBIDDEN, "insufficient_scope").await;
    // The internal rate-limit hint never reaches clients.
    let response = app.list_records("acme", "docs", "").await;
    assert!(response.headers().get("x-shardgate-rate-limit").is_none());
    assert!(response.headers().get("ratelimit-policy").is_some());
}

#[tokio::test]
async fn the_gatekeeper_refuses_before_forwarding_and_learns_tenant_limits() {
    let (app, _) = gatekept().await;
    let response = app
        .admin(Method::PATCH, "/v1/admin/tenants/acme", Some(&json!({"rate_limit": {"per_second": 1, "burst": 3}})))
        .await;
    expect_json(response, StatusCode::OK).await;
    let token = app.rw_token("acme");
    // The first answer for acme carries its limit from the backend; from then on the gatekeeper
    // enforces it without asking the backend.
    let first = app.list_records("acme", "docs", "").await;
    assert_eq!(first.status(), StatusCode::OK);
    let mut statuses = Vec::new();
    for _ in 0..4 {
        let response = app.client.get(app.url(&records_path("acme", "docs"))).bearer_auth(&token).send().await.unwrap();
        statuses.push(response.status().as_u16());
    }
    assert!(statuses.contains(&429), "the learned limit (1/s, burst 3) holds: {statuses:?}");
    let other = app.list_records("bob", "docs", "").await;
    assert_eq!(other.status(), StatusCode::OK, "another tenant is unaffected");

    // Wrong tenant, missing scope, no token, bad body: answered by the gatekeeper like the backend would.
    let read_only = app.token("bob", &[shardgate_gatekeeper::Scope::Read]);
    let response = app
        .client
        .put(app.url(&record_path("bob", "docs", "k")))
        .bearer_auth(&read_only)
        .json(&json!(1))
        .send()
        .await
        .unwrap();
    expect_problem(response, StatusCode::FORBIDDEN, "insufficient_scope").await;
    let response = app.client.get(app.url(&records_path("bob", "docs"))).bearer_auth(&token).send().await.unwrap();
    assert!(matches!(response.status().as_u16(), 404 | 429), "{}", response.status());
    let response = app.client.get(app.url(&records_path("bob", "docs"))).send().await.unwrap();
    expect_problem(response, StatusCode::UNAUTHORIZED, "missing_token").await;
    let bob = app.rw_token("bob");
    let bob_record = record_path("bob", "docs", "k");
    let response = app.put_raw(&bob_record, &bob, "text/plain", "{}").await;
    expect_problem(response, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type").await;
    let too_big = format!("\"{}\"", "x".repeat(1024 * 1024));
    let response = app.put_raw(&bob_record, &bob, "application/json", too_big).await;
    expect_problem(response, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large").await;
}

#[tokio::test]
async fn an_unreachable_backend_is_a_502_problem_not_a_hang() {
    let secret = "internal-test-secret-0123456789abcdef0123";
    let port = shardgate_tests::free_port();
    let data_dir = tempfile::tempdir().unwrap();
    let config = GatekeeperConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream: Some(format!("http://127.0.0.1:{port}")),
        data_dir: data_dir.path().to_path_buf(),
        internal: shardgate_api::config::InternalConfig { secret: Some(secret.to_owned().into()) },
        ..GatekeeperConfig::default()
    };
    let mut config = config;
    config.auth.issuers = vec![shardgate_tests::hs256_issuer()];
    let gatekeeper = shardgate_tests::RunningServer::start_gatekeeper(config).await;
    let token = shardgate_tests::mint(Some("acme"), &[shardgate_gatekeeper::Scope::Read], Duration::from_secs(60));
    let client = shardgate_tests::http_client();
    let started = std::time::Instant::now();
    let response = client
        .get(format!("{}{}", gatekeeper.base_url, records_path("acme", "docs")))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(response.headers()["retry-after"], "1");
    expect_problem(response, StatusCode::BAD_GATEWAY, "upstream_unavailable").await;
}
