//! The admin plane on a listener of its own (`admin.listen`, issue 50 item 5): `/v1/admin/*`,
//! `/console` and `/metrics` move there, the public listener answers them as it answers any
//! path it does not know, and the standalone gatekeeper never forwards them.

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::StatusCode;
use shardgate_api::config::{AdminListenerConfig, GatekeeperConfig};
use shardgate_tests::{Backend, RunningServer, TestApp, TestCa, eventually, expect_json, expect_problem, free_port};

/// The admin plane's three path families, as a client would ask for them.
const ADMIN_PLANE: [&str; 4] = ["/v1/admin/tenants", "/console", "/console/console.js", "/metrics"];

/// Paths no instance serves, beside each of [`ADMIN_PLANE`] (the same shape, one letter off).
const UNKNOWN: [&str; 4] = ["/v1/adminx/tenants", "/consolex", "/consolex/console.js", "/metricsx"];

/// What a caller can see of an answer: its status, its body, and its headers but for those whose
/// value differs from one request to the next (their names are kept).
async fn seen(response: reqwest::Response) -> (StatusCode, BTreeMap<String, String>, String) {
    let status = response.status();
    let headers = response
        .headers()
        .iter()
        .map(|(name, value)| {
            let varies = matches!(name.as_str(), "date" | "x-request-id" | "ratelimit");
            let value = if varies { "…".to_owned() } else { value.to_str().unwrap_or("?").to_owned() };
            (name.as_str().to_owned(), value)
        })
        .collect();
    (status, headers, response.text().await.unwrap())
}

/// `GET base + path`, with `token` if given.
async fn get(client: &reqwest::Client, base: &str, path: &str, token: Option<&str>) -> reqwest::Response {
    let request = client.get(format!("{base}{path}"));
    let request = match token {
        Some(token) => request.bearer_auth(token),
        None => request,
    };
    request.send().await.unwrap()
}

/// On `public`, each path of the admin plane is answered exactly as its unknown neighbour is
/// (404 `not_found`, the same headers and body), with and without `token`.
async fn public_knows_nothing_of_the_admin_plane(client: &reqwest::Client, public: &str, token: &str) {
    for (hidden, unknown) in ADMIN_PLANE.iter().zip(UNKNOWN) {
        for token in [Some(token), None] {
            let answer = seen(get(client, public, hidden, token).await).await;
            let neighbour = seen(get(client, public, unknown, token).await).await;
            assert_eq!(answer, neighbour, "{hidden} on the public listener (token: {})", token.is_some());
            if hidden.starts_with("/v1/") && token.is_none() {
                continue;
            }
            expect_problem(get(client, public, hidden, token).await, StatusCode::NOT_FOUND, "not_found").await;
        }
    }
}

