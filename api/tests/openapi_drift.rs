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

fn document() -> serde_json::Value {
    serde_json::from_str(&shardgate_api::openapi_document().to_json().unwrap()).unwrap()
}

/// A valet URL carries the grant's `sg-` parameters and its signature: each valet operation
/// declares every one, so that a generated client can send the URL's query (issue 55).
#[test]
fn every_valet_operation_declares_every_parameter_of_a_valet_url() {
    let doc = document();
    let required = ["sg-v", "sg-perm", "sg-nbf", "sg-exp", "sg-kid", "sg-grant", "sg-sig"];
    let optional = ["sg-ct", "sg-max", "sg-cd", "sg-once"];
    let item = &doc["paths"]["/valet/{tenant}/{path}"];
    for method in ["get", "head", "put"] {
        let parameters = item[method]["parameters"].as_array().unwrap_or_else(|| panic!("{method} has parameters"));
        let query: Vec<(&str, bool)> = parameters
            .iter()
            .filter(|p| p["in"] == "query")
            .map(|p| (p["name"].as_str().unwrap(), p["required"].as_bool().unwrap_or(false)))
            .collect();
        for name in required {
            assert!(query.contains(&(name, true)), "{method} /valet: `{name}` is not a required query parameter");
        }
        for name in optional {
            assert!(query.contains(&(name, false)), "{method} /valet: `{name}` is not an optional query parameter");
        }
        assert_eq!(query.len(), required.len() + optional.len(), "{method} /valet: {query:?}");
    }
}

/// A blob may be uploaded with any media type (the server keeps it as `content_type`).
#[test]
fn a_blob_upload_takes_any_media_type() {
    let doc = document();
    for (path, method) in [("/v1/tenants/{tenant}/blobs/{path}", "put"), ("/valet/{tenant}/{path}", "put")] {
        let content = doc["paths"][path][method]["requestBody"]["content"].as_object().unwrap();
        assert_eq!(content.keys().collect::<Vec<_>>(), ["*/*"], "{method} {path}");
    }
}

/// Each `Page_X` names its items by reference to `X`: an inlined item makes generators write a
/// second class for it.
#[test]
fn no_page_inlines_its_item_schema() {
    let doc = document();
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    let pages: Vec<&String> = schemas.keys().filter(|name| name.starts_with("Page_")).collect();
    assert!(pages.len() >= 5, "{pages:?}");
    for page in pages {
        let item = &page["Page_".len()..];
        assert_eq!(
            schemas[page]["properties"]["items"]["items"],
            serde_json::json!({"$ref": format!("#/components/schemas/{item}")}),
            "{page} inlines its items"
        );
    }
}

/// Closed sets are enums: every property named like one (a tier, a permission, an index layout,
/// a distribution, a routing strategy, a method) and the kinds and states of jobs, indexes,
/// shards and signing keys declare their values, so generators make enum types of them.
#[test]
fn every_closed_set_is_an_enum() {
    let doc = document();
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    let by_name = ["tier", "permission", "layout", "distribution", "strategy", "method"];
    let by_schema = [
        ("Job", "kind"),
        ("Job", "state"),
        ("JobLeaseHolder", "kind"),
        ("IndexInfo", "state"),
        ("Shard", "state"),
        ("UpdateShard", "state"),
        ("MapShard", "state"),
        ("PlannedLoad", "state"),
        ("SigningKeyInfo", "state"),
    ];
    let is_enum = |property: &serde_json::Value| {
        property.get("enum").is_some_and(|values| values.as_array().is_some_and(|v| v.len() >= 2))
            || property["$ref"]
                .as_str()
                .and_then(|r| r.strip_prefix("#/components/schemas/"))
                .is_some_and(|name| schemas[name].get("enum").is_some())
    };
    let mut checked = 0;
    for (schema, definition) in schemas {
        let Some(properties) = definition["properties"].as_object() else { continue };
        for (name, property) in properties {
            if by_name.contains(&name.as_str()) || by_schema.contains(&(schema.as_str(), name.as_str())) {
                assert!(is_enum(property), "{schema}.{name} is a closed set but not an enum: {property}");
                checked += 1;
            }
        }
    }
    assert!(checked >= 20, "only {checked} closed sets found");
    for declared in shardgate_api::wire::closed_sets::closed_set_properties() {
        let (schema, name) = declared.split_once('.').unwrap();
        assert!(schemas[schema]["properties"].get(name).is_some(), "{declared} is not in the document");
    }
}

/// A blob is downloaded with the media type it was stored with, whatever that was: the document
/// says so rather than naming one type the answer may not have.
#[test]
fn a_blob_download_answers_any_media_type() {
    let doc = document();
    for (path, method) in [("/v1/tenants/{tenant}/blobs/{path}", "get"), ("/valet/{tenant}/{path}", "get")] {
        for status in ["200", "206"] {
            let content = doc["paths"][path][method]["responses"][status]["content"].as_object().unwrap();
            assert_eq!(content.keys().collect::<Vec<_>>(), ["*/*"], "{method} {path} {status}");
        }
    }
}
