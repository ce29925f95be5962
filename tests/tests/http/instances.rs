//! The instance registry (`GET /v1/admin/instances`): three gateway instances on one catalog
//! (the app and two peers) each report their version, address and the readiness of every
//! component; the one that ran the balancer holds its lease; one peer stopped cleanly is gone at
//! once, one killed (its task aborted, nothing said) is gone once it misses its reports, while
//! the app stays serving. A tenant's token gets 403, a bad filter 400. On the load windows'
//! retention, a killed instance's row is deleted from the catalog.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::Value;
use shardgate_gatekeeper::Scope;
use shardgate_shard_router::balance::Mode;
use shardgate_tests::{Backend, TestApp, eventually, expect_json, open_shard};

/// Instances report this often here (10 s by default).
const INTERVAL: Duration = Duration::from_millis(300);

const WAIT: Duration = Duration::from_secs(30);

shardgate_tests::on_both_engines!(every_instance_reports_its_components_and_a_killed_one_is_gone);

async fn every_instance_reports_its_components_and_a_killed_one_is_gone(backend: Backend) {
    let app = TestApp::spawn_with(backend, |config| {
        config.instances.report_interval = INTERVAL;
        config.balancer.mode = Mode::Propose;
        config.balancer.interval = Duration::from_secs(3600);
    })
    .await;
    let stopped =
        app.spawn_peer(|config| config.instances.advertised_address = Some("stopped.example:8080".to_owned())).await;
    let killed =
        app.spawn_peer(|config| config.instances.advertised_address = Some("killed.example:8080".to_owned())).await;
    let own_address = app.base_url.trim_start_matches("http://").to_owned();

    // The app runs the balancer once, taking its lease.
    expect_json(app.admin(Method::POST, "/v1/admin/balancer/runs", None).await, StatusCode::OK).await;

    let fleet = eventually(WAIT, async || {
        let fleet = instances(&app, "").await;
        let serving = fleet["instances"].as_array().unwrap().iter().filter(|i| i["state"] == "serving").count();
        (serving == 3).then_some(fleet)
    })
    .await;
    let Some(fleet) = fleet else { panic!("three instances serving; the registry: {}", instances(&app, "").await) };
    let of = |address: &str| by_address(&fleet, address).unwrap_or_else(|| panic!("an instance at {address}: {fleet}"));
    let own = of(&own_address);
    of("stopped.example:8080");
    of("killed.example:8080");

    // What each reports: version, times, readiness of every component.
    let map = app.shard_map().await;
    let shards: Vec<&str> = map["shards"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    for instance in fleet["instances"].as_array().unwrap() {
        assert_eq!(instance["version"], env!("CARGO_PKG_VERSION"), "{instance}");
        assert_eq!(instance["report_interval_ms"], 300, "{instance}");
        assert_eq!(instance["ready"], true, "{instance}");
        assert!(moment(&instance["started_at"]) <= moment(&instance["last_seen_at"]), "{instance}");
        let components = &instance["components"];
        assert_eq!(components["catalog"]["status"], "up", "{instance}");
        assert_eq!(components["catalog"]["breaker"], "closed", "{instance}");
        for shard in &shards {
            assert_eq!(components[*shard]["status"], "up", "shard {shard} on {instance}");
        }
        for other in ["cache", "rate_limits"] {
            assert!(components[other]["status"].is_string(), "{other} on {instance}");
        }
    }

    // The lease: the app's, and no other instance's.
    let own_id = own["id"].as_str().unwrap();
    assert_eq!(fleet["balancer_lease"]["instance"], own_id, "{fleet}");
    for instance in fleet["instances"].as_array().unwrap() {
        assert_eq!(instance["balancer_lease"], instance["id"] == own_id, "{instance}");
    }

    // A clean stop: gone at once, saying when it stopped.
    stopped.stop().await;
    let fleet = instances(&app, "").await;
    let gone = by_address(&fleet, "stopped.example:8080").expect("the stopped instance is still listed");
    assert_eq!(gone["state"], "gone", "{gone}");
    assert!(gone["stopped_at"].is_string(), "{gone}");

    // A kill: gone once two of its report intervals pass without a report; the app serves on.
    drop(killed);
    let gone = eventually(WAIT, async || {
        let fleet = instances(&app, "").await;
        (by_address(&fleet, "killed.example:8080")?["state"] == "gone").then_some(())
    })
    .await;
    assert!(gone.is_some(), "the killed instance shows gone; the registry: {}", instances(&app, "").await);
    let fleet = instances(&app, "").await;
    let killed = by_address(&fleet, "killed.example:8080").unwrap();
    assert!(killed.get("stopped_at").is_none(), "a killed instance says nothing: {killed}");
    assert_eq!(by_address(&fleet, &own_address).unwrap()["state"], "serving", "{fleet}");

    // Filters.
    let serving = instances(&app, "?state=serving").await;
    let ids: Vec<&Value> = serving["instances"].as_array().unwrap().iter().map(|i| &i["id"]).collect();
    assert_eq!(ids, [&Value::from(own_id)], "{serving}");
    assert_eq!(instances(&app, "?state=gone").await["instances"].as_array().unwrap().len(), 2);
    let bad = app.admin(Method::GET, "/v1/admin/instances?state=dead", None).await;
    assert_eq!(expect_json(bad, StatusCode::BAD_REQUEST).await["code"], "invalid_query");

    // Admin only.
    let tenant = app.token("acme", &[Scope::Read, Scope::Write, Scope::Manage]);
    let refused = app.send(Method::GET, "/v1/admin/instances", Some(&tenant), None, &[]).await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    let anonymous = app.send(Method::GET, "/v1/admin/instances", None, None, &[]).await;
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
}

/// Storage stays bounded: the row of an instance not seen for `storage.load.retention` is
/// deleted from the catalog, while the instances that report keep theirs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_not_seen_for_the_retention_is_deleted() {
    let app = TestApp::spawn_with(Backend::Sqlite, |config| {
        config.instances.report_interval = INTERVAL;
        let load = &mut config.storage.load;
        load.window = Duration::from_secs(1);
        load.rollup = Duration::from_secs(1);
        load.full_resolution = Duration::from_secs(1);
        load.retention = Duration::from_secs(2);
    })
    .await;
    let killed =
        app.spawn_peer(|config| config.instances.advertised_address = Some("killed.example:8080".to_owned())).await;
    let id = eventually(WAIT, async || {
        let fleet = instances(&app, "").await;
        Some(by_address(&fleet, "killed.example:8080")?["id"].as_str()?.to_owned())
    })
    .await
    .expect("the peer reports");
    drop(killed);
    let catalog = open_shard(&app.catalog_url()).await;
    let rows = |id: String| {
        let catalog = catalog.clone();
        async move {
            sqlx::query_scalar::<_, i64>("SELECT count(*) FROM instances WHERE id = $1")
                .bind(id)
                .fetch_one(&catalog)
                .await
                .unwrap()
        }
    };
    let deleted = eventually(WAIT, async || (rows(id.clone()).await == 0).then_some(())).await;
    assert!(deleted.is_some(), "the killed instance's row is deleted; the registry: {}", instances(&app, "").await);
    assert_eq!(instances(&app, "").await["instances"].as_array().unwrap().len(), 1, "the app's own row stays");
}

async fn instances(app: &TestApp, query: &str) -> Value {
    expect_json(app.admin(Method::GET, &format!("/v1/admin/instances{query}"), None).await, StatusCode::OK).await
}

/// An RFC 3339 time in UTC as something that compares in time order (its fraction of a second
/// is written with as few digits as it needs, so the texts do not).
fn moment(time: &Value) -> (String, f64) {
    let time = time.as_str().unwrap_or_else(|| panic!("a time: {time}"));
    let (seconds, fraction) = time.trim_end_matches('Z').split_at(19);
    (seconds.to_owned(), format!("0{fraction}").parse().unwrap_or_else(|_| panic!("a time: {time}")))
}

fn by_address<'a>(fleet: &'a Value, address: &str) -> Option<&'a Value> {
    fleet["instances"].as_array()?.iter().find(|i| i["address"] == address)
}
