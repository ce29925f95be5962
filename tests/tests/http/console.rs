//! The console (`/console`) in a real headless Chromium, as an operator uses it, on the
//! embedded engine (SQLite) and in production's (PostgreSQL and Redis).
//!
//! A four-shard gateway with one-second load windows: a refused token (a tenant's, a made-up
//! one) keeps the sign-in with its reason; an admin token signs in; the fleet shows every shard;
//! the heat map draws the vshards the test just loaded in their rows, brighter than the idle
//! ones; the balancer switched to `propose` from the page proposes, and the proposal approved
//! from the page starts its move; a tenant moved from the page reaches `done` on the jobs page
//! (and on the map); a job is cancelled from the page; the audit log shows the console's actions;
//! a token that expires while the page is open brings the sign-in back, saying so. The browser
//! asks no host but the gateway, and logs no error and no CSP violation, apart from the refusals
//! the test provokes. Screenshots of each view are saved under `target/console-screenshots/`.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shardgate_gatekeeper::Scope;
use shardgate_tests::browser::{Browser, screenshot_dir};
use shardgate_tests::{Backend, TestApp, eventually, expect_json, tokens};

use crate::balancer::{balancer_on_demand, skew};

const WAIT: Duration = Duration::from_secs(30);

shardgate_tests::on_both_engines!(an_operator_runs_the_fleet_from_the_console);

