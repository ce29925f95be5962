//! Traces (`[telemetry]`), against a real OTLP/HTTP receiver: `tests/otlp_receiver.py`, which
//! decodes every export with PyPI's `opentelemetry-proto` (installed by
//! `scripts/otlp-receiver.sh`) and prints its spans as JSON lines. A trusted caller's
//! `traceparent` is the request span's parent and its trace runs down to the shard statement;
//! a batch's span links the requests in it; an untrusted caller's `traceparent` is ignored;
//! problems carry the `trace_id`; a collector that is down or hangs changes no answer, and what
//! it costs is counted as dropped spans. Every wait is bounded.

use std::collections::HashSet;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shardgate_api::Config;
use shardgate_api::config::proxies::Cidr;
use shardgate_api::config::telemetry::TraceTrust;
use shardgate_tests::{Backend, TestApp, eventually, expect_json, record_path};
use tokio::io::{AsyncBufReadExt, BufReader};

/// A running `tests/otlp_receiver.py` and the spans it has printed so far.
struct Receiver {
    endpoint: String,
    spans: Arc<Mutex<Vec<Value>>>,
    _child: tokio::process::Child,
}

impl Receiver {
    async fn start() -> Self {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        let setup =
            tokio::process::Command::new(format!("{root}/scripts/otlp-receiver.sh")).stderr(Stdio::inherit()).output();
        let setup = tokio::time::timeout(Duration::from_secs(300), setup)
            .await
            .expect("scripts/otlp-receiver.sh ends within 5 minutes")
            .expect("scripts/otlp-receiver.sh runs");
        assert!(setup.status.success(), "scripts/otlp-receiver.sh failed");
        let python = String::from_utf8(setup.stdout).unwrap().trim().to_owned();
        let mut child = tokio::process::Command::new(python)
            .arg(format!("{root}/tests/otlp_receiver.py"))
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("the receiver starts");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("the receiver says its port within 30 s")
            .unwrap()
            .expect("a first line");
        let port = first.strip_prefix("listening ").expect("`listening <port>`").to_owned();
        let spans = Arc::new(Mutex::new(Vec::new()));
        let kept = spans.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                let span: Value = serde_json::from_str(&line).expect("a JSON line");
                assert!(span.get("error").is_none(), "the receiver could not decode an export: {span}");
                kept.lock().unwrap().push(span);
            }
        });
        Self { endpoint: format!("http://127.0.0.1:{port}/v1/traces"), spans, _child: child }
    }

    /// The spans of `trace_id` once `ready` holds for them (within 20 s).
    async fn trace(&self, trace_id: &str, ready: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let found = eventually(Duration::from_secs(20), async || {
            let spans: Vec<Value> =
                self.spans.lock().unwrap().iter().filter(|s| s["trace_id"] == trace_id).cloned().collect();
            ready(&spans).then_some(spans)
        })
        .await;
        found.unwrap_or_else(|| {
            panic!("trace {trace_id} never arrived whole; received: {:#?}", self.spans.lock().unwrap())
        })
    }
}

/// Traces on, every trace sampled, exported to `endpoint`, with `trust`.
fn traced(endpoint: &str, trust: TraceTrust) -> impl FnOnce(&mut Config) {
    let endpoint = endpoint.to_owned();
    move |config| {
        config.telemetry.enabled = true;
        config.telemetry.endpoint = endpoint;
        config.telemetry.sampling_ratio = 1.0;
        config.telemetry.trust_incoming = trust;
        config.telemetry.export_timeout = Duration::from_secs(1);
    }
}

fn trusting_loopback(config: &mut Config) {
    config.trusted_proxies = vec![Cidr::parse("127.0.0.1/32").unwrap()];
}

/// A `traceparent` of a new random trace, sampled: the header and the trace id.
fn traceparent() -> (String, String) {
    let trace = uuid::Uuid::new_v4().simple().to_string();
    let parent = &uuid::Uuid::new_v4().simple().to_string()[..16];
    (format!("00-{trace}-{parent}-01"), trace)
}

/// The trace id of a response's `traceparent`.
fn returned_trace(response: &reqwest::Response) -> String {
    let header = response.headers().get("traceparent").expect("the response carries a traceparent");
    let parts: Vec<&str> = header.to_str().unwrap().split('-').collect();
    assert_eq!(parts.len(), 4, "{header:?}");
    parts[1].to_owned()
}

