//! Key sets fetched from an identity provider (`jwks_url`, OIDC discovery), against a key server
//! the test runs on loopback ([`KeyServer`]): rotation followed without a restart (on schedule
//! and on an unknown `kid`), a flood of forged `kid`s costing the provider one fetch, the last
//! good set kept while the provider is down until its maximum age, discovery, HTTPS with a CA
//! of the test's own.

use std::time::Duration;

use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use reqwest::StatusCode;
use serde_json::{Value, json};
use shardgate_gatekeeper::{IssuerConfig, KeyAlgorithm, Scope};
use shardgate_tests::key_server::{DISCOVERY_PATH, JWKS_PATH};
use shardgate_tests::{
    Backend, KeyServer, TestApp, TestCa, eventually, expect_any_problem, issuer_named, metric, records_path,
};

const KEYS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/keys");
/// The issuer whose keys the key server serves.
const IDP: &str = "https://idp.test";

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{KEYS}/{name}")).unwrap()
}

/// The JWK `kid` of the fixture set `file`.
fn jwk(file: &str, kid: &str) -> Value {
    let set: Value = serde_json::from_str(&fixture(file)).unwrap();
    set["keys"].as_array().unwrap().iter().find(|key| key["kid"] == kid).unwrap().clone()
}

/// The key set before the rotation: `rs-1`.
fn old_set() -> Value {
    json!({ "keys": [jwk("jwks.json", "rs-1")] })
}

/// The key set after the rotation: `rs-other` only (`rs-1` removed).
fn new_set() -> Value {
    json!({ "keys": [jwk("jwks-other.json", "rs-other")] })
}

/// A token of `issuer` for tenant `acme` (read), RS256 with `kid`, signed with the private key
/// of fixture `private_pem`; extra header fields from `header`.
fn token_with(issuer: &str, kid: &str, private_pem: &str, header: Header) -> String {
    let claims = json!({
        "iss": issuer, "sub": "idp-user", "tenant": "acme", "scope": "read",
        "iat": now(), "exp": now() + 600,
    });
    let header = Header { kid: Some(kid.into()), alg: Algorithm::RS256, ..header };
    encode(&header, &claims, &EncodingKey::from_rsa_pem(fixture(private_pem).as_bytes()).unwrap()).unwrap()
}

/// A token signed with the key before the rotation.
fn old_token(issuer: &str) -> String {
    token_with(issuer, "rs-1", "rs256-private.pem", Header::default())
}

/// A token signed with the key after the rotation.
fn new_token(issuer: &str) -> String {
    token_with(issuer, "rs-other", "rs256-other-private.pem", Header::default())
}

fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

/// An issuer [`IDP`] whose keys come from `server`'s `jwks_url`; `tune` sets its intervals.
fn fetched_issuer(server: &KeyServer, tune: impl FnOnce(&mut IssuerConfig)) -> IssuerConfig {
    let mut issuer =
        IssuerConfig { algorithm: Some(KeyAlgorithm::RS256), jwks_url: Some(server.jwks_url()), ..issuer_named(IDP) };
    tune(&mut issuer);
    issuer
}

/// An app with tenant `acme` that also trusts `issuer`; rate limits off (floods are counted at
/// the key server, not refused with 429).
async fn app_trusting(issuer: IssuerConfig) -> TestApp {
    let app = TestApp::spawn_with(Backend::Sqlite, |config| {
        config.auth.issuers.push(issuer);
        config.rate_limits.enabled = false;
    })
    .await;
    app.create_tenant("acme").await;
    app
}

/// The status of listing `acme/docs` with `token`, and the problem code of a refusal.
async fn list_as(app: &TestApp, token: &str) -> (StatusCode, Option<String>) {
    let response = app.client.get(app.url(&records_path("acme", "docs"))).bearer_auth(token).send().await.unwrap();
    let status = response.status();
    if status.is_success() {
        return (status, None);
    }
    let problem = expect_any_problem(response, status).await;
    (status, problem["code"].as_str().map(str::to_owned))
}

async fn readyz(app: &TestApp) -> (StatusCode, Value) {
    let response = app.client.get(app.url("/readyz")).send().await.unwrap();
    (response.status(), response.json().await.unwrap())
}

fn accepted() -> (StatusCode, Option<String>) {
    (StatusCode::OK, None)
}

fn refused(code: &str) -> (StatusCode, Option<String>) {
    (StatusCode::UNAUTHORIZED, Some(code.to_owned()))
}