/// On `admin`, the admin API needs an admin token (401 without), the console and the scrape are
/// served, and so are the probes.
async fn admin_serves_the_admin_plane(client: &reqwest::Client, admin: &str, token: &str) {
    let tenants = expect_json(get(client, admin, "/v1/admin/tenants", Some(token)).await, StatusCode::OK).await;
    assert!(tenants["items"].is_array(), "{tenants}");
    let refused = get(client, admin, "/v1/admin/tenants", None).await;
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    let page = get(client, admin, "/console", None).await;
    assert_eq!(page.status(), StatusCode::OK);
    assert!(page.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
    assert_eq!(get(client, admin, "/console/console.js", None).await.status(), StatusCode::OK);
    let scrape = get(client, admin, "/metrics", None).await;
    assert_eq!(scrape.status(), StatusCode::OK);
    assert!(scrape.text().await.unwrap().contains("shardgate_connections_open"));
    for probe in ["/healthz", "/readyz"] {
        assert_eq!(get(client, admin, probe, None).await.status(), StatusCode::OK, "{probe} on the admin listener");
    }
}

/// A tenant's data, its API document and its page are not on the admin listener.
async fn admin_serves_nothing_else(client: &reqwest::Client, admin: &str) {
    let token = shardgate_tests::mint(Some("acme"), &[shardgate_gatekeeper::Scope::Read], Duration::from_secs(60));
    let data = get(client, admin, "/v1/tenants/acme/collections/docs/records", Some(&token)).await;
    expect_problem(data, StatusCode::NOT_FOUND, "not_found").await;
    for path in ["/openapi.json", "/docs/"] {
        expect_problem(get(client, admin, path, None).await, StatusCode::NOT_FOUND, "not_found").await;
    }
}

#[tokio::test]
async fn the_admin_plane_moves_to_its_own_listener_and_the_public_one_knows_nothing_of_it() {
    let port = free_port();
    let mut app = TestApp::spawn_with(Backend::Postgres, |c| {
        c.admin.listen = Some(format!("127.0.0.1:{port}").parse().unwrap());
    })
    .await;
    let admin = format!("http://127.0.0.1:{port}");
    let token = app.admin_token();
    public_knows_nothing_of_the_admin_plane(&app.client, &app.base_url, &token).await;
    admin_serves_the_admin_plane(&app.client, &admin, &token).await;
    admin_serves_nothing_else(&app.client, &admin).await;
    // What is public stays public: probes, the API document, its page, and tenants' data.
    for path in ["/healthz", "/readyz", "/openapi.json", "/docs/"] {
        assert_eq!(get(&app.client, &app.base_url, path, None).await.status(), StatusCode::OK, "{path}");
    }
    // The admin API creates a tenant there, whose data the public listener serves.
    let public = std::mem::replace(&mut app.base_url, admin);
    app.create_tenant("acme").await;
    app.base_url = public;
    let written = app.put_record("acme", "docs", "k", &serde_json::json!({"v": 1})).await;
    assert_eq!(written.status(), StatusCode::CREATED);
}

#[tokio::test]
async fn the_admin_listener_serves_https_with_a_certificate_of_its_own() {
    let ca = TestCa::new("admin-plane");
    let certificate = ca.issue("admin", &["localhost", "127.0.0.1"]);
    let port = free_port();
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.admin.listen = Some(format!("127.0.0.1:{port}").parse().unwrap());
        c.admin.tls = Some(certificate.listener_tls());
    })
    .await;
    let token = app.admin_token();
    assert!(app.base_url.starts_with("http://"), "the public listener stays plain HTTP: {}", app.base_url);
    admin_serves_the_admin_plane(&ca.https_client(), &format!("https://localhost:{port}"), &token).await;
    public_knows_nothing_of_the_admin_plane(&app.client, &app.base_url, &token).await;
    // Plain HTTP gets no answer from the admin listener.
    let plain = app.client.get(format!("http://127.0.0.1:{port}/healthz")).send().await;
    assert!(plain.is_err(), "plain HTTP to an HTTPS admin listener: {plain:?}");
}

/// The certificate `url`'s server presents to a new connection trusting `ca` alone.
async fn certificate_of(ca: &TestCa, url: &str) -> Option<Vec<u8>> {
    let response = ca.https_client().get(url).send().await.ok()?;
    Some(response.extensions().get::<reqwest::tls::TlsInfo>()?.peer_certificate()?.to_vec())
}

/// The DER of the (first) certificate in `pem`.
fn der(pem: &str) -> Vec<u8> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    CertificateDer::from_pem_slice(pem.as_bytes()).unwrap().to_vec()
}

