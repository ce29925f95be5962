//! Databases that follow their primary. A PostgreSQL URL may name several hosts, as libpq takes
//! them: `postgres://gateway@pg-a:5432,pg-b:5432/shard1?target_session_attrs=read-write`. The
//! database lives on whichever of them is the primary now (Patroni, a managed service's failover,
//! `pg_ctl promote`); the gateway finds it and follows it when it moves.
//!
//! - `target_session_attrs` says which server will do: `any` (the first that answers, libpq's
//!   default), `read-write` (`SHOW transaction_read_only` is `off`) or `primary` (not in
//!   recovery). Others (`read-only`, `standby`, `prefer-standby`) are refused: a shard's pool
//!   writes.
//! - Every new connection is checked (one round trip, only for such URLs): a connection to a
//!   server that will not do is closed, and a probe of its database's breaker starts at once.
//! - The probe ([`crate::storage::health`]) asks every host at once, each within three quarters
//!   of the probe's timeout (a frozen host costs no more), and keeps the current host while it
//!   will do; otherwise the first that will, in the order given. New connections go there, the
//!   idle ones to the former host are closed, and a connection opened before the move is closed
//!   when a statement would take it, not used. The probe succeeds once the new primary answers,
//!   so an open breaker closes on its own.
//! - No host will do (the primary died and no standby has been promoted yet): the probe fails
//!   and the breaker stays open; statements fail fast (503) until one is promoted.
//!
//! A URL with one host and no `target_session_attrs` is left as it is: none of this runs.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use sqlx::any::AnyConnectOptions;
use sqlx::postgres::PgConnectOptions;

use crate::error::Error;
use crate::storage::health::Health;

/// Which server of a URL's hosts will do (`target_session_attrs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The first host that answers.
    Any,
    /// A server whose sessions may write (`transaction_read_only` is `off`).
    ReadWrite,
    /// A server not in recovery (not a standby).
    Primary,
}

/// The URL parameter that names the [`Target`].
const TARGET_KEY: &str = "target_session_attrs";

/// A PostgreSQL URL split into one URL per host ([`split_hosts`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostList {
    /// One URL per host, in the order given, without `target_session_attrs`.
    pub urls: Vec<String>,
    /// Each host as written (`pg-a:5432`): what logs and messages name.
    pub names: Vec<String>,
    /// Which server will do.
    pub target: Target,
}

impl HostList {
    /// Whether the database follows its primary: more than one host, or a target other than
    /// `any`.
    pub fn follows(&self) -> bool {
        self.urls.len() > 1 || self.target != Target::Any
    }
}

/// A URL cut around its list of hosts, which no URL parser takes when it names several:
/// `<scheme>://<userinfo><hosts><tail>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UrlParts<'a> {
    /// The scheme.
    pub scheme: &'a str,
    /// The user information with its `@` (`user:password@`), or empty.
    pub userinfo: &'a str,
    /// The hosts as written, separated by commas (`pg-a:5432,pg-b`).
    pub hosts: &'a str,
    /// Everything after them: path, query and fragment.
    pub tail: &'a str,
}

/// `raw` cut around its list of hosts; `None` without `://`.
pub fn url_parts(raw: &str) -> Option<UrlParts<'_>> {
    let (scheme, rest) = raw.split_once("://")?;
    let (authority, tail) = rest.split_at(rest.find(['/', '?', '#']).unwrap_or(rest.len()));
    let (userinfo, hosts) = authority.split_at(authority.rfind('@').map_or(0, |at| at + 1));
    Some(UrlParts { scheme, userinfo, hosts, tail })
}

/// The refusal of a new password whose URL names other hosts or another target than the
/// database's.
pub(crate) fn hosts_changed() -> Error {
    Error::InvalidDatabaseUrl(
        "a new password cannot change the database's hosts or target_session_attrs: change the URL instead".to_owned(),
    )
}

