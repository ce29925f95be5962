//! [`Browser`]: a real headless Chromium driven over WebDriver (Debian's `chromium` and
//! `chromium-driver`, installed by `scripts/chromium.sh`), for the console's tests.
//!
//! The W3C WebDriver protocol is JSON over HTTP, so this is a thin client of the commands the
//! tests use, on the crate's own HTTP client: open a page, find, click and type, run a script,
//! take a screenshot, and read the browser's console and network logs (chromedriver's
//! `goog:loggingPrefs`). Every wait is bounded. The browser reaches no host but
//! `127.0.0.1` (`--host-resolver-rules`), so nothing a page asks for can leave the machine;
//! the network log still shows each attempt.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::process::{Child, Command};

use crate::eventually;
use crate::server::free_port;

/// The W3C element reference key.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A headless Chromium session; ends (and stops its chromedriver) when dropped.
#[derive(Debug)]
pub struct Browser {
    driver: Child,
    client: reqwest::Client,
    session: String,
}

/// An element of the page, found by a CSS selector.
#[derive(Debug, Clone)]
pub struct Element(String);

/// One entry of the browser's console or network log.
#[derive(Debug, Clone)]
pub struct LogEntry {
    /// `SEVERE`, `WARNING`, `INFO`, ...
    pub level: String,
    /// The message (for the network log, a DevTools event as JSON).
    pub message: String,
}

