//! `shardgate admin` against a real gateway: each command's table for people and its `--json`,
//! a tenant move followed with `--wait` until its progress reaches 100%, and the problems an
//! operator meets (a refused request, no token, no gateway), each with its exit code.
//!
//! The gateway is the embedded default (four SQLite shards in a temporary directory); the CLI is
//! the built binary, run as an operator would, with `SHARDGATE_URL` and `SHARDGATE_TOKEN`. What a
//! real gateway never answers (an endless body, a redirect, JSON of the wrong shape, escape
//! sequences) comes from a [`StandIn`]: a small HTTP server in the test that answers from a list.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use support::{Process, finish, shardgate};

#[expect(dead_code, reason = "these tests use part of the process harness")]
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
        Self::start_with(&[]).await
    }

    /// [`Gateway::start`] with `overrides` of its environment.
    async fn start_with(overrides: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let envs = [
            ("SHARDGATE_STORAGE__MOVES__PHASE_PAUSE", "300ms"),
            ("SHARDGATE_STORAGE__MOVES__COPY_BYTES_PER_SECOND", "200000"),
            ("SHARDGATE_STORAGE__MOVES__CLEANUP_GRACE", "200ms"),
        ];
        let process = Process::start(&["serve"], dir.path(), envs.iter().chain(overrides).copied());
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

/// The runs of consecutive vshards that a plan's `vshards` move between the same two shards, as
/// the CLI names them (`vshard 7`, `vshards 342–511`), with their `from` and `to`.
fn vshard_runs(moves: &[Value]) -> Vec<(String, String, String)> {
    let mut moves: Vec<(String, String, u64)> = moves
        .iter()
        .map(|m| {
            (
                m["from"].as_str().unwrap().to_owned(),
                m["to"].as_str().unwrap().to_owned(),
                m["vshard"].as_u64().unwrap(),
            )
        })
        .collect();
    moves.sort();
    let mut runs: Vec<(String, String, u64, u64)> = Vec::new();
    for (from, to, vshard) in moves {
        match runs.last_mut() {
            Some(run) if run.0 == from && run.1 == to && run.3 + 1 == vshard => run.3 = vshard,
            _ => runs.push((from, to, vshard, vshard)),
        }
    }
    runs.into_iter()
        .map(|(from, to, first, last)| {
            let what = if first == last { format!("vshard {first}") } else { format!("vshards {first}\u{2013}{last}") };
            (what, from, to)
        })
        .collect()
}

/// Whether `text` lists two consecutive numbers one after the other (`12, 13`), which a range
/// (`12–13`) would say shorter.
fn lists_consecutive_numbers(text: &str) -> bool {
    let parts: Vec<&str> = text.split(", ").collect();
    parts.windows(2).any(|pair| {
        let last: Vec<char> = pair[0].chars().rev().take_while(char::is_ascii_digit).collect();
        let last: String = last.into_iter().rev().collect();
        let first: String = pair[1].chars().take_while(char::is_ascii_digit).collect();
        matches!((last.parse::<u64>(), first.parse::<u64>()), (Ok(a), Ok(b)) if a + 1 == b)
    })
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
    // `list` is the default, with its flags too (as docs/admin-cli.md writes them).
    let short = gateway.ok(&["tenants", "--limit", "1"]);
    assert!(short.contains("acme") && !short.contains("globex") && short.contains("(more: "), "{short}");
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
    // One row per run of consecutive vshards between the same two shards, not one per vshard.
    let runs = vshard_runs(vshards);
    let rows: Vec<&str> = plan.lines().filter(|l| l.starts_with("vshard")).collect();
    assert_eq!(rows.len(), runs.len(), "one row per run {runs:?}:\n{plan}");
    for (what, from, to) in &runs {
        let row = rows.iter().find(|r| r.split("  ").next() == Some(what.as_str()));
        let row = row.unwrap_or_else(|| panic!("no row for {what}:\n{plan}"));
        assert!(row.contains(from.as_str()) && row.trim_end().ends_with(to.as_str()), "{row}");
    }
    let drain = gateway.json(&["drain", "shard-4", "--dry-run"]);
    assert!(drain["job"].is_null() && drain["plan"]["vshards"].as_array().unwrap().is_empty(), "{drain}");
    assert_eq!(gateway.ok(&["shards", "remove", "shard-4"]), "unregistered shard shard-4\n");

    // Jobs: none yet.
    assert_eq!(gateway.ok(&["jobs"]), "no jobs\n");
    assert_eq!(gateway.ok(&["jobs", "--limit", "8"]), "no jobs\n");
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
    let moved = gateway.admin(&["move", "acme", "--to", to, "--wait", "--until-cleaned"]);
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_ends_at_the_switch_and_leaves_the_cleanup_grace_to_the_gateway() {
    // A grace far longer than the test's bound: a `--wait` that waits for it never ends in time.
    let gateway = Gateway::start_with(&[
        ("SHARDGATE_STORAGE__MOVES__CLEANUP_GRACE", "1h"),
        ("SHARDGATE_STORAGE__MOVES__PHASE_PAUSE", "0s"),
        ("SHARDGATE_STORAGE__MOVES__COPY_BYTES_PER_SECOND", "100000000"),
    ])
    .await;
    gateway.ok(&["tenants", "create", "acme"]);
    let writer = mint(gateway.dir.path(), &["--tenant", "acme", "--scopes", "read,write"]);
    let client = reqwest::Client::new();
    for key in 0..20 {
        let url = format!("{}/v1/tenants/acme/collections/notes/records/n{key}", gateway.process.base);
        let response = client.put(url).bearer_auth(&writer).json(&json!({"n": key})).send().await.unwrap();
        assert_eq!(response.status(), 201);
    }
    let from = gateway.json(&["tenants", "show", "acme"])["shard"].as_str().unwrap().to_owned();
    let to = if from == "shard-0" { "shard-1" } else { "shard-0" };

    // The move: `--wait` ends once the new placement is in force; the old copy stays until the
    // grace has passed, and the job is still running for that.
    let moved = gateway.admin(&["move", "acme", "--to", to, "--wait"]);
    let (out, err) = (stdout(&moved), stderr(&moved));
    assert!(moved.status.success(), "{:?}\n{out}\n{err}", moved.status);
    let job_id = out.lines().find_map(|l| l.strip_prefix("id:")).expect("the job's id").trim().to_owned();
    assert!(out.lines().any(|l| l.starts_with("state:") && l.ends_with("running")), "the job as it switched: {out}");
    assert!(out.lines().any(|l| l.starts_with("progress:") && l.contains("cleanup")), "{out}");
    let said = err.trim_end().lines().last().unwrap_or_default().to_owned();
    assert!(said.starts_with(&format!("job {job_id} switched: ")), "{err}");
    assert!(said.contains("--until-cleaned"), "says how to wait for the cleanup too: {said}");
    assert_eq!(gateway.json(&["tenants", "show", "acme"])["shard"], to, "acme lives on {to} now");
    let job = gateway.json(&["jobs", "show", &job_id]);
    assert_eq!((job["state"].as_str(), job["progress"]["phase"].as_str()), (Some("running"), Some("cleanup")), "{job}");

    // A rebalance onto a fifth shard likewise ends when every step has switched (on a gateway
    // of its own: acme's move, in its grace, still holds acme, which one of the steps moves).
    drop(gateway);
    let gateway = Gateway::start_with(&[("SHARDGATE_STORAGE__MOVES__CLEANUP_GRACE", "1h")]).await;
    let url = format!("sqlite://{}", gateway.dir.path().join("extra.db").display());
    gateway.ok(&["shards", "add", "shard-4", &url]);
    let rebalanced = gateway.admin(&["rebalance", "--parallel", "16", "--wait", "--progress", "quiet"]);
    let (out, err) = (stdout(&rebalanced), stderr(&rebalanced));
    assert!(rebalanced.status.success(), "{:?}\n{out}\n{err}", rebalanced.status);
    assert!(err.contains(" switched: "), "{err}");
    let map = gateway.json(&["shards", "show", "shard-4"]);
    assert!(map["vshards"].as_u64() > Some(0), "shard-4 owns vshards now: {map}");

    // Its vshard moves name their vshards as ranges, in the table and in a job's fields.
    let moves = gateway.json(&["jobs", "list", "--kind", "vshard.move"]);
    let ids: Vec<&str> = moves["items"].as_array().unwrap().iter().map(|j| j["id"].as_str().unwrap()).collect();
    assert!(!ids.is_empty(), "{moves}");
    let table = gateway.ok(&["jobs", "list", "--kind", "vshard.move"]);
    for id in &ids {
        let listed = row(&table, id);
        assert!(listed.contains('\u{2013}') && !lists_consecutive_numbers(listed), "{listed}");
    }
    let fields = gateway.ok(&["jobs", "show", ids[0]]);
    let target = fields.lines().find(|l| l.starts_with("target:")).unwrap();
    assert!(target.contains('\u{2013}') && !lists_consecutive_numbers(target), "{target}");
}

#[test]
fn the_admin_commands_take_lists_flags_without_list_and_show_no_server_flags() {
    for args in [&["jobs", "--help"][..], &["tenants", "--help"], &["--help"], &["shards", "list", "--help"]] {
        let help = finish(&mut cli(args));
        assert!(help.status.success(), "{args:?}: {}", stderr(&help));
        let text = stdout(&help);
        assert!(!text.contains("--config") && !text.contains("--data-dir"), "no server flag in {args:?}:\n{text}");
    }
    let server_flag = finish(cli(&["jobs", "--config", "x.toml"]).env("SHARDGATE_TOKEN", "t"));
    assert_eq!(server_flag.status.code(), Some(2), "a usage error: {}", stderr(&server_flag));
    // `jobs --limit`, `tenants --limit`, `balancer --limit` are `list` / `show` with the flag.
    let stand_in = StandIn::start(vec![
        ("GET", "/v1/admin/jobs", Answer::json(200, json!({"items": [], "next_cursor": null}))),
        ("GET", "/v1/admin/tenants", Answer::json(200, json!({"items": [], "next_cursor": null}))),
        ("GET", "/v1/admin/balancer", Answer::json(200, balancer_view())),
    ]);
    assert_eq!(stdout(&stand_in.ok(&["jobs", "--limit", "8", "--state", "running"])), "no jobs\n");
    assert_eq!(stdout(&stand_in.ok(&["tenants", "--limit", "2"])), "no tenants\n");
    stand_in.ok(&["balancer", "--limit", "3"]);
    let asked: Vec<String> = stand_in.asked().into_iter().map(|a| a.target).collect();
    assert_eq!(
        asked,
        ["/v1/admin/jobs?state=running&limit=8", "/v1/admin/tenants?limit=2", "/v1/admin/balancer?limit=3"],
        "the flags reach the API"
    );
}

/// A balancer view with a pending proposal that moves a vshard, and loads with many decimals.
fn balancer_view() -> Value {
    let planned = json!({
        "kind": "vshard", "vshard": 12, "tenant": null, "from": "shard-0", "to": "shard-1",
        "statement_ms_per_s": 3.456_789_123_456,
        "predicted": [{"shard": "shard-0", "statement_ms_per_s": 20.123_456_789}],
    });
    let run = json!({
        "id": 41, "at": "2026-11-28T04:00:00Z", "instance": "i-1", "mode": "propose", "outcome": "proposed",
        "since": "2026-11-28T03:50:00Z", "until": "2026-11-28T04:00:00Z",
        "mean_statement_ms_per_s": 12.345_678_912_3, "overfull_above_ms_per_s": 13.580_246_803_53,
        "hottest_excess_ms_per_s": 7.777_777_777,
        "shards": [{"shard": "shard-0", "statement_ms_per_s": 20.123_456_789, "hot_share": 0.333_333_333_333, "held": null}],
        "move": planned, "reason": "vshard 12 carries 3.14 ms/s", "proposal": "pending",
        "settled": null, "settled_at": null, "job": null,
    });
    json!({
        "mode": "propose", "mode_switched_by": "admin", "mode_switched_at": "2026-11-28T03:00:00Z",
        "runner": "i-1", "lease_until": "2026-11-28T04:01:00Z", "this_instance": "i-1",
        "settings": {
            "configured_mode": "off", "interval_s": 30.0, "window_s": 600.0, "cooldown_s": 1800.0,
            "max_concurrent_moves": 1, "threshold": 0.1, "min_load_ms_per_s": 5.0, "min_improvement": 0.1,
            "tenant_share": 0.5, "sustained": 0.5,
        },
        "proposals": [run.clone()],
        "runs": [run],
    })
}

#[test]
fn balancer_tables_round_their_loads_and_show_a_proposals_move() {
    let view = balancer_view();
    let plan = view["runs"][0].clone();
    let stand_in = StandIn::start(vec![
        ("GET", "/v1/admin/balancer", Answer::json(200, view)),
        ("GET", "/v1/admin/balancer/plan", Answer::json(200, plan)),
    ]);
    let shown = stdout(&stand_in.ok(&["balancer"]));
    let proposals = shown.split("pending proposals:").nth(1).unwrap().split("last runs:").next().unwrap();
    assert!(row(proposals, "41").contains("vshard 12 shard-0 -> shard-1"), "the proposal's move:\n{shown}");
    assert!(row(shown.split("last runs:").nth(1).unwrap(), "41").contains("vshard 12 shard-0 -> shard-1"), "{shown}");
    let planned = stdout(&stand_in.ok(&["balancer", "plan"]));
    assert!(planned.lines().any(|l| l == "move: vshard 12 shard-0 -> shard-1"), "{planned}");
    for text in [&shown, &planned] {
        assert!(!long_decimals(text), "loads rounded:\n{text}");
    }
    assert!(planned.contains("12.3") && row(&planned, "shard-0").contains("20.1"), "{planned}");
    assert!(row(&planned, "shard-0").contains("33%"), "the hot share as a percentage:\n{planned}");
}

/// Whether `text` has a number with more than two decimals (`3.14159`).
fn long_decimals(text: &str) -> bool {
    text.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .any(|word| word.split_once('.').is_some_and(|(whole, decimals)| !whole.is_empty() && decimals.len() > 2))
}

#[test]
fn an_answer_larger_than_the_cap_is_not_read_whole_and_exits_4() {
    let stand_in = StandIn::start(vec![
        ("GET", "/v1/admin/shards", Answer::Huge(64 << 20)),
        ("GET", "/v1/admin/jobs", Answer::Announced(3_000_000_000)),
    ]);
    for args in [&["shards"][..], &["--json", "shards"], &["jobs"]] {
        let answer = stand_in.admin(args);
        let message = stderr(&answer);
        assert_eq!(answer.status.code(), Some(4), "{args:?}: {message}");
        assert!(message.contains("more than 16 MiB"), "{args:?}: {message}");
        assert!(stdout(&answer).is_empty(), "{args:?} printed {} bytes", answer.stdout.len());
    }
}

#[test]
fn the_token_goes_over_plain_http_to_another_host_only_with_insecure_http() {
    let stand_in = StandIn::start(vec![("GET", "/v1/admin/shards", Answer::json(200, json!({"items": []})))]);
    // 0.0.0.0 is not a loopback address, though on Linux it reaches this host's listeners.
    let elsewhere = format!("http://0.0.0.0:{}", stand_in.port);
    let refused = finish(cli(&["--url", &elsewhere, "shards"]).env("SHARDGATE_TOKEN", STAND_IN_TOKEN));
    let message = stderr(&refused);
    assert_eq!(refused.status.code(), Some(1), "{message}");
    assert!(message.contains("--insecure-http") && message.contains("in clear"), "{message}");
    assert!(stand_in.asked().is_empty(), "nothing was sent: {:?}", stand_in.asked());

    let insecure =
        finish(cli(&["--url", &elsewhere, "--insecure-http", "shards"]).env("SHARDGATE_TOKEN", STAND_IN_TOKEN));
    assert!(insecure.status.success(), "{}", stderr(&insecure));
    assert_eq!(stdout(&insecure), "no shards\n");
    let asked = stand_in.asked();
    assert!(asked.len() == 1 && asked[0].authorized, "sent once, with the token: {asked:?}");
    // A loopback address needs no flag (the existing tests use 127.0.0.1), nor does `localhost`.
    let local = finish(
        cli(&["--url", &format!("http://localhost:{}", stand_in.port), "shards"])
            .env("SHARDGATE_TOKEN", STAND_IN_TOKEN),
    );
    assert!(local.status.success(), "{}", stderr(&local));
}

#[test]
fn redirects_are_not_followed_and_an_answer_of_the_wrong_shape_is_an_error() {
    let stand_in = StandIn::start(vec![
        ("GET", "/v1/admin/shards", Answer::Redirect("/v1/admin/elsewhere".into())),
        ("GET", "/v1/admin/elsewhere", Answer::json(200, json!({"items": []}))),
        ("POST", "/v1/admin/tenants", Answer::json(201, json!({}))),
        ("GET", "/v1/admin/tenants/acme", Answer::json(200, json!({"id": 7}))),
        ("GET", "/v1/admin/jobs", Answer::json(200, json!([]))),
        ("POST", "/v1/admin/tenants/acme/move", Answer::json(202, json!({"id": "j1"}))),
    ]);
    let redirected = stand_in.admin(&["shards"]);
    let message = stderr(&redirected);
    assert_eq!(redirected.status.code(), Some(4), "{message}");
    assert!(message.contains("redirect") && message.contains("/v1/admin/elsewhere"), "{message}");
    let asked: Vec<String> = stand_in.asked().into_iter().map(|a| a.target).collect();
    assert_eq!(asked, ["/v1/admin/shards"], "the redirect is not followed (the token would go along)");

    for (args, what) in [
        (&["tenants", "create", "acme"][..], "tenant"),
        (&["--json", "tenants", "create", "acme"], "tenant"),
        (&["tenants", "show", "acme"], "tenant"),
        (&["jobs"], "page"),
        (&["move", "acme", "--to", "shard-1"], "job"),
    ] {
        let answer = stand_in.admin(args);
        let message = stderr(&answer);
        assert_eq!(answer.status.code(), Some(4), "{args:?}: {message}");
        assert!(
            message.contains("not the shardgate admin API's answer") && message.contains(what),
            "{args:?}: {message}"
        );
        assert!(stdout(&answer).is_empty(), "{args:?} printed: {}", stdout(&answer));
    }
}

#[test]
fn control_characters_from_the_gateway_reach_the_screen_escaped() {
    let name = "\u{1b}]0;owned\u{7}\u{1b}[2J\u{9b}31mred\r\nshard-9  forged line \u{202e}gnp.exe";
    let tenant = json!({"id": "acme", "name": name, "tier": "standard", "shard": "shard-0", "pinned": false,
        "created_at": "2026-11-28T04:00:00Z", "updated_at": "2026-11-28T04:00:00Z",
        "rate_limit": null, "effective_rate_limit": null});
    let detail = format!("tenant \u{1b}[31macme\u{1b}[0m not found {}", "and so on ".repeat(500));
    let problem = json!({"type": "about:blank", "status": 404, "title": "Not Found", "code": "tenant_not_found", "detail": detail});
    let stand_in = StandIn::start(vec![
        ("GET", "/v1/admin/tenants", Answer::json(200, json!({"items": [tenant.clone()], "next_cursor": null}))),
        ("GET", "/v1/admin/tenants/acme", Answer::json(200, tenant)),
        ("GET", "/v1/admin/tenants/nobody", Answer::json(404, problem)),
    ]);
    let raw = |text: &str| {
        text.chars().any(|c| {
            (c.is_control() && c != '\n')
                || ('\u{202a}'..='\u{202e}').contains(&c)
                || ('\u{2066}'..='\u{2069}').contains(&c)
        })
    };
    for args in [&["tenants"][..], &["tenants", "show", "acme"], &["--json", "tenants"]] {
        let out = stdout(&stand_in.ok(args));
        assert!(!raw(&out), "{args:?} printed a control character: {out:?}");
        assert!(!out.contains("forged") || !out.lines().any(|l| l.starts_with("shard-9")), "no forged line: {out}");
    }
    let table = stdout(&stand_in.ok(&["tenants"]));
    assert_eq!(table.lines().count(), 2, "a header and one row: {table}");
    assert!(row(&table, "acme").contains(r"\u{1b}]0;owned\u{7}"), "shown escaped: {table}");

    let refused = stand_in.admin(&["tenants", "show", "nobody"]);
    let line = stderr(&refused);
    assert_eq!(refused.status.code(), Some(3), "{line}");
    assert!(!raw(&line) && line.lines().count() == 1, "{line:?}");
    assert!(line.chars().count() < 500, "a long detail is shortened: {} characters", line.chars().count());
    assert!(line.contains(r"tenant \u{1b}[31macme") && line.contains('…'), "{line}");
    assert!(line.trim_end().ends_with("(code tenant_not_found, HTTP 404)"), "{line}");
}

/// The token the CLI sends to a [`StandIn`].
const STAND_IN_TOKEN: &str = "stand-in-token";

/// What a [`StandIn`] answers to one method and path.
#[derive(Debug, Clone)]
enum Answer {
    /// A status and a JSON body (`application/problem+json` from 400 on).
    Json(u16, String),
    /// `302 Found` to this location.
    Redirect(String),
    /// A JSON document of about this many bytes, sent piece by piece with no length announced.
    Huge(usize),
    /// Headers announcing a body of this many bytes, then nothing until the client hangs up.
    Announced(u64),
}

impl Answer {
    fn json(status: u16, body: Value) -> Self {
        Self::Json(status, body.to_string())
    }
}

/// One request a [`StandIn`] received.
#[derive(Debug, Clone)]
struct Asked {
    /// The path and query.
    target: String,
    /// Whether it carried the token.
    authorized: bool,
}

/// An HTTP server on a free loopback port that answers each request from its list by method
/// and path (404 otherwise), one connection at a time per thread, and keeps what it was asked.
/// It lives as long as the test's process.
struct StandIn {
    base: String,
    port: u16,
    asked: Arc<Mutex<Vec<Asked>>>,
}

impl StandIn {
    fn start(answers: Vec<(&'static str, &'static str, Answer)>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let asked = Arc::new(Mutex::new(Vec::new()));
        let answers = Arc::new(answers);
        let kept = asked.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (answers, kept) = (answers.clone(), kept.clone());
                std::thread::spawn(move || serve_one(stream, &answers, &kept));
            }
        });
        Self { base: format!("http://127.0.0.1:{port}"), port, asked }
    }

    fn asked(&self) -> Vec<Asked> {
        self.asked.lock().unwrap().clone()
    }

    /// `shardgate admin <args>` against the stand-in.
    fn admin(&self, args: &[&str]) -> Output {
        finish(cli(args).env("SHARDGATE_URL", &self.base).env("SHARDGATE_TOKEN", STAND_IN_TOKEN))
    }

    /// [`StandIn::admin`] that must succeed.
    fn ok(&self, args: &[&str]) -> Output {
        let output = self.admin(args);
        assert!(output.status.success(), "shardgate admin {args:?}: {:?}\n{}", output.status, stderr(&output));
        output
    }
}

