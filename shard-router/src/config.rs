//! The `[storage]` configuration section: where the catalog and the shards are, the pools to
//! them, and how data moves between shards. Read by start-up ([`crate::startup`]) and by the jobs
//! (through [`crate::router::ShardRouter::move_config`]); it knows nothing else.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use secrecy::SecretString;
use serde::{Deserialize, Serialize, Serializer};

use crate::ids::ShardId;
use crate::storage::batch::BatchingConfig;
use crate::storage::db::PoolConfig;
use crate::storage::replicas::ReplicaReadsConfig;

/// The `[storage]` configuration section.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StorageConfig {
    /// Catalog database URL (`postgres://...` or `sqlite://...`); a PostgreSQL URL may name a
    /// primary and its standbys (`postgres://u@pg-a,pg-b/catalog?target_session_attrs=read-write`)
    /// and follows the primary. Default: unset, which means the embedded default: a SQLite
    /// catalog at `<data_dir>/catalog.db`.
    #[serde(serialize_with = "redacted_option")]
    pub catalog_url: Option<SecretString>,
    /// A file holding the password of `catalog_url` (a `postgres://` URL), in place of one
    /// written in the URL: a mounted Kubernetes Secret, say. Read at start-up (a file that
    /// cannot be read stops it) and again on every catalog poll: when its content changes, new
    /// catalog connections use the new password (those open stay, as PostgreSQL keeps them), so a
    /// rotated secret needs no restart. Its content is the password, a trailing line break left
    /// out. Needs `catalog_url`. Default: unset.
    pub catalog_password_file: Option<PathBuf>,
    /// A file of keys that seal the catalog's secrets at rest (shard URLs with their passwords,
    /// valet signing keys): envelope encryption with AES-256-GCM, so that a dump of the catalog
    /// reveals none of them. One key per line, `<key id> <base64 of 32 random bytes>` (make one
    /// with `echo "k1 $(openssl rand -base64 32)"`); every key opens the catalog's data key, which
    /// is kept wrapped under each. Once set, every instance of the fleet needs it: an instance
    /// without it refuses to start on a sealed catalog. Rotation: add the new key to every
    /// instance's file and restart each, then remove the old one and restart again
    /// (docs/security.md). Read at start-up; keep it readable by the gateway's user only.
    /// Default: unset (secrets stored in the clear).
    pub secrets_key_file: Option<PathBuf>,
    /// Shards registered at start-up if the catalog does not have them yet. On a new catalog the
    /// vshards are spread evenly over them. Default: none (and, on the embedded default,
    /// `embedded_shards` SQLite shards in `<data_dir>/shards/`).
    pub shards: Vec<ShardSeed>,
    /// How many SQLite shards the embedded default creates on first start. Default 4.
    pub embedded_shards: u16,
    /// Connection pools, per database.
    pub pool: PoolConfig,
    /// Apply catalog and shard migrations when the server starts. Default true.
    pub migrate_on_start: bool,
    /// How data moves between shards.
    pub moves: MoveConfig,
    /// How long a listing of a distributed collection waits for each shard before it answers
    /// without that shard's records (reporting it). Default 2 s.
    #[serde(with = "crate::humantime_serde")]
    pub fan_out_deadline: Duration,
    /// The 99th-percentile latency a shard's request statements are to keep (waiting for a
    /// connection included): each instance exports it per shard as
    /// `shardgate_shard_latency_budget_seconds`, and the `ShardgateShardLatencyHigh` alert
    /// fires when a shard is over its own. Default 250 ms.
    #[serde(with = "crate::humantime_serde")]
    pub latency_budget: Duration,
    /// Budgets of particular shards, by shard id, in place of `latency_budget`: for example
    /// `{ "shard-7" = "1s" }` for a shard on slower disks. Default: none.
    #[serde(with = "crate::humantime_serde::map")]
    pub latency_budgets: BTreeMap<String, Duration>,
    /// The load picture: how the load on the shards is counted and kept.
    pub load: LoadConfig,
    /// How point operations that meet on one shard are batched (see `crate::storage::batch`).
    pub batching: BatchingConfig,
    /// Reads from the standbys a shard's URL names (`postgres://u@pg-a,pg-b/shard1?...`), for
    /// the requests that ask for them (`x-shardgate-consistency: bounded`).
    pub replica_reads: ReplicaReadsConfig,
}

