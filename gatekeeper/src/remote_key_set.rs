//! An issuer's key set fetched from its identity provider ([`crate::fetch`]), kept current
//! without a restart: fetched at start-up, refreshed on the schedule the provider's
//! `Cache-Control: max-age` asks for (within the configured bounds), and fetched once more when a
//! token names a `kid` the set lacks.
//!
//! Policy:
//! - The set in use is swapped atomically ([`ArcSwapOption`]): verification reads it without a
//!   lock and never waits for a scheduled fetch.
//! - A fetched set passes the checks of a `jwks_file` ([`crate::jwks`], [`crate::verification_key`])
//!   or is not taken: the last good set stays, and the failure becomes the issuer's last error.
//! - The last good set is used for at most `jwks_max_age_secs` after it was fetched; after that
//!   (every fetch failing) tokens of the issuer are refused ([`KeysNow::Expired`]), and before a
//!   first set arrives they are refused too ([`KeysNow::Unavailable`]).
//! - One fetch at a time (single flight), and a token with an unknown `kid` starts one at most
//!   once per `jwks_unknown_kid_refetch_secs`: a flood of forged `kid`s costs the provider at most
//!   one request per interval, whatever its size. A token whose unknown `kid` is due a fetch
//!   waits for it (and for a fetch already under way first, using its result), bounded by the
//!   fetch deadline; a token that is not due one (a fetch for an unknown `kid` was started within
//!   the interval) is answered at once with what the set in use says, never kept waiting for a
//!   slow provider.
//! - An operator may fetch every set at once ([`RemoteKeySet::fetch_now`], the admin API's
//!   `POST /v1/admin/key-sets/refresh`): a key removed from the provider's set (a compromised
//!   key) stops working as soon as that fetch takes the new set, not at the next scheduled one.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use arc_swap::ArcSwapOption;

use crate::config::{IssuerConfig, KeyAlgorithm};
use crate::fetch::{KeySetFetcher, LocationError};
use crate::jwks;
use crate::verification_key::{self, VerificationKey};

/// The outcomes a fetch is counted under (the `outcome` label; a closed set).
pub const FETCH_OUTCOMES: [&str; 6] = ["ok", "unreachable", "http_error", "too_large", "bad_discovery", "invalid_set"];

/// A key set as fetched: its keys by `kid`, when it arrived, and its number (each set taken gets
/// the next one), by which a remembered verification knows the set it was made with.
pub(crate) struct KeySnapshot {
    pub(crate) keys: Vec<(String, VerificationKey)>,
    fetched_at: Instant,
    pub(crate) generation: u64,
}

/// The keys a token of this issuer can be verified with now.
pub(crate) enum KeysNow {
    /// The last good set, younger than the maximum age.
    Ready(Arc<KeySnapshot>),
    /// No set was ever fetched.
    Unavailable,
    /// The last good set is older than the maximum age.
    Expired,
}

/// The schedule and bounds of one issuer's fetches, from its configuration.
#[derive(Debug, Clone, Copy)]
struct Schedule {
    refresh_min: Duration,
    refresh_max: Duration,
    unknown_kid_interval: Duration,
    max_age: Duration,
    fetch_timeout: Duration,
}

/// Why the fetch settings of an issuer are refused (a start-up error; says what to fix).
#[derive(Debug, thiserror::Error)]
pub(crate) enum RemoteKeySetError {
    #[error(transparent)]
    Location(#[from] LocationError),
    #[error("jwks_refresh_min_secs, jwks_fetch_timeout_secs and jwks_max_age_secs must be at least 1")]
    ZeroInterval,
    #[error(
        "jwks_refresh_min_secs ({min}) must not exceed jwks_refresh_max_secs ({max}), nor that \
         jwks_max_age_secs ({max_age}): a set must be refreshed before it is too old to use"
    )]
    Bounds { min: u64, max: u64, max_age: u64 },
    #[error("HS256 needs `secret`; a key set holds public keys only")]
    Hs256,
    #[error("a fetched key set needs the server's async runtime (start the authenticator inside it)")]
    NoRuntime,
}

