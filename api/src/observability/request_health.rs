//! Request health on the request path: the edge ([`crate::server::edge`]) counts every answer
//! in the instance's request-health meter ([`RequestMeter`], flushed to the catalog with the
//! load windows) under its route label (the closed set of [`super::metrics::route_label`]) and,
//! when the request was routed to one shard, under that shard too.
//!
//! Which shard: the handler that routes a request names it with [`routed_to`] (which also
//! records it on the request's span). The name goes through a buffer of the thread that polls the
//! request (the edge polls its handler on that thread, and empties the buffer around each poll),
//! so a request costs no allocation and no lock; a request spread over several shards (a fan-out
//! listing) counts under its route only.
//!
//! What is an error: a 5xx (the service failed, a shard was unavailable, a deadline passed) or a
//! 429 (the service refused work it was asked for). A client's other 4xx (a bad request, a
//! missing record, a failed precondition) is not: the service answered it correctly.

use std::cell::RefCell;

use axum::http::StatusCode;
use shardgate_shard_router::ShardId;
use shardgate_shard_router::balance::RequestMeter;

thread_local! {
    /// The shard the request being polled on this thread was routed to, empty when none.
    static ROUTED_SHARD: RefCell<String> = RefCell::new(String::with_capacity(64));
}

/// Whether an answer of `status` counts as an error of the service.
pub fn is_error(status: StatusCode) -> bool {
    status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS
}

/// Notes that the request being handled was routed to `shard`: on its span, and for its
/// request-health counts.
pub fn routed_to(shard: &ShardId) {
    tracing::Span::current().record("shard", shard.as_str());
    ROUTED_SHARD.with_borrow_mut(|routed| {
        routed.clear();
        routed.push_str(shard.as_str());
    });
}

/// Forgets any shard noted on this thread: called before a request's handler is polled.
pub(crate) fn forget_routed_shard() {
    ROUTED_SHARD.with_borrow_mut(String::clear);
}

/// The slot in `meter` of the shard noted on this thread since [`forget_routed_shard`], if one
/// was; the note is forgotten.
pub(crate) fn take_routed_shard(meter: &RequestMeter) -> Option<usize> {
    ROUTED_SHARD.with_borrow_mut(|routed| {
        if routed.is_empty() {
            return None;
        }
        let slot = meter.shard_slot(routed);
        routed.clear();
        slot
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_5xx_and_429_only() {
        for status in [500, 502, 503, 504, 429] {
            assert!(is_error(StatusCode::from_u16(status).unwrap()), "{status}");
        }
        for status in [200, 201, 304, 400, 401, 403, 404, 409, 412, 422] {
            assert!(!is_error(StatusCode::from_u16(status).unwrap()), "{status}");
        }
    }

    #[test]
    fn a_noted_shard_is_taken_once() {
        let meter = RequestMeter::new(std::time::Duration::from_secs(10));
        forget_routed_shard();
        assert_eq!(take_routed_shard(&meter), None);
        routed_to(&ShardId::parse("s1").unwrap());
        let slot = take_routed_shard(&meter);
        assert!(slot.is_some());
        assert_eq!(take_routed_shard(&meter), None);
        routed_to(&ShardId::parse("s1").unwrap());
        assert_eq!(take_routed_shard(&meter), slot, "the same shard keeps its slot");
    }
}