#[tokio::test]
async fn a_key_rotation_is_followed_on_the_schedule_the_provider_asks_for() {
    let server = KeyServer::start(&old_set()).await;
    server.set_cache_control("public, max-age=1");
    let app = app_trusting(fetched_issuer(&server, |issuer| {
        issuer.jwks_refresh_min_secs = 1;
        // No refetch for unknown kids within the test: only the schedule can bring the new key.
        issuer.jwks_unknown_kid_refetch_secs = 3600;
    }))
    .await;
    assert_eq!(list_as(&app, &old_token(IDP)).await, accepted());
    // A token naming a kid the set lacks uses up the one refetch the interval allows.
    assert_eq!(list_as(&app, &new_token(IDP)).await, refused("invalid_token"));

    server.set_jwks(&new_set());
    let followed = eventually(Duration::from_secs(10), async || {
        (list_as(&app, &new_token(IDP)).await == accepted()).then_some(())
    })
    .await;
    assert!(followed.is_some(), "the new key was not fetched on schedule ({} fetches)", server.requests(JWKS_PATH));
    assert_eq!(list_as(&app, &old_token(IDP)).await, refused("invalid_token"), "the removed key verifies nothing");
    assert!(server.requests(JWKS_PATH) >= 3, "fetched at start-up, then on schedule");
}

#[tokio::test]
async fn a_token_naming_a_new_kid_makes_the_set_be_fetched_once() {
    let server = KeyServer::start(&old_set()).await;
    let app = app_trusting(fetched_issuer(&server, |issuer| issuer.jwks_unknown_kid_refetch_secs = 3600)).await;
    assert_eq!(list_as(&app, &old_token(IDP)).await, accepted());
    assert_eq!(server.requests(JWKS_PATH), 1, "one fetch at start-up");

    server.set_jwks(&new_set());
    assert_eq!(list_as(&app, &new_token(IDP)).await, accepted(), "the unknown kid was fetched at once");
    assert_eq!(server.requests(JWKS_PATH), 2);
    assert_eq!(list_as(&app, &new_token(IDP)).await, accepted());
    assert_eq!(list_as(&app, &old_token(IDP)).await, refused("invalid_token"), "the removed key verifies nothing");
    assert_eq!(server.requests(JWKS_PATH), 2, "no more fetches within the interval");
}

#[tokio::test]
async fn a_flood_of_forged_kids_costs_the_provider_one_fetch() {
    let server = KeyServer::start(&old_set()).await;
    let app = app_trusting(fetched_issuer(&server, |issuer| issuer.jwks_unknown_kid_refetch_secs = 3600)).await;
    assert_eq!(server.requests(JWKS_PATH), 1);

    // Each forged token names its own kid and points `jku` at an attacker's key set on the key
    // server; none of them may make the gateway fetch anything but the configured URL.
    let attacker = format!("{}/attacker-jwks", server.base());
    let forged: Vec<String> = (0..200)
        .map(|i| {
            let header = Header { jku: Some(attacker.clone()), ..Header::default() };
            token_with(IDP, &format!("forged-{i}"), "rs256-other-private.pem", header)
        })
        .collect();
    let outcomes = futures::future::join_all(forged.iter().map(|token| list_as(&app, token))).await;
    assert!(outcomes.iter().all(|outcome| *outcome == refused("invalid_token")), "{outcomes:?}");
    assert_eq!(server.requests(JWKS_PATH), 2, "200 forged kids, one refetch (single flight, rate-limited)");
    assert_eq!(server.requests("/attacker-jwks"), 0, "a token's jku is never fetched");

    let fetches = metric(&app.client, &app.base_url, "shardgate_key_set_fetches_total").await;
    assert_eq!(fetches, 2.0);
    assert_eq!(list_as(&app, &old_token(IDP)).await, accepted(), "the real key still works");
}

