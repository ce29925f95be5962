//! The console's heat map at 1,024 vshards in a real headless Chromium: rows grouped by shard
//! collapse to one summary row per shard, a range of vshards zooms in until the one hot vshard is
//! its own row of several pixels (named with its number and load, reachable by keyboard), the
//! view lives in the address (a shared address opens the same view), and "Show all vshards"
//! brings every row back. Screenshots under `target/console-screenshots/heatmap/`.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shardgate_tests::browser::{Browser, screenshot_dir};
use shardgate_tests::{Backend, TestApp, VSHARD_COUNT, eventually, expect_json};

const WAIT: Duration = Duration::from_secs(30);

/// Half the width of the range zoomed into around the hot vshard.
const AROUND: u64 = 8;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_heat_map_collapses_shards_and_zooms_into_a_hot_vshard() {
    let app = TestApp::spawn_with(Backend::Sqlite, |config| {
        config.storage.load.window = Duration::from_secs(1);
        config.cache.enabled = false;
    })
    .await;
    let map = app.shard_map().await;
    assert_eq!(map["vshard_count"].as_u64(), Some(VSHARD_COUNT), "the fleet has 1,024 vshards");

    // One hot vshard: a tenant written to many times, and three written to once each.
    app.create_tenant("hot").await;
    let route = app.route("hot", "c", "k").await;
    let (hot, hot_shard) = (route["vshard"].as_u64().unwrap(), route["shard"].as_str().unwrap().to_owned());
    app.put_many("hot", "c", &(0..150).map(|i| format!("k{i}")).collect::<Vec<_>>()).await;
    for tenant in ["cool-a", "cool-b", "cool-c"] {
        app.create_tenant(tenant).await;
        app.put_many(tenant, "c", &["k".to_owned()]).await;
    }
    let written = eventually(WAIT, async || {
        let map = app.admin(Method::GET, "/v1/admin/load/heatmap?metric=writes_per_s", None).await;
        let map = expect_json(map, StatusCode::OK).await;
        let row = map["rows"].as_array()?.iter().find(|r| r["vshard"].as_u64() == Some(hot))?.clone();
        let peak = row["values"].as_array()?.iter().filter_map(Value::as_f64).fold(0.0, f64::max);
        (peak > 0.0).then_some(map)
    })
    .await
    .expect("the hot vshard's writes reach the load picture");
    assert!(written["rows"].as_array().unwrap().len() >= VSHARD_COUNT as usize, "a row for every vshard");

    let browser = Browser::start().await;
    let shots = screenshot_dir().join("heatmap");
    let page = app.url("/console");
    browser.goto(&page).await;
    browser.wait_for("#token", WAIT).await;
    browser.execute("document.getElementById('token').value = arguments[0];", json!([app.admin_token()])).await;
    browser.click_on("#sign-in-button").await;
    browser.wait_for("article[data-shard]", WAIT).await;

    // The whole map: 1,024 rows in at most about 440 pixel rows, several vshards a pixel row.
    browser.goto(&format!("{page}#/heatmap/metric=writes_per_s&since=15m")).await;
    let shown =
        wait_for_map(&browser, "the whole map", "c.dataset.vshards === '' && c.dataset.rows.split(',').length >= 1024")
            .await;
    let rows = shown["rows"].as_array().unwrap();
    assert!(
        rows.iter().filter(|r| r.as_str().unwrap().starts_with('v')).count() == VSHARD_COUNT as usize,
        "every vshard"
    );
    assert!(shown["perBand"].as_u64().unwrap() > 1, "at 1,024 rows vshards share pixel rows: {}", shown["perBand"]);
    assert!(shown["height"].as_u64().unwrap() <= 460, "the map fits the window: {}", shown["height"]);
    let measure = browser.execute("return document.getElementById('heat-metric').value;", json!([])).await;
    assert_eq!(measure, "writes_per_s", "the measure from the address");
    shot(&browser, &shots.join("whole.png")).await;

    // Collapsing the hot shard: its rows are gone, one summary row stands for them (bright, since
    // the hot vshard is in it), the other shards' rows are all still there.
    browser.click_now(&format!("button.heat-toggle[data-shard=\"{hot_shard}\"]")).await;
    let collapsed =
        wait_for_map(&browser, "the hot shard collapsed", &format!("c.dataset.collapsed === '{hot_shard}'")).await;
    let names: Vec<&str> = collapsed["rows"].as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
    let shards: Vec<&str> = collapsed["shards"].as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
    let of_hot: Vec<&str> = names.iter().zip(&shards).filter(|(_, s)| **s == hot_shard).map(|(n, _)| *n).collect();
    assert_eq!(of_hot, [format!("{hot_shard}:summary")], "the collapsed shard is one summary row");
    assert!(!names.contains(&format!("v{hot}").as_str()), "the hot vshard's row is hidden");
    let others = rows.len() - shown["shards"].as_array().unwrap().iter().filter(|s| *s == hot_shard.as_str()).count();
    assert_eq!(names.len(), others + 1, "every other shard's rows stay");
    let focusable = browser
        .execute(
            &format!("return document.querySelectorAll('#heat-rows .heat-line[data-shard=\"{hot_shard}\"]').length;"),
            json!([]),
        )
        .await;
    assert_eq!(focusable, 1, "one focusable row for the collapsed shard");
    let summary = brightness(&browser, &format!("{hot_shard}:summary")).await;
    assert!(summary > 500, "the summary row shows the hot vshard's load: {summary}");
    let expanded = browser
        .execute(&format!("return document.querySelector('button.heat-toggle[data-shard=\"{hot_shard}\"]').getAttribute('aria-expanded');"), json!([]))
        .await;
    assert_eq!(expanded, "false");
    assert!(hash(&browser).await.contains(&format!("collapsed={hot_shard}")), "the address keeps the collapse");
    shot(&browser, &shots.join("collapsed.png")).await;

    // Expanded again from the keyboard: Enter on the summary row.
    let summary_row =
        browser.find(&format!("#heat-rows .heat-line.summary[data-shard=\"{hot_shard}\"]")).await.unwrap();
    browser.type_into(&summary_row, "\u{E007}").await;
    wait_for_map(
        &browser,
        "the hot shard expanded",
        &format!("c.dataset.collapsed === '' && c.dataset.rows.split(',').includes('v{hot}')"),
    )
    .await;

    // Zoomed to the vshards around the hot one, from the two fields: each row is several pixels,
    // the hot vshard's row is bright and named with its number and load, its neighbours idle.
    let (low, high) = (hot.saturating_sub(AROUND), (hot + AROUND).min(VSHARD_COUNT - 1));
    browser
        .execute(
            "document.getElementById('heat-from').value = arguments[0]; document.getElementById('heat-to').value = arguments[1]; \
             document.getElementById('heat-zoom').click();",
            json!([low.to_string(), high.to_string()]),
        )
        .await;
    let zoomed = wait_for_map(&browser, "the zoomed map", &format!("c.dataset.vshards === '{low}-{high}'")).await;
    let names: Vec<String> =
        zoomed["rows"].as_array().unwrap().iter().map(|r| r.as_str().unwrap().to_owned()).collect();
    let wanted: Vec<String> = (low..=high).map(|v| format!("v{v}")).collect();
    assert_eq!(names, wanted, "exactly the range's vshards, in order");
    assert_eq!(zoomed["perBand"], 1, "one vshard a row");
    assert!(zoomed["rowHeight"].as_u64().unwrap() >= 4, "each vshard a few pixels at least: {}", zoomed["rowHeight"]);
    let bright = brightness(&browser, &format!("v{hot}")).await;
    assert!(bright > 500, "the hot vshard's row is bright: {bright}");
    let title = row_title(&browser, hot).await;
    assert!(title.starts_with(&format!("vshard {hot} on {hot_shard}; mean ")), "{title}");
    assert!(peak_of(&title) > 0.0, "its load is named: {title}");
    let idle_in_range = |v: &u64| {
        written["rows"].as_array().unwrap().iter().any(|r| {
            r["vshard"].as_u64() == Some(*v) && r["values"].as_array().unwrap().iter().all(|x| x.as_f64() == Some(0.0))
        })
    };
    let neighbour = (low..=high).filter(|v| *v != hot).find(idle_in_range).expect("an idle vshard near the hot one");
    let idle = row_title(&browser, neighbour).await;
    assert_eq!(peak_of(&idle), 0.0, "a neighbour is idle: {idle}");
    assert!(brightness(&browser, &format!("v{neighbour}")).await < 150, "an idle neighbour's row is dark");
    assert!(hash(&browser).await.contains(&format!("vshards={low}-{high}")), "the address keeps the zoom");

    // By keyboard: Tab stops on the first row; the arrow keys reach the hot vshard, whose load
    // the tooltip then shows.
    let first = browser.find("#heat-rows .heat-line[tabindex=\"0\"]").await.expect("a row to tab to");
    let first_key = browser
        .execute("return document.querySelector('#heat-rows .heat-line[tabindex=\"0\"]').dataset.key;", json!([]))
        .await;
    assert_eq!(first_key, format!("heat-v:{low}"), "the tab stop is the first row");
    browser.type_into(&first, &"\u{E015}".repeat((hot - low) as usize)).await;
    let focused = browser
        .wait_until(
            "the hot vshard focused, its tooltip shown",
            &format!(
                "const a = document.activeElement; const t = document.getElementById('tooltip'); \
                 return a && a.dataset.key === 'heat-v:{hot}' && !t.hidden && t.innerText;"
            ),
            WAIT,
        )
        .await;
    assert!(focused.as_str().unwrap().contains(&format!("vshard {hot} on {hot_shard}")), "{focused}");
    shot(&browser, &shots.join("zoomed.png")).await;

    // The address opens the same view in a new page.
    let shared = browser.execute("return location.href;", json!([])).await.as_str().unwrap().to_owned();
    browser.goto("about:blank").await;
    browser.goto(&shared).await;
    let again = wait_for_map(&browser, "the shared view", &format!("c.dataset.vshards === '{low}-{high}'")).await;
    assert_eq!(again["rows"], zoomed["rows"], "the same rows from the shared address");
    assert_eq!(browser.execute("return document.getElementById('heat-from').value;", json!([])).await, low.to_string());

    // Dragging down the names at the left zooms into the rows dragged over.
    let script = "const c = document.getElementById('heat-canvas'); const r = c.getBoundingClientRect(); \
                  const names = c.dataset.rows.split(','); const tops = c.dataset.tops.split(',').map(Number); const h = Number(c.dataset.rowHeight); \
                  const y = (v) => r.top + tops[names.indexOf('v' + v)] + h / 2; \
                  const at = (type, v) => c.dispatchEvent(new MouseEvent(type, { bubbles: true, clientX: r.left + 20, clientY: y(v), buttons: 1 })); \
                  at('mousedown', arguments[0]); at('mousemove', arguments[1]); at('mouseup', arguments[2]);";
    browser.execute(script, json!([low, low + 1, low + 3])).await;
    wait_for_map(&browser, "the dragged range", &format!("c.dataset.vshards === '{low}-{}'", low + 3)).await;

    // "Show all vshards" brings every row back.
    browser.click_now("#heat-vshards-reset").await;
    let all = wait_for_map(&browser, "every row again", "c.dataset.vshards === ''").await;
    assert_eq!(all["rows"], shown["rows"], "the whole map again");
    assert!(!hash(&browser).await.contains("vshards="), "the address forgets the zoom");

    // A range the fleet does not have is refused on the page, not sent anywhere.
    browser
        .execute(
            "document.getElementById('heat-from').value = '5000'; document.getElementById('heat-zoom').click();",
            json!([]),
        )
        .await;
    let said = browser
        .wait_until(
            "the refusal",
            "const n = document.getElementById('heat-note'); return !n.hidden && n.innerText;",
            WAIT,
        )
        .await;
    assert!(said.as_str().unwrap().contains("0 to 1023"), "{said}");

    let errors = browser.errors().await;
    assert!(errors.is_empty(), "errors on the page (a CSP violation among them?): {errors:?}");
}

