//! The health of one database as its requests see it: every statement runs through
//! [`Health::run`], which gives it a deadline, a place in a bulkhead, and a circuit breaker that
//! fails it at once while the database is known to be down.
//!
//! # The breaker
//!
//! One breaker per database (per physical shard, and the catalog), never per vshard: per-vshard
//! traffic is too thin to judge. It is *closed* (statements run), *open* (they fail at once with
//! [`Refusal::Open`]), *half-open* (one trial statement at a time runs; its success closes the
//! breaker, its failure opens it again), or *forced open* by an operator until reset.
//!
//! It opens when
//! - `consecutive_failures` statements in a row failed for a reason that says the database is
//!   unwell (it cannot be reached, a connection broke, the pool timed out, a statement missed its
//!   deadline or was cancelled by the server: [`is_health_failure`]; never a constraint, a
//!   conflict or any other answer the database gave), or
//! - within one `window`, at least `min_statements` ran and `failure_rate` of them failed so, or
//! - a *probe* fails. A probe opens a new connection of its own (outside the pool, so it never
//!   queues behind hung statements) and runs `SELECT 1` within `probe_timeout`. One runs when a
//!   statement fails so, and when statements are in progress but none has finished for
//!   `stall_after` (a frozen database answers nothing, so no failure would ever arrive). A
//!   database that answers the probe at all, even with an error such as "too many clients", is
//!   up.
//!
//! When it opens, every statement still waiting on that database fails at once as well.
//! While it is open, a probe runs every `probe_interval`; the first that succeeds makes it
//! half-open. A trial that fails doubles the interval (up to `max_probe_interval`), so a database
//! that flaps is tried less often; a closed breaker resets it.
//!
//! With the defaults a dead database is detected at its first failed statement (a refused
//! connection fails at once, and so does the probe), a frozen one within `stall_after` + one
//! watchdog tick + `probe_timeout` = 0.85 s, and one that came back is serving again within `max_probe_interval +
//! probe_timeout` = 1.5 s.
//!
//! # The bulkhead
//!
//! At most `max_in_progress` statements run or wait for a connection on one database; the next
//! fails at once with [`Refusal::Busy`] instead of queueing, so one slow shard can hold only its
//! share of the instance's requests.
//!
//! # Retries
//!
//! [`Health::run_idempotent`] runs a read a second time, on another connection and after a short
//! jittered pause, when its first try failed for a transient reason and the breaker is still
//! closed. Retries draw on a budget: each statement that succeeds adds a tenth of a retry, up to
//! ten, so retries can add at most about 10% to the load of a database that is failing. Nothing
//! else in the gateway retries a statement.
//!
//! # Broken connections
//!
//! A pooled connection is not tested before use (that would cost a round trip per statement).
//! When one proves broken (the server restarted, a socket was reset: the errors a read would
//! retry), the idle connections of the database's pools are closed at once
//! ([`Health::on_broken_connection`]): they were opened before the break too, and each would
//! otherwise fail one statement of its own, writes included. Nothing is spent while no
//! connection breaks.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tokio::sync::{Notify, Semaphore};

use crate::humantime_serde;

/// The `[storage.pool.breaker]` settings: when a database's circuit breaker opens and closes.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BreakerConfig {
    /// Whether statements are judged at all. Default true.
    pub enabled: bool,
    /// Failed statements in a row that open the breaker. Default 5.
    pub consecutive_failures: u32,
    /// The share of failed statements within one `window` that opens the breaker. Default 0.5.
    pub failure_rate: f64,
    /// Fewest statements in a `window` for `failure_rate` to count. Default 20.
    pub min_statements: u32,
    /// The window of `failure_rate`. Default 1 s.
    #[serde(with = "humantime_serde")]
    pub window: Duration,
    /// How long statements may be in progress with none finishing before a probe checks the
    /// database. Default 300 ms.
    #[serde(with = "humantime_serde")]
    pub stall_after: Duration,
    /// How long a probe may take to connect and answer `SELECT 1`. Default 500 ms.
    #[serde(with = "humantime_serde")]
    pub probe_timeout: Duration,
    /// How often an open breaker probes its database. Default 250 ms.
    #[serde(with = "humantime_serde")]
    pub probe_interval: Duration,
    /// The longest interval between probes after failed trials. Default 1 s.
    #[serde(with = "humantime_serde")]
    pub max_probe_interval: Duration,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            consecutive_failures: 5,
            failure_rate: 0.5,
            min_statements: 20,
            window: Duration::from_secs(1),
            stall_after: Duration::from_millis(300),
            probe_timeout: Duration::from_millis(500),
            probe_interval: Duration::from_millis(250),
            max_probe_interval: Duration::from_secs(1),
        }
    }
}

