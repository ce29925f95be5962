//! Each tenant's requests and the bytes of their bodies, counted for its daily usage
//! ([`shardgate_shard_router::usage::daily`]) by the front door: a request made with a token
//! bound to a tenant counts one request of it, the bytes of its body as written and those of its
//! response's body as read.
//!
//! A body whose length is known before it moves (a request with `Content-Length`, a JSON
//! answer) is counted at that length when the response is ready, with no wrapper around it; a
//! body streamed without a known length (a chunked upload, a blob download) is counted as its
//! pieces pass, and noted when it ends or is dropped, so a download the client abandons counts
//! only what was sent. Valet transfers are counted by the valet service instead (their bytes as
//! valet bytes).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::Request;
use axum::response::Response;
use http_body::{Frame, SizeHint};
use shardgate_shard_router::catalog::DayUsage;
use shardgate_shard_router::usage::daily::DailyUsage;

/// Which way a counted body goes.
#[derive(Debug, Clone, Copy)]
enum Direction {
    /// A request body: bytes written.
    Received,
    /// A response body: bytes read.
    Sent,
}

/// What counts the bytes of a body as they pass ([`CountedBody`]).
pub trait Count: Send + Unpin + 'static {
    /// `bytes` more passed.
    fn count(&mut self, bytes: u64);
}

/// A body counting the bytes of the pieces that pass through it.
#[derive(Debug)]
pub struct CountedBody<C> {
    body: Body,
    counter: C,
}

impl<C: Count> CountedBody<C> {
    /// `body`, its pieces counted by `counter`.
    pub fn body(body: Body, counter: C) -> Body {
        Body::new(CountedBody { body, counter })
    }
}

impl<C: Count> HttpBody for CountedBody<C> {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.body).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled
            && let Some(data) = frame.data_ref()
        {
            this.counter.count(data.len() as u64);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A tenant's body bytes of one direction, noted to its daily usage when the body ends or is
/// dropped.
#[derive(Debug)]
struct Tenant {
    daily: Arc<DailyUsage>,
    tenant: Box<str>,
    direction: Direction,
    bytes: u64,
}

impl Count for Tenant {
    fn count(&mut self, bytes: u64) {
        self.bytes += bytes;
    }
}

impl Drop for Tenant {
    fn drop(&mut self) {
        if self.bytes == 0 {
            return;
        }
        let usage = match self.direction {
            Direction::Received => DayUsage { bytes_written: self.bytes, ..DayUsage::default() },
            Direction::Sent => DayUsage { bytes_read: self.bytes, ..DayUsage::default() },
        };
        self.daily.note(&self.tenant, &usage);
    }
}

/// What is known of a tenant's request on its way in: its body's length, if known before it
/// moves (else the body counts itself as it is read).
#[derive(Debug, Clone, Copy)]
pub struct Tally {
    written: u64,
}

/// `body` counted as it passes.
fn counted(daily: &Arc<DailyUsage>, tenant: &str, direction: Direction, body: Body) -> Body {
    CountedBody::body(body, Tenant { daily: daily.clone(), tenant: tenant.into(), direction, bytes: 0 })
}

/// Starts counting `request` of `tenant`: its body's length if known before it moves, else the
/// body counts itself as it is read.
pub fn request_in(daily: &Arc<DailyUsage>, tenant: &str, request: Request) -> (Tally, Request) {
    if let Some(written) = request.body().size_hint().exact() {
        return (Tally { written }, request);
    }
    let request = request.map(|body| counted(daily, tenant, Direction::Received, body));
    (Tally { written: 0 }, request)
}

/// Counts the request of `tenant` that `tally` started and its response's body (as it goes out,
/// if its length is not known yet).
pub fn response_out(daily: &Arc<DailyUsage>, tenant: &str, tally: Tally, response: Response) -> Response {
    if let Some(read) = response.body().size_hint().exact() {
        daily.note_request(tenant, tally.written, read);
        return response;
    }
    daily.note_request(tenant, tally.written, 0);
    response.map(|body| counted(daily, tenant, Direction::Sent, body))
}
