//! L2: Redis, shared by every instance. One multiplexed connection (`ConnectionManager`, which
//! reconnects by itself); every operation has a timeout, and after a failure Redis is bypassed
//! until a background probe sees it answer again, so a dead Redis costs requests nothing.
//!
//! Fills and invalidations are Lua scripts that compare versions inside Redis, so an older value
//! can never overwrite a newer value or a newer invalidation marker. A write marks its key
//! before it reaches the shard (`w:<version>:<writers>`, counting the writers in progress) and
//! ends the mark with its invalidation; no fill takes a marked key. Both publish on the
//! invalidation channel in the same script. The ends of writes whose marks are held are sent in
//! batches, one call for all the writes that ended while the previous batch was on its way. The scripts read only the
//! first 64 bytes of a slot (its kind and version), never a cached record's body.
//!
//! With Sentinel (`redis+sentinel://`), the probe asks the sentinels where the master is whenever
//! it has no working connection, and checks with `ROLE` that the server it talks to is still a
//! master (a failed-over master that comes back is a replica). When the master moves, what the
//! former one had not yet replicated is gone, markers of acknowledged writes among it: the cache
//! stays bypassed until its owner has moved the cache generation on ([`L2::pending_master_move`]),
//! so no entry the new master holds from before is read. Rate limits take the new master at once.
//!
//! With a cluster (`redis+cluster://`), one cluster connection follows the slots and the
//! failovers by itself. A script's keys must share a slot: the fill, the mark and the rate
//! limiter's and valet's scripts have one key; the ends of a batch of writes are sent as one call
//! per slot. Invalidations are published with `PUBLISH`, which a cluster carries to every node,
//! and this instance subscribes on one seed after another. The probe's `PING` goes to every node,
//! and it reads which master serves which slots (`CLUSTER NODES`): when that changes (a replica
//! promoted after its master failed), the cache is bypassed until the generation has moved on,
//! as after a Sentinel failover.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use arc_swap::ArcSwapOption;
use parking_lot::Mutex;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster_async::ClusterConnection;

use crate::entry::Slot;
use crate::redis_endpoint::{RedisConfigError, RedisEndpoint};

/// `KEYS[1]` key, `ARGV[1]` version, `ARGV[2]` encoded record, `ARGV[3]` TTL in ms.
const FILL: &str = r"
local cur = redis.call('GETRANGE', KEYS[1], 0, 63)
local v = tonumber(ARGV[1])
if cur ~= '' then
  local kind, cv = string.match(cur, '^(%a):(%-?%d+)')
  cv = tonumber(cv)
  if kind == 'w' then return 0 end
  if kind == 'e' and cv and cv >= v then return 0 end
  if kind == 'm' and cv and cv > v then return 0 end
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
";

/// A write begins: `KEYS[1]` key, `ARGV[1]` the mark's TTL in ms, `ARGV[2]` channel,
/// `ARGV[3]` message. The mark keeps the version the slot spoke for and counts the writers.
const BEGIN_WRITE: &str = r"
local cur = redis.call('GETRANGE', KEYS[1], 0, 63)
local floor, writers = 0, 0
if cur ~= '' then
  local kind, cv = string.match(cur, '^(%a):(%-?%d+)')
  floor = tonumber(cv) or 0
  if kind == 'w' then writers = tonumber(string.match(cur, '^w:%-?%d+:(%d+)')) or 0 end
end
redis.call('SET', KEYS[1], 'w:' .. floor .. ':' .. (writers + 1), 'PX', ARGV[1])
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1
";

/// Writes ended: `KEYS` their keys, `ARGV[1]` the channel, then for each key three arguments:
/// the version the write ended at (0: it changed nothing), the marker's TTL in ms and the
/// message to publish. A key's last writer's end leaves a marker at the newest version; others
/// keep the mark (and its TTL) with one writer fewer. One key or many: a batch of ends
/// (`RecordCache::send_ends`) is one call.
const END_WRITES: &str = r"
for i, key in ipairs(KEYS) do
  local v = tonumber(ARGV[i * 3 - 1])
  redis.call('PUBLISH', ARGV[1], ARGV[i * 3 + 1])
  local cur = redis.call('GETRANGE', key, 0, 63)
  local marker = true
  if cur ~= '' then
    local kind, cv = string.match(cur, '^(%a):(%-?%d+)')
    cv = tonumber(cv)
    if kind == 'w' then
      local writers = tonumber(string.match(cur, '^w:%-?%d+:(%d+)')) or 1
      if cv and cv > v then v = cv end
      if writers > 1 then
        redis.call('SET', key, 'w:' .. v .. ':' .. (writers - 1), 'KEEPTTL')
        marker = false
      end
    elseif cv and cv >= v then
      marker = false
    end
  end
  if marker then redis.call('SET', key, 'm:' .. v, 'PX', ARGV[i * 3]) end