async fn an_operator_runs_the_fleet_from_the_console(backend: Backend) {
    let app = TestApp::spawn_with(backend, |config| {
        balancer_on_demand(config);
        // Moves wait at each phase boundary, long enough to cancel one from the page.
        config.storage.moves.phase_pause = Duration::from_secs(2);
    })
    .await;
    let browser = Browser::start().await;
    let shots = screenshot_dir().join(format!("{backend:?}").to_lowercase());
    let page = app.url("/console");

    // The page and its files carry the policy.
    let served = app.client.get(&page).send().await.unwrap();
    assert_eq!(served.status(), StatusCode::OK);
    let policy = served.headers()["content-security-policy"].to_str().unwrap().to_owned();
    assert!(policy.starts_with("default-src 'self'"), "{policy}");
    assert!(!policy.contains("unsafe-inline") && !policy.contains("unsafe-eval"), "{policy}");

    // Refused tokens: the sign-in stays, saying why.
    browser.goto(&page).await;
    browser.wait_for("#token", WAIT).await;
    let tenant_token = app.token("someone", &[Scope::Read, Scope::Write, Scope::Manage]);
    let refused = app.client.get(app.url("/v1/admin/shard-map")).bearer_auth(&tenant_token).send().await.unwrap();
    let code = expect_json(refused, StatusCode::FORBIDDEN).await["code"].as_str().unwrap().to_owned();
    for (token, why) in [("not-a-token", "invalid_token".to_owned()), (tenant_token.as_str(), code)] {
        sign_in(&browser, token).await;
        let script = format!(
            "const r = document.getElementById('sign-in-reason'); return !r.hidden && r.innerText.includes('({why})') && r.innerText;"
        );
        let reason = browser.wait_until(&format!("the refusal's reason, {why}"), &script, WAIT).await;
        assert!(reason.as_str().unwrap().starts_with("Refused: "), "{reason}");
        assert!(browser.find("#nav:not([hidden])").await.is_none(), "no view without a good token");
    }
    shot(&browser, &shots.join("sign-in-refused.png")).await;
    let refusals = browser.log("browser").await;
    for entry in &refusals {
        assert!(
            entry.level != "SEVERE"
                || entry.message.contains("status of 401")
                || entry.message.contains("status of 403"),
            "only the provoked refusals are errors: {entry:?}"
        );
    }

    // Signed in: every shard of the four.
    sign_in(&browser, &app.admin_token()).await;
    let shown = browser.wait_until("four shard cards", "const c = document.querySelectorAll('article[data-shard]'); return c.length === 4 && Array.from(c).map(e => e.dataset.shard);", WAIT).await;
    let map = app.shard_map().await;
    let mut ids: Vec<&str> = map["shards"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    let mut cards: Vec<&str> = shown.as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    ids.sort_unstable();
    cards.sort_unstable();
    assert_eq!(cards, ids, "every shard has its card");
    assert_eq!(
        browser.execute("return sessionStorage.length;", json!([])).await,
        1,
        "the token is in the tab's session"
    );
    assert!(
        !browser.execute("return location.href;", json!([])).await.as_str().unwrap().contains("ey"),
        "never in the URL"
    );

    // Load: twelve tenants on one shard, four on each other one.
    let (hot, hot_vshards) = skew(&app).await;
    browser.goto(&format!("{page}#/fleet")).await;
    browser
        .wait_until("the hot shard marked overfull", &format!("const c = document.querySelector('article[data-shard=\"{hot}\"]'); return c && c.dataset.marks.includes('overfull');"), WAIT)
        .await;
    shot(&browser, &shots.join("fleet.png")).await;

    // The heat map, by writes (each tenant got as many): every loaded vshard's row is drawn in
    // its shard's group at the bright end of the scale, an idle one at the dark end, and the
    // hottest rows listed beside it are loaded ones.
    browser.goto(&format!("{page}#/heatmap")).await;
    browser.wait_for("#heat-canvas", WAIT).await;
    browser.execute("const s = document.getElementById('heat-metric'); s.value = 'writes_per_s'; s.dispatchEvent(new Event('change'));", json!([])).await;
    browser
        .wait_until(
            "the map of writes",
            "const l = document.querySelector('.legend'); return l && l.innerText.includes('writes/s');",
            WAIT,
        )
        .await;
    let map =
        expect_json(app.admin(Method::GET, "/v1/admin/load/heatmap?metric=writes_per_s", None).await, StatusCode::OK)
            .await;
    let rows = map["rows"].as_array().unwrap();
    let written: Vec<String> = rows
        .iter()
        .filter(|row| row["values"].as_array().unwrap().iter().any(|v| v.as_f64() > Some(0.0)))
        .map(|row| row["vshard"].to_string())
        .collect();
    // An idle vshard between idle ones (the map may draw neighbours in one pixel row).
    let is_idle = |v: u64| !written.contains(&v.to_string());
    let idle = (1..shardgate_tests::VSHARD_COUNT - 1)
        .find(|&v| is_idle(v - 1) && is_idle(v) && is_idle(v + 1))
        .unwrap()
        .to_string();
    let drawn = |vshard: &str| {
        format!(
            "const c = document.getElementById('heat-canvas'); const i = c.dataset.rows.split(',').indexOf('v{vshard}'); \
             if (i < 0) return null; const y = Number(c.dataset.tops.split(',')[i]); const x0 = Number(c.dataset.gutter); \
             const d = c.getContext('2d').getImageData(x0, y, c.width - x0, 1).data; let best = 0; \
             for (let k = 0; k < d.length; k += 4) best = Math.max(best, d[k] + d[k + 1] + d[k + 2]); \
             return [c.dataset.shards.split(',')[i], best];"
        )
    };
    let dark = browser.execute(&drawn(&idle), json!([])).await;
    assert!(dark[1].as_i64().unwrap() < 150, "an idle row is dark: {dark}");
    for vshard in &hot_vshards {
        let row = browser.execute(&drawn(&vshard.to_string()), json!([])).await;
        assert_eq!(row[0], hot.as_str(), "vshard {vshard} is drawn in {hot}'s group: {row}");
        assert!(row[1].as_i64().unwrap() > 500, "vshard {vshard}'s row is bright: {row} (idle: {dark})");
    }
    let hottest = browser
        .execute("return Array.from(document.querySelectorAll('#heat-hottest tbody tr[data-vshard]')).map(r => r.dataset.vshard);", json!([]))
        .await;
    assert!(!hottest.as_array().unwrap().is_empty(), "the hottest rows are listed");
    for vshard in hottest.as_array().unwrap() {
        assert!(
            written.contains(&vshard.as_str().unwrap().to_owned()),
            "{vshard} of {hottest} was written to: {written:?}"
        );
    }
    shot(&browser, &shots.join("heatmap.png")).await;

    // The balancer: switched to propose, run, and its proposal approved, from the page.
    browser.goto(&format!("{page}#/balancer")).await;
    browser.wait_for("#balancer-mode", WAIT).await;
    // One step: the view redraws itself every few seconds.
    let script = "const s = document.getElementById('balancer-mode'); s.value = 'propose'; document.getElementById('balancer-switch').click();";
    browser.execute(script, json!([])).await;
    confirm(&browser).await;
    browser.wait_until("mode propose", "return document.querySelector('#view .badge') && document.querySelector('#view .badge').innerText === 'propose';", WAIT).await;
    let proposal = browser
        .wait_until(
            "a pending proposal",
            "const p = document.querySelector('#proposals tr[data-proposal]'); if (p) return p.dataset.proposal; \
             if (!window.ran || Date.now() - window.ran > 1500) { window.ran = Date.now(); document.getElementById('balancer-run').click(); } \
             return null;",
            WAIT,
        )
        .await;
    shot(&browser, &shots.join("balancer.png")).await;
    browser.click_now(&format!("button[data-key=\"approve-{}\"]", proposal.as_str().unwrap())).await;
    confirm(&browser).await;
    let approved = browser.wait_until("the approval's job", "const n = document.querySelector('#view .notice'); return n && n.innerText.startsWith('Approved') && n.innerText;", WAIT).await;
    let status = expect_json(app.admin(Method::GET, "/v1/admin/balancer", None).await, StatusCode::OK).await;
    let run = status["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"].as_i64().map(|id| id.to_string()).as_deref() == proposal.as_str())
        .unwrap()
        .clone();
    assert_eq!(run["proposal"], "approved", "{run}");
    let balancer_job = run["job"].as_str().unwrap().rsplit('/').next().unwrap().to_owned();
    assert!(approved.as_str().unwrap().contains(&balancer_job[..8]), "{approved} names job {balancer_job}");

    // The jobs page follows the approved move to its end.
    browser.goto(&format!("{page}#/jobs")).await;
    wait_for_job(&browser, &balancer_job, "done").await;

    // A tenant moved from its page.
    app.create_tenant("acme").await;
    app.put_many("acme", "c", &(0..20).map(|i| format!("k{i}")).collect::<Vec<_>>()).await;
    let home = app.route("acme", "c", "k1").await["shard"].as_str().unwrap().to_owned();
    browser.goto(&format!("{page}#/tenants/acme")).await;
    browser
        .wait_until(
            "acme's home shard",
            &format!("const s = document.getElementById('tenant-shard'); return s && s.innerText === '{home}';"),
            WAIT,
        )
        .await;
    let to = browser
        .execute("return document.getElementById('move-to').value;", json!([]))
        .await
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(to, home);
    let collections = browser
        .wait_until(
            "acme's collections",
            "const r = document.querySelectorAll('#tenant-collections tbody tr'); return r.length && Array.from(r).map(t => t.innerText);",
            WAIT,
        )
        .await;
    assert_eq!(collections, json!(["c\ttenant\t–\t20"]), "acme's one collection, its distribution and records");
    shot(&browser, &shots.join("tenant.png")).await;
    browser.click_on("#move-tenant").await;
    confirm(&browser).await;
    let started = browser
        .wait_until(
            "the move's job",
            "const n = document.querySelector('#view .notice'); return n && n.innerText;",
            WAIT,
        )
        .await;
    let jobs = expect_json(app.admin(Method::GET, "/v1/admin/jobs?kind=tenant.move", None).await, StatusCode::OK).await;
    let move_job = jobs["items"][0]["id"].as_str().unwrap().to_owned();
    assert!(started.as_str().unwrap().contains(&move_job), "{started}");
    browser.click_on("#view .notice a").await;
    wait_for_job(&browser, &move_job, "done").await;
    shot(&browser, &shots.join("jobs.png")).await;
    assert_eq!(app.route("acme", "c", "k1").await["shard"], to.as_str(), "acme lives on the shard chosen");

    // A job cancelled from the jobs page rolls back.
    let started = app.admin(Method::POST, "/v1/admin/tenants/acme/move", Some(&json!({"to": home}))).await;
    let back = expect_json(started, StatusCode::ACCEPTED).await["id"].as_str().unwrap().to_owned();
    browser.click_now(&format!("button[data-key=\"cancel-{back}\"]")).await;
    confirm(&browser).await;
    wait_for_job(&browser, &back, "cancelled").await;
    assert_eq!(app.route("acme", "c", "k1").await["shard"], to.as_str(), "the cancelled move left acme where it was");

    // The audit log shows what the console did, filtered.
    browser.goto(&format!("{page}#/audit")).await;
    browser.wait_for("#audit-action", WAIT).await;
    let filter = browser.find("#audit-action").await.unwrap();
    browser.type_into(&filter, "balancer.\u{E007}").await;
    let actions = browser
        .wait_until(
            "the balancer's audit rows",
            "const r = Array.from(document.querySelectorAll('#audit tbody tr')).map(t => t.dataset.action); return r.length && r.every(a => a.startsWith('balancer.')) && r;",
            WAIT,
        )
        .await;
    for wanted in ["balancer.mode", "balancer.approve"] {
        assert!(actions.as_array().unwrap().iter().any(|a| a == wanted), "{wanted} in {actions}");
    }
    shot(&browser, &shots.join("audit.png")).await;

    // Nothing but the gateway was asked for, and nothing went wrong on the page.
    let origin = app.base_url.clone();
    let asked = browser.requested_urls().await;
    assert!(asked.iter().any(|u| u.contains("/v1/admin/load/heatmap")), "the network log is read: {asked:?}");
    for url in &asked {
        assert!(url.starts_with(&origin) || url.starts_with("data:"), "a request to another host: {url}");
    }
    let errors = browser.errors().await;
    assert!(errors.is_empty(), "errors on the page: {errors:?}");

    // A token that expires while the page is open brings the sign-in back, saying so.
    // It expires after its second and the leeway (`auth.leeway_secs`, 30 s) have passed.
    let short = tokens::mint(None, &[Scope::Admin], Duration::from_secs(1));
    browser.execute("sessionStorage.clear();", json!([])).await;
    browser.goto(&format!("{page}#/fleet")).await;
    sign_in(&browser, &short).await;
    browser.wait_for("article[data-shard]", WAIT).await;
    let reason = browser
        .wait_until(
            "the expiry's reason",
            "const r = document.getElementById('sign-in-reason'); return !r.hidden && r.innerText;",
            Duration::from_secs(60),
        )
        .await;
    assert!(
        reason.as_str().unwrap().starts_with("Signed out: ") && reason.as_str().unwrap().contains("expired"),
        "{reason}"
    );
    assert_eq!(browser.execute("return sessionStorage.length;", json!([])).await, 0, "the expired token is forgotten");
}

