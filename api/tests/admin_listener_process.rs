//! `shardgate serve` as an operator runs it with `SHARDGATE_ADMIN__LISTEN` (issue 50 item 5):
//! the admin plane on its own port, the public one answering 404 for it, and `shardgate admin`
//! pointed at the admin listener with `--url`.

use std::process::{Command, Output};

use support::{Process, finish, shardgate};

#[expect(dead_code, reason = "this test uses part of the process harness")]
mod support;

/// `shardgate admin <args>` with the token and none of the test's own `SHARDGATE_URL`.
fn cli(args: &[&str], token: &str) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_shardgate"));
    command.arg("admin").args(args).env_remove("SHARDGATE_URL").env("SHARDGATE_TOKEN", token);
    finish(&mut command)
}

#[tokio::test]
async fn the_admin_cli_reaches_the_admin_listener_its_url_names_and_the_public_one_hides_it() {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let admin = format!("http://127.0.0.1:{port}");
    let process = Process::start(&["serve"], dir.path(), [("SHARDGATE_ADMIN__LISTEN", format!("127.0.0.1:{port}"))]);
    let client = reqwest::Client::new();
    process.wait_until_ok(&client, "/readyz").await;
    let minted = finish(&mut shardgate(&["token", "--admin"], dir.path()));
    assert!(minted.status.success(), "{}", String::from_utf8_lossy(&minted.stderr));
    let token = String::from_utf8(minted.stdout).unwrap().trim().to_owned();

    let created = cli(&["--url", &admin, "tenants", "create", "acme"], &token);
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    let listed = cli(&["--url", &admin, "tenants"], &token);
    assert!(String::from_utf8_lossy(&listed.stdout).contains("acme"), "{listed:?}");

    // The public listener knows no admin API: the CLI pointed there says so, exit 3.
    let public = cli(&["--url", &process.base, "tenants"], &token);
    assert_eq!(public.status.code(), Some(3), "{}", String::from_utf8_lossy(&public.stderr));
    assert!(String::from_utf8_lossy(&public.stderr).contains("(code not_found, HTTP 404)"), "{public:?}");
    for path in ["/metrics", "/console"] {
        let hidden = client.get(format!("{}{path}", process.base)).send().await.unwrap();
        assert_eq!(hidden.status(), 404, "{path} on the public listener");
        let served = client.get(format!("{admin}{path}")).send().await.unwrap();
        assert_eq!(served.status(), 200, "{path} on the admin listener");
    }
}