end
return #KEYS
";

/// A connection to Redis: to one server (it reconnects by itself) or to a cluster (it follows
/// the slots and the failovers by itself).
#[derive(Clone)]
enum Link {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl redis::aio::ConnectionLike for Link {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a redis::Cmd) -> redis::RedisFuture<'a, redis::Value> {
        match self {
            Self::Single(c) => c.req_packed_command(cmd),
            Self::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> redis::RedisFuture<'a, Vec<redis::Value>> {
        match self {
            Self::Single(c) => c.req_packed_commands(cmd, offset, count),
            Self::Cluster(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Self::Single(c) => c.get_db(),
            Self::Cluster(c) => c.get_db(),
        }
    }
}

/// The cluster slot of `key` (CRC16 of its hash tag, or of the whole key without one, modulo
/// 16384), as Redis Cluster computes it.
fn hash_slot(key: &[u8]) -> u16 {
    let tagged = key
        .iter()
        .position(|&b| b == b'{')
        .and_then(|open| {
            let rest = &key[open + 1..];
            rest.iter().position(|&b| b == b'}').filter(|&close| close > 0).map(|close| &rest[..close])
        })
        .unwrap_or(key);
    let mut crc: u16 = 0;
    for &byte in tagged {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
        }
    }
    crc % 16384
}

/// Which master serves which slots, from `CLUSTER NODES`: one `<slots>=<node id>` per master
/// that serves slots and is not failing, sorted.
fn masters_of(nodes: &str) -> String {
    let mut masters: Vec<String> = nodes
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let flags = *fields.get(2)?;
            let slots = fields.get(8..).filter(|slots| !slots.is_empty())?;
            (flags.split(',').any(|f| f == "master") && !flags.contains("fail"))
                .then(|| format!("{}={}", slots.join(" "), fields[0]))
        })
        .collect();
    masters.sort();
    masters.join(";")
}

/// Redis is unreachable, timed out or answered with an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unavailable;

/// What a Redis connection is used for, as its log lines say it: the record cache's, or the
/// rate limits' alone (the standalone gatekeeper has no cache).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedisUse {
    /// The record cache (and whatever shares its connection).
    Cache,
    /// Rate limits shared across instances.
    RateLimits,
}

impl RedisUse {
    fn reachable(self) -> &'static str {
        match self {
            Self::Cache => "redis reachable: cache in use",
            Self::RateLimits => "redis reachable: rate limits shared across instances",
        }
    }

    fn unreachable(self) -> &'static str {
        match self {
            Self::Cache => "redis unreachable: cache bypassed, reads go to the shards",
            Self::RateLimits => "redis unreachable: rate limits decided by this instance alone until it answers",
        }
    }
}

/// The shared cache.
pub struct L2 {
    uses: RedisUse,
    /// How many times Redis answered again after not answering: the number of the current
    /// outage, or of the last one.
    recoveries: AtomicU64,
    /// Probes completed (whatever their outcome), so start-up can wait for the first.
    probes: tokio::sync::watch::Sender<u64>,
    /// Where it connects, with its password file if it has one.
    endpoint: RedisEndpoint,
    /// The client new connections are made with: made again when the password file changes, and
    /// when the master moves (Sentinel; none until the sentinels have named one).
    client: ArcSwapOption<redis::Client>,
    /// The master's `host:port` as the sentinels last named it (Sentinel), or which masters
    /// serve which slots as the probe last read it (cluster, [`masters_of`]).
    master: Mutex<Option<String>>,
    /// How many subscriptions have been tried (a cluster's seeds are taken in turn).
    subscriptions: std::sync::atomic::AtomicUsize,
    /// How many times the master has moved (Sentinel), and how many of those moves the owner has
    /// taken in ([`L2::accept_master_move`]): Redis is not used while they differ.
    master_moves: AtomicU64,
    moves_accepted: AtomicU64,
    connection: ArcSwapOption<Link>,
    healthy: AtomicBool,
    timeout: Duration,
    fill: redis::Script,
    begin_write: redis::Script,
    end_writes: redis::Script,
    /// Why the last connection attempt failed (a refused certificate, a refused connection),
    /// until one succeeds: `/readyz` shows it next to the cache's `degraded`.
    last_error: Mutex<Option<String>>,
}

