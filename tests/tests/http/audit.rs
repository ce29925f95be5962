//! Every admin action is in the audit log, with who did it, to what, and the request id; failed
//! actions leave nothing behind.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shardgate_tests::{TestApp, expect_json, expect_problem};

shardgate_tests::conformance!(admin_actions_are_audited_with_actor_target_and_request_id);

async fn audit_page(app: &TestApp, query: &str) -> Value {
    expect_json(app.admin(Method::GET, &format!("/v1/admin/audit?{query}"), None).await, StatusCode::OK).await
}

async fn admin_action(app: &TestApp, method: Method, path: &str, body: Option<&Value>, status: StatusCode) -> String {
    let response = app.admin(method, path, body).await;
    assert_eq!(response.status(), status, "{path}");
    response.headers()["x-request-id"].to_str().unwrap().to_owned()
}

async fn admin_actions_are_audited_with_actor_target_and_request_id(app: TestApp) {
    let before = audit_page(&app, "limit=1000").await["items"].as_array().unwrap().len();
    let created =
        admin_action(&app, Method::POST, "/v1/admin/tenants", Some(&json!({"id": "acme"})), StatusCode::CREATED).await;
    admin_action(&app, Method::POST, "/v1/admin/tenants", Some(&json!({"id": "acme"})), StatusCode::CONFLICT).await;
    let renamed = admin_action(
        &app,
        Method::PATCH,
        "/v1/admin/tenants/acme",
        Some(&json!({"name": "Acme", "tier": "premium"})),
        StatusCode::OK,
    )
    .await;
    let frozen = admin_action(
        &app,
        Method::PATCH,
        "/v1/admin/shards/shard-1",
        Some(&json!({"state": "read_only"})),
        StatusCode::OK,
    )
    .await;
    let deleted = admin_action(&app, Method::DELETE, "/v1/admin/tenants/acme", None, StatusCode::NO_CONTENT).await;

    let items = audit_page(&app, "limit=1000").await["items"].as_array().unwrap().clone();
    let ours: Vec<(String, String, String, Value, String)> = items[before..]
        .iter()
        .map(|e| {
            (
                e["action"].as_str().unwrap().to_owned(),
                e["target"].as_str().unwrap().to_owned(),
                e["actor"].as_str().unwrap().to_owned(),
                e["tenant"].clone(),
                e["request_id"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let tester = "tester".to_owned();
    assert_eq!(
        ours,
        vec![
            ("tenant.create".into(), "tenant:acme".into(), tester.clone(), json!("acme"), created),
            ("tenant.update".into(), "tenant:acme".into(), tester.clone(), json!("acme"), renamed),
            ("shard.state".into(), "shard:shard-1 read_only".into(), tester.clone(), Value::Null, frozen),
            ("tenant.delete".into(), "tenant:acme".into(), tester, json!("acme"), deleted),
        ],
        "one entry per successful action, none for the refused duplicate"
    );
    for entry in &items {
        assert!(shardgate_tests::is_rfc3339(entry["at"].as_str().unwrap()));
    }

    // Paging: one by one, every entry exactly once, in order.
    let mut seen = Vec::new();
    let mut query = "limit=1".to_owned();
    loop {
        let page = audit_page(&app, &query).await;
        seen.extend(page["items"].as_array().unwrap().iter().map(|e| e["id"].as_i64().unwrap()));
        match page["next_cursor"].as_str() {
            Some(cursor) => query = format!("limit=1&cursor={cursor}"),
            None => break,
        }
    }
    let all: Vec<i64> = items.iter().map(|e| e["id"].as_i64().unwrap()).collect();
    assert_eq!(seen, all);
    expect_problem(
        app.admin(Method::GET, "/v1/admin/audit?cursor=bogus", None).await,
        StatusCode::BAD_REQUEST,
        "invalid_cursor",
    )
    .await;

    // Only admins read it.
    let tenant_token = app.rw_token("acme");
    let response = app.send(Method::GET, "/v1/admin/audit", Some(&tenant_token), None, &[]).await;
    expect_problem(response, StatusCode::FORBIDDEN, "insufficient_scope").await;
}
