//! Record CRUD, versions and conditional requests.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shardgate_tests::{TestApp, etag, expect_json, expect_problem, is_rfc3339, record_path};

shardgate_tests::conformance!(
    a_new_record_is_created_then_updated_with_increasing_versions,
    any_json_value_round_trips,
    if_match_and_if_none_match_guard_writes,
    a_reader_with_the_current_etag_gets_not_modified,
    deleting_a_record_keeps_versions_moving_forward,
    a_stale_if_match_does_not_delete,
    a_missing_record_is_a_404_problem,
    percent_encoded_and_unicode_keys_round_trip,
    malformed_json_is_rejected,
    only_json_in_utf8_is_taken,
    a_body_over_one_mebibyte_is_too_large,
    invalid_collections_and_keys_are_rejected,
    every_json_answer_ends_with_one_newline,
);

fn assert_envelope(body: &Value, key: &str, version: i64, value: &Value) {
    assert_eq!(body["key"], key, "envelope: {body}");
    assert_eq!(body["version"], version, "envelope: {body}");
    assert_eq!(&body["value"], value, "envelope: {body}");
    let updated_at = body["updated_at"].as_str().unwrap_or_else(|| panic!("updated_at is a string: {body}"));
    assert!(is_rfc3339(updated_at), "updated_at is RFC 3339: {updated_at}");
}

/// Creates tenant `acme` and writes `docs/d1` twice, `first` then `second`: d1 is at version 2.
async fn acme_with_d1_written_twice(app: &TestApp, first: Value, second: Value) {
    app.create_tenant("acme").await;
    app.put_record("acme", "docs", "d1", &first).await;
    app.put_record("acme", "docs", "d1", &second).await;
}

async fn a_new_record_is_created_then_updated_with_increasing_versions(app: TestApp) {
    app.create_tenant("acme").await;
    let first = json!({"name": "Ada", "tags": ["x", "y"], "n": 1});
    let response = app.put_record("acme", "people", "ada", &first).await;
    assert_eq!(etag(&response).as_deref(), Some("\"1\""));
    let body = expect_json(response, StatusCode::CREATED).await;
    assert_envelope(&body, "ada", 1, &first);

    let second = json!({"name": "Ada Lovelace"});
    let response = app.put_record("acme", "people", "ada", &second).await;
    assert_eq!(etag(&response).as_deref(), Some("\"2\""));
    let body = expect_json(response, StatusCode::OK).await;
    assert_envelope(&body, "ada", 2, &second);

    let response = app.get_record("acme", "people", "ada").await;
    assert_eq!(etag(&response).as_deref(), Some("\"2\""));
    let content_type = response.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(content_type.starts_with("application/json"), "{content_type}");
    let body = expect_json(response, StatusCode::OK).await;
    assert_envelope(&body, "ada", 2, &second);

    // A third write, and the same key in another collection is another record.
    let body = expect_json(app.put_record("acme", "people", "ada", &json!(3)).await, StatusCode::OK).await;
    assert_eq!(body["version"], 3);
    let body = expect_json(app.put_record("acme", "robots", "ada", &json!(1)).await, StatusCode::CREATED).await;
    assert_eq!(body["version"], 1);
}

async fn any_json_value_round_trips(app: TestApp) {
    app.create_tenant("acme").await;
    let values = [
        json!(42),
        json!(-1.5),
        json!("a string"),
        json!(true),
        json!(null),
        json!([1, "two", {"three": 3}]),
        json!({}),
        json!({"nested": {"deep": {"unicode": "grüße 🎉", "escaped": "quote\" and \\ backslash"}}}),
    ];
    for (i, value) in values.iter().enumerate() {
        let key = format!("v{i}");
        let body = expect_json(app.put_record("acme", "values", &key, value).await, StatusCode::CREATED).await;
        assert_eq!(&body["value"], value);
        let body = expect_json(app.get_record("acme", "values", &key).await, StatusCode::OK).await;
        assert_eq!(&body["value"], value, "value {i} round-trips");
    }
}

