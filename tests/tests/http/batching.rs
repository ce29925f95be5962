//! Smart batching under a sick shard, through the API: the writes of a batch cut off by a frozen
//! shard (SIGSTOP of every process of its cluster) are each told 504 `write_outcome_unknown` or
//! 503, never a 2xx; and writes in flight when the shard's cluster is killed (`kill -9`) lose
//! nothing that was acknowledged, and leave the tenant's usage equal to its rows (the usage is
//! changed in the transaction of the batch, so a batch the kill cut off changed neither). Every
//! wait is bounded.

use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use shardgate_tests::pg_cluster::PgCluster;
use shardgate_tests::{TestApp, eventually, expect_json};

/// An app whose `shard-3` lives on `cluster` (at the database URL returned), with tenant `sick` pinned there; `customize` may
/// change its configuration.
async fn app_with_a_shard_on(cluster: &PgCluster, customize: impl FnOnce(&mut shardgate_api::Config)) -> TestApp {
    let url = cluster.create_database("batch_shard").await;
    let app = TestApp::spawn_with_shard_at("shard-3", url, customize).await;
    app.create_tenant_with(&json!({"id": "sick", "shard": "shard-3"})).await;
    app
}

/// The value of the `/metrics` sample whose line holds every one of `parts` (0 if none).
async fn sample(app: &TestApp, parts: &[&str]) -> f64 {
    let text = app.client.get(format!("{}/metrics", app.metrics_base())).send().await.unwrap().text().await.unwrap();
    text.lines()
        .filter(|line| !line.starts_with('#') && parts.iter().all(|p| line.contains(p)))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Batches of more than `bound` writes `shard-3` has been sent (`bound` is a bucket's bound).
async fn write_batches_above(app: &TestApp, bound: &str) -> f64 {
    let of_shard = ["shard=\"shard-3\"", "kind=\"write\""];
    let count = sample(app, &[&["shard_batch_size_count"][..], &of_shard].concat()).await;
    let within = sample(app, &[&["shard_batch_size_bucket", &format!("le=\"{bound}\"")][..], &of_shard].concat()).await;
    count - within
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_writes_of_a_batch_cut_off_by_a_frozen_shard_are_unknown_or_refused_never_acknowledged() {
    const WRITES: usize = 12;
    let cluster = PgCluster::start().await;
    // The statement deadline ends what waits on the frozen shard (no breaker to refuse the
    // second batch before it is sent), well within the request deadline.
    let app = Arc::new(
        app_with_a_shard_on(&cluster, |config| {
            config.storage.pool.breaker.enabled = false;
            config.storage.pool.statement_timeout = Duration::from_secs(2);
            config.limits.request_timeout = Duration::from_secs(30);
        })
        .await,
    );
    expect_json(app.put_record("sick", "docs", "lead", &json!({"n": 0})).await, StatusCode::CREATED).await;
    cluster.freeze();
    // The first write leaves alone and hangs; the others queue behind it and leave together
    // when its deadline ends it, into the frozen shard.
    let lead = tokio::spawn({
        let app = app.clone();
        async move { app.put_record("sick", "docs", "lead", &json!({"n": 1})).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let writes: Vec<_> = (0..WRITES)
        .map(|i| {
            let app = app.clone();
            tokio::spawn(async move { app.put_record("sick", "docs", &format!("k{i}"), &json!({"n": i})).await })
        })
        .collect();
    let mut answers = vec![tokio::time::timeout(Duration::from_secs(30), lead).await.expect("the write ends").unwrap()];
    for write in writes {
        answers.push(tokio::time::timeout(Duration::from_secs(30), write).await.expect("the write ends").unwrap());
    }
    cluster.thaw();
    for (i, response) in answers.into_iter().enumerate() {
        let status = response.status();
        let body: serde_json::Value = response.json().await.unwrap();
        assert!(
            (status == StatusCode::GATEWAY_TIMEOUT && body["code"] == "write_outcome_unknown")
                || status == StatusCode::SERVICE_UNAVAILABLE,
            "write {i}: {status} {body}"
        );
    }
    assert!(write_batches_above(&app, "8.0").await >= 1.0, "the queued writes left as one batch");
    // The shard serves again, and writes go on.
    eventually(Duration::from_secs(20), async || {
        let response = app.put_record("sick", "docs", "after", &json!({"n": 1})).await;
        response.status().is_success().then_some(())
    })
    .await
    .expect("the shard serves again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_in_flight_when_the_shard_is_killed_lose_nothing_acknowledged() {
    const WRITERS: usize = 8;
    let cluster = PgCluster::start().await;
    let app = Arc::new(
        app_with_a_shard_on(&cluster, |config| {
            config.storage.pool.statement_timeout = Duration::from_secs(2);
        })
        .await,
    );
    // Each writer writes its own key over and over, one write after the other, and remembers
    // the last value acknowledged, until a write fails.
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let app = app.clone();
            tokio::spawn(async move {
                let mut acknowledged = None;
                for n in 0..100_000u64 {
                    let response = app.put_record("sick", "docs", &format!("w{w}"), &json!({"n": n})).await;
                    if !response.status().is_success() {
                        break;
                    }
                    acknowledged = Some(n);
                }
                acknowledged
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    cluster.kill();
    let mut last = Vec::new();
    for writer in writers {
        last.push(tokio::time::timeout(Duration::from_secs(30), writer).await.expect("the writer stops").unwrap());
    }
    assert!(write_batches_above(&app, "1.0").await >= 1.0, "writes met in batches before the kill");
    cluster.restart();
    for (w, acknowledged) in last.into_iter().enumerate() {
        let acknowledged = acknowledged.expect("each writer had writes acknowledged before the kill");
        let stored = eventually(Duration::from_secs(30), async || {
            let response = app.get_record("sick", "docs", &format!("w{w}")).await;
            if response.status() != StatusCode::OK {
                return None;
            }
            response.json::<serde_json::Value>().await.ok()?["value"]["n"].as_u64()
        })
        .await
        .expect("the shard serves again");
        // The last acknowledged write is there, or the one after it, whose outcome was unknown.
        assert!(
            stored == acknowledged || stored == acknowledged + 1,
            "writer {w}: acknowledged {acknowledged}, stored {stored}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_equals_the_rows_after_the_shard_is_killed_mid_batch() {
    const WRITERS: usize = 8;
    let cluster = PgCluster::start().await;
    let url = cluster.create_database("usage_shard").await;
    let app = Arc::new(
        TestApp::spawn_with_shard_at("shard-3", url.clone(), |config| {
            config.storage.pool.statement_timeout = Duration::from_secs(2);
        })
        .await,
    );
    app.create_tenant_with(&json!({"id": "sick", "shard": "shard-3"})).await;
    // Each writer creates records, grows some and deletes every fourth, until a request fails:
    // the shard's batches insert, update and delete at once when the cluster is killed.
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let app = app.clone();
            tokio::spawn(async move {
                for n in 0..100_000u64 {
                    let key = format!("w{w}-{}", n / 2);
                    let response = if n % 8 == 7 {
                        app.delete_record("sick", "docs", &format!("w{w}-{}", n / 2 - 1)).await
                    } else {
                        app.put_record("sick", "docs", &key, &json!({"n": n, "pad": "x".repeat((n % 50) as usize)}))
                            .await
                    };
                    if !response.status().is_success() && response.status() != StatusCode::NOT_FOUND {
                        break;
                    }
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    cluster.kill();
    for writer in writers {
        tokio::time::timeout(Duration::from_secs(30), writer).await.expect("the writer stops").unwrap();
    }
    assert!(write_batches_above(&app, "1.0").await >= 1.0, "writes met in batches before the kill");
    cluster.restart();

    // What the rows add up to, read from the shard database itself, against what its usage says.
    let rows = async || {
        let pool = shardgate_tests::backend::open_shard(&url).await;
        let counted: (i64, i64) = sqlx::query_as(
            "SELECT CAST(COUNT(*) AS BIGINT), CAST(COALESCE(SUM(octet_length(value)), 0) AS BIGINT) \
             FROM records WHERE tenant = 'sick' AND deleted = 0",
        )
        .fetch_one(&pool)
        .await
        .unwrap();
        pool.close().await;
        (u64::try_from(counted.0).unwrap(), u64::try_from(counted.1).unwrap())
    };
    let agreed = eventually(Duration::from_secs(30), async || {
        let usage = app.admin(reqwest::Method::GET, "/v1/admin/tenants/sick/usage", None).await;
        if usage.status() != StatusCode::OK {
            return None;
        }
        let usage = usage.json::<serde_json::Value>().await.ok()?;
        if usage["complete"] != true {
            return None;
        }
        let kept = (usage["usage"]["records"].as_u64()?, usage["usage"]["record_bytes"].as_u64()?);
        Some((kept, rows().await))
    })
    .await
    .expect("the shard answers again");
    let (kept, counted) = agreed;
    assert!(counted.0 > 0, "records were written before the kill");
    assert_eq!(kept, counted, "the usage the shard keeps is what its rows add up to after the kill");
}
