//! Operations endpoints: health, readiness, metrics, OpenAPI and the docs UI.

use reqwest::{Method, StatusCode};
use serde_json::json;
use shardgate_tests::{Backend, SEEDED_SHARDS, TestApp, eventually, expect_json};

shardgate_tests::conformance!(
    health_and_readiness_report_every_component,
    metrics_count_requests_by_route_and_status,
    the_openapi_document_and_docs_ui_are_served_from_the_binary,
);

async fn health_and_readiness_report_every_component(app: TestApp) {
    let response = app.send(Method::GET, "/healthz", None, None, &[]).await;
    let body = expect_json(response, StatusCode::OK).await;
    assert_eq!(body["status"], "ok");

    let response = app.send(Method::GET, "/readyz", None, None, &[]).await;
    let body = expect_json(response, StatusCode::OK).await;
    assert_eq!(body["status"], "ready", "{body}");
    assert_eq!(body["components"]["catalog"]["status"], "up", "{body}");
    for shard in SEEDED_SHARDS {
        assert_eq!(body["components"][shard]["status"], "up", "{shard}: {body}");
    }
    // No secrets in the readiness report.
    let text = body.to_string();
    for (_, url) in app.shard_urls() {
        assert!(!text.contains(&url), "{text}");
    }
}

async fn metrics_count_requests_by_route_and_status(app: TestApp) {
    app.create_tenant("acme").await;
    app.put_record("acme", "docs", "d1", &json!(1)).await;
    app.get_record("acme", "docs", "missing").await;
    app.send(Method::GET, "/healthz", None, None, &[]).await;

    let response = app.client.get(format!("{}/metrics", app.metrics_base())).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let content_type = response.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(content_type.starts_with("text/plain") || content_type.starts_with("application/openmetrics-text"));
    let text = response.text().await.unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#') && l.contains("http_requests_total{")).collect();
    assert!(!lines.is_empty(), "no http_requests_total samples: {text}");
    let record_route = "/v1/tenants/{tenant}/collections/{collection}/records/{key}";
    assert!(
        lines.iter().any(|l| l.contains(record_route) && l.contains("\"201\"")),
        "the created record is counted under its route template and status: {lines:#?}"
    );
    assert!(
        lines.iter().any(|l| l.contains(record_route) && l.contains("\"404\"")),
        "the 404 is counted under its route template and status: {lines:#?}"
    );
    assert!(!text.contains("/records/d1"), "raw paths are not labels (cardinality): {lines:#?}");
}

async fn the_openapi_document_and_docs_ui_are_served_from_the_binary(app: TestApp) {
    let response = app.send(Method::GET, "/openapi.json", None, None, &[]).await;
    let doc = expect_json(response, StatusCode::OK).await;
    assert!(doc["openapi"].as_str().unwrap_or("").starts_with('3'), "{}", doc["openapi"]);
    let paths = doc["paths"].as_object().expect("paths");
    for path in [
        "/v1/tenants/{tenant}/collections/{collection}/records/{key}",
        "/v1/tenants/{tenant}/collections/{collection}/records",
        "/v1/admin/tenants",
        "/v1/admin/shards",
        "/v1/admin/shard-map",
        "/v1/admin/route",
    ] {
        assert!(paths.contains_key(path), "openapi.json documents {path}");
    }

    let response = app.client.get(app.url("/docs/")).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let content_type = response.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(content_type.starts_with("text/html"), "{content_type}");
    let html = response.text().await.unwrap();
    assert!(html.to_lowercase().contains("swagger"), "the docs page is Swagger UI");
    for tag in html.split("<script").skip(1) {
        let tag = &tag[..tag.find('>').unwrap_or(tag.len())];
        assert!(!tag.contains("http://") && !tag.contains("https://"), "a script comes from a CDN: <script{tag}>");
    }
    for tag in html.split("<link").skip(1) {
        let tag = &tag[..tag.find('>').unwrap_or(tag.len())];
        assert!(!tag.contains("http://") && !tag.contains("https://"), "a stylesheet comes from a CDN: <link{tag}>");
    }
}