async fn if_match_and_if_none_match_guard_writes(app: TestApp) {
    app.create_tenant("acme").await;
    let token = app.rw_token("acme");
    let path = record_path("acme", "docs", "d1");
    let put = async |headers: &[(&str, &str)], value: i64| {
        app.send(Method::PUT, &path, Some(&token), Some(&json!(value)), headers).await
    };

    // If-Match on a record that does not exist fails, with a version or with `*`.
    expect_problem(put(&[("if-match", "\"1\"")], 0).await, StatusCode::PRECONDITION_FAILED, "precondition_failed")
        .await;
    expect_problem(put(&[("if-match", "*")], 0).await, StatusCode::PRECONDITION_FAILED, "precondition_failed").await;

    // If-None-Match: * creates only.
    let body = expect_json(put(&[("if-none-match", "*")], 1).await, StatusCode::CREATED).await;
    assert_eq!(body["version"], 1);
    expect_problem(put(&[("if-none-match", "*")], 2).await, StatusCode::PRECONDITION_FAILED, "precondition_failed")
        .await;

    // If-Match with the current version updates; with a stale one it fails.
    let response = put(&[("if-match", "\"1\"")], 3).await;
    assert_eq!(etag(&response).as_deref(), Some("\"2\""));
    expect_json(response, StatusCode::OK).await;
    expect_problem(put(&[("if-match", "\"1\"")], 4).await, StatusCode::PRECONDITION_FAILED, "precondition_failed")
        .await;
    let body = expect_json(put(&[("if-match", "*")], 5).await, StatusCode::OK).await;
    assert_eq!(body["version"], 3);

    // Failed preconditions changed nothing.
    let body = expect_json(app.get_record("acme", "docs", "d1").await, StatusCode::OK).await;
    assert_eq!(body["version"], 3);
    assert_eq!(body["value"], 5);
}