impl Default for StorageConfig {
    fn default() -> Self {
        Self {
            catalog_url: None,
            catalog_password_file: None,
            secrets_key_file: None,
            shards: Vec::new(),
            embedded_shards: 4,
            pool: PoolConfig::default(),
            migrate_on_start: true,
            moves: MoveConfig::default(),
            fan_out_deadline: Duration::from_secs(2),
            latency_budget: Duration::from_millis(250),
            latency_budgets: BTreeMap::new(),
            load: LoadConfig::default(),
            batching: BatchingConfig::default(),
            replica_reads: ReplicaReadsConfig::default(),
        }
    }
}

impl StorageConfig {
    /// The latency budget of shard `shard`: its own in `latency_budgets`, else `latency_budget`.
    pub fn latency_budget_of(&self, shard: &str) -> Duration {
        self.latency_budgets.get(shard).copied().unwrap_or(self.latency_budget)
    }

    /// What is wrong with `replica_reads`, if anything.
    pub fn validate_replica_reads(&self) -> Result<(), String> {
        let r = &self.replica_reads;
        if r.poll_interval.is_zero() {
            return Err("storage.replica_reads.poll_interval must be above zero (e.g. 100ms)".to_owned());
        }
        let out_of_bounds = |lag: &Duration| lag.is_zero() || *lag > crate::storage::replicas::MAX_LAG_LIMIT;
        if out_of_bounds(&r.max_lag) {
            return Err("storage.replica_reads.max_lag must be above zero and at most 5m (e.g. 1s)".to_owned());
        }
        if let Some((collection, _)) = r.collections.iter().find(|(_, lag)| out_of_bounds(lag)) {
            return Err(format!(
                "storage.replica_reads.collections.{collection} must be above zero and at most 5m (e.g. 2s)"
            ));
        }
        Ok(())
    }

    /// What is wrong with the latency budgets, if anything.
    pub fn validate_latency_budgets(&self) -> Result<(), String> {
        let zero = std::iter::once(("storage.latency_budget".to_owned(), self.latency_budget))
            .chain(self.latency_budgets.iter().map(|(shard, d)| (format!("storage.latency_budgets.{shard}"), *d)))
            .find(|(_, d)| d.is_zero());
        match zero {
            Some((key, _)) => Err(format!("{key} must be above zero (a 99th-percentile latency, e.g. 250ms)")),
            None => Ok(()),
        }
    }
}

/// The `[storage.moves]` configuration section: how tenants move between shards.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MoveConfig {
    /// How long a request for a tenant in its cut-over waits for the tenant's new shard before
    /// 503 `tenant_moving`. Default 2 s.
    #[serde(with = "crate::humantime_serde")]
    pub cutover_wait: Duration,
    /// The copy's speed limit in bytes per second, so a move cannot starve the shards' regular
    /// traffic (0: no limit, and no adaptive pace). With `adaptive_pace` it is the ceiling the
    /// pace rises to while the shards' requests do not feel the copy. Default 4 MiB/s.
    pub copy_bytes_per_second: u64,
    /// Pace copies by the statement latency that requests see on the move's source and target
    /// (a feedback loop: slower when it rises above its level before the copy by more than
    /// `pace_tolerance`, faster up to `copy_bytes_per_second` when it does not; see
    /// `crate::moves::copy::Pace`). False: always `copy_bytes_per_second`. Needs the load
    /// meter (`storage.load.enabled`). Default true.
    pub adaptive_pace: bool,
    /// How far (a fraction) the shards' mean request statement latency may rise above its level
    /// before the copy before the adaptive pace slows down. Above 0, at most 10. Default 0.1.
    pub pace_tolerance: f64,
    /// The slowest the adaptive pace goes, in bytes per second: the move always finishes, and
    /// its first interval runs at this pace to measure the shards' latency before the copy.
    /// At least 1; above `copy_bytes_per_second`, that is the floor. Default 256 KiB/s.
    pub pace_floor_bytes_per_second: u64,
    /// How long the old copy of a moved tenant stays on its old shard (for downloads still
    /// streaming from it) before it is removed. Default 60 s.
    #[serde(with = "crate::humantime_serde")]
    pub cleanup_grace: Duration,
    /// How long an instance holds a job it runs without renewing; another instance takes over a
    /// job whose holder stopped renewing (crashed) after this. Default 5 s.
    #[serde(with = "crate::humantime_serde")]
    pub lease: Duration,
    /// A pause at every phase boundary of a move, for tests that stop an instance in a given
    /// phase. Default 0 (none).
    #[serde(with = "crate::humantime_serde")]
    pub phase_pause: Duration,
    /// On SQLite shards, how far apart the clocks of the instances (and a write's time stamp and
    /// its commit) may be: a catch-up pass takes the rows changed since the previous one began,
    /// less this. PostgreSQL shards need no margin: there a pass takes the rows of the
    /// transactions not yet committed when the previous one began. Default 1 s.
    #[serde(with = "crate::humantime_serde")]
    pub clock_margin: Duration,
    /// About how many bytes one batch of a move's first copy takes. Each batch commits on the
    /// target and the job remembers where it stands, so a copy taken over by another instance
    /// (the one running it crashed or lost the catalog) resumes after the last batch rather
    /// than from the start. Default 16 MiB: four seconds at the default pace.
    pub copy_batch_bytes: u64,
}

