//! Quotas enforced on writes: each quota (records, record bytes, blobs, blob bytes, index
//! entries) refuses with 409 `quota_exceeded` the write that would cross it, naming the quota, its
//! limit, what is in use and what the write asked for, and nothing of the write is kept; writes
//! that shrink usage and deletes pass also over a quota that was lowered; a blob is refused from
//! its declared length, and in-stream when it has none; two instances with 32 writers racing at
//! the limit never let more through than the quota. The collections quota refuses the write that
//! would create a collection beyond it, and one instance's racing writers never cross it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shardgate_gatekeeper::Scope;
use shardgate_tests::{Backend, TestApp, eventually, expect_json, expect_problem};

shardgate_tests::on_both_engines!(
    each_record_quota_refuses_the_write_that_would_cross_it_and_shrinking_always_passes,
    blob_quotas_refuse_an_upload_before_it_is_stored_declared_or_streamed,
    the_index_entries_quota_counts_only_entries_a_write_adds,
    two_instances_racing_at_the_limit_never_let_more_through_than_the_quota,
    the_collections_quota_refuses_a_new_collection_and_counts_what_exists_now,
    writers_racing_to_create_collections_on_one_instance_never_cross_the_quota,
    usage_and_refusals_are_in_metrics_per_tier_never_per_tenant,
);

/// Sets `tenant`'s own quotas.
async fn set_quotas(app: &TestApp, tenant: &str, quotas: Value) {
    let body = json!({"quotas": quotas});
    let patched = app.admin(Method::PATCH, &format!("/v1/admin/tenants/{tenant}"), Some(&body)).await;
    expect_json(patched, StatusCode::OK).await;
}

/// `tenant`'s usage summed over the shards.
async fn usage(app: &TestApp, tenant: &str) -> Value {
    let answer = app.admin(Method::GET, &format!("/v1/admin/tenants/{tenant}/usage"), None).await;
    expect_json(answer, StatusCode::OK).await["usage"].clone()
}

/// Checks a `quota_exceeded` problem names `quota` with `limit`, `used` and `requested`.
async fn refused(response: reqwest::Response, quota: &str, limit: u64, used: u64, requested: u64) {
    let problem = expect_problem(response, StatusCode::CONFLICT, "quota_exceeded").await;
    let expected = json!({"name": quota, "limit": limit, "used": used, "requested": requested});
    assert_eq!(problem["quota"], expected, "{problem}");
}

/// A record value of exactly `bytes` bytes of JSON text (at least 8).
fn value_of(bytes: usize) -> Value {
    json!({"t": "x".repeat(bytes - 8)})
}