impl Browser {
    /// Starts chromedriver on a free loopback port and opens a 1280×800 headless Chromium.
    /// Panics, saying what to install, when either is missing.
    pub async fn start() -> Self {
        let chromedriver = which("chromedriver");
        let chromium = which("chromium");
        let port = free_port();
        let driver = Command::new(&chromedriver)
            .arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", chromedriver.display()));
        let client = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().expect("client");
        let base = format!("http://127.0.0.1:{port}");
        let ready = eventually(Duration::from_secs(20), async || {
            let status = client.get(format!("{base}/status")).send().await.ok()?;
            let body: Value = status.json().await.ok()?;
            body["value"]["ready"].as_bool().filter(|ready| *ready)
        })
        .await;
        assert!(ready.is_some(), "chromedriver did not become ready on port {port}");
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,800",
                    "--no-first-run", "--disable-background-networking", "--disable-component-update",
                    "--disable-sync", "--disable-default-apps", "--disable-domain-reliability",
                    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
                ],
            },
            "goog:loggingPrefs": {"browser": "ALL", "performance": "ALL"},
        }}});
        let created = client.post(format!("{base}/session")).json(&capabilities).send().await.expect("new session");
        let body: Value = created.json().await.expect("new session answer");
        let session = body["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("chromedriver refused the session: {body}"))
            .to_owned();
        Self { driver, client, session: format!("{base}/session/{session}") }
    }

    async fn command(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}{path}", self.session);
        let mut request = self.client.request(method.clone(), &url);
        if let Some(body) = body {
            request = request.json(&body);
        } else if method == reqwest::Method::POST {
            request = request.json(&json!({}));
        }
        let answer = request.send().await.unwrap_or_else(|e| panic!("WebDriver {method} {path}: {e}"));
        let status = answer.status();
        let body: Value = answer.json().await.unwrap_or_else(|e| panic!("WebDriver {method} {path} answer: {e}"));
        assert!(status.is_success(), "WebDriver {method} {path}: {status} {body}");
        body["value"].clone()
    }

    /// Opens `url` and waits for it to load.
    pub async fn goto(&self, url: &str) {
        self.command(reqwest::Method::POST, "/url", Some(json!({"url": url}))).await;
    }

    /// The first element matching `css` now, if any.
    pub async fn find(&self, css: &str) -> Option<Element> {
        element(self.execute("return document.querySelector(arguments[0]);", json!([css])).await)
    }

    /// Waits (bounded) for an element matching `css` that is displayed (laid out, not hidden).
    pub async fn wait_for(&self, css: &str, within: Duration) -> Element {
        let script = "const e = document.querySelector(arguments[0]); \
                      return e && e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden' ? e : null;";
        let found = eventually(within, async || element(self.execute(script, json!([css])).await)).await;
        match found {
            Some(element) => element,
            None => {
                let text = self.text_of("body").await;
                panic!("no visible {css} within {within:?}; the page shows:\n{text}")
            }
        }
    }

    /// Waits (bounded) until `script` (a function body, `return`ing) gives a truthy value; returns it.
    pub async fn wait_until(&self, what: &str, script: &str, within: Duration) -> Value {
        let found = eventually(within, async || {
            let value = self.execute(script, json!([])).await;
            let truthy = !(value.is_null() || value == json!(false) || value == json!("") || value == json!(0));
            truthy.then_some(value)
        })
        .await;
        match found {
            Some(value) => value,
            None => {
                let text = self.text_of("body").await;
                panic!("not within {within:?}: {what}; the page shows:\n{text}")
            }
        }
    }

    /// Clicks `element`.
    pub async fn click(&self, element: &Element) {
        self.command(reqwest::Method::POST, &format!("/element/{}/click", element.0), None).await;
    }

    /// Waits for `css` and clicks it.
    pub async fn click_on(&self, css: &str) {
        let element = self.wait_for(css, Duration::from_secs(20)).await;
        self.click(&element).await;
    }

    /// Waits for `css` and clicks it from the page's script, in one step: for controls of views
    /// that redraw themselves, where an element found by WebDriver may be replaced before the
    /// click reaches it.
    pub async fn click_now(&self, css: &str) {
        let script = "const e = document.querySelector(arguments[0]); if (!e) return false; e.click(); return true;";
        let clicked = eventually(Duration::from_secs(20), async || {
            self.execute(script, json!([css])).await.as_bool().filter(|clicked| *clicked)
        })
        .await;
        if clicked.is_none() {
            panic!("nothing to click at {css}; the page shows:\n{}", self.text_of("body").await);
        }
    }

    /// Types `text` into `element` (`\u{E007}` is the Enter key).
    pub async fn type_into(&self, element: &Element, text: &str) {
        let path = format!("/element/{}/value", element.0);
        self.command(reqwest::Method::POST, &path, Some(json!({"text": text}))).await;
    }

    /// The visible text of the first element matching `css` (empty when there is none).
    pub async fn text_of(&self, css: &str) -> String {
        let script = "const e = document.querySelector(arguments[0]); return e ? e.innerText : '';";
        self.execute(script, json!([css])).await.as_str().unwrap_or_default().to_owned()
    }

    /// Runs `script` (a function body) with `args`; its return value.
    pub async fn execute(&self, script: &str, args: Value) -> Value {
        self.command(reqwest::Method::POST, "/execute/sync", Some(json!({"script": script, "args": args}))).await
    }

    /// Saves a PNG of the window to `path` (its directory is created).
    pub async fn screenshot(&self, path: &Path) {
        use base64::Engine as _;
        let encoded = self.command(reqwest::Method::GET, "/screenshot", None).await;
        let png = base64::engine::general_purpose::STANDARD.decode(encoded.as_str().expect("base64")).expect("PNG");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("screenshot directory");
        }
        std::fs::write(path, png).expect("screenshot written");
    }

    /// Asserts that `#main` shows no value the page failed to format (`undefined`, `NaN`,
    /// `[object Object]`); returns the text it read.
    pub async fn assert_formatted(&self) -> String {
        let text = self.text_of("#main").await;
        for word in ["undefined", "NaN", "[object Object]"] {
            assert!(!text.contains(word), "the page shows {word}:\n{text}");
        }
        text
    }

    /// [`Browser::assert_formatted`], then a [`Browser::screenshot`] to `path`.
    pub async fn formatted_screenshot(&self, path: &Path) {
        self.assert_formatted().await;
        self.screenshot(path).await;
    }

    /// The errors (`SEVERE`) of the browser's console since its log was last read.
    pub async fn errors(&self) -> Vec<LogEntry> {
        self.log("browser").await.into_iter().filter(|e| e.level == "SEVERE").collect()
    }

    /// The browser's log of `kind` (`browser`: the console; `performance`: DevTools network
    /// events) since it was last read.
    pub async fn log(&self, kind: &str) -> Vec<LogEntry> {
        let entries = self.command(reqwest::Method::POST, "/se/log", Some(json!({"type": kind}))).await;
        entries
            .as_array()
            .map(|entries| {
                entries
                    .iter()
                    .map(|e| LogEntry {
                        level: e["level"].as_str().unwrap_or_default().to_owned(),
                        message: e["message"].as_str().unwrap_or_default().to_owned(),
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Every URL the page asked for since the network log was last read.
    pub async fn requested_urls(&self) -> Vec<String> {
        self.log("performance")
            .await
            .iter()
            .filter_map(|entry| {
                let event: Value = serde_json::from_str(&entry.message).ok()?;
                let message = &event["message"];
                (message["method"] == "Network.requestWillBeSent")
                    .then(|| message["params"]["request"]["url"].as_str().map(str::to_owned))
                    .flatten()
            })
            .collect()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Ending the session closes Chromium; killing chromedriver alone could leave it running.
        // A plain blocking request, since a drop cannot wait on the runtime.
        if let Some((address, path)) = self.session.strip_prefix("http://").and_then(|rest| rest.split_once('/')) {
            use std::io::{Read as _, Write as _};
            if let Ok(mut stream) = std::net::TcpStream::connect(address) {
                let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                let request = format!(
                    "DELETE /{path} HTTP/1.1\r\nHost: {address}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                );
                if stream.write_all(request.as_bytes()).is_ok() {
                    let _ = stream.read_to_end(&mut Vec::new());
                }
            }
        }
        let _ = self.driver.start_kill();
    }
}

/// Where screenshots of a test run go: `target/console-screenshots/`.
pub fn screenshot_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("target"));
    target.join("console-screenshots")
}

/// The element a script returned, if it returned one.
fn element(value: Value) -> Option<Element> {
    value[ELEMENT].as_str().map(|id| Element(id.to_owned()))
}

fn which(program: &str) -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).map(|dir| dir.join(program)).find(|path| path.is_file()))
        .unwrap_or_else(|| {
            panic!("{program} is not installed: run scripts/chromium.sh (Debian's chromium and chromium-driver)")
        })
}
