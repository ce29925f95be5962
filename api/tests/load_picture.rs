//! The load picture with real processes on a PostgreSQL catalog and shards: the load two
//! instances put on the shards adds up, exactly, on the right shard, vshard and tenant, in
//! `GET /v1/admin/load` and in the heat map; stored windows survive a restart, and `kill -9`
//! loses at most the window that was open.
//!
//! The balancer that reads it: of two instances one runs it (its lease), the other refuses to
//! run it (409 `balancer_elsewhere`); when the one running it is killed (`kill -9`), the other
//! takes it over once the lease runs out.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use shared_catalog::{Databases, token};
use support::{Process, serve_two};

mod shared_catalog;
#[expect(dead_code, reason = "these tests use part of the process harness")]
mod support;

/// Windows of one second, no record cache (every read reaches its shard), rate limits in
/// process.
fn load_envs(databases: &Databases) -> Vec<(String, String)> {
    let mut envs = databases.envs(false);
    envs.push(("SHARDGATE_STORAGE__LOAD__WINDOW".to_owned(), "1s".to_owned()));
    envs.push(("SHARDGATE_CACHE__ENABLED".to_owned(), "false".to_owned()));
    envs
}

/// Stops `process` as an operator would (SIGTERM) and waits, for at most 15 s, until it has
/// exited (its entry in `/proc` is gone or a zombie).
async fn terminate(process: Process) {
    let pid = process.pid();
    let sent = std::process::Command::new("kill").args(["-TERM", &pid.to_string()]).status().expect("kill runs");
    assert!(sent.success(), "SIGTERM to {pid}");
    let exited = || match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => true,
    };
    let deadline = Instant::now() + Duration::from_secs(15);
    while !exited() {
        assert!(Instant::now() < deadline, "the process did not stop within 15 s of SIGTERM:\n{}", process.log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn get(client: &reqwest::Client, url: String, token: &str) -> Value {
    let response = client.get(&url).bearer_auth(token).send().await.unwrap();
    assert_eq!(response.status(), 200, "GET {url}");
    response.json().await.unwrap()
}

async fn put(client: &reqwest::Client, url: String, token: &str, value: &Value) {
    let response = client.put(&url).bearer_auth(token).json(value).send().await.unwrap();
    assert!(response.status().is_success(), "PUT {url}: {}", response.status());
}

fn record(base: &str, tenant: &str, key: &str) -> String {
    format!("{base}/v1/tenants/{tenant}/collections/c/records/{key}")
}

/// `GET /v1/admin/load?{query}` through `process`, asked every 200 ms until `done` holds, for at
/// most 20 s.
async fn load_until(
    client: &reqwest::Client,
    process: &Process,
    admin: &str,
    query: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let load = get(client, format!("{}/v1/admin/load?{query}", process.base), admin).await;
        if done(&load) {
            return load;
        }
        assert!(Instant::now() < deadline, "the load picture did not show the traffic within 20 s: {load:#}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn request_count(load: &Value, what: &str) -> u64 {
    load["fleet"]["request"][what].as_u64().unwrap()
}

fn shard<'a>(load: &'a Value, id: &str) -> &'a Value {
    load["shards"].as_array().unwrap().iter().find(|s| s["shard"] == id).unwrap_or_else(|| panic!("shard {id}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_load_adds_up_on_the_right_shard_vshard_and_tenant() {
    let databases = Databases::create("sglp", 2).await;
    let envs = load_envs(&databases);
    let client = reqwest::Client::new();
    let ([a, b], _dirs) = serve_two(&client, envs).await;
    let admin = token(None, "admin");

    // Tenant A is placed by its vshard; tenant B is pinned to the other shard.
    a.create_tenant(&client, &admin, "ta").await;
    let route = get(&client, format!("{}/v1/admin/route?tenant=ta", a.base), &admin).await;
    let (a_shard, a_vshard) = (route["shard"].as_str().unwrap().to_owned(), route["vshard"].as_u64().unwrap());
    let b_shard = if a_shard == "s0" { "s1" } else { "s0" };
    let created = client
        .post(format!("{}/v1/admin/tenants", a.base))
        .bearer_auth(&admin)
        .json(&json!({"id": "tb", "shard": b_shard}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    // Both instances know both tenants before the traffic starts.
    for process in [&a, &b] {
        get(&client, format!("{}/v1/admin/tenants/tb", process.base), &admin).await;
    }

    let (ta, tb) = (token(Some("ta"), "read write"), token(Some("tb"), "read write"));
    let value = json!({"n": 12345});
    let value_bytes = serde_json::to_string(&value).unwrap().len() as u64;
    let instances = [&a, &b];
    let (n, m, k, b_writes) = (30u64, 20u64, 15u64, 5u64);
    for i in 0..n {
        put(&client, record(&instances[i as usize % 2].base, "ta", &format!("k{}", i % 10)), &ta, &value).await;
    }
    for i in 0..b_writes {
        put(&client, record(&instances[i as usize % 2].base, "tb", &format!("k{i}")), &tb, &value).await;
    }
    for i in 0..m {
        get(&client, record(&instances[i as usize % 2].base, "ta", &format!("k{}", i % 10)), &ta).await;
    }
    for i in 0..k {
        get(&client, record(&instances[i as usize % 2].base, "tb", &format!("k{}", i % b_writes)), &tb).await;
    }

    let load = load_until(&client, &a, &admin, "window=2m&top=100", |load| {
        request_count(load, "reads") >= m + k && request_count(load, "writes") >= n + b_writes
    })
    .await;
    assert_eq!(load["instances"], 2, "both instances stored windows");
    assert_eq!(request_count(&load, "reads"), m + k, "{load:#}");
    assert_eq!(request_count(&load, "writes"), n + b_writes);
    assert_eq!(request_count(&load, "rows_written"), n + b_writes);
    assert_eq!(request_count(&load, "bytes_written"), (n + b_writes) * value_bytes);
    assert_eq!(request_count(&load, "bytes_read"), (m + k) * value_bytes);
    for (id, reads, writes) in [(a_shard.as_str(), m, n), (b_shard, k, b_writes)] {
        let request = &shard(&load, id)["request"];
        assert_eq!((request["reads"].as_u64(), request["writes"].as_u64()), (Some(reads), Some(writes)), "shard {id}");
        assert!(request["statement_ms"].as_f64().unwrap() > 0.0);
    }
    let vshards = load["vshards"].as_array().unwrap();
    let on_vshard = vshards.iter().find(|v| v["vshard"] == a_vshard && v["shard"] == a_shard.as_str()).unwrap();
    assert_eq!((on_vshard["reads"].as_u64(), on_vshard["writes"].as_u64()), (Some(m), Some(n)));
    assert_eq!(on_vshard["owner"], a_shard.as_str());
    let pinned = vshards.iter().find(|v| v["vshard"].is_null() && v["shard"] == b_shard).unwrap();
    assert_eq!((pinned["reads"].as_u64(), pinned["writes"].as_u64()), (Some(k), Some(b_writes)));
    assert_eq!(vshards.len(), 2, "no other vshard had request load: {vshards:#?}");
    let tenants = load["tenants"].as_array().unwrap();
    assert_eq!(tenants.len(), 2);
    // Each tenant with its home vshard (the heat map's row its load is in): none for the pinned one.
    let homes = [("ta", a_shard.as_str(), json!(a_vshard), m, n), ("tb", b_shard, Value::Null, k, b_writes)];
    for (id, home, vshard, reads, writes) in homes {
        let tenant = tenants.iter().find(|t| t["tenant"] == id).unwrap();
        assert_eq!((tenant["reads"].as_u64(), tenant["writes"].as_u64()), (Some(reads), Some(writes)), "tenant {id}");
        assert_eq!(tenant["shards"], json!([home]));
        assert_eq!(tenant["vshard"], vshard, "tenant {id}");
        assert_eq!(tenant["overcount_ms"], 0.0);
    }

    // The heat map: one column over the same span, the writes in A's vshard's row, B's reads in
    // the row of its shard's load that no vshard placed.
    let heat = |metric: &str| {
        let url = format!("{}/v1/admin/load/heatmap?metric={metric}&since=2m&step=2m", b.base);
        get(&client, url, &admin)
    };
    let writes = heat("writes_per_s").await;
    assert_eq!(writes["columns"].as_array().unwrap().len(), 1);
    let rows = writes["rows"].as_array().unwrap();
    assert_eq!(rows[a_vshard as usize]["vshard"], a_vshard);
    assert_eq!(rows[a_vshard as usize]["shard"], a_shard.as_str());
    let per_column = |row: &Value| row["values"][0].as_f64().unwrap() * writes["step_s"].as_f64().unwrap();
    assert!((per_column(&rows[a_vshard as usize]) - n as f64).abs() < 1e-6, "{:?}", rows[a_vshard as usize]);
    let b_row = rows.iter().find(|r| r["vshard"].is_null() && r["shard"] == b_shard).unwrap();
    assert!((per_column(b_row) - b_writes as f64).abs() < 1e-6);
    let others: f64 = rows.iter().map(per_column).sum::<f64>() - n as f64 - b_writes as f64;
    assert!(others.abs() < 1e-6, "writes appear in no other row");
    let reads = heat("reads_per_s").await;
    let reads_rows = reads["rows"].as_array().unwrap();
    assert!((per_column(&reads_rows[a_vshard as usize]) - m as f64).abs() < 1e-6);
    let b_row = reads_rows.iter().find(|r| r["vshard"].is_null() && r["shard"] == b_shard).unwrap();
    assert!((per_column(b_row) - k as f64).abs() < 1e-6);

    // `/metrics` has this instance's share, per shard.
    let metrics = client.get(format!("{}/metrics", a.base)).send().await.unwrap().text().await.unwrap();
    assert!(
        metrics.contains(&format!(
            "shard_load_statements_total{{shard=\"{a_shard}\",work=\"request\",kind=\"write\"}} 15"
        )),
        "instance a wrote 15 of tenant A's records: {}",
        metrics.lines().filter(|l| l.starts_with("shard_load_statements")).collect::<Vec<_>>().join("\n")
    );

    drop(a);
    drop(b);
    databases.drop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_windows_survive_a_restart_and_kill_9_loses_at_most_the_open_one() {
    let databases = Databases::create("sglk", 1).await;
    let envs = load_envs(&databases);
    let dir = tempfile::tempdir().unwrap();
    let client = reqwest::Client::new();
    let admin = token(None, "admin");
    let first = Process::start(&["serve"], dir.path(), envs.clone());
    first.wait_until_ok(&client, "/readyz").await;
    first.create_tenant(&client, &admin, "tk").await;
    let tk = token(Some("tk"), "read write");
    let value = json!({"v": 1});

    // Writes at a steady pace for three seconds, each with the moment it was acknowledged.
    let mut acknowledged = Vec::new();
    let started = Instant::now();
    let mut i = 0;
    while started.elapsed() < Duration::from_secs(3) {
        put(&client, record(&first.base, "tk", &format!("k{}", i % 20)), &tk, &value).await;
        acknowledged.push(Instant::now());
        i += 1;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // `kill -9`: nothing is flushed on the way out.
    drop(first);
    let killed = Instant::now();
    let total = acknowledged.len() as u64;
    // The window open at the kill (one second) and the one that may have closed but not been
    // flushed yet (its flush runs 250 ms after its end) are all that may be lost.
    let at_risk =
        acknowledged.iter().filter(|t| killed.duration_since(**t) < Duration::from_millis(2300)).count() as u64;

    let second = Process::start(&["serve"], dir.path(), envs);
    second.wait_until_ok(&client, "/readyz").await;
    let load = get(&client, format!("{}/v1/admin/load?window=2m", second.base), &admin).await;
    let stored = request_count(&load, "writes");
    assert!(stored <= total, "never more than was written: {stored} > {total}");
    assert!(
        stored >= total - at_risk,
        "kill -9 lost more than the open window: {stored} stored of {total}, at most {at_risk} at risk"
    );
    assert!(stored > 0, "windows closed before the kill were stored");
    assert_eq!(load["instances"], 1, "the killed instance's windows, read by a new one");

    // A restart (SIGTERM) stores the open window too: then the new instance counts exactly.
    for j in 0..25 {
        put(&client, record(&second.base, "tk", &format!("r{j}")), &tk, &value).await;
    }
    terminate(second).await;
    let third = Process::start(&["serve"], dir.path(), load_envs(&databases));
    third.wait_until_ok(&client, "/readyz").await;
    let load =
        load_until(&client, &third, &admin, "window=2m", |load| request_count(load, "writes") >= stored + 25).await;
    assert_eq!(request_count(&load, "writes"), stored + 25, "a clean stop stores every window");
    assert_eq!(load["instances"], 2);
    drop(third);
    databases.drop_all().await;
}

/// `GET /v1/admin/balancer` through `process`.
async fn balancer(client: &reqwest::Client, process: &Process, admin: &str) -> Value {
    get(client, format!("{}/v1/admin/balancer?limit=200", process.base), admin).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_instance_runs_the_balancer_and_another_takes_it_over_when_it_is_killed() {
    let databases = Databases::create("sgbl", 2).await;
    let mut envs = load_envs(&databases);
    envs.push(("SHARDGATE_BALANCER__MODE".to_owned(), "propose".to_owned()));
    envs.push(("SHARDGATE_BALANCER__INTERVAL".to_owned(), "1s".to_owned()));
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let client = reqwest::Client::new();
    let admin = token(None, "admin");
    let processes =
        [Process::start(&["serve"], dirs[0].path(), envs.clone()), Process::start(&["serve"], dirs[1].path(), envs)];
    for process in &processes {
        process.wait_until_ok(&client, "/readyz").await;
    }
    processes[0].create_tenant(&client, &admin, "acme").await;
    let names: Vec<String> = {
        let mut names = Vec::new();
        for process in &processes {
            names.push(balancer(&client, process, &admin).await["this_instance"].as_str().unwrap().to_owned());
        }
        names
    };

    // One of them runs it, and only that one.
    let deadline = Instant::now() + Duration::from_secs(20);
    let runner = loop {
        let status = balancer(&client, &processes[1], &admin).await;
        if status["runs"].as_array().unwrap().len() >= 3 {
            break status;
        }
        assert!(Instant::now() < deadline, "no runs within 20 s: {status:#}\n{}", processes[0].log());
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let holder = runner["runner"].as_str().expect("a runner holds the lease").to_owned();
    let held = names.iter().position(|n| *n == holder).expect("one of the two");
    let runs = runner["runs"].as_array().unwrap();
    assert!(runs.iter().all(|r| r["instance"] == holder.as_str()), "only the lease holder ran: {runs:#?}");
    assert!(runs.iter().all(|r| r["outcome"] == "balanced"), "an idle fleet is balanced: {runs:#?}");
    let other = &processes[1 - held];
    let refused =
        client.post(format!("{}/v1/admin/balancer/runs", other.base)).bearer_auth(&admin).send().await.unwrap();
    assert_eq!(refused.status(), 409);
    let problem: Value = refused.json().await.unwrap();
    assert_eq!(problem["code"], "balancer_elsewhere", "{problem}");

    // Killed, the lease (three intervals) runs out and the other instance runs it.
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &processes[held].pid().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let killed_at = Instant::now();
    let deadline = killed_at + Duration::from_secs(15);
    let taken = loop {
        let status = balancer(&client, other, &admin).await;
        if status["runs"][0]["instance"] == names[1 - held].as_str() {
            break status;
        }
        assert!(Instant::now() < deadline, "not taken over within 15 s: {status:#}\n{}", other.log());
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(taken["runner"], names[1 - held].as_str(), "{taken:#}");
    println!("taken over {:?} after the kill", killed_at.elapsed());

    drop(processes);
    databases.drop_all().await;
}
