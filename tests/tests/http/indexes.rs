//! Secondary indexes: definitions, backfill jobs, look-ups that read one index shard and verify
//! every candidate, unique values under races, and stale entries (left by a write interrupted
//! between its steps) that never produce a wrong answer and are repaired.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shardgate_tests::{Backend, TestApp, eventually, expect_json, expect_problem, metric, record_path};

shardgate_tests::conformance!(
    indexes_are_built_maintained_and_looked_up,
    a_unique_value_goes_to_exactly_one_of_two_racing_writers,
    a_failed_build_names_its_offending_records_and_can_be_retried_or_dropped,
    numbers_in_an_index_compare_exactly,
);

shardgate_tests::on_both_engines!(a_collection_takes_as_many_index_definitions_as_its_tier_allows);

fn index_path(index: &str) -> String {
    format!("/v1/tenants/acme/collections/users/indexes/{index}")
}

async fn define(app: &TestApp, token: &str, index: &str, spec: Value) -> reqwest::Response {
    app.client.put(app.url(&index_path(index))).bearer_auth(token).json(&spec).send().await.unwrap()
}

async fn put(app: &TestApp, token: &str, key: &str, value: Value) -> reqwest::Response {
    app.client.put(app.url(&record_path("acme", "users", key))).bearer_auth(token).json(&value).send().await.unwrap()
}

/// Waits until the index is active.
async fn until_active(app: &TestApp, token: &str, index: &str) -> Value {
    until_state(app, token, index, "active").await.expect("the backfill finishes")
}

/// Waits until the index's build has failed (never later than 15 s).
async fn until_failed(app: &TestApp, token: &str, index: &str) -> Value {
    until_state(app, token, index, "failed").await.expect("the build fails, rather than building for ever")
}

/// The index's description once its `state` is `state`; `None` if it is not within 15 s.
async fn until_state(app: &TestApp, token: &str, index: &str, state: &str) -> Option<Value> {
    let reached = async || {
        let info: Value =
            app.client.get(app.url(&index_path(index))).bearer_auth(token).send().await.ok()?.json().await.ok()?;
        (info["state"] == state).then_some(info)
    };
    eventually(Duration::from_secs(15), reached).await
}

async fn find(app: &TestApp, token: &str, index: &str, query: &str) -> (Vec<String>, Value) {
    let url = app.url(&format!("{}/records?{query}", index_path(index)));
    let page = expect_json(app.client.get(url).bearer_auth(token).send().await.unwrap(), StatusCode::OK).await;
    let keys = page["items"].as_array().unwrap().iter().map(|r| r["key"].as_str().unwrap().to_owned()).collect();
    (keys, page)
}

/// Creates tenant `acme` and returns a manager token of it.
async fn acme_manager(app: &TestApp) -> String {
    use shardgate_gatekeeper::Scope;
    app.create_tenant("acme").await;
    app.token("acme", &[Scope::Read, Scope::Write, Scope::Manage])
}

/// A server on SQLite with tenant `acme`, and a manager token of it.
async fn acme_on_sqlite() -> (TestApp, String) {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let token = acme_manager(&app).await;
    (app, token)
}

/// Defines `by-town` on `/town`; asserts 201 and returns the index (still building).
async fn define_by_town(app: &TestApp, token: &str) -> Value {
    expect_json(define(app, token, "by-town", json!({"field": "/town"})).await, StatusCode::CREATED).await
}

