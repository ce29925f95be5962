//! The deadline of a request (each group of routes has its own: `limits.request_timeout`,
//! `admin_timeout`, `transfer_timeout`), and what its expiry tells the client:
//!
//! - the request's body had not all arrived: 408 `body_timeout`. The client was too slow; no
//!   handler acts on a body before it has all of it, so nothing was done.
//! - a write (any method but `GET`, `HEAD` and `OPTIONS`) whose body had arrived: 504
//!   `write_outcome_unknown`. It may have reached its database and may or may not have been
//!   applied; the safe way on is to read the item and retry with `If-Match`.
//! - anything else: 504 `request_timeout`.

use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::server::body_arrival::Arrived;
use crate::wire::error::{ApiError, Code};

/// Runs `request` within `limit` (a layer: `axum::middleware::from_fn_with_state(limit, within)`).
pub async fn within(State(limit): State<Duration>, request: Request, next: Next) -> Response {
    let writes = !matches!(*request.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    let (parts, body) = request.into_parts();
    let arrived = Arrived::of(&body);
    let body = Body::new(arrived.watch(body));
    match tokio::time::timeout(limit, next.run(Request::from_parts(parts, body))).await {
        Ok(response) => response,
        Err(_) => expired(arrived.get(), writes).into_response(),
    }
}

/// The answer to a request whose deadline passed.
fn expired(body_arrived: bool, writes: bool) -> ApiError {
    match (body_arrived, writes) {
        (false, _) => ApiError::from(Code::BodyTimeout),
        (true, true) => ApiError::new(
            Code::WriteOutcomeUnknown,
            "the request deadline passed while the write was in progress: it may or may not have been applied; \
             read the item, then retry with If-Match on the version read",
        ),
        (true, false) => ApiError::from(Code::RequestTimeout),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_says_who_was_slow_and_whether_a_write_may_have_happened() {
        assert_eq!(expired(false, true).code(), "body_timeout");
        assert_eq!(expired(false, false).code(), "body_timeout");
        assert_eq!(expired(true, true).code(), "write_outcome_unknown");
        assert_eq!(expired(true, false).code(), "request_timeout");
    }
}
