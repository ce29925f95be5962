//! The monitoring shipped in deploy/monitoring/ against the gateway it watches:
//!
//! - the PrometheusRule of the monitoring overlay (deploy/kubernetes/monitoring/, rendered with
//!   `kubectl kustomize`) holds exactly the groups of deploy/monitoring/alerts.yaml
//!   (`SHARDGATE_BLESS=1` writes it from them);
//! - every alert has a firing and a quiet case in alerts.test.yaml (promtool runs them:
//!   scripts/monitoring-check.sh), a severity, a summary, and a runbook section in
//!   docs/operations.md that its `runbook_url` names;
//! - every PromQL expression of the rules and of the Grafana dashboard parses (`promtool check
//!   rules` on a rules file made of them) and names only metric families the gateway exports: those
//!   of real scrapes of `shardgate serve` (two processes, between them with a TLS listener, a
//!   Redis that does not answer, an issuer whose key set cannot be fetched, records written and
//!   read), and the few shown only in states a fresh gateway is not in (listed below with the
//!   file that exports each).
//!
//! Needs kubectl (scripts/kubectl.sh) and promtool (scripts/promtool.sh).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use kustomize::render;
use serde_json::Value;
use support::{Process, finish, shardgate};

mod kustomize;
#[expect(dead_code, reason = "these tests use part of the process harness")]
mod support;

