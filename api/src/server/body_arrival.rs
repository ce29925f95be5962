//! Whether a request's body has arrived in full: the connection asks when it answers (an answer
//! given before the body was read to its end closes the connection:
//! [`crate::server::connections`]), and the deadline when it expires (a client too slow to send
//! its body is told so: [`crate::server::deadline`]).
//!
//! Must not know what the body is for, or who reads it.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use axum::body::HttpBody;
use http_body::{Frame, SizeHint};

/// Whether a body's end has arrived, shared by the body ([`Arrival`]) and whoever asks.
#[derive(Debug, Clone)]
pub struct Arrived(Arc<AtomicBool>);

impl Arrived {
    /// The arrival of `body`'s end: arrived already if the body is empty.
    pub fn of(body: &impl HttpBody) -> Self {
        Self(Arc::new(AtomicBool::new(body.is_end_stream())))
    }

    /// Whether the end has arrived.
    pub fn get(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    /// `body`, noting here when its end arrives.
    pub fn watch<B>(&self, body: B) -> Arrival<B> {
        Arrival { inner: body, arrived: self.0.clone() }
    }
}

pin_project_lite::pin_project! {
    /// A request body that notes when its end has arrived ([`Arrived::watch`]).
    #[derive(Debug)]
    pub struct Arrival<B> {
        #[pin]
        inner: B,
        arrived: Arc<AtomicBool>,
    }
}

impl<B: HttpBody> HttpBody for Arrival<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let mut this = self.project();
        let polled = this.inner.as_mut().poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) || this.inner.is_end_stream() {
            this.arrived.store(true, Ordering::Release);
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
