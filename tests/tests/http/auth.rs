//! Bearer tokens: what is refused (401 with a `Bearer` challenge) and which issuers are trusted.
//! One engine is enough here: authentication happens before any database is touched.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shardgate_gatekeeper::{IssuerConfig, KeyAlgorithm};
use shardgate_tests::{
    Backend, ISSUER, SECRET, TestApp, expect_json, expect_problem, expect_unauthorized, records_path,
};

const KEYS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/keys");

fn key_file(name: &str) -> String {
    std::fs::read_to_string(format!("{KEYS}/{name}")).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

fn claims(issuer: &str, tenant: &str, exp: u64) -> Value {
    json!({"iss": issuer, "sub": "someone", "tenant": tenant, "scope": "read write", "iat": now(), "exp": exp})
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
        Algorithm::RS256 => EncodingKey::from_rsa_pem(pem.as_bytes()),
        Algorithm::ES256 => EncodingKey::from_ec_pem(pem.as_bytes()),
        Algorithm::EdDSA => EncodingKey::from_ed_pem(pem.as_bytes()),
        other => panic!("no fixture for {other:?}"),
    }
    .expect("fixture key parses")
}

fn unsigned(header: &Value, claims: &Value) -> String {
    format!("{}.{}.", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()))
}

/// An app trusting the HS256 test issuer plus `rs` (RS256, PEM text), `es` (ES256, PEM file) and
/// `ed` (EdDSA, PEM text), with tenant `acme`.
async fn app_with_every_issuer() -> TestApp {
    let app = TestApp::spawn_with(Backend::Sqlite, |config| {
        let public = |issuer: &str, algorithm, pem: Option<String>, file: Option<std::path::PathBuf>| IssuerConfig {
            issuer: issuer.into(),
            algorithm,
            audience: vec![],
            secret: None,
            public_key_pem: pem,
            public_key_file: file,
        };
        config.auth.issuers.push(public("rs", KeyAlgorithm::RS256, Some(key_file("rs256-public.pem")), None));
        config.auth.issuers.push(public(
            "es",
            KeyAlgorithm::ES256,
            None,
            Some(format!("{KEYS}/es256-public.pem").into()),
        ));
        config.auth.issuers.push(public("ed", KeyAlgorithm::EdDSA, Some(key_file("ed25519-public.pem")), None));
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

#[tokio::test]
async fn requests_without_a_valid_token_are_challenged() {
    let app = app_with_every_issuer().await;
    let valid = claims(ISSUER, "acme", now() + 600);

    // The control: a good token works.
    expect_json(list_with(&app, Some(&format!("Bearer {}", hs256(SECRET.as_bytes(), &valid)))).await, StatusCode::OK)
        .await;

    assert_eq!(expect_unauthorized(list_with(&app, None).await).await, "missing_token");

    let good = hs256(SECRET.as_bytes(), &valid);
    let (head, rest) = good.split_once('.').unwrap();
    let (_, signature) = rest.split_once('.').unwrap();
    let mut other_tenant = valid.clone();
    other_tenant["tenant"] = json!("bob");
    let tampered = format!("{head}.{}.{signature}", URL_SAFE_NO_PAD.encode(other_tenant.to_string()));
    let mut no_exp = valid.clone();
    no_exp.as_object_mut().unwrap().remove("exp");
    let rs_public_pem = key_file("rs256-public.pem");

    let rejected: Vec<(&str, String)> = vec![
        ("garbage", "Bearer garbage".into()),
        ("three garbage parts", "Bearer a.b.c".into()),
        ("wrong secret", format!("Bearer {}", hs256(b"another-secret-that-is-long-enough-1234", &valid))),
        ("expired an hour ago", format!("Bearer {}", hs256(SECRET.as_bytes(), &claims(ISSUER, "acme", now() - 3600)))),
        ("no exp", format!("Bearer {}", hs256(SECRET.as_bytes(), &no_exp))),
        ("unknown issuer", format!("Bearer {}", hs256(SECRET.as_bytes(), &claims("stranger", "acme", now() + 600)))),
        ("alg none", format!("Bearer {}", unsigned(&json!({"alg": "none", "typ": "JWT"}), &valid))),
        ("alg None", format!("Bearer {}", unsigned(&json!({"alg": "None", "typ": "JWT"}), &valid))),
        ("tampered payload", format!("Bearer {tampered}")),
        (
            "algorithm confusion: HS256 keyed with the RS256 public key",
            format!("Bearer {}", hs256(rs_public_pem.as_bytes(), &claims("rs", "acme", now() + 600))),
        ),
        (
            "RS256 token for the ES256 issuer",
            format!(
                "Bearer {}",
                sign(
                    Algorithm::RS256,
                    &private_key(Algorithm::RS256, "rs256-private.pem"),
                    &claims("es", "acme", now() + 600)
                )
            ),
        ),
    ];
    for (what, authorization) in &rejected {
        let response = list_with(&app, Some(authorization)).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{what}");
        assert_eq!(expect_unauthorized(response).await, "invalid_token", "{what}");
    }
    // Not a bearer scheme at all.
    expect_unauthorized(list_with(&app, Some("Basic dXNlcjpwYXNz")).await).await;
    // An admin token (no tenant claim) is no tenant's token.
    let admin = app.admin_token();
    let response = list_with(&app, Some(&format!("Bearer {admin}"))).await;
    assert!(response.status().is_client_error(), "{}", response.status());
}

async fn asymmetric_issuer_story(issuer: &str, algorithm: Algorithm, private: &str, other_private: &str) {
    let app = app_with_every_issuer().await;
    let token = sign(algorithm, &private_key(algorithm, private), &claims(issuer, "acme", now() + 600));
    let listing = expect_json(list_with(&app, Some(&format!("Bearer {token}"))).await, StatusCode::OK).await;
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
    let response = list_with(&app, Some(&format!("Bearer {forged}"))).await;
    assert_eq!(expect_unauthorized(response).await, "invalid_token");
    // Expired, though properly signed.
    let expired = sign(algorithm, &private_key(algorithm, private), &claims(issuer, "acme", now() - 3600));
    let response = list_with(&app, Some(&format!("Bearer {expired}"))).await;
    assert_eq!(expect_unauthorized(response).await, "invalid_token");
    // Its tokens are still bound to their tenant.
    let for_bob = sign(algorithm, &private_key(algorithm, private), &claims(issuer, "bob", now() + 600));
    let response = list_with(&app, Some(&format!("Bearer {for_bob}"))).await;
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
    expect_json(list_with(&app, Some(&format!("Bearer {token}"))).await, StatusCode::OK).await;
}