impl std::fmt::Debug for L2 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("L2").field("healthy", &self.healthy.load(Ordering::Relaxed)).finish()
    }
}

impl L2 {
    /// Prepares a client for `endpoint` (no connection yet: [`L2::probe_once`] makes and keeps
    /// it).
    pub fn new(endpoint: &RedisEndpoint, timeout: Duration, uses: RedisUse) -> Result<Arc<Self>, RedisConfigError> {
        let client =
            if endpoint.is_sentinel() || endpoint.is_cluster() { None } else { Some(Arc::new(endpoint.client()?)) };
        if let Some(cluster) = endpoint.cluster_client(timeout) {
            cluster?;
        }
        Ok(Arc::new(Self {
            uses,
            recoveries: AtomicU64::new(0),
            probes: tokio::sync::watch::Sender::new(0),
            endpoint: endpoint.clone(),
            client: ArcSwapOption::new(client),
            master: Mutex::new(None),
            subscriptions: std::sync::atomic::AtomicUsize::new(0),
            master_moves: AtomicU64::new(0),
            moves_accepted: AtomicU64::new(0),
            connection: ArcSwapOption::empty(),
            healthy: AtomicBool::new(false),
            timeout,
            fill: redis::Script::new(FILL),
            begin_write: redis::Script::new(BEGIN_WRITE),
            end_writes: redis::Script::new(END_WRITES),
            last_error: Mutex::new(None),
        }))
    }

    /// The client, for the pub/sub connection (none while the sentinels have named no master);
    /// for a cluster, each call names the next seed.
    pub fn client(&self) -> Option<Arc<redis::Client>> {
        if let Some(seed) = self.endpoint.seed_client(self.subscriptions.fetch_add(1, Ordering::Relaxed)) {
            return seed.ok().map(Arc::new);
        }
        self.client.load_full()
    }

    /// The number of the latest move of the master (Sentinel) if the owner has not taken it in
    /// yet: until it does ([`L2::accept_master_move`]), Redis is not used.
    pub fn pending_master_move(&self) -> Option<u64> {
        let moves = self.master_moves.load(Ordering::Acquire);
        (moves != self.moves_accepted.load(Ordering::Acquire)).then_some(moves)
    }

    /// The owner has taken in master move `moves` (the record cache moved its generation on).
    pub fn accept_master_move(&self, moves: u64) {
        self.moves_accepted.fetch_max(moves, Ordering::AcqRel);
    }

