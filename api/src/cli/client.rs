//! The admin API as the CLI calls it: one base URL, one bearer token from `SHARDGATE_TOKEN`, JSON
//! answers checked for the shape the command reads, and every refusal turned into a [`Failure`]
//! that says what happened.
//!
//! What the token may meet on its way is bounded: it goes over plain `http://` only to this
//! machine (a loopback address or `localhost`) unless `--insecure-http` says otherwise, no
//! redirect is followed (the token would go along), and no answer is read past
//! [`MAX_ANSWER_MIB`] MiB.

use std::net::IpAddr;
use std::time::Duration;

use reqwest::{Method, StatusCode, Url, header};
use secrecy::{ExposeSecret, SecretString};
use serde_json::Value;

use super::failure::{Failure, MAX_ANSWER_MIB};
use super::shape::Shape;

/// The environment variable the token is read from.
pub const TOKEN_VARIABLE: &str = "SHARDGATE_TOKEN";
/// How long a connection may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one request may take, answer included.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How much of an unexpected body a failure quotes.
const EXCERPT_CHARS: usize = 200;
/// The most of an answer read, in bytes.
const MAX_ANSWER_BYTES: usize = MAX_ANSWER_MIB << 20;

/// A client of one gateway's admin API.
#[derive(Debug)]
pub struct AdminClient {
    http: reqwest::Client,
    base: String,
    token: SecretString,
}