/// What `/readyz` and the metrics say about one fetched key set.
#[derive(Debug, Clone)]
pub struct KeySetStatus {
    /// The issuer (`iss`).
    pub issuer: String,
    /// Where its keys come from (`jwks_url`, or the discovery document's URL).
    pub url: String,
    /// Time since the set in use was fetched; `None` before a first set.
    pub age: Option<Duration>,
    /// Whether tokens of the issuer can be verified (a set younger than `jwks_max_age_secs`).
    pub usable: bool,
    /// How old a set may get before its tokens are refused (`jwks_max_age_secs`).
    pub max_age: Duration,
    /// The last fetch's failure, if it failed (cleared by a good fetch).
    pub last_error: Option<String>,
    /// Fetches so far, by outcome ([`FETCH_OUTCOMES`], in that order).
    pub fetches: [u64; FETCH_OUTCOMES.len()],
}

/// One issuer's fetched key set; see the module documentation.
pub(crate) struct RemoteKeySet {
    issuer: IssuerConfig,
    algorithms: Vec<KeyAlgorithm>,
    leeway_secs: u64,
    fetcher: KeySetFetcher,
    schedule: Schedule,
    current: ArcSwapOption<KeySnapshot>,
    last_error: parking_lot::Mutex<Option<String>>,
    fetches: [AtomicU64; FETCH_OUTCOMES.len()],
    /// Held for the whole of a fetch: one at a time.
    fetch_lock: tokio::sync::Mutex<()>,
    /// Fetches completed (whatever their outcome); a waiter compares it to what it saw.
    completed: tokio::sync::watch::Sender<u64>,
    /// When a token's unknown `kid` last started a fetch.
    last_unknown_kid_fetch: parking_lot::Mutex<Option<Instant>>,
}

impl RemoteKeySet {
    /// The key set of `issuer` (`jwks_url` or `discovery` set), not fetched yet; `algorithms` is
    /// its allow-list. [`RemoteKeySet::start`] fetches it and keeps it current.
    pub(crate) fn new(
        issuer: &IssuerConfig,
        algorithms: &[KeyAlgorithm],
        leeway_secs: u64,
    ) -> Result<Self, RemoteKeySetError> {
        if algorithms.contains(&KeyAlgorithm::HS256) {
            return Err(RemoteKeySetError::Hs256);
        }
        let (min, max, max_age) =
            (issuer.jwks_refresh_min_secs, issuer.jwks_refresh_max_secs, issuer.jwks_max_age_secs);
        if min == 0 || max_age == 0 || issuer.jwks_fetch_timeout_secs == 0 {
            return Err(RemoteKeySetError::ZeroInterval);
        }
        if min > max || max > max_age {
            return Err(RemoteKeySetError::Bounds { min, max, max_age });
        }
        let schedule = Schedule {
            refresh_min: Duration::from_secs(min),
            refresh_max: Duration::from_secs(max),
            unknown_kid_interval: Duration::from_secs(issuer.jwks_unknown_kid_refetch_secs),
            max_age: Duration::from_secs(max_age),
            fetch_timeout: Duration::from_secs(issuer.jwks_fetch_timeout_secs),
        };
        Ok(Self {
            issuer: issuer.clone(),
            algorithms: algorithms.to_vec(),
            leeway_secs,
            fetcher: KeySetFetcher::new(issuer)?,
            schedule,
            current: ArcSwapOption::empty(),
            last_error: parking_lot::Mutex::new(None),
            fetches: Default::default(),
            fetch_lock: tokio::sync::Mutex::new(()),
            completed: tokio::sync::watch::Sender::new(0),
            last_unknown_kid_fetch: parking_lot::Mutex::new(None),
        })
    }