/// Families a fresh gateway does not show, and the source file that exports each (the test checks
/// the name is there): they appear once the state they describe exists (a family without series
/// is not in the exposition at all).
const SHOWN_LATER: [(&str, &str); 5] = [
    // once a request was refused with 429
    ("shardgate_rate_limited_total", "api/src/server/admission.rs"),
    // once the balancer has recorded a run
    ("shardgate_balancer_last_run_timestamp_seconds", "api/src/observability/job_metrics.rs"),
    ("shardgate_balancer_last_run_failed", "api/src/observability/job_metrics.rs"),
    // while a job runs
    ("shardgate_jobs_running_progress_timestamp_seconds", "api/src/observability/job_metrics.rs"),
    // once a key set has been fetched
    ("shardgate_key_set_age_seconds", "api/src/observability/metrics.rs"),
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn yaml_file(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn alerts() -> Value {
    yaml_file(&workspace().join("deploy/monitoring/alerts.yaml"))
}

/// Every rule of `alerts.yaml`.
fn rules(alerts: &Value) -> Vec<&Value> {
    alerts["groups"].as_array().expect("groups").iter().flat_map(|g| g["rules"].as_array().expect("rules")).collect()
}

const PROMETHEUS_RULE_HEADER: &str = "\
# The alerting rules of deploy/monitoring/alerts.yaml as a PrometheusRule for the Prometheus
# Operator. Generated: do not edit; change alerts.yaml and run
# `SHARDGATE_BLESS=1 cargo nextest run -p shardgate-api --test monitoring` (which fails when the
# two differ). Its labels must match your Prometheus's ruleSelector (kube-prometheus-stack's
# default selects `release: <its release name>`): add that label with a patch in your own overlay.
";

#[test]
fn the_monitoring_overlays_prometheus_rule_holds_the_alerts() {
    let alerts = alerts();
    let path = workspace().join("deploy/kubernetes/monitoring/prometheus-rule.yaml");
    if std::env::var_os("SHARDGATE_BLESS").is_some() {
        let rule = serde_json::json!({
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "PrometheusRule",
            "metadata": {"name": "shardgate", "labels": {"app.kubernetes.io/part-of": "shardgate"}},
            "spec": {"groups": alerts["groups"]},
        });
        std::fs::write(&path, format!("{PROMETHEUS_RULE_HEADER}{}", serde_yaml::to_string(&rule).unwrap())).unwrap();
    }
    let objects = render(&workspace().join("deploy/kubernetes/monitoring"));
    let rule = objects.iter().find(|o| o["kind"] == "PrometheusRule").expect("the overlay renders a PrometheusRule");
    assert_eq!(rule["metadata"]["namespace"], "monitoring");
    assert!(
        rule["spec"]["groups"] == alerts["groups"],
        "{} differs from deploy/monitoring/alerts.yaml: SHARDGATE_BLESS=1 cargo nextest run -p shardgate-api \
         --test monitoring writes it",
        path.display()
    );
}

#[test]
fn every_alert_has_a_firing_and_a_quiet_test_and_a_runbook() {
    let alerts = alerts();
    let tests = yaml_file(&workspace().join("deploy/monitoring/alerts.test.yaml"));
    assert_eq!(tests["rule_files"], serde_json::json!(["alerts.yaml"]));
    let cases: Vec<&Value> = tests["tests"]
        .as_array()
        .expect("tests")
        .iter()
        .flat_map(|t| t["alert_rule_test"].as_array().map(Vec::as_slice).unwrap_or_default())
        .collect();
    let operations = std::fs::read_to_string(workspace().join("docs/operations.md")).unwrap();
    let runbooks = operations.split_once("\n## Alerts and runbooks\n").expect("docs/operations.md has the section").1;
    // up to the next section
    let runbooks = runbooks.split_once("\n## ").map_or(runbooks, |(section, _)| section);
    let mut names = BTreeSet::new();
    for rule in rules(&alerts) {
        let Some(name) = rule["alert"].as_str() else { continue };
        assert!(names.insert(name), "{name} is defined twice");
        let of_it = || cases.iter().filter(|c| c["alertname"] == name);
        assert!(
            of_it().any(|c| c["exp_alerts"].as_array().is_some_and(|a| !a.is_empty())),
            "alerts.test.yaml has no case where {name} fires"
        );
        assert!(
            of_it().any(|c| c["exp_alerts"].as_array().is_some_and(Vec::is_empty)),
            "alerts.test.yaml has no case where {name} stays quiet"
        );
        assert!(
            ["warning", "critical"].contains(&rule["labels"]["severity"].as_str().unwrap_or_default()),
            "{name} has no severity"
        );
        for annotation in ["summary", "description"] {
            assert!(rule["annotations"][annotation].is_string(), "{name} has no {annotation}");
        }
        let anchor = name.to_lowercase();
        assert_eq!(rule["annotations"]["runbook_url"], format!("docs/operations.md#{anchor}"), "{name}");
        assert!(
            runbooks.contains(&format!("\n### {name}\n")),
            "docs/operations.md's \"Alerts and runbooks\" has no section ### {name}"
        );
    }
    // and no runbook of an alert that is gone
    for line in runbooks.lines().filter_map(|l| l.strip_prefix("### ")) {
        assert!(names.contains(line), "docs/operations.md has a runbook of {line}, which alerts.yaml lacks");
    }
}

/// The PromQL expressions of the dashboard's panels (nested rows included).
fn dashboard_queries() -> Vec<(String, String)> {
    fn walk(panels: &[Value], out: &mut Vec<(String, String)>) {
        for panel in panels {
            for target in panel["targets"].as_array().map(Vec::as_slice).unwrap_or_default() {
                if let Some(expr) = target["expr"].as_str() {
                    out.push((format!("panel {:?}", panel["title"].as_str().unwrap_or_default()), expr.to_owned()));
                }
            }
            walk(panel["panels"].as_array().map(Vec::as_slice).unwrap_or_default(), out);
        }
    }
    let text = std::fs::read_to_string(workspace().join("deploy/monitoring/dashboard.json")).unwrap();
    let dashboard: Value = serde_json::from_str(&text).expect("dashboard.json is JSON");
    let mut out = Vec::new();
    walk(dashboard["panels"].as_array().expect("panels"), &mut out);
    for variable in dashboard["templating"]["list"].as_array().map(Vec::as_slice).unwrap_or_default() {
        let query = variable["query"]["query"].as_str().or_else(|| variable["query"].as_str());
        if variable["type"] == "query"
            && let Some(inner) = query.and_then(|q| q.strip_prefix("label_values(")).and_then(|q| q.rsplit_once(','))
        {
            out.push((format!("variable {}", variable["name"]), inner.0.to_owned()));
        }
    }
    out
}

/// Grafana's variables replaced by what Prometheus would see.
fn as_prometheus_sees_it(expr: &str) -> String {
    expr.replace("$__rate_interval", "5m").replace("$__interval", "1m").replace("$__range", "1h")
}

/// The metric names an expression selects: the identifiers left once strings, label matchers,
/// ranges, grouping lists, numbers, functions (an identifier before `(`) and keywords are gone.
fn metric_names(expr: &str) -> BTreeSet<String> {
    const KEYWORDS: [&str; 13] = [
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "offset",
        "bool",
        "and",
        "or",
        "unless",
        "inf",
        "nan",
    ];
    // the aggregation operators, which may be followed by their grouping instead of `(`
    const AGGREGATIONS: [&str; 13] = [
        "sum",
        "min",
        "max",
        "avg",
        "group",
        "stddev",
        "stdvar",
        "count",
        "count_values",
        "bottomk",
        "topk",
        "quantile",
        "limitk",
    ];
    let mut out = BTreeSet::new();
    let chars: Vec<char> = expr.chars().collect();
    let mut i = 0;
    let mut after_grouping = false;
    while i < chars.len() {
        let c = chars[i];
        if c == '"' || c == '\'' || c == '`' {
            i += 1;
            while i < chars.len() && chars[i] != c {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c == '{' || c == '[' || (c == '(' && after_grouping) {
            let close = match c {
                '{' => '}',
                '[' => ']',
                _ => ')',
            };
            after_grouping = false;
            while i < chars.len() && chars[i] != close {
                i += 1;
            }
            i += 1;
        } else if c.is_ascii_alphabetic() || c == '_' || c == ':' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == ':') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let mut next = i;
            while next < chars.len() && chars[next].is_whitespace() {
                next += 1;
            }
            let lower = word.to_lowercase();
            if ["by", "without", "on", "ignoring", "group_left", "group_right"].contains(&lower.as_str()) {
                after_grouping = true;
            } else if chars.get(next) != Some(&'(')
                && !KEYWORDS.contains(&lower.as_str())
                && !AGGREGATIONS.contains(&lower.as_str())
            {
                out.insert(word);
            }
        } else if c.is_ascii_digit() || c == '.' {
            // a number or a duration (5m, 1e3)
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
        } else {
            if !c.is_whitespace() {
                after_grouping = false;
            }
            i += 1;
        }
    }
    out
}

#[test]
fn the_metric_names_of_an_expression_are_found_and_nothing_else() {
    let names = metric_names(
        r#"histogram_quantile(0.99, sum by (shard, le) (rate(shardgate_a_bucket{work="request", x=~"a|b"}[5m])))
           > 0.25 and on (shard) sum without(instance) (rate(shardgate_b_total[5m] offset 1h)) / ignoring(le)
           group_left (x) max(shardgate_c) - time() < 14 * 86400 or vector(1) unless label_replace(up, "a", "$1", "b", "(.*)")"#,
    );
    let expected: BTreeSet<String> =
        ["shardgate_a_bucket", "shardgate_b_total", "shardgate_c", "up"].into_iter().map(String::from).collect();
    assert_eq!(names, expected);
}

/// The samples' names of `/metrics` as served by `process`: those of its samples, and those its
/// `# TYPE` lines promise (a family without series yet, such as the 429s by policy before one).
async fn scraped(client: &reqwest::Client, process: &Process) -> BTreeSet<String> {
    let text = client.get(format!("{}/metrics", process.base)).send().await.unwrap().text().await.unwrap();
    let mut names = BTreeSet::new();
    for line in text.lines().filter(|line| !line.is_empty()) {
        if let Some(declared) = line.strip_prefix("# TYPE ") {
            let (name, kind) = declared.split_once(' ').unwrap();
            match kind {
                "histogram" => names.extend(["_bucket", "_sum", "_count"].map(|suffix| format!("{name}{suffix}"))),
                _ => drop(names.insert(name.to_owned())),
            }
        } else if !line.starts_with('#') {
            names.insert(line.split(['{', ' ']).next().unwrap().to_owned());
        }
    }
    names
}

/// Scrapes `process` until its exposition has a line starting with each of `wanted` (the job
/// counts come from a read in the background), for at most 10 s; returns the last exposition.
async fn scrape_until(client: &reqwest::Client, process: &Process, wanted: &[&str]) -> String {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let text = client.get(format!("{}/metrics", process.base)).send().await.unwrap().text().await.unwrap();
        let missing: Vec<_> = wanted.iter().filter(|w| !text.lines().any(|l| l.starts_with(*w))).collect();
        if missing.is_empty() {
            return text;
        }
        assert!(tokio::time::Instant::now() < deadline, "/metrics lacks {missing:?} after 10 s:\n{text}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_query_parses_and_names_only_metrics_the_gateway_exports() {
    let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap();
    let tls = workspace().join("deploy/kubernetes/overlays/dev/tls");

    // The embedded default with a TLS valet listener and a Redis that does not answer (nothing
    // listens on its port), a tenant's record written and read.
    let dir = tempfile::tempdir().unwrap();
    let (valet_port, redis_port) = (free_port(), free_port());
    let envs = [
        ("SHARDGATE_VALET__LISTEN", format!("127.0.0.1:{valet_port}")),
        ("SHARDGATE_VALET__TLS__CERT_FILE", tls.join("tls.crt").display().to_string()),
        ("SHARDGATE_VALET__TLS__KEY_FILE", tls.join("tls.key").display().to_string()),
        ("SHARDGATE_CACHE__REDIS_URL", format!("redis://127.0.0.1:{redis_port}")),
    ];
    let gateway = Process::start(&["serve"], dir.path(), envs);
    gateway.wait_until_ok(&client, "/healthz").await;
    let token = |args: &[&str]| {
        let output = finish(&mut shardgate(args, dir.path()));
        assert!(output.status.success(), "shardgate {args:?}: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).unwrap().trim().to_owned()
    };
    let admin = token(&["token", "--admin"]);
    gateway.create_tenant(&client, &admin, "watched").await;
    let tenant = token(&["token", "--tenant", "watched", "--scopes", "read,write"]);
    let record = format!("{}/v1/tenants/watched/collections/orders/records/o-1", gateway.base);
    let put = client.put(&record).bearer_auth(&tenant).json(&serde_json::json!({"total": 1})).send().await.unwrap();
    assert_eq!(put.status(), 201);
    assert_eq!(client.get(&record).bearer_auth(&tenant).send().await.unwrap().status(), 200);
    let text = scrape_until(
        &client,
        &gateway,
        &[
            "shardgate_jobs{",
            "shardgate_shard_statement_duration_seconds_bucket{",
            "shardgate_tls_certificate_expiry_timestamp_seconds{",
        ],
    )
    .await;
    // The new families say what they should: the certificate's notAfter (openssl x509 -enddate:
    // Nov 25 08:58:13 2036 GMT), Redis degraded, the request's statements counted.
    assert!(
        text.contains("shardgate_tls_certificate_expiry_timestamp_seconds{listener=\"valet\"} 2111216293"),
        "{text}"
    );
    assert!(text.lines().any(|l| l == "shardgate_cache_redis_degraded 1"), "{text}");
    let requests_counted = text.lines().any(|l| {
        l.starts_with("shardgate_shard_statement_duration_seconds_count{")
            && l.contains("work=\"request\"")
            && l.rsplit(' ').next().and_then(|n| n.parse::<u64>().ok()).is_some_and(|n| n >= 1)
    });
    assert!(requests_counted, "{text}");
    let mut exported = scraped(&client, &gateway).await;

    // An issuer whose key set cannot be fetched (nothing listens on its port).
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("shardgate.toml");
    std::fs::write(
        &config,
        format!(
            "[[auth.issuers]]\nissuer = \"https://idp.example\"\nalgorithm = \"RS256\"\n\
             audience = [\"shardgate\"]\njwks_url = \"http://127.0.0.1:{}/jwks\"\njwks_refresh_max_secs = 3600\njwks_max_age_secs = 7200\n",
            free_port()
        ),
    )
    .unwrap();
    let fetching =
        Process::start(&["serve", "--config", config.to_str().unwrap()], dir.path(), [] as [(&str, &str); 0]);
    fetching.wait_until_ok(&client, "/healthz").await;
    let text = scrape_until(&client, &fetching, &["shardgate_key_set_max_age_seconds{"]).await;
    assert!(text.contains("shardgate_key_set_max_age_seconds{issuer=\"https://idp.example\"} 7200"), "{text}");
    assert!(text.contains("shardgate_key_set_last_fetch_failed{issuer=\"https://idp.example\"} 1"), "{text}");
    exported.extend(scraped(&client, &fetching).await);

    for (family, file) in SHOWN_LATER {
        let source = std::fs::read_to_string(workspace().join(file)).unwrap();
        let name = family.strip_prefix("shardgate_").unwrap();
        let name = name.strip_suffix("_total").unwrap_or(name);
        assert!(source.contains(&format!("\"{name}\"")), "{file} does not export {family}");
        exported.insert(family.to_owned());
    }

    let mut queries: Vec<(String, String)> = rules(&alerts())
        .into_iter()
        .map(|rule| {
            (format!("alert {}", rule["alert"].as_str().unwrap_or("?")), rule["expr"].as_str().unwrap().to_owned())
        })
        .collect();
    let from_dashboard = dashboard_queries();
    assert!(from_dashboard.len() >= 10, "the dashboard has {} queries", from_dashboard.len());
    queries.extend(from_dashboard);

    let mut unknown = Vec::new();
    for (place, expr) in &queries {
        let names = metric_names(&as_prometheus_sees_it(expr));
        assert!(!names.is_empty(), "{place} selects no metric: {expr}");
        for name in names {
            if !exported.contains(&name) {
                unknown.push(format!("{place}: {name}"));
            }
        }
    }
    assert!(unknown.is_empty(), "queries name metrics the gateway does not export:\n{}", unknown.join("\n"));

    // Each expression as a recording rule: promtool parses them all.
    let rules: Vec<Value> = queries
        .iter()
        .enumerate()
        .map(|(i, (_, expr))| serde_json::json!({"record": format!("shardgate_check:query_{i}"), "expr": as_prometheus_sees_it(expr)}))
        .collect();
    let file = tempfile::Builder::new().suffix(".yaml").tempfile().unwrap();
    let doc = serde_json::json!({"groups": [{"name": "queries", "rules": rules}]});
    std::fs::write(file.path(), serde_yaml::to_string(&doc).unwrap()).unwrap();
    let output =
        Command::new("promtool").args(["check", "rules"]).arg(file.path()).output().unwrap_or_else(|e| {
            panic!("promtool is needed to parse the queries ({e}): scripts/promtool.sh installs it")
        });
    assert!(
        output.status.success(),
        "promtool check rules refused a query:\n{}{}\nthe queries, in order:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
        queries
            .iter()
            .enumerate()
            .map(|(i, (place, e))| format!("query_{i} ({place}): {e}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}