async fn indexes_are_built_maintained_and_looked_up(app: TestApp) {
    let token = acme_manager(&app).await;
    for (key, town, age) in [("u1", "Lyon", 30), ("u2", "Paris", 41), ("u3", "Lyon", 25), ("u4", "Nice", 41)] {
        expect_json(put(&app, &token, key, json!({"town": town, "age": age, "name": key})).await, StatusCode::CREATED)
            .await;
    }
    // Only `manage` may define indexes.
    let response = define(&app, &app.rw_token("acme"), "by-town", json!({"field": "/town"})).await;
    expect_problem(response, StatusCode::FORBIDDEN, "insufficient_scope").await;
    let info = define_by_town(&app, &token).await;
    assert_eq!(info["state"], "building");
    let job = info["job"].as_str().unwrap().to_owned();
    // A write while the index builds is indexed too.
    expect_json(put(&app, &token, "u5", json!({"town": "Lyon", "age": 52})).await, StatusCode::CREATED).await;
    until_active(&app, &token, "by-town").await;
    let job = expect_json(app.admin(Method::GET, &format!("/v1/admin/jobs/{job}"), None).await, StatusCode::OK).await;
    assert_eq!(job["state"], "done");
    assert!(job["progress"]["indexed"].as_u64().unwrap() >= 4, "{job}");

    let (lyon, _) = find(&app, &token, "by-town", "value=Lyon").await;
    assert_eq!(lyon, ["u1", "u3", "u5"]);
    // Paging by cursor.
    let (first, page) = find(&app, &token, "by-town", "value=Lyon&limit=2").await;
    assert_eq!(first, ["u1", "u3"]);
    let cursor = page["next_cursor"].as_str().unwrap();
    assert_eq!(find(&app, &token, "by-town", &format!("value=Lyon&limit=2&cursor={cursor}")).await.0, ["u5"]);

    // A record that changes value moves; a deleted one goes.
    expect_json(put(&app, &token, "u1", json!({"town": "Paris", "age": 30})).await, StatusCode::OK).await;
    let response = app.client.delete(app.url(&record_path("acme", "users", "u3"))).bearer_auth(&token).send().await;
    assert_eq!(response.unwrap().status(), StatusCode::NO_CONTENT);
    assert_eq!(find(&app, &token, "by-town", "value=Lyon").await.0, ["u5"]);
    assert_eq!(find(&app, &token, "by-town", "value=Paris").await.0, ["u1", "u2"]);

    // Numbers order numerically, ranges are half-open and may span every shard.
    let created =
        define(&app, &token, "by-age", json!({"field": "/age", "layout": "covering", "include": ["/name"]})).await;
    expect_json(created, StatusCode::CREATED).await;
    until_active(&app, &token, "by-age").await;
    assert_eq!(find(&app, &token, "by-age", "from=30&to=42").await.0, ["u1", "u2", "u4"]);
    assert_eq!(find(&app, &token, "by-age", "value=41").await.0, ["u2", "u4"]);
    // The same definition again is fine; another one under the name is not.
    let again =
        define(&app, &token, "by-age", json!({"field": "/age", "layout": "covering", "include": ["/name"]})).await;
    expect_json(again, StatusCode::OK).await;
    expect_problem(
        define(&app, &token, "by-age", json!({"field": "/town"})).await,
        StatusCode::CONFLICT,
        "index_exists",
    )
    .await;
    for bad in [
        json!({}),
        json!({"field": "town"}),
        json!({"field": "/a", "layout": "covering"}),
        json!({"field": "/a", "x": 1}),
    ] {
        assert_eq!(define(&app, &token, "bad", bad.clone()).await.status(), StatusCode::BAD_REQUEST, "{bad}");
    }
    // Deleting an index: look-ups are 404.
    let response = app.client.delete(app.url(&index_path("by-age"))).bearer_auth(&token).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    let url = app.url(&format!("{}/records?value=41", index_path("by-age")));
    let response = app.client.get(url).bearer_auth(&token).send().await.unwrap();
    expect_problem(response, StatusCode::NOT_FOUND, "index_not_found").await;
}

