//! A tenant's token reaches its own data only; other tenants look like they do not exist.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shardgate_gatekeeper::Scope;
use shardgate_tests::{
    ISSUER, SECRET, TestApp, expect_json, expect_problem, expect_unauthorized, record_path, records_path,
};

shardgate_tests::conformance!(
    a_tenant_cannot_see_or_touch_another_tenants_records,
    a_tenant_token_is_forbidden_on_every_admin_endpoint,
    a_token_needs_the_scope_of_the_operation,
    a_token_without_a_tenant_claim_is_told_so_on_tenant_data,
    a_tenant_token_with_the_admin_scope_is_refused_everywhere,
    a_scope_claim_is_split_on_single_spaces_only,
);

/// (method, path, body, headers)
type Call<'a> = (Method, &'a str, Option<Value>, &'a [(&'a str, &'a str)]);

/// The parts of a problem that must not differ between "exists but not yours" and "missing".
fn identity(problem: &Value) -> Value {
    json!({"type": problem["type"], "title": problem["title"], "status": problem["status"], "code": problem["code"]})
}

async fn a_tenant_cannot_see_or_touch_another_tenants_records(app: TestApp) {
    app.create_tenant("alice").await;
    app.create_tenant("bob").await;
    let created =
        expect_json(app.put_record("bob", "secrets", "s1", &json!({"pin": 1234})).await, StatusCode::CREATED).await;
    let alice = app.rw_token("alice");
    let all_scopes = app.token("alice", &[Scope::Read, Scope::Write, Scope::Manage]);

    let mut identities = Vec::new();
    for victim in ["bob", "nobody"] {
        let record = record_path(victim, "secrets", "s1");
        let list = format!("{}?limit=10", records_path(victim, "secrets"));
        for token in [&alice, &all_scopes] {
            let calls: [Call; 7] = [
                (Method::PUT, &record, Some(json!({"pin": 0})), &[]),
                (Method::PUT, &record, Some(json!({"pin": 0})), &[("if-match", "*")]),
                (Method::PUT, &record, Some(json!({"pin": 0})), &[("if-none-match", "*")]),
                (Method::GET, &record, None, &[]),
                (Method::GET, &record, None, &[("if-none-match", "\"1\"")]),
                (Method::DELETE, &record, None, &[]),
                (Method::GET, &list, None, &[]),
            ];
            for (method, path, body, headers) in calls {
                let response = app.send(method.clone(), path, Some(token), body.as_ref(), headers).await;
                let problem = expect_problem(response, StatusCode::NOT_FOUND, "tenant_not_found").await;
                identities.push((format!("{method} {path} {headers:?}"), identity(&problem)));
            }
        }
    }
    // Identical whether the other tenant exists or not.
    let first = identities[0].1.clone();
    for (call, problem) in &identities {
        assert_eq!(problem, &first, "{call} answers like a missing tenant");
    }

    // Bob's record is untouched.
    let body = expect_json(app.get_record("bob", "secrets", "s1").await, StatusCode::OK).await;
    assert_eq!(body, created);
    let listing = expect_json(app.list_records("bob", "secrets", "").await, StatusCode::OK).await;
    assert_eq!(listing["items"], json!([created]));
    // And alice has nothing.
    let listing = expect_json(app.list_records("alice", "secrets", "").await, StatusCode::OK).await;
    assert_eq!(listing["items"], json!([]));
}