/// Splits PostgreSQL URL `raw` into one URL per host of its authority (`host1:port1,host2:port2`),
/// and reads `target_session_attrs`. A URL with one host and no target comes back as it is.
/// Errors never quote the URL (it may hold a password).
pub(crate) fn split_hosts(raw: &str) -> Result<HostList, Error> {
    let invalid = |why: &str| Error::InvalidDatabaseUrl(why.to_owned());
    let Some(UrlParts { scheme, userinfo, hosts, tail }) = url_parts(raw) else {
        return Err(invalid("the URL must start with postgres:// or postgresql://"));
    };
    let (path, query) = tail.split_once('?').unwrap_or((tail, ""));
    let mut target = Target::Any;
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            TARGET_KEY => {
                target = match value {
                    "any" => Target::Any,
                    "read-write" => Target::ReadWrite,
                    "primary" => Target::Primary,
                    _ => {
                        return Err(invalid(
                            "target_session_attrs: a shard's connections write, so only any, read-write and primary \
                             are accepted",
                        ));
                    }
                };
            }
            "host" | "hostaddr" | "port" if value.contains(',') || value.contains("%2C") || value.contains("%2c") => {
                return Err(invalid(
                    "several hosts go in the URL's authority (postgres://user@pg-a:5432,pg-b:5432/db), not in the \
                     host, hostaddr or port parameters",
                ));
            }
            _ => kept.push(pair),
        }
    }
    let names: Vec<String> = hosts.split(',').map(str::to_owned).collect();
    if names.len() > 1 && names.iter().any(String::is_empty) {
        return Err(invalid("the URL's list of hosts has an empty entry (two commas, or one at an end)"));
    }
    if names.len() == 1 && target == Target::Any {
        return Ok(HostList { urls: vec![raw.to_owned()], names, target });
    }
    let query = if kept.is_empty() { String::new() } else { format!("?{}", kept.join("&")) };
    let urls = names.iter().map(|host| format!("{scheme}://{userinfo}{host}{path}{query}")).collect();
    Ok(HostList { urls, names, target })
}

/// One host of a database that follows its primary: how each of its pools connects there.
#[derive(Debug, Clone)]
pub(crate) struct Host {
    /// The host as written in the URL.
    pub name: String,
    /// The engine-neutral pool's options.
    pub any: AnyConnectOptions,
    /// The native pool's options.
    pub native: PgConnectOptions,
}

/// The hosts of a database that follows its primary, and which of them its pools use now.
/// Shared by the pools' connection checks and the database's probe.
#[derive(Debug)]
pub(crate) struct Follow {
    hosts: Mutex<Vec<Host>>,
    target: Target,
    /// The index in `hosts` of the host new connections go to.
    current: AtomicUsize,
    base: Instant,
    /// Milliseconds since `base` when the pools last moved to another host, plus one (0: never).
    moved_ms: AtomicU64,
    /// How long the probe waits for each host.
    attempt_timeout: Duration,
    /// The database's health, whose probe looks for the primary when a connection lands on a
    /// server that will not do. Weak: the health owns the probe, which owns the pools, which own
    /// this.
    health: OnceLock<Weak<Health>>,
}

/// What one host answered to the probe.
enum Answer {
    /// It will do.
    Fits,
    /// It answered, and will not do (read-only, in recovery).
    Refuses,
    /// It did not answer, or failed.
    Failed(sqlx::Error),
}

impl Follow {
    /// Follows `hosts` (at least one) for `target`; the probe waits `probe_timeout` in all.
    pub fn new(hosts: Vec<Host>, target: Target, probe_timeout: Duration) -> Arc<Self> {
        assert!(!hosts.is_empty(), "a database has at least one host");
        Arc::new(Self {
            hosts: Mutex::new(hosts),
            target,
            current: AtomicUsize::new(0),
            base: Instant::now(),
            moved_ms: AtomicU64::new(0),
            attempt_timeout: probe_timeout.mul_f64(0.75),
            health: OnceLock::new(),
        })
    }