async fn a_unique_value_goes_to_exactly_one_of_two_racing_writers(app: TestApp) {
    let token = acme_manager(&app).await;
    expect_json(
        define(&app, &token, "by-email", json!({"field": "/email", "unique": true})).await,
        StatusCode::CREATED,
    )
    .await;
    until_active(&app, &token, "by-email").await;
    for round in 0..5 {
        let email = format!("same{round}@example.com");
        let writers: Vec<_> = ["a", "b"]
            .into_iter()
            .map(|who| {
                let (client, token) = (app.client.clone(), token.clone());
                let url = app.url(&record_path("acme", "users", &format!("{who}{round}")));
                let body = json!({"email": email});
                tokio::spawn(
                    async move { client.put(url).bearer_auth(token).json(&body).send().await.unwrap().status() },
                )
            })
            .collect();
        let mut statuses = Vec::new();
        for writer in writers {
            statuses.push(writer.await.unwrap());
        }
        assert_eq!(statuses.iter().filter(|s| s.is_success()).count(), 1, "round {round}: {statuses:?}");
        assert_eq!(statuses.iter().filter(|s| **s == StatusCode::CONFLICT).count(), 1, "round {round}: {statuses:?}");
        let (owners, _) = find(&app, &token, "by-email", &format!("value={email}")).await;
        assert_eq!(owners.len(), 1, "round {round}: {owners:?}");
        // The loser wrote nothing.
        let loser = if owners[0].starts_with('a') { "b" } else { "a" };
        let response = app.get_record("acme", "users", &format!("{loser}{round}")).await;
        expect_problem(response, StatusCode::NOT_FOUND, "record_not_found").await;
    }
    // A value released by its record is free for a new owner.
    expect_json(put(&app, &token, "c", json!({"email": "c@example.com"})).await, StatusCode::CREATED).await;
    let response = put(&app, &token, "d", json!({"email": "c@example.com"})).await;
    expect_problem(response, StatusCode::CONFLICT, "unique_violation").await;
    expect_json(put(&app, &token, "c", json!({"email": "c2@example.com"})).await, StatusCode::OK).await;
    expect_json(put(&app, &token, "d", json!({"email": "c@example.com"})).await, StatusCode::CREATED).await;
}

