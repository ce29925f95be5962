//! What the cache holds for one record key: the record (its version and its serialised
//! response body), a marker saying "versions below this one are stale", or a write mark saying
//! "a write of this key is in progress (or its instance died during it): read the shard".
//!
//! In Redis each is one string: `e:<version>:<body>`, `m:<version>` or
//! `w:<version>:<writers>` (the writers in progress; the Lua scripts of `l2.rs` count them).

use bytes::Bytes;

/// A cached record: its version and the exact response body to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedRecord {
    /// The record's version.
    pub version: i64,
    /// The serialised envelope (JSON), sent as-is on a hit.
    pub body: Bytes,
}

/// One cache slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slot {
    /// A live record.
    Record(CachedRecord),
    /// Written or deleted at this version: anything older must not be cached or served.
    Marker(i64),
    /// A write is in progress, or the instance making it died before it ended: the slot's
    /// versions up to this one were current before it began. Nothing is served from the slot or
    /// stored in it until the write ends (a [`Slot::Marker`] at its version replaces it) or the
    /// mark expires (`cache.write_mark_ttl`, longer than a write can take).
    Writing(i64),
}

impl Slot {
    /// The version the slot speaks for.
    pub fn version(&self) -> i64 {
        match self {
            Slot::Record(r) => r.version,
            Slot::Marker(v) | Slot::Writing(v) => *v,
        }
    }

    /// Whether a fill with a record of `version` may replace this slot: a record only replaces
    /// older records, and markers of its own version or older (a marker's own version is the
    /// write that made it, so a record of that version is fresh).
    pub fn accepts_fill(&self, version: i64) -> bool {
        match self {
            Slot::Record(r) => r.version < version,
            Slot::Marker(v) => *v <= version,
            Slot::Writing(_) => false,
        }
    }

    /// Whether an invalidation at `version` must replace this slot: it is older, or it is a
    /// write mark (the invalidation ends the write).
    pub fn accepts_invalidation(&self, version: i64) -> bool {
        matches!(self, Slot::Writing(_)) || self.version() < version
    }

    /// The Redis encoding.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Slot::Record(r) => {
                let mut out = format!("e:{}:", r.version).into_bytes();
                out.extend_from_slice(&r.body);
                out
            }
            Slot::Marker(v) => format!("m:{v}").into_bytes(),
            Slot::Writing(v) => format!("w:{v}:1").into_bytes(),
        }
    }

    /// Parses the Redis encoding; `None` for anything else (treated as a miss).
    pub fn decode(raw: &[u8]) -> Option<Self> {
        let (kind, rest) = raw.split_first()?;
        let rest = rest.strip_prefix(b":")?;
        match kind {
            b'e' => {
                let colon = rest.iter().position(|&b| b == b':')?;
                let version = std::str::from_utf8(&rest[..colon]).ok()?.parse().ok()?;
                Some(Slot::Record(CachedRecord { version, body: Bytes::copy_from_slice(&rest[colon + 1..]) }))
            }
            b'm' => Some(Slot::Marker(std::str::from_utf8(rest).ok()?.parse().ok()?)),
            b'w' => {
                let (version, writers) = std::str::from_utf8(rest).ok()?.split_once(':')?;
                writers.parse::<u64>().ok()?;
                Some(Slot::Writing(version.parse().ok()?))
            }
            _ => None,
        }
    }

    /// Approximate memory use, for the L1 weigher.
    pub fn weight(&self) -> u32 {
        let bytes = match self {
            Slot::Record(r) => 48 + r.body.len(),
            Slot::Marker(_) | Slot::Writing(_) => 32,
        };
        u32::try_from(bytes).unwrap_or(u32::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_round_trip_through_the_redis_encoding() {
        let record = Slot::Record(CachedRecord { version: 12, body: Bytes::from_static(b"{\"a\":\"x:y\"}") });
        assert_eq!(Slot::decode(&record.encode()), Some(record));
        assert_eq!(Slot::decode(&Slot::Marker(7).encode()), Some(Slot::Marker(7)));
        assert_eq!(Slot::decode(&Slot::Writing(7).encode()), Some(Slot::Writing(7)));
        assert_eq!(Slot::decode(b"w:7:3"), Some(Slot::Writing(7)));
        assert_eq!(Slot::decode(b"w:7"), None);
        assert_eq!(Slot::decode(b"garbage"), None);
        assert_eq!(Slot::decode(b"e:notanumber:{}"), None);
    }

    #[test]
    fn guards_keep_older_versions_out() {
        let record = |v| Slot::Record(CachedRecord { version: v, body: Bytes::new() });
        assert!(record(3).accepts_fill(4));
        assert!(!record(3).accepts_fill(3));
        assert!(!record(3).accepts_fill(2));
        assert!(Slot::Marker(5).accepts_fill(5));
        assert!(!Slot::Marker(5).accepts_fill(4));
        assert!(record(3).accepts_invalidation(4));
        assert!(!record(4).accepts_invalidation(4));
        assert!(!Slot::Marker(6).accepts_invalidation(5));
        assert!(!Slot::Writing(0).accepts_fill(9), "nothing is cached while a write is in progress");
        assert!(Slot::Writing(6).accepts_invalidation(5), "the end of a write replaces its mark");
    }
}
