//! Blobs the way a tenant reaches them beside the records: issuing a valet key for one, and
//! the chunks of uploads not yet live, read straight from the shards.

use reqwest::StatusCode;
use serde_json::Value;

use crate::{TestApp, expect_json};

impl TestApp {
    /// `POST /v1/tenants/{tenant}/valet-keys` with `body` and `token`; asserts 201 and answers
    /// the key (its `url` names the valet listener).
    pub async fn issue_valet_key(&self, tenant: &str, token: &str, body: &Value) -> Value {
        let url = self.url(&format!("/v1/tenants/{tenant}/valet-keys"));
        let response = self.client.post(url).bearer_auth(token).json(body).send().await.unwrap();
        expect_json(response, StatusCode::CREATED).await
    }

    /// Chunks of uploads that are not live, summed over the shards.
    pub async fn staged_blob_chunks(&self) -> i64 {
        let counts: Vec<(i64,)> = self
            .rows_on_every_shard(
                "SELECT COUNT(*) FROM blob_chunks c JOIN blob_uploads u ON u.upload_id = c.upload_id WHERE u.state <> 'live'",
            )
            .await;
        counts.into_iter().map(|(count,)| count).sum()
    }
}