impl AdminClient {
    /// A client of the gateway at `base` (`http://host:port`, a trailing `/` is dropped) with the
    /// token in `SHARDGATE_TOKEN`. Plain `http://` to a host that is not this machine is refused
    /// unless `insecure_http`.
    pub fn from_env(base: &str, insecure_http: bool) -> Result<Self, Failure> {
        let token = std::env::var(TOKEN_VARIABLE).ok().map(|t| t.trim().to_owned()).filter(|t| !t.is_empty());
        let token = SecretString::from(token.ok_or(Failure::NoToken)?);
        let base = base.trim_end_matches('/').to_owned();
        let url = Url::parse(&base)
            .ok()
            .filter(|url| matches!(url.scheme(), "http" | "https") && url.host().is_some())
            .ok_or_else(|| Failure::Usage(format!("--url {base:?} is not an http:// or https:// URL")))?;
        if url.scheme() == "http" && !insecure_http && !is_this_machine(&url) {
            return Err(Failure::Usage(format!(
                "--url {base} is plain http:// to {}, which is not this machine: the admin token would travel in \
                 clear. Use https://, or add --insecure-http when the way there is private (an SSH tunnel, a \
                 private network)",
                url.host_str().unwrap_or_default()
            )));
        }
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("shardgate-admin/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| Failure::Usage(format!("cannot build the HTTP client: {e}")))?;
        Ok(Self { http, base, token })
    }

    /// `GET path` with `query` (pairs whose value is `None` are left out), answered in `shape`.
    pub async fn get(&self, path: &str, query: &[(&str, Option<String>)], shape: &Shape) -> Result<Value, Failure> {
        let query: Vec<(&str, &str)> = query.iter().filter_map(|(k, v)| v.as_deref().map(|v| (*k, v))).collect();
        self.send(Method::GET, path, &query, None, Some(shape)).await
    }

    /// `POST path` with a JSON body, answered in `shape`.
    pub async fn post(&self, path: &str, body: &Value, shape: &Shape) -> Result<Value, Failure> {
        self.send(Method::POST, path, &[], Some(body), Some(shape)).await
    }

    /// `POST path` with no body, answered in `shape`.
    pub async fn post_without_body(&self, path: &str, shape: &Shape) -> Result<Value, Failure> {
        self.send(Method::POST, path, &[], None, Some(shape)).await
    }

    /// `PUT path` with a JSON body, answered in `shape`.
    pub async fn put(&self, path: &str, body: &Value, shape: &Shape) -> Result<Value, Failure> {
        self.send(Method::PUT, path, &[], Some(body), Some(shape)).await
    }

    /// `PATCH path` with a JSON body, answered in `shape`.
    pub async fn patch(&self, path: &str, body: &Value, shape: &Shape) -> Result<Value, Failure> {
        self.send(Method::PATCH, path, &[], Some(body), Some(shape)).await
    }

    /// `DELETE path`; a 204 answers `null`.
    pub async fn delete(&self, path: &str) -> Result<Value, Failure> {
        self.send(Method::DELETE, path, &[], None, None).await
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<&Value>,
        shape: Option<&Shape>,
    ) -> Result<Value, Failure> {
        let url = format!("{}{path}", self.base);
        let mut request = self.http.request(method, &url).bearer_auth(self.token.expose_secret()).query(query);
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.map_err(|e| self.unreachable(&e))?;
        let status = response.status();
        if status.is_redirection() {
            let location = response.headers().get(header::LOCATION).and_then(|l| l.to_str().ok()).unwrap_or("-");
            return Err(Failure::Redirected { url, status: status.as_u16(), location: location.to_owned() });
        }
        let text = self.read_answer(response, &url).await?;
        if status == StatusCode::NO_CONTENT {
            return Ok(Value::Null);
        }
        let parsed = serde_json::from_str::<Value>(&text).ok();
        if status.is_success() {
            let answer = parsed.ok_or_else(|| unexpected(&url, status, &text))?;
            if let Some(why) = shape.and_then(|shape| shape.mismatch(&answer)) {
                return Err(Failure::Misshapen { url, status: status.as_u16(), why, excerpt: excerpt(&text) });
            }
            return Ok(answer);
        }
        match parsed.as_ref().and_then(problem) {
            Some(failure) => Err(failure),
            None => Err(unexpected(&url, status, &text)),
        }
    }

    /// The answer's body as text, read piece by piece and given up past [`MAX_ANSWER_BYTES`]
    /// (at once when its announced length is over).
    async fn read_answer(&self, mut response: reqwest::Response, url: &str) -> Result<String, Failure> {
        let too_large = || Failure::TooLarge { url: url.to_owned() };
        if response.content_length().is_some_and(|length| length > MAX_ANSWER_BYTES as u64) {
            return Err(too_large());
        }
        let mut body = Vec::new();
        while let Some(piece) = response.chunk().await.map_err(|e| self.unreachable(&e))? {
            if body.len() + piece.len() > MAX_ANSWER_BYTES {
                return Err(too_large());
            }
            body.extend_from_slice(&piece);
        }
        Ok(String::from_utf8_lossy(&body).into_owned())
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

/// Whether `url`'s host is this machine: `localhost` or a loopback address (an IPv4-mapped one
/// too), the only hosts plain `http://` reaches without crossing a network.
fn is_this_machine(url: &Url) -> bool {
    let host = url.host_str().unwrap_or_default();
    match host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
        Ok(ip) => ip.to_canonical().is_loopback(),
        Err(_) => host.eq_ignore_ascii_case("localhost"),
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
    Failure::Unexpected { url: url.to_owned(), status: status.as_u16(), excerpt: excerpt(text) }
}

/// The start of a body, for a message.
fn excerpt(text: &str) -> String {
    let excerpt: String = text.chars().take(EXCERPT_CHARS).collect();
    if excerpt.trim().is_empty() { "(an empty body)".to_owned() } else { excerpt.trim().to_owned() }
}

/// What a path segment escapes: all but RFC 3986's unreserved characters.
const SEGMENT: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');

/// `segment` escaped for a URL path (an id typed by the operator never changes the path).
pub fn path_segment(segment: &str) -> String {
    percent_encoding::utf8_percent_encode(segment, SEGMENT).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_stays_on_this_machine() {
        let this = |url: &str| is_this_machine(&Url::parse(url).unwrap());
        for local in [
            "http://127.0.0.1:8080",
            "http://127.1.2.3",
            "http://LOCALHOST:1",
            "http://[::1]:8080",
            "http://[::ffff:127.0.0.1]",
        ] {
            assert!(this(local), "{local}");
        }
        for remote in [
            "http://0.0.0.0:8080",
            "http://10.0.0.5",
            "http://gateway.internal",
            "http://localhost.evil.com",
            "http://[::ffff:10.0.0.1]",
        ] {
            assert!(!this(remote), "{remote}");
        }
    }
}