fn named<'a>(spans: &'a [Value], name: &str) -> Vec<&'a Value> {
    spans.iter().filter(|s| s["name"] == name).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trusted_traceparent_is_carried_down_to_the_shard_statement() {
    let receiver = Receiver::start().await;
    let app = TestApp::spawn_with(Backend::Sqlite, |config| {
        traced(&receiver.endpoint, TraceTrust::TrustedProxies)(config);
        trusting_loopback(config);
    })
    .await;
    app.create_tenant("acme").await;
    let token = app.rw_token("acme");
    let (header, trace) = traceparent();
    let sent_parent = header.split('-').nth(2).unwrap().to_owned();
    let path = record_path("acme", "docs", "k1");
    let put =
        app.send(Method::PUT, &path, Some(&token), Some(&json!({"n": 1})), &[("traceparent", header.as_str())]).await;
    assert!(put.status().is_success(), "{}", put.status());
    assert_eq!(returned_trace(&put), trace, "the response continues the caller's trace");

    let spans = receiver
        .trace(&trace, |spans| !named(spans, "request").is_empty() && !named(spans, "shard.statement").is_empty())
        .await;
    let request = named(&spans, "request")[0];
    assert_eq!(request["parent_span_id"], sent_parent.as_str(), "the caller's span is the request's parent");
    assert_eq!(request["attributes"]["route"], "/v1/tenants/{tenant}/collections/{collection}/records/{key}");
    assert_eq!(request["attributes"]["tenant"], "acme");
    assert!(request["attributes"]["status"].as_str().unwrap().starts_with('2'), "{request}");
    assert_eq!(request["kind"], 2, "a server span");
    let statement = named(&spans, "shard.statement")[0];
    assert!(statement["attributes"]["shard"].as_str().unwrap().starts_with("shard-"), "{statement}");
    // The statement span descends from the request span.
    let by_id: std::collections::HashMap<&str, &Value> =
        spans.iter().map(|s| (s["span_id"].as_str().unwrap(), s)).collect();
    let mut at = statement;
    let mut hops = 0;
    while at["span_id"] != request["span_id"] {
        at = by_id
            .get(at["parent_span_id"].as_str().unwrap())
            .unwrap_or_else(|| panic!("{at} has no parent in the trace: {spans:#?}"));
        hops += 1;
        assert!(hops < 20);
    }
    assert!(spans.iter().all(|s| !s["name"].as_str().unwrap().contains("acme")), "no tenant in a span name");

    // A problem names the trace it belongs to.
    let (header, trace) = traceparent();
    let missing = app
        .send(Method::GET, &record_path("acme", "docs", "absent"), Some(&token), None, &[("traceparent", &header)])
        .await;
    assert_eq!(returned_trace(&missing), trace);
    let problem = expect_json(missing, StatusCode::NOT_FOUND).await;
    assert_eq!(problem["trace_id"], trace.as_str(), "{problem}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_span_links_every_request_in_it() {
    let receiver = Receiver::start().await;
    let app = TestApp::spawn_with(Backend::Sqlite, |config| {
        traced(&receiver.endpoint, TraceTrust::Always)(config);
        config.storage.batching.max_in_flight = 1;
    })
    .await;
    app.create_tenant("acme").await;
    let token = app.rw_token("acme");
    // Concurrent writes to one shard queue behind the batch in flight and leave together; try
    // a few rounds until one batch held two or more of them.
    let mut ours = HashSet::new();
    let mut linked = None;
    for round in 0..10 {
        let requests = (0..24).map(|i| {
            let (header, trace) = traceparent();
            ours.insert(trace);
            let path = record_path("acme", "docs", &format!("r{round}-{i}"));
            let app = &app;
            let token = &token;
            async move {
                let body = json!({"i": i});
                let answer =
                    app.send(Method::PUT, &path, Some(token), Some(&body), &[("traceparent", header.as_str())]).await;
                assert!(answer.status().is_success());
            }
        });
        futures::future::join_all(requests).await;
        linked = eventually(Duration::from_secs(5), async || {
            let spans = receiver.spans.lock().unwrap();
            spans
                .iter()
                .find(|s| {
                    s["name"] == "shard.batch"
                        && s["links"].as_array().unwrap().len() >= 2
                        && s["links"].as_array().unwrap().iter().all(|l| ours.contains(l["trace_id"].as_str().unwrap()))
                })
                .cloned()
        })
        .await;
        if linked.is_some() {
            break;
        }
    }
    let batch = linked.expect("a batch of two or more queued writes, its span linking them");
    let links = batch["links"].as_array().unwrap();
    assert_eq!(batch["attributes"]["size"], links.len().to_string(), "one link per operation: {batch}");
    // Each linked span is a span of its own request's trace.
    let spans = receiver.spans.lock().unwrap().clone();
    for link in links {
        assert!(
            spans.iter().any(|s| s["trace_id"] == link["trace_id"] && s["span_id"] == link["span_id"]),
            "the linked span {link} was exported"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_callers_traceparent_is_ignored() {
    let receiver = Receiver::start().await;
    // trusted_proxies is empty: the tests' own address is no trusted proxy.
    let app = TestApp::spawn_with(Backend::Sqlite, traced(&receiver.endpoint, TraceTrust::TrustedProxies)).await;
    let (header, sent) = traceparent();
    let answer = app
        .send(Method::GET, "/v1/tenants/acme/collections/docs/records/x", None, None, &[("traceparent", &header)])
        .await;
    let trace = returned_trace(&answer);
    assert_ne!(trace, sent, "a trace of its own");
    let problem = expect_json(answer, StatusCode::UNAUTHORIZED).await;
    assert_eq!(problem["trace_id"], trace.as_str());
    let spans = receiver.trace(&trace, |spans| !named(spans, "request").is_empty()).await;
    assert_eq!(named(&spans, "request")[0]["parent_span_id"], "", "a root span");
    assert!(receiver.spans.lock().unwrap().iter().all(|s| s["trace_id"] != sent.as_str()));
}

/// What a short story of requests answers: statuses and bodies, with the problems' `trace_id`
/// left out (it is there only with traces on).
async fn story(app: &TestApp) -> Vec<(u16, Value)> {
    let token = app.rw_token("acme");
    let mut answers = Vec::new();
    for i in 0..12 {
        let path = record_path("acme", "docs", &format!("k{i}"));
        for (method, body) in [(Method::PUT, Some(json!({"i": i}))), (Method::GET, None)] {
            let answer = app.send(method, &path, Some(&token), body.as_ref(), &[]).await;
            let status = answer.status().as_u16();
            let mut body: Value = answer.json().await.unwrap();
            if let Some(fields) = body.as_object_mut() {
                fields.remove("trace_id");
                fields.remove("updated_at");
                fields.remove("created_at");
            }
            answers.push((status, body));
        }
    }
    let missing = app.send(Method::GET, &record_path("acme", "docs", "absent"), Some(&token), None, &[]).await;
    let status = missing.status().as_u16();
    let mut problem: Value = missing.json().await.unwrap();
    assert!(problem.get("trace_id").is_none() || problem["trace_id"].as_str().unwrap().len() == 32);
    problem.as_object_mut().unwrap().remove("trace_id");
    answers.push((status, problem));
    answers
}

/// Dropped spans of `reason` in `/metrics`.
async fn dropped(app: &TestApp, reason: &str) -> f64 {
    let text = app.client.get(format!("{}/metrics", app.metrics_base())).send().await.unwrap().text().await.unwrap();
    let label = format!("reason=\"{reason}\"");
    text.lines()
        .filter(|l| l.starts_with("shardgate_trace_spans_dropped_total{") && l.contains(&label))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

async fn answers_without_traces() -> Vec<(u16, Value)> {
    let plain = TestApp::spawn(Backend::Sqlite).await;
    plain.create_tenant("acme").await;
    story(&plain).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_that_is_down_changes_no_answer_and_its_drops_are_counted() {
    let expected = answers_without_traces().await;
    let closed = shardgate_tests::server::free_port();
    let app = TestApp::spawn_with(
        Backend::Sqlite,
        traced(&format!("http://127.0.0.1:{closed}/v1/traces"), TraceTrust::Never),
    )
    .await;
    app.create_tenant("acme").await;
    assert_eq!(story(&app).await, expected);
    let counted =
        eventually(Duration::from_secs(20), async || (dropped(&app, "export_failed").await > 0.0).then_some(()));
    assert!(counted.await.is_some(), "spans the collector could not take are counted as dropped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_that_hangs_changes_no_answer_and_its_drops_are_counted() {
    let expected = answers_without_traces().await;
    // Accepts connections and never answers (nor reads).
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let held = tokio::spawn(async move {
        let mut connections = Vec::new();
        while let Ok((connection, _)) = listener.accept().await {
            connections.push(connection);
        }
    });
    let app = TestApp::spawn_with(Backend::Sqlite, |config| {
        traced(&format!("http://127.0.0.1:{port}/v1/traces"), TraceTrust::Never)(config);
        config.telemetry.queue_spans = 2;
        config.telemetry.batch_spans = 2;
    })
    .await;
    app.create_tenant("acme").await;
    let answers = tokio::time::timeout(Duration::from_secs(60), story(&app)).await.expect("answers within 60 s");
    assert_eq!(answers, expected);
    assert!(dropped(&app, "queue_full").await > 0.0, "spans finished while the export hung are dropped");
    let timed_out =
        eventually(Duration::from_secs(20), async || (dropped(&app, "export_failed").await > 0.0).then_some(()));
    assert!(timed_out.await.is_some(), "an export that never returns is given up and counted");
    held.abort();
}

/// The statements of `database` blocked on a lock, as `pg_stat_activity` shows them.
async fn blocked_statements(monitor: &sqlx::AnyPool, database: &str) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT query FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock' AND state = 'active'",
    )
    .bind(database)
    .fetch_all(monitor)
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sampled_statement_names_its_trace_in_pg_stat_activity() {
    let receiver = Receiver::start().await;
    let app = TestApp::spawn_with(Backend::Postgres, traced(&receiver.endpoint, TraceTrust::Always)).await;
    app.create_tenant("acme").await;
    let token = app.rw_token("acme");
    let path = record_path("acme", "docs", "k1");
    let seeded = app.send(Method::PUT, &path, Some(&token), Some(&json!({"n": 0})), &[]).await;
    assert!(seeded.status().is_success());
    let shard = app.route("acme", "docs", "k1").await["shard"].as_str().unwrap().to_owned();
    let database = app.pg_database_of(&shard).expect("a seeded PostgreSQL shard");
    let url = app.shard_urls().into_iter().find(|(id, _)| *id == shard).unwrap().1;
    let holder = shardgate_tests::open_shard(&url).await;
    let monitor = shardgate_tests::open_shard(&url).await;

    // While the record's row is locked, a write to it waits in the database, where
    // pg_stat_activity shows its text; what it shows for a sampled and an unsampled trace.
    let mut seen = Vec::new();
    for (flags, n) in [("01", 1), ("00", 2)] {
        let trace = uuid::Uuid::new_v4().simple().to_string();
        let header = format!("00-{trace}-{}-{flags}", &uuid::Uuid::new_v4().simple().to_string()[..16]);
        let mut lock = holder.begin().await.unwrap();
        let locked = sqlx::query(
            "SELECT key FROM records WHERE tenant = 'acme' AND collection = 'docs' AND key = 'k1' FOR UPDATE",
        )
        .fetch_all(&mut *lock)
        .await
        .unwrap();
        assert_eq!(locked.len(), 1, "the record's row is in `records` on {shard}");
        let write = {
            let (app, token, path) = (&app, &token, &path);
            async move {
                let body = json!({"n": n});
                app.send(Method::PUT, path, Some(token), Some(&body), &[("traceparent", header.as_str())]).await
            }
        };
        let watch = async {
            eventually(Duration::from_secs(15), async || {
                blocked_statements(&monitor, &database).await.into_iter().find(|q| q.contains("records"))
            })
            .await
        };
        let (answer, blocked) = tokio::join!(write, async {
            let blocked = watch.await;
            lock.commit().await.unwrap();
            blocked
        });
        assert!(answer.status().is_success(), "{}", answer.status());
        let blocked = blocked.expect("the write waited on the lock, visible in pg_stat_activity");
        seen.push((trace, blocked));
    }
    let (sampled_trace, sampled) = &seen[0];
    let comment = format!("/*traceparent='00-{sampled_trace}-");
    assert!(sampled.contains(&comment), "a sampled statement carries its trace: {sampled}");
    let (unsampled_trace, unsampled) = &seen[1];
    assert!(!unsampled.contains("traceparent"), "an unsampled statement carries no comment: {unsampled}");
    assert!(!unsampled.contains(unsampled_trace.as_str()));

    // The span the comment names is the statement's batch span, exported in the same trace.
    let span_id = sampled.split(&comment).nth(1).unwrap().split('-').next().unwrap().to_owned();
    let spans = receiver.trace(sampled_trace, |spans| spans.iter().any(|s| s["span_id"] == span_id.as_str())).await;
    let named = spans.iter().find(|s| s["span_id"] == span_id.as_str()).unwrap();
    assert_eq!(named["name"], "shard.batch", "{named}");
    holder.close().await;
    monitor.close().await;
}

/// The names of the spans of the trace a request with `header` started, once `wanted` are
/// all there.
async fn span_names(receiver: &Receiver, trace: &str, wanted: &[&str]) -> HashSet<String> {
    let spans = receiver.trace(trace, |spans| wanted.iter().all(|name| !named(spans, name).is_empty())).await;
    spans.iter().map(|s| s["name"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_maintenance_routing_blob_chunks_and_valet_checks_have_spans() {
    use shardgate_gatekeeper::Scope;
    let receiver = Receiver::start().await;
    let app = TestApp::spawn_with(Backend::Sqlite, traced(&receiver.endpoint, TraceTrust::Always)).await;
    app.create_tenant("acme").await;
    let token = app.token("acme", &[Scope::Read, Scope::Write, Scope::Manage]);
    let index = app
        .client
        .put(app.url("/v1/tenants/acme/collections/users/indexes/by-town"))
        .bearer_auth(&token)
        .json(&json!({"field": "/town"}))
        .send()
        .await
        .unwrap();
    assert_eq!(index.status(), StatusCode::CREATED);
    let active = eventually(Duration::from_secs(20), async || {
        let url = app.url("/v1/tenants/acme/collections/users/indexes/by-town");
        let index: Value = app.client.get(url).bearer_auth(&token).send().await.ok()?.json().await.ok()?;
        (index["state"] == "active").then_some(())
    });
    assert!(active.await.is_some(), "the index is built");

    // A write to an indexed collection: routed, its entries prepared and finished.
    let (header, trace) = traceparent();
    let path = record_path("acme", "users", "u1");
    let put =
        app.send(Method::PUT, &path, Some(&token), Some(&json!({"town": "Lyon"})), &[("traceparent", &header)]).await;
    assert!(put.status().is_success(), "{}", put.status());
    let names = span_names(&receiver, &trace, &["request", "route", "index.prepare", "index.finish"]).await;
    assert!(names.contains("shard.statement"), "{names:?}");

    // A blob upload writes its chunks in spans of the request's trace.
    let (header, trace) = traceparent();
    let upload = app
        .client
        .put(app.url("/v1/tenants/acme/blobs/docs/a.bin"))
        .bearer_auth(&token)
        .header("traceparent", &header)
        .body(vec![7u8; 300_000])
        .send()
        .await
        .unwrap();
    assert!(upload.status().is_success(), "{}", upload.status());
    let spans = receiver.trace(&trace, |spans| named(spans, "blob.chunk_write").len() == 2).await;
    assert_eq!(named(&spans, "blob.chunk_write").len(), 2, "300,000 bytes are two chunks of 256 KiB");

    // A valet download: the URL is checked in a span, and the chunks are read in one.
    let body = json!({"path": "docs/a.bin", "permission": "read"});
    let url = app.issue_valet_key("acme", &token, &body).await["url"].as_str().unwrap().to_owned();
    let (header, trace) = traceparent();
    let download = app
        .client
        .get(app.url(&url[url.find("/valet/").unwrap()..]))
        .header("traceparent", &header)
        .send()
        .await
        .unwrap();
    assert_eq!(download.status(), StatusCode::OK);
    assert_eq!(download.bytes().await.unwrap().len(), 300_000);
    span_names(&receiver, &trace, &["request", "valet.check", "blob.window", "blob.chunk_read"]).await;
}
