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

#[test]
fn every_reference_resolves_to_a_component() {
    let doc: serde_json::Value = serde_json::from_str(&shardgate_api::openapi_document().to_json().unwrap()).unwrap();
    let schemas = doc["components"]["schemas"].as_object().expect("components.schemas");
    let mut references = Vec::new();
    collect_references(&doc, &mut references);
    assert!(references.len() > 100, "the walk finds the document's references: {}", references.len());
    let dangling: Vec<_> = references
        .iter()
        .filter(|r| r.strip_prefix("#/components/schemas/").is_none_or(|name| !schemas.contains_key(name)))
        .collect();
    assert!(dangling.is_empty(), "references to no component (a client generator stops on them): {dangling:?}");
}

fn collect_references(value: &serde_json::Value, into: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, value) in map {
                match (key.as_str(), value) {
                    ("$ref", serde_json::Value::String(target)) => into.push(target.clone()),
                    _ => collect_references(value, into),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|item| collect_references(item, into)),
        _ => {}
    }
}
