//! Reads from standbys. A shard whose URL names several hosts
//! (`postgres://u@pg-a,pg-b,pg-c/shard1?target_session_attrs=read-write`) writes on the one that
//! is the primary ([`crate::storage::hosts`]); with `storage.replica_reads.enabled`, the others
//! (streaming standbys of it) may serve the reads that ask for it ([`Consistency::Bounded`]):
//!
//! - **Never older than the bound.** Every `poll_interval` the primary's WAL insert position is
//!   sampled, with the time the question was sent, and each standby's replay position is read.
//!   A standby that has replayed up to a sample taken at `t` holds every write acknowledged
//!   before `t`; a read it serves at `now` is at most `now - t` old. A standby is chosen only if
//!   that is within the read's `max_lag` (the sampling's own delay counts against it: the bound
//!   is never exceeded, a standby is used a little less than it could be).
//! - **Read your writes.** A write on such a shard is answered with the primary's insert position
//!   after its commit ([`Position`], the `x-shardgate-position` header). A read that brings it
//!   back is served by a standby only once that standby has replayed up to it, on any instance.
//! - **A new placement.** A standby is used only if its data is at least as new as the map this
//!   instance routes on (`map_since`): after a move's cut-over, a standby of the new shard that
//!   has not replayed the copy yet would not hold the moved records.
//! - **Falling back.** No standby fits (lagging, stopped, not yet polled, or this shard has
//!   none): the primary serves the read. A standby read that fails (the standby died, froze past
//!   the statement deadline) is read again on the primary. Whatever the standbys do, a bounded
//!   read is answered as a strong read would be, only later.
//!
//! The polling and the standbys' pools are in [`crate::storage::db`]; this file holds what they
//! decide with, and no I/O.

use std::collections::{BTreeMap, VecDeque};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::ids::ShardId;

/// `[storage.replica_reads]`: reads from the standbys a shard's URL names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReplicaReadsConfig {
    /// Let reads that ask for it (`x-shardgate-consistency: bounded`) go to the standbys of
    /// shards whose URL names several hosts, and answer writes on such shards with a position
    /// token (`x-shardgate-position`). Each instance then asks every such shard's primary and
    /// standbys for their WAL positions every `poll_interval`. Off: every read goes to the
    /// primary, bounded or not. Default false.
    pub enabled: bool,
    /// The most a bounded read may lag behind the primary when the request names no
    /// `max-lag` of its own. Default 1 s.
    #[serde(with = "crate::humantime_serde")]
    pub max_lag: Duration,
    /// How often the primary's and the standbys' WAL positions are read. A standby is judged
    /// as old as its last answer, so this is also the least lag a standby can be shown to have.
    /// Default 100 ms.
    #[serde(with = "crate::humantime_serde")]
    pub poll_interval: Duration,
    /// Collections whose reads are bounded when the request does not say
    /// (`x-shardgate-consistency`; `strong` still reads the primary), by collection name, with
    /// their bound: for example `{ "events" = "2s" }`. Default: none.
    #[serde(with = "crate::humantime_serde::map")]
    pub collections: BTreeMap<String, Duration>,
}

impl Default for ReplicaReadsConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            max_lag: Duration::from_secs(1),
            poll_interval: Duration::from_millis(100),
            collections: BTreeMap::new(),
        }
    }
}

impl ReplicaReadsConfig {
    /// The bound of `collection`'s reads when the request names none: its own, if it has one.
    pub fn bound_of(&self, collection: &str) -> Option<Duration> {
        self.collections.get(collection).copied()
    }
}

/// The longest `max-lag` a request may name (samples of the primary's position are kept this
/// long).
pub const MAX_LAG_LIMIT: Duration = Duration::from_secs(300);

/// How fresh a read must be.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Consistency {
    /// From the primary (or the record cache, which never serves older than the primary).
    #[default]
    Strong,
    /// From a standby if one fits the bound, else from the primary.
    Bounded(Bounded),
}

/// A bounded read's bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bounded {
    /// At most this far behind the primary.
    pub max_lag: Duration,
    /// And never older than these writes (position tokens the client brought back).
    pub after: Vec<Position>,
}

impl Bounded {
    /// The position this read must have seen on `shard`, if it brought one for it.
    fn after_on(&self, shard: &ShardId) -> Option<u64> {
        self.after.iter().filter(|p| &p.shard == shard).map(|p| p.lsn).max()
    }
}

/// A write's place in its shard's WAL: the token a client brings back to read its own writes
/// from a standby. Written `<shard>:<lsn>`, the LSN as PostgreSQL writes it (`shard-a:0/16B3748`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    /// The shard written.
    pub shard: ShardId,
    /// The primary's WAL insert position after the write's commit.
    pub lsn: u64,
}

