//! Listing a collection: order, filters, paging, limits.

use std::collections::BTreeSet;

use reqwest::StatusCode;
use serde_json::{Value, json};
use shardgate_tests::records::keys_of;
use shardgate_tests::{TestApp, encode_segment, expect_json, expect_problem, is_rfc3339};

shardgate_tests::conformance!(
    records_are_listed_in_byte_order_of_their_keys,
    prefix_start_and_end_narrow_a_listing,
    paging_with_the_cursor_returns_every_record_exactly_once,
    the_limit_defaults_to_100_and_is_capped_at_1000,
    a_bad_limit_or_cursor_is_rejected,
    an_empty_collection_lists_nothing,
);

async fn put_keys(app: &TestApp, collection: &str, keys: &[&str]) {
    for key in keys {
        expect_json(app.put_record("acme", collection, key, &json!({"key": key})).await, StatusCode::CREATED).await;
    }
}

async fn records_are_listed_in_byte_order_of_their_keys(app: TestApp) {
    app.create_tenant("acme").await;
    let keys = ["b", "a", "B", "aa", "a-b", "_", "Z", "é", "0", "a.b", "ab", "~", "日本", "a b"];
    put_keys(&app, "things", &keys).await;

    let listing = expect_json(app.list_records("acme", "things", "").await, StatusCode::OK).await;
    let mut expected: Vec<String> = keys.iter().map(|k| (*k).to_owned()).collect();
    expected.sort(); // `str` ordering is byte order
    assert_eq!(keys_of(&listing), expected);
    assert_eq!(listing["next_cursor"], Value::Null);
    for item in listing["items"].as_array().unwrap() {
        assert_eq!(item["value"], json!({"key": item["key"]}));
        assert_eq!(item["version"], 1);
        assert!(is_rfc3339(item["updated_at"].as_str().unwrap()), "{item}");
    }

    // Other collections and other tenants' records are not listed; deleted ones neither.
    app.put_record("acme", "others", "a", &json!(1)).await;
    app.delete_record("acme", "things", "b").await;
    let listing = expect_json(app.list_records("acme", "things", "").await, StatusCode::OK).await;
    expected.retain(|k| k != "b");
    assert_eq!(keys_of(&listing), expected);
}

async fn prefix_start_and_end_narrow_a_listing(app: TestApp) {
    app.create_tenant("acme").await;
    let keys = ["user:1", "user:2", "user:10", "user:3", "users", "user", "usa", "order:1", "order:2", "zeta"];
    put_keys(&app, "things", &keys).await;

    let list = async |query: &str| {
        keys_of(&expect_json(app.list_records("acme", "things", query).await, StatusCode::OK).await)
    };
    assert_eq!(list("prefix=user%3A").await, ["user:1", "user:10", "user:2", "user:3"]);
    assert_eq!(list("prefix=user").await, ["user", "user:1", "user:10", "user:2", "user:3", "users"]);
    assert_eq!(list("prefix=nothing").await, Vec::<String>::new());
    // start inclusive, end exclusive
    assert_eq!(list("start=user%3A10&end=user%3A3").await, ["user:10", "user:2"]);
    assert_eq!(list("start=user%3A2").await, ["user:2", "user:3", "users", "zeta"]);
    assert_eq!(list("end=order%3A2").await, ["order:1"]);
    assert_eq!(list("prefix=user%3A&start=user%3A2").await, ["user:2", "user:3"]);
    assert_eq!(list("prefix=user%3A&end=user%3A2").await, ["user:1", "user:10"]);
    assert_eq!(list("start=x&end=a").await, Vec::<String>::new());
    assert_eq!(list("start=a&end=a").await, Vec::<String>::new());
    assert_eq!(list(&format!("prefix={}", encode_segment("ü"))).await, Vec::<String>::new());
}

