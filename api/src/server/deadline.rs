//! The deadline of a request (each group of routes has its own: `limits.request_timeout`,
//! `admin_timeout`, `transfer_timeout`), and what its expiry tells the client:
//!
//! - the request's body had not all arrived: 408 `body_timeout`. The client was too slow; no
//!   handler acts on a body before it has all of it, so nothing was done.
//! - a write (any method but `GET`, `HEAD` and `OPTIONS`) whose body had arrived: 504
//!   `write_outcome_unknown`. It may have reached its database and may or may not have been
//!   applied; the safe way on is to read the item and retry with `If-Match`.
//! - anything else: 504 `request_timeout`.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use tower::{Layer, Service};

use crate::server::body_arrival::Arrived;
use crate::wire::error::{ApiError, Code};

/// Runs each request within `limit` (one route group's deadline).
#[derive(Debug, Clone, Copy)]
pub struct DeadlineLayer {
    limit: Duration,
}

impl DeadlineLayer {
    /// Requests run within `limit`.
    pub fn new(limit: Duration) -> Self {
        Self { limit }
    }
}

impl<S> Layer<S> for DeadlineLayer {
    type Service = Deadline<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Deadline { inner, limit: self.limit }
    }
}

/// See [`DeadlineLayer`].
#[derive(Debug, Clone)]
pub struct Deadline<S> {
    inner: S,
    limit: Duration,
}

impl<S> Service<Request> for Deadline<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = DeadlineFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let writes = !matches!(*request.method(), Method::GET | Method::HEAD | Method::OPTIONS);
        let (parts, body) = request.into_parts();
        let arrived = Arrived::of(&body);
        let body = Body::new(arrived.watch(body));
        let answer = tokio::time::timeout(self.limit, self.inner.call(Request::from_parts(parts, body)));
        DeadlineFuture { answer, arrived, writes }
    }
}

pin_project_lite::pin_project! {
    /// The answer of [`Deadline`]: the handler's, or the problem of its expiry.
    pub struct DeadlineFuture<F> {
        #[pin]
        answer: tokio::time::Timeout<F>,
        arrived: Arrived,
        writes: bool,
    }
}

impl<F: Future<Output = Result<Response, Infallible>>> Future for DeadlineFuture<F> {
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        Poll::Ready(match ready!(this.answer.poll(cx)) {
            Ok(answered) => answered,
            Err(_) => Ok(expired(this.arrived.get(), *this.writes).into_response()),
        })
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