impl BreakerConfig {
    /// Checks the settings; the message names the one that is wrong.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.failure_rate > 0.0 && self.failure_rate <= 1.0) {
            return Err(format!("breaker.failure_rate must be in (0, 1], not {}", self.failure_rate));
        }
        if self.consecutive_failures == 0 {
            return Err("breaker.consecutive_failures must be at least 1".to_owned());
        }
        for (name, value) in [
            ("window", self.window),
            ("stall_after", self.stall_after),
            ("probe_timeout", self.probe_timeout),
            ("probe_interval", self.probe_interval),
        ] {
            if value.is_zero() {
                return Err(format!("breaker.{name} must be more than 0"));
            }
        }
        if self.max_probe_interval < self.probe_interval {
            return Err("breaker.max_probe_interval must be at least breaker.probe_interval".to_owned());
        }
        Ok(())
    }
}

/// The state of a circuit breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BreakerState {
    /// Statements run.
    Closed,
    /// Statements fail at once; probes run.
    Open,
    /// One trial statement at a time runs.
    HalfOpen,
    /// Opened by an operator; only a reset closes it.
    ForcedOpen,
}

impl BreakerState {
    const ALL: [Self; 4] = [Self::Closed, Self::Open, Self::HalfOpen, Self::ForcedOpen];

    /// Its name in the API and in metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Closed => "closed",
            Self::Open => "open",
            Self::HalfOpen => "half_open",
            Self::ForcedOpen => "forced_open",
        }
    }

    fn from_u8(raw: u8) -> Self {
        Self::ALL.get(usize::from(raw)).copied().unwrap_or(Self::Closed)
    }
}

/// Why a statement did not run, or did not finish.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// The breaker is open: the database is known to be down.
    #[error("the database is unavailable (circuit breaker {state}: {reason}); retry in {retry_after:?}")]
    Open {
        /// `open`, `half_open` or `forced_open`.
        state: &'static str,
        /// Why it opened.
        reason: String,
        /// When a retry may succeed.
        retry_after: Duration,
    },
    /// The bulkhead is full.
    #[error("too many statements in progress on the database ({0}); retry")]
    Busy(u32),
    /// The statement missed its deadline.
    #[error("the statement did not finish within {0:?}")]
    Deadline(Duration),
    /// The breaker opened while the statement was in progress: it was abandoned unanswered.
    #[error("the database became unavailable while the statement was in progress (circuit breaker open: {reason})")]
    Interrupted {
        /// Why the breaker opened.
        reason: String,
        /// When a retry may succeed.
        retry_after: Duration,
    },
    /// The driver's error.
    #[error(transparent)]
    Sql(#[from] sqlx::Error),
}

impl Refusal {
    /// Whether the statement may have reached the database before it was given up on: a write
    /// refused this way may or may not have been applied.
    pub fn outcome_unknown(&self) -> bool {
        matches!(self, Self::Deadline(_) | Self::Interrupted { .. })
    }

    /// When a retry may succeed, if the refusal says.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Open { retry_after, .. } | Self::Interrupted { retry_after, .. } => Some(*retry_after),
            Self::Busy(_) => Some(Duration::from_secs(1)),
            Self::Deadline(_) | Self::Sql(_) => None,
        }
    }
}

/// A snapshot of a database's health, for `/readyz`, `/metrics` and the admin API.
#[derive(Debug, Clone, serde::Serialize)]
pub struct HealthReport {
    /// The breaker's state.
    pub breaker: BreakerState,
    /// Why it last opened, while it is not closed.
    pub reason: Option<String>,
    /// How many times it opened since start-up.
    pub opens: u64,
    /// Statements in progress (running or waiting for a connection).
    pub in_progress: u32,
    /// Statements refused by the open breaker since start-up.
    pub refused: u64,
    /// Statements refused by the full bulkhead since start-up.
    pub shed: u64,
    /// Reads retried since start-up.
    pub retries: u64,
}

/// The outcome of a readiness ping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ping {
    /// How long it took.
    pub latency_ms: u64,
    /// Why it failed, if it did.
    pub failure: Option<PingFailure>,
}

/// Why a readiness ping failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PingFailure {
    /// The database could not be reached, or did not answer in time.
    Unreachable,
    /// It answered with an error.
    QueryFailed,
}

/// Tenths of a retry the budget holds at most (ten retries).
const RETRY_BUDGET_MAX: u32 = 100;

/// How a database connects for a probe (outside its pool).
pub(crate) type ProbeConnect =
    Arc<dyn Fn() -> futures::future::BoxFuture<'static, Result<(), sqlx::Error>> + Send + Sync>;

/// Closes the idle connections of a database's pools; returns how many it closed.
pub(crate) type CloseIdle = Arc<dyn Fn() -> usize + Send + Sync>;

