//! Where a tenant's quotas come from, and seeing them: a tier's quotas (configured, or set live
//! through `PUT /v1/admin/tiers/{tier}/quotas` and removed again with `DELETE`) and a tenant's
//! own overrides (`PATCH /v1/admin/tenants/{id}` with `quotas`) reach every instance without a
//! restart, and both usage endpoints show each quota beside what it limits. Bad input is a
//! problem, a tenant's token cannot change quotas, and every change is audited.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shardgate_gatekeeper::Scope;
use shardgate_tests::{Backend, TestApp, eventually, expect_json, expect_problem, get_json};

shardgate_tests::on_both_engines!(
    a_tiers_quotas_set_live_reach_every_instance_and_go_back_to_the_configured_ones,
    a_tenants_own_quotas_win_over_its_tiers_until_removed,
);

shardgate_tests::conformance!(bad_quotas_are_problems_and_only_admins_change_them);

/// The free tier's quotas when the configuration sets none.
fn free_defaults() -> Value {
    json!({
        "records": 1_000_000,
        "record_bytes": 1_073_741_824u64,
        "blobs": 100_000,
        "blob_bytes": 10_737_418_240u64,
        "index_entries": 5_000_000,
        "collections": 100,
        "valet_bytes_per_day": 10_737_418_240u64,
    })
}

/// Each quota's limit as a usage answer shows it, for the quotas `expected` names (a usage
/// answer shows each quota beside what is used of it).
fn limits(usage: &Value, expected: &Value) -> Value {
    let quotas = &usage["quotas"];
    let keys = expected.as_object().expect("quotas are an object").keys();
    keys.filter(|key| quotas.get(key.as_str()).is_some())
        .map(|key| (key.clone(), quotas[key.as_str()]["limit"].clone()))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// `expected` limited to the quotas a usage answer shows.
fn shown(usage: &Value, expected: &Value) -> Value {
    let quotas = &usage["quotas"];
    let object = expected.as_object().expect("quotas are an object");
    object
        .iter()
        .filter(|(key, _)| quotas.get(key.as_str()).is_some())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// Waits until `base`'s admin usage of `tenant` shows `expected` limits; the last answer.
async fn limits_become(app: &TestApp, base: &str, tenant: &str, expected: &Value) -> Value {
    let url = format!("{base}/v1/admin/tenants/{tenant}/usage");
    let token = app.admin_token();
    let mut last = Value::Null;
    let seen = eventually(Duration::from_secs(10), async || {
        last = get_json(&app.client, &url, &token).await;
        (limits(&last, expected) == shown(&last, expected)).then_some(())
    })
    .await;
    assert!(seen.is_some(), "{base} shows {expected} for {tenant}; last: {last}");
    last
}

/// The audit entries whose action begins `prefix`, oldest first: `(action, target)`.
async fn audited(app: &TestApp, prefix: &str) -> Vec<(String, String)> {
    let page = app.admin(Method::GET, &format!("/v1/admin/audit?action={prefix}&limit=1000"), None).await;
    let page = expect_json(page, StatusCode::OK).await;
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["action"].as_str().unwrap().to_owned(), e["target"].as_str().unwrap().to_owned()))
        .collect()
}

