//! Distributed collections: `hash` and `range` distributions set by an admin, records routed
//! one by one, listings that read each shard once and merge by key, partial answers; a tenant's
//! collections listed with their distributions and records.

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shardgate_tests::records::keys_of;
use shardgate_tests::{SEEDED_SHARDS, TestApp, eventually, expect_json, expect_problem};

shardgate_tests::on_both_engines!(
    a_tenant_spending_its_fan_out_budget_waits_and_others_do_not,
    an_empty_collection_switching_between_hash_and_range_keeps_the_writes_made_meanwhile,
);

shardgate_tests::conformance!(
    a_hash_collection_spreads_its_records_over_every_shard,
    a_hash_listing_completes_its_pages_when_one_shard_holds_most_keys,
    a_range_collection_reads_only_the_shards_its_ranges_overlap,
    only_an_empty_collection_changes_between_hash_and_range,
    a_listing_without_a_shard_says_so_or_fails_when_strict,
    a_failed_shard_is_named_by_a_stable_reason_never_by_its_error_text,
    a_cursor_without_a_record_key_is_refused_on_every_distribution,
    a_deleted_tenant_leaves_no_distributed_record_behind,
    an_index_finds_the_records_of_a_hash_collection,
    a_tenants_collections_are_listed_with_their_distribution_and_records,
);

async fn distribute(app: &TestApp, tenant: &str, collection: &str, body: &Value) -> reqwest::Response {
    app.admin(Method::PUT, &format!("/v1/admin/tenants/{tenant}/collections/{collection}"), Some(body)).await
}

/// Pages through a listing `limit` at a time; returns every key in the order served.
async fn page_through(app: &TestApp, tenant: &str, collection: &str, limit: u32) -> Vec<String> {
    let mut keys = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let query = match &cursor {
            Some(c) => format!("limit={limit}&cursor={c}"),
            None => format!("limit={limit}"),
        };
        let page = expect_json(app.list_records(tenant, collection, &query).await, StatusCode::OK).await;
        assert_eq!(page["_shards"]["failed"], 0, "{page}");
        keys.extend(keys_of(&page));
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return keys,
        }
    }
}

async fn a_hash_collection_spreads_its_records_over_every_shard(app: TestApp) {
    app.create_tenant("acme").await;
    let set = expect_json(distribute(&app, "acme", "events", &json!({"distribution": "hash"})).await, StatusCode::OK);
    assert_eq!(set.await, json!({"distribution": "hash"}));
    let got = app.admin(Method::GET, "/v1/admin/tenants/acme/collections/events", None).await;
    assert_eq!(expect_json(got, StatusCode::OK).await, json!({"distribution": "hash"}));
    let keys: Vec<String> = (0..300).map(|i| format!("e{i:04}")).collect();
    app.put_many("acme", "events", &keys).await;

    // Each record is routed by its own hash; together they reach every shard.
    let mut per_shard = BTreeMap::<String, usize>::new();
    for key in keys.iter().step_by(3) {
        let route = app.route("acme", "events", key).await;
        assert_eq!(route["strategy"], "record_hash", "{route}");
        assert_eq!(route["distribution"], "hash", "{route}");
        *per_shard.entry(route["shard"].as_str().unwrap().to_owned()).or_default() += 1;
    }
    assert_eq!(per_shard.len(), SEEDED_SHARDS.len(), "100 records reach every shard: {per_shard:?}");
    // The tenant's other collections stay on its home shard.
    assert_eq!(app.route("acme", "notes", "n1").await["strategy"], "hash");

    // Reads, conditional writes and deletes work record by record.
    let got = expect_json(app.get_record("acme", "events", "e0042").await, StatusCode::OK).await;
    assert_eq!(got["key"], "e0042");
    expect_json(app.put_record("acme", "events", "e0042", &json!({"v": 2})).await, StatusCode::OK).await;
    let got = expect_json(app.get_record("acme", "events", "e0042").await, StatusCode::OK).await;
    assert_eq!((got["version"].clone(), got["value"].clone()), (json!(2), json!({"v": 2})));
    assert_eq!(app.delete_record("acme", "events", "e0007").await.status(), StatusCode::NO_CONTENT);
    expect_problem(app.get_record("acme", "events", "e0007").await, StatusCode::NOT_FOUND, "record_not_found").await;

    // A listing reads each shard once and pages in key order without skipping or repeating.
    let explain = expect_json(app.list_records("acme", "events", "explain=true").await, StatusCode::OK).await;
    assert_eq!(explain["explain"]["distribution"], "hash", "{explain}");
    assert_eq!(explain["explain"]["shards"], json!(SEEDED_SHARDS), "{explain}");
    assert_eq!(explain["items"], json!([]), "explain reads nothing: {explain}");
    let listed = page_through(&app, "acme", "events", 7).await;
    let mut expected = keys.clone();
    expected.retain(|k| k != "e0007");
    assert_eq!(listed, expected);
    let page = expect_json(app.list_records("acme", "events", "prefix=e01&limit=5").await, StatusCode::OK).await;
    assert_eq!(keys_of(&page), ["e0100", "e0101", "e0102", "e0103", "e0104"]);
    assert_eq!(page["_shards"]["total"], SEEDED_SHARDS.len(), "{page}");
    assert_eq!(page["_shards"]["successful"], SEEDED_SHARDS.len(), "{page}");
}

