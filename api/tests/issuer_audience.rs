//! An issuer without an audience does not start: a shared identity provider signs other
//! services' tokens with the same keys, and one carrying a `tenant` claim would pass. The
//! configuration must name the audiences (`audience`) or say explicitly that any will do
//! (`allow_any_audience = true`). The embedded default's own issuer, whose secret the gateway
//! generated for itself, is exempt: the README's `shardgate serve` and `shardgate token` work as
//! before. Each story runs the real binary.

use std::path::Path;
use std::time::Duration;

use support::{Process, finish_within, shardgate};

#[expect(dead_code, reason = "these stories use part of the process harness")]
mod support;

const ISSUER: &str = "https://id.example.com/";
const SECRET: &str = "issuer-audience-test-secret-0123456789abcdef";

/// A configuration file trusting the HS256 issuer [`ISSUER`] with `extra` TOML lines.
fn config_file(dir: &Path, extra: &str) -> String {
    let path = dir.join("shardgate.toml");
    std::fs::write(
        &path,
        format!("[[auth.issuers]]\nissuer = \"{ISSUER}\"\nalgorithm = \"HS256\"\nsecret = \"{SECRET}\"\n{extra}"),
    )
    .unwrap();
    path.to_str().unwrap().to_owned()
}

/// An admin token of [`ISSUER`] signed by hand, with `aud` when given.
fn admin_token(aud: Option<&str>) -> String {
    use jsonwebtoken::{EncodingKey, Header, encode};
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let mut claims =
        serde_json::json!({"iss": ISSUER, "sub": "audience-test", "scope": "admin", "iat": now, "exp": now + 600});
    if let Some(aud) = aud {
        claims["aud"] = aud.into();
    }
    encode(&Header::default(), &claims, &EncodingKey::from_secret(SECRET.as_bytes())).unwrap()
}

/// `shardgate token --admin` for the configuration `config` (or the embedded default's).
fn minted_admin_token(dir: &Path, config: Option<&str>) -> String {
    let mut args = vec!["token", "--admin"];
    if let Some(config) = config {
        args.extend(["--config", config]);
    }
    let output = finish_within(&mut shardgate(&args, dir), Duration::from_secs(20));
    assert!(output.status.success(), "shardgate token: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

async fn tenants_status(process: &Process, token: &str) -> u16 {
    let client = reqwest::Client::new();
    let response = client.get(format!("{}/v1/admin/tenants", process.base)).bearer_auth(token).send().await.unwrap();
    response.status().as_u16()
}

#[test]
fn an_issuer_without_an_audience_is_refused_at_start_naming_the_issuer_and_the_keys() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(dir.path(), "");
    let mut serve = shardgate(&["serve", "--config", &config, "--listen", "127.0.0.1:0"], dir.path());
    // Before the rule, this served until the bound killed it.
    let output = finish_within(&mut serve, Duration::from_secs(20));
    assert!(!output.status.success(), "an issuer without an audience started");
    let said = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    for part in [ISSUER, "`audience`", "`allow_any_audience = true`"] {
        assert!(said.contains(part), "the refusal names {part}: {said}");
    }

    // The standalone gatekeeper reads the same issuers and refuses the same way.
    let mut gatekeeper = shardgate(
        &["gatekeeper", "--config", &config, "--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:9"],
        dir.path(),
    );
    gatekeeper.env("SHARDGATE_INTERNAL__SECRET", "issuer-audience-internal-secret-0123456789");
    let output = finish_within(&mut gatekeeper, Duration::from_secs(20));
    assert!(!output.status.success(), "a gatekeeper trusting an issuer without an audience started");
    let said = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(said.contains(ISSUER) && said.contains("`allow_any_audience = true`"), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issuer_with_an_audience_starts_and_takes_only_tokens_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(dir.path(), "audience = [\"shardgate-api\"]\n");
    let server = Process::start(&["serve", "--config", &config], dir.path(), [] as [(&str, &str); 0]);
    server.wait_until_ok(&reqwest::Client::new(), "/readyz").await;
    assert_eq!(tenants_status(&server, &admin_token(Some("shardgate-api"))).await, 200);
    assert_eq!(tenants_status(&server, &admin_token(Some("another-service"))).await, 401);
    assert_eq!(tenants_status(&server, &admin_token(None)).await, 401);
    // `shardgate token` mints for the issuer's (first) audience, so its tokens pass.
    assert_eq!(tenants_status(&server, &minted_admin_token(dir.path(), Some(&config))).await, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issuer_that_allows_any_audience_explicitly_starts() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(dir.path(), "allow_any_audience = true\n");
    let server = Process::start(&["serve", "--config", &config], dir.path(), [] as [(&str, &str); 0]);
    server.wait_until_ok(&reqwest::Client::new(), "/readyz").await;
    assert_eq!(tenants_status(&server, &admin_token(None)).await, 200);
    assert_eq!(tenants_status(&server, &admin_token(Some("anything"))).await, 200);
    assert_eq!(tenants_status(&server, &minted_admin_token(dir.path(), Some(&config))).await, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedded_defaults_own_issuer_needs_no_audience() {
    let dir = tempfile::tempdir().unwrap();
    let server = Process::start(&["serve"], dir.path(), [] as [(&str, &str); 0]);
    server.wait_until_ok(&reqwest::Client::new(), "/readyz").await;
    assert_eq!(tenants_status(&server, &minted_admin_token(dir.path(), None)).await, 200);
}