    /// Sentinel: asks the sentinels where the master is, and makes a client for it if it moved
    /// (the connection to the former one is dropped).
    async fn follow_sentinels(&self) {
        let addr = match self.endpoint.find_master(self.timeout.max(Duration::from_millis(500))).await {
            Ok(addr) => addr,
            Err(why) => {
                if let Some(failure) = self.new_failure(format!("no sentinel named the master: {why}")) {
                    tracing::warn!(error = %failure, "cannot find the redis master");
                }
                return;
            }
        };
        if self.master.lock().as_deref() == Some(addr.as_str()) {
            return;
        }
        match self.endpoint.master_client(&addr) {
            Ok(client) => {
                let previous = self.master.lock().replace(addr.clone());
                self.client.store(Some(Arc::new(client)));
                self.connection.store(None);
                if let Some(previous) = previous {
                    self.master_moved();
                    tracing::warn!(from = %previous, to = %addr, "the sentinels name another redis master: connecting to it");
                } else {
                    tracing::info!(master = %addr, "the sentinels name the redis master");
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot make a client for the redis master the sentinels name"),
        }
    }

    /// Counts a move of the master (Sentinel) or of a cluster's masters: the cache is bypassed
    /// until its owner takes it in; rate limits take it in at once.
    fn master_moved(&self) {
        let moves = self.master_moves.fetch_add(1, Ordering::AcqRel) + 1;
        if self.uses == RedisUse::RateLimits {
            self.accept_master_move(moves);
        }
    }

    /// A cluster's masters as `CLUSTER NODES` on `link` names them now: a change since the last
    /// probe is a move ([`L2::master_moved`]). False when the cluster did not answer.
    async fn follow_cluster_masters(&self, link: &mut Link, within: Duration) -> bool {
        let mut command = redis::cmd("CLUSTER");
        command.arg("NODES");
        let nodes = command.query_async::<String>(link);
        let Ok(Ok(nodes)) = tokio::time::timeout(within, nodes).await else { return false };
        let masters = masters_of(&nodes);
        let previous = self.master.lock().replace(masters.clone());
        if let Some(previous) = previous
            && previous != masters
        {
            self.master_moved();
            tracing::warn!(from = %previous, to = %masters, "the redis cluster's masters changed: the cache is bypassed until its generation moved on");
        }
        true
    }

    /// If the password file changed: a client with the new password, and the connection made
    /// again with it on this probe (the old one is dropped; Redis keeps a connection's
    /// authentication, so it would go on working, but its reconnections would use the old
    /// password).
    fn follow_password_file(&self) {
        if !self.endpoint.password_changed() {
            return;
        }
        if self.endpoint.is_cluster() {
            // The next probe makes a cluster client with the new password.
            self.connection.store(None);
            tracing::info!("the redis password file changed: connecting again with its new content");
            return;
        }
        let client = match self.master.lock().clone() {
            Some(master) => self.endpoint.master_client(&master),
            None if self.endpoint.is_sentinel() => return,
            None => self.endpoint.client(),
        };
        match client {
            Ok(client) => {
                self.client.store(Some(Arc::new(client)));
                self.connection.store(None);
                tracing::info!("the redis password file changed: connecting again with its new content");
            }
            Err(e) => tracing::warn!(error = %e, "cannot use the changed redis password file"),
        }
    }

    /// Keeps `failure` as the last error; returns it if it is another than the last (to be
    /// logged: a cause that stays is logged once).
    fn new_failure(&self, failure: String) -> Option<String> {
        let mut last = self.last_error.lock();
        (last.as_deref() != Some(failure.as_str())).then(|| last.insert(failure).clone())
    }

    /// Why the last connection attempt failed, while no connection is up.
    pub fn last_error(&self) -> Option<String> {
        self.last_error.lock().clone()
    }

    /// How many times Redis answered again after an outage: it changes when an outage ends.
    pub fn recoveries(&self) -> u64 {
        self.recoveries.load(Ordering::Acquire)
    }

    /// Waits (at most `within`) until a first probe has ended, well or not: then
    /// [`L2::last_error`] says why Redis cannot be reached, if it cannot.
    pub async fn first_probe(&self, within: Duration) {
        let mut probes = self.probes.subscribe();
        let _ = tokio::time::timeout(within, probes.wait_for(|count| *count > 0)).await;
    }

    /// Whether Redis answered the last operation or probe.
    pub fn is_healthy(&self) -> bool {
        self.healthy.load(Ordering::Acquire)
    }

    fn connection(&self) -> Result<Link, Unavailable> {
        if !self.is_healthy() || self.pending_master_move().is_some() {
            return Err(Unavailable);
        }
        self.connection.load_full().map(|c| (*c).clone()).ok_or(Unavailable)
    }

    async fn run<T>(&self, op: impl std::future::Future<Output = redis::RedisResult<T>>) -> Result<T, Unavailable> {
        match tokio::time::timeout(self.timeout, op).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "redis operation failed; bypassing the cache until it answers again");
                self.healthy.store(false, Ordering::Release);
                Err(Unavailable)
            }
            Err(_) => {
                tracing::warn!(timeout_ms = self.timeout.as_millis() as u64, "redis operation timed out; bypassing");
                self.healthy.store(false, Ordering::Release);
                Err(Unavailable)
            }
        }
    }

    /// The slot at `key`.
    pub async fn get(&self, key: &str) -> Result<Option<Slot>, Unavailable> {
        let mut conn = self.connection()?;
        let raw: Option<Vec<u8>> = self.run(redis::cmd("GET").arg(key).query_async(&mut conn)).await?;
        Ok(raw.as_deref().and_then(Slot::decode))
    }

    /// Version-guarded store of a record slot.
    pub async fn fill(&self, key: &str, slot: &Slot, ttl: Duration) -> Result<(), Unavailable> {
        let mut conn = self.connection()?;
        let ttl_ms = ttl.as_millis().max(1) as u64;
        let mut invocation = self.fill.key(key);
        invocation.arg(slot.version()).arg(slot.encode()).arg(ttl_ms);
        let _: i64 = self.run(invocation.invoke_async(&mut conn)).await?;
        Ok(())
    }

    /// Marks `key` as being written for at most `ttl`, and publishes `message` on `channel`.
    pub async fn begin_write(&self, key: &str, ttl: Duration, channel: &str, message: &str) -> Result<(), Unavailable> {
        let mut conn = self.connection()?;
        let mut invocation = self.begin_write.key(key);
        invocation.arg(ttl.as_millis().max(1) as u64).arg(channel).arg(message);
        let _: i64 = self.run(invocation.invoke_async(&mut conn)).await?;
        Ok(())
    }

    /// Ends the writes `ends` in one call: each `(key, version, marker TTL, message)`, version 0
    /// when the write changed nothing. Version-guarded, each leaves a marker living its TTL (or
    /// the mark, if other writes of the key are in progress) and publishes its message on
    /// `channel`. On a cluster, one call per slot (a script's keys share one), all at once.
    pub async fn end_writes(&self, ends: &[(&str, i64, Duration, &str)], channel: &str) -> Result<(), Unavailable> {
        if !self.endpoint.is_cluster() {
            return self.end_writes_in_one(ends, channel).await;
        }
        let mut by_slot: std::collections::BTreeMap<u16, Vec<(&str, i64, Duration, &str)>> = Default::default();
        for end in ends {
            by_slot.entry(hash_slot(end.0.as_bytes())).or_default().push(*end);
        }
        let calls = by_slot.values().map(|group| self.end_writes_in_one(group, channel));
        futures::future::join_all(calls).await.into_iter().collect()
    }

    /// [`L2::end_writes`] of keys of one slot, in one call.
    async fn end_writes_in_one(&self, ends: &[(&str, i64, Duration, &str)], channel: &str) -> Result<(), Unavailable> {
        let mut conn = self.connection()?;
        let mut invocation = self.end_writes.prepare_invoke();
        invocation.arg(channel);
        for (key, version, ttl, message) in ends {
            invocation.key(*key).arg(*version).arg(ttl.as_millis().max(1) as u64).arg(*message);
        }
        let _: i64 = self.run(invocation.invoke_async(&mut conn)).await?;
        Ok(())
    }

    /// Runs `script` on `key` with integer arguments; the script returns a list of non-negative
    /// integers.
    pub async fn run_script(&self, script: &redis::Script, key: &str, args: &[u64]) -> Result<Vec<u64>, Unavailable> {
        let mut conn = self.connection()?;
        let mut invocation = script.key(key);
        for arg in args {
            invocation.arg(*arg);
        }
        self.run(invocation.invoke_async(&mut conn)).await
    }

    /// Publishes `message` on `channel`.
    pub async fn publish(&self, channel: &str, message: &str) -> Result<(), Unavailable> {
        let mut conn = self.connection()?;
        let _: i64 = self.run(redis::cmd("PUBLISH").arg(channel).arg(message).query_async(&mut conn)).await?;
        Ok(())
    }

    /// Connects (again) when needed and probes with `PING`, updating the health flag.
    pub async fn probe_once(&self) {
        self.follow_password_file();
        if self.endpoint.is_sentinel() && (!self.is_healthy() || self.connection.load().is_none()) {
            self.follow_sentinels().await;
        }
        let connection = match self.connection.load_full() {
            Some(c) => Some((*c).clone()),
            None => {
                let failure = match self.connect().await {
                    Ok(link) => {
                        self.connection.store(Some(Arc::new(link.clone())));
                        *self.last_error.lock() = None;
                        return self.probed(Some(link)).await;
                    }
                    Err(failure) => failure,
                };
                // Logged once per cause: a certificate the CA does not sign stays refused on
                // every probe, and says so once.
                if let Some(failure) = self.new_failure(failure) {
                    tracing::warn!(error = %failure, "cannot connect to redis; the cache is bypassed until it answers");
                }
                None
            }
        };
        self.probed(connection).await;
    }

    /// A new connection: to the cluster, or to the server the client names. `Err` says why not.
    async fn connect(&self) -> Result<Link, String> {
        if let Some(cluster) = self.endpoint.cluster_client(self.timeout) {
            let client = cluster.map_err(|e| e.to_string())?;
            return match tokio::time::timeout(Duration::from_secs(2), client.get_async_connection()).await {
                Ok(Ok(c)) => Ok(Link::Cluster(c)),
                Ok(Err(e)) => Err(connect_failure(&e)),
                Err(_) => Err("connecting timed out".to_owned()),
            };
        }
        let Some(client) = self.client.load_full() else { return Err("no master named yet".to_owned()) };
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(self.timeout.max(Duration::from_millis(500)))
            .set_response_timeout(self.timeout)
            .set_number_of_retries(1);
        let connect = ConnectionManager::new_with_config((*client).clone(), config);
        match tokio::time::timeout(Duration::from_secs(2), connect).await {
            Ok(Ok(c)) => Ok(Link::Single(c)),
            Ok(Err(e)) => Err(connect_failure(&e)),
            Err(_) => Err("connecting timed out".to_owned()),
        }
    }

    /// Pings `connection` (none: no connection) and records whether Redis answered.
    async fn probed(&self, connection: Option<Link>) {
        let within = self.timeout.max(Duration::from_millis(500));
        let alive = match connection {
            // Through sentinels the server must still be a master: one that failed over and came
            // back is a replica, which would answer reads with what it replicates late and
            // refuse every write.
            Some(mut c) if self.endpoint.is_sentinel() => {
                let command = redis::cmd("ROLE");
                let role = command.query_async::<Vec<redis::Value>>(&mut c);
                match tokio::time::timeout(within, role).await {
                    Ok(Ok(role)) => {
                        role.first().and_then(|r| redis::from_redis_value::<String>(r).ok()).as_deref()
                            == Some("master")
                    }
                    _ => false,
                }
            }
            Some(mut c) => {
                // On a cluster the PING goes to every node, and must come back from each.
                let command = redis::cmd("PING");
                let ping = command.query_async::<String>(&mut c);
                matches!(tokio::time::timeout(within, ping).await, Ok(Ok(_)))
                    && (!self.endpoint.is_cluster() || self.follow_cluster_masters(&mut c, within).await)
            }
            None => false,
        };
        let was = self.healthy.swap(alive, Ordering::AcqRel);
        if alive && !was {
            self.recoveries.fetch_add(1, Ordering::AcqRel);
            tracing::info!("{}", self.uses.reachable());
        } else if !alive && was {
            tracing::warn!("{}", self.uses.unreachable());
        }
        self.probes.send_modify(|count| *count += 1);
    }
}