/// A listing first asks each shard for its share of the page; a shard holding far more than
/// its share of the interval makes it ask again, and the pages still come out whole.
async fn a_hash_listing_completes_its_pages_when_one_shard_holds_most_keys(app: TestApp) {
    app.create_tenant("acme").await;
    expect_json(distribute(&app, "acme", "events", &json!({"distribution": "hash"})).await, StatusCode::OK).await;
    let crowded = app.route("acme", "events", "k0000").await["shard"].as_str().unwrap().to_owned();
    let (mut on_crowded, mut elsewhere) = (Vec::new(), Vec::new());
    for i in 0.. {
        let key = format!("k{i:04}");
        if app.route("acme", "events", &key).await["shard"] == crowded.as_str() {
            on_crowded.push(key);
        } else if elsewhere.len() < 12 {
            elsewhere.push(key);
        }
        if on_crowded.len() == 60 && elsewhere.len() == 12 {
            break;
        }
    }
    let mut keys: Vec<String> = on_crowded.into_iter().chain(elsewhere).collect();
    app.put_many("acme", "events", &keys).await;
    keys.sort();

    for limit in [5, 13, 40, 100] {
        assert_eq!(page_through(&app, "acme", "events", limit).await, keys, "limit={limit}");
    }
    let page = expect_json(app.list_records("acme", "events", "limit=40").await, StatusCode::OK).await;
    assert_eq!(keys_of(&page), &keys[..40], "{page}");
    assert!(page["next_cursor"].is_string(), "{page}");
}

/// A tenant's listings of distributed collections spend its budget of shard reads
/// (`limits.tenant_fan_out_shard_reads_per_second`, one per shard a listing reads); one more is
/// refused at once with `Retry-After`, another tenant's are not, and the budget comes back.
async fn a_tenant_spending_its_fan_out_budget_waits_and_others_do_not(backend: shardgate_tests::Backend) {
    let app = TestApp::spawn_with(backend, |config| {
        config.limits.tenant_fan_out_shard_reads_per_second = 2 * SEEDED_SHARDS.len() as u32;
    })
    .await;
    for tenant in ["flood", "quiet"] {
        app.create_tenant(tenant).await;
        expect_json(distribute(&app, tenant, "events", &json!({"distribution": "hash"})).await, StatusCode::OK).await;
    }
    app.put_many("flood", "events", &["e1".to_owned(), "e2".to_owned()]).await;
    // Two listings over every shard spend the whole second's budget; a listing of a collection
    // at home reads one shard and is not counted.
    for _ in 0..2 {
        expect_json(app.list_records("flood", "events", "").await, StatusCode::OK).await;
    }
    expect_json(app.list_records("flood", "home", "").await, StatusCode::OK).await;
    let refused = app.list_records("flood", "events", "").await;
    assert_eq!(refused.headers()["retry-after"], "1");
    let problem = expect_problem(refused, StatusCode::TOO_MANY_REQUESTS, "fan_out_limit").await;
    assert!(problem["detail"].as_str().unwrap().contains("flood"), "{problem}");
    expect_json(app.list_records("quiet", "events", "").await, StatusCode::OK).await;
    // Half a second refills half the budget: one more listing.
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    expect_json(app.list_records("flood", "events", "").await, StatusCode::OK).await;
}

async fn a_range_collection_reads_only_the_shards_its_ranges_overlap(app: TestApp) {
    app.create_tenant("acme").await;
    let ranges = json!([{"from": "", "shard": "shard-0"}, {"from": "m", "shard": "shard-2"}]);
    let body = json!({"distribution": "range", "ranges": ranges});
    assert_eq!(expect_json(distribute(&app, "acme", "names", &body).await, StatusCode::OK).await, body);
    let keys: Vec<String> = ('a'..='z').map(|c| format!("{c}-name")).collect();
    app.put_many("acme", "names", &keys).await;

    for (key, shard) in [("a-name", "shard-0"), ("l-name", "shard-0"), ("m-name", "shard-2"), ("z-name", "shard-2")] {
        let route = app.route("acme", "names", key).await;
        assert_eq!((route["strategy"].as_str(), route["shard"].as_str()), (Some("range"), Some(shard)), "{route}");
    }
    let inside = expect_json(app.list_records("acme", "names", "start=b&end=f&explain=true").await, StatusCode::OK);
    assert_eq!(inside.await["explain"]["shards"], json!(["shard-0"]));
    let across = expect_json(app.list_records("acme", "names", "start=k&end=n&explain=true").await, StatusCode::OK);
    assert_eq!(across.await["explain"]["shards"], json!(["shard-0", "shard-2"]));
    let upper = expect_json(app.list_records("acme", "names", "prefix=q&explain=true").await, StatusCode::OK);
    assert_eq!(upper.await["explain"]["shards"], json!(["shard-2"]));

    let page = expect_json(app.list_records("acme", "names", "start=b&end=f").await, StatusCode::OK).await;
    assert_eq!(keys_of(&page), ["b-name", "c-name", "d-name", "e-name"]);
    assert_eq!(page["_shards"]["total"], 1, "a range query inside one range reads one shard: {page}");
    assert_eq!(page_through(&app, "acme", "names", 4).await, keys);
}

