//! What a newcomer meets in the first hour with the `shardgate` binary: a second server on one
//! data directory, `shardgate token` run from the wrong directory, a misspelt configuration.
//! Each is refused at once, saying what happened and what to do.

use std::process::Output;
use std::time::Duration;

use support::{Process, finish, shardgate};

#[expect(dead_code, reason = "these tests use part of the process harness")]
mod support;

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn free_listen() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    format!("127.0.0.1:{port}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_server_on_one_data_directory_stops_and_names_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let client = reqwest::Client::new();
    let first = Process::start(&["serve"], dir.path(), [("SHARDGATE_BLESS", "1")]);
    first.wait_until_ok(&client, "/readyz").await;

    let second = finish(shardgate(&["serve"], dir.path()).args(["--listen", &free_listen()]));
    assert!(!second.status.success(), "the second server must not start");
    let message = stderr(&second);
    assert!(message.contains("in use by another shardgate"), "{message}");
    assert!(message.contains(&format!("pid {}", first.pid())), "names the holder: {message}");
    assert!(message.contains(&dir.path().display().to_string()), "names the directory: {message}");

    // `kill -9` leaves no stale lock: the operating system releases it with the process.
    let pid = first.pid();
    drop(first);
    let third = Process::start(&["serve"], dir.path(), [("SHARDGATE_BLESS", "1")]);
    third.wait_until_ok(&client, "/readyz").await;
    assert_ne!(third.pid(), pid);
    // It serves the directory's data with the directory's secret.
    let minted = finish(&mut shardgate(&["token", "--admin"], dir.path()));
    third.create_tenant(&client, String::from_utf8(minted.stdout).unwrap().trim(), "acme").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_never_creates_a_secret_and_refuses_what_no_server_accepts() {
    let elsewhere = tempfile::tempdir().unwrap();
    let minted = finish(&mut shardgate(&["token", "--admin"], elsewhere.path()));
    assert!(!minted.status.success(), "no token without the server's secret");
    let message = stderr(&minted);
    assert!(message.contains(&elsewhere.path().join("jwt-secret").display().to_string()), "where it looked: {message}");
    assert!(message.contains("--data-dir"), "how to point it at the server's directory: {message}");
    assert!(std::fs::read_dir(elsewhere.path()).unwrap().next().is_none(), "nothing was created");

    let dir = tempfile::tempdir().unwrap();
    let client = reqwest::Client::new();
    let server = Process::start(&["serve"], dir.path(), [("SHARDGATE_LOG__FILTER", "warn,shardgate_api=debug")]);
    server.wait_until_ok(&client, "/readyz").await;
    let no_one = finish(&mut shardgate(&["token"], dir.path()));
    assert!(!no_one.status.success());
    assert!(stderr(&no_one).contains("--admin") && stderr(&no_one).contains("--tenant"), "{}", stderr(&no_one));
    let at_once = finish(&mut shardgate(&["token", "--admin", "--ttl", "0s"], dir.path()));
    assert!(!at_once.status.success());
    assert!(stderr(&at_once).contains("--ttl must be more than 0"), "{}", stderr(&at_once));
    // A tenant's token is never a platform admin: no such token is minted.
    let tenant_admin = finish(&mut shardgate(&["token", "--tenant", "acme", "--admin"], dir.path()));
    assert!(!tenant_admin.status.success());
    assert!(stderr(&tenant_admin).contains("cannot be used with"), "{}", stderr(&tenant_admin));
    let admin_scope = finish(&mut shardgate(&["token", "--tenant", "acme", "--scopes", "read,admin"], dir.path()));
    assert!(!admin_scope.status.success());
    assert!(stderr(&admin_scope).contains("--admin"), "{}", stderr(&admin_scope));

    // A token the server refuses: logged at debug with the reason, never the token.
    let minted = finish(&mut shardgate(&["token", "--admin"], dir.path()));
    assert!(minted.status.success(), "{}", stderr(&minted));
    let token = String::from_utf8(minted.stdout).unwrap().trim().to_owned();
    let tampered = format!("{}x", &token[..token.len() - 1]);
    let response =
        client.get(format!("{}/v1/admin/shard-map", server.base)).bearer_auth(&tampered).send().await.unwrap();
    assert_eq!(response.status(), 401);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !server.log().contains("authentication failed") {
        assert!(tokio::time::Instant::now() < deadline, "the refusal is logged: {}", server.log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let log = server.log();
    assert!(log.contains("reason="), "with its reason: {log}");
    assert!(!log.contains(&tampered) && !log.contains(&token[token.len() - 20..]), "never the token: {log}");
}

#[test]
fn configuration_errors_name_the_file_as_given_and_the_nearest_key() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("shardgate.toml"), "[storage]\nembeded_shards = 2\n").unwrap();
    let run = |args: &[&str], envs: &[(&str, &str)]| {
        finish(shardgate(args, dir.path()).current_dir(dir.path()).envs(envs.iter().copied()))
    };
    let misspelt = run(&["token", "--admin", "--config", "shardgate.toml"], &[]);
    let message = stderr(&misspelt);
    assert!(!misspelt.status.success());
    assert!(message.contains("configuration file shardgate.toml"), "the path as given: {message}");
    assert!(message.contains("did you mean `storage.embedded_shards`?"), "{message}");
    assert!(!message.contains("default.") && !message.contains("``"), "{message}");

    let missing = run(&["token", "--admin", "--config", "nowhere.toml"], &[]);
    assert!(stderr(&missing).contains("configuration file nowhere.toml does not exist"), "{}", stderr(&missing));

    let bad_value = run(&["token", "--admin"], &[("SHARDGATE_LISTEN", "everywhere")]);
    let message = stderr(&bad_value);
    assert!(message.contains("environment variable SHARDGATE_LISTEN"), "{message}");
    assert!(!message.contains("\"LISTEN\"") && !message.contains("default."), "{message}");
}