    /// The host new connections go to.
    pub fn current(&self) -> Host {
        let hosts = self.hosts.lock();
        hosts[self.current.load(Ordering::Acquire).min(hosts.len() - 1)].clone()
    }

    /// The index of [`Follow::current`] among its hosts (in the order the URL names them).
    pub fn current_index(&self) -> usize {
        self.current.load(Ordering::Acquire)
    }

    /// Its hosts, in the order the URL names them.
    pub fn hosts(&self) -> Vec<Host> {
        self.hosts.lock().clone()
    }

    /// Tells it the database's health, whose probe it asks for ([`Follow::check_new`]).
    pub fn watched_by(&self, health: &Arc<Health>) {
        let _ = self.health.set(Arc::downgrade(health));
    }

    /// Takes `other`'s hosts (the same database with another password): the current host stays
    /// the current one. Errors if the hosts are not the same ones.
    pub fn take_hosts(&self, other: &Follow) -> Result<(), Error> {
        let theirs = other.hosts.lock().clone();
        let mut ours = self.hosts.lock();
        let names = |hosts: &[Host]| hosts.iter().map(|h| h.name.clone()).collect::<Vec<_>>();
        if names(&ours) != names(&theirs) || self.target != other.target {
            return Err(hosts_changed());
        }
        *ours = theirs;
        Ok(())
    }

    /// Checks a new connection of a pool: `Err` (the pool closes it and tries again) if its
    /// server will not do, after starting a probe of the breaker's, which looks for one that will.
    pub async fn check_new(&self, conn: &mut sqlx::AnyConnection) -> Result<(), sqlx::Error> {
        if fits(conn, self.target).await? {
            return Ok(());
        }
        // The probe runs now, not at the watchdog's next tick: the pool tries to connect again
        // after a short pause, and finds the new host if the probe has moved it there.
        if let Some(health) = self.health.get().and_then(Weak::upgrade) {
            health.spawn_probe();
        }
        Err(sqlx::Error::Protocol(format!(
            "the server is not {} (a standby?): looking for the one that is",
            self.target_words()
        )))
    }

    /// Whether a pooled connection of age `age` was opened before the pools last moved to
    /// another host (it leads to the former one: it is closed rather than used).
    pub fn opened_before_move(&self, age: Duration) -> bool {
        let moved = self.moved_ms.load(Ordering::Acquire);
        if moved == 0 {
            return false;
        }
        let now = u64::try_from(self.base.elapsed().as_millis()).unwrap_or(u64::MAX);
        let age = u64::try_from(age.as_millis()).unwrap_or(u64::MAX);
        now.saturating_sub(age) + 1 < moved
    }

    /// Asks every host at once which will do. `Ok(None)`: the current host will; `Ok(Some(host))`:
    /// it will not and `host` will (the caller moves the pools there: [`Follow::move_to`]).
    /// `Err` when none will: the current host's failure, or a protocol error naming what each
    /// host answered.
    pub async fn find(&self) -> Result<Option<Host>, sqlx::Error> {
        let hosts = self.hosts.lock().clone();
        let current = self.current.load(Ordering::Acquire).min(hosts.len() - 1);
        let answers = futures::future::join_all(hosts.iter().map(|host| self.ask(host))).await;
        if matches!(answers[current], Answer::Fits) {
            return Ok(None);
        }
        if let Some(index) = answers.iter().position(|answer| matches!(answer, Answer::Fits)) {
            return Ok(Some(hosts[index].clone()));
        }
        let mut answers = answers.into_iter();
        if let Some(Answer::Failed(e)) = answers.nth(current)
            && hosts.len() == 1
        {
            return Err(e);
        }
        Err(sqlx::Error::Protocol(format!(
            "none of its {} hosts ({}) is {}",
            hosts.len(),
            hosts.iter().map(|h| h.name.as_str()).collect::<Vec<_>>().join(", "),
            self.target_words()
        )))
    }