async fn only_an_empty_collection_changes_between_hash_and_range(app: TestApp) {
    app.create_tenant("acme").await;
    expect_json(distribute(&app, "acme", "full", &json!({"distribution": "hash"})).await, StatusCode::OK).await;
    expect_json(app.put_record("acme", "full", "k", &json!(1)).await, StatusCode::CREATED).await;
    // `hash` and `range` rows share a table: a non-empty collection goes by way of `tenant`.
    let ranges = json!({"distribution": "range", "ranges": [{"from": "", "shard": "shard-0"}]});
    let refused = distribute(&app, "acme", "full", &ranges).await;
    let problem = expect_problem(refused, StatusCode::CONFLICT, "distribution_refused").await;
    assert!(problem["detail"].as_str().unwrap().contains("by way of `tenant`"), "{problem}");
    let got = app.admin(Method::GET, "/v1/admin/tenants/acme/collections/full", None).await;
    assert_eq!(expect_json(got, StatusCode::OK).await, json!({"distribution": "hash"}));
    expect_json(app.get_record("acme", "full", "k").await, StatusCode::OK).await;

    // Bad bodies and unknown names.
    for body in [
        json!({"distribution": "range"}),
        json!({"distribution": "range", "ranges": [{"from": "a", "shard": "shard-0"}]}),
        json!({"distribution": "range", "ranges": [{"from": "", "shard": "shard-0"}, {"from": "", "shard": "shard-1"}]}),
        json!({"distribution": "hash", "ranges": [{"from": "", "shard": "shard-0"}]}),
        json!({"distribution": "sideways"}),
    ] {
        let response = distribute(&app, "acme", "empty", &body).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{body}");
    }
    let unknown = json!({"distribution": "range", "ranges": [{"from": "", "shard": "shard-9"}]});
    expect_problem(
        distribute(&app, "acme", "empty", &unknown).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "unknown_shard",
    )
    .await;
    let nobody = distribute(&app, "nobody", "empty", &json!({"distribution": "hash"})).await;
    expect_problem(nobody, StatusCode::NOT_FOUND, "tenant_not_found").await;

    // An empty hash collection goes back to `tenant`; its records then live at home again.
    expect_json(distribute(&app, "acme", "flip", &json!({"distribution": "hash"})).await, StatusCode::OK).await;
    expect_json(distribute(&app, "acme", "flip", &json!({"distribution": "tenant"})).await, StatusCode::OK).await;
    expect_json(app.put_record("acme", "flip", "k", &json!(1)).await, StatusCode::CREATED).await;
    assert_eq!(app.route("acme", "flip", "k").await["strategy"], "hash");
    // A tenant token cannot change distributions.
    let token = app.rw_token("acme");
    let path = "/v1/admin/tenants/acme/collections/other";
    let body = json!({"distribution": "hash"});
    let response = app.send(Method::PUT, path, Some(&token), Some(&body), &[]).await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
}

/// Tenant `acme` with its collection `events` distributed `hash` and holding `count` records
/// `e000`, `e001`, ...; their keys.
async fn hashed_events(app: &TestApp, count: usize) -> Vec<String> {
    app.create_tenant("acme").await;
    expect_json(distribute(app, "acme", "events", &json!({"distribution": "hash"})).await, StatusCode::OK).await;
    let keys: Vec<String> = (0..count).map(|i| format!("e{i:03}")).collect();
    app.put_many("acme", "events", &keys).await;
    keys
}

async fn a_listing_without_a_shard_says_so_or_fails_when_strict(app: TestApp) {
    let keys = hashed_events(&app, 80).await;
    app.set_shard_state("shard-1", "offline").await;

    let page = expect_json(app.list_records("acme", "events", "limit=1000").await, StatusCode::OK).await;
    let shards = &page["_shards"];
    assert_eq!((shards["total"].as_u64(), shards["failed"].as_u64()), (Some(4), Some(1)), "{page}");
    assert_eq!(shards["failures"][0]["shard"], "shard-1", "{page}");
    assert_eq!(shards["failures"][0]["code"], "shard_offline", "{page}");
    let mut elsewhere = BTreeSet::new();
    for key in &keys {
        if app.route("acme", "events", key).await["shard"] != "shard-1" {
            elsewhere.insert(key.clone());
        }
    }
    assert_eq!(keys_of(&page).into_iter().collect::<BTreeSet<_>>(), elsewhere, "the other shards' records");
    // Point reads of records on the other shards go on.
    for key in elsewhere.iter().take(5) {
        expect_json(app.get_record("acme", "events", key).await, StatusCode::OK).await;
    }
    let strict = app.list_records("acme", "events", "consistency=strict").await;
    expect_problem(strict, StatusCode::SERVICE_UNAVAILABLE, "shard_unavailable").await;
    let bad = app.list_records("acme", "events", "consistency=eventually").await;
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
}

