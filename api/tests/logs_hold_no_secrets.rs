//! With logging at its most verbose, no log line holds a bearer token, a cookie or a signature
//! query parameter, while the request spans (request id, route, tenant) are there.

use std::io::Write;
use std::sync::{Arc, Mutex};

use secrecy::SecretString;
use shardgate_api::config::{LogConfig, LogFormat};
use shardgate_api::{Application, Config};
use shardgate_gatekeeper::{IssuerConfig, Scope, Scopes, TokenRequest, mint_token};

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

const SECRET: &str = "log-test-secret-0123456789abcdef0123";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_log_line_holds_a_token_cookie_or_signature() {
    let logs = Captured::default();
    let log = LogConfig { filter: "trace".to_owned(), format: LogFormat::Text };
    shardgate_api::observability::telemetry::init_with_writer(&log, logs.clone());

    let dir = tempfile::tempdir().unwrap();
    let mut config =
        Config { listen: "127.0.0.1:0".parse().unwrap(), data_dir: dir.path().to_path_buf(), ..Config::default() };
    config.auth.issuers =
        vec![IssuerConfig { allow_any_audience: true, ..IssuerConfig::hs256("logs", SecretString::from(SECRET)) }];
    let app = Application::build(config).await.unwrap();
    let base = format!("http://127.0.0.1:{}", app.port());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(app.run_until(async move {
        stopped.await.ok();
    }));

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

    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
    let text = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
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