    /// Starts fetching the set and keeping it current, in a task of the current runtime that
    /// ends when the set is dropped.
    pub(crate) fn start(self: &Arc<Self>) -> Result<(), RemoteKeySetError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| RemoteKeySetError::NoRuntime)?;
        runtime.spawn(refresh(Arc::downgrade(self)));
        Ok(())
    }

    /// The issuer.
    pub(crate) fn issuer(&self) -> &str {
        &self.issuer.issuer
    }

    /// The URL its keys come from, as configured.
    pub(crate) fn url(&self) -> String {
        self.fetcher.configured_url().to_string()
    }

    /// The keys to verify with now.
    pub(crate) fn keys_now(&self) -> KeysNow {
        match self.current.load_full() {
            None => KeysNow::Unavailable,
            Some(snapshot) if snapshot.fetched_at.elapsed() > self.schedule.max_age => KeysNow::Expired,
            Some(snapshot) => KeysNow::Ready(snapshot),
        }
    }

    /// Waits (at most `within`) until a first fetch has ended, well or not.
    pub(crate) async fn first_fetch(&self, within: Duration) {
        let mut completed = self.completed.subscribe();
        let _ = tokio::time::timeout(within, completed.wait_for(|count| *count > 0)).await;
    }

    /// A token named a `kid` the set lacks (or the set is missing or too old): fetches the set
    /// again unless one was fetched for this reason within the interval, and returns whether a
    /// fetch ended meanwhile, or this one took a new set (then the token is worth verifying
    /// again). A fetch already under
    /// way is waited for, not repeated. Bounded by the fetch deadline.
    pub(crate) async fn refetch_for_unknown_kid(&self) -> bool {
        let seen = *self.completed.borrow();
        {
            // Not due: answered at once, not after a fetch under way (a slow provider would hold
            // every such token for its deadline).
            let mut last = self.last_unknown_kid_fetch.lock();
            if last.is_some_and(|at| at.elapsed() < self.schedule.unknown_kid_interval) {
                return false;
            }
            *last = Some(Instant::now());
        }
        let refetch = async {
            let _one_at_a_time = self.fetch_lock.lock().await;
            if *self.completed.borrow() != seen {
                return true;
            }
            self.fetch_locked().await.is_ok()
        };
        let bound = self.schedule.fetch_timeout + Duration::from_secs(1);
        tokio::time::timeout(bound, refetch).await.unwrap_or(false)
    }

    /// Fetches the set now, whatever the schedule and the unknown-`kid` interval (after a fetch
    /// already under way, which it does not count as its own), bounded by the fetch deadline:
    /// `Ok` once the new set is in use, or why it was not taken (the last good set stays).
    pub(crate) async fn fetch_now(&self) -> Result<(), String> {
        let fetch = async {
            let _one_at_a_time = self.fetch_lock.lock().await;
            self.fetch_locked()
                .await
                .map(|_| ())
                .map_err(|()| self.last_error.lock().clone().unwrap_or_else(|| "the key set was not taken".to_owned()))
        };
        let bound = self.schedule.fetch_timeout * 2 + Duration::from_secs(1);
        tokio::time::timeout(bound, fetch)
            .await
            .unwrap_or_else(|_| Err(format!("no key set within {} s", bound.as_secs())))
    }

    /// What `/readyz` and the metrics report.
    pub(crate) fn status(&self) -> KeySetStatus {
        let current = self.current.load();
        let age = current.as_ref().map(|snapshot| snapshot.fetched_at.elapsed());
        KeySetStatus {
            issuer: self.issuer.issuer.clone(),
            url: self.url(),
            age,
            usable: age.is_some_and(|age| age <= self.schedule.max_age),
            max_age: self.schedule.max_age,
            last_error: self.last_error.lock().clone(),
            fetches: std::array::from_fn(|i| self.fetches[i].load(Ordering::Relaxed)),
        }
    }

    /// One scheduled fetch; returns how long to wait before the next.
    async fn scheduled_fetch(&self, failures: &mut u32) -> Duration {
        let max_age = {
            let _one_at_a_time = self.fetch_lock.lock().await;
            self.fetch_locked().await
        };
        match max_age {
            Ok(asked) => {
                *failures = 0;
                asked.unwrap_or(self.schedule.refresh_min).clamp(self.schedule.refresh_min, self.schedule.refresh_max)
            }
            Err(()) => {
                // 1 s, 2 s, 4 s... up to the shortest refresh interval.
                let backoff = Duration::from_secs(1u64 << (*failures).min(16));
                *failures = failures.saturating_add(1);
                backoff.min(self.schedule.refresh_min)
            }
        }
    }

    /// Fetches, checks and swaps in the set (the caller holds `fetch_lock`); returns the
    /// response's `max-age`, or `Err` when the set was not taken.
    async fn fetch_locked(&self) -> Result<Option<Duration>, ()> {
        let outcome = match self.fetcher.fetch().await {
            Ok(fetched) => self.take(&fetched.body).map(|()| fetched.max_age).map_err(|reason| ("invalid_set", reason)),
            Err(error) => Err((error.outcome(), error.to_string())),
        };
        let label = match &outcome {
            Ok(_) => "ok",
            Err((label, _)) => label,
        };
        if let Some(index) = FETCH_OUTCOMES.iter().position(|outcome| *outcome == label) {
            self.fetches[index].fetch_add(1, Ordering::Relaxed);
        }
        let result = match outcome {
            Ok(max_age) => {
                *self.last_error.lock() = None;
                Ok(max_age)
            }
            Err((_, reason)) => {
                tracing::warn!(
                    issuer = self.issuer.issuer,
                    error = reason,
                    "the issuer's key set was not fetched; the last good set (if any) stays in use"
                );
                *self.last_error.lock() = Some(reason);
                Err(())
            }
        };
        self.completed.send_modify(|count| *count += 1);
        result
    }

    /// Checks a fetched key set as a `jwks_file` is checked, and puts it in use.
    fn take(&self, body: &str) -> Result<(), String> {
        let parsed = jwks::parse_key_set(body, &self.algorithms).map_err(|e| format!("key set refused: {e}"))?;
        let keys = verification_key::set_keys(&self.issuer, parsed, self.leeway_secs)
            .map_err(|e| format!("key set refused: {e}"))?;
        let generation = self.current.load().as_ref().map_or(1, |snapshot| snapshot.generation + 1);
        let kids: Vec<&str> = keys.iter().map(|(kid, _)| kid.as_str()).collect();
        tracing::debug!(issuer = self.issuer.issuer, kids = ?kids, "the issuer's key set is fetched");
        self.current.store(Some(Arc::new(KeySnapshot { keys, fetched_at: Instant::now(), generation })));
        Ok(())
    }
}