impl Default for MoveConfig {
    fn default() -> Self {
        Self {
            cutover_wait: Duration::from_secs(2),
            copy_bytes_per_second: 4 << 20,
            adaptive_pace: true,
            pace_tolerance: 0.1,
            pace_floor_bytes_per_second: 256 << 10,
            cleanup_grace: Duration::from_secs(60),
            lease: Duration::from_secs(5),
            phase_pause: Duration::ZERO,
            clock_margin: Duration::from_secs(1),
            copy_batch_bytes: 16 << 20,
        }
    }
}

impl MoveConfig {
    /// What is wrong with it, if anything.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.pace_tolerance > 0.0 && self.pace_tolerance <= 10.0) {
            return Err(format!(
                "storage.moves.pace_tolerance must be above 0 and at most 10 (a fraction: 0.1 lets the \
                 shards' request latency rise 10% before the copy slows down), not {}",
                self.pace_tolerance
            ));
        }
        if self.pace_floor_bytes_per_second == 0 {
            return Err("storage.moves.pace_floor_bytes_per_second must be at least 1: a move must finish".into());
        }
        Ok(())
    }

    /// The adaptive pace's floor in force: `pace_floor_bytes_per_second`, or the ceiling
    /// (`copy_bytes_per_second`) when that is lower (a slow fixed pace set before the floor
    /// existed keeps working; start-up warns).
    pub fn pace_floor(&self) -> u64 {
        match self.copy_bytes_per_second {
            0 => self.pace_floor_bytes_per_second.max(1),
            ceiling => self.pace_floor_bytes_per_second.clamp(1, ceiling),
        }
    }
}

/// The `[storage.load]` configuration section: the load picture (see `crate::balance`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoadConfig {
    /// Count the load of every shard statement. Default true.
    pub enabled: bool,
    /// The width of a window: statements add to the window they end in, and each instance
    /// stores its closed windows in the catalog once per window. At least 1 s. Default 10 s.
    #[serde(with = "crate::humantime_serde")]
    pub window: Duration,
    /// How many tenants a window keeps (the heaviest, by statement time). Default 100.
    pub top_tenants: usize,
    /// How long windows are kept at full resolution before they are rolled up. Default 1 h.
    #[serde(with = "crate::humantime_serde")]
    pub full_resolution: Duration,
    /// The width of a rolled-up window (a multiple of `window`). Default 1 min.
    #[serde(with = "crate::humantime_serde")]
    pub rollup: Duration,
    /// How long rolled-up windows are kept before they are pruned. Default 1 day.
    #[serde(with = "crate::humantime_serde")]
    pub retention: Duration,
}

impl Default for LoadConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            window: Duration::from_secs(10),
            top_tenants: 100,
            full_resolution: Duration::from_secs(3600),
            rollup: Duration::from_secs(60),
            retention: Duration::from_secs(86_400),
        }
    }
}

impl LoadConfig {
    /// What is wrong with it, if anything.
    pub fn validate(&self) -> Result<(), String> {
        let ms = |d: Duration| d.as_millis();
        if self.window < Duration::from_secs(1) {
            return Err("storage.load.window must be at least 1s".into());
        }
        if self.top_tenants > 10_000 {
            return Err("storage.load.top_tenants must be at most 10000".into());
        }
        if ms(self.rollup) < ms(self.window) || ms(self.rollup) % ms(self.window) != 0 {
            return Err("storage.load.rollup must be a multiple of storage.load.window".into());
        }
        if self.full_resolution < self.rollup || self.retention < self.full_resolution {
            return Err("storage.load: rollup <= full_resolution <= retention".into());
        }
        Ok(())
    }