/// An address the page cannot decode shows the view's error (not a blank page), and the jobs
/// page names a vshard move's vshards as ranges (`0–63`), not one by one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_address_shows_an_error_and_vshard_moves_show_ranges() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let browser = Browser::start().await;
    let page = app.url("/console");
    browser.goto(&page).await;
    sign_in(&browser, &app.admin_token()).await;
    browser.wait_for("article[data-shard]", WAIT).await;

    // `%E0%A4%A` is no UTF-8: decoding it throws.
    browser.goto(&format!("{page}#/tenants/%E0%A4%A")).await;
    let shown = browser
        .wait_until(
            "the view's error",
            "const p = document.querySelector('#view .problem'); return p && p.innerText;",
            WAIT,
        )
        .await;
    assert!(shown.as_str().unwrap().contains("%E0%A4%A"), "names the address: {shown}");
    let errors = browser.errors().await;
    assert!(errors.is_empty(), "nothing thrown on the page: {errors:?}");

    // A drain moves the last shard's vshards in batches: each job's target is ranges.
    let map = app.shard_map().await;
    let last = map["shards"].as_array().unwrap().last().unwrap()["id"].as_str().unwrap().to_owned();
    let drain = app.admin(Method::POST, &format!("/v1/admin/shards/{last}/drain"), Some(&json!({}))).await;
    expect_json(drain, StatusCode::ACCEPTED).await;
    let job = eventually(WAIT, async || {
        let jobs = app.admin(Method::GET, "/v1/admin/jobs?kind=vshard.move", None).await;
        let jobs = expect_json(jobs, StatusCode::OK).await;
        jobs["items"].as_array().unwrap().first().cloned()
    })
    .await
    .expect("a vshard move starts");
    let (id, target) = (job["id"].as_str().unwrap(), job["target"].as_str().unwrap());
    browser.goto(&format!("{page}#/jobs")).await;
    let script =
        format!("const r = document.querySelector('tr[data-job=\"{id}\"]'); return r && r.children[2].innerText;");
    let shown = browser.wait_until("the move's row", &script, WAIT).await;
    let shown = shown.as_str().unwrap();
    assert!(
        shown.contains('\u{2013}') && !lists_consecutive_numbers(shown),
        "the vshards as ranges: {shown} (the API's: {target})"
    );
    assert!(shown.ends_with(target.rsplit_once(": ").unwrap().1), "the shards as the API names them: {shown}");
}