/// Issue 13 item 1: numbers used to be compared as doubles, so 9007199254740992 and
/// 9007199254740993 were one value (a false 409, and a look-up returning the other record).
async fn numbers_in_an_index_compare_exactly(app: TestApp) {
    let token = acme_manager(&app).await;
    let created = define(&app, &token, "by-u", json!({"field": "/u", "unique": true})).await;
    expect_json(created, StatusCode::CREATED).await;
    until_active(&app, &token, "by-u").await;
    let put_text = async |key: &str, body: &str| {
        app.put_raw(&record_path("acme", "users", key), &token, "application/json", body.to_owned()).await
    };
    let records = [
        ("odd", "9007199254740993"),
        ("even", "9007199254740992"),
        ("past-u64", "18446744073709551617"),
        ("u64-max-plus-1", "18446744073709551616"),
        ("neg-odd", "-9007199254740993"),
        ("neg-even", "-9007199254740992"),
        ("long-decimal", "0.30000000000000000001"),
        ("short-decimal", "0.3"),
        ("one", "1.0"),
    ];
    for (key, number) in records {
        let response = put_text(key, &format!(r#"{{"u": {number}}}"#)).await;
        assert_eq!(response.status(), StatusCode::CREATED, "{key}: {}", response.text().await.unwrap());
    }
    for (key, number) in records {
        assert_eq!(find(&app, &token, "by-u", &format!("value={number}")).await.0, [key], "{number}");
    }
    // 1, 1.0 and 1e0 are one number: one value of the unique index.
    expect_problem(put_text("also-one", r#"{"u": 1e0}"#).await, StatusCode::CONFLICT, "unique_violation").await;
    assert_eq!(find(&app, &token, "by-u", "value=1").await.0, ["one"]);
    // Ranges keep numeric order.
    let (keys, _) = find(&app, &token, "by-u", "from=-9007199254740993&to=9007199254740993").await;
    assert_eq!(keys, ["neg-odd", "neg-even", "short-decimal", "long-decimal", "one", "even"]);
    let (keys, _) = find(&app, &token, "by-u", "from=9007199254740993").await;
    assert_eq!(keys, ["odd", "u64-max-plus-1", "past-u64"]);
}

/// Rows of `index_entries` on every shard, as (value_key, record_key, state).
async fn entries(app: &TestApp) -> Vec<(String, String, String)> {
    app.rows_on_every_shard("SELECT value_key, record_key, state FROM index_entries ORDER BY value_key, record_key")
        .await
}

#[tokio::test]
async fn a_lookup_reads_one_index_shard_and_never_returns_a_stale_entry() {
    let (app, token) = acme_on_sqlite().await;
    define_by_town(&app, &token).await;
    until_active(&app, &token, "by-town").await;
    for (key, town) in [("u1", "Lyon"), ("u2", "Lyon"), ("u3", "Nice")] {
        expect_json(put(&app, &token, key, json!({"town": town})).await, StatusCode::CREATED).await;
    }
    // One equality look-up: one statement on one shard, none elsewhere.
    let before = metric(&app.client, &app.base_url, "shardgate_index_entry_queries_total").await;
    assert_eq!(find(&app, &token, "by-town", "value=Lyon").await.0, ["u1", "u2"]);
    let after = metric(&app.client, &app.base_url, "shardgate_index_entry_queries_total").await;
    assert_eq!(after - before, 1.0, "one index shard, one statement");
    let text = app.client.get(app.url("/metrics")).send().await.unwrap().text().await.unwrap();
    let shards_touched = text.lines().filter(|l| l.starts_with("shardgate_index_entry_queries_total{")).count();
    assert_eq!(shards_touched, 1, "{text}");

    // Fault: "record written, old entry not removed" — the record changes value behind the
    // gateway's back (as if the write crashed after its commit), so u1's Lyon entry is stale.
    for (_, url) in app.shard_urls() {
        let pool = shardgate_tests::open_shard(&url).await;
        sqlx::query("UPDATE records SET value = '{\"town\":\"Paris\"}' WHERE key = 'u1'").execute(&pool).await.unwrap();
        pool.close().await;
    }
    // Fault: "entry written, record not" — an old pending entry for a record that never came.
    let lyon_rows: Vec<_> =
        entries(&app).await.into_iter().filter(|(v, r, _)| r == "u2" && v.contains("Lyon")).collect();
    let value_key = lyon_rows[0].0.clone();
    for (_, url) in app.shard_urls() {
        let pool = shardgate_tests::open_shard(&url).await;
        let holds: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM index_entries WHERE record_key = 'u2'")
            .fetch_one(&pool)
            .await
            .unwrap();
        if holds > 0 {
            sqlx::query(
                "INSERT INTO index_entries (tenant, collection, index_name, value_key, record_key, vshard, record_vshard, \
                 record_version, state, claimed_at, copy, unique_claim) \
                 SELECT tenant, collection, index_name, value_key, 'ghost', vshard, record_vshard, 1, 'pending', 0, NULL, 0 \
                 FROM index_entries WHERE record_key = 'u2' AND value_key = $1",
            )
            .bind(&value_key)
            .execute(&pool)
            .await
            .unwrap();
        }
        pool.close().await;
    }
    assert!(entries(&app).await.iter().any(|(_, r, _)| r == "ghost"));
    // Neither fault changes the answer, and both leftovers are repaired by the look-up.
    assert_eq!(find(&app, &token, "by-town", "value=Lyon").await.0, ["u2"]);
    let left = entries(&app).await;
    assert!(!left.iter().any(|(_, r, _)| r == "ghost"), "{left:?}");
    assert!(!left.iter().any(|(v, r, _)| r == "u1" && v.contains("Lyon")), "{left:?}");
    assert_eq!(metric(&app.client, &app.base_url, "shardgate_index_repairs_total").await, 2.0);
    assert_eq!(find(&app, &token, "by-town", "value=Lyon").await.0, ["u2"]);
    // u1 now holds Paris but has no entry for it: the look-up misses it (never a wrong answer)
    // until the drift audit writes the missing entry.
    assert_eq!(find(&app, &token, "by-town", "value=Paris").await.0, Vec::<String>::new());
    // Another leftover for the audit to find: a dangling entry on the Nice value.
    for (_, url) in app.shard_urls() {
        let pool = shardgate_tests::open_shard(&url).await;
        sqlx::query(
            "INSERT INTO index_entries (tenant, collection, index_name, value_key, record_key, vshard, record_vshard, \
             record_version, state, claimed_at, copy, unique_claim) \
             SELECT tenant, collection, index_name, value_key, 'phantom', vshard, record_vshard, 1, 'live', 0, NULL, 0 \
             FROM index_entries WHERE record_key = 'u3'",
        )
        .execute(&pool)
        .await
        .unwrap();
        pool.close().await;
    }
    let started = app
        .admin(
            Method::POST,
            "/v1/admin/index-audits",
            Some(&json!({"tenant": "acme", "collection": "users", "index": "by-town"})),
        )
        .await;
    let job = expect_json(started, StatusCode::ACCEPTED).await;
    let url = format!("/v1/admin/jobs/{}", job["id"].as_str().unwrap());
    let done = async || {
        let job: Value = app.admin(Method::GET, &url, None).await.json().await.ok()?;
        (job["state"] == "done").then_some(job)
    };
    let job = eventually(Duration::from_secs(10), done).await.expect("the audit finishes");
    assert_eq!(job["progress"]["missing"], 1, "{job}");
    assert_eq!(job["progress"]["dangling"], 1, "{job}");
    assert_eq!(find(&app, &token, "by-town", "value=Paris").await.0, ["u1"]);
    assert_eq!(find(&app, &token, "by-town", "value=Nice").await.0, ["u3"]);
    assert!(!entries(&app).await.iter().any(|(_, r, _)| r == "phantom"));
    assert_eq!(metric(&app.client, &app.base_url, "shardgate_index_audit_missing_total").await, 1.0);
    assert_eq!(metric(&app.client, &app.base_url, "shardgate_index_audit_dangling_total").await, 1.0);
}

#[tokio::test]
async fn a_backfill_survives_a_restart() {
    let (mut app, token) = acme_on_sqlite().await;
    let keys: Vec<String> = (0..300).map(|i| format!("k{i:04}")).collect();
    app.put_many("acme", "users", &keys).await;
    let info = expect_json(define(&app, &token, "by-k", json!({"field": "/k"})).await, StatusCode::CREATED).await;
    // Restart before the backfill (which waits for every instance to learn the index) ran.
    app.restart().await;
    until_active(&app, &token, "by-k").await;
    let job = info["job"].as_str().unwrap();
    let job = expect_json(app.admin(Method::GET, &format!("/v1/admin/jobs/{job}"), None).await, StatusCode::OK).await;
    assert_eq!(job["state"], "done", "{job}");
    assert_eq!(job["progress"]["indexed"], 300, "{job}");
    assert_eq!(find(&app, &token, "by-k", "value=k0123").await.0, ["k0123"]);
}

#[tokio::test]
async fn a_lookup_on_a_building_index_is_409() {
    let (app, token) = acme_on_sqlite().await;
    define_by_town(&app, &token).await;
    let url = app.url(&format!("{}/records?value=Lyon", index_path("by-town")));
    let response = app.client.get(url).bearer_auth(&token).send().await.unwrap();
    expect_problem(response, StatusCode::CONFLICT, "index_building").await;
}

async fn a_failed_build_names_its_offending_records_and_can_be_retried_or_dropped(app: TestApp) {
    let token = acme_manager(&app).await;
    // Records written before the index exists: two share an e-mail, one is too long to index.
    let long = "x".repeat(2000);
    for (key, email) in [("u1", "ann@example.com"), ("u2", "ann@example.com"), ("u3", long.as_str()), ("u4", "bo@x")] {
        expect_json(put(&app, &token, key, json!({"email": email, "team": "red"})).await, StatusCode::CREATED).await;
    }
    let spec = json!({"field": "/email", "unique": true});
    let created = expect_json(define(&app, &token, "by-email", spec.clone()).await, StatusCode::CREATED).await;
    let first_job = created["job"].as_str().unwrap().to_owned();

    // The build fails, saying why and naming the records, in the index and in its job.
    let info = until_failed(&app, &token, "by-email").await;
    let reason = info["failure"]["reason"].as_str().unwrap();
    assert!(reason.contains("too long") && reason.contains("unique"), "{info}");
    let mut keys: Vec<&str> =
        info["failure"]["offending_keys"].as_array().unwrap().iter().map(|k| k.as_str().unwrap()).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["u1", "u2", "u3"], "both sides of the duplicate and the long value: {info}");
    let job =
        expect_json(app.admin(Method::GET, &format!("/v1/admin/jobs/{first_job}"), None).await, StatusCode::OK).await;
    assert_eq!(job["state"], "failed", "{job}");
    assert_eq!(job["error"], info["failure"]["reason"], "{job}");
    assert_eq!(job["progress"]["offending_keys"].as_array().unwrap().len(), 3, "{job}");
    assert_eq!((job["progress"]["too_long"].as_u64(), job["progress"]["duplicates"].as_u64()), (Some(1), Some(1)));

    // Look-ups say so, not "building" for ever.
    let url = app.url(&format!("{}/records?value=bo@x", index_path("by-email")));
    let problem = expect_problem(
        app.client.get(&url).bearer_auth(&token).send().await.unwrap(),
        StatusCode::CONFLICT,
        "index_failed",
    )
    .await;
    assert!(problem["detail"].as_str().unwrap().contains("unique"), "{problem}");

    // Fix the records, then define it again: a new build, which succeeds.
    expect_json(put(&app, &token, "u2", json!({"email": "cy@example.com"})).await, StatusCode::OK).await;
    expect_json(put(&app, &token, "u3", json!({"email": "di@example.com"})).await, StatusCode::OK).await;
    let retried = expect_json(define(&app, &token, "by-email", spec.clone()).await, StatusCode::OK).await;
    assert_eq!(retried["state"], "building", "{retried}");
    assert!(retried["failure"].is_null(), "{retried}");
    assert_ne!(retried["job"], first_job.as_str(), "a new job: {retried}");
    until_active(&app, &token, "by-email").await;
    assert_eq!(find(&app, &token, "by-email", "value=ann@example.com").await.0, ["u1"]);
    assert_eq!(find(&app, &token, "by-email", "value=di@example.com").await.0, ["u3"]);
    let job = retried["job"].as_str().unwrap();
    let job = expect_json(app.admin(Method::GET, &format!("/v1/admin/jobs/{job}"), None).await, StatusCode::OK).await;
    assert_eq!((job["state"].as_str(), job["progress"]["indexed"].as_u64()), (Some("done"), Some(4)), "{job}");

    // A failed index can be dropped too.
    let created = define(&app, &token, "by-team", json!({"field": "/team", "unique": true})).await;
    expect_json(created, StatusCode::CREATED).await;
    let info = until_failed(&app, &token, "by-team").await;
    // u2 and u3 lost their team when they were fixed; u1 and u4 are both red.
    let mut keys: Vec<&str> =
        info["failure"]["offending_keys"].as_array().unwrap().iter().map(|k| k.as_str().unwrap()).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["u1", "u4"], "{info}");
    let response = app.client.delete(app.url(&index_path("by-team"))).bearer_auth(&token).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    let response = app.client.get(app.url(&index_path("by-team"))).bearer_auth(&token).send().await.unwrap();
    expect_problem(response, StatusCode::NOT_FOUND, "index_not_found").await;
    // Writes no longer answer to it.
    expect_json(put(&app, &token, "u5", json!({"email": "ed@example.com", "team": "red"})).await, StatusCode::CREATED)
        .await;
}

/// Every record write maintains each index of its collection, on shards other tenants share, so
/// a collection takes at most its tenant's tier's number of definitions; one more is 409
/// `index_limit_reached`, also when many race for the last place.
async fn a_collection_takes_as_many_index_definitions_as_its_tier_allows(backend: Backend) {
    use futures::StreamExt as _;
    use shardgate_gatekeeper::Scope;
    let app = TestApp::spawn_with(backend, |config| {
        let caps = &mut config.limits.max_indexes_per_collection;
        (caps.free, caps.standard, caps.premium) = (2, 3, 5);
    })
    .await;
    let token = acme_manager(&app).await;
    let by = |field: &str| json!({"field": format!("/{field}")});
    for i in 0..3 {
        expect_json(define(&app, &token, &format!("i{i}"), by(&format!("f{i}"))).await, StatusCode::CREATED).await;
    }
    let refused =
        expect_problem(define(&app, &token, "i3", by("f3")).await, StatusCode::CONFLICT, "index_limit_reached");
    let detail = refused.await["detail"].as_str().unwrap().to_owned();
    assert!(detail.contains('3') && detail.contains("limits.max_indexes_per_collection"), "{detail}");
    expect_problem(
        app.client.get(app.url(&index_path("i3"))).bearer_auth(&token).send().await.unwrap(),
        StatusCode::NOT_FOUND,
        "index_not_found",
    )
    .await;
    // At the cap, an existing definition is still answered; records are still written.
    expect_json(define(&app, &token, "i1", by("f1")).await, StatusCode::OK).await;
    expect_json(put(&app, &token, "u1", json!({"f0": 1, "f1": 2, "f2": 3})).await, StatusCode::CREATED).await;
    // The cap is per collection: another collection of the tenant has its own.
    let orders = app.url("/v1/tenants/acme/collections/orders/indexes/i0");
    let created = app.client.put(orders).bearer_auth(&token).json(&by("f0")).send().await.unwrap();
    expect_json(created, StatusCode::CREATED).await;
    // A deleted definition frees its place.
    let deleted = app.client.delete(app.url(&index_path("i0"))).bearer_auth(&token).send().await.unwrap();
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    expect_json(define(&app, &token, "i3", by("f3")).await, StatusCode::CREATED).await;

    // Twelve definitions racing on a new collection: exactly three are stored.
    let answers: Vec<(StatusCode, Value)> = futures::stream::iter(0..12)
        .map(|i| {
            let url = app.url(&format!("/v1/tenants/acme/collections/racing/indexes/r{i}"));
            let request = app.client.put(url).bearer_auth(&token).json(&by(&format!("f{i}"))).send();
            async move {
                let response = request.await.unwrap();
                (response.status(), response.json::<Value>().await.unwrap())
            }
        })
        .buffer_unordered(12)
        .collect()
        .await;
    let created = answers.iter().filter(|(status, _)| *status == StatusCode::CREATED).count();
    let capped = answers
        .iter()
        .filter(|(status, body)| *status == StatusCode::CONFLICT && body["code"] == "index_limit_reached");
    assert_eq!((created, capped.count()), (3, 9), "{answers:?}");

    // The cap follows the tier.
    for (tenant, tier, cap) in [("small", "free", 2), ("large", "premium", 5)] {
        app.create_tenant_with(&json!({"id": tenant, "tier": tier})).await;
        let token = app.token(tenant, &[Scope::Manage]);
        let define = |i: usize| {
            let url = app.url(&format!("/v1/tenants/{tenant}/collections/c/indexes/i{i}"));
            app.client.put(url).bearer_auth(&token).json(&by(&format!("f{i}"))).send()
        };
        for i in 0..cap {
            expect_json(define(i).await.unwrap(), StatusCode::CREATED).await;
        }
        expect_problem(define(cap).await.unwrap(), StatusCode::CONFLICT, "index_limit_reached").await;
    }
}
