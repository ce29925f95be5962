//! TLS on the listeners: the API over HTTPS with a certificate rotated on disk (new connections
//! get the new one, open ones keep working, a bad new pair keeps the old one), a handshake that
//! stalls closed at the header deadline, the valet listener over HTTPS, and the standalone
//! gatekeeper with TLS both at its listener and to its backend. Plain HTTP is the default (every
//! other story).

use std::time::Duration;

use reqwest::StatusCode;
use secrecy::SecretString;
use serde_json::json;
use shardgate_api::config::{GatekeeperConfig, ListenerTls};
use shardgate_tests::{Backend, Issued, RunningServer, TestApp, TestCa, eventually, expect_json};

/// The DER of the (first) certificate in `pem`.
fn der(pem: &str) -> Vec<u8> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    CertificateDer::from_pem_slice(pem.as_bytes()).unwrap().to_vec()
}

/// `GET url` and the certificate the server presented on the connection it went over.
async fn peer_certificate(client: &reqwest::Client, url: &str) -> Result<Vec<u8>, String> {
    let response = client.get(url).send().await.map_err(|e| format!("{e:?}"))?;
    if response.status() != StatusCode::OK {
        return Err(format!("{url} answered {}", response.status()));
    }
    let info = response.extensions().get::<reqwest::tls::TlsInfo>().ok_or("no TLS info")?;
    Ok(info.peer_certificate().ok_or("no peer certificate")?.to_vec())
}

