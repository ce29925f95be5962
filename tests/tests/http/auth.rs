//! Bearer tokens: what is refused (401 with a `Bearer` challenge) and which issuers are trusted.
//! One engine is enough here: authentication happens before any database is touched.

use std::io::ErrorKind;
use std::net::TcpListener;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::header::WWW_AUTHENTICATE;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shardgate_gatekeeper::{IssuerConfig, KeyAlgorithm};
use shardgate_tests::{
    Backend, ISSUER, SECRET, TestApp, expect_json, expect_problem, expect_unauthorized, issuer_named, records_path,
};

const KEYS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/keys");
/// The audience the `partner` issuer's tokens must name.
const AUDIENCE: &str = "shardgate-api";

fn key_file(name: &str) -> String {
    std::fs::read_to_string(format!("{KEYS}/{name}")).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

fn claims(issuer: &str, tenant: &str, exp: u64) -> Value {
    json!({"iss": issuer, "sub": "someone", "tenant": tenant, "scope": "read write", "iat": now(), "exp": exp})
}

/// `claims` of `issuer` for tenant `acme`, valid for ten minutes, with `changes` merged in (a
/// `null` removes the claim).
fn claims_with(issuer: &str, changes: Value) -> Value {
    let mut claims = claims(issuer, "acme", now() + 600);
    for (name, value) in changes.as_object().unwrap() {
        if value.is_null() {
            claims.as_object_mut().unwrap().remove(name);
        } else {
            claims[name] = value.clone();
        }
    }
    claims
}

fn sign(algorithm: Algorithm, key: &EncodingKey, claims: &Value) -> String {
    jsonwebtoken::encode(&Header::new(algorithm), claims, key).expect("sign")
}

fn hs256(secret: &[u8], claims: &Value) -> String {
    sign(Algorithm::HS256, &EncodingKey::from_secret(secret), claims)
}

fn private_key(algorithm: Algorithm, file: &str) -> EncodingKey {
    let pem = key_file(file);
    match algorithm {
        Algorithm::RS256 | Algorithm::RS384 | Algorithm::RS512 | Algorithm::PS256 => {
            EncodingKey::from_rsa_pem(pem.as_bytes())
        }
        Algorithm::ES256 => EncodingKey::from_ec_pem(pem.as_bytes()),
        Algorithm::EdDSA => EncodingKey::from_ed_pem(pem.as_bytes()),
        other => panic!("no fixture for {other:?}"),
    }
    .expect("fixture key parses")
}

/// Signs `claims` under `header` with the private key in the fixture `file`.
fn sign_as(header: Header, file: &str, claims: &Value) -> String {
    jsonwebtoken::encode(&header, claims, &private_key(header.alg, file)).expect("sign")
}

fn with_kid(algorithm: Algorithm, kid: &str) -> Header {
    Header { kid: Some(kid.into()), ..Header::new(algorithm) }
}

fn unsigned(header: &Value, claims: &Value) -> String {
    format!("{}.{}.", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()))
}

/// The public JWK `kid` of the fixture key set `file`.
fn fixture_jwk(file: &str, kid: &str) -> Jwk {
    let set: Value = serde_json::from_str(&key_file(file)).unwrap();
    let key = set["keys"].as_array().unwrap().iter().find(|key| key["kid"] == kid).unwrap();
    serde_json::from_value(key.clone()).unwrap()
}