/// The health of one database. Shared by every clone of its [`crate::storage::db::Database`].
pub struct Health {
    config: BreakerConfig,
    statement_timeout: Duration,
    max_in_progress: u32,
    /// How a probe connects: through the database's current URL (a database reopened at a new
    /// URL sets it again).
    probe_connect: Mutex<ProbeConnect>,
    /// A [`BreakerState`] as `u8`.
    state: AtomicU8,
    consecutive: AtomicU32,
    window: Mutex<Window>,
    slots: Arc<Semaphore>,
    /// Milliseconds since `base` when a statement last finished, or when the first of those now in
    /// progress started.
    last_progress_ms: AtomicU64,
    base: Instant,
    /// Notified when the breaker opens: statements waiting fail at once.
    opened: Notify,
    trial: AtomicBool,
    probing: AtomicBool,
    probe_requested: AtomicBool,
    next_probe_ms: AtomicU64,
    probe_interval_ms: AtomicU64,
    reason: Mutex<Option<String>>,
    opens: AtomicU64,
    refused: AtomicU64,
    shed: AtomicU64,
    retries: AtomicU64,
    retry_budget: AtomicU32,
    /// The last readiness ping, when it was taken and the breaker's state then
    /// (`Database::shared_ping`).
    pub(crate) last_ping: tokio::sync::Mutex<Option<(Instant, Ping, BreakerState)>>,
    /// Readiness pings sent.
    pub(crate) pings: AtomicU64,
    /// The database's pools' idle connections, closed when one connection breaks.
    close_idle: Mutex<Option<CloseIdle>>,
}

impl std::fmt::Debug for Health {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Health").field("state", &self.state()).field("in_progress", &self.in_progress()).finish()
    }
}

#[derive(Debug)]
struct Window {
    started: Instant,
    statements: u32,
    failures: u32,
}

/// Whether a driver error says the database is unwell, rather than answering: it cannot be
/// reached, a connection broke, no connection came free in time, or the server cancelled the
/// statement or is shutting down. Constraint violations, conflicts and the like are answers.
pub fn is_health_failure(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Io(_) | sqlx::Error::Tls(_) | sqlx::Error::PoolTimedOut | sqlx::Error::Protocol(_) => true,
        sqlx::Error::Database(db) => {
            // 57014 query_canceled (statement_timeout), 57P01..57P03 shutdown / cannot connect
            // now, class 08 connection exceptions.
            db.code().is_some_and(|code| code == "57014" || code.starts_with("57P") || code.starts_with("08"))
        }
        _ => false,
    }
}

/// Whether a driver error is the database refusing a new connection's credentials (SQLSTATE
/// class 28: a wrong password, a role that may not log in from here). The server is up; the URL
/// the pool connects with is no longer good, typically because the password was rotated. Not a
/// failure of its health: the breaker stays closed, and a new URL mends it at once.
pub fn is_authentication_failure(error: &sqlx::Error) -> bool {
    matches!(error, sqlx::Error::Database(db) if db.code().is_some_and(|code| code.starts_with("28")))
}

/// Whether a failed read may be tried again on another connection: the connection broke (the
/// server restarted, a socket was reset) rather than the database answering or being slow.
fn is_retryable(error: &sqlx::Error) -> bool {
    matches!(error, sqlx::Error::Io(_) | sqlx::Error::Protocol(_))
        || matches!(error, sqlx::Error::Database(db) if db.code().is_some_and(|c| c.starts_with("57P") || c.starts_with("08")))
}

impl Health {
    pub(crate) fn new(
        config: BreakerConfig,
        statement_timeout: Duration,
        max_in_progress: u32,
        probe_connect: ProbeConnect,
    ) -> Self {
        let max_in_progress = max_in_progress.max(1);
        let interval = millis(config.probe_interval);
        Self {
            config,
            statement_timeout,
            max_in_progress,
            probe_connect: Mutex::new(probe_connect),
            state: AtomicU8::new(BreakerState::Closed as u8),
            consecutive: AtomicU32::new(0),
            window: Mutex::new(Window { started: Instant::now(), statements: 0, failures: 0 }),
            slots: Arc::new(Semaphore::new(max_in_progress as usize)),
            last_progress_ms: AtomicU64::new(0),
            base: Instant::now(),
            opened: Notify::new(),
            trial: AtomicBool::new(false),
            probing: AtomicBool::new(false),
            probe_requested: AtomicBool::new(false),
            next_probe_ms: AtomicU64::new(0),
            probe_interval_ms: AtomicU64::new(interval),
            reason: Mutex::new(None),
            opens: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            shed: AtomicU64::new(0),
            retries: AtomicU64::new(0),
            retry_budget: AtomicU32::new(RETRY_BUDGET_MAX),
            last_ping: tokio::sync::Mutex::new(None),
            pings: AtomicU64::new(0),
            close_idle: Mutex::new(None),
        }
    }

    /// How a probe connects (a database reopened at a new URL sets it again).
    pub(crate) fn on_probe(&self, probe_connect: ProbeConnect) {
        *self.probe_connect.lock() = probe_connect;
    }

