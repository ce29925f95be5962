//! Who the client is behind proxies (`trusted_proxies`, `proxy_protocol`): from a trusted proxy,
//! the rightmost hop of `X-Forwarded-For` that is not a trusted proxy, or a PROXY v2 header's
//! source, is the client: its own rate-limit budget, its address in the audit log. From anyone
//! else the headers change nothing, and a PROXY header closes the connection. The same through
//! the standalone gatekeeper, which hands the client's address to its backend in its signed
//! internal credential; valet downloads are audited with the client too; a PROXY header comes
//! before a TLS handshake. The tests' own address, 127.0.0.1, is the trusted proxy (or, trusting
//! `10.0.0.0/8` only, an untrusted peer).

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shardgate_api::Config;
use shardgate_api::config::proxies::Cidr;
use shardgate_gatekeeper::throttle::RateLimit;
use shardgate_tests::{Backend, TestApp, expect_json, metric, records_path};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Trusts `networks`, with a small anonymous budget (2 requests, then 1 a second).
fn behind(networks: &[&str]) -> impl FnOnce(&mut Config) {
    let networks: Vec<Cidr> = networks.iter().map(|n| Cidr::parse(n).unwrap()).collect();
    move |config| {
        config.trusted_proxies = networks;
        config.rate_limits.anonymous = RateLimit { per_second: 1, burst: 2 };
    }
}

/// Sends anonymous requests with `headers` until one is refused 429 (at most 20: a budget of 2
/// and 1 a second runs out long before); returns the refusal's detail.
async fn exhaust(app: &TestApp, headers: &[(&str, &str)]) -> String {
    for _ in 0..20 {
        let response = app.send(Method::GET, &records_path("acme", "docs"), None, None, headers).await;
        if response.status() == StatusCode::TOO_MANY_REQUESTS {
            let problem: Value = response.json().await.unwrap();
            return problem["detail"].as_str().unwrap().to_owned();
        }
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    }
    panic!("20 anonymous requests with {headers:?} were never limited");
}

/// The client address the audit log holds for the creation of tenant `id`.
async fn audited_client(app: &TestApp, id: &str) -> Value {
    let page = expect_json(
        app.admin(Method::GET, "/v1/admin/audit?action=tenant.create&limit=1000", None).await,
        StatusCode::OK,
    )
    .await;
    let target = format!("tenant:{id}");
    let entry = page["items"].as_array().unwrap().iter().find(|e| e["target"] == target.as_str());
    entry.unwrap_or_else(|| panic!("tenant {id}'s creation is audited: {page}"))["client_address"].clone()
}

/// Creates tenant `id` over HTTP with `headers`.
async fn create_tenant_with(app: &TestApp, id: &str, headers: &[(&str, &str)]) {
    let token = app.admin_token();
    let body = json!({ "id": id });
    let response = app.send(Method::POST, "/v1/admin/tenants", Some(&token), Some(&body), headers).await;
    assert_eq!(response.status(), StatusCode::CREATED);
}

#[tokio::test]
async fn behind_a_trusted_proxy_each_forwarded_client_has_its_own_budget_and_audit() {
    let app = TestApp::spawn_with(Backend::Sqlite, behind(&["127.0.0.1/32"])).await;
    // The client's own X-Forwarded-For is left of the hop its proxy appended: not taken.
    let first = exhaust(&app, &[("x-forwarded-for", "198.51.100.66, 203.0.113.7")]).await;
    assert!(first.contains("client 203.0.113.7 "), "{first}");
    // Another client behind the same proxy has a budget of its own.
    let other = [("x-forwarded-for", "203.0.113.8")];
    let response = app.send(Method::GET, &records_path("acme", "docs"), None, None, &other).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "not limited by the other client's requests");
    let second = exhaust(&app, &other).await;
    assert!(second.contains("client 203.0.113.8 "), "{second}");
    // A request with no forwarding header is the proxy's own.
    let own = exhaust(&app, &[]).await;
    assert!(own.contains("client 127.0.0.1 "), "{own}");

    create_tenant_with(&app, "acme", &[("x-forwarded-for", "203.0.113.9")]).await;
    assert_eq!(audited_client(&app, "acme").await, "203.0.113.9");
    // An unknown hop ends the walk at the proxy that wrote it.
    create_tenant_with(&app, "bob", &[("x-forwarded-for", "203.0.113.9, unknown")]).await;
    assert_eq!(audited_client(&app, "bob").await, "127.0.0.1");
}