/// A tenant's page shows each quota beside what it uses of it, with a bar of the part used when it
/// is limited (red once full); the list of all tenants sorts by what they store, largest first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenant_pages_show_quota_bars_and_the_list_sorts_by_usage() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    for tenant in ["acme", "bob", "cat"] {
        app.create_tenant(tenant).await;
    }
    let quotas = json!({"quotas": {"records": 10, "blob_bytes": 1000, "collections": 1, "valet_bytes_per_day": 5000}});
    expect_json(app.admin(Method::PATCH, "/v1/admin/tenants/acme", Some(&quotas)).await, StatusCode::OK).await;
    app.put_many("acme", "c", &(0..5).map(|i| format!("k{i}")).collect::<Vec<_>>()).await;
    let blob = app.client.put(app.url("/v1/tenants/acme/blobs/big.bin")).bearer_auth(app.rw_token("acme"));
    assert_eq!(blob.body(vec![0u8; 600]).send().await.unwrap().status(), StatusCode::CREATED);
    app.put_many("bob", "c", &(0..8).map(|i| format!("k{i}")).collect::<Vec<_>>()).await;

    let browser = Browser::start().await;
    let page = app.url("/console");
    browser.goto(&page).await;
    sign_in(&browser, &app.admin_token()).await;
    browser.wait_for("article[data-shard]", WAIT).await;
    browser.goto(&format!("{page}#/tenants/acme")).await;
    let script = "const rows = document.querySelectorAll('#tenant-quotas tbody tr');                   return rows.length === 7 && Array.from(rows).map(r => {                     const bar = r.querySelector('[role=progressbar]');                     return [r.dataset.quota, r.dataset.used, r.dataset.limit, bar ? bar.getAttribute('aria-valuenow') : null,                             r.children[3].classList.contains('over')]; });";
    let bars = browser.wait_until("acme's quota bars", script, WAIT).await;
    let row = |quota: &str| bars.as_array().unwrap().iter().find(|r| r[0] == quota).cloned().unwrap();
    assert_eq!(row("records"), json!(["records", "5", "10", "50", false]), "{bars}");
    assert_eq!(row("blob_bytes"), json!(["blob_bytes", "600", "1000", "60", false]), "{bars}");
    assert_eq!(row("collections"), json!(["collections", "1", "1", "100", true]), "a full quota is marked: {bars}");
    assert_eq!(row("blobs"), json!(["blobs", "1", "none", null, false]), "an unlimited quota has no bar: {bars}");
    assert_eq!(row("valet_bytes_per_day"), json!(["valet_bytes_per_day", "0", "5000", "0", false]), "{bars}");
    shot(&browser, &screenshot_dir().join("tenant-quotas.png")).await;

    browser.goto(&format!("{page}#/tenants")).await;
    let order = async |sort: &str| -> Value {
        browser
            .execute(
                "const s = document.getElementById('tenant-sort'); s.value = arguments[0];                  s.dispatchEvent(new Event('change'));",
                json!([sort]),
            )
            .await;
        browser
            .wait_until(
                &format!("the tenants sorted by {sort}"),
                "const rows = document.querySelectorAll('#all-tenants tbody tr');                  return rows.length === 3 && Array.from(rows).map(r => r.dataset.tenant);",
                WAIT,
            )
            .await
    };
    browser.wait_for("#all-tenants tbody tr", WAIT).await;
    assert_eq!(order("records").await, json!(["bob", "acme", "cat"]));
    assert_eq!(
        order("stored_bytes").await,
        json!(["acme", "bob", "cat"]),
        "600 blob bytes weigh more than 8 small records"
    );
    assert_eq!(order("blobs").await, json!(["acme", "bob", "cat"]));
    assert_eq!(order("id").await, json!(["acme", "bob", "cat"]));
    let acme = expect_json(app.admin(Method::GET, "/v1/admin/tenants/acme/usage", None).await, StatusCode::OK).await;
    let stored = acme["usage"]["record_bytes"].as_u64().unwrap() + acme["usage"]["blob_bytes"].as_u64().unwrap();
    let script = "return document.querySelector('#all-tenants tr[data-tenant=acme]').children[5].innerText;";
    assert_eq!(browser.execute(script, json!([])).await, json!(format!("{stored} B")), "acme's stored bytes");
    shot(&browser, &screenshot_dir().join("tenants-by-usage.png")).await;
    let errors = browser.errors().await;
    assert!(errors.is_empty(), "nothing thrown on the page: {errors:?}");
}

