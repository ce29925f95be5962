//! How fresh a read must be, as a request says it, and the tokens that carry a write's place:
//!
//! - `x-shardgate-consistency` (request): `strong` (the default: the primary, or the record
//!   cache, which is never older) or `bounded`, optionally `bounded; max-lag=250ms` (in `ms` or
//!   `s`, at most 5 min; without it `storage.replica_reads.max_lag`): a standby may serve it if
//!   it is at most that far behind the primary ([`shardgate_shard_router::storage::replicas`]).
//! - `x-shardgate-position` (response of a record write on a shard with standbys, and request):
//!   the write's place in its shard's WAL (`shard-a:0/16B3748`). A bounded read that brings it
//!   back (several, comma-separated, for writes on several shards) is never older than those
//!   writes, on any instance.
//! - Without `x-shardgate-consistency`, a read of a collection named in
//!   `storage.replica_reads.collections` is bounded by that collection's entry; any other is
//!   strong.
//! - `x-shardgate-read-from` (response of a bounded read): `cache`, `standby` or `primary`, what
//!   served it (`standby` for a listing only if every shard's part came from one).

use std::time::Duration;

use axum::http::{HeaderMap, HeaderName, HeaderValue};
use shardgate_shard_router::storage::replicas::{Bounded, Consistency, MAX_LAG_LIMIT, Position, ReadFrom};

use crate::wire::error::{ApiError, Code};
use crate::wire::routed_epoch::POSITION_HEADER;

/// The request header that asks for a bounded read.
pub const CONSISTENCY_HEADER: HeaderName = HeaderName::from_static("x-shardgate-consistency");

/// The response header that says what served a bounded read.
pub const READ_FROM_HEADER: HeaderName = HeaderName::from_static("x-shardgate-read-from");

/// The most position tokens a request may bring.
pub const MAX_POSITIONS: usize = 32;

/// What a request's headers ask of a read ([`read_consistency`]): a consistency, or none (its
/// collection's default applies, [`Asked::or_default`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Asked {
    /// The request said `strong` or `bounded`.
    Said(Consistency),
    /// It said nothing; the position tokens it brought, for a collection whose reads are bounded.
    Unsaid(Vec<Position>),
}

impl Asked {
    /// What the read must be: as the request said, else bounded by `collection_bound` (the
    /// collection's `storage.replica_reads.collections` entry), else strong.
    pub fn or_default(self, collection_bound: Option<Duration>) -> Consistency {
        match (self, collection_bound) {
            (Self::Said(consistency), _) => consistency,
            (Self::Unsaid(after), Some(max_lag)) => Consistency::Bounded(Bounded { max_lag, after }),
            (Self::Unsaid(_), None) => Consistency::Strong,
        }
    }
}

/// What the request's headers ask of a read; `default_max_lag` when a bounded read names none.
/// Without `x-shardgate-consistency`, the position tokens are read only when
/// `collection_defaults` (some collection's reads are bounded by default). 400 `invalid_header`
/// for a value that is not one of the forms above.
pub fn read_consistency(
    headers: &HeaderMap,
    default_max_lag: Duration,
    collection_defaults: bool,
) -> Result<Asked, ApiError> {
    let Some(value) = headers.get(CONSISTENCY_HEADER) else {
        let after = if collection_defaults { positions(headers)? } else { Vec::new() };
        return Ok(Asked::Unsaid(after));
    };
    let invalid = |why: &str| ApiError::new(Code::InvalidHeader, format!("x-shardgate-consistency: {why}"));
    let value = value.to_str().map_err(|_| invalid("must be text"))?;
    let mut parts = value.split(';').map(str::trim);
    let max_lag = match parts.next().unwrap_or("").to_ascii_lowercase().as_str() {
        "strong" => match parts.next() {
            None => return Ok(Asked::Said(Consistency::Strong)),
            Some(_) => return Err(invalid("`strong` takes no parameter")),
        },
        "bounded" => match parts.next() {
            None => default_max_lag,
            Some(parameter) => {
                let lag = parameter
                    .split_once('=')
                    .filter(|(name, _)| name.trim().eq_ignore_ascii_case("max-lag"))
                    .ok_or_else(|| invalid("the only parameter of `bounded` is max-lag (`bounded; max-lag=250ms`)"))?
                    .1;
                let lag = parse_lag(lag.trim())
                    .ok_or_else(|| invalid("max-lag is a whole number of ms or s above zero, at most 300s"))?;
                if parts.next().is_some() {
                    return Err(invalid("`bounded` takes one parameter, max-lag"));
                }
                lag
            }
        },
        _ => return Err(invalid("`strong` or `bounded` (optionally `bounded; max-lag=250ms`)")),
    };
    Ok(Asked::Said(Consistency::Bounded(Bounded { max_lag, after: positions(headers)? })))
}

