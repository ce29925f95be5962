//! `shardgate admin` against a real gateway: each command's table for people and its `--json`,
//! a tenant move followed with `--wait` until its progress reaches 100%, and the problems an
//! operator meets (a refused request, no token, no gateway), each with its exit code.
//!
//! The gateway is the embedded default (four SQLite shards in a temporary directory); the CLI is
//! the built binary, run as an operator would, with `SHARDGATE_URL` and `SHARDGATE_TOKEN`.

use std::process::{Command, Output};

use serde_json::{Value, json};
use support::{Process, finish, shardgate};

mod support;

/// A gateway on the embedded default, and an admin token for it.
struct Gateway {
    dir: tempfile::TempDir,
    process: Process,
    token: String,
}

impl Gateway {
    /// Starts a gateway whose moves pause 300 ms at each phase boundary, copy about 200 KB/s
    /// and clean up after 200 ms, so that a move of a few hundred kilobytes shows its progress.
    async fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let envs = [
            ("SHARDGATE_STORAGE__MOVES__PHASE_PAUSE", "300ms"),
            ("SHARDGATE_STORAGE__MOVES__COPY_BYTES_PER_SECOND", "200000"),
            ("SHARDGATE_STORAGE__MOVES__CLEANUP_GRACE", "200ms"),
        ];
        let process = Process::start(&["serve"], dir.path(), envs);
        process.wait_until_ok(&reqwest::Client::new(), "/readyz").await;
        let token = mint(dir.path(), &["--admin"]);
        Self { dir, process, token }
    }

    /// `shardgate admin <args>` against this gateway with its admin token.
    fn admin(&self, args: &[&str]) -> Output {
        finish(cli(args).env("SHARDGATE_URL", &self.process.base).env("SHARDGATE_TOKEN", &self.token))
    }

    /// [`Gateway::admin`] that must succeed; answers its standard output.
    fn ok(&self, args: &[&str]) -> String {
        let output = self.admin(args);
        assert!(output.status.success(), "shardgate admin {args:?}: {:?}\n{}", output.status, stderr(&output));
        stdout(&output)
    }

    /// [`Gateway::ok`] with `--json`, parsed.
    fn json(&self, args: &[&str]) -> Value {
        let text = self.ok(&[&["--json"], args].concat());
        serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("shardgate admin --json {args:?} is one JSON document ({e}): {text}"))
    }
}

/// `shardgate token <args>` for the embedded default in `dir`.
fn mint(dir: &std::path::Path, args: &[&str]) -> String {
    let output = finish(&mut shardgate(&[&["token"], args].concat(), dir));
    assert!(output.status.success(), "shardgate token {args:?}: {}", stderr(&output));
    stdout(&output).trim().to_owned()
}