/// Whether `text` lists two consecutive numbers one after the other (`12, 13`), which a range
/// (`12–13`) says shorter.
fn lists_consecutive_numbers(text: &str) -> bool {
    let parts: Vec<&str> = text.split(", ").collect();
    parts.windows(2).any(|pair| {
        let last: Vec<char> = pair[0].chars().rev().take_while(char::is_ascii_digit).collect();
        let last: String = last.into_iter().rev().collect();
        let first: String = pair[1].chars().take_while(char::is_ascii_digit).collect();
        matches!((last.parse::<u64>(), first.parse::<u64>()), (Ok(a), Ok(b)) if a + 1 == b)
    })
}

/// Checks that the view shows no value the page failed to format, then saves a screenshot.
async fn shot(browser: &Browser, path: &std::path::Path) {
    let text = browser.assert_formatted().await;
    assert!(!text.lines().any(|line| line.trim() == "null"), "the page shows a bare null:\n{text}");
    browser.screenshot(path).await;
}

/// Pastes `token` into the sign-in field (typing a token key by key takes seconds) and signs in.
async fn sign_in(browser: &Browser, token: &str) {
    browser.wait_for("#token", WAIT).await;
    browser.execute("document.getElementById('token').value = arguments[0];", json!([token])).await;
    browser.click_on("#sign-in-button").await;
}

async fn confirm(browser: &Browser) {
    browser.wait_for("#confirm[open] #confirm-yes", WAIT).await;
    browser.click_on("#confirm-yes").await;
}

async fn wait_for_job(browser: &Browser, id: &str, state: &str) {
    let found = eventually(Duration::from_secs(60), async || {
        let script =
            format!("const r = document.querySelector('tr[data-job=\"{id}\"]'); return r ? r.dataset.state : null;");
        let now: Value = browser.execute(&script, json!([])).await;
        (now == state).then_some(())
    })
    .await;
    if found.is_none() {
        panic!("job {id} did not show {state} within 60 s; the page shows:\n{}", browser.text_of("#view").await);
    }
}