async fn each_record_quota_refuses_the_write_that_would_cross_it_and_shrinking_always_passes(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_tenant("acme").await;
    set_quotas(&app, "acme", json!({"records": 3, "record_bytes": 100})).await;
    assert_eq!(serde_json::to_string(&value_of(16)).unwrap().len(), 16);

    for key in ["n1", "n2", "n3"] {
        expect_json(app.put_record("acme", "notes", key, &value_of(16)).await, StatusCode::CREATED).await;
    }
    // A fourth record: refused, and not stored.
    refused(app.put_record("acme", "notes", "n4", &value_of(16)).await, "records", 3, 3, 1).await;
    assert_eq!(app.get_record("acme", "notes", "n4").await.status(), StatusCode::NOT_FOUND);

    // Growing a record within the bytes left (48 in use: 100 - 48 = 52 more), then past them.
    expect_json(app.put_record("acme", "notes", "n1", &value_of(67)).await, StatusCode::OK).await;
    refused(app.put_record("acme", "notes", "n2", &value_of(30)).await, "record_bytes", 100, 99, 14).await;
    let n2 = expect_json(app.get_record("acme", "notes", "n2").await, StatusCode::OK).await;
    assert_eq!(n2["value"], value_of(16), "{n2}");

    // The quota lowered under what is in use: growth is refused, shrinking and deletes pass.
    set_quotas(&app, "acme", json!({"records": 1, "record_bytes": 20})).await;
    refused(app.put_record("acme", "notes", "n5", &value_of(8)).await, "records", 1, 3, 1).await;
    expect_json(app.put_record("acme", "notes", "n1", &value_of(10)).await, StatusCode::OK).await;
    expect_json(app.put_record("acme", "notes", "n3", &value_of(16)).await, StatusCode::OK).await;
    for key in ["n2", "n3"] {
        let deleted = app
            .send(
                Method::DELETE,
                &format!("/v1/tenants/acme/collections/notes/records/{key}"),
                Some(&app.rw_token("acme")),
                None,
                &[],
            )
            .await;
        assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    }
    refused(app.put_record("acme", "notes", "n5", &value_of(8)).await, "records", 1, 1, 1).await;
    let deleted = app
        .send(Method::DELETE, "/v1/tenants/acme/collections/notes/records/n1", Some(&app.rw_token("acme")), None, &[])
        .await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    expect_json(app.put_record("acme", "notes", "n5", &value_of(8)).await, StatusCode::CREATED).await;

    let used = usage(&app, "acme").await;
    assert_eq!((used["records"].as_u64(), used["record_bytes"].as_u64()), (Some(1), Some(8)), "{used}");
    // Another tenant is not limited by acme's quotas.
    app.create_tenant("bob").await;
    for key in ["a", "b", "c", "d"] {
        expect_json(app.put_record("bob", "notes", key, &value_of(16)).await, StatusCode::CREATED).await;
    }
}

/// Uploads `len` bytes to `path` of acme: with its length declared, or streamed without one.
async fn upload(app: &TestApp, path: &str, len: usize, declared: bool) -> reqwest::Response {
    let url = app.url(&format!("/v1/tenants/acme/blobs/{path}"));
    let request = app.client.put(url).bearer_auth(app.rw_token("acme"));
    let body = vec![5u8; len];
    let request = if declared {
        request.body(body)
    } else {
        let pieces: Vec<Result<Vec<u8>, std::io::Error>> = body.chunks(16).map(|c| Ok(c.to_vec())).collect();
        request.body(reqwest::Body::wrap_stream(futures::stream::iter(pieces)))
    };
    request.send().await.unwrap()
}

async fn blob_quotas_refuse_an_upload_before_it_is_stored_declared_or_streamed(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_tenant("acme").await;
    set_quotas(&app, "acme", json!({"blobs": 1, "blob_bytes": 100})).await;

    expect_json(upload(&app, "a.bin", 60, true).await, StatusCode::CREATED).await;
    refused(upload(&app, "b.bin", 10, true).await, "blobs", 1, 1, 1).await;
    // Replacing counts only the bytes beyond the replaced blob's.
    expect_json(upload(&app, "a.bin", 90, true).await, StatusCode::OK).await;
    refused(upload(&app, "a.bin", 120, true).await, "blob_bytes", 100, 90, 30).await;
    // Without a declared length, the body is refused as it crosses the quota.
    let streamed = upload(&app, "a.bin", 150, false).await;
    expect_problem(streamed, StatusCode::CONFLICT, "quota_exceeded").await;
    let kept = app.client.get(app.url("/v1/tenants/acme/blobs/a.bin")).bearer_auth(app.rw_token("acme")).send().await;
    assert_eq!(kept.unwrap().bytes().await.unwrap().len(), 90, "the refused uploads left the blob as it was");
    let used = usage(&app, "acme").await;
    assert_eq!((used["blobs"].as_u64(), used["blob_bytes"].as_u64()), (Some(1), Some(90)), "{used}");
    // A smaller streamed replacement passes.
    expect_json(upload(&app, "a.bin", 40, false).await, StatusCode::OK).await;

    let deleted = app.client.delete(app.url("/v1/tenants/acme/blobs/a.bin")).bearer_auth(app.rw_token("acme"));
    assert_eq!(deleted.send().await.unwrap().status(), StatusCode::NO_CONTENT);
    expect_json(upload(&app, "b.bin", 100, false).await, StatusCode::CREATED).await;
    let used = usage(&app, "acme").await;
    assert_eq!((used["blobs"].as_u64(), used["blob_bytes"].as_u64()), (Some(1), Some(100)), "{used}");
}