/// Waits until the heat map's canvas meets `condition` (a script expression on `c`, the
/// canvas); gives its rows, their shards, their tops and its layout.
async fn wait_for_map(browser: &Browser, what: &str, condition: &str) -> Value {
    let script = format!(
        "const c = document.getElementById('heat-canvas'); if (!c || !({condition})) return null; \
         return {{ rows: c.dataset.rows.split(','), shards: c.dataset.shards.split(','), perBand: Number(c.dataset.perBand), \
         rowHeight: Number(c.dataset.rowHeight), height: c.height }};"
    );
    browser.wait_until(what, &script, WAIT).await
}

/// The brightest pixel (r + g + b) of a row of the canvas, named as in its `data-rows`.
async fn brightness(browser: &Browser, row: &str) -> i64 {
    let script = "const c = document.getElementById('heat-canvas'); const i = c.dataset.rows.split(',').indexOf(arguments[0]); \
                  if (i < 0) return -1; const y = Number(c.dataset.tops.split(',')[i]); const x0 = Number(c.dataset.gutter); \
                  const d = c.getContext('2d').getImageData(x0, y, c.width - x0, 1).data; let best = 0; \
                  for (let k = 0; k < d.length; k += 4) best = Math.max(best, d[k] + d[k + 1] + d[k + 2]); return best;";
    let value = browser.execute(script, json!([row])).await.as_i64().unwrap();
    assert!(value >= 0, "no row {row} on the map");
    value
}