#[tokio::test]
async fn the_last_set_outlives_the_provider_until_its_maximum_age() {
    let mut server = KeyServer::start(&old_set()).await;
    let app = app_trusting(fetched_issuer(&server, |issuer| {
        issuer.jwks_refresh_min_secs = 1;
        issuer.jwks_refresh_max_secs = 1;
        issuer.jwks_max_age_secs = 4;
        issuer.jwks_unknown_kid_refetch_secs = 1;
    }))
    .await;
    let token = old_token(IDP);
    assert_eq!(list_as(&app, &token).await, accepted());

    server.stop().await;
    assert_eq!(list_as(&app, &token).await, accepted(), "the last good set stays in use");
    let failing = eventually(Duration::from_secs(5), async || {
        let (_, body) = readyz(&app).await;
        body["key_sets"][IDP]["last_error"].as_str().map(str::to_owned)
    })
    .await;
    assert!(failing.is_some_and(|error| error.contains("cannot fetch")), "/readyz names the failure");
    assert!(metric(&app.client, &app.base_url, "shardgate_key_set_last_fetch_failed").await >= 1.0);

    let expired = eventually(Duration::from_secs(15), async || {
        (list_as(&app, &token).await == refused("key_set_expired")).then_some(())
    })
    .await;
    assert!(expired.is_some(), "tokens are refused once the set is older than jwks_max_age_secs");
    let (status, body) = readyz(&app).await;
    assert_eq!(status, StatusCode::OK, "an expired set does not take the instance out: {body}");
    assert_eq!(body["key_sets"][IDP]["status"], "expired", "{body}");
    assert!(body["key_sets"][IDP]["age_secs"].as_u64().is_some_and(|age| age >= 4), "{body}");
    assert_eq!(metric(&app.client, &app.base_url, "shardgate_key_set_usable").await, 0.0);

    server.resume().await;
    let back =
        eventually(Duration::from_secs(15), async || (list_as(&app, &token).await == accepted()).then_some(())).await;
    assert!(back.is_some(), "tokens work again once the provider answers, without a restart");
    let (_, body) = readyz(&app).await;
    assert_eq!(body["key_sets"][IDP]["status"], "up", "{body}");
}

#[tokio::test]
async fn an_instance_started_while_the_provider_is_down_is_not_ready_until_it_has_keys() {
    let mut server = KeyServer::start(&old_set()).await;
    server.stop().await;
    let app = app_trusting(fetched_issuer(&server, |issuer| {
        issuer.jwks_refresh_min_secs = 1;
        issuer.jwks_unknown_kid_refetch_secs = 1;
    }))
    .await;
    let (status, body) = readyz(&app).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["key_sets"][IDP]["status"], "unavailable", "{body}");
    assert_eq!(list_as(&app, &old_token(IDP)).await, refused("key_set_unavailable"));
    // The other issuers' tokens work meanwhile.
    assert_eq!(
        app.client.get(app.url("/v1/admin/tenants")).bearer_auth(app.admin_token()).send().await.unwrap().status(),
        200
    );

    server.resume().await;
    let ready =
        eventually(Duration::from_secs(8), async || (readyz(&app).await.0 == StatusCode::OK).then_some(())).await;
    assert!(ready.is_some(), "ready once the first set is fetched");
    assert_eq!(list_as(&app, &old_token(IDP)).await, accepted());
}