async fn a_tiers_quotas_set_live_reach_every_instance_and_go_back_to_the_configured_ones(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let peer = app.spawn_peer(|_| {}).await;
    app.create_tenant_with(&json!({"id": "acme", "tier": "free"})).await;
    app.create_tenant_with(&json!({"id": "bob", "tier": "standard"})).await;
    let put = app.put_record("acme", "notes", "n1", &json!({"text": "hello"})).await;
    expect_json(put, StatusCode::CREATED).await;

    // The configured quotas (here the defaults): free is limited, standard is not.
    let free = expect_json(app.admin(Method::GET, "/v1/admin/tiers/free/quotas", None).await, StatusCode::OK).await;
    assert_eq!(free["source"], "configuration", "{free}");
    assert_eq!((&free["quotas"], &free["configured"]), (&free_defaults(), &free_defaults()), "{free}");
    assert_eq!(free["updated_at"], Value::Null);
    let unlimited = json!({"records": null, "record_bytes": null, "blobs": null, "blob_bytes": null, "index_entries": null, "collections": null, "valet_bytes_per_day": null});
    limits_become(&app, &peer.base_url, "acme", &free_defaults()).await;
    limits_become(&app, &peer.base_url, "bob", &unlimited).await;

    // Set live on one instance: the other holds the tenants of the tier to them within a poll.
    let set = json!({"records": 1000, "record_bytes": null, "blobs": 10, "blob_bytes": null, "index_entries": 50, "collections": null, "valet_bytes_per_day": null});
    let answer = app.admin(Method::PUT, "/v1/admin/tiers/free/quotas", Some(&set)).await;
    let answer = expect_json(answer, StatusCode::OK).await;
    assert_eq!((&answer["tier"], &answer["source"], &answer["quotas"]), (&json!("free"), &json!("admin"), &set));
    assert_eq!(answer["configured"], free_defaults());
    assert!(shardgate_tests::is_rfc3339(answer["updated_at"].as_str().unwrap()), "{answer}");
    let usage = limits_become(&app, &peer.base_url, "acme", &set).await;
    assert_eq!(usage["quotas"]["records"], json!({"limit": 1000, "used": 1}), "the limit beside the usage");
    assert_eq!(usage["usage"]["records"], 1, "the existing fields stay");
    limits_become(&app, &app.base_url, "acme", &set).await;
    limits_become(&app, &peer.base_url, "bob", &unlimited).await;
    // The tenant sees its own, on either instance.
    let own = get_json(&app.client, &format!("{}/v1/tenants/acme/usage", peer.base_url), &app.rw_token("acme")).await;
    assert_eq!(limits(&own, &set), shown(&own, &set), "{own}");
    assert_eq!(own["quotas"]["records"]["used"], 1, "{own}");
    let read = expect_json(app.admin(Method::GET, "/v1/admin/tiers/free/quotas", None).await, StatusCode::OK).await;
    assert_eq!((&read["source"], &read["quotas"]), (&json!("admin"), &set), "{read}");

    // Keys left out are unlimited: the body replaces the tier's quotas.
    let answer = app.admin(Method::PUT, "/v1/admin/tiers/free/quotas", Some(&json!({"blobs": 3}))).await;
    let replaced = json!({"records": null, "record_bytes": null, "blobs": 3, "blob_bytes": null, "index_entries": null, "collections": null, "valet_bytes_per_day": null});
    assert_eq!(expect_json(answer, StatusCode::OK).await["quotas"], replaced);
    limits_become(&app, &peer.base_url, "acme", &replaced).await;

    // Removed (on the other instance): the configured ones apply again everywhere.
    let removed = app.client.delete(format!("{}/v1/admin/tiers/free/quotas", peer.base_url));
    let removed = removed.bearer_auth(app.admin_token()).send().await.unwrap();
    let removed = expect_json(removed, StatusCode::OK).await;
    assert_eq!((&removed["source"], &removed["quotas"]), (&json!("configuration"), &free_defaults()));
    limits_become(&app, &app.base_url, "acme", &free_defaults()).await;
    limits_become(&app, &peer.base_url, "acme", &free_defaults()).await;
    let again = app.admin(Method::DELETE, "/v1/admin/tiers/free/quotas", None).await;
    expect_json(again, StatusCode::OK).await;

    let expected: Vec<(String, String)> = ["set", "set", "reset", "reset"]
        .iter()
        .map(|change| (format!("tier.quotas.{change}"), "tier:free".to_owned()))
        .collect();
    assert_eq!(audited(&app, "tier.").await, expected, "every change audited, the idempotent reset too");
    peer.stop().await;
}

