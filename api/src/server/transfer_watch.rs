//! How long a request keeps its [`Slot`] in its caller's bulkhead ([`crate::server::bulkhead`]):
//! until its response has been sent, and no longer than its client keeps the transfer moving.
//!
//! - [`TransferWatch::hold`] ties the slot to the response body: it is given back when the body
//!   has been sent (or dropped: the client went away), not when the handler returns, so a
//!   download counts for as long as it streams.
//! - A long download (a response marked [`LongTransfer`]) is watched: once the server has handed
//!   it a piece of the body, the client must take one more within `limits.transfer_idle_timeout`
//!   (the body is not asked for more while the client does not read). If it does not, the
//!   transfer is cut off: the slot is given back and the rest of the body (with the windows of
//!   chunks it holds) dropped, and the connection is closed the next time the server writes to
//!   it. Time the body itself waits for its shard does not count against the client.
//! - An upload reads its body through [`TransferWatch::next_piece`]: no byte for
//!   `limits.transfer_idle_timeout` ends it with 408 `transfer_stalled`, and the upload is
//!   aborted (nothing of it becomes visible).
//!
//! Both count in `shardgate_stalled_transfers_total{direction}` (`upload`, `download`).

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::response::Response;
use futures::{Stream, StreamExt};
use http_body::{Frame, SizeHint};
use parking_lot::Mutex;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use tokio::sync::oneshot;
use tokio::time::Instant;
use tracing::Instrument;

use crate::server::bulkhead::Slot;
use crate::wire::error::ApiError;

/// A response extension: the body is a long transfer (a blob download), watched for a client
/// that stops reading.
#[derive(Debug, Clone, Copy)]
pub struct LongTransfer;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DirectionLabels {
    direction: &'static str,
}

/// The idle limit of transfers and the count of those it ended.
#[derive(Debug)]
pub struct TransferWatch {
    idle: Duration,
    stalled: Family<DirectionLabels, Counter>,
}

impl TransferWatch {
    /// Transfers end after `idle` without progress (at least 1 ms); the counter goes into
    /// `registry`, both directions shown from the start (at 0).
    pub fn new(idle: Duration, registry: &mut Registry) -> Self {
        let stalled = Family::<DirectionLabels, Counter>::default();
        for direction in ["upload", "download"] {
            drop(stalled.get_or_create(&DirectionLabels { direction }));
        }
        registry.register(
            "stalled_transfers",
            "Blob and valet transfers ended because their client moved no byte for limits.transfer_idle_timeout, \
             by direction (upload, download)",
            stalled.clone(),
        );
        Self { idle: idle.max(Duration::from_millis(1)), stalled }
    }

    fn stalled(&self, direction: &'static str) -> Counter {
        self.stalled.get_or_create(&DirectionLabels { direction }).clone()
    }

    /// The next piece of an upload's `body`, or 408 `transfer_stalled` (counted) when none
    /// arrives within the idle limit.
    pub async fn next_piece<S: Stream + Unpin>(&self, body: &mut S) -> Result<Option<S::Item>, ApiError> {
        match tokio::time::timeout(self.idle, body.next()).await {
            Ok(piece) => Ok(piece),
            Err(_) => {
                self.stalled("upload").inc();
                let idle_ms = self.idle.as_millis() as u64;
                tracing::info!(idle_ms, "an upload's body stopped arriving; ended as stalled");
                Err(ApiError::transfer_stalled(self.idle))
            }
        }
    }

    /// `response` with `slot` held until its body has been sent or dropped; a [`LongTransfer`]
    /// is also cut off, and its slot given back, when its client stops reading.
    pub fn hold(&self, response: Response, slot: Slot) -> Response {
        if response.extensions().get::<LongTransfer>().is_some() {
            response.map(|body| self.watched(body, slot))
        } else {
            response.map(|body| Body::new(Held { body, slot: Some(slot) }))
        }
    }