/// An app with tenant `acme` trusting the HS256 test issuer plus
/// - `rs` (RS256, PEM text), `es` (ES256, PEM file) and `ed` (EdDSA, PEM text), each with the
///   `algorithm` shorthand;
/// - `jwks`: RS256, ES256 and EdDSA keys from `jwks.json` (kids `rs-1`, `es-1`, `ed-1`);
/// - `partner`: the `-other` keys from `jwks-other.json` (kids `rs-other`, `es-other`,
///   `ed-other`), its tokens for the audience [`AUDIENCE`] only.
async fn app_with_every_issuer() -> TestApp {
    let app = TestApp::spawn_with(Backend::Sqlite, |config| {
        let every = vec![KeyAlgorithm::RS256, KeyAlgorithm::ES256, KeyAlgorithm::EdDSA];
        config.auth.issuers.extend([
            IssuerConfig {
                algorithm: Some(KeyAlgorithm::RS256),
                public_key_pem: Some(key_file("rs256-public.pem")),
                ..issuer_named("rs")
            },
            IssuerConfig {
                algorithm: Some(KeyAlgorithm::ES256),
                public_key_file: Some(format!("{KEYS}/es256-public.pem").into()),
                ..issuer_named("es")
            },
            IssuerConfig {
                algorithm: Some(KeyAlgorithm::EdDSA),
                public_key_pem: Some(key_file("ed25519-public.pem")),
                ..issuer_named("ed")
            },
            IssuerConfig {
                algorithms: every.clone(),
                jwks_file: Some(format!("{KEYS}/jwks.json").into()),
                ..issuer_named("jwks")
            },
            IssuerConfig {
                algorithms: every,
                audience: vec![AUDIENCE.into()],
                allow_any_audience: false,
                jwks_file: Some(format!("{KEYS}/jwks-other.json").into()),
                ..issuer_named("partner")
            },
        ]);
    })
    .await;
    app.create_tenant("acme").await;
    app
}

async fn list_with(app: &TestApp, authorization: Option<&str>) -> reqwest::Response {
    let mut request = app.client.get(app.url(&records_path("acme", "docs")));
    if let Some(value) = authorization {
        request = request.header("authorization", value);
    }
    request.send().await.unwrap()
}

/// Lists `acme/docs` with `token` as the bearer token.
async fn list_as(app: &TestApp, token: &str) -> reqwest::Response {
    list_with(app, Some(&format!("Bearer {token}"))).await
}

