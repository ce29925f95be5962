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
