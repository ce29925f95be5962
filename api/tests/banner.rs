//! The start-up banner says what works for the configuration it runs: `shardgate token` only
//! when an issuer has a local secret that command can sign with, and where fetched keys come from.

use std::time::Duration;

use support::Process;

#[expect(dead_code, reason = "the banner stories use part of the process harness")]
mod support;

/// The banner of a started `process`: its output once `/healthz` answers (the banner is
/// printed before the server serves) and its lines on tokens (the last) have been read.
async fn banner_of(process: &Process) -> String {
    process.wait_until_ok(&reqwest::Client::new(), "/healthz").await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    // The output is read by a thread of its own: give it the moment it may lag.
    while !process.log().contains("token") && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    process.log()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jwks_only_configuration_prints_no_token_command() {
    let dir = tempfile::tempdir().unwrap();
    // The provider is down (nothing listens on the port): the server starts anyway.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let jwks_url = format!("http://127.0.0.1:{port}/jwks");
    let config = dir.path().join("shardgate.toml");
    std::fs::write(
        &config,
        format!(
            "[[auth.issuers]]\nissuer = \"https://idp.example\"\nalgorithm = \"RS256\"\n\
             audience = [\"shardgate\"]\njwks_url = \"{jwks_url}\"\n"
        ),
    )
    .unwrap();
    let server = Process::start(&["serve", "--config", config.to_str().unwrap()], dir.path(), [] as [(&str, &str); 0]);
    let banner = banner_of(&server).await;
    assert!(banner.contains("shardgate listening on"), "{banner}");
    assert!(banner.contains("/console (sign in with an admin token)"), "the console is named:\n{banner}");
    assert!(!banner.contains("shardgate token"), "no local secret, so no `shardgate token` hint:\n{banner}");
    assert!(
        banner
            .contains(&format!("tokens of https://idp.example: signed by its identity provider, keys from {jwks_url}")),
        "{banner}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedded_default_prints_the_token_commands() {
    let dir = tempfile::tempdir().unwrap();
    let server = Process::start(&["serve"], dir.path(), [] as [(&str, &str); 0]);
    let banner = banner_of(&server).await;
    assert!(banner.contains("admin token: shardgate token --admin"), "{banner}");
    assert!(!banner.contains("keys from"), "{banner}");
}