/// Asserts 401 with a `Bearer error="invalid_token"` challenge and the problem code
/// `invalid_token`.
async fn expect_invalid_token(response: reqwest::Response, what: &str) {
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{what}");
    let challenge = response.headers().get(WWW_AUTHENTICATE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    assert!(
        challenge.contains("Bearer") && challenge.contains(r#"error="invalid_token""#),
        "{what}: WWW-Authenticate is {challenge:?}"
    );
    assert_eq!(expect_unauthorized(response).await, "invalid_token", "{what}");
}

#[tokio::test]
async fn requests_without_a_bearer_token_are_challenged() {
    let app = app_with_every_issuer().await;
    assert_eq!(expect_unauthorized(list_with(&app, None).await).await, "missing_token");
    // Not a bearer scheme at all.
    expect_unauthorized(list_with(&app, Some("Basic dXNlcjpwYXNz")).await).await;
    // An admin token (no tenant claim) is no tenant's token.
    let admin = app.admin_token();
    let response = list_as(&app, &admin).await;
    assert!(response.status().is_client_error(), "{}", response.status());
}

enum Outcome {
    Accepted,
    Refused,
}

/// Every way a token may be forged, misdirected, stale or broken, next to the tokens that must
/// still work. Keys come from the configuration only: headers that carry or point at keys
/// (`jwk`, `jku`, `x5u`, `x5c`) change nothing, and nothing is fetched (a listener stands in for
/// a key server and must see no connection).
#[tokio::test]
async fn only_tokens_signed_by_a_trusted_key_for_this_gateway_are_accepted() {
    use Outcome::{Accepted, Refused};

    let app = app_with_every_issuer().await;
    let key_server = TcpListener::bind("127.0.0.1:0").unwrap();
    key_server.set_nonblocking(true).unwrap();
    let key_server_url = format!("http://{}/jwks", key_server.local_addr().unwrap());

    let valid = claims(ISSUER, "acme", now() + 600);
    let good = hs256(SECRET.as_bytes(), &valid);
    let (head, rest) = good.split_once('.').unwrap();
    let (payload, signature) = rest.split_once('.').unwrap();
    let tampered = format!(
        "{head}.{}.{signature}",
        URL_SAFE_NO_PAD.encode(claims_with(ISSUER, json!({"tenant": "bob"})).to_string())
    );
    let oversized = hs256(SECRET.as_bytes(), &claims_with(ISSUER, json!({"padding": "x".repeat(9 * 1024)})));
    let rs_public_pem = key_file("rs256-public.pem");
    let jwks = claims_with("jwks", json!({}));
    let partner = claims_with("partner", json!({"aud": AUDIENCE}));
    let attacker = fixture_jwk("jwks-other.json", "rs-other");
    let embedded = |kid: Option<&str>, issuer: &str| {
        let header =
            Header { kid: kid.map(str::to_owned), jwk: Some(attacker.clone()), ..Header::new(Algorithm::RS256) };
        sign_as(header, "rs256-other-private.pem", &claims_with(issuer, json!({})))
    };
    let pointing = |header: Header| sign_as(header, "rs256-other-private.pem", &jwks);
    // The keys most cases sign with: the jwks issuer's `rs-1` and the partner's `es-other`.
    let rs_1 = |claims: &Value| sign_as(with_kid(Algorithm::RS256, "rs-1"), "rs256-private.pem", claims);
    let es_other = |claims: &Value| sign_as(with_kid(Algorithm::ES256, "es-other"), "es256-other-private.pem", claims);

    let cases: Vec<(&str, Outcome, String)> = vec![
        // Controls.
        ("the HS256 test issuer", Accepted, good.clone()),
        ("jwks, kid rs-1", Accepted, rs_1(&jwks)),
        ("jwks, kid es-1", Accepted, sign_as(with_kid(Algorithm::ES256, "es-1"), "es256-private.pem", &jwks)),
        ("jwks, kid ed-1", Accepted, sign_as(with_kid(Algorithm::EdDSA, "ed-1"), "ed25519-private.pem", &jwks)),
        (
            "jwks, no kid, the set's one ES256 key",
            Accepted,
            sign_as(Header::new(Algorithm::ES256), "es256-private.pem", &jwks),
        ),
        ("nbf 10 s ahead, within the leeway", Accepted, rs_1(&claims_with("jwks", json!({"nbf": now() + 10})))),
        ("iat 10 s ahead, within the leeway", Accepted, rs_1(&claims_with("jwks", json!({"iat": now() + 10})))),
        ("partner, its audience", Accepted, es_other(&partner)),
        (
            "partner, its audience among others",
            Accepted,
            sign_as(
                with_kid(Algorithm::EdDSA, "ed-other"),
                "ed25519-other-private.pem",
                &claims_with("partner", json!({"aud": ["elsewhere", AUDIENCE]})),
            ),
        ),
        // Malformed.
        ("garbage", Refused, "garbage".into()),
        ("three garbage parts", Refused, "a.b.c".into()),
        ("bad base64", Refused, "!!!.@@@.###".into()),
        ("header not JSON", Refused, format!("{}.{payload}.{signature}", URL_SAFE_NO_PAD.encode("not json"))),
        ("two parts", Refused, format!("{head}.{payload}")),
        ("four parts", Refused, format!("{good}.{signature}")),
        ("over 8 KiB, though properly signed", Refused, oversized),
        // Unsigned, or signed with an algorithm the issuer does not allow.
        ("alg none", Refused, unsigned(&json!({"alg": "none", "typ": "JWT"}), &valid)),
        ("alg None", Refused, unsigned(&json!({"alg": "None", "typ": "JWT"}), &valid)),
        (
            "HS384 with the right secret",
            Refused,
            sign(Algorithm::HS384, &EncodingKey::from_secret(SECRET.as_bytes()), &valid),
        ),
        (
            "RS512 with the right key and kid",
            Refused,
            sign_as(with_kid(Algorithm::RS512, "rs-1"), "rs256-private.pem", &jwks),
        ),
        (
            "PS256 with the right key",
            Refused,
            sign_as(Header::new(Algorithm::PS256), "rs256-private.pem", &claims_with("rs", json!({}))),
        ),
        (
            "RS256 token for the ES256 issuer",
            Refused,
            sign_as(Header::new(Algorithm::RS256), "rs256-private.pem", &claims_with("es", json!({}))),
        ),
        // Algorithm confusion: the RSA public key (PEM bytes) as an HMAC secret.
        (
            "HS256 keyed with the rs issuer's public key",
            Refused,
            hs256(rs_public_pem.as_bytes(), &claims_with("rs", json!({}))),
        ),
        (
            "HS256 keyed with the jwks issuer's public key, kid rs-1",
            Refused,
            jsonwebtoken::encode(
                &with_kid(Algorithm::HS256, "rs-1"),
                &jwks,
                &EncodingKey::from_secret(rs_public_pem.as_bytes()),
            )
            .unwrap(),
        ),
        ("HS256 keyed with the jwks issuer's public key, no kid", Refused, hs256(rs_public_pem.as_bytes(), &jwks)),
        // Key selection.
        ("unknown kid", Refused, sign_as(with_kid(Algorithm::RS256, "rs-2"), "rs256-private.pem", &jwks)),
        (
            "kid rs-1, but an ES256 token",
            Refused,
            sign_as(with_kid(Algorithm::ES256, "rs-1"), "es256-private.pem", &jwks),
        ),
        (
            "kid of the partner's set, for jwks",
            Refused,
            sign_as(with_kid(Algorithm::RS256, "rs-other"), "rs256-other-private.pem", &jwks),
        ),
        ("kid of the jwks set, for partner", Refused, rs_1(&partner)),
        (
            "kid rs-1, another key",
            Refused,
            sign_as(with_kid(Algorithm::RS256, "rs-1"), "rs256-other-private.pem", &jwks),
        ),
        ("wrong secret", Refused, hs256(b"another-secret-that-is-long-enough-1234", &valid)),
        ("tampered payload", Refused, tampered),
        // Keys carried in or pointed at by the header.
        ("embedded jwk, no kid", Refused, embedded(None, "jwks")),
        ("embedded jwk, kid rs-1", Refused, embedded(Some("rs-1"), "jwks")),
        ("embedded jwk, PEM issuer", Refused, embedded(None, "rs")),
        (
            "jku at port 1, kid not in the set",
            Refused,
            pointing(Header { jku: Some("http://127.0.0.1:1/jwks".into()), ..with_kid(Algorithm::RS256, "attacker") }),
        ),
        (
            "jku at a listening key server, kid not in the set",
            Refused,
            pointing(Header { jku: Some(key_server_url.clone()), ..with_kid(Algorithm::RS256, "attacker") }),
        ),
        (
            "jku at a listening key server, no kid",
            Refused,
            pointing(Header { jku: Some(key_server_url.clone()), ..Header::new(Algorithm::RS256) }),
        ),
        (
            "x5u at a listening key server",
            Refused,
            pointing(Header { x5u: Some(key_server_url.clone()), ..with_kid(Algorithm::RS256, "attacker") }),
        ),
        (
            "x5c chain",
            Refused,
            pointing(Header { x5c: Some(vec!["MIIBIjAN".into()]), ..Header::new(Algorithm::RS256) }),
        ),
        // Claims.
        ("wrong iss", Refused, rs_1(&claims_with("stranger", json!({})))),
        ("no iss", Refused, rs_1(&claims_with("jwks", json!({"iss": null})))),
        ("wrong aud", Refused, es_other(&claims_with("partner", json!({"aud": "elsewhere"})))),
        ("no aud where one is required", Refused, es_other(&claims_with("partner", json!({})))),
        ("expired an hour ago", Refused, rs_1(&claims_with("jwks", json!({"exp": now() - 3600})))),
        ("expired an hour ago, HS256", Refused, hs256(SECRET.as_bytes(), &claims(ISSUER, "acme", now() - 3600))),
        ("nbf an hour ahead", Refused, rs_1(&claims_with("jwks", json!({"nbf": now() + 3600})))),
        ("no exp", Refused, hs256(SECRET.as_bytes(), &claims_with(ISSUER, json!({"exp": null})))),
    ];

    for (what, outcome, token) in cases {
        let response = list_as(&app, &token).await;
        match outcome {
            Accepted => {
                assert_eq!(response.status(), StatusCode::OK, "{what}");
                expect_json(response, StatusCode::OK).await;
            }
            Refused => expect_invalid_token(response, what).await,
        }
    }
    assert!(
        matches!(key_server.accept(), Err(e) if e.kind() == ErrorKind::WouldBlock),
        "a key URL in a token header was fetched"
    );
}

async fn asymmetric_issuer_story(issuer: &str, algorithm: Algorithm, private: &str, other_private: &str) {
    let app = app_with_every_issuer().await;
    let token = sign(algorithm, &private_key(algorithm, private), &claims(issuer, "acme", now() + 600));
    let listing = expect_json(list_as(&app, &token).await, StatusCode::OK).await;
    assert_eq!(listing["items"], json!([]));
    let response = app
        .client
        .put(app.url("/v1/tenants/acme/collections/docs/records/k"))
        .bearer_auth(&token)
        .json(&json!({"by": issuer}))
        .send()
        .await
        .unwrap();
    expect_json(response, StatusCode::CREATED).await;

    // The same claims signed by a key the issuer does not have.
    let forged = sign(algorithm, &private_key(algorithm, other_private), &claims(issuer, "acme", now() + 600));
    let response = list_as(&app, &forged).await;
    assert_eq!(expect_unauthorized(response).await, "invalid_token");
    // Expired, though properly signed.
    let expired = sign(algorithm, &private_key(algorithm, private), &claims(issuer, "acme", now() - 3600));
    let response = list_as(&app, &expired).await;
    assert_eq!(expect_unauthorized(response).await, "invalid_token");
    // Its tokens are still bound to their tenant.
    let for_bob = sign(algorithm, &private_key(algorithm, private), &claims(issuer, "bob", now() + 600));
    let response = list_as(&app, &for_bob).await;
    expect_problem(response, StatusCode::NOT_FOUND, "tenant_not_found").await;
    // An admin token of this issuer (scope admin, no tenant) is an admin.
    let mut admin_claims = claims(issuer, "acme", now() + 600);
    admin_claims.as_object_mut().unwrap().remove("tenant");
    admin_claims["scope"] = json!("admin");
    let admin = sign(algorithm, &private_key(algorithm, private), &admin_claims);
    let response = app.send(Method::GET, "/v1/admin/shard-map", Some(&admin), None, &[]).await;
    expect_json(response, StatusCode::OK).await;
}

#[tokio::test]
async fn an_rs256_issuer_accepts_its_tokens_and_rejects_other_keys() {
    asymmetric_issuer_story("rs", Algorithm::RS256, "rs256-private.pem", "rs256-other-private.pem").await;
}

#[tokio::test]
async fn an_es256_issuer_with_a_key_file_accepts_its_tokens_and_rejects_other_keys() {
    asymmetric_issuer_story("es", Algorithm::ES256, "es256-private.pem", "es256-other-private.pem").await;
}

#[tokio::test]
async fn an_eddsa_issuer_accepts_its_tokens_and_rejects_other_keys() {
    asymmetric_issuer_story("ed", Algorithm::EdDSA, "ed25519-private.pem", "ed25519-other-private.pem").await;
}

#[tokio::test]
async fn a_token_expired_within_the_leeway_is_still_accepted() {
    let app = app_with_every_issuer().await;
    let token = hs256(SECRET.as_bytes(), &claims(ISSUER, "acme", now() - 5));
    expect_json(list_as(&app, &token).await, StatusCode::OK).await;
}