async fn a_tenant_token_is_forbidden_on_every_admin_endpoint(app: TestApp) {
    app.create_tenant("alice").await;
    let tenant_token = app.token("alice", &[Scope::Read, Scope::Write, Scope::Manage]);
    let admin_endpoints: Vec<(Method, &str, Option<Value>)> = vec![
        (Method::GET, "/v1/admin/tenants", None),
        (Method::POST, "/v1/admin/tenants", Some(json!({"id": "mallory"}))),
        (Method::GET, "/v1/admin/tenants/alice", None),
        (Method::PATCH, "/v1/admin/tenants/alice", Some(json!({"tier": "premium"}))),
        (Method::DELETE, "/v1/admin/tenants/alice", None),
        (Method::GET, "/v1/admin/shards", None),
        (Method::POST, "/v1/admin/shards", Some(json!({"id": "evil", "url": "sqlite:///tmp/evil.db"}))),
        (Method::GET, "/v1/admin/shards/shard-0", None),
        (Method::PATCH, "/v1/admin/shards/shard-0", Some(json!({"state": "offline"}))),
        (Method::DELETE, "/v1/admin/shards/shard-0", None),
        (Method::GET, "/v1/admin/shard-map", None),
        (Method::GET, "/v1/admin/route?tenant=alice&collection=c&key=k", None),
    ];
    for (method, path, body) in &admin_endpoints {
        let response = app.send(method.clone(), path, Some(&tenant_token), body.as_ref(), &[]).await;
        expect_problem(response, StatusCode::FORBIDDEN, "insufficient_scope").await;
        let response = app.send(method.clone(), path, None, body.as_ref(), &[]).await;
        expect_unauthorized(response).await;
    }
    // Nothing changed.
    let tenants = expect_json(app.admin(Method::GET, "/v1/admin/tenants", None).await, StatusCode::OK).await;
    assert_eq!(tenants["items"].as_array().unwrap().len(), 1);
    assert_eq!(tenants["items"][0]["tier"], "standard");
    let shards = expect_json(app.admin(Method::GET, "/v1/admin/shards", None).await, StatusCode::OK).await;
    assert_eq!(shards["items"].as_array().unwrap().len(), 4);
    assert!(shards["items"].as_array().unwrap().iter().all(|s| s["state"] == "active"));
}

async fn a_token_needs_the_scope_of_the_operation(app: TestApp) {
    app.create_tenant("alice").await;
    app.put_record("alice", "c", "k", &json!(1)).await;
    let read_only = app.token("alice", &[Scope::Read]);
    let write_only = app.token("alice", &[Scope::Write]);
    let no_scope = app.token("alice", &[]);
    let record = record_path("alice", "c", "k");
    let list = records_path("alice", "c");

    for token in [&read_only, &no_scope] {
        let response = app.send(Method::PUT, &record, Some(token), Some(&json!(2)), &[]).await;
        expect_problem(response, StatusCode::FORBIDDEN, "insufficient_scope").await;
        let response = app.send(Method::DELETE, &record, Some(token), None, &[]).await;
        expect_problem(response, StatusCode::FORBIDDEN, "insufficient_scope").await;
    }
    for token in [&write_only, &no_scope] {
        let response = app.send(Method::GET, &record, Some(token), None, &[]).await;
        expect_problem(response, StatusCode::FORBIDDEN, "insufficient_scope").await;
        let response = app.send(Method::GET, &list, Some(token), None, &[]).await;
        expect_problem(response, StatusCode::FORBIDDEN, "insufficient_scope").await;
    }
    expect_json(app.send(Method::GET, &record, Some(&read_only), None, &[]).await, StatusCode::OK).await;
    expect_json(app.send(Method::GET, &list, Some(&read_only), None, &[]).await, StatusCode::OK).await;
    let body =
        expect_json(app.send(Method::PUT, &record, Some(&write_only), Some(&json!(3)), &[]).await, StatusCode::OK)
            .await;
    assert_eq!(body["version"], 2, "the forbidden writes changed nothing");

    // An admin token is not a tenant token: no scope for records.
    let admin = app.admin_token();
    let response = app.send(Method::GET, &record, Some(&admin), None, &[]).await;
    assert!(
        response.status() == StatusCode::NOT_FOUND || response.status() == StatusCode::FORBIDDEN,
        "an admin token does not read tenant records: {}",
        response.status()
    );
}

async fn a_token_without_a_tenant_claim_is_told_so_on_tenant_data(app: TestApp) {
    app.create_tenant("acme").await;
    let admin = app.admin_token();
    let record = record_path("acme", "docs", "a");
    let calls: [(Method, String, Option<Value>); 5] = [
        (Method::GET, record.clone(), None),
        (Method::PUT, record.clone(), Some(json!({"a": 1}))),
        (Method::GET, records_path("acme", "docs"), None),
        (Method::GET, "/v1/tenants/acme/blobs/photo.bin".to_owned(), None),
        (Method::POST, "/v1/tenants/acme/valet-keys".to_owned(), Some(json!({"path": "p", "permission": "read"}))),
    ];
    for (method, path, body) in calls {
        let response = app.send(method.clone(), &path, Some(&admin), body.as_ref(), &[]).await;
        let problem = expect_problem(response, StatusCode::FORBIDDEN, "missing_tenant_claim").await;
        let detail = problem["detail"].as_str().unwrap();
        assert!(detail.contains("`tenant` claim") && detail.contains("--tenant acme"), "{method} {path}: {detail}");
    }
    // The same for a tenant that does not exist: the answer says nothing about which tenants do.
    let response = app.send(Method::GET, &record_path("nobody", "docs", "a"), Some(&admin), None, &[]).await;
    expect_problem(response, StatusCode::FORBIDDEN, "missing_tenant_claim").await;
}