/// A tenant sees which shard failed and a stable reason; what the database or an operator said
/// stays in the server's log.
async fn a_failed_shard_is_named_by_a_stable_reason_never_by_its_error_text(app: TestApp) {
    hashed_events(&app, 40).await;

    // An operator forces shard-2's breaker open with a note meant for operators.
    let note = "disk swap on db-7 by ops@example.com";
    let breaker = json!({"action": "force_open", "reason": note});
    expect_json(app.admin(Method::POST, "/v1/admin/shards/shard-2/breaker", Some(&breaker)).await, StatusCode::OK)
        .await;
    let page = expect_json(app.list_records("acme", "events", "limit=1000").await, StatusCode::OK).await;
    assert_eq!(page["_shards"]["failed"], 1, "{page}");
    assert_eq!(
        page["_shards"]["failures"],
        json!([{"shard": "shard-2", "code": "shard_unavailable", "reason": "breaker_open"}]),
        "{page}"
    );
    let strict = app.list_records("acme", "events", "consistency=strict").await;
    let problem = expect_problem(strict, StatusCode::SERVICE_UNAVAILABLE, "shard_unavailable").await;
    assert!(problem["detail"].as_str().unwrap().contains("shard-2 (breaker_open)"), "{problem}");
    assert!(!problem.to_string().contains("disk swap"), "{problem}");

    // Then shard-1 goes offline as well.
    app.set_shard_state("shard-1", "offline").await;
    let page = expect_json(app.list_records("acme", "events", "limit=1000").await, StatusCode::OK).await;
    let mut failures = page["_shards"]["failures"].as_array().unwrap().clone();
    failures.sort_by_key(|f| f["shard"].as_str().unwrap().to_owned());
    assert_eq!(
        failures,
        [
            json!({"shard": "shard-1", "code": "shard_offline", "reason": "shard_offline"}),
            json!({"shard": "shard-2", "code": "shard_unavailable", "reason": "breaker_open"}),
        ],
        "{page}"
    );
    let reset = json!({"action": "reset"});
    expect_json(app.admin(Method::POST, "/v1/admin/shards/shard-2/breaker", Some(&reset)).await, StatusCode::OK).await;
    let page = expect_json(app.list_records("acme", "events", "limit=1000").await, StatusCode::OK).await;
    assert_eq!(
        page["_shards"]["failures"],
        json!([{"shard": "shard-1", "code": "shard_offline", "reason": "shard_offline"}])
    );
}

/// A cursor is the last key of a page: one holding what no key could (a NUL, bytes that are not
/// UTF-8, a control character, a key too long) is 400 `invalid_cursor` whatever the
/// collection's distribution, and never reaches a shard.
async fn a_cursor_without_a_record_key_is_refused_on_every_distribution(app: TestApp) {
    app.create_tenant("acme").await;
    expect_json(distribute(&app, "acme", "spread", &json!({"distribution": "hash"})).await, StatusCode::OK).await;
    let ranges = json!({"distribution": "range", "ranges": [
        {"from": "", "shard": "shard-0"}, {"from": "m", "shard": "shard-1"},
    ]});
    expect_json(distribute(&app, "acme", "ranged", &ranges).await, StatusCode::OK).await;
    let keys = ["a", "n", "z"].map(str::to_owned);
    for collection in ["home", "spread", "ranged"] {
        app.put_many("acme", collection, &keys).await;
    }
    let tagged = |text: &[u8]| URL_SAFE_NO_PAD.encode([b"1:".as_slice(), text].concat());
    let malformed = [
        tagged(b"\0"),
        tagged(b"a\0b"),
        tagged(b"\xff"),
        tagged(b"\xed\xa0\x80"),
        tagged(b"a\nb"),
        tagged("k".repeat(513).as_bytes()),
        URL_SAFE_NO_PAD.encode("2:a"),
        "not*base64".to_owned(),
    ];
    for collection in ["home", "spread", "ranged"] {
        for cursor in &malformed {
            let response = app.list_records("acme", collection, &format!("cursor={cursor}")).await;
            let problem = expect_problem(response, StatusCode::BAD_REQUEST, "invalid_cursor").await;
            assert!(!problem.to_string().contains("UTF8"), "{collection} {cursor}: {problem}");
        }
        // A cursor this server issued goes on after its key.
        let first = expect_json(app.list_records("acme", collection, "limit=1").await, StatusCode::OK).await;
        let next = first["next_cursor"].as_str().expect("more records follow");
        let rest = expect_json(app.list_records("acme", collection, &format!("cursor={next}")).await, StatusCode::OK);
        assert_eq!(keys_of(&rest.await), ["n", "z"], "{collection}");
    }
}