/// Keeps `set` current while it exists.
async fn refresh(set: std::sync::Weak<RemoteKeySet>) {
    let mut failures = 0;
    loop {
        let Some(live) = set.upgrade() else { return };
        let next = live.scheduled_fetch(&mut failures).await;
        drop(live);
        tokio::time::sleep(next).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fetch::FetchError;

    #[test]
    fn every_failure_has_an_outcome_label() {
        let errors = [
            FetchError::Unreachable { url: "u".into(), reason: "r".into() },
            FetchError::Status { url: "u".into(), status: 500 },
            FetchError::TooLarge { url: "u".into() },
            FetchError::Discovery { url: "u".into(), reason: "r".into() },
        ];
        assert!(errors.iter().all(|error| FETCH_OUTCOMES.contains(&error.outcome())));
    }

    #[test]
    fn refresh_bounds_are_checked_at_start_up() {
        let issuer = |min: u64, max: u64, max_age: u64| IssuerConfig {
            jwks_url: Some("http://127.0.0.1:1/jwks".into()),
            jwks_refresh_min_secs: min,
            jwks_refresh_max_secs: max,
            jwks_max_age_secs: max_age,
            ..IssuerConfig::named("x")
        };
        let start = |config: IssuerConfig| RemoteKeySet::new(&config, &[KeyAlgorithm::RS256], 0).map(drop);
        assert!(start(issuer(300, 86_400, 86_400)).is_ok());
        assert!(start(issuer(600, 300, 86_400)).unwrap_err().to_string().contains("must not exceed"));
        assert!(start(issuer(60, 7_200, 3_600)).unwrap_err().to_string().contains("must not exceed"));
        assert!(start(issuer(0, 1, 1)).unwrap_err().to_string().contains("at least 1"));
        let hs = RemoteKeySet::new(&issuer(1, 1, 1), &[KeyAlgorithm::HS256], 0).map(drop);
        assert!(hs.unwrap_err().to_string().contains("HS256 needs `secret`"));
        let plain = IssuerConfig { jwks_url: Some("http://idp.example.com/jwks".into()), ..issuer(1, 1, 1) };
        assert!(start(plain).unwrap_err().to_string().contains("use https://"));
    }
}