    /// What closes the idle connections of the database's pools (its current pools: a resized
    /// database sets it again).
    pub(crate) fn on_broken_connection(&self, close_idle: CloseIdle) {
        *self.close_idle.lock() = Some(close_idle);
    }

    /// A connection broke: the other idle ones were opened before the break too, so they go.
    fn close_idle_connections(&self, error: &sqlx::Error) {
        let close_idle = self.close_idle.lock().clone();
        if let Some(close_idle) = close_idle {
            let closed = close_idle();
            if closed > 0 {
                tracing::info!(closed, error = %error, "a pooled connection broke; closed the idle ones");
            }
        }
    }

    /// The breaker's state.
    pub fn state(&self) -> BreakerState {
        BreakerState::from_u8(self.state.load(Ordering::Acquire))
    }

    /// Statements in progress.
    pub fn in_progress(&self) -> u32 {
        self.max_in_progress.saturating_sub(u32::try_from(self.slots.available_permits()).unwrap_or(u32::MAX))
    }

    /// A snapshot for probes, metrics and the admin API.
    pub fn report(&self) -> HealthReport {
        let breaker = self.state();
        HealthReport {
            breaker,
            reason: if breaker == BreakerState::Closed { None } else { self.reason.lock().clone() },
            opens: self.opens.load(Ordering::Relaxed),
            in_progress: self.in_progress(),
            refused: self.refused.load(Ordering::Relaxed),
            shed: self.shed.load(Ordering::Relaxed),
            retries: self.retries.load(Ordering::Relaxed),
        }
    }

    /// Runs one statement: refused at once while the breaker is open or the bulkhead full, failed
    /// when it misses its deadline or the breaker opens meanwhile, and judged by the breaker.
    pub async fn run<T, F>(&self, statement: F) -> Result<T, Refusal>
    where
        F: Future<Output = Result<T, sqlx::Error>>,
    {
        let (_slot, trial) = self.admit()?;
        let result = self.attempt(statement).await;
        self.judge(&result, trial.0.is_some());
        result
    }

