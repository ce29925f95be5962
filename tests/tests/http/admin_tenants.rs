//! `/v1/admin/tenants`: create, list, read, update, delete.

use std::collections::BTreeSet;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shardgate_tests::{
    SEEDED_SHARDS, TestApp, encode_segment, expect_any_problem, expect_json, expect_problem, is_rfc3339,
    rfc3339_order_key,
};

shardgate_tests::conformance!(
    an_operator_creates_a_tenant_with_defaults,
    an_operator_creates_named_premium_and_pinned_tenants,
    creating_a_tenant_twice_or_with_bad_input_fails,
    tenants_are_listed_page_by_page,
    an_operator_reads_updates_and_deletes_a_tenant,
    deleting_a_tenant_removes_its_records,
    unknown_tenants_are_404_on_every_tenant_endpoint,
    admin_body_errors_are_the_gateways_own_sentences,
    a_tenants_holdings_count_its_live_records_blobs_and_index_entries,
);

fn assert_tenant_shape(tenant: &Value) {
    assert!(tenant["id"].is_string(), "{tenant}");
    assert!(tenant["name"].is_string() || tenant["name"].is_null(), "{tenant}");
    assert!(["free", "standard", "premium"].contains(&tenant["tier"].as_str().unwrap_or("")), "{tenant}");
    assert!(SEEDED_SHARDS.contains(&tenant["shard"].as_str().unwrap_or("")) || tenant["pinned"] == true, "{tenant}");
    assert!(tenant["pinned"].is_boolean(), "{tenant}");
    assert!(is_rfc3339(tenant["created_at"].as_str().unwrap_or("")), "{tenant}");
    assert!(is_rfc3339(tenant["updated_at"].as_str().unwrap_or("")), "{tenant}");
}

async fn an_operator_creates_a_tenant_with_defaults(app: TestApp) {
    let response = app.admin(Method::POST, "/v1/admin/tenants", Some(&json!({"id": "acme"}))).await;
    let tenant = expect_json(response, StatusCode::CREATED).await;
    assert_tenant_shape(&tenant);
    assert_eq!(tenant["id"], "acme");
    assert_eq!(tenant["tier"], "standard");
    assert_eq!(tenant["pinned"], false);
    assert!(SEEDED_SHARDS.contains(&tenant["shard"].as_str().unwrap()));

    let read = expect_json(app.admin(Method::GET, "/v1/admin/tenants/acme", None).await, StatusCode::OK).await;
    assert_eq!(read, tenant);

    // The new tenant can store data at once.
    expect_json(app.put_record("acme", "c", "k", &json!(1)).await, StatusCode::CREATED).await;
}

async fn an_operator_creates_named_premium_and_pinned_tenants(app: TestApp) {
    let named = app.create_tenant_with(&json!({"id": "named", "name": "Named Inc.", "tier": "premium"})).await;
    assert_tenant_shape(&named);
    assert_eq!(named["name"], "Named Inc.");
    assert_eq!(named["tier"], "premium");
    assert_eq!(named["pinned"], false);

    let free = app.create_tenant_with(&json!({"id": "free-1", "tier": "free"})).await;
    assert_eq!(free["tier"], "free");

    for shard in SEEDED_SHARDS {
        let id = format!("pinned-{shard}");
        let pinned = app.create_tenant_with(&json!({"id": id, "shard": shard})).await;
        assert_tenant_shape(&pinned);
        assert_eq!(pinned["shard"], shard);
        assert_eq!(pinned["pinned"], true);
        let read =
            expect_json(app.admin(Method::GET, &format!("/v1/admin/tenants/{id}"), None).await, StatusCode::OK).await;
        assert_eq!(read["shard"], shard);
        assert_eq!(read["pinned"], true);
    }
}

