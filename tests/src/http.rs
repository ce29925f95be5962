//! Calling a test app over HTTP: the client, path-segment encoding and the one request builder
//! every helper goes through.

use std::time::Duration;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::Method;
use serde_json::Value;

use crate::TestApp;

/// Characters percent-encoded in a path segment: everything but RFC 3986 unreserved characters.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');

/// Percent-encodes one path segment (a record key, for example).
pub fn encode_segment(segment: &str) -> String {
    utf8_percent_encode(segment, SEGMENT).to_string()
}

/// A plain HTTP client.
pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

impl TestApp {
    /// `base_url` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    /// Sends a request with an optional bearer token, JSON body and extra headers.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<&Value>,
        headers: &[(&str, &str)],
    ) -> reqwest::Response {
        let mut request = self.client.request(method, self.url(path));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.send().await.expect("the server answers")
    }

    /// `PUT path` with `token` and `body` sent as it is (not serialised), labelled `content_type`:
    /// for bodies that are not valid JSON, too large or too deep.
    pub async fn put_raw(
        &self,
        path: &str,
        token: &str,
        content_type: &str,
        body: impl Into<reqwest::Body>,
    ) -> reqwest::Response {
        self.client
            .put(self.url(path))
            .bearer_auth(token)
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .expect("the server answers")
    }

    /// An admin-token request.
    pub async fn admin(&self, method: Method, path: &str, body: Option<&Value>) -> reqwest::Response {
        let token = self.admin_token();
        self.send(method, path, Some(&token), body, &[]).await
    }
}

/// `GET url` with `token`; the body parsed as JSON whatever the status (for polling another
/// instance, where a 404 problem is as telling as a 200).
pub async fn get_json(client: &reqwest::Client, url: &str, token: &str) -> Value {
    client.get(url).bearer_auth(token).send().await.unwrap().json().await.unwrap()
}