/// An HS256 token of the test issuer with these `tenant` and `scope` claims, as an identity
/// provider might sign it (`shardgate token` would not).
fn signed_token(tenant: &str, scope: &str) -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let claims =
        json!({"iss": ISSUER, "sub": "someone", "tenant": tenant, "scope": scope, "iat": now, "exp": now + 600});
    let key = jsonwebtoken::EncodingKey::from_secret(SECRET.as_bytes());
    jsonwebtoken::encode(&jsonwebtoken::Header::default(), &claims, &key).unwrap()
}

async fn a_tenant_token_with_the_admin_scope_is_refused_everywhere(app: TestApp) {
    app.create_tenant("alice").await;
    app.create_tenant("bob").await;
    app.put_record("alice", "c", "k", &json!(1)).await;
    let tenant_admin = signed_token("alice", "read write admin");
    let record = record_path("alice", "c", "k");
    let calls: [Call; 7] = [
        (Method::GET, "/v1/admin/tenants", None, &[]),
        (Method::PATCH, "/v1/admin/tenants/bob", Some(json!({"rate_limit": {"per_second": 1, "burst": 1}})), &[]),
        (Method::DELETE, "/v1/admin/tenants/bob", None, &[]),
        (Method::GET, &record, None, &[]),
        (Method::PUT, &record, Some(json!(2)), &[]),
        (Method::GET, "/v1/tenants/alice/blobs", None, &[]),
        (Method::GET, "/v1/tenants/bob/blobs", None, &[]),
    ];
    let refuse_all = async |what: &str| {
        for (method, path, body, headers) in &calls {
            let response = app.send(method.clone(), path, Some(&tenant_admin), body.as_ref(), headers).await;
            let problem = expect_problem(response, StatusCode::FORBIDDEN, "tenant_token_with_admin_scope").await;
            let detail = problem["detail"].as_str().unwrap();
            assert!(detail.contains("never a platform admin"), "{what}: {method} {path}: {problem}");
        }
    };
    refuse_all("its tenant exists").await;
    // Its own tenant deleted, it is still no admin.
    let deleted = app.admin(Method::DELETE, "/v1/admin/tenants/alice", None).await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    refuse_all("its tenant deleted").await;
    // Nothing changed: bob is still there, with no rate limit of its own.
    let bob = expect_json(app.admin(Method::GET, "/v1/admin/tenants/bob", None).await, StatusCode::OK).await;
    assert!(bob["rate_limit"].is_null(), "{bob}");
    // The same tenant's token without `admin` works.
    app.create_tenant("alice").await;
    let response =
        app.send(Method::PUT, &record, Some(&signed_token("alice", "read write")), Some(&json!(3)), &[]).await;
    expect_json(response, StatusCode::CREATED).await;
}

async fn a_scope_claim_is_split_on_single_spaces_only(app: TestApp) {
    app.create_tenant("alice").await;
    let record = record_path("alice", "c", "k");
    for scope in ["read\twrite", "read  write", " read write", "read write ", "read\tadmin", "read\nwrite"] {
        let response = app.send(Method::PUT, &record, Some(&signed_token("alice", scope)), Some(&json!(1)), &[]).await;
        let problem = expect_problem(response, StatusCode::UNAUTHORIZED, "invalid_token").await;
        assert!(problem["detail"].as_str().unwrap().contains("single spaces"), "{scope:?}: {problem}");
    }
    let response =
        app.send(Method::GET, "/v1/admin/tenants", Some(&signed_token("alice", "read\tadmin")), None, &[]).await;
    expect_problem(response, StatusCode::UNAUTHORIZED, "invalid_token").await;
    // Single spaces, with a name of another service among them: fine.
    let response =
        app.send(Method::PUT, &record, Some(&signed_token("alice", "openid read write")), Some(&json!(1)), &[]).await;
    expect_json(response, StatusCode::CREATED).await;
}
