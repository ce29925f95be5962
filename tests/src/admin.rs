//! The platform administrator's calls a story needs as set-up or check: tenants, the shard map,
//! routes and shard states. Each asserts its success status and returns the body.

use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::TestApp;
use crate::assertions::expect_json;
use crate::http::encode_segment;

impl TestApp {
    /// `POST /v1/admin/tenants {"id": id}`; asserts 201 and returns the tenant.
    pub async fn create_tenant(&self, id: &str) -> Value {
        self.create_tenant_with(&serde_json::json!({ "id": id })).await
    }

    /// `POST /v1/admin/tenants` with `body`; asserts 201 and returns the tenant.
    pub async fn create_tenant_with(&self, body: &Value) -> Value {
        let response = self.admin(Method::POST, "/v1/admin/tenants", Some(body)).await;
        expect_json(response, StatusCode::CREATED).await
    }

    /// The current shard map.
    pub async fn shard_map(&self) -> Value {
        expect_json(self.admin(Method::GET, "/v1/admin/shard-map", None).await, StatusCode::OK).await
    }

    /// The shard map's epoch.
    pub async fn epoch(&self) -> i64 {
        self.shard_map().await["epoch"].as_i64().expect("epoch is an integer")
    }

    /// `GET /v1/admin/route` for one record; asserts 200.
    pub async fn route(&self, tenant: &str, collection: &str, key: &str) -> Value {
        let path = format!(
            "/v1/admin/route?tenant={}&collection={}&key={}",
            encode_segment(tenant),
            encode_segment(collection),
            encode_segment(key)
        );
        expect_json(self.admin(Method::GET, &path, None).await, StatusCode::OK).await
    }

    /// `PATCH /v1/admin/shards/{id} {"state": state}`; asserts 200 and returns the shard.
    pub async fn set_shard_state(&self, shard: &str, state: &str) -> Value {
        let body = serde_json::json!({ "state": state });
        let response = self.admin(Method::PATCH, &format!("/v1/admin/shards/{shard}"), Some(&body)).await;
        expect_json(response, StatusCode::OK).await
    }
}