async fn paging_with_the_cursor_returns_every_record_exactly_once(app: TestApp) {
    app.create_tenant("acme").await;
    let keys: Vec<String> = (0..26).map(|i| format!("k{i:03}")).collect();
    app.put_many("acme", "things", &keys).await;
    app.delete_record("acme", "things", "k007").await;
    app.put_record("acme", "other", "k000", &json!(0)).await;

    for query in ["limit=7", "limit=5&prefix=k0", "limit=1&start=k010&end=k020"] {
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        let mut pages = 0;
        loop {
            let q = match &cursor {
                Some(c) => format!("{query}&cursor={}", encode_segment(c)),
                None => query.to_owned(),
            };
            let page = expect_json(app.list_records("acme", "things", &q).await, StatusCode::OK).await;
            let limit: usize = query.split('&').next().unwrap()[6..].parse().unwrap();
            assert!(keys_of(&page).len() <= limit, "a page holds at most `limit` items: {page}");
            seen.extend(keys_of(&page));
            pages += 1;
            assert!(pages < 100, "paging terminates");
            match &page["next_cursor"] {
                Value::Null => break,
                Value::String(c) => cursor = Some(c.clone()),
                other => panic!("next_cursor is a string or null, not {other}"),
            }
        }
        let mut expected: Vec<String> = keys.iter().filter(|k| *k != "k007").cloned().collect();
        if query.contains("start=k010") {
            expected.retain(|k| k.as_str() >= "k010" && k.as_str() < "k020");
        }
        assert_eq!(seen, expected, "paging with {query} returns every live record once, in order");
    }

    // One page large enough for all 25 live records holds each once.
    let page = expect_json(app.list_records("acme", "things", "limit=25").await, StatusCode::OK).await;
    assert_eq!(keys_of(&page).len(), 25);
    let unique: BTreeSet<String> = keys_of(&page).into_iter().collect();
    assert_eq!(unique.len(), 25);
}

async fn the_limit_defaults_to_100_and_is_capped_at_1000(app: TestApp) {
    app.create_tenant("acme").await;
    let keys: Vec<String> = (0..1005).map(|i| format!("r{i:05}")).collect();
    app.put_many("acme", "many", &keys).await;

    let page = expect_json(app.list_records("acme", "many", "").await, StatusCode::OK).await;
    assert_eq!(keys_of(&page), keys[..100].to_vec(), "default limit is 100");
    assert!(page["next_cursor"].is_string());

    let page = expect_json(app.list_records("acme", "many", "limit=5000").await, StatusCode::OK).await;
    assert_eq!(keys_of(&page), keys[..1000].to_vec(), "limit is capped at 1000");
    let cursor = page["next_cursor"].as_str().expect("more records follow").to_owned();
    let rest = expect_json(
        app.list_records("acme", "many", &format!("limit=1000&cursor={}", encode_segment(&cursor))).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(keys_of(&rest), keys[1000..].to_vec());
    assert_eq!(rest["next_cursor"], Value::Null);

    let page = expect_json(app.list_records("acme", "many", "limit=1000").await, StatusCode::OK).await;
    assert_eq!(keys_of(&page).len(), 1000);
}

async fn a_bad_limit_or_cursor_is_rejected(app: TestApp) {
    app.create_tenant("acme").await;
    app.put_record("acme", "things", "a", &json!(1)).await;
    for query in ["limit=0", "limit=abc", "limit=-1", "limit=1.5", "limit="] {
        expect_problem(app.list_records("acme", "things", query).await, StatusCode::BAD_REQUEST, "invalid_query").await;
    }
    for cursor in ["garbage", "AAAA", "eyJrIjoxfQ", "%00"] {
        let query = format!("cursor={cursor}");
        expect_problem(app.list_records("acme", "things", &query).await, StatusCode::BAD_REQUEST, "invalid_cursor")
            .await;
    }
}

async fn an_empty_collection_lists_nothing(app: TestApp) {
    app.create_tenant("acme").await;
    let listing = expect_json(app.list_records("acme", "nothing-here", "").await, StatusCode::OK).await;
    assert_eq!(listing["items"], json!([]), "{listing}");
    assert_eq!(listing["next_cursor"], Value::Null, "{listing}");
}