/// PostgreSQL only: a shard database that disappears is reported down, by name, but the
/// instance stays ready (it still serves every other shard's tenants).
#[tokio::test]
async fn readiness_names_a_shard_whose_database_is_gone_and_stays_ready() {
    let app = TestApp::spawn(Backend::Postgres).await;
    let body = expect_json(app.send(Method::GET, "/readyz", None, None, &[]).await, StatusCode::OK).await;
    assert_eq!(body["status"], "ready");
    assert_eq!(body["components"]["shard-3"]["breaker"], "closed", "{body}");

    let db = app.pg_database_of("shard-3").unwrap();
    app.drop_pg_database(&db).await;

    let body = eventually(std::time::Duration::from_secs(10), async || {
        let response = app.send(Method::GET, "/readyz", None, None, &[]).await;
        let status = response.status();
        let body = response.json::<serde_json::Value>().await.unwrap();
        (body["components"]["shard-3"]["status"] != "up").then_some((status, body))
    })
    .await
    .map(|(status, body)| {
        assert_eq!(status, StatusCode::OK, "a shard being down does not make the instance unready: {body}");
        body
    })
    .expect("/readyz reports the shard down once its database is gone");
    assert_eq!(body["status"], "ready", "{body}");
    assert_eq!(body["components"]["shard-3"]["status"], "down", "{body}");
    assert_eq!(body["components"]["catalog"]["status"], "up", "{body}");
    assert_eq!(body["components"]["shard-0"]["status"], "up", "{body}");
    assert!(!body.to_string().contains(&db), "the database name does not leak: {body}");
}

shardgate_tests::conformance!(every_response_forbids_content_sniffing);

async fn every_response_forbids_content_sniffing(app: shardgate_tests::TestApp) {
    for path in ["/healthz", "/v1/admin/shards", "/no/such/route", "/docs/"] {
        let response = app.client.get(app.url(path)).send().await.unwrap();
        assert_eq!(response.headers()["x-content-type-options"], "nosniff", "{path}");
    }
}

#[tokio::test]
async fn only_configured_origins_get_cross_origin_access() {
    let app = shardgate_tests::TestApp::spawn_with(shardgate_tests::Backend::Sqlite, |c| {
        c.cors.allowed_origins = vec!["https://app.example.com".to_owned()];
    })
    .await;
    let url = app.url("/v1/tenants/acme/collections/c/records/k");
    let preflight = |origin: &'static str| {
        app.client
            .request(reqwest::Method::OPTIONS, &url)
            .header("origin", origin)
            .header("access-control-request-method", "PUT")
            .header("access-control-request-headers", "authorization,if-match")
            .send()
    };
    let allowed = preflight("https://app.example.com").await.unwrap();
    assert!(allowed.status().is_success());
    assert_eq!(allowed.headers()["access-control-allow-origin"], "https://app.example.com");
    let methods = allowed.headers()["access-control-allow-methods"].to_str().unwrap().to_owned();
    assert!(methods.contains("PUT"), "{methods}");
    let other = preflight("https://evil.example").await.unwrap();
    assert!(other.headers().get("access-control-allow-origin").is_none(), "other origins get no CORS grant");

    // Without configuration, no CORS headers at all.
    let plain = shardgate_tests::TestApp::spawn(shardgate_tests::Backend::Sqlite).await;
    let response =
        plain.client.get(plain.url("/healthz")).header("origin", "https://app.example.com").send().await.unwrap();
    assert!(response.headers().get("access-control-allow-origin").is_none());
}

/// The docs page, where a token may be pasted, may not be framed by another page (clickjacking),
/// like the console.
#[tokio::test]
async fn the_docs_page_may_not_be_framed() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    for path in ["/docs/", "/docs/index.html", "/docs/swagger-initializer.js"] {
        let response = app.client.get(app.url(path)).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        let headers = response.headers();
        assert_eq!(headers.get("x-frame-options").map(|v| v.to_str().unwrap()), Some("DENY"), "{path}: {headers:?}");
        let policy = headers.get("content-security-policy").map(|v| v.to_str().unwrap().to_owned());
        assert!(
            policy.as_deref().is_some_and(|p| p.contains("frame-ancestors 'none'")),
            "{path}: no frame-ancestors in {policy:?}"
        );
    }
}

/// `curl .../metrics` (no `Accept`, or `*/*`) gets the Prometheus text format, which
/// `promtool check metrics` reads; OpenMetrics only when the scraper asks for it (as
/// Prometheus does).
#[tokio::test]
async fn metrics_answer_the_prometheus_text_format_unless_openmetrics_is_asked_for() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let url = format!("{}/metrics", app.metrics_base());
    for accept in [None, Some("*/*"), Some("text/plain")] {
        let mut request = app.client.get(&url);
        if let Some(accept) = accept {
            request = request.header("accept", accept);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let content_type = response.headers()["content-type"].to_str().unwrap().to_owned();
        assert!(content_type.starts_with("text/plain; version=0.0.4"), "Accept {accept:?}: {content_type}");
        let text = response.text().await.unwrap();
        assert!(!text.contains("# EOF") && !text.contains("# UNIT "), "Accept {accept:?}: OpenMetrics lines: {text}");
        if let Some(verdict) = promtool_check(&text) {
            assert!(verdict.is_ok(), "promtool check metrics: {verdict:?}");
        }
    }
    let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,\
                      text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    let response = app.client.get(&url).header("accept", prometheus).send().await.unwrap();
    let content_type = response.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(content_type.starts_with("application/openmetrics-text"), "{content_type}");
    assert!(response.text().await.unwrap().ends_with("# EOF\n"));
}

