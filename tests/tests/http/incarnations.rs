//! Tenant incarnations: a tenant deleted and created again under the same id is a new tenant.
//! Nothing issued to the earlier one reaches it: valet URLs (even one whose revocation raced the
//! deletion), tokens issued before its creation, index definitions.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{EncodingKey, Header};
use reqwest::header::WWW_AUTHENTICATE;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shardgate_gatekeeper::Scope;
use shardgate_tests::{ISSUER, SECRET, TestApp, expect_json, expect_problem, open_shard, record_path};

shardgate_tests::conformance!(
    an_old_valet_url_opens_nothing_of_a_recreated_tenant_even_if_its_revocation_raced,
    a_token_issued_before_the_tenants_creation_is_refused,
    a_token_dated_ahead_is_refused_and_never_reaches_a_recreated_tenant,
    a_deleted_tenants_indexes_do_not_apply_to_a_recreated_tenant
);

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// Issues a valet key of `acme`; its URL reached through the address under test (the
/// gatekeeper's when there is one).
async fn issue(app: &TestApp, token: &str, body: Value) -> String {
    let key = app.issue_valet_key("acme", token, &body).await;
    let url = key["url"].as_str().unwrap();
    app.url(&url[url.find("/valet/").unwrap()..])
}

async fn delete_tenant(app: &TestApp, tenant: &str) {
    let deleted = app.admin(Method::DELETE, &format!("/v1/admin/tenants/{tenant}"), None).await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
}

async fn put_blob(app: &TestApp, token: &str, path: &str, body: &'static str) -> reqwest::Response {
    app.client
        .put(app.url(&format!("/v1/tenants/acme/blobs/{path}")))
        .bearer_auth(token)
        .body(body)
        .send()
        .await
        .unwrap()
}

async fn an_old_valet_url_opens_nothing_of_a_recreated_tenant_even_if_its_revocation_raced(app: TestApp) {
    app.create_tenant("acme").await;
    let token = app.rw_token("acme");
    assert_eq!(put_blob(&app, &token, "f", "old").await.status(), StatusCode::CREATED);
    let upload = issue(&app, &token, json!({"path": "in/f", "permission": "write"})).await;
    let download = issue(&app, &token, json!({"path": "f", "permission": "read"})).await;
    delete_tenant(&app, "acme").await;
    // A grant recorded just after the deletion revoked the tenant's grants (issued by an
    // instance that had not yet seen the deletion) is not revoked: model it by clearing the
    // revocation in the catalog.
    let catalog = open_shard(&app.catalog_url()).await;
    sqlx::query("UPDATE valet_grants SET revoked_at = NULL").execute(&catalog).await.unwrap();
    catalog.close().await;
    app.create_tenant("acme").await;
    let fresh = app.rw_token("acme");
    assert_eq!(put_blob(&app, &fresh, "f", "new").await.status(), StatusCode::CREATED);

    let response = app.client.put(&upload).body("planted").send().await.unwrap();
    let problem = expect_problem(response, StatusCode::FORBIDDEN, "valet_revoked").await;
    assert!(problem["detail"].as_str().unwrap().contains("deleted tenant"), "{problem}");
    expect_problem(app.client.get(&download).send().await.unwrap(), StatusCode::FORBIDDEN, "valet_revoked").await;
    let blob = app.client.get(app.url("/v1/tenants/acme/blobs/in/f")).bearer_auth(&fresh).send().await.unwrap();
    expect_problem(blob, StatusCode::NOT_FOUND, "blob_not_found").await;
    // The new tenant's own URLs work.
    let mine = issue(&app, &fresh, json!({"path": "f", "permission": "read"})).await;
    let response = app.client.get(&mine).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.text().await.unwrap(), "new");
}