    /// `body` watched by a task of its own, which ends with the body.
    fn watched(&self, body: Body, slot: Slot) -> Body {
        let watch = Arc::new(Watch {
            body: Mutex::new(Some(body)),
            slot,
            started: Instant::now(),
            handed_at_ms: AtomicU64::new(0),
        });
        let (stop, stopped) = oneshot::channel();
        let watchdog = cut_off_when_idle(Arc::downgrade(&watch), self.idle, stopped, self.stalled("download"));
        tokio::spawn(watchdog.in_current_span());
        Body::new(Watched { watch, _stop: stop })
    }
}

/// A response body that gives its slot back when it ends (or is dropped).
#[derive(Debug)]
struct Held {
    body: Body,
    slot: Option<Slot>,
}

impl HttpBody for Held {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.body).poll_frame(cx);
        if matches!(polled, Poll::Ready(None | Some(Err(_))))
            && let Some(slot) = this.slot.take()
        {
            slot.release();
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

/// `handed_at_ms` while the body, not the client, is the one to move (it waits for its shard, or
/// it has ended): the idle limit does not run.
const NOT_THE_CLIENTS_TURN: u64 = u64::MAX;

/// A watched download, shared by its body and its watchdog.
#[derive(Debug)]
struct Watch {
    /// The rest of the body; taken (dropped) by the watchdog when the client stalls.
    body: Mutex<Option<Body>>,
    slot: Slot,
    started: Instant,
    /// When (ms after `started`) the body last handed the server a piece, or
    /// [`NOT_THE_CLIENTS_TURN`].
    handed_at_ms: AtomicU64,
}

impl Watch {
    fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }
}

/// The body of a watched download.
#[derive(Debug)]
struct Watched {
    watch: Arc<Watch>,
    /// Dropped with the body, which ends the watchdog.
    _stop: oneshot::Sender<()>,
}

impl HttpBody for Watched {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let watch = &self.watch;
        let mut body = watch.body.lock();
        let Some(inner) = body.as_mut() else {
            let cut = std::io::Error::new(std::io::ErrorKind::TimedOut, "the client stopped reading the download");
            return Poll::Ready(Some(Err(axum::Error::new(cut))));
        };
        let polled = Pin::new(inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(_))) => watch.handed_at_ms.store(watch.now_ms(), Ordering::Release),
            Poll::Pending => watch.handed_at_ms.store(NOT_THE_CLIENTS_TURN, Ordering::Release),
            Poll::Ready(None | Some(Err(_))) => {
                watch.handed_at_ms.store(NOT_THE_CLIENTS_TURN, Ordering::Release);
                watch.slot.release();
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.watch.body.lock().as_ref().is_some_and(HttpBody::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.watch.body.lock().as_ref().map_or_else(SizeHint::default, HttpBody::size_hint)
    }
}

