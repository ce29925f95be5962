//! The deadline of a request (each group of routes has its own: `limits.request_timeout`,
//! `admin_timeout`, `transfer_timeout`), and what its expiry tells the client:
//!
//! - the request's body had not all arrived: 408 `body_timeout`. The client was too slow; no
//!   handler acts on a body before it has all of it, so nothing was done.
//! - a write (any method but `GET`, `HEAD` and `OPTIONS`) whose body had arrived: 504
//!   `write_outcome_unknown`. It may have reached its database and may or may not have been
//!   applied; the safe way on is to read the item and retry with `If-Match`.
//! - anything else: 504 `request_timeout`.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body::{Frame, SizeHint};

use crate::error::{ApiError, Code};

/// Runs `request` within `limit` (a layer: `axum::middleware::from_fn_with_state(limit, within)`).
pub async fn within(State(limit): State<Duration>, request: Request, next: Next) -> Response {
    let writes = !matches!(*request.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    let (parts, body) = request.into_parts();
    let arrived = Arc::new(AtomicBool::new(body.is_end_stream()));
    let body = Body::new(Arrival { inner: body, arrived: arrived.clone() });
    match tokio::time::timeout(limit, next.run(Request::from_parts(parts, body))).await {
        Ok(response) => response,
        Err(_) => expired(arrived.load(Ordering::Acquire), writes).into_response(),
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

/// A request body that notes when its end has arrived.
struct Arrival {
    inner: Body,
    arrived: Arc<AtomicBool>,
}

impl HttpBody for Arrival {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) || self.inner.is_end_stream() {
            self.arrived.store(true, Ordering::Release);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
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