async fn creating_a_tenant_twice_or_with_bad_input_fails(app: TestApp) {
    app.create_tenant("acme").await;
    let post = async |body: Value| app.admin(Method::POST, "/v1/admin/tenants", Some(&body)).await;

    expect_problem(post(json!({"id": "acme"})).await, StatusCode::CONFLICT, "tenant_exists").await;
    expect_problem(post(json!({"id": "acme", "name": "Other"})).await, StatusCode::CONFLICT, "tenant_exists").await;
    expect_problem(
        post(json!({"id": "new", "shard": "shard-99"})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "unknown_shard",
    )
    .await;
    let too_long = "a".repeat(64);
    for id in ["", "Acme", "-acme", "a_b", "a b", "a.b", "ü", too_long.as_str()] {
        expect_problem(post(json!({"id": id})).await, StatusCode::BAD_REQUEST, "invalid_body").await;
    }
    expect_problem(post(json!({"name": "no id"})).await, StatusCode::BAD_REQUEST, "invalid_body").await;
    expect_problem(post(json!({"id": 7})).await, StatusCode::BAD_REQUEST, "invalid_body").await;
    expect_problem(post(json!({"id": "new", "colour": "blue"})).await, StatusCode::BAD_REQUEST, "invalid_body").await;
    expect_any_problem(post(json!({"id": "new", "tier": "gold"})).await, StatusCode::BAD_REQUEST).await;

    // None of the failures created anything; the 63-character maximum is fine.
    let listing = expect_json(app.admin(Method::GET, "/v1/admin/tenants", None).await, StatusCode::OK).await;
    let ids: Vec<&str> = listing["items"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["acme"]);
    app.create_tenant(&"a".repeat(63)).await;
}

async fn tenants_are_listed_page_by_page(app: TestApp) {
    let mut created = BTreeSet::new();
    for i in 0..7 {
        let id = format!("tenant-{i}");
        app.create_tenant(&id).await;
        created.insert(id);
    }
    let all = expect_json(app.admin(Method::GET, "/v1/admin/tenants", None).await, StatusCode::OK).await;
    let ids: BTreeSet<String> =
        all["items"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap().to_owned()).collect();
    assert_eq!(ids, created);
    assert_eq!(all["next_cursor"], Value::Null);
    all["items"].as_array().unwrap().iter().for_each(assert_tenant_shape);

    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..10 {
        let path = match &cursor {
            Some(c) => format!("/v1/admin/tenants?limit=3&cursor={}", encode_segment(c)),
            None => "/v1/admin/tenants?limit=3".to_owned(),
        };
        let page = expect_json(app.admin(Method::GET, &path, None).await, StatusCode::OK).await;
        let items = page["items"].as_array().unwrap();
        assert!(items.len() <= 3, "{page}");
        seen.extend(items.iter().map(|t| t["id"].as_str().unwrap().to_owned()));
        match &page["next_cursor"] {
            Value::String(c) => cursor = Some(c.clone()),
            Value::Null => break,
            other => panic!("next_cursor: {other}"),
        }
    }
    assert_eq!(seen.len(), 7, "every tenant exactly once: {seen:?}");
    assert_eq!(seen.into_iter().collect::<BTreeSet<_>>(), created);

    let response = app.admin(Method::GET, "/v1/admin/tenants?cursor=garbage", None).await;
    expect_problem(response, StatusCode::BAD_REQUEST, "invalid_cursor").await;
    let response = app.admin(Method::GET, "/v1/admin/tenants?limit=0", None).await;
    expect_problem(response, StatusCode::BAD_REQUEST, "invalid_query").await;
}

async fn an_operator_reads_updates_and_deletes_a_tenant(app: TestApp) {
    let created = app.create_tenant_with(&json!({"id": "acme", "name": "Acme"})).await;

    let patch = json!({"name": "Acme Corp", "tier": "premium"});
    let response = app.admin(Method::PATCH, "/v1/admin/tenants/acme", Some(&patch)).await;
    let updated = expect_json(response, StatusCode::OK).await;
    assert_tenant_shape(&updated);
    assert_eq!(updated["name"], "Acme Corp");
    assert_eq!(updated["tier"], "premium");
    assert_eq!(updated["shard"], created["shard"], "an update does not move the tenant");
    assert_eq!(updated["created_at"], created["created_at"]);
    let (before, after) = (created["updated_at"].as_str().unwrap(), updated["updated_at"].as_str().unwrap());
    assert!(rfc3339_order_key(after) >= rfc3339_order_key(before), "updated_at moves forward: {before} -> {after}");

    // A partial update leaves the other fields alone.
    let response = app.admin(Method::PATCH, "/v1/admin/tenants/acme", Some(&json!({"tier": "free"}))).await;
    let updated = expect_json(response, StatusCode::OK).await;
    assert_eq!(updated["name"], "Acme Corp");
    assert_eq!(updated["tier"], "free");
    let read = expect_json(app.admin(Method::GET, "/v1/admin/tenants/acme", None).await, StatusCode::OK).await;
    assert_eq!(read, updated);

    let response = app.admin(Method::PATCH, "/v1/admin/tenants/acme", Some(&json!({"tier": "gold"}))).await;
    expect_any_problem(response, StatusCode::BAD_REQUEST).await;
    let response = app.admin(Method::PATCH, "/v1/admin/tenants/acme", Some(&json!({"id": "other"}))).await;
    expect_problem(response, StatusCode::BAD_REQUEST, "invalid_body").await;

    let response = app.admin(Method::DELETE, "/v1/admin/tenants/acme", None).await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    shardgate_tests::assert_request_id(response.headers(), "DELETE tenant");
    let response = app.admin(Method::GET, "/v1/admin/tenants/acme", None).await;
    expect_problem(response, StatusCode::NOT_FOUND, "tenant_not_found").await;
    let response = app.admin(Method::DELETE, "/v1/admin/tenants/acme", None).await;
    expect_problem(response, StatusCode::NOT_FOUND, "tenant_not_found").await;
    let listing = expect_json(app.admin(Method::GET, "/v1/admin/tenants", None).await, StatusCode::OK).await;
    assert_eq!(listing["items"], json!([]));
}

async fn deleting_a_tenant_removes_its_records(app: TestApp) {
    app.create_tenant("acme").await;
    app.create_tenant("bystander").await;
    for key in ["a", "b", "c"] {
        expect_json(app.put_record("acme", "docs", key, &json!(key)).await, StatusCode::CREATED).await;
        expect_json(app.put_record("bystander", "docs", key, &json!(key)).await, StatusCode::CREATED).await;
    }
    let response = app.admin(Method::DELETE, "/v1/admin/tenants/acme", None).await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);

    // Its token no longer reaches anything.
    expect_problem(app.get_record("acme", "docs", "a").await, StatusCode::NOT_FOUND, "tenant_not_found").await;
    expect_problem(app.list_records("acme", "docs", "").await, StatusCode::NOT_FOUND, "tenant_not_found").await;

    // A new tenant with the same id starts empty.
    app.create_tenant("acme").await;
    let listing = expect_json(app.list_records("acme", "docs", "").await, StatusCode::OK).await;
    assert_eq!(listing["items"], json!([]), "the old tenant's records are gone");
    expect_problem(app.get_record("acme", "docs", "a").await, StatusCode::NOT_FOUND, "record_not_found").await;
    let body = expect_json(app.put_record("acme", "docs", "a", &json!(1)).await, StatusCode::CREATED).await;
    assert_eq!(body["version"], 1);

    // Shard statistics no longer count them.
    let shards = expect_json(app.admin(Method::GET, "/v1/admin/shards", None).await, StatusCode::OK).await;
    let records: i64 = shards["items"].as_array().unwrap().iter().filter_map(|s| s["records"].as_i64()).sum();
    if shards["items"].as_array().unwrap().iter().all(|s| s["records"].is_i64()) {
        assert_eq!(records, 4, "3 bystander records + 1 new acme record: {shards}");
    }

    // The bystander is untouched.
    let listing = expect_json(app.list_records("bystander", "docs", "").await, StatusCode::OK).await;
    assert_eq!(listing["items"].as_array().unwrap().len(), 3);
}

