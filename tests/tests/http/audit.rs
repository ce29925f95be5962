//! Every admin action is in the audit log, with who did it, to what, and the request id; failed
//! actions leave nothing behind. The log reads oldest or newest first, filtered by action (or a
//! prefix of actions) and by actor, in pages either way.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shardgate_tests::{Backend, TestApp, expect_json, expect_problem};

shardgate_tests::conformance!(admin_actions_are_audited_with_actor_target_and_request_id);
shardgate_tests::on_both_engines!(the_audit_log_reads_newest_first_filtered_by_action_and_actor);
shardgate_tests::conformance!(a_clients_request_id_is_kept_beside_the_servers_own_never_instead_of_it);

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

/// Every page of `query`, following the cursor: the records' `(action, target, actor)`, with the
/// ids in the order read.
async fn audit_pages(app: &TestApp, query: &str) -> (Vec<i64>, Vec<(String, String, String)>) {
    let (mut ids, mut records) = (Vec::new(), Vec::new());
    let mut next = query.to_owned();
    loop {
        let page = audit_page(app, &next).await;
        for e in page["items"].as_array().unwrap() {
            ids.push(e["id"].as_i64().unwrap());
            let text = |field: &str| e[field].as_str().unwrap().to_owned();
            records.push((text("action"), text("target"), text("actor")));
        }
        match page["next_cursor"].as_str() {
            Some(cursor) => next = format!("{query}&cursor={cursor}"),
            None => return (ids, records),
        }
    }
}

async fn the_audit_log_reads_newest_first_filtered_by_action_and_actor(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    // What start-up recorded (the seeded shards) stays out of the expectations below.
    let (earlier, _) = audit_pages(&app, "limit=1000").await;
    let other = app.admin_token_for("operator-2");
    app.create_tenant("alpha").await;
    app.create_tenant("beta").await;
    let path = "/v1/admin/tenants/alpha";
    admin_action(&app, Method::PATCH, path, Some(&json!({"tier": "premium"})), StatusCode::OK).await;
    app.set_shard_state("shard-1", "read_only").await;
    app.set_shard_state("shard-1", "active").await;
    let response = app.send(Method::POST, "/v1/admin/tenants", Some(&other), Some(&json!({"id": "gamma"})), &[]).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let response = app.send(Method::DELETE, "/v1/admin/tenants/beta", Some(&other), None, &[]).await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);

    let ours = |(ids, records): (Vec<i64>, Vec<(String, String, String)>)| -> Vec<(String, String, String)> {
        ids.iter().zip(records).filter(|(id, _)| !earlier.contains(*id)).map(|(_, r)| r).collect()
    };
    let record = |action: &str, target: &str, actor: &str| (action.to_owned(), target.to_owned(), actor.to_owned());
    let oldest_first = vec![
        record("tenant.create", "tenant:alpha", "tester"),
        record("tenant.create", "tenant:beta", "tester"),
        record("tenant.update", "tenant:alpha", "tester"),
        record("shard.state", "shard:shard-1 read_only", "tester"),
        record("shard.state", "shard:shard-1 active", "tester"),
        record("tenant.create", "tenant:gamma", "operator-2"),
        record("tenant.delete", "tenant:beta", "operator-2"),
    ];
    let newest_first: Vec<_> = oldest_first.iter().rev().cloned().collect();
    assert_eq!(ours(audit_pages(&app, "limit=1000").await), oldest_first);
    assert_eq!(ours(audit_pages(&app, "limit=1000&order=oldest").await), oldest_first);

    // Newest first, whole and in pages of two: the same records, the other way round, each once.
    let (all_newest, _) = audit_pages(&app, "order=newest&limit=1000").await;
    let (all_oldest, _) = audit_pages(&app, "limit=1000").await;
    assert_eq!(all_newest, all_oldest.iter().rev().copied().collect::<Vec<_>>());
    assert_eq!(ours(audit_pages(&app, "order=newest&limit=2").await), newest_first);
    assert_eq!(audit_pages(&app, "order=newest&limit=2").await.0, all_newest);

    // One action exactly; a prefix ending in `.`; a prefix without its `.` names no action.
    let created = |actor_filter: fn(&(String, String, String)) -> bool| -> Vec<_> {
        oldest_first.iter().filter(|r| r.0 == "tenant.create" && actor_filter(r)).cloned().collect()
    };
    assert_eq!(ours(audit_pages(&app, "action=tenant.create").await), created(|_| true));
    let tenant_actions: Vec<_> = oldest_first.iter().filter(|r| r.0.starts_with("tenant.")).cloned().collect();
    assert_eq!(ours(audit_pages(&app, "action=tenant.&limit=2").await), tenant_actions);
    let newest_tenant_actions: Vec<_> = tenant_actions.iter().rev().cloned().collect();
    assert_eq!(ours(audit_pages(&app, "action=tenant.&order=newest&limit=2").await), newest_tenant_actions);
    assert!(audit_pages(&app, "action=tenant.creat").await.1.is_empty());
    assert!(audit_pages(&app, "action=tenant").await.1.is_empty());

    // By actor, alone and with an action, in either order.
    let by_other: Vec<_> = oldest_first.iter().filter(|r| r.2 == "operator-2").cloned().collect();
    assert_eq!(audit_pages(&app, "actor=operator-2").await.1, by_other);
    assert_eq!(
        audit_pages(&app, "actor=operator-2&action=tenant.&order=newest&limit=1").await.1,
        by_other.iter().rev().cloned().collect::<Vec<_>>()
    );
    assert_eq!(audit_pages(&app, "actor=operator-2&action=tenant.create").await.1, created(|r| r.2 == "operator-2"));
    assert!(audit_pages(&app, "actor=operator").await.1.is_empty());

    // Values the log cannot mean are refused, saying what is expected.
    for (query, expects) in [
        ("order=sideways", "newest"),
        ("order=", "newest"),
        ("action=Tenant.create", "prefix"),
        ("action=tenant.%25", "prefix"),
        ("action=.", "prefix"),
        ("action=", "prefix"),
        ("actor=", "actor"),
    ] {
        let response = app.admin(Method::GET, &format!("/v1/admin/audit?{query}"), None).await;
        let problem = expect_problem(response, StatusCode::BAD_REQUEST, "invalid_query").await;
        assert!(problem["detail"].as_str().unwrap().contains(expects), "{query}: {problem}");
    }
}

