//! The `[cache]` configuration section.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use shardgate_shard_router::db::humantime_serde;

use crate::redis_endpoint::{RedisConfigError, RedisEndpoint, RedisTlsFiles, Section};

/// Cache settings.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CacheConfig {
    /// Cache record reads at all. Default true.
    pub enabled: bool,
    /// Redis (L2, shared by every instance; also carries L1 invalidations): `redis://host:port`,
    /// `rediss://` for TLS, `redis+sentinel://host1:port1,host2:port2/<master name>` (and
    /// `rediss+sentinel://`) to find the master through Sentinel and follow its failovers, or
    /// `redis+cluster://node1:port1,node2:port2` (and `rediss+cluster://`) for a Redis Cluster
    /// named by some of its nodes. Default: unset, which means L1 only (the embedded default).
    #[serde(serialize_with = "shardgate_shard_router::config::redacted_option")]
    pub redis_url: Option<SecretString>,
    /// PEM file of the CA that signs the Redis server's certificate, for a `rediss://` URL whose
    /// server has a private CA. Default: unset, which trusts the built-in Mozilla roots.
    pub redis_ca_file: Option<PathBuf>,
    /// PEM certificate chain this instance presents to Redis (mutual TLS), with
    /// `redis_client_key_file`. Default: unset (no client certificate).
    pub redis_client_cert_file: Option<PathBuf>,
    /// PEM private key of `redis_client_cert_file`. Default: unset.
    pub redis_client_key_file: Option<PathBuf>,
    /// A file holding the password of `redis_url`, in place of one written in the URL (a
    /// mounted Kubernetes Secret, say): its content, a trailing line break left out. Read at
    /// start-up (a file that cannot be read stops it) and again on every probe of Redis (once a
    /// second): when it changes, the instance connects again with the new password, so a
    /// rotated secret needs no restart. Default: unset.
    pub redis_password_file: Option<PathBuf>,
    /// Prefix of every Redis key and channel, so several deployments (or tests) can share one
    /// Redis. Default `shardgate`.
    pub key_prefix: String,
    /// Time to live of cached records (and of invalidation markers). Default 300 s.
    #[serde(with = "humantime_serde")]
    pub ttl: Duration,
    /// Per-collection TTL overrides, by collection name.
    #[serde(default, with = "humantime_serde::map")]
    pub collection_ttl: HashMap<String, Duration>,
    /// Timeout of one Redis operation before the cache is bypassed. Default 250 ms.
    #[serde(with = "humantime_serde")]
    pub redis_timeout: Duration,
    /// How long a record write's mark lives at most. A write marks its key before it reaches
    /// the shard and ends the mark once it has; while marked, every instance reads the key
    /// from its shard and caches nothing of it. An instance that dies during a write leaves
    /// the mark until it expires, so no instance serves the version before that write from
    /// the cache. Must be longer than a write can take (`limits.request_timeout`, default
    /// 30 s). Default 60 s.
    #[serde(with = "humantime_serde")]
    pub write_mark_ttl: Duration,
    /// In-process L1.
    pub l1: L1Config,
}

impl CacheConfig {
    /// `redis_url` with its TLS files, read and checked (`None` without a URL).
    pub fn redis_endpoint(&self) -> Result<Option<RedisEndpoint>, RedisConfigError> {
        let files = RedisTlsFiles {
            ca_file: self.redis_ca_file.as_deref(),
            client_cert_file: self.redis_client_cert_file.as_deref(),
            client_key_file: self.redis_client_key_file.as_deref(),
        };
        self.redis_url
            .as_ref()
            .map(|url| {
                RedisEndpoint::parse(url, files, Section("cache"))?.with_password_file(self.redis_password_file.clone())
            })
            .transpose()
    }
}

impl Default for CacheConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            redis_url: None,
            redis_ca_file: None,
            redis_client_cert_file: None,
            redis_client_key_file: None,
            redis_password_file: None,
            key_prefix: "shardgate".to_owned(),
            ttl: Duration::from_secs(300),
            collection_ttl: HashMap::new(),
            redis_timeout: Duration::from_millis(250),
            write_mark_ttl: Duration::from_secs(60),
            l1: L1Config::default(),
        }
    }
}

/// The in-process L1 cache.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct L1Config {
    /// Default: on for the embedded default (no Redis, no shared catalog); off with Redis, and off
    /// with a shared (PostgreSQL) catalog but no Redis, where nothing could carry invalidations
    /// between instances. With Redis, L1 entries
    /// are invalidated on every instance through pub/sub, so another instance may serve a value
    /// for as long as the invalidation message takes to arrive (milliseconds); with L1 off every
    /// read after an acknowledged write sees it, on every instance.
    pub enabled: Option<bool>,
    /// Upper bound of L1's size in bytes (keys and values). Default 64 MiB.
    pub max_bytes: u64,
}

impl Default for L1Config {
    fn default() -> Self {
        Self { enabled: None, max_bytes: 64 * 1024 * 1024 }
    }
}