/// `shardgate_tls_certificate_reloads_total{result=...}` of `base`, over every listener.
async fn reloads(client: &reqwest::Client, base: &str, result: &str) -> f64 {
    let text = client.get(format!("{base}/metrics")).send().await.unwrap().text().await.unwrap();
    let label = format!("result=\"{result}\"");
    text.lines()
        .filter(|line| line.starts_with("shardgate_tls_certificate_reloads_total{") && line.contains(&label))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// A gateway on SQLite whose API listener serves `issued`, and a client trusting `ca`.
async fn https_app(ca: &TestCa, issued: &Issued) -> TestApp {
    let tls = issued.listener_tls();
    let mut app = TestApp::spawn_with(Backend::Sqlite, |c| c.tls = Some(tls)).await;
    assert!(app.base_url.starts_with("https://"), "{}", app.base_url);
    app.client = ca.https_client();
    app
}

/// A CA, the certificate it issued for `localhost` and `127.0.0.1`, and an [`https_app`] serving
/// it from files a test may replace.
async fn rotatable_https_app() -> (TestCa, Issued, TestApp) {
    let ca = TestCa::new("listener CA");
    let first = ca.issue("api", &["localhost", "127.0.0.1"]);
    let app = https_app(&ca, &first).await;
    (ca, first, app)
}

#[tokio::test]
async fn a_rotated_certificate_reaches_new_connections_without_a_restart() {
    let (ca, first, app) = rotatable_https_app().await;
    let healthz = app.url("/healthz");
    // A keep-alive connection opened before the rotation.
    let old = ca.https_client();
    assert_eq!(peer_certificate(&old, &healthz).await, Ok(der(&first.cert_pem)));
    // Data flows over HTTPS like over HTTP.
    app.create_tenant("acme").await;
    expect_json(app.put_record("acme", "docs", "k", &json!({"v": 1})).await, StatusCode::CREATED).await;

    let second = ca.issue("api", &["localhost", "127.0.0.1"]);
    assert_eq!(second.cert_path, first.cert_path, "the same files, rewritten as cert-manager does");
    let rotated = async || {
        // A new client is a new connection.
        (peer_certificate(&ca.https_client(), &healthz).await.ok()? == der(&second.cert_pem)).then_some(())
    };
    assert!(eventually(Duration::from_secs(5), rotated).await.is_some(), "new connections get the new certificate");
    // The old connection keeps working, with the certificate it was opened with.
    assert_eq!(peer_certificate(&old, &healthz).await, Ok(der(&first.cert_pem)), "the open connection is kept");
    assert!(reloads(&app.client, &app.base_url, "reloaded").await >= 1.0);
    let read = expect_json(app.get_record("acme", "docs", "k").await, StatusCode::OK).await;
    assert_eq!(read["value"], json!({"v": 1}), "the same server, never restarted");
}

#[tokio::test]
async fn a_new_pair_that_does_not_load_keeps_the_old_certificate() {
    let (ca, first, app) = rotatable_https_app().await;
    let healthz = app.url("/healthz");
    // The key of another certificate lands over the key file (a half-done rotation).
    let stranger = ca.issue("stranger", &["localhost"]);
    std::fs::copy(&stranger.key_path, &first.key_path).unwrap();
    let rejected = async || (reloads(&app.client, &app.base_url, "rejected").await >= 1.0).then_some(());
    assert!(eventually(Duration::from_secs(5), rejected).await.is_some(), "the mismatched pair is refused, counted");
    assert_eq!(peer_certificate(&ca.https_client(), &healthz).await, Ok(der(&first.cert_pem)));
    // Not PEM at all: still the old one.
    std::fs::write(&first.cert_path, "not a certificate").unwrap();
    let again = async || (reloads(&app.client, &app.base_url, "rejected").await >= 2.0).then_some(());
    assert!(eventually(Duration::from_secs(5), again).await.is_some());
    assert_eq!(peer_certificate(&ca.https_client(), &healthz).await, Ok(der(&first.cert_pem)));
    // A good pair again is taken.
    let fixed = ca.issue("api", &["localhost", "127.0.0.1"]);
    let taken =
        async || (peer_certificate(&ca.https_client(), &healthz).await.ok()? == der(&fixed.cert_pem)).then_some(());
    assert!(eventually(Duration::from_secs(5), taken).await.is_some());
}

#[tokio::test]
async fn a_stalled_tls_handshake_is_closed_at_the_header_deadline() {
    use tokio::io::AsyncReadExt;
    let ca = TestCa::new("listener CA");
    let issued = ca.issue("api", &["localhost", "127.0.0.1"]);
    let tls = issued.listener_tls();
    let mut app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.tls = Some(tls);
        c.limits.header_read_timeout = Duration::from_millis(500);
    })
    .await;
    app.client = ca.https_client();
    let port = app.base_url.rsplit(':').next().unwrap().parse::<u16>().unwrap();
    let closed = || shardgate_tests::metric(&app.client, &app.base_url, "shardgate_connections_closed_total");
    let before = closed().await;
    // Connects and sends a byte of a ClientHello, then nothing.
    let mut stalled = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut stalled, &[0x16]).await.unwrap();
    let started = std::time::Instant::now();
    let mut buf = [0u8; 64];
    let read = tokio::time::timeout(Duration::from_secs(5), stalled.read(&mut buf)).await;
    assert!(matches!(read, Ok(Ok(0) | Err(_))), "the server closes the connection: {read:?}");
    assert!(started.elapsed() < Duration::from_secs(2), "at the header deadline: {:?}", started.elapsed());
    assert!(closed().await >= before + 1.0, "counted as a header timeout");
}

#[tokio::test]
async fn a_missing_or_bad_certificate_stops_start_up_naming_the_key() {
    let ca = TestCa::new("listener CA");
    let dir = tempfile::tempdir().unwrap();
    let mut config = shardgate_tests::test_config(dir.path());
    config.tls = Some(ListenerTls { cert_file: dir.path().join("nope.crt"), key_file: dir.path().join("nope.key") });
    let error = shardgate_api::Application::build(config.clone()).await.unwrap_err().to_string();
    assert!(error.starts_with("tls: cannot read") && error.contains("nope.crt"), "{error}");
    let issued = ca.issue("api", &["localhost"]);
    let other = ca.issue("other", &["localhost"]);
    config.tls = Some(ListenerTls { cert_file: issued.cert_path.clone(), key_file: other.key_path.clone() });
    let error = shardgate_api::Application::build(config.clone()).await.unwrap_err().to_string();
    assert!(error.contains("does not go with cert_file"), "{error}");
    config.tls = None;
    config.valet.tls = Some(issued.listener_tls());
    let error = shardgate_api::Application::build(config).await.unwrap_err().to_string();
    assert!(error.contains("valet.tls is set without valet.listen"), "{error}");
}