async fn the_index_entries_quota_counts_only_entries_a_write_adds(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_tenant("acme").await;
    let manager = app.token("acme", &[Scope::Read, Scope::Write, Scope::Manage]);
    let index = app.url("/v1/tenants/acme/collections/people/indexes/by_town");
    let defined = app.client.put(index.as_str()).bearer_auth(&manager).json(&json!({"field": "/town"})).send().await;
    assert!(defined.unwrap().status().is_success());
    set_quotas(&app, "acme", json!({"index_entries": 1})).await;

    expect_json(app.put_record("acme", "people", "p1", &json!({"town": "Oslo"})).await, StatusCode::CREATED).await;
    refused(app.put_record("acme", "people", "p2", &json!({"town": "Rome"})).await, "index_entries", 1, 1, 1).await;
    // No town: no entry, so no growth.
    expect_json(app.put_record("acme", "people", "p3", &json!({"name": "Ann"})).await, StatusCode::CREATED).await;
    // A new town replaces p1's entry.
    expect_json(app.put_record("acme", "people", "p1", &json!({"town": "Bergen"})).await, StatusCode::OK).await;
    let used = usage(&app, "acme").await;
    assert_eq!((used["records"].as_u64(), used["index_entries"].as_u64()), (Some(2), Some(1)), "{used}");
}

async fn two_instances_racing_at_the_limit_never_let_more_through_than_the_quota(backend: Backend) {
    const LIMIT: u64 = 200;
    let app = TestApp::spawn(backend).await;
    let peer = app.spawn_peer(|_| {}).await;
    app.create_tenant("acme").await;
    set_quotas(&app, "acme", json!({"records": LIMIT})).await;
    // The peer sees the quota (its map follows the catalog).
    let peer_usage = format!("{}/v1/admin/tenants/acme/usage", peer.base_url);
    let seen = eventually(std::time::Duration::from_secs(10), async || {
        let answer = shardgate_tests::get_json(&app.client, &peer_usage, &app.admin_token()).await;
        (answer["quotas"]["records"]["limit"] == LIMIT).then_some(())
    })
    .await;
    assert!(seen.is_some(), "the peer follows the tenant's quotas");

    let created = Arc::new(AtomicU64::new(0));
    let token = app.rw_token("acme");
    let writers = (0..32).map(|writer| {
        let base = if writer % 2 == 0 { app.base_url.clone() } else { peer.base_url.clone() };
        let (client, token, created) = (app.client.clone(), token.clone(), created.clone());
        async move {
            let mut refusals = 0;
            for n in 0.. {
                let url = format!("{base}/v1/tenants/acme/collections/race/records/w{writer}-{n}");
                let answer = client.put(url).bearer_auth(&token).json(&json!({"n": n})).send().await.unwrap();
                match answer.status() {
                    StatusCode::CREATED => {
                        created.fetch_add(1, Ordering::Relaxed);
                    }
                    StatusCode::CONFLICT => {
                        let problem: Value = answer.json().await.unwrap();
                        assert_eq!(problem["code"], "quota_exceeded", "{problem}");
                        refusals += 1;
                        if refusals == 3 {
                            break;
                        }
                    }
                    status => panic!("unexpected {status}: {}", answer.text().await.unwrap()),
                }
            }
        }
    });
    tokio::time::timeout(std::time::Duration::from_secs(120), futures::future::join_all(writers))
        .await
        .expect("the writers finish");

    let created = created.load(Ordering::Relaxed);
    let counted = usage(&app, "acme").await["records"].as_u64().unwrap();
    println!("quota {LIMIT}: {created} records acknowledged by two instances, {counted} counted");
    assert_eq!(counted, created, "every acknowledged record is counted, none refused is kept");
    assert!(counted <= LIMIT, "no overshoot: {counted} records under a quota of {LIMIT}");
    assert!(counted >= LIMIT - 32, "the writers reached the limit: {counted} of {LIMIT}");
}