/// What a failed connection attempt says, with the cause rustls gave (`invalid peer
/// certificate: UnknownIssuer` for a certificate the CA does not sign) and never the URL.
fn connect_failure(error: &redis::RedisError) -> String {
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message = format!("{message}: {text}");
        }
        source = cause.source();
    }
    let hint = if message.contains("UnknownIssuer") {
        " (the server's certificate is not signed by the CA of redis_ca_file, or by a built-in root without one)"
    } else if message.contains("NotValidForName") {
        " (the server's certificate does not name the host of the Redis URL)"
    } else if message.contains("certificate") {
        " (check the redis_ca_file and redis_client_cert_file settings)"
    } else {
        ""
    };
    format!("{message}{hint}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_lands_in_the_slot_redis_cluster_gives_it() {
        // `CLUSTER KEYSLOT foo` is 12182; a hash tag puts keys in one slot.
        assert_eq!(hash_slot(b"foo"), 12182);
        assert_eq!(hash_slot(b"{foo}.bar"), 12182);
        assert_eq!(hash_slot(b"{user1000}.following"), hash_slot(b"{user1000}.followers"));
        // An empty tag is no tag: the whole key counts.
        assert_ne!(hash_slot(b"{}foo"), hash_slot(b"foo"));
        assert!(hash_slot(b"sg:1:t:c:k") < 16384);
    }

    #[test]
    fn the_masters_are_the_serving_masters_that_do_not_fail() {
        let nodes = "\
a1 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460
b2 127.0.0.1:7001@17001 master - 0 0 2 connected 5461-10922
c3 127.0.0.1:7002@17002 master,fail - 0 0 3 disconnected 10923-16383
d4 127.0.0.1:7003@17003 slave a1 0 0 1 connected
e5 127.0.0.1:7004@17004 master - 0 0 4 connected
";
        assert_eq!(masters_of(nodes), "0-5460=a1;5461-10922=b2");
        let promoted = nodes
            .replace("d4 127.0.0.1:7003@17003 slave a1", "d4 127.0.0.1:7003@17003 master -")
            .replace("0 0 1 connected\n", "0 0 5 connected 10923-16383\n");
        assert_eq!(masters_of(&promoted), "0-5460=a1;10923-16383=d4;5461-10922=b2");
    }
}