/// Wakes when the client's turn may have lasted `idle`; if it has, drops the rest of the body and
/// gives the slot back. Ends with the body (`stopped`) or after cutting it off.
async fn cut_off_when_idle(watch: Weak<Watch>, idle: Duration, mut stopped: oneshot::Receiver<()>, stalled: Counter) {
    let idle_ms = idle.as_millis() as u64;
    let mut wait = idle;
    loop {
        tokio::select! {
            _ = &mut stopped => return,
            () = tokio::time::sleep(wait) => {}
        }
        let Some(watch) = watch.upgrade() else { return };
        let handed_at = watch.handed_at_ms.load(Ordering::Acquire);
        let now = watch.now_ms();
        if handed_at == NOT_THE_CLIENTS_TURN {
            wait = idle;
            continue;
        }
        if now < handed_at.saturating_add(idle_ms) {
            wait = Duration::from_millis(handed_at + idle_ms - now);
            continue;
        }
        let rest = watch.body.lock().take();
        drop(rest);
        watch.slot.release();
        stalled.inc();
        tracing::info!(idle_ms, "a download's client stopped reading; cut off");
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::server::bulkhead::{Bulkheads, Compartment};

    /// The idle limit of these tests (real time: the watchdog runs on the runtime's clock).
    const IDLE: Duration = Duration::from_millis(200);

    fn tenant() -> Compartment {
        Compartment::Tenant("acme".into())
    }

    fn watched_download(bulkheads: &Bulkheads, watch: &TransferWatch, pieces: usize) -> Body {
        let slot = bulkheads.enter(tenant(), 1).unwrap();
        let pieces = futures::stream::iter((0..pieces).map(|_| Ok::<_, std::io::Error>(Bytes::from_static(b"piece"))));
        let mut response = Response::new(Body::from_stream(pieces));
        response.extensions_mut().insert(LongTransfer);
        watch.hold(response, slot).into_body()
    }

    #[tokio::test]
    async fn a_sent_response_gives_its_slot_back_and_keeps_its_length() {
        let bulkheads = Bulkheads::new(&mut Registry::default());
        let watch = TransferWatch::new(IDLE, &mut Registry::default());
        let slot = bulkheads.enter(tenant(), 1).unwrap();
        let response = watch.hold(Response::new(Body::from("hello")), slot);
        assert_eq!(response.body().size_hint().exact(), Some(5));
        assert_eq!(bulkheads.occupied(&tenant()), 1, "held while the body is unsent");
        let bytes = axum::body::to_bytes(response.into_body(), 1024).await.unwrap();
        assert_eq!(&bytes[..], b"hello");
        assert_eq!(bulkheads.occupied(&tenant()), 0);
    }

    #[tokio::test]
    async fn a_download_nobody_reads_is_cut_off_and_gives_its_slot_back() {
        let mut registry = Registry::default();
        let bulkheads = Bulkheads::new(&mut registry);
        let watch = TransferWatch::new(IDLE, &mut registry);
        let mut body = watched_download(&bulkheads, &watch, 4).into_data_stream();
        assert_eq!(body.next().await.unwrap().unwrap(), "piece");
        // The client reads no more.
        let deadline = Instant::now() + Duration::from_secs(10);
        while bulkheads.occupied(&tenant()) > 0 && Instant::now() < deadline {
            tokio::time::sleep(IDLE / 4).await;
        }
        assert_eq!(bulkheads.occupied(&tenant()), 0, "a client that stops reading gives its slot back");
        assert_eq!(watch.stalled("download").get(), 1);
        assert!(body.next().await.unwrap().is_err(), "the rest of the body is gone");
    }

    #[tokio::test]
    async fn a_download_read_to_its_end_is_not_counted_as_stalled() {
        let mut registry = Registry::default();
        let bulkheads = Bulkheads::new(&mut registry);
        let watch = TransferWatch::new(IDLE, &mut registry);
        let body = watched_download(&bulkheads, &watch, 3);
        let bytes = axum::body::to_bytes(body, 1024).await.unwrap();
        assert_eq!(&bytes[..], b"piecepiecepiece");
        assert_eq!(bulkheads.occupied(&tenant()), 0);
        tokio::time::sleep(IDLE * 3).await;
        assert_eq!(watch.stalled("download").get(), 0);
    }

    #[tokio::test]
    async fn an_upload_whose_body_stops_arriving_is_refused_as_stalled() {
        let watch = TransferWatch::new(IDLE, &mut Registry::default());
        let mut body = futures::stream::iter([1, 2]).chain(futures::stream::pending());
        assert_eq!(watch.next_piece(&mut body).await.unwrap(), Some(1));
        assert_eq!(watch.next_piece(&mut body).await.unwrap(), Some(2));
        let refused = watch.next_piece(&mut body).await.unwrap_err();
        assert_eq!(refused.code(), "transfer_stalled");
        assert_eq!(refused.status(), 408);
        assert_eq!(watch.stalled("upload").get(), 1);
    }
}