/// `shardgate admin <args>` with neither `SHARDGATE_URL` nor `SHARDGATE_TOKEN` from the test's
/// own environment.
fn cli(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_shardgate"));
    command.arg("admin").args(args).env_remove("SHARDGATE_URL").env_remove("SHARDGATE_TOKEN");
    command
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The line of `table` whose first column is `first`.
fn row<'a>(table: &'a str, first: &str) -> &'a str {
    table
        .lines()
        .find(|line| line.split_whitespace().next() == Some(first))
        .unwrap_or_else(|| panic!("no row {first:?} in:\n{table}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_command_prints_a_table_for_people_and_the_apis_json_for_scripts() {
    let gateway = Gateway::start().await;

    // Shards: the four embedded ones, as a table and as the API's list.
    let table = gateway.ok(&["shards"]);
    assert!(table.starts_with("ID "), "a header row first: {table}");
    for column in ["ENGINE", "STATE", "VSHARDS", "RECORDS", "SIZE", "BREAKER"] {
        assert!(table.lines().next().unwrap().contains(column), "{column} in: {table}");
    }
    let shard_1 = row(&table, "shard-1");
    assert!(shard_1.contains("sqlite") && shard_1.contains("active"), "{table}");
    let listed = gateway.json(&["shards", "list"]);
    let ids: Vec<&str> = listed["items"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["shard-0", "shard-1", "shard-2", "shard-3"], "{listed}");
    let shown = gateway.ok(&["shards", "show", "shard-1"]);
    assert!(shown.lines().any(|l| l.starts_with("engine:") && l.ends_with("sqlite")), "{shown}");
    assert_eq!(gateway.json(&["shards", "show", "shard-1"])["id"], "shard-1");

    // Tenants: created, listed, read.
    let created = gateway.ok(&["tenants", "create", "acme", "--name", "Acme Corp", "--tier", "premium"]);
    assert!(created.starts_with("created tenant acme\n"), "{created}");
    gateway.ok(&["tenants", "create", "globex"]);
    let table = gateway.ok(&["tenants"]);
    let acme = row(&table, "acme");
    assert!(acme.contains("Acme Corp") && acme.contains("premium"), "{table}");
    assert!(row(&table, "globex").contains("standard"), "{table}");
    let page = gateway.json(&["tenants", "list", "--limit", "1"]);
    assert_eq!(page["items"].as_array().unwrap().len(), 1, "{page}");
    assert_eq!(page["items"][0]["id"], "acme");
    assert!(page["next_cursor"].is_string(), "a second page: {page}");
    let cursor = page["next_cursor"].as_str().unwrap();
    let second = gateway.ok(&["tenants", "list", "--limit", "1", "--cursor", cursor]);
    assert!(second.contains("globex") && !second.contains("acme"), "{second}");
    assert!(
        gateway.ok(&["tenants", "list", "--limit", "1"]).contains("(more: add --cursor "),
        "the next page is offered"
    );
    let tenant = gateway.json(&["tenants", "show", "acme"]);
    assert_eq!((tenant["tier"].as_str(), tenant["name"].as_str()), (Some("premium"), Some("Acme Corp")), "{tenant}");
    let fields = gateway.ok(&["tenants", "show", "acme"]);
    let home = tenant["shard"].as_str().unwrap();
    assert!(fields.lines().any(|l| l.starts_with("shard:") && l.ends_with(home)), "{fields}");

    // A fifth shard: registered, its state changed, a rebalance planned onto it, unregistered.
    let url = format!("sqlite://{}", gateway.dir.path().join("extra.db").display());
    let added = gateway.ok(&["shards", "add", "shard-4", &url]);
    assert!(added.starts_with("registered shard shard-4\n") && added.contains("state:"), "{added}");
    assert_eq!(gateway.ok(&["shards", "state", "shard-4", "read_only"]), "shard shard-4 is read_only\n");
    assert!(row(&gateway.ok(&["shards"]), "shard-4").contains("read_only"));
    gateway.ok(&["shards", "state", "shard-4", "active"]);
    let plan = gateway.ok(&["rebalance", "--dry-run"]);
    assert!(plan.starts_with("plan (count balance): "), "{plan}");
    assert!(row(&plan, "shard-4").contains("active"), "shard-4's load before and after: {plan}");
    let planned = gateway.json(&["rebalance", "--dry-run"]);
    let vshards = planned["plan"]["vshards"].as_array().unwrap();
    assert!(vshards.iter().any(|m| m["to"] == "shard-4"), "vshards go to the new shard: {planned}");
    assert!(planned["job"].is_null(), "a dry run starts nothing: {planned}");
    assert!(plan.contains(&format!(": {} vshards, ", vshards.len())), "{plan}");
    let drain = gateway.json(&["drain", "shard-4", "--dry-run"]);
    assert!(drain["job"].is_null() && drain["plan"]["vshards"].as_array().unwrap().is_empty(), "{drain}");
    assert_eq!(gateway.ok(&["shards", "remove", "shard-4"]), "unregistered shard shard-4\n");

    // Jobs: none yet.
    assert_eq!(gateway.ok(&["jobs"]), "no jobs\n");
    assert_eq!(gateway.json(&["jobs", "list", "--state", "running"])["items"], json!([]));

    // The balancer: its mode switched and shown, its plan, a run refused while it is off.
    let view = gateway.ok(&["balancer"]);
    assert!(view.lines().any(|l| l.starts_with("mode:")) && view.contains("last runs:"), "{view}");
    assert_eq!(gateway.ok(&["balancer", "mode", "propose"]), "balancer mode: propose\n");
    let view = gateway.json(&["balancer", "show"]);
    assert_eq!((view["mode"].as_str(), view["mode_switched_by"].as_str()), (Some("propose"), Some("admin")), "{view}");
    gateway.ok(&["balancer", "mode", "off"]);
    let plan = gateway.ok(&["balancer", "plan"]);
    assert!(plan.contains("SHARD") && plan.lines().any(|l| l.starts_with("why: ")), "{plan}");
    assert!(gateway.json(&["balancer", "plan"])["shards"].is_array());
    let refused = gateway.admin(&["balancer", "run"]);
    assert_eq!(refused.status.code(), Some(3), "{}", stderr(&refused));
    assert!(stderr(&refused).contains("(code balancer_off, HTTP 409)"), "{}", stderr(&refused));

    // The audit log: filtered by an action prefix, by actor, newest first.
    let audit = gateway.ok(&["audit", "--action", "tenant."]);
    assert!(audit.starts_with("ID ") && row(&audit, "ID").contains("ACTION"), "{audit}");
    let creates: Vec<&str> = audit.lines().filter(|l| l.contains("tenant.create")).collect();
    assert_eq!(creates.len(), 2, "acme and globex: {audit}");
    assert!(!audit.contains("shard.register"), "only tenant actions: {audit}");
    let records = gateway.json(&["audit", "--action", "shard.", "--actor", "admin"]);
    let actions: Vec<&str> =
        records["items"].as_array().unwrap().iter().map(|r| r["action"].as_str().unwrap()).collect();
    assert!(actions.contains(&"shard.register") && actions.iter().all(|a| a.starts_with("shard.")), "{records}");
    let newest = gateway.json(&["audit", "--newest", "--limit", "1"]);
    assert_eq!(newest["items"][0]["action"], "balancer.mode", "the last action first: {newest}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_followed_with_wait_draws_its_progress_up_to_100_percent() {
    let gateway = Gateway::start().await;
    gateway.ok(&["tenants", "create", "acme"]);
    // About 400 KB of records, so that the paced copy takes about two seconds.
    let writer = mint(gateway.dir.path(), &["--tenant", "acme", "--scopes", "read,write"]);
    let client = reqwest::Client::new();
    let filler = "x".repeat(10_000);
    for key in 0..40 {
        let url = format!("{}/v1/tenants/acme/collections/notes/records/n{key}", gateway.process.base);
        let response = client.put(url).bearer_auth(&writer).json(&json!({"text": filler})).send().await.unwrap();
        assert_eq!(response.status(), 201);
    }
    let from = gateway.json(&["tenants", "show", "acme"])["shard"].as_str().unwrap().to_owned();
    let to = if from == "shard-0" { "shard-1" } else { "shard-0" };

    // Standard error is a pipe here, so the progress comes as lines (`--progress auto`).
    let moved = gateway.admin(&["move", "acme", "--to", to, "--wait"]);
    let (out, err) = (stdout(&moved), stderr(&moved));
    assert!(moved.status.success(), "{:?}\n{err}", moved.status);
    assert!(out.starts_with(&format!("moving tenant acme to {to}: job ")), "{out}");
    assert!(out.lines().any(|l| l.starts_with("state:") && l.ends_with("done")), "the job as it ended: {out}");
    let job_id = out.lines().find_map(|l| l.strip_prefix("id:")).expect("the job's id").trim().to_owned();
    let progress: Vec<&str> = err.lines().filter(|l| l.starts_with(&format!("job {job_id}: "))).collect();
    let percents: Vec<u32> =
        progress.iter().filter_map(|l| l.split_whitespace().nth(2)?.strip_suffix('%')?.parse().ok()).collect();
    assert!(percents.len() >= 2, "the progress is drawn while the move runs, not only at its end: {err}");
    assert!(percents.windows(2).all(|w| w[0] <= w[1]), "the progress never goes back: {err}");
    assert_eq!(progress.last().copied(), Some(format!("job {job_id}: 100% done").as_str()), "{err}");
    assert!(err.trim_end().ends_with(&format!("job {job_id} ended done")), "{err}");
    assert_eq!(gateway.json(&["tenants", "show", "acme"])["shard"], to, "the tenant lives on {to} now");

    // The job, listed and read; waiting again for an ended job draws the full bar at once.
    let jobs = gateway.ok(&["jobs", "list", "--kind", "tenant.move"]);
    let listed = row(&jobs, &job_id);
    assert!(listed.contains("tenant.move") && listed.contains("done") && listed.contains("100% done"), "{jobs}");
    let job = gateway.json(&["jobs", "show", &job_id]);
    assert_eq!((job["state"].as_str(), job["progress"]["to"].as_str()), (Some("done"), Some(to)), "{job}");
    let bar = gateway.admin(&["jobs", "wait", &job_id, "--progress", "bar"]);
    assert!(bar.status.success(), "{}", stderr(&bar));
    assert!(stderr(&bar).contains(&format!("[{}] 100% done", "#".repeat(30))), "{}", stderr(&bar));
    assert!(stdout(&bar).lines().any(|l| l.starts_with("from:") && l.ends_with(&from)), "{}", stdout(&bar));

    // The move is in the audit log under the admin's name.
    let audit = gateway.json(&["audit", "--action", "tenant.move"]);
    assert_eq!(audit["items"][0]["target"], format!("tenant:acme shard:{to}"), "{audit}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn problems_are_one_line_on_standard_error_with_an_exit_code_by_their_cause() {
    let gateway = Gateway::start().await;
    gateway.process.create_tenant(&reqwest::Client::new(), &gateway.token, "acme").await;

    // A request the gateway refuses: its problem in one line, exit 3; nothing on standard output.
    let refused = gateway.admin(&["move", "acme", "--to", "shard-9"]);
    assert_eq!(refused.status.code(), Some(3), "{}", stderr(&refused));
    let line = stderr(&refused);
    assert!(
        line.starts_with("error: Not Found: ") && line.trim_end().ends_with("(code shard_not_found, HTTP 404)"),
        "{line}"
    );
    assert!(line.contains("shard-9"), "names the shard: {line}");
    assert_eq!(line.lines().count(), 1, "{line}");
    assert!(stdout(&refused).is_empty());
    let json = gateway.admin(&["--json", "tenants", "show", "nobody"]);
    assert_eq!(json.status.code(), Some(3));
    assert!(stderr(&json).contains("(code tenant_not_found, HTTP 404)"), "--json changes nothing: {}", stderr(&json));

    // A token the gateway does not accept.
    let forged =
        finish(cli(&["shards"]).env("SHARDGATE_URL", &gateway.process.base).env("SHARDGATE_TOKEN", "not-a-token"));
    assert_eq!(forged.status.code(), Some(3), "{}", stderr(&forged));
    assert!(stderr(&forged).contains("HTTP 401)"), "{}", stderr(&forged));

    // No token: nothing is sent, and the message names the variable.
    let no_token = finish(cli(&["shards"]).env("SHARDGATE_URL", &gateway.process.base));
    assert_eq!(no_token.status.code(), Some(1), "{}", stderr(&no_token));
    assert!(stderr(&no_token).starts_with("error: no admin token: set SHARDGATE_TOKEN"), "{}", stderr(&no_token));

    // No gateway at the URL: exit 4, naming the URL.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let nowhere = format!("http://127.0.0.1:{port}");
    let unreachable = finish(cli(&["--url", &nowhere, "jobs"]).env("SHARDGATE_TOKEN", &gateway.token));
    assert_eq!(unreachable.status.code(), Some(4), "{}", stderr(&unreachable));
    let message = stderr(&unreachable);
    assert!(message.starts_with(&format!("error: cannot reach the gateway at {nowhere}: ")), "{message}");
    assert!(message.contains("--url or SHARDGATE_URL"), "{message}");

    // A job that does not exist, waited for.
    let missing = gateway.admin(&["jobs", "wait", "no-such-job"]);
    assert_eq!(missing.status.code(), Some(3), "{}", stderr(&missing));
    assert!(stderr(&missing).contains("(code job_not_found, HTTP 404)"), "{}", stderr(&missing));
}
