//! `/console`: the operator's console, one page served from the binary.
//!
//! Its HTML, script and style sheet are embedded at build time (`api/console/`), so the page
//! needs nothing but this instance: no CDN, no request to any other host. It signs in with an
//! admin token kept in the tab's session storage, and every call it makes goes to the public
//! admin API (`/v1/admin/...`) with that token, so everything it shows or does is also
//! scriptable and audited. The answers carry a strict Content-Security-Policy: the page may load
//! and call only its own origin, and runs no inline script or style.

use axum::http::{HeaderName, HeaderValue, header};
use axum::response::{IntoResponse, Response};

/// The policy of every console answer: only this origin, no inline script or style, no plugin,
/// no framing, no form posted elsewhere.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; \
     frame-ancestors 'none'; form-action 'self'";

const PAGE: &str = include_str!("../../console/index.html");
const SCRIPT: &str = include_str!("../../console/console.js");
const STYLE: &str = include_str!("../../console/console.css");
const INSTANCES: &str = include_str!("../../console/instances.js");
const HEALTH: &str = include_str!("../../console/health.js");

/// `GET /console`: the page.
pub async fn page() -> Response {
    asset("text/html; charset=utf-8", PAGE)
}

/// `GET /console/console.js`: its script.
pub async fn script() -> Response {
    asset("text/javascript; charset=utf-8", SCRIPT)
}

/// `GET /console/instances.js`: the Instances view, a module the script imports.
pub async fn instances_script() -> Response {
    asset("text/javascript; charset=utf-8", INSTANCES)
}

/// `GET /console/health.js`: the Request health view, a module the script imports.
pub async fn health_script() -> Response {
    asset("text/javascript; charset=utf-8", HEALTH)
}

/// `GET /console/console.css`: its style sheet.
pub async fn style() -> Response {
    asset("text/css; charset=utf-8", STYLE)
}

/// The policy of the docs page (`/docs`, Swagger UI, where an admin token may be pasted): no
/// framing by another page. Its scripts are Swagger UI's own, so only framing is restricted.
pub const DOCS_CONTENT_SECURITY_POLICY: &str = "frame-ancestors 'none'";

/// Adds to every answer of `/docs` what keeps it out of another page's frame (clickjacking):
/// `frame-ancestors 'none'` and `X-Frame-Options: DENY`, as the console's answers carry.
pub async fn forbid_framing(mut response: Response) -> Response {
    let headers = response.headers_mut();
    if !headers.contains_key(header::CONTENT_SECURITY_POLICY) {
        headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(DOCS_CONTENT_SECURITY_POLICY));
    }
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    let headers = [
        (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
        (header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY)),
        (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
        (header::REFERRER_POLICY, HeaderValue::from_static("no-referrer")),
        (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
        // A new binary may carry a new console: always ask again (the answers are small).
        (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        (HeaderName::from_static("cross-origin-opener-policy"), HeaderValue::from_static("same-origin")),
    ];
    (headers, body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_asset_carries_the_policy_and_its_type() {
        for (response, kind) in [
            (page().await, "text/html"),
            (script().await, "text/javascript"),
            (instances_script().await, "text/javascript"),
            (health_script().await, "text/javascript"),
            (style().await, "text/css"),
        ] {
            let headers = response.headers();
            assert!(headers[header::CONTENT_TYPE].to_str().unwrap().starts_with(kind));
            assert_eq!(headers[header::CONTENT_SECURITY_POLICY], CONTENT_SECURITY_POLICY);
            assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        }
    }

    #[test]
    fn the_page_loads_nothing_from_another_host_and_runs_no_inline_script() {
        for text in [PAGE, SCRIPT, INSTANCES, HEALTH, STYLE] {
            assert!(!text.contains("http://") && !text.contains("https://"), "an absolute URL in the console");
            assert!(!text.contains("//cdn"), "a CDN reference in the console");
        }
        assert!(!PAGE.contains("<script>") && !PAGE.contains(" onclick="), "inline script in the page");
        assert!(!PAGE.contains("<style") && !PAGE.contains(" style="), "inline style in the page");
        assert!(PAGE.contains(r#"<script type="module" src="/console/console.js"></script>"#));
    }
}