#[tokio::test]
async fn rfc_7239_forwarded_is_read_when_configured_and_then_x_forwarded_for_is_not() {
    let app = TestApp::spawn_with(Backend::Sqlite, |config| {
        behind(&["127.0.0.1/32"])(config);
        config.forwarded_header = shardgate_api::config::proxies::ForwardedHeader::Forwarded;
    })
    .await;
    let both = [("forwarded", r#"for="[2001:db8::17]:4711";proto=https"#), ("x-forwarded-for", "203.0.113.7")];
    create_tenant_with(&app, "acme", &both).await;
    assert_eq!(audited_client(&app, "acme").await, "2001:db8::17");
    let refused = exhaust(&app, &[("forwarded", "for=_hidden"), ("x-forwarded-for", "203.0.113.7")]).await;
    assert!(refused.contains("client 127.0.0.1 "), "an obfuscated client is its proxy's: {refused}");
}

#[tokio::test]
async fn spoofed_forwarding_headers_from_an_untrusted_peer_change_nothing() {
    let app = TestApp::spawn_with(Backend::Sqlite, behind(&["10.0.0.0/8"])).await;
    // Ten made-up clients: were any header believed, each would have a budget of its own and
    // none would be limited.
    let mut refused = None;
    for i in 0..10 {
        let spoofed = format!("203.0.113.{i}");
        let forwarded = format!("for={spoofed}");
        let headers = [("x-forwarded-for", spoofed.as_str()), ("forwarded", forwarded.as_str())];
        let response = app.send(Method::GET, &records_path("acme", "docs"), None, None, &headers).await;
        if response.status() == StatusCode::TOO_MANY_REQUESTS {
            refused = Some(response.json::<Value>().await.unwrap()["detail"].as_str().unwrap().to_owned());
            break;
        }
    }
    let refused = refused.expect("the made-up clients share the peer's budget");
    assert!(refused.contains("client 127.0.0.1 "), "{refused}");
    create_tenant_with(&app, "acme", &[("x-forwarded-for", "203.0.113.9"), ("forwarded", "for=203.0.113.9")]).await;
    assert_eq!(audited_client(&app, "acme").await, "127.0.0.1", "the audit names the peer");
}

/// A PROXY v2 header (PROXY over TCP/IPv4, or LOCAL), written by hand from the specification.
fn proxy_header(local: bool, source: [u8; 4]) -> Vec<u8> {
    let mut header = b"\r\n\r\n\0\r\nQUIT\n".to_vec();
    header.push(if local { 0x20 } else { 0x21 });
    header.push(0x11);
    header.extend_from_slice(&12u16.to_be_bytes());
    header.extend_from_slice(&source);
    header.extend_from_slice(&[127, 0, 0, 1]);
    header.extend_from_slice(&40_000u16.to_be_bytes());
    header.extend_from_slice(&8080u16.to_be_bytes());
    header
}

/// Sends `preamble` then an admin request creating tenant `id` (with `extra` header lines) on a
/// connection of its own; returns everything the server sent before closing it.
async fn raw_create_tenant(app: &TestApp, base_url: &str, preamble: &[u8], id: &str, extra: &str) -> String {
    let address = base_url.strip_prefix("http://").unwrap();
    let mut stream = TcpStream::connect(address).await.unwrap();
    let body = json!({ "id": id }).to_string();
    let request = format!(
        "POST /v1/admin/tenants HTTP/1.1\r\nhost: {address}\r\nauthorization: Bearer {}\r\n\
         content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n{extra}\r\n{body}",
        app.admin_token(),
        body.len()
    );
    stream.write_all(&[preamble, request.as_bytes()].concat()).await.unwrap();
    read_until_closed(&mut stream).await
}

/// What the server sends until it closes the connection (a reset counts as closed), within 20 s.
async fn read_until_closed(stream: &mut TcpStream) -> String {
    let mut received = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(20), async {
        let mut buffer = [0u8; 4096];
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => received.extend_from_slice(&buffer[..n]),
            }
        }
    })
    .await;
    assert!(read.is_ok(), "the server closes the connection");
    String::from_utf8_lossy(&received).into_owned()
}

fn with_proxy_protocol(networks: &'static [&'static str]) -> impl FnOnce(&mut Config) {
    move |config| {
        behind(networks)(config);
        config.proxy_protocol = true;
        config.limits.header_read_timeout = Duration::from_secs(1);
    }
}