/// Deletes `collection/key` of acme.
async fn delete(app: &TestApp, collection: &str, key: &str) {
    let path = format!("/v1/tenants/acme/collections/{collection}/records/{key}");
    let deleted = app.send(Method::DELETE, &path, Some(&app.rw_token("acme")), None, &[]).await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT, "{path}");
}

/// acme's collections quota as its usage shows it: `(limit, used)`.
async fn collections_shown(app: &TestApp) -> (Value, Value) {
    let answer = app.admin(Method::GET, "/v1/admin/tenants/acme/usage", None).await;
    let quota = expect_json(answer, StatusCode::OK).await["quotas"]["collections"].clone();
    (quota["limit"].clone(), quota["used"].clone())
}

async fn the_collections_quota_refuses_a_new_collection_and_counts_what_exists_now(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_tenant("acme").await;
    set_quotas(&app, "acme", json!({"collections": 2})).await;

    expect_json(app.put_record("acme", "notes", "n1", &value_of(16)).await, StatusCode::CREATED).await;
    expect_json(app.put_record("acme", "tasks", "t1", &value_of(16)).await, StatusCode::CREATED).await;
    // A third collection: refused, and nothing stored.
    refused(app.put_record("acme", "events", "e1", &value_of(16)).await, "collections", 2, 2, 1).await;
    assert_eq!(app.get_record("acme", "events", "e1").await.status(), StatusCode::NOT_FOUND);
    assert_eq!(collections_shown(&app).await, (json!(2), json!(2)));
    // Writes into the collections that exist pass.
    expect_json(app.put_record("acme", "notes", "n2", &value_of(16)).await, StatusCode::CREATED).await;
    expect_json(app.put_record("acme", "tasks", "t1", &value_of(20)).await, StatusCode::OK).await;

    // A collection emptied no longer counts: another may take its place, and it is then refused.
    delete(&app, "tasks", "t1").await;
    assert_eq!(collections_shown(&app).await, (json!(2), json!(1)));
    expect_json(app.put_record("acme", "events", "e1", &value_of(16)).await, StatusCode::CREATED).await;
    refused(app.put_record("acme", "tasks", "t2", &value_of(16)).await, "collections", 2, 2, 1).await;

    // A collection with a distribution of its own counts, records or not.
    let body = json!({"distribution": "hash"});
    let distributed = app.admin(Method::PUT, "/v1/admin/tenants/acme/collections/spread", Some(&body)).await;
    expect_json(distributed, StatusCode::OK).await;
    assert_eq!(collections_shown(&app).await, (json!(2), json!(3)), "an admin's distribution is not held to it");

    // Lowered under what exists: the existing collections are written and emptied, no new one.
    set_quotas(&app, "acme", json!({"collections": 1})).await;
    expect_json(app.put_record("acme", "notes", "n3", &value_of(16)).await, StatusCode::CREATED).await;
    expect_json(app.put_record("acme", "spread", "s1", &value_of(16)).await, StatusCode::CREATED).await;
    refused(app.put_record("acme", "tasks", "t2", &value_of(16)).await, "collections", 1, 3, 1).await;
    delete(&app, "events", "e1").await;
    assert_eq!(collections_shown(&app).await, (json!(1), json!(2)));

    // Unlimited again (null overrides the tier's): any number.
    set_quotas(&app, "acme", json!({"collections": null})).await;
    expect_json(app.put_record("acme", "tasks", "t2", &value_of(16)).await, StatusCode::CREATED).await;
    assert_eq!(collections_shown(&app).await, (Value::Null, json!(3)));
}