async fn a_tenants_own_quotas_win_over_its_tiers_until_removed(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let peer = app.spawn_peer(|_| {}).await;
    app.create_tenant("acme").await;
    let created = expect_json(app.admin(Method::GET, "/v1/admin/tenants/acme", None).await, StatusCode::OK).await;
    assert_eq!(created["quotas"], Value::Null, "no overrides: {created}");
    let tier = json!({"records": 100, "record_bytes": null, "blobs": 50, "blob_bytes": 70, "index_entries": null, "collections": null, "valet_bytes_per_day": null});
    expect_json(app.admin(Method::PUT, "/v1/admin/tiers/standard/quotas", Some(&tier)).await, StatusCode::OK).await;

    // A number wins, null is unlimited, a key left out keeps the tier's.
    let own = json!({"records": 5, "blobs": null});
    let patched = app.admin(Method::PATCH, "/v1/admin/tenants/acme", Some(&json!({"quotas": own}))).await;
    let patched = expect_json(patched, StatusCode::OK).await;
    let effective = json!({"records": 5, "record_bytes": null, "blobs": null, "blob_bytes": 70, "index_entries": null, "collections": null, "valet_bytes_per_day": null});
    assert_eq!((&patched["quotas"], &patched["effective_quotas"]), (&own, &effective), "{patched}");
    limits_become(&app, &peer.base_url, "acme", &effective).await;
    let read = get_json(&app.client, &format!("{}/v1/admin/tenants/acme", peer.base_url), &app.admin_token()).await;
    assert_eq!(read["quotas"], own, "the tenant's admin GET shows its own: {read}");
    let mine = get_json(&app.client, &format!("{}/v1/tenants/acme/usage", peer.base_url), &app.rw_token("acme")).await;
    assert_eq!(limits(&mine, &effective), shown(&mine, &effective), "{mine}");

    // A change of something else leaves them; the tier changing leaves them on top.
    let renamed = app.admin(Method::PATCH, "/v1/admin/tenants/acme", Some(&json!({"name": "Acme"}))).await;
    assert_eq!(expect_json(renamed, StatusCode::OK).await["quotas"], own);
    let tier = json!({"records": 9, "blob_bytes": 8});
    expect_json(app.admin(Method::PUT, "/v1/admin/tiers/standard/quotas", Some(&tier)).await, StatusCode::OK).await;
    let effective = json!({"records": 5, "record_bytes": null, "blobs": null, "blob_bytes": 8, "index_entries": null, "collections": null, "valet_bytes_per_day": null});
    limits_become(&app, &peer.base_url, "acme", &effective).await;

    // Replaced by another set, then removed: the tier's apply again.
    let other = json!({"index_entries": 4});
    let patched = app.admin(Method::PATCH, "/v1/admin/tenants/acme", Some(&json!({"quotas": other}))).await;
    assert_eq!(expect_json(patched, StatusCode::OK).await["quotas"], other, "the set replaces the one before");
    let effective = json!({"records": 9, "record_bytes": null, "blobs": null, "blob_bytes": 8, "index_entries": 4, "collections": null, "valet_bytes_per_day": null});
    limits_become(&app, &peer.base_url, "acme", &effective).await;
    let removed = app.admin(Method::PATCH, "/v1/admin/tenants/acme", Some(&json!({"quotas": null}))).await;
    let removed = expect_json(removed, StatusCode::OK).await;
    assert_eq!(removed["quotas"], Value::Null, "{removed}");
    let tiers = json!({"records": 9, "record_bytes": null, "blobs": null, "blob_bytes": 8, "index_entries": null, "collections": null, "valet_bytes_per_day": null});
    assert_eq!(removed["effective_quotas"], tiers);
    limits_become(&app, &peer.base_url, "acme", &tiers).await;
    limits_become(&app, &app.base_url, "acme", &tiers).await;
    let updates = audited(&app, "tenant.update").await;
    assert_eq!(updates.len(), 4, "each change of the tenant audited: {updates:?}");
    assert!(updates.iter().all(|(_, target)| target == "tenant:acme"), "{updates:?}");
    peer.stop().await;
}

async fn bad_quotas_are_problems_and_only_admins_change_them(app: TestApp) {
    app.create_tenant("acme").await;
    let before = audited(&app, "tier.").await.len();
    for body in [
        json!({"records": 1, "rows": 2}),
        json!({"records": -1}),
        json!({"records": 1.5}),
        json!({"records": "many"}),
        json!([1, 2]),
    ] {
        let refused = app.admin(Method::PUT, "/v1/admin/tiers/free/quotas", Some(&body)).await;
        expect_problem(refused, StatusCode::BAD_REQUEST, "invalid_body").await;
        let refused = app.admin(Method::PATCH, "/v1/admin/tenants/acme", Some(&json!({"quotas": body}))).await;
        expect_problem(refused, StatusCode::BAD_REQUEST, "invalid_body").await;
    }
    let refused = app.send(Method::PUT, "/v1/admin/tiers/free/quotas", Some(&app.admin_token()), None, &[]).await;
    assert!(refused.status().is_client_error(), "no body: {}", refused.status());
    for method in [Method::GET, Method::PUT, Method::DELETE] {
        let body = (method == Method::PUT).then(|| json!({"records": 1}));
        let refused = app.admin(method.clone(), "/v1/admin/tiers/gold/quotas", body.as_ref()).await;
        expect_problem(refused, StatusCode::BAD_REQUEST, "invalid_path").await;
    }

    // A tenant's token, whatever its scopes, neither reads nor changes a tier's quotas, nor its
    // own overrides.
    let tenant = app.token("acme", &[Scope::Read, Scope::Write, Scope::Manage]);
    for method in [Method::GET, Method::PUT, Method::DELETE] {
        let body = json!({"records": 1});
        let refused = app.send(method, "/v1/admin/tiers/free/quotas", Some(&tenant), Some(&body), &[]).await;
        expect_problem(refused, StatusCode::FORBIDDEN, "insufficient_scope").await;
    }
    let own = json!({"quotas": {"records": 1}});
    let refused = app.send(Method::PATCH, "/v1/admin/tenants/acme", Some(&tenant), Some(&own), &[]).await;
    expect_problem(refused, StatusCode::FORBIDDEN, "insufficient_scope").await;

    // Nothing refused changed anything.
    assert_eq!(audited(&app, "tier.").await.len(), before, "no refused change is audited");
    let tenant = expect_json(app.admin(Method::GET, "/v1/admin/tenants/acme", None).await, StatusCode::OK).await;
    assert_eq!(tenant["quotas"], Value::Null, "{tenant}");
    let free = expect_json(app.admin(Method::GET, "/v1/admin/tiers/free/quotas", None).await, StatusCode::OK).await;
    assert_eq!(free["source"], "configuration");
}