/// `250ms` or `2s`, above zero and at most [`MAX_LAG_LIMIT`].
fn parse_lag(text: &str) -> Option<Duration> {
    let (digits, scale) = match text.strip_suffix("ms") {
        Some(digits) => (digits, 1),
        None => (text.strip_suffix('s')?, 1_000),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || digits.len() > 9 {
        return None;
    }
    let lag = Duration::from_millis(digits.parse::<u64>().ok()? * scale);
    (!lag.is_zero() && lag <= MAX_LAG_LIMIT).then_some(lag)
}

/// The position tokens the request brings back (none without the header).
fn positions(headers: &HeaderMap) -> Result<Vec<Position>, ApiError> {
    let invalid = || {
        ApiError::new(
            Code::InvalidHeader,
            format!(
                "x-shardgate-position: up to {MAX_POSITIONS} tokens as a write returned them (`shard-a:0/16B3748`), comma-separated"
            ),
        )
    };
    let mut found = Vec::new();
    for value in headers.get_all(POSITION_HEADER) {
        let value = value.to_str().map_err(|_| invalid())?;
        for token in value.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            found.push(Position::parse(token).ok_or_else(invalid)?);
            if found.len() > MAX_POSITIONS {
                return Err(invalid());
            }
        }
    }
    Ok(found)
}

/// The header value that says what served a bounded read: `None` for the record cache.
pub fn read_from_value(from: Option<ReadFrom>) -> HeaderValue {
    HeaderValue::from_static(match from {
        None => "cache",
        Some(ReadFrom::Standby) => "standby",
        Some(ReadFrom::Primary) => "primary",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked(consistency: Option<&str>, position: Option<&str>) -> Result<Consistency, ApiError> {
        asked_in(consistency, position, None)
    }

    fn asked_in(
        consistency: Option<&str>,
        position: Option<&str>,
        collection_bound: Option<Duration>,
    ) -> Result<Consistency, ApiError> {
        let mut headers = HeaderMap::new();
        if let Some(value) = consistency {
            headers.insert(CONSISTENCY_HEADER, HeaderValue::from_str(value).unwrap());
        }
        if let Some(value) = position {
            headers.insert(POSITION_HEADER, HeaderValue::from_str(value).unwrap());
        }
        read_consistency(&headers, Duration::from_secs(1), collection_bound.is_some())
            .map(|asked| asked.or_default(collection_bound))
    }

    fn bounded(max_lag_ms: u64, after: Vec<Position>) -> Consistency {
        Consistency::Bounded(Bounded { max_lag: Duration::from_millis(max_lag_ms), after })
    }

    #[test]
    fn the_forms_a_request_may_use() {
        assert_eq!(asked(None, None).unwrap(), Consistency::Strong);
        assert_eq!(asked(Some("strong"), None).unwrap(), Consistency::Strong);
        assert_eq!(asked(Some("Bounded"), None).unwrap(), bounded(1_000, vec![]));
        assert_eq!(asked(Some("bounded; max-lag=250ms"), None).unwrap(), bounded(250, vec![]));
        assert_eq!(asked(Some("bounded;max-lag=3s"), None).unwrap(), bounded(3_000, vec![]));
        let token = "shard-a:0/16B3748,shard-b:1/0";
        let Consistency::Bounded(read) = asked(Some("bounded"), Some(token)).unwrap() else { panic!() };
        assert_eq!(
            read.after.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["shard-a:0/16B3748", "shard-b:1/0"]
        );
        // A strong read needs no token: the primary has every write.
        assert_eq!(asked(None, Some("shard-a:0/1")).unwrap(), Consistency::Strong);
        assert_eq!(asked(Some("strong"), Some("nonsense")).unwrap(), Consistency::Strong);
        // A collection whose reads are bounded when the request does not say.
        let two_s = Some(Duration::from_secs(2));
        let Consistency::Bounded(read) = asked_in(None, Some("shard-a:0/5"), two_s).unwrap() else { panic!() };
        assert_eq!((read.max_lag, read.after.len()), (Duration::from_secs(2), 1));
        assert_eq!(asked_in(Some("strong"), None, two_s).unwrap(), Consistency::Strong);
        assert_eq!(asked_in(Some("bounded; max-lag=100ms"), None, two_s).unwrap(), bounded(100, vec![]));
    }

    #[test]
    fn what_is_refused_with_a_clear_message() {
        for bad in [
            "eventual",
            "strong; max-lag=1s",
            "bounded; lag=1s",
            "bounded; max-lag=0ms",
            "bounded; max-lag=301s",
            "bounded; max-lag=1.5s",
            "bounded; max-lag=-1s",
            "bounded; max-lag=1m",
            "bounded; max-lag=1s; x=1",
        ] {
            let e = asked(Some(bad), None).unwrap_err();
            assert_eq!(e.code(), "invalid_header", "{bad}");
            assert!(e.detail().starts_with("x-shardgate-consistency: "), "{bad}: {}", e.detail());
        }
        for bad in ["shard-a", "shard-a:zz/1", "Shard:0/1", &vec!["s:0/1"; 33].join(",")] {
            for (consistency, bound) in [(Some("bounded"), None), (None, Some(Duration::from_secs(1)))] {
                let e = asked_in(consistency, Some(bad), bound).unwrap_err();
                assert!(e.detail().starts_with("x-shardgate-position: "), "{bad}: {}", e.detail());
            }
        }
    }
}
