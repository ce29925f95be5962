//! The console's Instances view in a real headless Chromium: two gateway instances on one
//! catalog show as two serving cards, each with its address and the readiness of every
//! component (the catalog, each shard, the cache, rate limits), the one that ran the balancer
//! marked as its holder; when the peer is killed its card turns `gone` without a reload, and the
//! app's stays serving. The page logs no error. A screenshot of each state is saved under
//! `target/console-screenshots/instances/`.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::json;
use shardgate_shard_router::balance::Mode;
use shardgate_tests::browser::{Browser, screenshot_dir};
use shardgate_tests::{Backend, TestApp, expect_json};

const WAIT: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_instances_view_shows_two_instances_then_one_gone() {
    let app = TestApp::spawn_with(Backend::Sqlite, |config| {
        config.instances.report_interval = Duration::from_millis(300);
        config.balancer.mode = Mode::Propose;
        config.balancer.interval = Duration::from_secs(3600);
    })
    .await;
    let peer =
        app.spawn_peer(|config| config.instances.advertised_address = Some("gateway-2.example:8080".to_owned())).await;
    expect_json(app.admin(Method::POST, "/v1/admin/balancer/runs", None).await, StatusCode::OK).await;
    let own_address = app.base_url.trim_start_matches("http://").to_owned();

    let browser = Browser::start().await;
    let shots = screenshot_dir().join("instances");
    let page = app.url("/console");
    browser.goto(&page).await;
    browser.wait_for("#token", WAIT).await;
    browser.execute("document.getElementById('token').value = arguments[0];", json!([app.admin_token()])).await;
    browser.click_on("#sign-in-button").await;
    browser.wait_for("#nav:not([hidden]) a[data-view=\"instances\"]", WAIT).await;
    browser.click_on("#nav a[data-view=\"instances\"]").await;

    // Two serving instances, each with its address and components.
    let cards = "return Array.from(document.querySelectorAll('article[data-instance]')).map(c => \
                 [c.dataset.state, c.querySelector('dd.mono').innerText, \
                 Array.from(c.querySelectorAll('tr[data-component]')).map(r => r.dataset.component + '=' + r.dataset.status), \
                 c.innerText.includes('balancer')]);";
    let serving =
        format!("const c = (() => {{ {cards} }})(); return c.length === 2 && c.every(x => x[0] === 'serving') && c;");
    let shown = browser.wait_until("two serving instances", &serving, WAIT).await;
    let shown = shown.as_array().unwrap();
    let address_of = |card: &serde_json::Value| card[1].as_str().unwrap().to_owned();
    let mut addresses: Vec<String> = shown.iter().map(address_of).collect();
    addresses.sort();
    let mut expected = vec![own_address.clone(), "gateway-2.example:8080".to_owned()];
    expected.sort();
    assert_eq!(addresses, expected, "{shown:?}");
    let map = app.shard_map().await;
    for card in shown {
        let components: Vec<&str> = card[2].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
        assert!(components.contains(&"catalog=up"), "{card}");
        for shard in map["shards"].as_array().unwrap() {
            let shard = format!("{}=up", shard["id"].as_str().unwrap());
            assert!(components.contains(&shard.as_str()), "{shard} on {card}");
        }
        assert!(components.iter().any(|c| c.starts_with("cache=")), "{card}");
        assert_eq!(card[3], address_of(card) == own_address, "the balancer's holder is marked: {card}");
    }
    let holder = browser.text_of("#balancer-holder").await;
    assert!(holder.starts_with("instance-"), "{holder}");
    browser.formatted_screenshot(&shots.join("two-serving.png")).await;

    // The peer killed: its card turns gone on the next refreshes; the app's stays serving.
    drop(peer);
    let gone = format!(
        "const c = Array.from(document.querySelectorAll('article[data-instance]')); \
         const by = (a) => c.find(x => x.querySelector('dd.mono').innerText === a); \
         const peer = by('gateway-2.example:8080'); const own = by('{own_address}'); \
         return peer && own && peer.dataset.state === 'gone' && own.dataset.state === 'serving';"
    );
    browser.wait_until("the killed peer gone", &gone, WAIT).await;
    let counts = browser.text_of("#instances-counts").await;
    assert!(counts.contains("1 serving") && counts.contains("1 gone"), "{counts}");
    browser.formatted_screenshot(&shots.join("one-gone.png")).await;

    let errors = browser.errors().await;
    assert!(errors.is_empty(), "the page logs no error: {errors:?}");
}