async fn a_deleted_tenant_leaves_no_distributed_record_behind(app: TestApp) {
    hashed_events(&app, 40).await;
    let deleted = app.admin(Method::DELETE, "/v1/admin/tenants/acme", None).await;
    assert!(deleted.status().is_success(), "{}", deleted.status());

    app.create_tenant("acme").await;
    let got = app.admin(Method::GET, "/v1/admin/tenants/acme/collections/events", None).await;
    assert_eq!(expect_json(got, StatusCode::OK).await, json!({"distribution": "tenant"}), "a new tenant starts afresh");
    expect_json(distribute(&app, "acme", "events", &json!({"distribution": "hash"})).await, StatusCode::OK).await;
    let page = expect_json(app.list_records("acme", "events", "").await, StatusCode::OK).await;
    assert_eq!(keys_of(&page), Vec::<String>::new(), "{page}");
}

async fn an_index_finds_the_records_of_a_hash_collection(app: TestApp) {
    use shardgate_gatekeeper::Scope;
    app.create_tenant("acme").await;
    expect_json(distribute(&app, "acme", "users", &json!({"distribution": "hash"})).await, StatusCode::OK).await;
    let towns = ["oslo", "rome", "lima"];
    let keys: Vec<String> = (0..30).map(|i| format!("u{i:02}")).collect();
    for (i, key) in keys.iter().enumerate().take(15) {
        let value = json!({"town": towns[i % 3]});
        expect_json(app.put_record("acme", "users", key, &value).await, StatusCode::CREATED).await;
    }
    // Defined after half the records exist (the backfill reads every shard), maintained for the rest.
    let token = app.token("acme", &[Scope::Read, Scope::Write, Scope::Manage]);
    let index = "/v1/tenants/acme/collections/users/indexes/by-town";
    let defined = app.client.put(app.url(index)).bearer_auth(&token).json(&json!({"field": "/town"})).send().await;
    expect_json(defined.unwrap(), StatusCode::CREATED).await;
    let active = async || {
        let info: Value = app.client.get(app.url(index)).bearer_auth(&token).send().await.ok()?.json().await.ok()?;
        (info["state"] == "active").then_some(info)
    };
    eventually(std::time::Duration::from_secs(15), active).await.expect("the backfill finishes");
    for (i, key) in keys.iter().enumerate().skip(15) {
        let value = json!({"town": towns[i % 3]});
        expect_json(app.put_record("acme", "users", key, &value).await, StatusCode::CREATED).await;
    }
    let url = app.url(&format!("{index}/records?value=rome&limit=100"));
    let page = expect_json(app.client.get(url).bearer_auth(&token).send().await.unwrap(), StatusCode::OK).await;
    let found: Vec<String> = keys_of(&page);
    let expected: Vec<String> = keys.iter().enumerate().filter(|(i, _)| i % 3 == 1).map(|(_, k)| k.clone()).collect();
    assert_eq!(found, expected, "{page}");
}

