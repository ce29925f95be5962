//! Records the way a tenant's client reaches them: their paths and the CRUD calls made with a
//! read/write token of the tenant.

use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::TestApp;
use crate::http::encode_segment;

/// `/v1/tenants/{tenant}/collections/{collection}/records/{key}` with the key percent-encoded.
pub fn record_path(tenant: &str, collection: &str, key: &str) -> String {
    format!("{}/{}", records_path(tenant, collection), encode_segment(key))
}

/// `/v1/tenants/{tenant}/collections/{collection}/records`.
pub fn records_path(tenant: &str, collection: &str) -> String {
    format!("/v1/tenants/{tenant}/collections/{collection}/records")
}

impl TestApp {
    /// `PUT` a record with a read/write token of `tenant`.
    pub async fn put_record(&self, tenant: &str, collection: &str, key: &str, value: &Value) -> reqwest::Response {
        let token = self.rw_token(tenant);
        self.send(Method::PUT, &record_path(tenant, collection, key), Some(&token), Some(value), &[]).await
    }

    /// `GET` a record with a read/write token of `tenant`.
    pub async fn get_record(&self, tenant: &str, collection: &str, key: &str) -> reqwest::Response {
        let token = self.rw_token(tenant);
        self.send(Method::GET, &record_path(tenant, collection, key), Some(&token), None, &[]).await
    }

    /// `DELETE` a record with a read/write token of `tenant`.
    pub async fn delete_record(&self, tenant: &str, collection: &str, key: &str) -> reqwest::Response {
        let token = self.rw_token(tenant);
        self.send(Method::DELETE, &record_path(tenant, collection, key), Some(&token), None, &[]).await
    }

    /// Lists a collection with a read/write token of `tenant`; `query` is appended verbatim.
    pub async fn list_records(&self, tenant: &str, collection: &str, query: &str) -> reqwest::Response {
        let token = self.rw_token(tenant);
        let path = format!("{}?{query}", records_path(tenant, collection));
        self.send(Method::GET, &path, Some(&token), None, &[]).await
    }

    /// Puts many records concurrently (a few at a time); asserts each is created.
    pub async fn put_many(&self, tenant: &str, collection: &str, keys: &[String]) {
        let token = self.rw_token(tenant);
        let mut tasks = tokio::task::JoinSet::new();
        for chunk in keys.chunks(keys.len().div_ceil(8).max(1)) {
            let client = self.client.clone();
            let base = self.base_url.clone();
            let token = token.clone();
            let paths: Vec<(String, String)> =
                chunk.iter().map(|k| (k.clone(), record_path(tenant, collection, k))).collect();
            tasks.spawn(async move {
                for (key, path) in paths {
                    let response = client
                        .put(format!("{base}{path}"))
                        .bearer_auth(&token)
                        .json(&serde_json::json!({ "k": key }))
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(response.status(), StatusCode::CREATED, "PUT {path}");
                }
            });
        }
        while let Some(done) = tasks.join_next().await {
            done.unwrap();
        }
    }
}

/// The keys of a listing page's `items`, in order.
pub fn keys_of(listing: &serde_json::Value) -> Vec<String> {
    listing["items"]
        .as_array()
        .unwrap_or_else(|| panic!("items is an array: {listing}"))
        .iter()
        .map(|item| item["key"].as_str().expect("every item has a key").to_owned())
        .collect()
}
