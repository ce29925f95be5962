//! The shard map, route explanations and the epoch.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shardgate_tests::{SEEDED_SHARDS, TestApp, VSHARD_COUNT, expect_any_problem, expect_problem};

shardgate_tests::conformance!(
    the_shard_map_covers_every_vshard_once,
    route_explains_hash_placement_of_an_unpinned_tenant,
    route_explains_lookup_placement_of_a_pinned_tenant,
    route_of_an_unknown_tenant_is_404,
    the_epoch_increases_with_every_admin_change,
);

/// The shard that owns `vshard` according to the map's ranges.
fn owner_of(map: &Value, vshard: u64) -> String {
    map["vshard_ranges"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["first"].as_u64().unwrap() <= vshard && vshard <= r["last"].as_u64().unwrap())
        .map(|r| r["shard"].as_str().unwrap().to_owned())
        .unwrap_or_else(|| panic!("vshard {vshard} is in no range: {map}"))
}

async fn the_shard_map_covers_every_vshard_once(app: TestApp) {
    app.create_tenant("plain").await;
    app.create_tenant_with(&json!({"id": "pinned", "shard": "shard-3"})).await;
    let map = app.shard_map().await;
    assert!(map["epoch"].is_i64(), "{map}");
    assert_eq!(map["vshard_count"], VSHARD_COUNT);
    assert_eq!(map["tenants"], 2, "{map}");
    assert_eq!(map["pinned_tenants"], 1, "{map}");

    let shards = map["shards"].as_array().unwrap();
    let ids: Vec<&str> = shards.iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, SEEDED_SHARDS);
    for shard in shards {
        assert_eq!(shard["state"], "active");
        assert_eq!(shard["vshards"], 256);
    }

    // Ranges are sorted, contiguous, cover 0..=1023 and agree with the per-shard counts.
    let ranges = map["vshard_ranges"].as_array().unwrap();
    let mut next = 0;
    let mut counts = std::collections::BTreeMap::<String, u64>::new();
    for range in ranges {
        let (first, last) = (range["first"].as_u64().unwrap(), range["last"].as_u64().unwrap());
        assert_eq!(first, next, "ranges are contiguous: {map}");
        assert!(last >= first);
        *counts.entry(range["shard"].as_str().unwrap().to_owned()).or_default() += last - first + 1;
        next = last + 1;
    }
    assert_eq!(next, VSHARD_COUNT, "ranges end at the last vshard");
    for shard in SEEDED_SHARDS {
        assert_eq!(counts.get(shard).copied(), Some(256), "{shard}: {map}");
    }
    // Spread evenly and contiguously: shard-N owns 256·N ..= 256·N + 255.
    for (i, shard) in SEEDED_SHARDS.iter().enumerate() {
        let i = i as u64;
        assert_eq!(owner_of(&map, 256 * i), *shard);
        assert_eq!(owner_of(&map, 256 * i + 255), *shard);
    }
}

async fn route_explains_hash_placement_of_an_unpinned_tenant(app: TestApp) {
    let tenant = app.create_tenant("acme").await;
    let map = app.shard_map().await;
    let route = app.route("acme", "docs", "some/key ü").await;
    assert_eq!(route["tenant"], "acme");
    assert_eq!(route["collection"], "docs");
    assert_eq!(route["key"], "some/key ü");
    assert_eq!(route["distribution"], "tenant");
    assert_eq!(route["strategy"], "hash");
    assert_eq!(route["shard"], tenant["shard"], "the route names the tenant's home shard");
    assert_eq!(route["shard_state"], "active");
    assert_eq!(route["epoch"], map["epoch"]);
    let vshard = route["vshard"].as_u64().expect("vshard is an integer");
    assert!(vshard < VSHARD_COUNT);
    assert_eq!(owner_of(&map, vshard), route["shard"].as_str().unwrap(), "the vshard belongs to the shard");

    // Every record of a tenant-distributed collection goes to the home shard, and the answer
    // is stable.
    for key in ["a", "b", "zzz", "k-1000"] {
        for collection in ["docs", "other"] {
            let again = app.route("acme", collection, key).await;
            assert_eq!(again["shard"], route["shard"]);
            assert_eq!(again["strategy"], "hash");
        }
    }
    assert_eq!(app.route("acme", "docs", "some/key ü").await, route);
}

async fn route_explains_lookup_placement_of_a_pinned_tenant(app: TestApp) {
    for shard in SEEDED_SHARDS {
        let id = format!("vip-{shard}");
        app.create_tenant_with(&json!({"id": id, "tier": "premium", "shard": shard})).await;
        let route = app.route(&id, "docs", "k").await;
        assert_eq!(route["strategy"], "lookup", "{route}");
        assert_eq!(route["distribution"], "tenant");
        assert_eq!(route["shard"], shard, "{route}");
        assert_eq!(route["shard_state"], "active");
        assert!(route["vshard"].as_u64().unwrap() < VSHARD_COUNT);
    }
}

async fn route_of_an_unknown_tenant_is_404(app: TestApp) {
    let response = app.admin(Method::GET, "/v1/admin/route?tenant=ghost&collection=docs&key=k", None).await;
    expect_problem(response, StatusCode::NOT_FOUND, "tenant_not_found").await;
    app.create_tenant("acme").await;
    for query in ["collection=docs&key=k", "tenant=acme&collection=_bad&key=k", ""] {
        let response = app.admin(Method::GET, &format!("/v1/admin/route?{query}"), None).await;
        expect_any_problem(response, StatusCode::BAD_REQUEST).await;
    }
}

async fn the_epoch_increases_with_every_admin_change(app: TestApp) {
    let mut epoch = app.epoch().await;
    let mut step = async |what: &str| {
        let now = app.epoch().await;
        assert!(now > epoch, "the epoch increases after {what}: {epoch} -> {now}");
        epoch = now;
    };

    app.create_tenant("acme").await;
    step("creating a tenant").await;
    app.create_tenant_with(&json!({"id": "vip", "shard": "shard-2"})).await;
    step("creating a pinned tenant").await;
    app.set_shard_state("shard-1", "read_only").await;
    step("making a shard read-only").await;
    app.set_shard_state("shard-1", "offline").await;
    step("taking a shard offline").await;
    app.set_shard_state("shard-1", "active").await;
    step("bringing a shard back").await;
    let response = app.admin(Method::DELETE, "/v1/admin/tenants/vip", None).await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    step("deleting a pinned tenant").await;
    let response = app.admin(Method::DELETE, "/v1/admin/tenants/acme", None).await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    step("deleting a tenant").await;

    // Data-plane traffic and reads do not change the map.
    app.create_tenant("quiet").await;
    step("creating another tenant").await;
    let before = app.epoch().await;
    app.put_record("quiet", "c", "k", &json!(1)).await;
    app.get_record("quiet", "c", "k").await;
    app.route("quiet", "c", "k").await;
    assert_eq!(app.epoch().await, before);
}