    /// Starts at the host `other` uses now (the same database reopened with other pool sizes),
    /// which it returns; `None` if it has no such host.
    pub fn start_where(&self, other: &Follow) -> Option<Host> {
        let name = other.current().name;
        let index = self.hosts.lock().iter().position(|h| h.name == name)?;
        self.current.store(index, Ordering::Release);
        Some(self.current())
    }

    /// Makes `host` the one new connections go to; returns whether it was another one.
    pub fn move_to(&self, host: &Host) -> bool {
        let index = self.hosts.lock().iter().position(|h| h.name == host.name).unwrap_or(0);
        let previous = self.current.swap(index, Ordering::AcqRel);
        if previous == index {
            return false;
        }
        let now = u64::try_from(self.base.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.moved_ms.store(now + 1, Ordering::Release);
        let from = self.hosts.lock().get(previous).map(|h| h.name.clone()).unwrap_or_default();
        tracing::warn!(from = %from, to = %host.name, "the database's primary moved: new connections go to the new host");
        true
    }

    async fn ask(&self, host: &Host) -> Answer {
        use sqlx::Connection;
        let attempt = async {
            let mut conn = sqlx::AnyConnection::connect_with(&host.any).await?;
            let fits = fits(&mut conn, self.target).await;
            let _ = conn.close().await;
            fits
        };
        match tokio::time::timeout(self.attempt_timeout, attempt).await {
            Ok(Ok(true)) => Answer::Fits,
            Ok(Ok(false)) => Answer::Refuses,
            Ok(Err(e)) => Answer::Failed(e),
            Err(_) => Answer::Failed(sqlx::Error::PoolTimedOut),
        }
    }

    fn target_words(&self) -> &'static str {
        match self.target {
            Target::Any => "reachable",
            Target::ReadWrite => "read-write",
            Target::Primary => "a primary",
        }
    }
}

