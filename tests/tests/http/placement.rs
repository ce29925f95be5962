//! Where records really land: the route the admin API explains is the shard database that holds
//! the row, and the row remembers the vshard it was placed by.

use std::collections::BTreeMap;

use reqwest::StatusCode;
use serde_json::json;
use shardgate_tests::{SEEDED_SHARDS, TestApp, expect_json, open_shard};

shardgate_tests::conformance!(every_record_lives_exactly_where_its_route_says);

async fn every_record_lives_exactly_where_its_route_says(app: TestApp) {
    // 36 hashed tenants and 4 pinned ones (one per shard).
    let mut tenants: Vec<(String, Option<&str>)> = (0..36).map(|i| (format!("tenant-{i:02}"), None)).collect();
    for shard in SEEDED_SHARDS {
        tenants.push((format!("pinned-{shard}"), Some(shard)));
    }
    let mut homes = BTreeMap::new();
    for (id, pin) in &tenants {
        let body = match pin {
            Some(shard) => json!({"id": id, "shard": shard}),
            None => json!({"id": id}),
        };
        let tenant = app.create_tenant_with(&body).await;
        homes.insert(id.clone(), tenant["shard"].as_str().unwrap().to_owned());
    }
    let used: std::collections::BTreeSet<&String> = homes.values().collect();
    assert!(used.len() >= 3, "40 tenants hash onto several shards: {homes:?}");

    // Two records per tenant in two collections; routes explained by the admin API.
    let mut expected = Vec::new();
    for (id, pin) in &tenants {
        for (collection, key) in [("orders", "o-1"), ("profiles", "me/ü")] {
            expect_json(app.put_record(id, collection, key, &json!({"t": id})).await, StatusCode::CREATED).await;
            let route = app.route(id, collection, key).await;
            let shard = route["shard"].as_str().unwrap().to_owned();
            let vshard = route["vshard"].as_i64().unwrap();
            assert_eq!(shard, homes[id], "a tenant-distributed record lives on the tenant's home shard");
            match pin {
                Some(pinned) => {
                    assert_eq!(route["strategy"], "lookup");
                    assert_eq!(shard, *pinned);
                }
                None => assert_eq!(route["strategy"], "hash"),
            }
            expected.push((id.clone(), collection, key, shard, vshard));
        }
    }

    let mut pools = Vec::new();
    for (id, url) in app.shard_urls() {
        pools.push((id, open_shard(&url).await));
    }
    for (tenant, collection, key, shard, vshard) in &expected {
        let mut found = Vec::new();
        for (id, pool) in &pools {
            let rows: Vec<(i64, i64, i64)> = sqlx::query_as(
                "SELECT vshard, version, deleted FROM records WHERE tenant = $1 AND collection = $2 AND key = $3",
            )
            .bind(tenant.as_str())
            .bind(*collection)
            .bind(*key)
            .fetch_all(pool)
            .await
            .unwrap();
            for row in rows {
                found.push((id.clone(), row));
            }
        }
        assert_eq!(found.len(), 1, "{tenant}/{collection}/{key} is stored exactly once: {found:?}");
        let (on, (stored_vshard, version, deleted)) = &found[0];
        assert_eq!(on, shard, "{tenant}/{collection}/{key} is on the shard its route names");
        assert_eq!(stored_vshard, vshard, "{tenant}/{collection}/{key} keeps the vshard of its route");
        assert_eq!((*version, *deleted), (1, 0));
    }

    // Every row on every shard belongs to a record we wrote (no strays).
    let mut total = 0;
    for (_, pool) in &pools {
        let (count,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM records").fetch_one(pool).await.unwrap();
        total += count;
    }
    assert_eq!(total as usize, expected.len());
    for (_, pool) in pools {
        pool.close().await;
    }
}