/// With the PostgreSQL cluster of `shard-3` frozen (every process of it stopped), a fan-out
/// answers within its deadline with the other shards' records and names the frozen one; point
/// reads elsewhere go on; a second fan-out of the same tenant meanwhile is refused at once
/// (`limits.tenant_concurrent_fan_outs` = 1), another tenant's is not.
#[tokio::test]
async fn a_frozen_shard_leaves_a_fan_out_partial_and_others_untouched() {
    use std::time::Duration;

    use secrecy::SecretString;
    use shardgate_tests::pg_cluster::PgCluster;
    use shardgate_tests::{Backend, metric};

    let bound = Duration::from_secs(120);
    tokio::time::timeout(bound, async {
        let cluster = PgCluster::start().await;
        let url = cluster.create_database("frozen_fan_out").await;
        let app = TestApp::spawn_with(Backend::Postgres, |config| {
            let seed = config.storage.shards.iter_mut().find(|s| s.id.as_str() == "shard-3").expect("seeded");
            seed.url = SecretString::from(url);
            config.storage.fan_out_deadline = Duration::from_secs(2);
            config.limits.tenant_concurrent_fan_outs = 1;
        })
        .await;
        for tenant in ["acme", "other"] {
            app.create_tenant_with(&json!({"id": tenant, "shard": "shard-0"})).await;
            expect_json(distribute(&app, tenant, "events", &json!({"distribution": "hash"})).await, StatusCode::OK)
                .await;
        }
        let keys: Vec<String> = (0..60).map(|i| format!("e{i:03}")).collect();
        app.put_many("acme", "events", &keys).await;
        app.put_many("other", "events", &keys[..10]).await;
        let mut elsewhere = Vec::new();
        for key in &keys {
            if app.route("acme", "events", key).await["shard"] != "shard-3" {
                elsewhere.push(key.clone());
            }
        }
        assert!(elsewhere.len() < keys.len(), "some records live on shard-3");

        cluster.freeze();
        let first = {
            let (client, token) = (app.client.clone(), app.rw_token("acme"));
            let url = app.url("/v1/tenants/acme/collections/events/records?limit=1000");
            tokio::spawn(async move { client.get(url).bearer_auth(token).send().await })
        };
        // While it waits for the frozen shard, a second one of the tenant is refused at once.
        let in_progress = "shardgate_fan_out_bulkhead_requests_in_progress";
        shardgate_tests::eventually(Duration::from_secs(5), async || {
            (metric(&app.client, app.metrics_base(), in_progress).await >= 1.0).then_some(())
        })
        .await
        .expect("the first fan-out takes its place");
        let refused = app.list_records("acme", "events", "limit=5").await;
        assert_eq!(refused.headers()["retry-after"], "1");
        expect_problem(refused, StatusCode::TOO_MANY_REQUESTS, "fan_out_limit").await;
        // Another tenant's fan-out is admitted (and answers partially too).
        let others = {
            let (client, token) = (app.client.clone(), app.rw_token("other"));
            let url = app.url("/v1/tenants/other/collections/events/records");
            tokio::spawn(async move { client.get(url).bearer_auth(token).send().await })
        };
        // Point reads of records on the other shards go on.
        for key in elsewhere.iter().take(10) {
            expect_json(app.get_record("acme", "events", key).await, StatusCode::OK).await;
        }

        let page = expect_json(first.await.unwrap().unwrap(), StatusCode::OK).await;
        let shards = &page["_shards"];
        assert_eq!((shards["total"].as_u64(), shards["failed"].as_u64()), (Some(4), Some(1)), "{page}");
        assert_eq!(shards["failures"][0]["shard"], "shard-3", "{page}");
        assert_eq!(keys_of(&page), elsewhere, "the other shards' records, in order");
        let others = expect_json(others.await.unwrap().unwrap(), StatusCode::OK).await;
        assert_eq!(others["_shards"]["failed"], 1, "{others}");
        let refusals = metric(&app.client, app.metrics_base(), "shardgate_fan_out_bulkhead_refusals_total").await;
        assert!(refusals >= 1.0, "refusals are counted: {refusals}");

        cluster.thaw();
        let whole = shardgate_tests::eventually(Duration::from_secs(30), async || {
            let response = app.list_records("acme", "events", "limit=1000&consistency=strict").await;
            (response.status() == StatusCode::OK).then_some(response)
        })
        .await
        .expect("once the shard is back, a strict listing succeeds");
        assert_eq!(keys_of(&expect_json(whole, StatusCode::OK).await), keys);
    })
    .await
    .expect("the test ends within its bound");
}

