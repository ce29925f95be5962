//! The admin API as the CLI calls it: one base URL, one bearer token from `SHARDGATE_TOKEN`, JSON
//! answers, and every refusal turned into a [`Failure`] that says what happened.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use secrecy::{ExposeSecret, SecretString};
use serde_json::Value;

use super::failure::Failure;

/// The environment variable the token is read from.
pub const TOKEN_VARIABLE: &str = "SHARDGATE_TOKEN";
/// How long a connection may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one request may take, answer included.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How much of an unexpected body a failure quotes.
const EXCERPT_CHARS: usize = 200;

/// A client of one gateway's admin API.
#[derive(Debug)]
pub struct AdminClient {
    http: reqwest::Client,
    base: String,
    token: SecretString,
}

impl AdminClient {
    /// A client of the gateway at `base` (`http://host:port`, a trailing `/` is dropped) with the
    /// token in `SHARDGATE_TOKEN`.
    pub fn from_env(base: &str) -> Result<Self, Failure> {
        let token = std::env::var(TOKEN_VARIABLE).ok().map(|t| t.trim().to_owned()).filter(|t| !t.is_empty());
        let token = SecretString::from(token.ok_or(Failure::NoToken)?);
        let base = base.trim_end_matches('/').to_owned();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(Failure::Usage(format!("--url {base:?} is not an http:// or https:// URL")));
        }
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            .user_agent(concat!("shardgate-admin/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| Failure::Usage(format!("cannot build the HTTP client: {e}")))?;
        Ok(Self { http, base, token })
    }

    /// `GET path` with `query` (pairs whose value is `None` are left out).
    pub async fn get(&self, path: &str, query: &[(&str, Option<String>)]) -> Result<Value, Failure> {
        let query: Vec<(&str, &str)> = query.iter().filter_map(|(k, v)| v.as_deref().map(|v| (*k, v))).collect();
        self.send(Method::GET, path, &query, None).await
    }

    /// `POST path` with a JSON body.
    pub async fn post(&self, path: &str, body: &Value) -> Result<Value, Failure> {
        self.send(Method::POST, path, &[], Some(body)).await
    }

    /// `POST path` with no body.
    pub async fn post_without_body(&self, path: &str) -> Result<Value, Failure> {
        self.send(Method::POST, path, &[], None).await
    }

    /// `PUT path` with a JSON body.
    pub async fn put(&self, path: &str, body: &Value) -> Result<Value, Failure> {
        self.send(Method::PUT, path, &[], Some(body)).await
    }

    /// `PATCH path` with a JSON body.
    pub async fn patch(&self, path: &str, body: &Value) -> Result<Value, Failure> {
        self.send(Method::PATCH, path, &[], Some(body)).await
    }

    /// `DELETE path`; a 204 answers `null`.
    pub async fn delete(&self, path: &str) -> Result<Value, Failure> {
        self.send(Method::DELETE, path, &[], None).await
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<&Value>,
    ) -> Result<Value, Failure> {
        let url = format!("{}{path}", self.base);
        let mut request = self.http.request(method, &url).bearer_auth(self.token.expose_secret()).query(query);
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.map_err(|e| self.unreachable(&e))?;
        let status = response.status();
        let text = response.text().await.map_err(|e| self.unreachable(&e))?;
        if status == StatusCode::NO_CONTENT {
            return Ok(Value::Null);
        }
        let parsed = serde_json::from_str::<Value>(&text).ok();
        if status.is_success() {
            return parsed.ok_or_else(|| unexpected(&url, status, &text));
        }
        match parsed.as_ref().and_then(problem) {
            Some(failure) => Err(failure),
            None => Err(unexpected(&url, status, &text)),
        }
    }

    /// What a transport error means to the operator: the URL, and refused, timed out or why.
    fn unreachable(&self, error: &reqwest::Error) -> Failure {
        let reason = if error.is_timeout() {
            format!("no answer within {} s", REQUEST_TIMEOUT.as_secs())
        } else if error.is_connect() {
            let mut cause: &dyn std::error::Error = error;
            while let Some(next) = cause.source() {
                cause = next;
            }
            format!("cannot connect ({cause})")
        } else {
            error.to_string()
        };
        Failure::Unreachable { url: self.base.clone(), reason }
    }
}

/// The failure a problem body describes, if `body` is one.
fn problem(body: &Value) -> Option<Failure> {
    let text = |key: &str| body.get(key).and_then(Value::as_str).map(str::to_owned);
    Some(Failure::Problem {
        status: u16::try_from(body.get("status")?.as_u64()?).ok()?,
        title: text("title")?,
        detail: text("detail").unwrap_or_default(),
        code: text("code")?,
    })
}

fn unexpected(url: &str, status: StatusCode, text: &str) -> Failure {
    let excerpt: String = text.chars().take(EXCERPT_CHARS).collect();
    let excerpt = if excerpt.trim().is_empty() { "(an empty body)".to_owned() } else { excerpt.trim().to_owned() };
    Failure::Unexpected { url: url.to_owned(), status: status.as_u16(), excerpt }
}

/// What a path segment escapes: all but RFC 3986's unreserved characters.
const SEGMENT: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');

/// `segment` escaped for a URL path (an id typed by the operator never changes the path).
pub fn path_segment(segment: &str) -> String {
    percent_encoding::utf8_percent_encode(segment, SEGMENT).to_string()
}