#[tokio::test]
async fn the_admin_certificate_is_its_own_and_is_reloaded_when_its_files_change() {
    let ca = TestCa::new("listeners");
    let public_certificate = ca.issue("public", &["localhost", "127.0.0.1"]);
    let first = ca.issue("admin", &["localhost", "127.0.0.1"]);
    let port = free_port();
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.tls = Some(public_certificate.listener_tls());
        c.admin.listen = Some(format!("127.0.0.1:{port}").parse().unwrap());
        c.admin.tls = Some(first.listener_tls());
    })
    .await;
    let (public, admin) = (app.url("/healthz"), format!("https://localhost:{port}/healthz"));
    assert_eq!(certificate_of(&ca, &public).await, Some(der(&public_certificate.cert_pem)));
    assert_eq!(certificate_of(&ca, &admin).await, Some(der(&first.cert_pem)));
    let second = ca.issue("admin", &["localhost", "127.0.0.1"]);
    assert_eq!(second.cert_path, first.cert_path, "the same files, rewritten");
    let rotated = async || (certificate_of(&ca, &admin).await? == der(&second.cert_pem)).then_some(());
    assert!(
        eventually(Duration::from_secs(5), rotated).await.is_some(),
        "new admin connections get the new certificate"
    );
    assert_eq!(
        certificate_of(&ca, &public).await,
        Some(der(&public_certificate.cert_pem)),
        "the public one is unchanged"
    );
    let scrape = ca.https_client().get(format!("https://localhost:{port}/metrics")).send().await.unwrap();
    let scrape = scrape.text().await.unwrap();
    assert!(
        scrape.lines().any(|line| line.starts_with("shardgate_tls_certificate_reloads_total{")
            && line.contains("listener=\"admin\"")
            && line.contains("result=\"reloaded\"")
            && !line.ends_with(" 0")),
        "the admin listener's reload is counted under its own label"
    );
}

#[tokio::test]
async fn without_an_admin_listener_the_public_listener_serves_the_admin_plane_as_before() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    admin_serves_the_admin_plane(&app.client, &app.base_url, &app.admin_token()).await;
}

#[tokio::test]
async fn admin_tls_without_admin_listen_is_refused_at_start_up() {
    let ca = TestCa::new("admin-plane");
    let certificate = ca.issue("admin", &["localhost"]);
    let dir = tempfile::tempdir().unwrap();
    let mut config = shardgate_tests::test_config(dir.path());
    config.admin.tls = Some(certificate.listener_tls());
    let refused = shardgate_api::Application::build(config).await.unwrap_err().to_string();
    assert!(refused.contains("admin.tls is set without admin.listen"), "{refused}");
}

/// The sum of the backend's `shardgate_http_requests_total` over every route but the scrape's
/// own: the requests that reached it.
async fn requests_seen(client: &reqwest::Client, backend: &str) -> f64 {
    let text = get(client, backend, "/metrics", None).await.text().await.unwrap();
    text.lines()
        .filter(|line| line.starts_with("shardgate_http_requests_total{") && !line.contains("route=\"/metrics\""))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test]