/// The title of vshard `vshard`'s focusable row.
async fn row_title(browser: &Browser, vshard: u64) -> String {
    let script = format!(
        "const e = document.querySelector('#heat-rows [data-key=\"heat-v:{vshard}\"]'); return e ? e.title : null;"
    );
    let title = eventually(WAIT, async || browser.execute(&script, json!([])).await.as_str().map(str::to_owned)).await;
    title.unwrap_or_else(|| panic!("no row for vshard {vshard}"))
}

/// The peak a row's title names (`...; mean 1.25, peak 3.50 writes/s`).
fn peak_of(title: &str) -> f64 {
    let after = title.split("peak ").nth(1).unwrap_or_else(|| panic!("no peak in {title}"));
    after.split(' ').next().unwrap().replace(',', "").parse().unwrap_or_else(|_| panic!("a number in {title}"))
}

async fn hash(browser: &Browser) -> String {
    browser.execute("return location.hash;", json!([])).await.as_str().unwrap().to_owned()
}

/// Checks that the page shows no value it failed to format, then saves a screenshot with the
/// map in the window (unless a row of it has the focus, which keeps it in the window).
async fn shot(browser: &Browser, path: &std::path::Path) {
    browser.assert_formatted().await;
    let script =
        "if (!document.activeElement.closest('#heat-rows')) document.querySelector('.heat-shards').scrollIntoView();";
    browser.execute(script, json!([])).await;
    browser.screenshot(path).await;
}