/// A client's `x-request-id` is the client's to choose, so any caller could send the id of another
/// caller's request: the audit log keeps the server's own id (unique, the one the response gives)
/// as the entry's request id, and the client's beside it.
async fn a_clients_request_id_is_kept_beside_the_servers_own_never_instead_of_it(app: TestApp) {
    let token = app.admin_token();
    let borrowed = "the-id-of-someone-elses-request";
    let mut ids = Vec::new();
    for tenant in ["first", "second"] {
        let body = json!({"id": tenant});
        let response =
            app.send(Method::POST, "/v1/admin/tenants", Some(&token), Some(&body), &[("x-request-id", borrowed)]).await;
        assert_eq!(response.status(), StatusCode::CREATED);
        let id = response.headers()["x-request-id"].to_str().unwrap().to_owned();
        assert_ne!(id, borrowed, "the response names the server's own request id, not the one the client sent");
        ids.push(id);
    }
    assert_ne!(ids[0], ids[1], "two requests that sent one id still have ids of their own");
    let page = audit_page(&app, "action=tenant.create&order=newest&limit=2").await;
    let mut entries: Vec<(String, Value)> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["request_id"].as_str().unwrap().to_owned(), e["client_request_id"].clone()))
        .collect();
    entries.reverse();
    assert_eq!(
        entries,
        vec![(ids[0].clone(), json!(borrowed)), (ids[1].clone(), json!(borrowed))],
        "each entry has the server's id as its request id and the client's beside it"
    );
    // Without a client id, there is none beside the server's.
    let response = app.admin(Method::POST, "/v1/admin/tenants", Some(&json!({"id": "third"}))).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let page = audit_page(&app, "action=tenant.create&order=newest&limit=1").await;
    assert_eq!(page["items"][0]["client_request_id"], Value::Null);
}
