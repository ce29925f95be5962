//! What a story asserts about a response: its status and JSON body, RFC 9457 problems, the
//! `x-request-id` and `ETag` headers, the 401 challenge, and RFC 3339 timestamps.

use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, HeaderMap};
use serde_json::Value;

/// At most the first 600 characters of `text`, for assertion messages.
pub fn clip(text: &str) -> String {
    match text.char_indices().nth(600) {
        Some((end, _)) => format!("{}… ({} bytes)", &text[..end], text.len()),
        None => text.to_owned(),
    }
}

/// Asserts the status and that the body is JSON; returns it.
pub async fn expect_json(response: reqwest::Response, status: StatusCode) -> Value {
    let (headers, text, url) = expect_status(response, status).await;
    assert_request_id(&headers, &url);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{url}: body is not JSON ({e}): {}", clip(&text)))
}

/// Asserts that the response is an RFC 9457 problem with `status` and `code`; returns the body.
pub async fn expect_problem(response: reqwest::Response, status: StatusCode, code: &str) -> Value {
    let problem = expect_any_problem(response, status).await;
    assert_eq!(problem["code"], code, "unexpected problem code: {problem}");
    problem
}

/// Asserts that the response is a problem with `status` (any code); returns the body.
pub async fn expect_any_problem(response: reqwest::Response, status: StatusCode) -> Value {
    let (headers, text, url) = expect_status(response, status).await;
    let problem = assert_problem_shape(&headers, &text, &url);
    assert_eq!(problem["status"], status.as_u16(), "{url}: the problem's status is the response's: {problem}");
    problem
}

/// Asserts the status (showing the body when it is not); returns the headers, the body text and
/// the URL for further assertions.
async fn expect_status(response: reqwest::Response, status: StatusCode) -> (HeaderMap, String, String) {
    let actual = response.status();
    let url = response.url().to_string();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap();
    assert_eq!(actual, status, "{url}: unexpected status; body: {}", clip(&text));
    (headers, text, url)
}

/// Asserts that a response (headers and text) is a well-formed problem; returns it parsed.
pub fn assert_problem_shape(headers: &HeaderMap, text: &str, url: &str) -> Value {
    assert_request_id(headers, url);
    let content_type = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    assert!(
        content_type.starts_with("application/problem+json"),
        "{url}: content-type is {content_type:?}, not application/problem+json; body: {}",
        clip(text)
    );
    let problem: Value =
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{url}: problem is not JSON ({e}): {}", clip(text)));
    for field in ["type", "title", "code", "detail"] {
        assert!(problem[field].is_string(), "{url}: problem lacks string `{field}`: {problem}");
    }
    assert!(problem["status"].is_u64(), "{url}: problem lacks numeric `status`: {problem}");
    problem
}

/// Asserts the `x-request-id` header is present and not empty.
pub fn assert_request_id(headers: &HeaderMap, url: &str) {
    let id = headers.get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or_default();
    assert!(!id.is_empty(), "{url}: response lacks x-request-id");
}

/// The `ETag` header of a response.
pub fn etag(response: &reqwest::Response) -> Option<String> {
    response.headers().get("etag").and_then(|v| v.to_str().ok()).map(str::to_owned)
}

/// Asserts 401 with a `WWW-Authenticate: Bearer...` challenge and a `missing_token` or
/// `invalid_token` code; returns the code.
pub async fn expect_unauthorized(response: reqwest::Response) -> String {
    let challenge =
        response.headers().get("www-authenticate").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let url = response.url().to_string();
    let problem = expect_any_problem(response, StatusCode::UNAUTHORIZED).await;
    assert!(challenge.starts_with("Bearer"), "{url}: WWW-Authenticate is {challenge:?}");
    let code = problem["code"].as_str().unwrap().to_owned();
    assert!(code == "missing_token" || code == "invalid_token", "{url}: unexpected 401 code {code}");
    code
}

/// Whether `text` looks like an RFC 3339 timestamp (`YYYY-MM-DDTHH:MM:SS...` with a zone).
pub fn is_rfc3339(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() >= 20
        && bytes[4] == b'-'
        && bytes[7] == b'-'
        && (bytes[10] == b'T' || bytes[10] == b't')
        && bytes[13] == b':'
        && bytes[16] == b':'
        && (text.ends_with('Z') || text.ends_with('z') || text[19..].contains(['+', '-']))
}

/// A key that orders UTC RFC 3339 timestamps (`...Z`) chronologically even when their fractional
/// seconds have different numbers of digits (`33.37Z` vs `33.371Z`).
pub fn rfc3339_order_key(text: &str) -> String {
    let body = text.trim_end_matches(['Z', 'z']);
    let (seconds, fraction) = body.split_once('.').unwrap_or((body, ""));
    format!("{seconds}.{fraction:0<9}")
}