    /// The meter's settings.
    pub fn meter(&self) -> crate::storage::meter::MeterConfig {
        crate::storage::meter::MeterConfig { window: self.window, top_tenants: self.top_tenants }
    }
}

/// A shard named in configuration.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardSeed {
    /// Its id.
    pub id: ShardId,
    /// Its URL (kept secret). A PostgreSQL URL may name a primary and its standbys
    /// (`postgres://u@pg-a:5432,pg-b:5432/shard1?target_session_attrs=read-write`): the shard
    /// follows the primary when a standby is promoted.
    #[serde(serialize_with = "redacted")]
    pub url: SecretString,
    /// A file holding the password of `url` (a `postgres://` URL), in place of one written in
    /// the URL: a mounted Kubernetes Secret, say. Read at start-up (a file that cannot be read
    /// stops it) and again on every catalog poll: when its content changes, the instance
    /// reopens the shard's pool with the new password (connections open already drain), so a
    /// rotated secret needs no restart. Its content is the password, a trailing line break
    /// left out. The catalog keeps `url` as it is given, so a URL without a password keeps the
    /// password out of the catalog too. Each instance reads its own file. Default: unset.
    #[serde(default)]
    pub password_file: Option<PathBuf>,
}

/// Writes a secret as `"<redacted>"`, never its value: configurations serialise (the
/// configuration reference shows their defaults) without their secrets.
pub fn redacted<S: Serializer>(_secret: &SecretString, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(REDACTED)
}

/// [`redacted`] for an optional secret: unset stays unset.
pub fn redacted_option<S: Serializer>(secret: &Option<SecretString>, serializer: S) -> Result<S::Ok, S::Error> {
    match secret {
        Some(_) => serializer.serialize_some(REDACTED),
        None => serializer.serialize_none(),
    }
}

/// What a serialised secret says instead of its value.
pub const REDACTED: &str = "<redacted>";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_has_its_own_latency_budget_or_the_fleets() {
        let config: StorageConfig = serde_json::from_value(
            serde_json::json!({"latency_budget": "300ms", "latency_budgets": {"shard-7": "1s"}}),
        )
        .unwrap();
        assert_eq!(config.latency_budget_of("shard-7"), Duration::from_secs(1));
        assert_eq!(config.latency_budget_of("shard-1"), Duration::from_millis(300));
        assert_eq!(StorageConfig::default().latency_budget_of("shard-1"), Duration::from_millis(250));
        assert_eq!(config.validate_latency_budgets(), Ok(()));
        let written = serde_json::to_value(&config).unwrap();
        assert_eq!(written["latency_budgets"], serde_json::json!({"shard-7": "1000ms"}));

        let zero = StorageConfig { latency_budgets: BTreeMap::from([("shard-2".into(), Duration::ZERO)]), ..config };
        let refused = zero.validate_latency_budgets().unwrap_err();
        assert!(refused.contains("storage.latency_budgets.shard-2"), "{refused}");
        let bad = serde_json::from_value::<StorageConfig>(serde_json::json!({"latency_budgets": {"s": "fast"}}));
        assert!(bad.is_err());
    }

    #[test]
    fn the_move_settings_refuse_a_pace_that_could_not_finish_or_never_slows_down() {
        assert_eq!(MoveConfig::default().validate(), Ok(()));
        for tolerance in [0.0, -0.5, 11.0, f64::NAN] {
            let config = MoveConfig { pace_tolerance: tolerance, ..MoveConfig::default() };
            let refused = config.validate().unwrap_err();
            assert!(refused.starts_with("storage.moves.pace_tolerance must be above 0"), "{refused}");
        }
        let no_floor = MoveConfig { pace_floor_bytes_per_second: 0, ..MoveConfig::default() };
        assert!(no_floor.validate().unwrap_err().contains("pace_floor_bytes_per_second must be at least 1"));
        let slow = MoveConfig { copy_bytes_per_second: 100_000, ..MoveConfig::default() };
        assert_eq!(slow.validate(), Ok(()), "a slow fixed pace set before the floor existed still starts");
        assert_eq!(slow.pace_floor(), 100_000, "the floor is the ceiling then");
        assert_eq!(MoveConfig::default().pace_floor(), 256 << 10);
    }
}
