//! `openapi/openapi.json` must be exactly what the code generates. Regenerate it with
//! `cargo run -p shardgate-api -- openapi > openapi/openapi.json` (or run this test with
//! `SHARDGATE_BLESS=1`).

use std::path::PathBuf;

#[test]
fn committed_openapi_document_matches_the_code() {
    let generated = shardgate_api::openapi_document().to_pretty_json().expect("document serialises");
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../openapi/openapi.json");
    if std::env::var_os("SHARDGATE_BLESS").is_some() {
        std::fs::write(&path, format!("{generated}\n")).expect("write openapi.json");
    }
    let committed = std::fs::read_to_string(&path).expect("openapi/openapi.json exists");
    assert!(
        committed.trim_end() == generated.trim_end(),
        "openapi/openapi.json is out of date: run `cargo run -p shardgate-api -- openapi > openapi/openapi.json`"
    );
}

#[test]
fn every_operation_documents_its_errors_as_problem_json() {
    let doc: serde_json::Value = serde_json::from_str(&shardgate_api::openapi_document().to_json().unwrap()).unwrap();
    let mut checked = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let responses = op["responses"].as_object().unwrap();
            assert!(responses.keys().any(|s| s.starts_with('2')), "{method} {path} has no success response");
            for (status, response) in responses {
                if method == "head" {
                    assert!(
                        response.get("content").is_none(),
                        "{method} {path} {status}: an answer to HEAD has no body"
                    );
                } else if status.starts_with('4') || status.starts_with('5') {
                    let content = &response["content"];
                    let problem = content["application/problem+json"]["schema"]["$ref"].as_str();
                    let readiness = content["application/json"]["schema"]["$ref"].as_str();
                    assert!(
                        problem == Some("#/components/schemas/Problem") || (path == "/readyz" && readiness.is_some()),
                        "{method} {path} {status} is not documented as problem+json"
                    );
                }
            }
            if path.starts_with("/v1/") {
                assert!(responses.contains_key("401"), "{method} {path} does not document 401");
                assert!(op["security"].is_array(), "{method} {path} has no security requirement");
            }
            checked += 1;
        }
    }
    assert!(checked >= 15, "only {checked} operations documented");
}