    /// Runs a statement that may safely run twice (a read): like [`Health::run`], but a first try
    /// that failed because its connection broke is made once more on another connection after a
    /// short jittered pause, if the breaker is still closed and the retry budget allows.
    pub async fn run_idempotent<T, F, Fut>(&self, statement: F) -> Result<T, Refusal>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, sqlx::Error>>,
    {
        let (_slot, trial) = self.admit()?;
        let first = self.attempt(statement()).await;
        self.judge(&first, trial.0.is_some());
        match first {
            Err(Refusal::Sql(e)) if is_retryable(&e) && self.state() == BreakerState::Closed && self.spend_retry() => {
                self.retries.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(error = %e, "retrying a read on another connection");
                let jitter = u64::try_from(uuid::Uuid::new_v4().as_u128() % 20).unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(5 + jitter)).await;
                let second = self.attempt(statement()).await;
                self.judge(&second, false);
                second
            }
            other => other,
        }
    }

    /// Forces the breaker open (`open = true`) or closes it and forgets its failures.
    pub fn force(&self, open: bool, why: &str) {
        if open {
            *self.reason.lock() = Some(format!("forced open: {why}"));
            self.state.store(BreakerState::ForcedOpen as u8, Ordering::Release);
            self.opens.fetch_add(1, Ordering::Relaxed);
            self.opened.notify_waiters();
        } else {
            self.close();
        }
    }

    /// One look at the database, from the watchdog (the router runs it every
    /// few tens of milliseconds): probes an open breaker when its interval has passed, and a
    /// closed one whose statements are stalled.
    pub fn tick(self: &Arc<Self>) {
        if !self.config.enabled {
            return;
        }
        let now = self.now_ms();
        let requested = self.probe_requested.swap(false, Ordering::AcqRel);
        let due = match self.state() {
            BreakerState::Open => now >= self.next_probe_ms.load(Ordering::Relaxed),
            BreakerState::Closed => {
                requested
                    || (self.in_progress() > 0
                        && now.saturating_sub(self.last_progress_ms.load(Ordering::Relaxed))
                            >= millis(self.config.stall_after))
            }
            BreakerState::HalfOpen | BreakerState::ForcedOpen => false,
        };
        if due {
            self.spawn_probe();
        }
    }

    /// A place in the bulkhead, and the trial's turn if the breaker is half-open.
    fn admit(&self) -> Result<(tokio::sync::OwnedSemaphorePermit, TrialTurn<'_>), Refusal> {
        let mut trial = TrialTurn(None);
        if self.config.enabled {
            match self.state() {
                BreakerState::Closed => {}
                BreakerState::HalfOpen if !self.trial.swap(true, Ordering::AcqRel) => trial = TrialTurn(Some(self)),
                state => {
                    self.refused.fetch_add(1, Ordering::Relaxed);
                    return Err(self.open_refusal(state));
                }
            }
        }
        let Ok(slot) = self.slots.clone().try_acquire_owned() else {
            // A trial's turn is given back as `trial` drops.
            self.shed.fetch_add(1, Ordering::Relaxed);
            return Err(Refusal::Busy(self.max_in_progress));
        };
        if self.in_progress() == 1 {
            // The first statement in progress starts the stall clock.
            self.last_progress_ms.store(self.now_ms(), Ordering::Relaxed);
        }
        Ok((slot, trial))
    }

    async fn attempt<T>(&self, statement: impl Future<Output = Result<T, sqlx::Error>>) -> Result<T, Refusal> {
        let opened = self.opened.notified();
        tokio::select! {
            biased;
            result = tokio::time::timeout(self.statement_timeout, statement) => match result {
                Ok(done) => done.map_err(Refusal::Sql),
                Err(_) => Err(Refusal::Deadline(self.statement_timeout)),
            },
            () = opened, if self.config.enabled => Err(match self.open_refusal(self.state()) {
                Refusal::Open { reason, retry_after, .. } => Refusal::Interrupted { reason, retry_after },
                other => other,
            }),
        }
    }

    fn open_refusal(&self, state: BreakerState) -> Refusal {
        let reason = self.reason.lock().clone().unwrap_or_else(|| "failing".to_owned());
        let retry_after = match state {
            BreakerState::ForcedOpen => Duration::from_secs(5),
            _ => Duration::from_millis(self.probe_interval_ms.load(Ordering::Relaxed)).max(Duration::from_secs(1)),
        };
        Refusal::Open { state: state.as_str(), reason, retry_after }
    }

    /// Counts an outcome; opens or closes the breaker when it says so.
    fn judge<T>(&self, result: &Result<T, Refusal>, trial: bool) {
        self.last_progress_ms.store(self.now_ms(), Ordering::Relaxed);
        if let Err(Refusal::Sql(e)) = result
            && is_retryable(e)
        {
            self.close_idle_connections(e);
        }
        if !self.config.enabled {
            return;
        }
        let failure = match result {
            Ok(_) => None,
            Err(Refusal::Sql(e)) if is_health_failure(e) => Some(e.to_string()),
            Err(Refusal::Deadline(limit)) => Some(format!("a statement did not finish within {limit:?}")),
            // An answer (a constraint, a conflict) means the database works; an open breaker
            // has already judged.
            Err(Refusal::Sql(_)) => None,
            Err(Refusal::Open { .. } | Refusal::Interrupted { .. } | Refusal::Busy(_)) => return,
        };
        let Some(failure) = failure else {
            if self.consecutive.load(Ordering::Relaxed) != 0 {
                self.consecutive.store(0, Ordering::Relaxed);
            }
            let budget = self.retry_budget.load(Ordering::Relaxed);
            if budget < RETRY_BUDGET_MAX {
                self.retry_budget.store(budget + 1, Ordering::Relaxed);
            }
            self.count(false);
            if trial {
                self.close();
            }
            return;
        };
        let consecutive = self.consecutive.fetch_add(1, Ordering::Relaxed) + 1;
        let rate = self.count(true);
        if trial {
            self.back_off();
            self.open(format!("the trial statement failed: {failure}"));
        } else if consecutive >= self.config.consecutive_failures {
            self.open(format!("{consecutive} statements in a row failed, the last: {failure}"));
        } else if let Some((failures, statements)) = rate {
            self.open(format!("{failures} of {statements} statements failed within {:?}", self.config.window));
        } else if self.state() == BreakerState::Closed {
            // One failure: is the database down, or was it one broken connection?
            self.request_probe();
        }
    }

    /// Counts a statement in the window; returns (failures, statements) when the failure rate
    /// opens the breaker.
    fn count(&self, failed: bool) -> Option<(u32, u32)> {
        let mut window = self.window.lock();
        if window.started.elapsed() >= self.config.window {
            *window = Window { started: Instant::now(), statements: 0, failures: 0 };
        }
        window.statements += 1;
        window.failures += u32::from(failed);
        let tripped = failed
            && window.statements >= self.config.min_statements
            && f64::from(window.failures) >= self.config.failure_rate * f64::from(window.statements);
        tripped.then_some((window.failures, window.statements))
    }

    fn spend_retry(&self) -> bool {
        self.retry_budget.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| b.checked_sub(10)).is_ok()
    }

    fn open(&self, reason: String) {
        let previous = self.state.swap(BreakerState::Open as u8, Ordering::AcqRel);
        if previous == BreakerState::ForcedOpen as u8 {
            // An operator's decision stands.
            self.state.store(previous, Ordering::Release);
            return;
        }
        self.trial.store(false, Ordering::Release);
        self.next_probe_ms.store(self.now_ms() + self.probe_interval_ms.load(Ordering::Relaxed), Ordering::Relaxed);
        if previous != BreakerState::Open as u8 {
            tracing::warn!(reason = %reason, "circuit breaker opened");
            *self.reason.lock() = Some(reason);
            self.opens.fetch_add(1, Ordering::Relaxed);
            self.opened.notify_waiters();
        }
    }

    fn close(&self) {
        let previous = self.state.swap(BreakerState::Closed as u8, Ordering::AcqRel);
        self.consecutive.store(0, Ordering::Relaxed);
        self.trial.store(false, Ordering::Release);
        self.probe_interval_ms.store(millis(self.config.probe_interval), Ordering::Relaxed);
        *self.window.lock() = Window { started: Instant::now(), statements: 0, failures: 0 };
        if previous != BreakerState::Closed as u8 {
            tracing::info!("circuit breaker closed");
        }
    }

    fn back_off(&self) {
        let max = millis(self.config.max_probe_interval);
        let _ = self
            .probe_interval_ms
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |interval| Some((interval * 2).min(max)));
    }

    /// Asks the watchdog's next tick for a probe (a probe task needs the `Arc`, which a
    /// statement does not hold).
    fn request_probe(&self) {
        self.probe_requested.store(true, Ordering::Release);
    }

    /// Runs a probe now, in a task of its own, unless one is running: the watchdog's when due,
    /// and a pool's when a new connection found its server will not do
    /// ([`crate::storage::hosts`]).
    pub(crate) fn spawn_probe(self: &Arc<Self>) {
        if self.probing.swap(true, Ordering::AcqRel) {
            return;
        }
        let health = Arc::clone(self);
        tokio::spawn(async move {
            let probe = health.probe_connect.lock().clone();
            let answered = match tokio::time::timeout(health.config.probe_timeout, probe()).await {
                Ok(Ok(())) => Ok(()),
                // The server answered, if only to refuse: it is up.
                Ok(Err(sqlx::Error::Database(_))) => Ok(()),
                Ok(Err(e)) => Err(e.to_string()),
                Err(_) => Err(format!("no answer to a probe within {:?}", health.config.probe_timeout)),
            };
            match (answered, health.state()) {
                (Ok(()), BreakerState::Open) => {
                    health.trial.store(false, Ordering::Release);
                    let _ = health.state.compare_exchange(
                        BreakerState::Open as u8,
                        BreakerState::HalfOpen as u8,
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    );
                    tracing::info!("probe answered; circuit breaker half-open");
                }
                (Ok(()), _) => {}
                (Err(why), BreakerState::Closed | BreakerState::HalfOpen) => {
                    health.open(format!("probe failed: {why}"))
                }
                (Err(_), BreakerState::Open) => {
                    let next = health.now_ms() + health.probe_interval_ms.load(Ordering::Relaxed);
                    health.next_probe_ms.store(next, Ordering::Relaxed);
                }
                (Err(_), BreakerState::ForcedOpen) => {}
            }
            health.probing.store(false, Ordering::Release);
        });
    }

    fn now_ms(&self) -> u64 {
        millis(self.base.elapsed())
    }
}