/// A hash collection of 10,000 records is paged through with `limit=97` over and over while a
/// writer adds keys and a rebalance moves vshards onto a new shard, then a drain moves them
/// off it: every pass returns every original key exactly once and in order, and afterwards
/// every record reads back from where its route says and the shards hold each record once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hash_records_move_with_their_vshards_and_pages_stay_whole_meanwhile() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::time::Duration;

    // Every phase of a move pauses a moment, so the moves overlap the passes of the pager.
    let app = crate::moves::spawn(shardgate_tests::Backend::Postgres, Duration::from_millis(200)).await;
    let (url, _) = app.extra_shard_url("s-new").await;
    let registered = app.admin(Method::POST, "/v1/admin/shards", Some(&json!({"id": "s-new", "url": url}))).await;
    expect_json(registered, StatusCode::CREATED).await;
    // Its own rate limit, far above what this test sends: the tier's would refuse the load.
    let limit = json!({"per_second": 1_000_000, "burst": 1_000_000});
    app.create_tenant_with(&json!({"id": "acme", "rate_limit": limit})).await;
    expect_json(distribute(&app, "acme", "events", &json!({"distribution": "hash"})).await, StatusCode::OK).await;
    let keys: Vec<String> = (0..10_000).map(|i| format!("e{i:05}")).collect();
    app.put_many("acme", "events", &keys).await;

    let stop = Arc::new(AtomicBool::new(false));
    let added = Arc::new(AtomicUsize::new(0));
    let writer = {
        let (client, base, token, stop, added) =
            (app.client.clone(), app.url(""), app.rw_token("acme"), stop.clone(), added.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let n = added.load(Ordering::Relaxed);
                let url = format!("{base}/v1/tenants/acme/collections/events/records/f{n:05}");
                let put = client.put(url).bearer_auth(&token).json(&json!({"n": n})).send().await;
                if put.is_ok_and(|r| r.status().is_success()) {
                    added.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
    };
    let passes = Arc::new(AtomicUsize::new(0));
    let pager = {
        let (app_keys, stop, passes) = (keys.clone(), stop.clone(), passes.clone());
        let (client, base, token) = (app.client.clone(), app.url(""), app.rw_token("acme"));
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let mut listed: Vec<String> = Vec::new();
                let mut cursor: Option<String> = None;
                loop {
                    let mut url = format!("{base}/v1/tenants/acme/collections/events/records?limit=97");
                    if let Some(c) = &cursor {
                        url.push_str(&format!("&cursor={c}"));
                    }
                    let page = client.get(url).bearer_auth(&token).send().await.expect("the server answers");
                    let page = expect_json(page, StatusCode::OK).await;
                    assert_eq!(page["_shards"]["failed"], 0, "{page}");
                    listed.extend(keys_of(&page));
                    match page["next_cursor"].as_str() {
                        Some(next) => cursor = Some(next.to_owned()),
                        None => break,
                    }
                }
                assert!(listed.windows(2).all(|w| w[0] < w[1]), "in order, none twice");
                let original: Vec<String> = listed.into_iter().filter(|k| k.starts_with('e')).collect();
                assert_eq!(original, app_keys, "every original key, once");
                passes.fetch_add(1, Ordering::Relaxed);
            }
        })
    };

    let body = json!({"parallel": 4});
    let started = app.admin(Method::POST, "/v1/admin/vshards/rebalance", Some(&body)).await;
    let started = expect_json(started, StatusCode::ACCEPTED).await;
    let rebalanced = crate::moves::ended(&app, started["job"]["id"].as_str().unwrap(), Duration::from_secs(180)).await;
    assert_eq!(rebalanced["state"], "done", "{rebalanced}");
    // The pass that ran while the rebalance moved vshards ends, checked.
    let after = async || (passes.load(Ordering::Relaxed) >= 1).then_some(());
    shardgate_tests::eventually(Duration::from_secs(120), after).await.expect("a pass spans the rebalance");
    let before_drain = passes.load(Ordering::Relaxed);
    let drain = app.admin(Method::POST, "/v1/admin/shards/s-new/drain", Some(&json!({"parallel": 4}))).await;
    let drain = expect_json(drain, StatusCode::ACCEPTED).await;
    let drained = crate::moves::ended(&app, drain["job"]["id"].as_str().unwrap(), Duration::from_secs(180)).await;
    assert_eq!(drained["state"], "done", "{drained}");
    let after = async || (passes.load(Ordering::Relaxed) > before_drain).then_some(());
    shardgate_tests::eventually(Duration::from_secs(120), after).await.expect("a pass spans the drain");
    stop.store(true, Ordering::Relaxed);
    writer.await.unwrap();
    pager.await.unwrap();

    // Every record reads back; each lives once, on the shard its route names.
    let added = added.load(Ordering::Relaxed);
    let all: Vec<String> = keys.iter().cloned().chain((0..added).map(|n| format!("f{n:05}"))).collect();
    for key in all.iter().step_by(97) {
        expect_json(app.get_record("acme", "events", key).await, StatusCode::OK).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await; // the cleanup grace of the last moves
    let mut stored = 0i64;
    for (shard, url) in app.shard_urls().into_iter().chain([("s-new".to_owned(), url)]) {
        let pool = shardgate_tests::open_shard(&url).await;
        let rows: Vec<(String,)> = sqlx::query_as("SELECT key FROM spread_records").fetch_all(&pool).await.unwrap();
        for (key,) in rows.iter().step_by(50) {
            assert_eq!(app.route("acme", "events", key).await["shard"], shard.as_str(), "{key} is where it routes");
        }
        stored += rows.len() as i64;
    }
    assert_eq!(stored as usize, all.len(), "each record once, nothing left behind");
}