/// Reads one request from `stream` and answers it.
fn serve_one(mut stream: TcpStream, answers: &[(&str, &str, Answer)], asked: &Mutex<Vec<Asked>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or("").to_owned(), parts.next().unwrap_or("").to_owned());
    let (mut length, mut authorized) = (0usize, false);
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
            break;
        }
        let (name, value) = header.split_once(':').unwrap_or((&header, ""));
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse().unwrap_or(0),
            "authorization" => authorized = value.trim() == format!("Bearer {STAND_IN_TOKEN}"),
            _ => {}
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    asked.lock().unwrap().push(Asked { target: target.clone(), authorized });
    let path = target.split('?').next().unwrap_or_default();
    let answer = answers.iter().find(|(m, p, _)| *m == method && *p == path).map(|(_, _, a)| a.clone());
    let answer = answer.unwrap_or_else(|| {
        Answer::json(
            404,
            json!({"status": 404, "title": "Not Found", "code": "not_found", "detail": "no such stand-in path"}),
        )
    });
    let _ = match answer {
        Answer::Json(status, body) => {
            let kind = if status >= 400 { "application/problem+json" } else { "application/json" };
            write!(
                stream,
                "HTTP/1.1 {status} Stand-in\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
        }
        Answer::Redirect(location) => {
            write!(
                stream,
                "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            )
        }
        Answer::Huge(bytes) => {
            let piece = vec![b'x'; 64 << 10];
            let mut sent = stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{\"items\": [], \"padding\": \"");
            let mut written = 0;
            while sent.is_ok() && written < bytes {
                sent = stream.write_all(&piece);
                written += piece.len();
            }
            sent.and_then(|()| stream.write_all(b"\"}"))
        }
        Answer::Announced(bytes) => {
            let head = format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {bytes}\r\n\r\n");
            // Nothing more: the read ends when the client hangs up.
            stream.write_all(head.as_bytes()).and_then(|()| stream.read(&mut [0; 1]).map(drop))
        }
    };
}
