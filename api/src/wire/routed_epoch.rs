//! `x-shardgate-epoch`: every routed answer names the shard-map epoch it was routed on (a
//! decimal u64), so clients and operators can see a cut-over happen (DESIGN.md §5, "Moving
//! data").
//!
//! Which epoch:
//! - a read: the [`Route::epoch`] of the route the handler resolved, also when the record cache
//!   answers without touching the shard (the route is resolved, and the tenant checked against
//!   the map, before the cache is asked);
//! - a write through [`ShardRouter::write`]: the route that finally served it ([`ServedOn`]:
//!   after the shard's fence sent it back and the map was refreshed, the new route's);
//! - an index look-up: the epoch of the map as the look-up starts, the map its index shards are
//!   chosen on ([`RoutedEpoch::current`]).
//!
//! Answers given after routing carry it, problems included (404 `record_not_found`, 412, a
//! shard's 503); answers given before routing (401, 403, a 400 of the request itself, a
//! refusal of the route itself such as 503 `shard_offline`), probes and admin calls do not.

use axum::http::{HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};
use parking_lot::Mutex;
use shardgate_shard_router::storage::replicas::Position;
use shardgate_shard_router::{Route, ShardRouter};

/// The header of a write's position in its shard's WAL: in the answer of a write on a shard that
/// reads from standbys, and brought back by a bounded read ([`crate::wire::consistency`]).
pub const POSITION_HEADER: HeaderName = HeaderName::from_static("x-shardgate-position");

/// The header value of a write's position.
fn position_value(position: &Position) -> HeaderValue {
    HeaderValue::try_from(position.to_string()).expect("a shard id, a colon and hexadecimal digits make a header value")
}

/// The response header that carries the epoch.
pub const EPOCH_HEADER: HeaderName = HeaderName::from_static("x-shardgate-epoch");

/// A failure that can say it was given after the request was routed: the API's problem
/// (`ApiError`, which adds the header when it becomes a response).
pub trait RoutedProblem {
    /// The same failure, given after the request was routed on `epoch`.
    #[must_use]
    fn routed_on(self, epoch: RoutedEpoch) -> Self;
}

/// The shard-map epoch a request was routed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoutedEpoch(u64);

impl RoutedEpoch {
    /// The epoch `route` was decided on.
    pub fn of(route: &Route) -> Self {
        Self(route.epoch)
    }

    /// The epoch of the map `router` holds now: for work that routes on the whole map rather
    /// than through one [`Route`] (index look-ups).
    pub fn current(router: &ShardRouter) -> Self {
        Self(router.epoch())
    }

    /// The epoch.
    pub fn get(self) -> u64 {
        self.0
    }

    /// The header's value: the epoch in decimal.
    pub fn header_value(self) -> HeaderValue {
        HeaderValue::from(self.0)
    }

    /// `answer`, success or problem, with the header.
    pub fn stamp<T: IntoResponse, E: RoutedProblem>(self, answer: Result<T, E>) -> Result<Response, E> {
        match answer {
            Ok(answer) => {
                let mut response = answer.into_response();
                response.headers_mut().insert(EPOCH_HEADER, self.header_value());
                Ok(response)
            }
            Err(e) => Err(e.routed_on(self)),
        }
    }
}

/// The epoch of the route a write was finally served on: the write's closure notes each route
/// [`ShardRouter::write`] runs it on (twice when the shard's fence sent it back), and the
/// handler stamps its answer with the last one noted. Also the write's place in its shard's WAL,
/// when that shard reads from standbys (`x-shardgate-position`, [`crate::wire::consistency`]).
#[derive(Debug, Default)]
pub struct ServedOn {
    epoch: Mutex<Option<RoutedEpoch>>,
    position: Mutex<Option<Position>>,
}

impl ServedOn {
    /// Notes that the write runs on `route`.
    pub fn note(&self, route: &Route) {
        *self.epoch.lock() = Some(RoutedEpoch::of(route));
    }

    /// Notes the write's position, once it is done.
    pub fn note_position(&self, position: Position) {
        *self.position.lock() = Some(position);
    }

    /// The epoch of the last route noted; `None` if the write was refused before it ran on any.
    pub fn epoch(&self) -> Option<RoutedEpoch> {
        *self.epoch.lock()
    }

    /// `answer`, with the epoch header if a route was noted, and a success with the position
    /// header if one was.
    pub fn stamp<T: IntoResponse, E: RoutedProblem>(&self, answer: Result<T, E>) -> Result<Response, E> {
        let mut answer = match self.epoch() {
            Some(epoch) => epoch.stamp(answer),
            None => answer.map(IntoResponse::into_response),
        };
        if let (Ok(response), Some(position)) = (&mut answer, self.position.lock().take()) {
            response.headers_mut().insert(POSITION_HEADER, position_value(&position));
        }
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;
    use shardgate_shard_router::{ShardId, ShardState, Strategy};

    /// A failure that only remembers the epoch it was given.
    #[derive(Debug, PartialEq)]
    struct Refused(Option<RoutedEpoch>);

    impl RoutedProblem for Refused {
        fn routed_on(self, epoch: RoutedEpoch) -> Self {
            Refused(Some(epoch))
        }
    }

    fn route(epoch: u64) -> Route {
        Route {
            strategy: Strategy::Hash,
            vshard: 7,
            shard: ShardId::parse("shard-0").unwrap(),
            shard_state: ShardState::Active,
            epoch,
        }
    }

    fn epoch_of(response: &Response) -> Option<&str> {
        response.headers().get(EPOCH_HEADER).map(|v| v.to_str().unwrap())
    }

    #[test]
    fn a_routed_success_and_a_routed_problem_both_carry_the_epoch() {
        let epoch = RoutedEpoch::of(&route(u64::MAX));
        let ok = epoch.stamp(Ok::<_, Refused>(StatusCode::NO_CONTENT)).unwrap();
        assert_eq!(epoch_of(&ok), Some("18446744073709551615"));
        let refused = epoch.stamp(Err::<StatusCode, _>(Refused(None))).unwrap_err();
        assert_eq!(refused, Refused(Some(epoch)));
    }

    #[test]
    fn a_write_reports_the_last_route_it_ran_on_and_nothing_when_it_ran_on_none() {
        let served_on = ServedOn::default();
        let unrouted = served_on.stamp(Err::<StatusCode, _>(Refused(None))).unwrap_err();
        assert_eq!(unrouted, Refused(None), "refused before any route: no epoch");
        served_on.note(&route(4));
        served_on.note(&route(5));
        assert_eq!(served_on.epoch().map(RoutedEpoch::get), Some(5));
        let ok = served_on.stamp(Ok::<_, Refused>(StatusCode::CREATED)).unwrap();
        assert_eq!(epoch_of(&ok), Some("5"), "the route that finally served the write");
        let refused = served_on.stamp(Err::<StatusCode, _>(Refused(None))).unwrap_err();
        assert_eq!(refused.0.map(RoutedEpoch::get), Some(5));
    }
}