async fn unknown_tenants_are_404_on_every_tenant_endpoint(app: TestApp) {
    for (method, body) in [(Method::GET, None), (Method::PATCH, Some(json!({"name": "x"}))), (Method::DELETE, None)] {
        let response = app.admin(method, "/v1/admin/tenants/ghost", body.as_ref()).await;
        expect_problem(response, StatusCode::NOT_FOUND, "tenant_not_found").await;
    }
    // A token for a tenant that was never created.
    expect_problem(app.put_record("ghost", "c", "k", &json!(1)).await, StatusCode::NOT_FOUND, "tenant_not_found").await;
    expect_problem(app.get_record("ghost", "c", "k").await, StatusCode::NOT_FOUND, "tenant_not_found").await;
    expect_problem(app.delete_record("ghost", "c", "k").await, StatusCode::NOT_FOUND, "tenant_not_found").await;
    expect_problem(app.list_records("ghost", "c", "").await, StatusCode::NOT_FOUND, "tenant_not_found").await;
}

async fn admin_body_errors_are_the_gateways_own_sentences(app: TestApp) {
    // (body, code, what the detail must say)
    let cases: [(Value, &str, &[&str]); 5] = [
        (json!({"id": "Bad!"}), "invalid_body", &["`id`", "1 to 63 characters", "lowercase letter"]),
        (json!({"id": 5}), "invalid_body", &["`id` must be a string"]),
        (json!({"id": "acme", "tier": "gold"}), "invalid_body", &["`tier`", "\"gold\"", "`premium`"]),
        (json!({"id": "acme", "nmae": "Acme"}), "invalid_body", &["`nmae`", "`name`"]),
        (json!({"name": "Acme"}), "invalid_body", &["lacks `id`"]),
    ];
    for (body, code, says) in cases {
        let response = app.admin(Method::POST, "/v1/admin/tenants", Some(&body)).await;
        let problem = expect_problem(response, StatusCode::BAD_REQUEST, code).await;
        let detail = problem["detail"].as_str().unwrap();
        for wording in ["Failed to", "deserialize", "target type", "line 1", "column"] {
            assert!(!detail.contains(wording), "{body}: no framework wording ({wording}): {detail}");
        }
        for part in says {
            assert!(detail.contains(part), "{body}: the detail names {part}: {detail}");
        }
    }
    let response = app
        .client
        .post(app.url("/v1/admin/tenants"))
        .bearer_auth(app.admin_token())
        .header("content-type", "application/json")
        .body("{\"id\": ")
        .send()
        .await
        .unwrap();
    let problem = expect_problem(response, StatusCode::BAD_REQUEST, "invalid_json").await;
    assert!(!problem["detail"].as_str().unwrap().contains("Failed to"), "{problem}");
    // No body at all: 415, in the gateway's words.
    let response = app.client.post(app.url("/v1/admin/tenants")).bearer_auth(app.admin_token()).send().await.unwrap();
    let problem = expect_problem(response, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type").await;
    assert!(problem["detail"].as_str().unwrap().contains("Content-Type: application/json"), "{problem}");
}

async fn a_tenants_holdings_count_its_live_records_blobs_and_index_entries(app: TestApp) {
    use shardgate_gatekeeper::Scope;
    app.create_tenant("held").await;
    app.create_tenant("other").await;
    let holdings = async |tenant: &str| {
        let path = format!("/v1/admin/tenants/{tenant}/holdings");
        expect_json(app.admin(Method::GET, &path, None).await, StatusCode::OK).await
    };
    let empty = holdings("held").await;
    assert_eq!((empty["records"].as_u64(), empty["blobs"].as_u64()), (Some(0), Some(0)), "{empty}");
    assert_eq!(empty["complete"], true);

    let manager = app.token("held", &[Scope::Read, Scope::Write, Scope::Manage]);
    let index = app.url("/v1/tenants/held/collections/people/indexes/by-town");
    let defined = app.client.put(index.as_str()).bearer_auth(&manager).json(&json!({"field": "/town"})).send().await;
    assert_eq!(defined.unwrap().status(), StatusCode::CREATED);
    for (key, town) in [("a", "Oslo"), ("b", "Rome"), ("c", "Oslo"), ("d", "Lima")] {
        assert!(app.put_record("held", "people", key, &json!({"town": town})).await.status().is_success());
    }
    assert!(app.delete_record("held", "people", "d").await.status().is_success());
    assert!(app.put_record("other", "people", "x", &json!({"town": "Oslo"})).await.status().is_success());
    let blob = app.url("/v1/tenants/held/blobs/docs/a.bin");
    let stored = app.client.put(blob).bearer_auth(&manager).body(vec![7u8; 3000]).send().await.unwrap();
    assert!(stored.status().is_success(), "{}", stored.status());

    // Index entries are written with the records (once the index is active: wait for its
    // backfill to have seen them).
    let counted = shardgate_tests::eventually(std::time::Duration::from_secs(15), async || {
        let held = holdings("held").await;
        (held["index_entries"] == 3).then_some(held)
    })
    .await
    .expect("the index entries of the three live records are counted");
    assert_eq!(counted["tenant"], "held");
    assert_eq!(counted["records"], 3, "live records only: {counted}");
    assert_eq!((counted["blobs"].as_u64(), counted["blob_bytes"].as_u64()), (Some(1), Some(3000)), "{counted}");
    assert_eq!(counted["complete"], true);
    assert_eq!(counted["unreachable_shards"], json!([]));
    let other = holdings("other").await;
    assert_eq!((other["records"].as_u64(), other["index_entries"].as_u64()), (Some(1), Some(0)), "{other}");
    expect_problem(
        app.admin(Method::GET, "/v1/admin/tenants/nobody/holdings", None).await,
        StatusCode::NOT_FOUND,
        "tenant_not_found",
    )
    .await;

    // Every shard's size on disk is shown.
    let shards = expect_json(app.admin(Method::GET, "/v1/admin/shards", None).await, StatusCode::OK).await;
    for shard in shards["items"].as_array().unwrap() {
        assert!(shard["bytes"].as_u64().is_some_and(|b| b > 0), "{shard}");
    }
}
