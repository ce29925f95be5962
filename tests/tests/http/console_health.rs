//! The console's Request health view in a real headless Chromium: after traffic on two routes
//! (records written, two reads refused while the shard is offline, a listing read), the view
//! shows a card for each with its counts and sparklines (rate, p50/p99, error rate, the errors
//! drawn); the span selector asks for another span (the range shown changes from
//! 15 minutes to an hour) and the series selector switches to shards. The page logs no error.
//! A screenshot is saved under `target/console-screenshots/health/`.

use std::time::Duration;

use serde_json::json;
use shardgate_tests::browser::{Browser, screenshot_dir};
use shardgate_tests::{Backend, TestApp, expect_json};

const WAIT: Duration = Duration::from_secs(30);
const RECORD_ROUTE: &str = "/v1/tenants/{tenant}/collections/{collection}/records/{key}";
const LISTING_ROUTE: &str = "/v1/tenants/{tenant}/collections/{collection}/records";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_request_health_view_shows_the_routes_with_traffic_and_follows_the_span() {
    let app = TestApp::spawn_with(Backend::Sqlite, |config| {
        config.storage.load.window = Duration::from_secs(1);
    })
    .await;
    let home = app.create_tenant("acme").await["shard"].as_str().unwrap().to_owned();
    for i in 0..5 {
        let response = app.put_record("acme", "docs", &format!("d{i}"), &json!(i)).await;
        expect_json(response, reqwest::StatusCode::CREATED).await;
    }
    expect_json(app.list_records("acme", "docs", "").await, reqwest::StatusCode::OK).await;
    // Two errors on the record route: reads refused while the tenant's shard is offline.
    app.set_shard_state(&home, "offline").await;
    for _ in 0..2 {
        let refused = app.get_record("acme", "docs", "d1").await;
        assert_eq!(refused.status(), reqwest::StatusCode::SERVICE_UNAVAILABLE);
    }
    app.set_shard_state(&home, "active").await;

    let browser = Browser::start().await;
    browser.goto(&app.url("/console")).await;
    browser.wait_for("#token", WAIT).await;
    browser.execute("document.getElementById('token').value = arguments[0];", json!([app.admin_token()])).await;
    browser.click_on("#sign-in-button").await;
    browser.wait_for("#nav:not([hidden]) a[data-view=\"health\"]", WAIT).await;
    browser.click_on("#nav a[data-view=\"health\"]").await;

    // A card per route with traffic, each with three sparklines (the view refreshes every 10 s:
    // the windows of the traffic above may close after the first load).
    let cards = "return Array.from(document.querySelectorAll('figure.health-card')).map(c => \
                 [c.dataset.name, Number(c.dataset.requests), c.querySelectorAll('svg.sparkline').length, Number(c.dataset.errors)]);";
    let wanted = format!(
        "const c = (() => {{ {cards} }})(); const f = (n) => c.find(x => x[0] === n); \
         const r = f('{RECORD_ROUTE}'); const l = f('{LISTING_ROUTE}'); \
         return r && l && r[1] === 7 && r[3] === 2 && l[1] === 1 && c;"
    );
    let shown = browser.wait_until("cards of the record and listing routes", &wanted, WAIT).await;
    for card in shown.as_array().unwrap() {
        assert_eq!(card[2], 3, "rate, latency and errors: {card}");
    }
    let range = browser.execute("return document.getElementById('health-range').dataset.spanS;", json!([])).await;
    assert_eq!(range, "900", "15 minutes by default");
    let lines = browser
        .execute(
            &format!(
                "const c = Array.from(document.querySelectorAll('figure.health-card')).find(x => x.dataset.name === '{RECORD_ROUTE}'); \
                 return c.querySelectorAll('svg.sparkline-rate path').length;"
            ),
            json!([]),
        )
        .await;
    assert_eq!(lines, 1, "the rate is drawn");
    let drawn = browser
        .execute(
            &format!(
                "const c = Array.from(document.querySelectorAll('figure.health-card')).find(x => x.dataset.name === '{RECORD_ROUTE}'); \
                 return c.querySelectorAll('svg.sparkline-errors path, svg.sparkline-errors circle').length;"
            ),
            json!([]),
        )
        .await;
    assert!(drawn.as_u64().unwrap() >= 1, "the errors are drawn: {drawn}");
    browser.formatted_screenshot(&screenshot_dir().join("health").join("by-route.png")).await;

    // The span selector: an hour.
    browser
        .execute(
            "const s = document.getElementById('health-span'); s.value = '1h'; s.dispatchEvent(new Event('change'));",
            json!([]),
        )
        .await;
    browser
        .wait_until(
            "the range of an hour",
            "const r = document.getElementById('health-range'); return r.dataset.spanS === '3600' && r.innerText;",
            WAIT,
        )
        .await;
    let still = browser
        .execute(
            &format!("return !!Array.from(document.querySelectorAll('figure.health-card')).find(x => x.dataset.name === '{RECORD_ROUTE}' && x.dataset.requests === '7');"),
            json!([]),
        )
        .await;
    assert_eq!(still, true, "the hour holds the same traffic");

    // By shard: the tenant's shard.
    browser
        .execute(
            "const s = document.getElementById('health-by'); s.value = 'shard'; s.dispatchEvent(new Event('change'));",
            json!([]),
        )
        .await;
    let shard = format!(
        "const c = Array.from(document.querySelectorAll('figure.health-card')); \
         return document.getElementById('health-range').dataset.by === 'shard' && c.length >= 1 && c.some(x => x.dataset.name === '{home}') && c.map(x => x.dataset.name);"
    );
    browser.wait_until("the home shard's card", &shard, WAIT).await;
    browser.formatted_screenshot(&screenshot_dir().join("health").join("by-shard.png")).await;

    let errors = browser.errors().await;
    assert!(errors.is_empty(), "the page logs no error: {errors:?}");
}