/// An empty collection switches between `hash` and `range` while a client starts writing to it.
/// Old and new rows share one table, so settling the switch must take only the rows the new
/// distribution places elsewhere: every write acknowledged is read back afterwards, once. The
/// writer starts a little later each attempt, until several attempts switched with writes
/// acknowledged before the switch answered (those writes raced it).
async fn an_empty_collection_switching_between_hash_and_range_keeps_the_writes_made_meanwhile(
    backend: shardgate_tests::Backend,
) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    let app = TestApp::spawn(backend).await;
    let limit = json!({"per_second": 1_000_000, "burst": 1_000_000});
    app.create_tenant_with(&json!({"id": "acme", "rate_limit": limit})).await;
    let ranges = json!({"distribution": "range", "ranges": [{"from": "", "shard": "shard-0"}, {"from": "m", "shard": "shard-1"}]});
    let hash = json!({"distribution": "hash"});
    let (mut raced, mut attempts) = (0, 0);
    while raced < 3 && attempts < 60 {
        attempts += 1;
        let collection = format!("flip{attempts}");
        let (first, then) = if attempts % 2 == 0 { (&hash, &ranges) } else { (&ranges, &hash) };
        expect_json(distribute(&app, "acme", &collection, first).await, StatusCode::OK).await;
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let (client, token, stop) = (app.client.clone(), app.rw_token("acme"), stop.clone());
            let base = app.url(&format!("/v1/tenants/acme/collections/{collection}/records"));
            let delay = Duration::from_micros(500 * (attempts % 16));
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                let mut acked: Vec<(String, Instant)> = Vec::new();
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    // Keys on both sides of the range bound `m`.
                    let key = format!("{}{n:04}", ["c", "x"][n % 2]);
                    let put =
                        client.put(format!("{base}/{key}")).bearer_auth(&token).json(&json!({"n": n})).send().await;
                    if put.is_ok_and(|r| r.status() == StatusCode::CREATED) {
                        acked.push((key, Instant::now()));
                    }
                    n += 1;
                }
                acked
            })
        };
        let switched = distribute(&app, "acme", &collection, then).await;
        let answered = Instant::now();
        let status = switched.status();
        assert!(
            status == StatusCode::OK || status == StatusCode::CONFLICT,
            "the switch succeeds, or is refused because a write came first: {status}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
        stop.store(true, Ordering::Relaxed);
        let acked = writer.await.expect("the writer ends");
        if status == StatusCode::OK && acked.iter().any(|(_, at)| *at < answered) {
            raced += 1;
        }
        for (key, _) in &acked {
            let read = app.get_record("acme", &collection, key).await;
            assert_eq!(read.status(), StatusCode::OK, "attempt {attempts}: acknowledged key {key} is readable");
        }
        let mut listed = page_through(&app, "acme", &collection, 50).await;
        let mut written: Vec<String> = acked.into_iter().map(|(key, _)| key).collect();
        written.sort();
        listed.sort();
        assert_eq!(listed, written, "attempt {attempts}: every acknowledged key is listed, once");
    }
    assert!(raced > 0, "no attempt in {attempts} switched with writes in flight: the test did not test the race");
}

async fn collections_of(app: &TestApp, tenant: &str) -> reqwest::Response {
    app.admin(Method::GET, &format!("/v1/admin/tenants/{tenant}/collections"), None).await
}

async fn a_tenants_collections_are_listed_with_their_distribution_and_records(app: TestApp) {
    let list = |tenant: &'static str| collections_of(&app, tenant);
    expect_problem(list("nobody").await, StatusCode::NOT_FOUND, "tenant_not_found").await;
    app.create_tenant("acme").await;
    let empty = expect_json(list("acme").await, StatusCode::OK).await;
    assert_eq!(empty, json!({"tenant": "acme", "collections": [], "complete": true, "unreachable_shards": []}));

    // Collections distributed `tenant` have no catalog row: they are found by their records.
    let strings = |keys: &[&str]| keys.iter().map(|k| (*k).to_owned()).collect::<Vec<_>>();
    app.put_many("acme", "orders", &strings(&["o1", "o2", "o3"])).await;
    app.put_many("acme", "notes", &strings(&["n1"])).await;
    assert_eq!(app.delete_record("acme", "notes", "n1").await.status(), StatusCode::NO_CONTENT);
    // Another tenant's records are not acme's.
    app.create_tenant("other").await;
    app.put_many("other", "orders", &strings(&["x1", "x2"])).await;
    app.put_many("other", "private", &strings(&["p1"])).await;

    let ranges = json!([{"from": "", "shard": "shard-0"}, {"from": "m", "shard": "shard-1"}]);
    for (collection, body) in [
        ("events", json!({"distribution": "hash"})),
        ("later", json!({"distribution": "hash"})),
        ("names", json!({"distribution": "range", "ranges": ranges.clone()})),
    ] {
        expect_json(distribute(&app, "acme", collection, &body).await, StatusCode::OK).await;
    }
    let events: Vec<String> = (0..40).map(|i| format!("e{i:02}")).collect();
    app.put_many("acme", "events", &events).await;
    app.put_many("acme", "names", &strings(&["alice", "zed"])).await;

    let listed = expect_json(list("acme").await, StatusCode::OK).await;
    assert_eq!(
        listed,
        json!({
            "tenant": "acme",
            "collections": [
                {"name": "events", "distribution": "hash", "records": 40},
                {"name": "later", "distribution": "hash", "records": 0},
                {"name": "names", "distribution": "range", "ranges": ranges, "records": 2},
                {"name": "orders", "distribution": "tenant", "records": 3},
            ],
            "complete": true,
            "unreachable_shards": [],
        }),
        "a collection of tombstones only (notes) is not listed"
    );
    let other = expect_json(list("other").await, StatusCode::OK).await;
    let names: Vec<&str> =
        other["collections"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["orders", "private"]);

    let tenant_token = app.rw_token("acme");
    let response = app.send(Method::GET, "/v1/admin/tenants/acme/collections", Some(&tenant_token), None, &[]).await;
    expect_problem(response, StatusCode::FORBIDDEN, "insufficient_scope").await;
}
