//! `GET /v1/admin/jobs`: every job, newest first, filtered by state and kind, in pages; a
//! filter that names no state or kind is refused with what it may be. A move's progress says how
//! many rows and bytes its copy takes; `/metrics` counts jobs by kind and state, and the bytes
//! moves copied.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shardgate_tests::{TestApp, eventually, expect_json, expect_problem, metric};

use crate::moves::{ended, spawn};

shardgate_tests::on_both_engines!(jobs_are_listed_newest_first_by_state_and_kind_in_pages);

/// The size of the blob the first tenant moves with: more than one chunk (256 KiB).
const BLOB_BYTES: u64 = 300_000;

async fn list(app: &TestApp, query: &str) -> reqwest::Response {
    app.admin(Method::GET, &format!("/v1/admin/jobs{query}"), None).await
}

fn ids(page: &Value) -> Vec<String> {
    page["items"].as_array().unwrap().iter().map(|j| j["id"].as_str().unwrap().to_owned()).collect()
}

async fn jobs_are_listed_newest_first_by_state_and_kind_in_pages(backend: shardgate_tests::Backend) {
    let app = spawn(backend, Duration::ZERO).await;
    let empty = expect_json(list(&app, "").await, StatusCode::OK).await;
    assert_eq!(empty["items"], json!([]));
    let shards: Vec<String> = app.shard_urls().into_iter().map(|(id, _)| id).collect();
    let mut started = Vec::new();
    for tenant in ["first", "second", "third"] {
        app.create_tenant(tenant).await;
        if tenant == "first" {
            app.put_many(tenant, "c", &["a".to_owned(), "b".to_owned(), "c".to_owned()]).await;
            let blob = app
                .client
                .put(app.url("/v1/tenants/first/blobs/photo.bin"))
                .bearer_auth(app.rw_token(tenant))
                .body(vec![7u8; BLOB_BYTES as usize])
                .send()
                .await
                .unwrap();
            assert!(blob.status().is_success(), "{}", blob.status());
        }
        let home = app.route(tenant, "c", "k").await["shard"].as_str().unwrap().to_owned();
        let to = shards.iter().find(|s| **s != home).unwrap();
        let path = format!("/v1/admin/tenants/{tenant}/move");
        let job =
            expect_json(app.admin(Method::POST, &path, Some(&json!({"to": to}))).await, StatusCode::ACCEPTED).await;
        started.push(job["id"].as_str().unwrap().to_owned());
        // Jobs created in the same millisecond are ordered by id; these come apart.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    for id in &started[..2] {
        assert_eq!(ended(&app, id, Duration::from_secs(60)).await["state"], "done");
    }
    // A move's progress says how many rows and bytes its copy takes, counted as it began: the
    // three records, and the blob (its row, its upload and its chunks) with the blob's bytes and
    // a little more for the rows around them. What the copy and its catch-up passes copied
    // reaches the totals (the passes copy again what changed shortly before the copy began).
    let first = ended(&app, &started[0], Duration::from_secs(60)).await;
    let count =
        |job: &Value, field: &str| job["progress"][field].as_u64().unwrap_or_else(|| panic!("{field}: {job:#}"));
    assert!(count(&first, "rows_to_copy") >= 3 + 2, "{first:#}");
    let bytes_to_copy = count(&first, "bytes_to_copy");
    assert!((BLOB_BYTES..BLOB_BYTES + 4096).contains(&bytes_to_copy), "{first:#}");
    assert!(count(&first, "rows_copied") >= count(&first, "rows_to_copy"), "{first:#}");
    assert!(count(&first, "bytes_copied") >= bytes_to_copy, "{first:#}");
    let second = ended(&app, &started[1], Duration::from_secs(60)).await;
    assert_eq!((count(&second, "rows_to_copy"), count(&second, "bytes_to_copy")), (0, 0), "{second:#}");
    assert_eq!(count(&second, "rows_copied"), 0, "nothing to copy, nothing copied: {second:#}");

    // `/metrics` counts the jobs by kind and state (the catalog's, read every few seconds; every
    // kind and state has its series) and the bytes the move jobs this instance ran copied.
    let done_moves = r#"shardgate_jobs{kind="tenant.move",state="done"}"#;
    let listed = eventually(Duration::from_secs(30), async || {
        let text =
            app.client.get(format!("{}/metrics", app.metrics_base())).send().await.unwrap().text().await.unwrap();
        let done = text.lines().find_map(|line| line.strip_prefix(done_moves)?.trim().parse::<f64>().ok());
        done.is_some_and(|done| done >= 2.0).then_some(text)
    })
    .await
    .expect("the two moves done are counted in /metrics");
    assert!(listed.contains(r#"shardgate_jobs{kind="index.backfill",state="failed"} 0"#), "{listed}");
    let copied =
        metric(&app.client, app.metrics_base(), r#"shardgate_job_bytes_copied_total{kind="tenant.move"}"#).await;
    assert!(copied >= count(&first, "bytes_copied") as f64, "{copied} bytes: {first:#}");
    let none = metric(&app.client, app.metrics_base(), r#"shardgate_job_bytes_copied_total{kind="range.move"}"#).await;
    assert_eq!(none, 0.0);
    let newest_first: Vec<String> = started.iter().rev().cloned().collect();
    let all = expect_json(list(&app, "").await, StatusCode::OK).await;
    assert_eq!(ids(&all), newest_first, "{all:#}");
    assert_eq!(all["items"][0]["kind"], "tenant.move");
    assert!(all["next_cursor"].is_null());

    // Pages of one, following the cursor.
    let mut paged = Vec::new();
    let mut query = "?limit=1".to_owned();
    loop {
        let page = expect_json(list(&app, &query).await, StatusCode::OK).await;
        paged.extend(ids(&page));
        match page["next_cursor"].as_str() {
            Some(cursor) => query = format!("?limit=1&cursor={cursor}"),
            None => break,
        }
    }
    assert_eq!(paged, newest_first);

    let done = expect_json(list(&app, "?state=done&kind=tenant.move").await, StatusCode::OK).await;
    assert!(ids(&done).iter().all(|id| started.contains(id)), "{done:#}");
    assert!(ids(&done).contains(&started[0]) && ids(&done).contains(&started[1]));
    let none = expect_json(list(&app, "?kind=index.backfill").await, StatusCode::OK).await;
    assert_eq!(none["items"], json!([]));
    let cancelled = expect_json(list(&app, "?state=cancelled").await, StatusCode::OK).await;
    assert!(ids(&cancelled).is_empty(), "{cancelled:#}");

    let refused = expect_problem(list(&app, "?state=finished").await, StatusCode::BAD_REQUEST, "invalid_query").await;
    assert!(refused["detail"].as_str().unwrap().contains("running, done, failed, cancelled"), "{refused}");
    expect_problem(list(&app, "?kind=tenant.moves").await, StatusCode::BAD_REQUEST, "invalid_query").await;
    expect_problem(list(&app, "?cursor=bm9wZQ").await, StatusCode::BAD_REQUEST, "invalid_cursor").await;
    expect_problem(list(&app, "?limit=0").await, StatusCode::BAD_REQUEST, "invalid_query").await;
}