impl Position {
    /// Parses `shard:hi/lo`; `None` if it is not one.
    pub fn parse(token: &str) -> Option<Self> {
        let (shard, lsn) = token.trim().split_once(':')?;
        let (hi, lo) = lsn.split_once('/')?;
        let hi = u32::from_str_radix(hi, 16).ok()?;
        let lo = u32::from_str_radix(lo, 16).ok()?;
        Some(Self { shard: ShardId::parse(shard).ok()?, lsn: (u64::from(hi) << 32) | u64::from(lo) })
    }
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{:X}/{:X}", self.shard, self.lsn >> 32, self.lsn & 0xFFFF_FFFF)
    }
}

/// Who served a read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadFrom {
    /// The primary.
    Primary,
    /// A standby.
    Standby,
}

/// Milliseconds since this process first asked: the clock freshness is judged by (monotonic).
pub fn mono_ms() -> u64 {
    static BASE: OnceLock<Instant> = OnceLock::new();
    u64::try_from(BASE.get_or_init(Instant::now).elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// What one standby was last seen to have replayed.
#[derive(Debug, Clone, Copy, Default)]
struct Seen {
    /// It answered its last poll as a standby.
    up: bool,
    /// Its replay position then.
    replayed: u64,
    /// The time (`mono_ms`) of the newest sample of the primary it has replayed: it holds every
    /// write acknowledged before then. `None`: none known.
    fresh_as_of: Option<u64>,
}

/// One standby: its handle (`D`, a database in [`crate::storage::db`]) and what it was seen to
/// have replayed.
#[derive(Debug)]
pub(crate) struct Standby<D> {
    /// The host as written in the URL.
    pub name: String,
    /// What reads it.
    pub db: D,
    seen: Mutex<Seen>,
}

/// The standbys of one shard and the primary's recent positions.
#[derive(Debug)]
pub(crate) struct Replicas<D> {
    /// Every host of the URL; the primary's is skipped when choosing.
    standbys: Vec<Standby<D>>,
    /// The primary's insert positions, oldest first, with when each was asked (`mono_ms`), and
    /// the primary they were asked of.
    samples: Mutex<(usize, VecDeque<(u64, u64)>)>,
    /// Where the next choice starts, so reads spread over the standbys that fit.
    next: AtomicUsize,
    /// Bounded reads sent to a standby, served by the primary for want of a fitting one, and
    /// read again on the primary after a standby failed.
    pub standby_reads: AtomicU64,
    pub primary_reads: AtomicU64,
    pub fallbacks: AtomicU64,
    /// How it was configured.
    pub config: ReplicaReadsConfig,
    /// How long a poll, or the question of a write's position, waits for an answer.
    pub timeout: Duration,
}

impl<D: Clone> Replicas<D> {
    /// Over `standbys` (name and handle, one per host of the URL), configured by `config`, each
    /// question waiting `timeout` for its answer.
    pub fn new(standbys: Vec<(String, D)>, config: ReplicaReadsConfig, timeout: Duration) -> Self {
        Self {
            standbys: standbys
                .into_iter()
                .map(|(name, db)| Standby { name, db, seen: Mutex::new(Seen::default()) })
                .collect(),
            samples: Mutex::new((usize::MAX, VecDeque::new())),
            next: AtomicUsize::new(0),
            standby_reads: AtomicU64::new(0),
            primary_reads: AtomicU64::new(0),
            fallbacks: AtomicU64::new(0),
            config,
            timeout,
        }
    }

    /// The hosts other than number `primary`: those to poll.
    pub fn others(&self, primary: usize) -> impl Iterator<Item = (usize, &Standby<D>)> + '_ {
        self.standbys.iter().enumerate().filter(move |(i, _)| *i != primary)
    }

    /// Notes that host number `primary`'s insert position was `lsn` when asked at `asked` (`mono_ms`). A
    /// sample of another primary than the last (a failover) starts the samples afresh: the new
    /// primary's positions go on from where it was promoted, not from the former's.
    pub fn sampled_primary(&self, primary: usize, asked: u64, lsn: u64) {
        let mut samples = self.samples.lock();
        if samples.0 != primary {
            *samples = (primary, VecDeque::new());
            for standby in &self.standbys {
                *standby.seen.lock() = Seen::default();
            }
        }
        let keep_from = asked.saturating_sub(u64::try_from(MAX_LAG_LIMIT.as_millis()).unwrap_or(u64::MAX));
        while samples.1.front().is_some_and(|&(at, _)| at < keep_from) {
            samples.1.pop_front();
        }
        samples.1.push_back((asked, lsn));
    }

    /// Notes what standby number `index` answered: `Some(lsn)` its replay position, as a
    /// standby; `None` it did not answer, or is no standby (promoted, or not replicating).
    pub fn sampled_standby(&self, index: usize, replayed: Option<u64>) {
        let Some(standby) = self.standbys.get(index) else { return };
        let Some(replayed) = replayed else {
            standby.seen.lock().up = false;
            return;
        };
        let samples = self.samples.lock();
        let covered = samples.1.partition_point(|&(_, lsn)| lsn <= replayed);
        let fresh_as_of = covered.checked_sub(1).map(|i| samples.1[i].0);
        drop(samples);
        let mut seen = standby.seen.lock();
        *seen = Seen { up: true, replayed, fresh_as_of: fresh_as_of.max(seen.fresh_as_of) };
    }

    /// A standby of `shard` (whose primary is host number `primary`) that fits `bound` at `now`, its data no
    /// older than `not_before` (`mono_ms`); the next in turn when several do.
    pub fn choose(&self, shard: &ShardId, primary: usize, bound: &Bounded, not_before: u64, now: u64) -> Option<D> {
        let max_lag = u64::try_from(bound.max_lag.as_millis()).unwrap_or(u64::MAX);
        let after = bound.after_on(shard);
        let count = self.standbys.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        (0..count).map(|i| (start + i) % count).find_map(|index| {
            let standby = &self.standbys[index];
            if index == primary {
                return None;
            }
            let seen = *standby.seen.lock();
            let fresh = seen.fresh_as_of?;
            let fits = seen.up
                && fresh >= not_before
                && now.saturating_sub(fresh) <= max_lag
                && after.is_none_or(|lsn| seen.replayed >= lsn);
            fits.then(|| standby.db.clone())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard() -> ShardId {
        ShardId::parse("s1").unwrap()
    }

    fn bound(max_lag_ms: u64, after: Option<u64>) -> Bounded {
        Bounded {
            max_lag: Duration::from_millis(max_lag_ms),
            after: after.map(|lsn| Position { shard: shard(), lsn }).into_iter().collect(),
        }
    }

    fn replicas() -> Replicas<&'static str> {
        Replicas::new(vec![("a".into(), "a"), ("b".into(), "b")], ReplicaReadsConfig::default(), Duration::from_secs(1))
    }

    #[test]
    fn a_position_reads_back_as_written() {
        let p = Position { shard: shard(), lsn: (1 << 32) | 0x016B_3748 };
        assert_eq!(p.to_string(), "s1:1/16B3748");
        assert_eq!(Position::parse("s1:1/16B3748"), Some(p));
        for bad in ["s1", "s1:12", "S1:0/1", "s1:0/x", ":0/1", "s1:100000000/0"] {
            assert_eq!(Position::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_standby_is_as_fresh_as_the_newest_sample_it_has_replayed() {
        let r = replicas();
        r.sampled_primary(0, 1_000, 100);
        r.sampled_primary(0, 1_100, 200);
        r.sampled_primary(0, 1_200, 300);
        // b has replayed 250: it holds what was acknowledged before 1_100, not before 1_200.
        r.sampled_standby(1, Some(250));
        assert_eq!(r.choose(&shard(), 0, &bound(400, None), 0, 1_500), Some("b"));
        assert_eq!(r.choose(&shard(), 0, &bound(399, None), 0, 1_500), None, "1_500 - 1_100 > 399");
        // Not older than the map it is routed on.
        assert_eq!(r.choose(&shard(), 0, &bound(400, None), 1_101, 1_500), None);
        // Nor than a write it must see.
        assert_eq!(r.choose(&shard(), 0, &bound(400, Some(250)), 0, 1_500), Some("b"));
        assert_eq!(r.choose(&shard(), 0, &bound(400, Some(251)), 0, 1_500), None);
        // A token of another shard says nothing here.
        let other = Bounded {
            max_lag: Duration::from_millis(400),
            after: vec![Position { shard: ShardId::parse("s2").unwrap(), lsn: 999 }],
        };
        assert_eq!(r.choose(&shard(), 0, &other, 0, 1_500), Some("b"));
    }

    #[test]
    fn the_primary_a_standby_that_did_not_answer_or_one_never_seen_is_not_chosen() {
        let r = replicas();
        r.sampled_primary(0, 1_000, 100);
        assert_eq!(r.choose(&shard(), 0, &bound(1_000, None), 0, 1_000), None, "b never polled");
        r.sampled_standby(0, Some(100));
        assert_eq!(r.choose(&shard(), 0, &bound(1_000, None), 0, 1_000), None, "a is the primary");
        r.sampled_standby(1, Some(50));
        assert_eq!(r.choose(&shard(), 0, &bound(1_000, None), 0, 1_000), None, "b replayed no sample");
        r.sampled_standby(1, Some(100));
        assert_eq!(r.choose(&shard(), 0, &bound(1_000, None), 0, 1_000), Some("b"));
        r.sampled_standby(1, None);
        assert_eq!(r.choose(&shard(), 0, &bound(1_000, None), 0, 1_000), None, "b stopped answering");
    }

    #[test]
    fn a_new_primary_starts_the_samples_afresh() {
        let r = replicas();
        r.sampled_primary(0, 1_000, 500);
        r.sampled_standby(1, Some(500));
        // b is promoted; a comes back as its standby, behind the former primary's last position.
        r.sampled_primary(1, 2_000, 400);
        assert_eq!(
            r.choose(&shard(), 1, &bound(5_000, None), 0, 2_000),
            None,
            "what a saw of the former primary is forgotten"
        );
        r.sampled_standby(0, Some(400));
        assert_eq!(r.choose(&shard(), 1, &bound(5_000, None), 0, 2_000), Some("a"));
    }
}