async fn writers_racing_to_create_collections_on_one_instance_never_cross_the_quota(backend: Backend) {
    let app = Arc::new(TestApp::spawn(backend).await);
    app.create_tenant("acme").await;
    set_quotas(&app, "acme", json!({"collections": 5})).await;
    // 16 writers, each creating a collection of its own at once: exactly 5 are let through.
    let writers = (0..16).map(|i| {
        let app = app.clone();
        tokio::spawn(async move { app.put_record("acme", &format!("c{i:02}"), "k", &value_of(16)).await.status() })
    });
    let statuses = futures::future::join_all(writers).await;
    let created = statuses.iter().filter(|s| *s.as_ref().unwrap() == StatusCode::CREATED).count();
    let refused = statuses.iter().filter(|s| *s.as_ref().unwrap() == StatusCode::CONFLICT).count();
    assert_eq!((created, refused), (5, 11), "{statuses:?}");
    assert_eq!(collections_shown(&app).await, (json!(5), json!(5)));
}

/// The `/metrics` samples of `family` (the name with its labels, and the value).
async fn samples(app: &TestApp, family: &str) -> Vec<(String, f64)> {
    let text = app.client.get(format!("{}/metrics", app.metrics_base())).send().await.unwrap().text().await.unwrap();
    text.lines()
        .filter(|line| line.starts_with(&format!("shardgate_{family}{{")))
        .filter_map(|line| {
            let (name, value) = line.rsplit_once(' ')?;
            Some((name.to_owned(), value.parse().ok()?))
        })
        .collect()
}

/// The value of the sample of `family` with exactly `labels` (in the order exported).
async fn sample(app: &TestApp, family: &str, labels: &str) -> Option<f64> {
    let name = format!("shardgate_{family}{{{labels}}}");
    samples(app, family).await.into_iter().find(|(n, _)| *n == name).map(|(_, v)| v)
}

async fn usage_and_refusals_are_in_metrics_per_tier_never_per_tenant(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_tenant_with(&json!({"id": "acme", "tier": "free"})).await;
    app.create_tenant_with(&json!({"id": "bob", "tier": "premium"})).await;
    app.create_tenant_with(&json!({"id": "carl", "tier": "premium"})).await;
    set_quotas(&app, "acme", json!({"records": 2})).await;
    for key in ["a", "b"] {
        expect_json(app.put_record("acme", "notes", key, &value_of(16)).await, StatusCode::CREATED).await;
    }
    refused(app.put_record("acme", "notes", "c", &value_of(16)).await, "records", 2, 2, 1).await;
    refused(app.put_record("acme", "notes", "d", &value_of(16)).await, "records", 2, 2, 1).await;
    for (tenant, key) in [("bob", "x"), ("carl", "y"), ("carl", "z")] {
        expect_json(app.put_record(tenant, "notes", key, &value_of(20)).await, StatusCode::CREATED).await;
    }

    assert_eq!(sample(&app, "quota_refusals_total", "tier=\"free\",quota=\"records\"").await, Some(2.0));
    assert_eq!(sample(&app, "quota_refusals_total", "tier=\"premium\",quota=\"records\"").await, Some(0.0));
    // The first scrape starts the read of the tiers' usage; a later one shows it.
    let read = eventually(Duration::from_secs(10), async || {
        let free = sample(&app, "tier_usage", "tier=\"free\",part=\"records\"").await?;
        let premium = sample(&app, "tier_usage", "tier=\"premium\",part=\"record_bytes\"").await?;
        Some((free, premium))
    })
    .await;
    assert_eq!(read, Some((2.0, 60.0)), "acme's two records; bob's and carl's 3 x 20 bytes");
    assert_eq!(sample(&app, "tier_tenants_storing", "tier=\"premium\"").await, Some(2.0));
    assert_eq!(sample(&app, "tier_tenants_storing", "tier=\"standard\"").await, Some(0.0));
    // No series names a tenant.
    for family in ["tier_usage", "tier_tenants_storing", "quota_refusals_total"] {
        for (name, _) in samples(&app, family).await {
            assert!(!["acme", "bob", "carl"].iter().any(|t| name.contains(t)), "{name}");
        }
    }
}