/// Whether the server of `conn` will do for `target` (one round trip, none for `any`).
async fn fits(conn: &mut sqlx::AnyConnection, target: Target) -> Result<bool, sqlx::Error> {
    match target {
        Target::Any => Ok(true),
        Target::ReadWrite => {
            let read_only: String = sqlx::query_scalar("SHOW transaction_read_only").fetch_one(conn).await?;
            Ok(read_only == "off")
        }
        Target::Primary => {
            let recovering: i32 =
                sqlx::query_scalar("SELECT CASE WHEN pg_catalog.pg_is_in_recovery() THEN 1 ELSE 0 END")
                    .fetch_one(conn)
                    .await?;
            Ok(recovering == 0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(raw: &str) -> String {
        match split_hosts(raw) {
            Err(Error::InvalidDatabaseUrl(reason)) => reason,
            other => panic!("expected a refusal of {raw}, got {other:?}"),
        }
    }

    #[test]
    fn a_url_with_one_host_and_no_target_is_left_as_it_is() {
        for raw in [
            "postgres://u:p@db:5432/shard?sslmode=require",
            "postgresql://db/shard",
            "postgres://[::1]:5433/shard",
            "postgres://u@127.0.0.1:5432/shard?target_session_attrs_x=1",
        ] {
            let list = split_hosts(raw).unwrap();
            assert_eq!(list.urls, vec![raw.to_owned()]);
            assert!(!list.follows(), "{raw}");
        }
    }

    #[test]
    fn several_hosts_become_one_url_each_in_order_without_the_target() {
        let list = split_hosts(
            "postgres://gw:s%40cret@pg-a:5432,pg-b,[::1]:5433/shard1?sslmode=verify-full&target_session_attrs=read-write&application_name=x",
        )
        .unwrap();
        assert_eq!(list.target, Target::ReadWrite);
        assert!(list.follows());
        assert_eq!(list.names, ["pg-a:5432", "pg-b", "[::1]:5433"]);
        assert_eq!(
            list.urls,
            [
                "postgres://gw:s%40cret@pg-a:5432/shard1?sslmode=verify-full&application_name=x",
                "postgres://gw:s%40cret@pg-b/shard1?sslmode=verify-full&application_name=x",
                "postgres://gw:s%40cret@[::1]:5433/shard1?sslmode=verify-full&application_name=x",
            ]
        );
    }

    #[test]
    fn one_host_with_a_target_follows_and_loses_the_parameter() {
        let list = split_hosts("postgres://db:5432/shard?target_session_attrs=primary").unwrap();
        assert_eq!(list.target, Target::Primary);
        assert!(list.follows());
        assert_eq!(list.urls, ["postgres://db:5432/shard"]);
        let any = split_hosts("postgres://a,b/shard?target_session_attrs=any").unwrap();
        assert_eq!(any.target, Target::Any);
        assert_eq!(any.urls, ["postgres://a/shard", "postgres://b/shard"]);
    }

    #[test]
    fn targets_a_writer_cannot_use_and_hosts_in_parameters_are_refused() {
        for target in ["read-only", "standby", "prefer-standby", ""] {
            let raw = format!("postgres://a,b/shard?target_session_attrs={target}");
            assert!(reason(&raw).contains("only any, read-write and primary"), "{target}");
        }
        for raw in ["postgres:///shard?host=a,b", "postgres://a/shard?port=5432,5433", "postgres:///s?host=a%2Cb"] {
            assert!(reason(raw).contains("go in the URL's authority"), "{raw}");
        }
        for raw in ["postgres://a,,b/shard", "postgres://a,/shard", "postgres://,a/shard"] {
            assert!(reason(raw).contains("empty entry"), "{raw}");
        }
        assert!(reason("db:5432/shard").contains("must start with"));
    }

    #[test]
    fn no_message_quotes_the_url() {
        let secret = "hunter2";
        for raw in [
            format!("postgres://u:{secret}@a,b/shard?target_session_attrs=standby"),
            format!("postgres://u:{secret}@a,,b/shard"),
        ] {
            assert!(!reason(&raw).contains(secret));
        }
    }

    fn follow(hosts: usize) -> Arc<Follow> {
        let hosts = (0..hosts)
            .map(|i| Host {
                name: format!("h{i}"),
                any: format!("postgres://h{i}/db").parse().unwrap(),
                native: format!("postgres://h{i}/db").parse().unwrap(),
            })
            .collect();
        Follow::new(hosts, Target::ReadWrite, Duration::from_millis(400))
    }

    #[test]
    fn connections_opened_before_a_move_are_told_apart() {
        let follow = follow(2);
        assert!(!follow.opened_before_move(Duration::from_secs(3600)), "no move yet");
        std::thread::sleep(Duration::from_millis(30));
        let second = follow.hosts.lock()[1].clone();
        assert!(follow.move_to(&second));
        assert_eq!(follow.current().name, "h1");
        assert!(!follow.move_to(&second), "a move to the current host is none");
        assert!(follow.opened_before_move(Duration::from_millis(25)), "opened before the move");
        std::thread::sleep(Duration::from_millis(10));
        assert!(!follow.opened_before_move(Duration::from_millis(2)), "opened after it");
    }

    #[test]
    fn a_reopened_database_starts_at_the_host_it_followed() {
        let ours = follow(2);
        let second = ours.hosts.lock()[1].clone();
        ours.move_to(&second);
        let reopened = follow(2);
        assert_eq!(reopened.current().name, "h0");
        assert_eq!(reopened.start_where(&ours).map(|h| h.name).as_deref(), Some("h1"));
        assert_eq!(reopened.current().name, "h1");
        assert!(!reopened.opened_before_move(Duration::from_secs(3600)), "starting somewhere is no move");
        assert!(follow(1).start_where(&ours).is_none(), "a host it does not have");
    }

    #[test]
    fn a_new_password_keeps_the_hosts_and_the_current_one() {
        let ours = follow(2);
        let second = ours.hosts.lock()[1].clone();
        ours.move_to(&second);
        ours.take_hosts(&follow(2)).unwrap();
        assert_eq!(ours.current().name, "h1");
        assert!(ours.take_hosts(&follow(3)).is_err(), "other hosts are refused");
    }
}