async fn a_token_issued_before_the_tenants_creation_is_refused(app: TestApp) {
    app.create_tenant("acme").await;
    let old = app.rw_token("acme");
    let issued = now_secs();
    let path = record_path("acme", "c", "k");
    let put = |token: String| {
        let (client, url) = (app.client.clone(), app.url(&path));
        async move { client.put(url).bearer_auth(token).json(&json!({"v": 1})).send().await.unwrap() }
    };
    assert_eq!(put(old.clone()).await.status(), StatusCode::CREATED);
    // `iat` counts whole seconds: the tenant is created again in a later second than the token.
    while now_secs() <= issued {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    delete_tenant(&app, "acme").await;
    app.create_tenant("acme").await;

    for (what, response) in [
        ("PUT record", put(old.clone()).await),
        ("GET record", app.client.get(app.url(&path)).bearer_auth(&old).send().await.unwrap()),
        ("list blobs", app.client.get(app.url("/v1/tenants/acme/blobs")).bearer_auth(&old).send().await.unwrap()),
        (
            "issue a valet key",
            app.client
                .post(app.url("/v1/tenants/acme/valet-keys"))
                .bearer_auth(&old)
                .json(&json!({"path": "f", "permission": "read"}))
                .send()
                .await
                .unwrap(),
        ),
    ] {
        assert_eq!(response.headers()[WWW_AUTHENTICATE], "Bearer error=\"invalid_token\"", "{what}");
        let problem = expect_problem(response, StatusCode::UNAUTHORIZED, "token_predates_tenant").await;
        assert!(problem["detail"].as_str().unwrap().contains("before tenant acme was created"), "{what}: {problem}");
    }
    // A token issued now works; the old tenant's record is gone with it.
    let fresh = app.rw_token("acme");
    let record = app.client.get(app.url(&path)).bearer_auth(&fresh).send().await.unwrap();
    expect_problem(record, StatusCode::NOT_FOUND, "record_not_found").await;
    assert_eq!(put(fresh).await.status(), StatusCode::CREATED);

    // A token bound to a tenant without `iat` cannot tell when it was issued: refused too.
    let claims =
        json!({"iss": ISSUER, "sub": "someone", "tenant": "acme", "scope": "read write", "exp": now_secs() + 600});
    let no_iat =
        jsonwebtoken::encode(&Header::default(), &claims, &EncodingKey::from_secret(SECRET.as_bytes())).unwrap();
    let response = app.client.get(app.url(&path)).bearer_auth(&no_iat).send().await.unwrap();
    let problem = expect_problem(response, StatusCode::UNAUTHORIZED, "token_predates_tenant").await;
    assert!(problem["detail"].as_str().unwrap().contains("no `iat`"), "{problem}");
}

/// An HS256 token of the test issuer for `acme` (`read write`) whose `iat` is `iat`.
fn token_issued_at(iat: u64) -> String {
    let claims = json!({
        "iss": ISSUER, "sub": "someone", "tenant": "acme", "scope": "read write", "iat": iat, "exp": iat + 86_400 * 365,
    });
    jsonwebtoken::encode(&Header::default(), &claims, &EncodingKey::from_secret(SECRET.as_bytes())).unwrap()
}

async fn a_token_dated_ahead_is_refused_and_never_reaches_a_recreated_tenant(app: TestApp) {
    app.create_tenant("acme").await;
    let path = record_path("acme", "c", "k");
    let (get, put) = (
        async |token: &str| app.client.get(app.url(&path)).bearer_auth(token).send().await.unwrap(),
        async |token: &str| {
            app.client.put(app.url(&path)).bearer_auth(token).json(&json!({"by": "ahead"})).send().await.unwrap()
        },
    );
    // Minted a day ahead and kept: it would pass the incarnation check of every tenant created
    // before tomorrow, so it is refused from the start.
    let ahead = token_issued_at(now_secs() + 86_400);
    let refused = async |response: reqwest::Response, what: &str| {
        assert_eq!(response.headers()[WWW_AUTHENTICATE], "Bearer error=\"invalid_token\"", "{what}");
        let problem = expect_problem(response, StatusCode::UNAUTHORIZED, "token_issued_in_future").await;
        assert!(problem["detail"].as_str().unwrap().contains("later than now"), "{what}: {problem}");
    };
    refused(put(&ahead).await, "PUT, a day ahead").await;
    refused(get(&ahead).await, "GET, a day ahead").await;

    delete_tenant(&app, "acme").await;
    app.create_tenant("acme").await;
    let fresh = app.rw_token("acme");
    assert_eq!(app.put_record("acme", "c", "k", &json!({"by": "fresh"})).await.status(), StatusCode::CREATED);
    refused(put(&ahead).await, "PUT on the re-created tenant").await;
    refused(get(&ahead).await, "GET on the re-created tenant").await;
    for (what, iat) in [("an hour ahead", now_secs() + 3600), ("ten years ahead", now_secs() + 10 * 365 * 86_400)] {
        refused(put(&token_issued_at(iat)).await, what).await;
    }
    // An admin token dated ahead is no better.
    let claims =
        json!({"iss": ISSUER, "sub": "root", "scope": "admin", "iat": now_secs() + 86_400, "exp": now_secs() + 600});
    let admin =
        jsonwebtoken::encode(&Header::default(), &claims, &EncodingKey::from_secret(SECRET.as_bytes())).unwrap();
    refused(app.send(Method::GET, "/v1/admin/tenants", Some(&admin), None, &[]).await, "admin, a day ahead").await;
    // The new tenant's record is untouched.
    let record = expect_json(get(&fresh).await, StatusCode::OK).await;
    assert_eq!(record["value"], json!({"by": "fresh"}), "{record}");
}

async fn a_deleted_tenants_indexes_do_not_apply_to_a_recreated_tenant(app: TestApp) {
    let index = "/v1/tenants/acme/collections/users/indexes/by-email";
    let define = async |token: &str| {
        let spec = json!({"field": "/email", "unique": true});
        app.client.put(app.url(index)).bearer_auth(token).json(&spec).send().await.unwrap()
    };
    let put = async |token: &str, key: &str| {
        let url = app.url(&record_path("acme", "users", key));
        app.client.put(url).bearer_auth(token).json(&json!({"email": "a@example.com"})).send().await.unwrap()
    };
    app.create_tenant("acme").await;
    let old = app.token("acme", &[Scope::Read, Scope::Write, Scope::Manage]);
    assert_eq!(define(&old).await.status(), StatusCode::CREATED);
    assert_eq!(put(&old, "u1").await.status(), StatusCode::CREATED);
    delete_tenant(&app, "acme").await;
    app.create_tenant("acme").await;

    // At once, before any catalog poll: the old unique index neither refuses the second record
    // nor leaves entries behind.
    let token = app.token("acme", &[Scope::Read, Scope::Write, Scope::Manage]);
    assert_eq!(put(&token, "u1").await.status(), StatusCode::CREATED);
    assert_eq!(put(&token, "u2").await.status(), StatusCode::CREATED, "the old unique index does not apply");
    let orphans: Vec<(String,)> =
        app.rows_on_every_shard("SELECT record_key FROM index_entries WHERE tenant = 'acme'").await;
    assert!(orphans.is_empty(), "entries of the old index: {orphans:?}");
    let response = app.client.get(app.url(index)).bearer_auth(&token).send().await.unwrap();
    expect_problem(response, StatusCode::NOT_FOUND, "index_not_found").await;
    // The same definition on the new tenant is a new index, built from the new records.
    let response = app.delete_record("acme", "users", "u2").await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    let created = expect_json(define(&token).await, StatusCode::CREATED).await;
    assert_eq!(created["state"], "building");
}