async fn a_reader_with_the_current_etag_gets_not_modified(app: TestApp) {
    acme_with_d1_written_twice(&app, json!({"v": 1}), json!({"v": 2})).await;
    let token = app.rw_token("acme");
    let path = record_path("acme", "docs", "d1");

    let response = app.send(Method::GET, &path, Some(&token), None, &[("if-none-match", "\"2\"")]).await;
    assert_eq!(response.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(etag(&response).as_deref(), Some("\"2\""));
    shardgate_tests::assert_request_id(response.headers(), &path);
    assert!(response.bytes().await.unwrap().is_empty(), "304 has no body");

    let response = app.send(Method::GET, &path, Some(&token), None, &[("if-none-match", "\"1\"")]).await;
    let body = expect_json(response, StatusCode::OK).await;
    assert_eq!(body["version"], 2);
}

async fn deleting_a_record_keeps_versions_moving_forward(app: TestApp) {
    acme_with_d1_written_twice(&app, json!(1), json!(2)).await;

    let response = app.delete_record("acme", "docs", "d1").await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    shardgate_tests::assert_request_id(response.headers(), "DELETE d1");
    expect_problem(app.get_record("acme", "docs", "d1").await, StatusCode::NOT_FOUND, "record_not_found").await;
    expect_problem(app.delete_record("acme", "docs", "d1").await, StatusCode::NOT_FOUND, "record_not_found").await;
    let listing = expect_json(app.list_records("acme", "docs", "").await, StatusCode::OK).await;
    assert_eq!(listing["items"], json!([]), "a deleted record is not listed");

    // Delete made version 3; re-creating is version 4 and a create (201).
    let response = app.put_record("acme", "docs", "d1", &json!("again")).await;
    assert_eq!(etag(&response).as_deref(), Some("\"4\""));
    let body = expect_json(response, StatusCode::CREATED).await;
    assert_eq!(body["version"], 4);
    assert_eq!(body["value"], "again");

    // If-None-Match: * treats the deleted record as absent.
    app.delete_record("acme", "docs", "d1").await;
    let token = app.rw_token("acme");
    let response = app
        .send(Method::PUT, &record_path("acme", "docs", "d1"), Some(&token), Some(&json!(0)), &[("if-none-match", "*")])
        .await;
    let body = expect_json(response, StatusCode::CREATED).await;
    assert_eq!(body["version"], 6);
}

async fn a_stale_if_match_does_not_delete(app: TestApp) {
    acme_with_d1_written_twice(&app, json!(1), json!(2)).await;
    let token = app.rw_token("acme");
    let path = record_path("acme", "docs", "d1");

    let response = app.send(Method::DELETE, &path, Some(&token), None, &[("if-match", "\"1\"")]).await;
    expect_problem(response, StatusCode::PRECONDITION_FAILED, "precondition_failed").await;
    let body = expect_json(app.get_record("acme", "docs", "d1").await, StatusCode::OK).await;
    assert_eq!(body["version"], 2);

    let response = app.send(Method::DELETE, &path, Some(&token), None, &[("if-match", "\"2\"")]).await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    expect_problem(app.get_record("acme", "docs", "d1").await, StatusCode::NOT_FOUND, "record_not_found").await;
}

async fn a_missing_record_is_a_404_problem(app: TestApp) {
    app.create_tenant("acme").await;
    let problem =
        expect_problem(app.get_record("acme", "docs", "nope").await, StatusCode::NOT_FOUND, "record_not_found").await;
    assert_eq!(problem["status"], 404);
    expect_problem(app.delete_record("acme", "docs", "nope").await, StatusCode::NOT_FOUND, "record_not_found").await;
}

async fn percent_encoded_and_unicode_keys_round_trip(app: TestApp) {
    app.create_tenant("acme").await;
    let token = app.rw_token("acme");
    let base = "/v1/tenants/acme/collections/keys/records";
    // (encoded path segment, the key it names)
    let cases = [
        ("a%2Fb", "a/b"),
        ("%C3%BC", "ü"),
        ("hello%20world", "hello world"),
        ("%F0%9F%8E%89", "🎉"),
        ("%E6%97%A5%E6%9C%AC", "日本"),
        ("q%3Fx%3D1%26y", "q?x=1&y"),
        ("percent%25sign", "percent%sign"),
        ("plus+sign", "plus+sign"),
        ("dots.and-dashes_~", "dots.and-dashes_~"),
    ];
    for (i, (encoded, key)) in cases.iter().enumerate() {
        let path = format!("{base}/{encoded}");
        let response = app.send(Method::PUT, &path, Some(&token), Some(&json!(i)), &[]).await;
        let body = expect_json(response, StatusCode::CREATED).await;
        assert_eq!(body["key"], *key, "PUT {path}");
        let body = expect_json(app.send(Method::GET, &path, Some(&token), None, &[]).await, StatusCode::OK).await;
        assert_eq!(body["key"], *key, "GET {path}");
        assert_eq!(body["value"], i);
    }
    // `a%2Fb` is one key, not a path: listing shows the decoded keys.
    let listing = expect_json(app.list_records("acme", "keys", "limit=1000").await, StatusCode::OK).await;
    let mut listed: Vec<String> =
        listing["items"].as_array().unwrap().iter().map(|i| i["key"].as_str().unwrap().to_owned()).collect();
    let mut expected: Vec<String> = cases.iter().map(|(_, k)| (*k).to_owned()).collect();
    expected.sort();
    assert_eq!(listed, expected, "listed in byte order");
    listed.dedup();
    assert_eq!(listed.len(), cases.len());

    // The longest key allowed: 512 bytes.
    let long = "k".repeat(512);
    let body = expect_json(app.put_record("acme", "keys", &long, &json!(1)).await, StatusCode::CREATED).await;
    assert_eq!(body["key"], long);
    let long_unicode = "ü".repeat(256);
    expect_json(app.put_record("acme", "keys", &long_unicode, &json!(1)).await, StatusCode::CREATED).await;
}

async fn malformed_json_is_rejected(app: TestApp) {
    app.create_tenant("acme").await;
    let token = app.rw_token("acme");
    let path = record_path("acme", "docs", "d1");
    for body in ["{", "{\"a\": }", "not json", "{\"a\":1}}", "[1,2", "\u{0}", "'single'"] {
        let response = app.put_raw(&path, &token, "application/json", body).await;
        expect_problem(response, StatusCode::BAD_REQUEST, "invalid_json").await;
    }
    let response = app.put_raw(&path, &token, "application/json", "").await;
    expect_problem(response, StatusCode::BAD_REQUEST, "invalid_json").await;
    expect_problem(app.get_record("acme", "docs", "d1").await, StatusCode::NOT_FOUND, "record_not_found").await;
}

async fn a_body_over_one_mebibyte_is_too_large(app: TestApp) {
    app.create_tenant("acme").await;
    let token = app.rw_token("acme");
    let path = record_path("acme", "docs", "big");
    let too_big = format!("\"{}\"", "x".repeat(1024 * 1024));
    let response = app.put_raw(&path, &token, "application/json", too_big).await;
    expect_problem(response, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large").await;
    expect_problem(app.get_record("acme", "docs", "big").await, StatusCode::NOT_FOUND, "record_not_found").await;

    // Just under the limit is fine.
    let fits = json!("y".repeat(1024 * 1024 - 64));
    let body = expect_json(app.put_record("acme", "docs", "big", &fits).await, StatusCode::CREATED).await;
    assert_eq!(body["value"], fits);
}

async fn invalid_collections_and_keys_are_rejected(app: TestApp) {
    app.create_tenant("acme").await;
    let token = app.rw_token("acme");
    let long_collection = "c".repeat(65);
    let long_key = "k".repeat(513);
    let paths = [
        "/v1/tenants/acme/collections/_under/records/k".to_owned(),
        "/v1/tenants/acme/collections/.dot/records/k".to_owned(),
        "/v1/tenants/acme/collections/has%20space/records/k".to_owned(),
        "/v1/tenants/acme/collections/sl%2Fash/records/k".to_owned(),
        format!("/v1/tenants/acme/collections/{long_collection}/records/k"),
        format!("/v1/tenants/acme/collections/docs/records/{long_key}"),
        "/v1/tenants/acme/collections/docs/records/ctrl%01char".to_owned(),
        "/v1/tenants/acme/collections/docs/records/new%0Aline".to_owned(),
        "/v1/tenants/acme/collections/docs/records/nul%00".to_owned(),
        "/v1/tenants/acme/collections/docs/records/del%7F".to_owned(),
    ];
    for path in &paths {
        let response = app.send(Method::PUT, path, Some(&token), Some(&json!(1)), &[]).await;
        expect_problem(response, StatusCode::BAD_REQUEST, "invalid_path").await;
        let response = app.send(Method::GET, path, Some(&token), None, &[]).await;
        expect_problem(response, StatusCode::BAD_REQUEST, "invalid_path").await;
        let response = app.send(Method::DELETE, path, Some(&token), None, &[]).await;
        expect_problem(response, StatusCode::BAD_REQUEST, "invalid_path").await;
    }
    // A collection of 64 characters is fine.
    let collection = "C".repeat(64);
    expect_json(app.put_record("acme", &collection, "k", &json!(1)).await, StatusCode::CREATED).await;
}

shardgate_tests::conformance!(deeply_nested_values_are_refused);

async fn deeply_nested_values_are_refused(app: TestApp) {
    app.create_tenant("acme").await;
    let token = app.rw_token("acme");
    let path = record_path("acme", "docs", "deep");
    let deep = format!("{}1{}", "[".repeat(65), "]".repeat(65));
    let response = app.put_raw(&path, &token, "application/json", deep).await;
    expect_problem(response, StatusCode::BAD_REQUEST, "json_too_deep").await;
    let fine = format!("{}1{}", "[".repeat(64), "]".repeat(64));
    let response = app.put_raw(&path, &token, "application/json", fine).await;
    assert_eq!(response.status(), StatusCode::CREATED);
}

shardgate_tests::conformance!(one_rule_refuses_what_cannot_round_trip_with_or_without_an_index);

/// Issue 13 item 5: non-finite numbers, lone surrogates and repeated keys used to be stored when
/// the collection had no index, and refused (some of them, as `invalid_json`) once any index
/// existed, even on another field. Now every record write meets the same rules.
async fn one_rule_refuses_what_cannot_round_trip_with_or_without_an_index(app: TestApp) {
    use shardgate_gatekeeper::Scope;
    app.create_tenant("acme").await;
    let token = app.token("acme", &[Scope::Read, Scope::Write, Scope::Manage]);
    let index = app
        .client
        .put(app.url("/v1/tenants/acme/collections/indexed/indexes/by-other"))
        .bearer_auth(&token)
        .json(&json!({"field": "/other"}))
        .send()
        .await
        .unwrap();
    expect_json(index, StatusCode::CREATED).await;
    let refused = [
        (r#"{"n": 1e999}"#, "`/n`"),
        (r#"{"list": [1, -1e400]}"#, "`/list/1`"),
        (r#"{"s": "\ud800"}"#, "`/s`"),
        (r#"{"deep": {"s": ["x\udc00"]}}"#, "`/deep/s/0`"),
        (r#"{"k": 1, "k": 2}"#, "\"k\""),
        (r#"{"k": 1, "\u006b": 2}"#, "\"k\""),
        (r#"{"a": [{"b": {"c": 1, "c": 1}}]}"#, "`/a/0/b`"),
    ];
    for collection in ["plain", "indexed"] {
        for (i, (body, place)) in refused.iter().enumerate() {
            let key = format!("r{i}");
            let response = app.put_raw(&record_path("acme", collection, &key), &token, "application/json", *body).await;
            let problem = expect_problem(response, StatusCode::BAD_REQUEST, "invalid_body").await;
            let detail = problem["detail"].as_str().unwrap();
            assert!(detail.contains(place), "{collection}: {body}: {detail}");
            let response = app.get_record("acme", collection, &key).await;
            expect_problem(response, StatusCode::NOT_FOUND, "record_not_found").await;
        }
        // What reads back as sent is stored exactly as sent, in both.
        let exact =
            r#"{"other": 1, "big": 18446744073709551617, "tiny": 1e-400, "pair": "\ud83d\ude00", "k": {"k": 1}}"#;
        let response = app.put_raw(&record_path("acme", collection, "fine"), &token, "application/json", exact).await;
        assert_eq!(response.status(), StatusCode::CREATED, "{collection}");
        let response = app.get_record("acme", collection, "fine").await;
        assert_eq!(response.status(), StatusCode::OK);
        assert!(response.text().await.unwrap().contains(exact), "{collection}: the exact text is kept");
    }
}

/// Record answers (written, read from the shard, read from the cache), listings, problems and
/// admin answers all end with one newline, counted in their length.
async fn every_json_answer_ends_with_one_newline(app: TestApp) {
    app.create_tenant("acme").await;
    let value = json!({"n": 1});
    let created = app.put_record("acme", "docs", "d1", &value).await;
    let updated = app.put_record("acme", "docs", "d1", &json!({"n": 2})).await;
    let read = app.get_record("acme", "docs", "d1").await;
    let cached = app.get_record("acme", "docs", "d1").await;
    let listed = app.list_records("acme", "docs", "limit=5").await;
    let missing = app.get_record("acme", "docs", "nope").await;
    let admin = app.admin(Method::GET, "/v1/admin/tenants/acme", None).await;
    for (what, response) in [
        ("created", created),
        ("updated", updated),
        ("read", read),
        ("read again", cached),
        ("listed", listed),
        ("missing", missing),
        ("admin", admin),
    ] {
        let length = response.content_length();
        let body = response.bytes().await.unwrap();
        assert!(body.ends_with(b"}\n"), "{what}: {:?}", String::from_utf8_lossy(&body));
        if let Some(length) = length {
            assert_eq!(length, body.len() as u64, "{what}: the length counts the newline");
        }
        let parsed: Value = serde_json::from_slice(&body).unwrap();
        assert!(parsed.is_object(), "{what}: {parsed}");
    }
}

async fn only_json_in_utf8_is_taken(app: TestApp) {
    app.create_tenant("acme").await;
    let token = app.rw_token("acme");
    let path = record_path("acme", "docs", "d1");
    expect_json(
        app.put_record("acme", "docs", "d1", &json!({"name": "first", "tags": ["a"]})).await,
        StatusCode::CREATED,
    )
    .await;
    // A patch is not a replacement, and a Latin-1 body is not UTF-8: neither is taken, and the
    // record is untouched.
    for content_type in [
        "application/json; charset=latin1",
        "application/json; charset=iso-8859-1",
        "application/merge-patch+json",
        "application/vnd.api+json",
        "application/json; profile=patch",
    ] {
        let response = app.put_raw(&path, &token, content_type, r#"{"name": "second"}"#).await;
        let problem = expect_problem(response, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type").await;
        let detail = problem["detail"].as_str().unwrap();
        assert!(detail.contains("application/json") && detail.contains("UTF-8"), "{content_type}: {problem}");
    }
    let record = expect_json(app.get_record("acme", "docs", "d1").await, StatusCode::OK).await;
    assert_envelope(&record, "d1", 1, &json!({"name": "first", "tags": ["a"]}));
    // The same rule for every JSON body, an admin one included.
    let response = app
        .client
        .patch(app.url("/v1/admin/tenants/acme"))
        .bearer_auth(app.admin_token())
        .header("content-type", "application/merge-patch+json")
        .body(r#"{"tier": "premium"}"#)
        .send()
        .await
        .unwrap();
    expect_problem(response, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type").await;
    // JSON in UTF-8, however it is spelt, is taken.
    for (version, content_type) in
        [(2, "application/json"), (3, "Application/JSON; charset=UTF-8"), (4, "application/json;charset=\"utf-8\"")]
    {
        let value = json!({"name": "caf\u{e9}", "version": version});
        let response = app.put_raw(&path, &token, content_type, value.to_string()).await;
        let record = expect_json(response, StatusCode::OK).await;
        assert_envelope(&record, "d1", version, &value);
    }
}