/// The standalone gatekeeper verifies tokens itself, so it waits for the key sets as the gateway
/// does: not ready (503, saying which issuer) while one has none, its key-set metrics exported,
/// and ready with the issuer's tokens passing once the provider answers.
#[tokio::test]
async fn a_standalone_gatekeeper_is_not_ready_until_it_has_the_key_sets() {
    let mut server = KeyServer::start(&old_set()).await;
    server.stop().await;
    let issuer = fetched_issuer(&server, |issuer| {
        issuer.jwks_refresh_min_secs = 1;
        issuer.jwks_unknown_kid_refetch_secs = 1;
    });
    let app = TestApp::spawn_via_gatekeeper_with(Backend::Sqlite, |config| {
        config.auth.issuers.push(issuer);
        config.rate_limits.enabled = false;
    })
    .await;
    app.create_tenant("acme").await;
    let (status, body) = readyz(&app).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["status"], "not_ready", "{body}");
    assert_eq!(body["key_sets"][IDP]["status"], "unavailable", "{body}");
    assert_eq!(list_as(&app, &old_token(IDP)).await, refused("key_set_unavailable"));
    let metrics = app.client.get(app.url("/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("key_set_last_fetch_failed"), "the gatekeeper exports its key sets' state");

    server.resume().await;
    let ready =
        eventually(Duration::from_secs(8), async || (readyz(&app).await.0 == StatusCode::OK).then_some(())).await;
    assert!(ready.is_some(), "ready once the first set is fetched");
    assert_eq!(readyz(&app).await.1["key_sets"][IDP]["status"], "up");
    assert_eq!(list_as(&app, &old_token(IDP)).await, accepted());
}

#[tokio::test]
async fn discovery_finds_the_key_set_on_the_issuer_s_host_only() {
    let server = KeyServer::start(&old_set()).await;
    let issuer = server.base();
    server.set_discovery(&json!({ "issuer": issuer, "jwks_uri": server.jwks_url() }));
    let discovering = |issuer: &str| IssuerConfig {
        algorithm: Some(KeyAlgorithm::RS256),
        discovery: true,
        jwks_unknown_kid_refetch_secs: 3600,
        ..issuer_named(issuer)
    };
    let app = app_trusting(discovering(&issuer)).await;
    assert_eq!(list_as(&app, &old_token(&issuer)).await, accepted());
    assert_eq!((server.requests(DISCOVERY_PATH), server.requests(JWKS_PATH)), (1, 1));
    let (_, body) = readyz(&app).await;
    assert_eq!(body["key_sets"][issuer.as_str()]["url"], format!("{issuer}{DISCOVERY_PATH}"), "{body}");
    drop(app);

    // The same document, but its jwks_uri names another host (`localhost`, not `127.0.0.1`).
    let other_host = format!("http://localhost:{}{JWKS_PATH}", server.addr.port());
    server.set_discovery(&json!({ "issuer": issuer, "jwks_uri": other_host }));
    let app = app_trusting(discovering(&issuer)).await;
    assert_eq!(list_as(&app, &old_token(&issuer)).await, refused("key_set_unavailable"));
    let (status, body) = readyz(&app).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    let error = body["key_sets"][issuer.as_str()]["last_error"].as_str().unwrap_or_default();
    assert!(error.contains("not on the issuer's host"), "{body}");
    assert_eq!(server.requests(JWKS_PATH), 1, "the other host's key set was never fetched");
}

#[tokio::test]
async fn keys_come_over_https_verified_with_the_configured_ca() {
    let ca = TestCa::new("key server CA");
    let issued = ca.issue("idp", &["localhost", "127.0.0.1"]);
    let server = KeyServer::start_tls(&old_set(), &issued).await;
    assert!(server.jwks_url().starts_with("https://"));
    let app = app_trusting(fetched_issuer(&server, |issuer| issuer.jwks_ca_file = Some(ca.cert_path.clone()))).await;
    assert_eq!(list_as(&app, &old_token(IDP)).await, accepted());
    drop(app);

    // Without the CA, the built-in roots do not know the server's certificate.
    let app = app_trusting(fetched_issuer(&server, |_| {})).await;
    assert_eq!(list_as(&app, &old_token(IDP)).await, refused("key_set_unavailable"));
    let (_, body) = readyz(&app).await;
    let error = body["key_sets"][IDP]["last_error"].as_str().unwrap_or_default().to_owned();
    assert!(error.to_lowercase().contains("certificate"), "{error}");
}

#[tokio::test]
async fn a_refused_or_oversized_set_leaves_the_last_good_one_in_use() {
    let server = KeyServer::start(&old_set()).await;
    let app = app_trusting(fetched_issuer(&server, |issuer| {
        issuer.jwks_refresh_min_secs = 1;
        issuer.jwks_refresh_max_secs = 1;
    }))
    .await;
    let token = old_token(IDP);
    assert_eq!(list_as(&app, &token).await, accepted());
    let last_error = async || {
        let (_, body) = readyz(&app).await;
        body["key_sets"][IDP]["last_error"].as_str().map(str::to_owned)
    };

    // A symmetric key is refused as it is in a jwks_file: the whole set is not taken.
    let oct = json!({"kty": "oct", "kid": "hs-1", "k": "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA"});
    server.set_jwks(&json!({ "keys": [jwk("jwks-other.json", "rs-other"), oct] }));
    let refused_set =
        eventually(Duration::from_secs(5), async || last_error().await.filter(|e| e.contains("oct"))).await;
    assert!(refused_set.is_some_and(|error| error.contains("key set refused")), "/readyz says why");
    assert_eq!(list_as(&app, &token).await, accepted(), "the last good set stays in use");
    assert_eq!(list_as(&app, &new_token(IDP)).await, refused("invalid_token"), "nothing of the refused set is used");

    // A body over 1 MiB is not read to its end.
    let padding = "x".repeat(2 * 1024 * 1024);
    server.set_jwks(&json!({ "keys": [jwk("jwks.json", "rs-1")], "padding": padding }));
    let too_large =
        eventually(Duration::from_secs(5), async || last_error().await.filter(|e| e.contains("more than"))).await;
    assert!(too_large.is_some(), "a key set over 1 MiB fails the fetch");
    assert_eq!(list_as(&app, &token).await, accepted());
    let text = app.client.get(app.url("/metrics")).send().await.unwrap().text().await.unwrap();
    for outcome in ["invalid_set", "too_large"] {
        let line = format!(r#"shardgate_key_set_fetches_total{{issuer="{IDP}",outcome="{outcome}"}} "#);
        assert!(text.lines().any(|l| l.starts_with(&line) && !l.ends_with(" 0")), "{line} in:\n{text}");
    }
}

#[tokio::test]
async fn a_token_not_due_a_fetch_is_refused_at_once_while_the_provider_hangs() {
    let server = KeyServer::start(&old_set()).await;
    let app = app_trusting(fetched_issuer(&server, |issuer| {
        issuer.jwks_unknown_kid_refetch_secs = 3600;
        // A hung provider holds a fetch this long: far beyond the bound the test gives a refusal.
        issuer.jwks_fetch_timeout_secs = 60;
    }))
    .await;
    assert_eq!(list_as(&app, &old_token(IDP)).await, accepted());
    assert_eq!(server.requests(JWKS_PATH), 1, "one fetch at start-up");

    // The provider hangs; a token with a new kid is due a fetch and waits for it.
    server.stall();
    let waiting = {
        let (client, url, token) = (app.client.clone(), app.url(&records_path("acme", "docs")), new_token(IDP));
        tokio::spawn(async move { client.get(url).bearer_auth(token).send().await.unwrap().status() })
    };
    let under_way = eventually(Duration::from_secs(10), async || (server.requests(JWKS_PATH) == 2).then_some(())).await;
    assert!(under_way.is_some(), "the due fetch reached the provider");

    // Another unknown kid within the interval is due no fetch: it is answered while the provider
    // still hangs (the fetch under way could hold it for a minute), without asking again.
    let forged = token_with(IDP, "forged", "rs256-other-private.pem", Header::default());
    let answered = tokio::time::timeout(Duration::from_secs(20), list_as(&app, &forged)).await;
    assert_eq!(answered.ok(), Some(refused("invalid_token")), "a token not due a fetch waited for the hung one");
    assert_eq!(server.requests(JWKS_PATH), 2, "no second fetch");

    // The provider answers again, with the new key: the waiting token gets it.
    server.set_jwks(&new_set());
    server.go_on();
    let status = tokio::time::timeout(Duration::from_secs(20), waiting).await.expect("answered").unwrap();
    assert_eq!(status, StatusCode::OK, "the token that was due the fetch is verified with its result");
}

#[tokio::test]
async fn an_operator_refresh_stops_a_removed_key_at_once() {
    let server = KeyServer::start(&old_set()).await;
    let app = app_trusting(fetched_issuer(&server, |issuer| {
        // Neither the schedule nor an unknown kid fetches again within the test.
        issuer.jwks_refresh_min_secs = 3600;
        issuer.jwks_unknown_kid_refetch_secs = 3600;
    }))
    .await;
    assert_eq!(list_as(&app, &old_token(IDP)).await, accepted());

    // The provider drops the compromised key; the set in use still has it.
    server.set_jwks(&new_set());
    assert_eq!(list_as(&app, &old_token(IDP)).await, accepted(), "the removed key works until a fetch");
    let before = server.requests(JWKS_PATH);

    // Without an admin token: refused.
    let token = app.token("acme", &[Scope::Read, Scope::Write]);
    let response = app.client.post(app.url("/v1/admin/key-sets/refresh")).bearer_auth(&token).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    assert_eq!(server.requests(JWKS_PATH), before, "a refused call fetches nothing");

    let response = app.admin(reqwest::Method::POST, "/v1/admin/key-sets/refresh", None).await;
    assert_eq!(response.status(), StatusCode::OK);
    let body: Value = response.json().await.unwrap();
    let sets = body["key_sets"].as_array().unwrap();
    assert_eq!(sets.len(), 1, "{body}");
    assert_eq!(sets[0]["issuer"], IDP);
    assert_eq!(sets[0]["refreshed"], true, "{body}");
    assert_eq!(server.requests(JWKS_PATH), before + 1, "fetched at once");
    assert_eq!(list_as(&app, &old_token(IDP)).await, refused("invalid_token"), "the removed key stops at once");
    assert_eq!(list_as(&app, &new_token(IDP)).await, accepted());

    // A refresh while the provider is down says so and keeps the last good set.
    let mut server = server;
    server.stop().await;
    let body: Value = app.admin(reqwest::Method::POST, "/v1/admin/key-sets/refresh", None).await.json().await.unwrap();
    assert_eq!(body["key_sets"][0]["refreshed"], false, "{body}");
    assert!(body["key_sets"][0]["error"].as_str().is_some_and(|e| !e.is_empty()), "{body}");
    assert_eq!(list_as(&app, &new_token(IDP)).await, accepted(), "the last good set stays in use");

    // Both refreshes are in the audit log.
    let audit: Value =
        app.admin(reqwest::Method::GET, "/v1/admin/audit?action=key_sets.refresh", None).await.json().await.unwrap();
    assert_eq!(audit["items"].as_array().unwrap().len(), 2, "{audit}");
}