async fn a_gatekeeper_with_an_admin_listener_never_forwards_the_admin_plane() {
    // A trusted backend that serves the admin plane on its one listener, behind a gatekeeper
    // that forwards it (no admin listener) and a second one with an admin listener (HTTPS).
    let app = TestApp::spawn_via_gatekeeper(Backend::Sqlite).await;
    let backend = app.backend_url().unwrap().to_owned();
    let ca = TestCa::new("gatekeeper-admin");
    let certificate = ca.issue("gatekeeper-admin", &["localhost", "127.0.0.1"]);
    let port = free_port();
    let mut config = GatekeeperConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream: Some(backend.clone()),
        data_dir: app.data_dir().to_path_buf(),
        admin: AdminListenerConfig {
            listen: Some(format!("127.0.0.1:{port}").parse().unwrap()),
            tls: Some(certificate.listener_tls()),
        },
        ..GatekeeperConfig::default()
    };
    config.internal = app.config().internal.clone();
    config.auth = app.config().auth.clone();
    let gatekeeper = RunningServer::start_gatekeeper(config).await;
    let token = app.admin_token();
    // Forwarded by the gatekeeper without an admin listener: the backend serves the admin plane.
    expect_json(get(&app.client, &app.base_url, "/v1/admin/tenants", Some(&token)).await, StatusCode::OK).await;
    public_knows_nothing_of_the_admin_plane(&app.client, &gatekeeper.base_url, &token).await;
    // Nor does a spelling of an admin path that is not one reach the backend's admin API.
    for path in
        ["/v1/%61dmin/tenants", "/v1//admin/tenants", "/v1/./admin/tenants", "/v1/admin%2Ftenants", "/V1/admin/tenants"]
    {
        let status = get(&app.client, &gatekeeper.base_url, path, Some(&token)).await.status();
        assert!(status == StatusCode::NOT_FOUND || status == StatusCode::BAD_REQUEST, "{path}: {status}");
    }
    let before = requests_seen(&app.client, &backend).await;
    for path in ADMIN_PLANE {
        for token in [Some(token.as_str()), None] {
            let response = get(&app.client, &gatekeeper.base_url, path, token).await;
            if path.starts_with("/v1/") && token.is_none() {
                assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{path}: as any /v1 path without a token");
            } else {
                expect_problem(response, StatusCode::NOT_FOUND, "not_found").await;
            }
        }
    }
    let smuggled = app
        .client
        .post(format!("{}/v1/admin/tenants", gatekeeper.base_url))
        .bearer_auth(&token)
        .json(&serde_json::json!({"id": "smuggled"}))
        .send()
        .await
        .unwrap();
    expect_problem(smuggled, StatusCode::NOT_FOUND, "not_found").await;
    // Nor from its admin listener, which serves the gatekeeper's own scrape and probes.
    let client = ca.https_client();
    let admin = format!("https://localhost:{port}");
    for path in ["/v1/admin/tenants", "/console"] {
        expect_problem(get(&client, &admin, path, Some(&token)).await, StatusCode::NOT_FOUND, "not_found").await;
    }
    let scrape = get(&client, &admin, "/metrics", None).await;
    assert_eq!(scrape.status(), StatusCode::OK);
    let scrape = scrape.text().await.unwrap();
    assert!(
        scrape.contains("shardgate_connections_open") && !scrape.contains("shardgate_valet_refusals"),
        "the gatekeeper's own metrics, not the backend's: {scrape}"
    );
    assert_eq!(get(&client, &admin, "/healthz", None).await.status(), StatusCode::OK);
    assert_eq!(requests_seen(&app.client, &backend).await, before, "the backend saw no admin-plane request");
    let absent = get(&app.client, &app.base_url, "/v1/admin/tenants/smuggled", Some(&token)).await;
    expect_problem(absent, StatusCode::NOT_FOUND, "tenant_not_found").await;
    // Tenants' data still goes through.
    expect_json(
        app.admin(reqwest::Method::POST, "/v1/admin/tenants", Some(&serde_json::json!({"id": "acme"}))).await,
        StatusCode::CREATED,
    )
    .await;
    let rw = app.rw_token("acme");
    let written = app
        .client
        .put(format!("{}{}", gatekeeper.base_url, shardgate_tests::record_path("acme", "docs", "k")))
        .bearer_auth(&rw)
        .json(&serde_json::json!({"v": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(written.status(), StatusCode::CREATED);
}

#[tokio::test]
async fn a_trusted_backends_admin_listener_verifies_admin_tokens_itself() {
    let port = free_port();
    let mut app = TestApp::spawn_via_gatekeeper_with(Backend::Sqlite, |c| {
        c.admin.listen = Some(format!("127.0.0.1:{port}").parse().unwrap());
    })
    .await;
    let token = app.admin_token();
    // The gatekeeper (no admin listener) forwards the admin plane to a public listener that
    // does not serve it.
    let forwarded = get(&app.client, &app.base_url, "/v1/admin/tenants", Some(&token)).await;
    expect_problem(forwarded, StatusCode::NOT_FOUND, "not_found").await;
    // Reached directly, the admin listener wants an admin token, not the internal credential.
    let admin = format!("http://127.0.0.1:{port}");
    admin_serves_the_admin_plane(&app.client, &admin, &token).await;
    let tenant_token = app.rw_token("acme");
    let refused = get(&app.client, &admin, "/v1/admin/tenants", Some(&tenant_token)).await;
    expect_problem(refused, StatusCode::FORBIDDEN, "insufficient_scope").await;
    let public = std::mem::replace(&mut app.base_url, admin);
    app.create_tenant("acme").await;
    app.base_url = public;
    let written = app.put_record("acme", "docs", "k", &serde_json::json!({"v": 1})).await;
    assert_eq!(written.status(), StatusCode::CREATED);
}
