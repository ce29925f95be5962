//! Many shard databases on one PostgreSQL server share its connections: each shard pool gets an
//! equal share of `storage.pool.max_connections_per_server`, so the gateway never asks the server
//! for more than it has.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::json;
use shardgate_tests::{Backend, PgCluster, TestApp};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_shards_on_a_server_with_a_hundred_connections_all_serve_under_load() {
    let cluster = Arc::new(PgCluster::start_with_max_connections(100).await);
    let seeds = cluster.create_shards("budget_", 64).await;
    let app = TestApp::spawn_with(Backend::Postgres, |config| {
        // Only the 64 shards on the test's cluster (the catalog stays on the machine's server).
        config.storage.shards = seeds;
        config.storage.pool.max_connections = 4; // 256 in all, were it not for the budget
        config.storage.pool.max_connections_per_server = 64;
        config.rate_limits.enabled = false;
    })
    .await;
    let tenants: Vec<String> = (0..192).map(|i| format!("t{i}")).collect();
    for tenant in &tenants {
        app.create_tenant(tenant).await;
    }
    let homes: std::collections::HashSet<String> = futures::future::join_all(
        tenants.iter().map(|t| async { app.route(t, "docs", "d").await["shard"].as_str().unwrap().to_owned() }),
    )
    .await
    .into_iter()
    .collect();
    assert!(homes.len() > 48, "the tenants spread over most of the 64 shards: {}", homes.len());

    // Watch the server's connection count while 160 requests at a time write and read.
    let most = Arc::new(AtomicI64::new(0));
    let watching = {
        let (most, cluster) = (most.clone(), cluster.clone());
        tokio::spawn(async move {
            loop {
                most.fetch_max(cluster.connections().await, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };
    let requests = tenants.iter().cycle().take(960).enumerate().map(|(i, tenant)| {
        let app = &app;
        async move {
            let put = app.put_record(tenant, "docs", &format!("k{i}"), &json!({"i": i})).await.status();
            let get = app.get_record(tenant, "docs", &format!("k{i}")).await.status();
            (tenant.clone(), put, get)
        }
    });
    let outcomes: Vec<_> = futures::stream::iter(requests).buffer_unordered(160).collect().await;
    watching.abort();
    let failed: Vec<_> =
        outcomes.iter().filter(|(_, put, get)| *put != StatusCode::CREATED || *get != StatusCode::OK).collect();
    assert!(failed.is_empty(), "{} of {} failed, e.g. {:?}", failed.len(), outcomes.len(), failed.first());
    let most = most.load(Ordering::Relaxed);
    assert!(most <= 64, "the gateway held at most its budget of 64 connections on the server, not {most}");
    assert!(cluster.connections().await <= 64);
}