/// The turn of a half-open breaker's one trial statement, given back however the statement
/// ends (also when its request is dropped half-way), so the next statement can be the trial.
struct TrialTurn<'a>(Option<&'a Health>);

impl Drop for TrialTurn<'_> {
    fn drop(&mut self) {
        if let Some(health) = self.0 {
            health.trial.store(false, Ordering::Release);
        }
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    fn refused() -> sqlx::Error {
        sqlx::Error::Io(std::io::Error::from(std::io::ErrorKind::ConnectionRefused))
    }

    /// A health whose probes answer as `up` says, counted in `probes`.
    fn health(config: BreakerConfig, up: Arc<AtomicBool>, probes: Arc<AtomicUsize>) -> Arc<Health> {
        let connect: ProbeConnect = Arc::new(move || {
            let up = up.load(Ordering::SeqCst);
            probes.fetch_add(1, Ordering::SeqCst);
            Box::pin(async move { if up { Ok(()) } else { Err(refused()) } })
        });
        Arc::new(Health::new(config, Duration::from_millis(300), 4, connect))
    }

    fn quiet_config() -> BreakerConfig {
        // Long intervals: the tests drive the breaker through `tick` and outcomes only.
        BreakerConfig {
            probe_interval: Duration::from_millis(20),
            max_probe_interval: Duration::from_millis(80),
            ..Default::default()
        }
    }

    async fn fail(h: &Health) -> Result<(), Refusal> {
        h.run(async { Err::<(), _>(refused()) }).await
    }

    async fn succeed(h: &Health) -> Result<(), Refusal> {
        h.run(async { Ok::<(), sqlx::Error>(()) }).await
    }

    /// Ticks the watchdog until `done` holds or 2 s pass.
    async fn tick_until(h: &Arc<Health>, done: impl Fn(&Health) -> bool) -> bool {
        for _ in 0..200 {
            if done(h) {
                return true;
            }
            h.tick();
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        done(h)
    }

    #[tokio::test]
    async fn consecutive_failures_open_it_and_a_success_in_between_resets_the_count() {
        let (up, probes) = (Arc::new(AtomicBool::new(true)), Arc::new(AtomicUsize::new(0)));
        let h = health(quiet_config(), up, probes);
        for _ in 0..4 {
            assert!(matches!(fail(&h).await, Err(Refusal::Sql(_))));
        }
        succeed(&h).await.unwrap();
        for _ in 0..4 {
            let _ = fail(&h).await;
        }
        assert_eq!(h.state(), BreakerState::Closed, "four in a row, a success, four in a row: still closed");
        let _ = fail(&h).await;
        assert_eq!(h.state(), BreakerState::Open, "the fifth in a row opens it");
        let report = h.report();
        assert_eq!(report.opens, 1);
        assert!(report.reason.unwrap().contains("5 statements in a row failed"));
    }

    #[tokio::test]
    async fn answers_of_the_database_never_open_it() {
        let h = health(quiet_config(), Arc::new(AtomicBool::new(true)), Arc::new(AtomicUsize::new(0)));
        for _ in 0..50 {
            let outcome = h.run(async { Err::<(), _>(sqlx::Error::RowNotFound) }).await;
            assert!(matches!(outcome, Err(Refusal::Sql(sqlx::Error::RowNotFound))));
        }
        assert_eq!(h.state(), BreakerState::Closed);
    }

    #[tokio::test]
    async fn while_open_statements_fail_at_once_and_a_probe_then_a_trial_close_it() {
        let (up, probes) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
        let h = health(quiet_config(), up.clone(), probes.clone());
        for _ in 0..5 {
            let _ = fail(&h).await;
        }
        assert_eq!(h.state(), BreakerState::Open);
        let ran = Arc::new(AtomicBool::new(false));
        let flag = ran.clone();
        let outcome = h
            .run(async move {
                flag.store(true, Ordering::SeqCst);
                Ok::<(), sqlx::Error>(())
            })
            .await;
        let Err(Refusal::Open { state: "open", retry_after, .. }) = outcome else { panic!("refused: {outcome:?}") };
        assert!(retry_after >= Duration::from_secs(1), "Retry-After is at least a second");
        assert!(!ran.load(Ordering::SeqCst), "an open breaker does not run the statement");
        assert_eq!(h.report().refused, 1);

        // Probes fail while the database is down: still open.
        assert!(tick_until(&h, |_| probes.load(Ordering::SeqCst) >= 2).await, "an open breaker probes");
        assert_eq!(h.state(), BreakerState::Open);
        // It comes back: a probe makes the breaker half-open, a trial closes it.
        up.store(true, Ordering::SeqCst);
        assert!(tick_until(&h, |h| h.state() == BreakerState::HalfOpen).await, "a probe that answers half-opens it");
        succeed(&h).await.unwrap();
        assert_eq!(h.state(), BreakerState::Closed);
    }

    #[tokio::test]
    async fn half_open_lets_one_trial_through_and_a_failed_trial_backs_off() {
        let (up, probes) = (Arc::new(AtomicBool::new(true)), Arc::new(AtomicUsize::new(0)));
        let h = health(quiet_config(), up, probes);
        for _ in 0..5 {
            let _ = fail(&h).await;
        }
        assert!(tick_until(&h, |h| h.state() == BreakerState::HalfOpen).await);
        let (trial_tx, trial_rx) = tokio::sync::oneshot::channel::<()>();
        let trial = {
            let h = h.clone();
            tokio::spawn(async move {
                h.run(async move {
                    let _ = trial_rx.await;
                    Err::<(), _>(refused())
                })
                .await
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(
            matches!(succeed(&h).await, Err(Refusal::Open { state: "half_open", .. })),
            "a second statement waits for the trial's verdict"
        );
        trial_tx.send(()).unwrap();
        assert!(matches!(trial.await.unwrap(), Err(Refusal::Sql(_))));
        assert_eq!(h.state(), BreakerState::Open, "a failed trial opens it again");
        assert_eq!(h.probe_interval_ms.load(Ordering::SeqCst), 40, "and doubles the probe interval");
    }

    #[tokio::test]
    async fn a_stall_is_detected_by_a_probe_and_wakes_the_waiting_statements() {
        let (up, probes) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
        let config = BreakerConfig { stall_after: Duration::from_millis(50), ..quiet_config() };
        let h = health(config, up, probes);
        let hung = {
            let h = h.clone();
            tokio::spawn(async move { h.run(std::future::pending::<Result<(), sqlx::Error>>()).await })
        };
        assert!(
            tick_until(&h, |h| h.state() == BreakerState::Open).await,
            "a stalled statement and a failed probe open it"
        );
        let outcome =
            tokio::time::timeout(Duration::from_millis(200), hung).await.expect("the hung statement is woken");
        assert!(matches!(outcome.unwrap(), Err(Refusal::Interrupted { .. })));
        assert!(h.report().reason.unwrap().contains("probe failed"));
    }

    #[tokio::test]
    async fn a_statement_past_its_deadline_fails_and_counts_as_a_failure() {
        let config = BreakerConfig { enabled: true, consecutive_failures: 1, ..quiet_config() };
        let h = health(config, Arc::new(AtomicBool::new(true)), Arc::new(AtomicUsize::new(0)));
        let outcome = h.run(std::future::pending::<Result<(), sqlx::Error>>()).await;
        assert!(matches!(outcome, Err(Refusal::Deadline(_))));
        assert_eq!(h.state(), BreakerState::Open);
    }

    #[tokio::test]
    async fn a_full_bulkhead_refuses_at_once() {
        let h = health(quiet_config(), Arc::new(AtomicBool::new(true)), Arc::new(AtomicUsize::new(0)));
        let (release, released) = tokio::sync::watch::channel(false);
        let holders: Vec<_> = (0..4)
            .map(|_| {
                let (h, mut released) = (h.clone(), released.clone());
                tokio::spawn(async move {
                    h.run(async move {
                        let _ = released.wait_for(|r| *r).await;
                        Ok::<(), sqlx::Error>(())
                    })
                    .await
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(h.in_progress(), 4);
        assert!(matches!(succeed(&h).await, Err(Refusal::Busy(4))));
        assert_eq!(h.report().shed, 1);
        release.send(true).unwrap();
        for holder in holders {
            holder.await.unwrap().unwrap();
        }
        succeed(&h).await.unwrap();
        assert_eq!(h.in_progress(), 0);
    }

    #[tokio::test]
    async fn a_read_on_a_broken_connection_is_retried_once_within_the_budget() {
        let h = health(quiet_config(), Arc::new(AtomicBool::new(true)), Arc::new(AtomicUsize::new(0)));
        let tries = AtomicUsize::new(0);
        let outcome = h
            .run_idempotent(|| {
                let attempt = tries.fetch_add(1, Ordering::SeqCst);
                async move { if attempt == 0 { Err(refused()) } else { Ok(7) } }
            })
            .await;
        assert_eq!(outcome.unwrap(), 7);
        assert_eq!(tries.load(Ordering::SeqCst), 2);
        assert_eq!(h.report().retries, 1);

        // A read that keeps failing is tried twice, no more; the budget (ten retries when full)
        // then runs out.
        let tries = AtomicUsize::new(0);
        let mut retried = 0;
        for _ in 0..30 {
            let before = tries.load(Ordering::SeqCst);
            let _ = h
                .run_idempotent(|| {
                    tries.fetch_add(1, Ordering::SeqCst);
                    async { Err::<(), _>(sqlx::Error::Protocol("reset".into())) }
                })
                .await;
            let made = tries.load(Ordering::SeqCst) - before;
            assert!(made <= 2, "at most one retry per read");
            retried += made - 1;
            if h.state() != BreakerState::Closed {
                h.force(false, "test");
            }
        }
        assert!(retried <= 10, "retries stop when the budget is spent: {retried}");
    }

    #[tokio::test]
    async fn an_operator_can_force_it_open_until_reset() {
        let (up, probes) = (Arc::new(AtomicBool::new(true)), Arc::new(AtomicUsize::new(0)));
        let h = health(quiet_config(), up, probes.clone());
        h.force(true, "maintenance");
        assert!(matches!(succeed(&h).await, Err(Refusal::Open { state: "forced_open", .. })));
        for _ in 0..10 {
            h.tick();
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(h.state(), BreakerState::ForcedOpen, "probes do not close a forced breaker");
        assert_eq!(probes.load(Ordering::SeqCst), 0);
        assert!(h.report().reason.unwrap().contains("maintenance"));
        h.force(false, "done");
        succeed(&h).await.unwrap();
        assert_eq!(h.state(), BreakerState::Closed);
    }

    #[test]
    fn settings_are_checked() {
        assert!(BreakerConfig::default().validate().is_ok());
        assert!(BreakerConfig { failure_rate: 0.0, ..Default::default() }.validate().is_err());
        assert!(BreakerConfig { consecutive_failures: 0, ..Default::default() }.validate().is_err());
        assert!(BreakerConfig { probe_timeout: Duration::ZERO, ..Default::default() }.validate().is_err());
        assert!(
            BreakerConfig { max_probe_interval: Duration::from_millis(1), ..Default::default() }.validate().is_err()
        );
    }
}