#[tokio::test]
async fn a_trusted_proxys_proxy_header_names_the_client_and_its_forwarding_headers_do_not() {
    let app = TestApp::spawn_with(Backend::Sqlite, with_proxy_protocol(&["127.0.0.1/32"])).await;
    let base = app.base_url.clone();
    let spoofed = "x-forwarded-for: 198.51.100.1\r\n";
    let answer = raw_create_tenant(&app, &base, &proxy_header(false, [203, 0, 113, 7]), "acme", spoofed).await;
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
    assert_eq!(audited_client(&app, "acme").await, "203.0.113.7");
    // LOCAL: the proxy's own connection (a health check), its own client.
    let answer = raw_create_tenant(&app, &base, &proxy_header(true, [203, 0, 113, 7]), "bob", spoofed).await;
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
    assert_eq!(audited_client(&app, "bob").await, "127.0.0.1");
    // No header at all: served as the proxy's own, its forwarding headers ignored.
    create_tenant_with(&app, "carol", &[("x-forwarded-for", "198.51.100.1")]).await;
    assert_eq!(audited_client(&app, "carol").await, "127.0.0.1");
}

#[tokio::test]
async fn a_proxy_header_from_an_untrusted_peer_closes_the_connection_and_a_stalled_one_times_out() {
    let untrusting = TestApp::spawn_with(Backend::Sqlite, with_proxy_protocol(&["10.0.0.0/8"])).await;
    let base = untrusting.base_url.clone();
    let answer = raw_create_tenant(&untrusting, &base, &proxy_header(false, [203, 0, 113, 7]), "acme", "").await;
    assert_eq!(answer, "", "no answer: the connection is closed");
    let refused = r#"shardgate_connections_closed_total{reason="proxy_header_refused"}"#;
    assert_eq!(metric(&untrusting.client, &base, refused).await, 1.0);
    // The same peer without a header is served as itself.
    create_tenant_with(&untrusting, "acme", &[]).await;
    assert_eq!(audited_client(&untrusting, "acme").await, "127.0.0.1");

    let app = TestApp::spawn_with(Backend::Sqlite, with_proxy_protocol(&["127.0.0.1/32"])).await;
    let address = app.base_url.strip_prefix("http://").unwrap().to_owned();
    let header = proxy_header(false, [203, 0, 113, 7]);
    // Stalled inside the signature, and inside the header after it.
    for sent in [&header[..7], &header[..20]] {
        let mut stream = TcpStream::connect(&address).await.unwrap();
        stream.write_all(sent).await.unwrap();
        assert_eq!(read_until_closed(&mut stream).await, "", "closed without an answer after {} bytes", sent.len());
    }
    let timed_out = r#"shardgate_connections_closed_total{reason="header_timeout"}"#;
    assert_eq!(metric(&app.client, &app.base_url, timed_out).await, 2.0);
    // An over-long header is refused from its length alone.
    let mut long = header.clone();
    long[14..16].copy_from_slice(&2000u16.to_be_bytes());
    let mut stream = TcpStream::connect(&address).await.unwrap();
    stream.write_all(&long).await.unwrap();
    assert_eq!(read_until_closed(&mut stream).await, "");
    assert_eq!(metric(&app.client, &app.base_url, refused).await, 1.0);
}

#[tokio::test]
async fn through_the_gatekeeper_forwarded_clients_have_their_own_budgets() {
    let app = TestApp::spawn_via_gatekeeper_with(Backend::Sqlite, behind(&["127.0.0.1/32"])).await;
    let first = exhaust(&app, &[("x-forwarded-for", "203.0.113.7")]).await;
    assert!(first.contains("client 203.0.113.7 "), "{first}");
    let second = exhaust(&app, &[("x-forwarded-for", "203.0.113.8")]).await;
    assert!(second.contains("client 203.0.113.8 "), "{second}");
    create_tenant_with(&app, "acme", &[("x-forwarded-for", "203.0.113.9")]).await;
    assert_eq!(audited_client(&app, "acme").await, "203.0.113.9");
}

#[tokio::test]
async fn the_gatekeeper_hands_the_client_to_its_backend_in_the_internal_credential() {
    // Both trust 127.0.0.1 and expect PROXY headers from it. The gatekeeper sends none to the
    // backend, so the backend's own reading of a connection from it is the gatekeeper itself:
    // only the signed x-shardgate-client can name the client.
    let app = TestApp::spawn_via_gatekeeper_with(Backend::Sqlite, with_proxy_protocol(&["127.0.0.1/32"])).await;
    let gatekeeper = app.base_url.clone();
    let answer = raw_create_tenant(&app, &gatekeeper, &proxy_header(false, [203, 0, 113, 7]), "acme", "").await;
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
    assert_eq!(audited_client(&app, "acme").await, "203.0.113.7");
    // A client cannot name itself to the backend: its own internal header is dropped.
    create_tenant_with(&app, "bob", &[("x-shardgate-client", "198.51.100.1")]).await;
    assert_eq!(audited_client(&app, "bob").await, "127.0.0.1");
}