/// `promtool check metrics` of `text`, if promtool is installed (`scripts/promtool.sh`).
fn promtool_check(text: &str) -> Option<Result<(), String>> {
    use std::io::Write;
    let mut child = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .ok()?;
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    // Exit 3 is lint problems only (names, help texts), which are advice, not a broken format.
    if output.status.success() || output.status.code() == Some(3) {
        Some(Ok(()))
    } else {
        Some(Err(format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))))
    }
}

/// The first scrape after start declares no family without samples: the job counts, read from
/// the catalog in the background, are left out until they were read.
#[tokio::test]
async fn the_first_scrape_declares_no_family_without_samples() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let url = format!("{}/metrics", app.metrics_base());
    let text = app.client.get(&url).header("accept", "text/plain").send().await.unwrap().text().await.unwrap();
    let jobs_declared = text.lines().any(|line| line.starts_with("# TYPE shardgate_jobs "));
    let jobs_samples = text.lines().filter(|line| line.starts_with("shardgate_jobs{")).count();
    assert!(!jobs_declared || jobs_samples > 0, "shardgate_jobs declared with no samples on the first scrape:\n{text}");
}

/// PostgreSQL only: while the catalog's cluster is frozen, the instance keeps serving tenants on
/// the shard map it holds, so it stays ready (a catalog outage must not take every instance out
/// of its Service): `/readyz` answers 200 with the catalog `degraded`, and `/metrics` says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_catalog_leaves_the_instance_ready_with_the_catalog_degraded() {
    use secrecy::SecretString;
    use std::time::Duration;
    let cluster = shardgate_tests::PgCluster::start().await;
    let catalog = cluster.create_database("degraded_catalog").await;
    let app = TestApp::spawn_with(Backend::Postgres, |config| {
        config.storage.catalog_url = Some(SecretString::from(catalog));
    })
    .await;
    app.create_tenant("acme").await;
    expect_json(app.put_record("acme", "docs", "d1", &json!({"n": 1})).await, StatusCode::CREATED).await;
    let degraded = || shardgate_tests::metric(&app.client, app.metrics_base(), "shardgate_catalog_degraded");
    assert_eq!(degraded().await, 0.0);

    cluster.freeze();
    // An admin change needs the catalog: it ends with 503, and the catalog's breaker opens.
    let late = json!({"id": "late"});
    let change = app.admin(Method::POST, "/v1/admin/tenants", Some(&late));
    let response = tokio::time::timeout(Duration::from_secs(30), change).await.expect("an admin change ends");
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);

    // Tenants keep reading and writing.
    let read = tokio::time::timeout(Duration::from_secs(30), app.get_record("acme", "docs", "d1")).await.unwrap();
    expect_json(read, StatusCode::OK).await;
    let value = json!({"n": 2});
    let write = app.put_record("acme", "docs", "d1", &value);
    expect_json(tokio::time::timeout(Duration::from_secs(30), write).await.unwrap(), StatusCode::OK).await;
    // And the instance stays ready, saying the catalog is degraded.
    let ready = tokio::time::timeout(Duration::from_secs(30), app.send(Method::GET, "/readyz", None, None, &[]))
        .await
        .expect("readiness answers");
    let status = ready.status();
    let body = ready.json::<serde_json::Value>().await.unwrap();
    assert_eq!(status, StatusCode::OK, "a frozen catalog makes the instance unready: {body}");
    assert_eq!(body["status"], "ready", "{body}");
    assert_eq!(body["components"]["catalog"]["status"], "degraded", "{body}");
    assert!(body["components"]["catalog"]["error"].is_string(), "{body}");
    assert_eq!(degraded().await, 1.0, "shardgate_catalog_degraded while the breaker is open");

    cluster.thaw();
    let back = eventually(Duration::from_secs(30), async || {
        let body = app.send(Method::GET, "/readyz", None, None, &[]).await.json::<serde_json::Value>().await.ok()?;
        (body["components"]["catalog"]["status"] == "up").then_some(body)
    })
    .await;
    assert!(back.is_some(), "the catalog is up again once thawed");
}