#[tokio::test]
async fn a_valet_url_downloads_over_the_valet_listeners_tls() {
    let ca = TestCa::new("listener CA");
    let issued = ca.issue("valet", &["localhost", "127.0.0.1"]);
    let port = shardgate_tests::free_port();
    let tls = issued.listener_tls();
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.valet.listen = Some(format!("127.0.0.1:{port}").parse().unwrap());
        c.valet.tls = Some(tls);
    })
    .await;
    assert!(app.base_url.starts_with("http://"), "the API listener stays plain");
    app.create_tenant("acme").await;
    let token = app.rw_token("acme");
    let body: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
    let put = app.client.put(app.url("/v1/tenants/acme/blobs/f")).bearer_auth(&token).body(body.clone()).send().await;
    assert!(put.unwrap().status().is_success());
    let key = app.issue_valet_key("acme", &token, &json!({"path": "f", "permission": "read"})).await;
    let url = key["url"].as_str().unwrap();
    assert!(url.starts_with(&format!("https://127.0.0.1:{port}/valet/acme/f?")), "valet URLs say https: {url}");
    let response = ca.https_client().get(url).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.bytes().await.unwrap().to_vec(), body);
    // Plain HTTP to a TLS listener gets no answer.
    assert!(app.client.get(url.replacen("https", "http", 1)).send().await.is_err());
}

#[tokio::test]
async fn the_gatekeeper_serves_https_and_forwards_to_an_https_backend() {
    let ca = TestCa::new("listener CA");
    let backend_cert = ca.issue("backend", &["localhost", "127.0.0.1"]);
    let front_cert = ca.issue("gatekeeper", &["localhost", "127.0.0.1"]);
    let secret = format!("internal-test-secret-{}", uuid::Uuid::new_v4().simple());
    let backend_tls = backend_cert.listener_tls();
    let mut app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.trusted = true;
        c.internal.secret = Some(SecretString::from(secret.clone()));
        c.tls = Some(backend_tls);
    })
    .await;
    let backend_url = app.base_url.clone();
    assert!(backend_url.starts_with("https://"), "{backend_url}");
    let mut config = GatekeeperConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        tls: Some(front_cert.listener_tls()),
        upstream: Some(backend_url.clone()),
        upstream_ca_file: Some(ca.cert_path.clone()),
        data_dir: app.data_dir().to_path_buf(),
        ..GatekeeperConfig::default()
    };
    config.internal.secret = Some(SecretString::from(secret.clone()));
    config.auth = app.config().auth.clone();
    let gatekeeper = RunningServer::start_gatekeeper(config.clone()).await;
    assert!(gatekeeper.base_url.starts_with("https://"), "{}", gatekeeper.base_url);
    app.base_url = gatekeeper.base_url.clone();
    app.client = ca.https_client();
    // Admin and data calls go client → HTTPS → gatekeeper → HTTPS → backend.
    app.create_tenant("acme").await;
    expect_json(app.put_record("acme", "docs", "k", &json!({"v": 1})).await, StatusCode::CREATED).await;
    let read = expect_json(app.get_record("acme", "docs", "k").await, StatusCode::OK).await;
    assert_eq!(read["value"], json!({"v": 1}));
    assert_eq!(
        peer_certificate(&app.client, &app.url("/healthz")).await,
        Ok(der(&front_cert.cert_pem)),
        "the client sees the gatekeeper's certificate"
    );

    // Without the backend's CA the gatekeeper cannot reach it: a 502, not a plain-text fallback.
    let stranger = TestCa::new("another CA");
    let mut untrusting = config;
    untrusting.upstream_ca_file = Some(stranger.cert_path.clone());
    let refused = RunningServer::start_gatekeeper(untrusting).await;
    let token = app.rw_token("acme");
    let response = app
        .client
        .get(format!("{}{}", refused.base_url, shardgate_tests::record_path("acme", "docs", "k")))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    shardgate_tests::expect_problem(response, StatusCode::BAD_GATEWAY, "upstream_unavailable").await;
}