/// The client address of the `valet.download` audit row of `path` (the valet audit is written in
/// batches, off the request's path: waited for, up to 10 s).
async fn audited_valet_client(app: &TestApp, path: &str) -> Value {
    let found = shardgate_tests::eventually(Duration::from_secs(10), async || {
        let page = app.admin(Method::GET, "/v1/admin/audit?action=valet.download&limit=1000", None).await;
        let page: Value = page.json().await.ok()?;
        let entry =
            page["items"].as_array()?.iter().find(|e| e["target"].as_str().is_some_and(|t| t.contains(path)))?;
        Some(entry["client_address"].clone())
    })
    .await;
    found.unwrap_or_else(|| panic!("the download of {path} is audited"))
}

/// Stores a blob at `path` for tenant acme and downloads it through a valet URL with `headers`.
async fn download_by_valet(app: &TestApp, path: &str, headers: &[(&str, &str)]) {
    let token = app.rw_token("acme");
    let stored = app
        .client
        .put(app.url(&format!("/v1/tenants/acme/blobs/{path}")))
        .bearer_auth(&token)
        .body("hello")
        .send()
        .await;
    assert!(stored.unwrap().status().is_success());
    let key = app.issue_valet_key("acme", &token, &json!({"path": path, "permission": "read"})).await;
    let url = key["url"].as_str().unwrap();
    let mut download = app.client.get(app.url(&url[url.find("/valet/").unwrap()..]));
    for (name, value) in headers {
        download = download.header(*name, *value);
    }
    assert_eq!(download.send().await.unwrap().status(), StatusCode::OK);
}

#[tokio::test]
async fn valet_downloads_are_audited_with_the_forwarded_client() {
    let app = TestApp::spawn_with(Backend::Sqlite, behind(&["127.0.0.1/32"])).await;
    app.create_tenant("acme").await;
    download_by_valet(&app, "docs/a.txt", &[("x-forwarded-for", "203.0.113.7")]).await;
    assert_eq!(audited_valet_client(&app, "docs/a.txt").await, "203.0.113.7");

    let untrusting = TestApp::spawn_with(Backend::Sqlite, behind(&["10.0.0.0/8"])).await;
    untrusting.create_tenant("acme").await;
    download_by_valet(&untrusting, "docs/b.txt", &[("x-forwarded-for", "203.0.113.7")]).await;
    assert_eq!(audited_valet_client(&untrusting, "docs/b.txt").await, "127.0.0.1");

    let gated = TestApp::spawn_via_gatekeeper_with(Backend::Sqlite, behind(&["127.0.0.1/32"])).await;
    gated.create_tenant("acme").await;
    download_by_valet(&gated, "docs/c.txt", &[("x-forwarded-for", "203.0.113.8")]).await;
    assert_eq!(audited_valet_client(&gated, "docs/c.txt").await, "203.0.113.8");
}

#[tokio::test]
async fn a_proxy_header_comes_before_the_tls_handshake() {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, ServerName};
    let ca = shardgate_tests::TestCa::new("proxy-ca");
    let issued = ca.issue("gateway", &["127.0.0.1", "localhost"]);
    let tls = shardgate_api::config::ListenerTls { cert_file: issued.cert_path.clone(), key_file: issued.key_path };
    let app = TestApp::spawn_with(Backend::Sqlite, |config| {
        with_proxy_protocol(&["127.0.0.1/32"])(config);
        config.tls = Some(tls);
    })
    .await;
    let address = app.base_url.strip_prefix("https://").expect("an HTTPS listener").to_owned();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_slice(ca.cert_pem.as_bytes()).unwrap()).unwrap();
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let mut stream = TcpStream::connect(&address).await.unwrap();
    stream.write_all(&proxy_header(false, [203, 0, 113, 7])).await.unwrap();
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(client));
    let mut tls = connector.connect(ServerName::try_from("127.0.0.1").unwrap(), stream).await.unwrap();
    let body = json!({ "id": "acme" }).to_string();
    let request = format!(
        "POST /v1/admin/tenants HTTP/1.1\r\nhost: {address}\r\nauthorization: Bearer {}\r\n\
         content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        app.admin_token(),
        body.len()
    );
    tls.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(20), tls.read_to_end(&mut answer)).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
    // The audit is read over HTTPS too: a client trusting the test CA.
    let https = ca.https_client();
    let url = app.url("/v1/admin/audit?action=tenant.create&limit=1000");
    let page: Value = https.get(url).bearer_auth(app.admin_token()).send().await.unwrap().json().await.unwrap();
    let entry = page["items"].as_array().unwrap().iter().find(|e| e["target"] == "tenant:acme").cloned();
    assert_eq!(entry.expect("audited")["client_address"], "203.0.113.7");
}
