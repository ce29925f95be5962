//! Configuration: defaults, then an optional TOML file, then `SHARDGATE_*` environment variables
//! (nested keys joined with `__`, e.g. `SHARDGATE_STORAGE__CATALOG_URL`). Unknown keys are errors
//! that name the key. Secrets are `SecretString`s and never appear in `Debug` output or logs.
//! [`error`] says what is wrong in the user's own words (the file or variable as written, the
//! nearest valid key).
//!
//! The lowest room of the crate: the state, the plumbing, the logging and start-up read it; it
//! knows none of them (a listener's `tls` is only its file names, [`ListenerTls`]).

pub mod error;
pub mod proxies;
pub mod telemetry;
pub mod usage;

pub use usage::{QuotaTiers, QuotasConfig, UsageAuditConfig, UsageConfig};

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::{Format, Serialized, Toml};
use serde::{Deserialize, Serialize};
use shardgate_cache::CacheConfig;
use shardgate_gatekeeper::AuthConfig;
use shardgate_gatekeeper::throttle::RateLimitConfig;
use shardgate_shard_router::StorageConfig;

use self::error::{ConfigError, Origin};

/// A listener's certificate and key files (`tls = { cert_file, key_file }`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListenerTls {
    /// PEM certificate chain, the server's certificate first.
    pub cert_file: PathBuf,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1) of the first certificate.
    pub key_file: PathBuf,
}

/// The whole configuration.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Address to listen on. Default `127.0.0.1:8080`. Env `SHARDGATE_LISTEN`, flag `--listen`.
    pub listen: SocketAddr,
    /// HTTPS on `listen`: `{ cert_file, key_file }` (PEM), reloaded when the files change.
    /// Default: unset, plain HTTP.
    pub tls: Option<ListenerTls>,
    /// Directory for the embedded default's catalog, shards and generated secret. Default
    /// `./shardgate-data`. Env `SHARDGATE_DATA_DIR`, flag `--data-dir`.
    pub data_dir: PathBuf,
    /// Catalog, shards and pools.
    pub storage: StorageConfig,
    /// The balancer: its mode, interval, limits and policy.
    pub balancer: shardgate_shard_router::balance::BalancerConfig,
    /// Token issuers.
    pub auth: AuthConfig,
    /// Record cache (L1 in-process, L2 Redis).
    pub cache: CacheConfig,
    /// Request limits.
    pub limits: LimitsConfig,
    /// Cross-origin access for browser clients.
    pub cors: CorsConfig,
    /// Throttling per tenant and per client IP.
    pub rate_limits: RateLimitConfig,
    /// What a tenant may keep, by tier.
    pub quotas: QuotasConfig,
    /// The daily usage kept for billing (`GET /v1/admin/usage?day=`).
    pub usage: UsageConfig,
    /// Blob limits.
    pub blobs: BlobsConfig,
    /// Valet keys (signed URLs).
    pub valet: ValetConfig,
    /// The admin plane's own listener.
    pub admin: AdminListenerConfig,
    /// What this instance reports to the instance registry.
    pub instances: InstancesConfig,
    /// The credential shared with a standalone gatekeeper.
    pub internal: InternalConfig,
    /// Serve only requests forwarded by a standalone gatekeeper (`serve --trusted`): every
    /// request must carry its internal credential (401 otherwise), and no token is verified here.
    pub trusted: bool,
    /// Proxies whose word is taken for the client's address: networks (`10.0.0.0/8`,
    /// `fd00::/8`) or single addresses. From a peer in them, the client is the rightmost hop of
    /// `forwarded_header` that is not itself a trusted proxy (with `proxy_protocol`, the PROXY
    /// header's source first); from any other peer those headers are ignored and the client is
    /// the peer. The client's address is what per-IP rate limits, the audit log and the access
    /// log use. As a variable, a list (`["10.0.0.0/8"]`) or comma-separated networks
    /// (`10.0.0.0/8,fd00::/8`). Default: none (every client is its TCP peer).
    #[serde(deserialize_with = "proxies::cidr_list")]
    pub trusted_proxies: Vec<proxies::Cidr>,
    /// Connections from `trusted_proxies` begin with a PROXY protocol v2 header (an L4 load
    /// balancer's: TCP over IPv4 or IPv6, or LOCAL for its own health checks), which must
    /// arrive within `limits.header_read_timeout` and be at most 1 KiB long. Its source address
    /// is the client (`forwarded_header` is read only when that source is itself a trusted
    /// proxy). A connection from a trusted proxy without the header is served as its own client,
    /// its forwarding headers ignored; a PROXY header from any other peer closes the
    /// connection. Needs `trusted_proxies`. Default `false`.
    pub proxy_protocol: bool,
    /// The forwarding header `trusted_proxies` write, and the only one read from them: the other
    /// is ignored, as a proxy passes it through from its client unchanged.
    pub forwarded_header: proxies::ForwardedHeader,
    /// Logging.
    pub log: LogConfig,
    /// Traces (OpenTelemetry over OTLP/HTTP).
    pub telemetry: telemetry::TelemetryConfig,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            tls: None,
            data_dir: PathBuf::from("./shardgate-data"),
            storage: StorageConfig::default(),
            balancer: shardgate_shard_router::balance::BalancerConfig::default(),
            auth: AuthConfig::default(),
            cache: CacheConfig::default(),
            limits: LimitsConfig::default(),
            cors: CorsConfig::default(),
            rate_limits: RateLimitConfig::default(),
            quotas: QuotasConfig::default(),
            usage: UsageConfig::default(),
            blobs: BlobsConfig::default(),
            valet: ValetConfig::default(),
            admin: AdminListenerConfig::default(),
            instances: InstancesConfig::default(),
            internal: InternalConfig::default(),
            trusted: false,
            trusted_proxies: Vec::new(),
            proxy_protocol: false,
            forwarded_header: proxies::ForwardedHeader::default(),
            log: LogConfig::default(),
            telemetry: telemetry::TelemetryConfig::default(),
        }
    }
}

/// The `[limits]` section.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    /// Longest a request may take before it is answered 504 `request_timeout`. Default 30 s.
    #[serde(with = "shardgate_shard_router::db::humantime_serde")]
    pub request_timeout: std::time::Duration,
    /// The same for `/v1/admin` routes, some of which move or purge data. Default 120 s.
    #[serde(with = "shardgate_shard_router::db::humantime_serde")]
    pub admin_timeout: std::time::Duration,
    /// The same for blob uploads and downloads (and valet transfers). Default 1 h.
    #[serde(with = "shardgate_shard_router::db::humantime_serde")]
    pub transfer_timeout: std::time::Duration,
    /// A blob or valet transfer that moves no byte for this long is ended, so a stalled client
    /// gives its place back: an upload whose body stops arriving is answered 408
    /// `transfer_stalled` (nothing of it is stored), a download whose client stops reading is cut
    /// off. Default 30 s.
    #[serde(with = "shardgate_shard_router::db::humantime_serde")]
    pub transfer_idle_timeout: std::time::Duration,
    /// Most requests in progress at once; more are shed at once with 503 `overloaded` and
    /// `Retry-After`. Default 1024. The last line behind the caps per tenant below; probes and
    /// `/metrics` are never counted.
    pub max_concurrent_requests: usize,
    /// Longest a client may take to send the head (request line and headers) of a request,
    /// counted from its first byte (for a connection's first request, from the connection's
    /// opening); then the connection is closed without an answer. Must be more than 0. Default
    /// 10 s.
    #[serde(with = "shardgate_shard_router::db::humantime_serde")]
    pub header_read_timeout: std::time::Duration,
    /// How long a keep-alive connection may sit idle between two requests before it is closed.
    /// A request in progress is never idle, however long its transfer takes (that is bounded by
    /// the deadlines above). Must be more than 0. Default 60 s.
    #[serde(with = "shardgate_shard_router::db::humantime_serde")]
    pub keep_alive_idle_timeout: std::time::Duration,
    /// Most client connections open at once, over every listener of the process. When they are
    /// all open, the connections that have had no request in progress for 100 ms (idle, or
    /// still sending a head) are closed to make room, and the new connection waits meanwhile
    /// (those after it in the listen backlog); it is never refused outright. Default: derived
    /// from the open-file limit, which the process first raises to its hard limit: that limit
    /// less a reserve of a quarter of it (at least 64, at most 8192) for database and Redis
    /// connections and files, and at most 32768. A larger value is lowered to that bound (with a
    /// warning), so the process cannot run out of file descriptors.
    pub max_connections: Option<usize>,
    /// Most requests in progress at once of one tenant, by its tier (`free`, `standard`,
    /// `premium`), so no tenant can occupy the instance; one more is refused at once with 429
    /// `tenant_concurrency_limit` and `Retry-After`. Whatever a tier says, a tenant's cap is at
    /// most half of `max_concurrent_requests` (at least one), so others always find room; start-up
    /// warns about a tier set above that. A request counts until its response is sent
    /// (a download until its last byte); valet transfers count against the tenant of the URL;
    /// a token without a tenant counts on its own with the `standard` cap. Default free 32,
    /// standard 256, premium 512. Enforced by `serve`; a standalone gatekeeper leaves this and
    /// `anonymous_concurrent_requests` to its backend.
    pub tenant_concurrent_requests: TierConcurrency,
    /// Most requests in progress at once of all callers without a valid token together (valet
    /// URLs are counted against their tenant instead); one more is refused at once with 429
    /// `anonymous_concurrency_limit` and `Retry-After`. At most half of
    /// `max_concurrent_requests` too, as a tenant's cap. Default 64.
    pub anonymous_concurrent_requests: usize,
    /// Most listings of distributed collections (which read many shards each) in progress at
    /// once of one tenant on this instance; one more is refused at once with 429
    /// `fan_out_limit` and `Retry-After`, so one tenant's scans cannot starve the shards for
    /// others' point reads. Default 4.
    pub tenant_concurrent_fan_outs: usize,
    /// Shard reads per second each tenant's listings of distributed collections may make on
    /// one instance (a listing costs one per shard it reads; one second's worth may be spent
    /// at once). One more listing is refused at once with 429 `fan_out_limit` and
    /// `Retry-After`, so a tenant flooding short fan-outs cannot take the shards from others'
    /// point reads either. 0 turns the budget off. Default 200 (50 listings a second over 4
    /// shards, 12 over 16).
    pub tenant_fan_out_shard_reads_per_second: u32,
    /// Largest record body in bytes; bigger bodies get 413. Default 1 MiB (1048576).
    pub max_record_bytes: usize,
    /// Deepest nesting of arrays and objects in a record value; deeper bodies get 400
    /// `json_too_deep`. Default 64.
    pub max_json_depth: usize,
    /// Largest `limit` of a listing; larger values are capped to it. Default 1000.
    pub max_list_limit: u32,
    /// `limit` of a listing when none is given. Default 100.
    pub default_list_limit: u32,
    /// Most index definitions one collection may have, by its tenant's tier (`free`,
    /// `standard`, `premium`): every record write maintains each of them, on shards other
    /// tenants share. Defining one more is refused with 409 `index_limit_reached`; defining an
    /// existing one again is not. Lowering a cap removes no index. Default free 8, standard 16,
    /// premium 32.
    pub max_indexes_per_collection: TierIndexCap,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            request_timeout: std::time::Duration::from_secs(30),
            admin_timeout: std::time::Duration::from_secs(120),
            transfer_timeout: std::time::Duration::from_secs(3600),
            transfer_idle_timeout: std::time::Duration::from_secs(30),
            max_concurrent_requests: 1024,
            header_read_timeout: std::time::Duration::from_secs(10),
            keep_alive_idle_timeout: std::time::Duration::from_secs(60),
            max_connections: None,
            tenant_concurrent_requests: TierConcurrency::default(),
            anonymous_concurrent_requests: 64,
            tenant_concurrent_fan_outs: 4,
            tenant_fan_out_shard_reads_per_second: 200,
            max_record_bytes: 1024 * 1024,
            max_json_depth: 64,
            max_list_limit: 1000,
            default_list_limit: 100,
            max_indexes_per_collection: TierIndexCap::default(),
        }
    }
}

impl LimitsConfig {
    /// The largest share of the instance's requests in progress (`max_concurrent_requests`) one
    /// compartment of callers may hold: half of it, at least one.
    pub fn compartment_bound(&self) -> usize {
        (self.max_concurrent_requests / 2).max(1)
    }

    /// The cap of a tenant of `tier` (and of a token without a tenant, with `standard`): its
    /// tier's, within [`LimitsConfig::compartment_bound`].
    pub fn tenant_cap(&self, tier: shardgate_shard_router::Tier) -> usize {
        self.tenant_concurrent_requests.for_tier(tier).min(self.compartment_bound())
    }

    /// The cap of the requests without a valid token together, within
    /// [`LimitsConfig::compartment_bound`].
    pub fn anonymous_cap(&self) -> usize {
        self.anonymous_concurrent_requests.max(1).min(self.compartment_bound())
    }

    /// The caps set above [`LimitsConfig::compartment_bound`]: each one's key (naming the tier),
    /// its configured value and the cap in force.
    pub fn caps_above_bound(&self) -> Vec<(&'static str, usize, usize)> {
        use shardgate_shard_router::Tier;
        let tiers = [
            ("limits.tenant_concurrent_requests.free", Tier::Free),
            ("limits.tenant_concurrent_requests.standard", Tier::Standard),
            ("limits.tenant_concurrent_requests.premium", Tier::Premium),
        ]
        .map(|(key, tier)| (key, self.tenant_concurrent_requests.for_tier(tier), self.tenant_cap(tier)));
        let anonymous =
            ("limits.anonymous_concurrent_requests", self.anonymous_concurrent_requests, self.anonymous_cap());
        tiers.into_iter().chain([anonymous]).filter(|(_, configured, effective)| configured > effective).collect()
    }
}

/// Caps on the requests in progress of one tenant, by tier (`limits.tenant_concurrent_requests`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TierConcurrency {
    /// A `free` tenant's cap. Default 32.
    pub free: usize,
    /// A `standard` tenant's cap (also a token's without a tenant). Default 256.
    pub standard: usize,
    /// A `premium` tenant's cap. Default 512.
    pub premium: usize,
}

impl Default for TierConcurrency {
    fn default() -> Self {
        Self { free: 32, standard: 256, premium: 512 }
    }
}

impl TierConcurrency {
    /// The cap of a tenant of `tier` (at least one).
    pub fn for_tier(&self, tier: shardgate_shard_router::Tier) -> usize {
        let cap = match tier {
            shardgate_shard_router::Tier::Free => self.free,
            shardgate_shard_router::Tier::Standard => self.standard,
            shardgate_shard_router::Tier::Premium => self.premium,
        };
        cap.max(1)
    }
}

/// Caps on the index definitions of one collection, by its tenant's tier
/// (`limits.max_indexes_per_collection`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TierIndexCap {
    /// A `free` tenant's cap. Default 8.
    pub free: u32,
    /// A `standard` tenant's cap. Default 16.
    pub standard: u32,
    /// A `premium` tenant's cap. Default 32.
    pub premium: u32,
}

impl Default for TierIndexCap {
    fn default() -> Self {
        Self { free: 8, standard: 16, premium: 32 }
    }
}

impl TierIndexCap {
    /// The cap of a tenant of `tier`.
    pub fn for_tier(&self, tier: shardgate_shard_router::Tier) -> u32 {
        match tier {
            shardgate_shard_router::Tier::Free => self.free,
            shardgate_shard_router::Tier::Standard => self.standard,
            shardgate_shard_router::Tier::Premium => self.premium,
        }
    }
}

/// The `[blobs]` section.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BlobsConfig {
    /// Largest blob of a `free` tenant, in bytes (413 beyond). Default 100 MiB.
    pub max_size_free: u64,
    /// Largest blob of a `standard` tenant. Default 5 GiB.
    pub max_size_standard: u64,
    /// Largest blob of a `premium` tenant. Default 50 GiB.
    pub max_size_premium: u64,
    /// Bytes of blob chunks kept in memory for repeated downloads (0: none). Default 256 MiB.
    pub chunk_cache_bytes: u64,
    /// Bound of one read of consecutive chunks from a shard: a download reads a window of this
    /// many bytes of chunks (at least one chunk) per statement and holds at most two windows.
    /// Default 1 MiB (four 256 KiB chunks).
    pub read_window_bytes: usize,
}

impl Default for BlobsConfig {
    fn default() -> Self {
        const GIB: u64 = 1024 * 1024 * 1024;
        Self {
            max_size_free: 100 * 1024 * 1024,
            max_size_standard: 5 * GIB,
            max_size_premium: 50 * GIB,
            chunk_cache_bytes: 256 * 1024 * 1024,
            read_window_bytes: shardgate_shard_router::blobs::BLOB_READ_WINDOW_BYTES,
        }
    }
}

impl BlobsConfig {
    /// The largest blob of a tenant of `tier`.
    pub fn max_size(&self, tier: shardgate_shard_router::Tier) -> u64 {
        match tier {
            shardgate_shard_router::Tier::Free => self.max_size_free,
            shardgate_shard_router::Tier::Standard => self.max_size_standard,
            shardgate_shard_router::Tier::Premium => self.max_size_premium,
        }
    }
}

/// The `[valet]` section: signed URLs for direct blob transfer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ValetConfig {
    /// Base URL clients reach the valet endpoint at, put in front of `/valet/...` in issued URLs.
    /// Default: `http://` and the valet listener's (else the API's) address.
    pub public_url: Option<String>,
    /// A listener of its own for `/valet/...` only (the API's listener serves it too), so that it
    /// can be exposed and scaled apart. Default: none.
    pub listen: Option<SocketAddr>,
    /// HTTPS on `valet.listen`: `{ cert_file, key_file }` (PEM), reloaded when the files
    /// change. Default: unset, plain HTTP.
    pub tls: Option<ListenerTls>,
    /// Lifetime of a valet key when the request gives none. Default 300 s.
    #[serde(with = "shardgate_shard_router::db::humantime_serde")]
    pub default_expires_in: std::time::Duration,
    /// Longest lifetime a valet key may ask for. Default 1 h.
    #[serde(with = "shardgate_shard_router::db::humantime_serde")]
    pub max_expires_in: std::time::Duration,
    /// How far in the past a key's not-before is set, for clients whose clock is behind. Default
    /// 5 min.
    #[serde(with = "shardgate_shard_router::db::humantime_serde")]
    pub not_before_skew: std::time::Duration,
    /// Browser origins allowed to GET/PUT valet URLs (with `Range` and `Content-Type`). Default
    /// `["*"]`: the URL itself is the credential, and cookies are never allowed.
    pub cors_allowed_origins: Vec<String>,
    /// Valet audit rows waiting to be written to the catalog, at most; when the queue is full
    /// (the catalog is slow or down), further rows are dropped and counted in
    /// `shardgate_valet_audit_dropped_total`. Default 10,000.
    pub audit_queue_rows: usize,
}

impl Default for ValetConfig {
    fn default() -> Self {
        Self {
            public_url: None,
            listen: None,
            tls: None,
            default_expires_in: std::time::Duration::from_secs(300),
            max_expires_in: std::time::Duration::from_secs(3600),
            not_before_skew: std::time::Duration::from_secs(300),
            cors_allowed_origins: vec!["*".to_owned()],
            audit_queue_rows: 10_000,
        }
    }
}

/// The `[admin]` section: a listener of the admin plane's own, so that it can be kept off the
/// public network.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AdminListenerConfig {
    /// A listener of its own for the admin plane: `/v1/admin/*`, `/console` (and its files) and
    /// `/metrics`, with `/healthz` and `/readyz` for its own probes. When set, the public listener
    /// answers those paths 404 `not_found`, as it answers any unknown path, and the standalone
    /// gatekeeper never forwards them (it serves its own `/metrics` here). Admin tokens are still
    /// required there (also by `serve --trusted`, which verifies them itself on this listener).
    /// Default: none (the admin plane is served on `listen`, and the gatekeeper forwards it).
    pub listen: Option<SocketAddr>,
    /// HTTPS on `admin.listen`: `{ cert_file, key_file }` (PEM), its own certificate, reloaded
    /// when the files change. Default: unset, plain HTTP.
    pub tls: Option<ListenerTls>,
}

/// The `[instances]` section: this instance's row in the instance registry, which
/// `GET /v1/admin/instances` and the console's Instances view read.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InstancesConfig {
    /// How often this instance writes its row (version, start, address, the readiness of each
    /// component as `/readyz` computes it) to the catalog. An instance that has not written it
    /// for two of its intervals is shown `gone`; rows not written for `storage.load.retention`
    /// are deleted. At least 100 ms. Default 10 s.
    #[serde(with = "shardgate_shard_router::db::humantime_serde")]
    pub report_interval: std::time::Duration,
    /// The address other people reach this instance at (`10.0.3.7:8080`,
    /// `gateway-2.internal:8080`), as the registry shows it. Default: unset, the address `listen`
    /// is bound to.
    pub advertised_address: Option<String>,
}

impl Default for InstancesConfig {
    fn default() -> Self {
        Self { report_interval: std::time::Duration::from_secs(10), advertised_address: None }
    }
}

impl InstancesConfig {
    /// What is wrong with it, if anything.
    pub fn validate(&self) -> Result<(), String> {
        if self.report_interval < std::time::Duration::from_millis(100) {
            return Err("instances.report_interval must be at least 100ms".into());
        }
        if self.advertised_address.as_deref().is_some_and(|a| a.trim().is_empty() || a.len() > 255) {
            return Err("instances.advertised_address must be a non-empty address of at most 255 bytes".into());
        }
        Ok(())
    }
}

/// The `[internal]` section: the secret a standalone gatekeeper and its trusted backends share.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InternalConfig {
    /// HMAC key of the internal credential (at least 32 bytes). Required by `shardgate
    /// gatekeeper` and by `serve --trusted`.
    #[serde(serialize_with = "shardgate_shard_router::config::redacted_option")]
    pub secret: Option<secrecy::SecretString>,
}

/// The standalone gatekeeper's configuration (`shardgate gatekeeper`). It holds no shard or
/// catalog URL and no valet signing key: unknown sections such as `[storage]` are refused.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GatekeeperConfig {
    /// Address to listen on. Default `127.0.0.1:8080`.
    pub listen: SocketAddr,
    /// HTTPS on `listen`: `{ cert_file, key_file }` (PEM), reloaded when the files change.
    /// Default: unset, plain HTTP.
    pub tls: Option<ListenerTls>,
    /// Base URL of the trusted backend (`shardgate serve --trusted`), e.g. `http://10.0.0.5:8081`
    /// or `https://backend.internal:8081`.
    pub upstream: Option<String>,
    /// PEM file of the CA that signs an `https://` upstream's certificate (a private CA).
    /// Default: unset, which trusts the built-in Mozilla roots.
    pub upstream_ca_file: Option<PathBuf>,
    /// Directory of the embedded default's generated HS256 secret, used when no issuer is
    /// configured. Default `./shardgate-data`.
    pub data_dir: PathBuf,
    /// The credential shared with the backend.
    pub internal: InternalConfig,
    /// Token issuers.
    pub auth: AuthConfig,
    /// Throttling (`rate_limits.redis_url` shares limits between gatekeepers).
    pub rate_limits: RateLimitConfig,
    /// Request limits (deadlines, body sizes, concurrency).
    pub limits: LimitsConfig,
    /// Cross-origin access for browser clients.
    pub cors: CorsConfig,
    /// The gatekeeper's admin listener: when set, its own `/metrics` (and probes) are served
    /// there, and the admin plane is never forwarded.
    pub admin: AdminListenerConfig,
    /// Proxies whose word is taken for the client's address: networks (`10.0.0.0/8`,
    /// `fd00::/8`) or single addresses. From a peer in them, the client is the rightmost hop of
    /// `forwarded_header` that is not itself a trusted proxy (with `proxy_protocol`, the PROXY
    /// header's source first); from any other peer those headers are ignored and the client is
    /// the peer. The client's address is what per-IP rate limits and the access log use, and
    /// what the gatekeeper tells its backend (for the backend's audit and access logs). As a
    /// variable, a list (`["10.0.0.0/8"]`) or comma-separated networks (`10.0.0.0/8,fd00::/8`).
    /// Default: none (every client is its TCP peer).
    #[serde(deserialize_with = "proxies::cidr_list")]
    pub trusted_proxies: Vec<proxies::Cidr>,
    /// Connections from `trusted_proxies` begin with a PROXY protocol v2 header (an L4 load
    /// balancer's: TCP over IPv4 or IPv6, or LOCAL for its own health checks), which must
    /// arrive within `limits.header_read_timeout` and be at most 1 KiB long. Its source address
    /// is the client (`forwarded_header` is read only when that source is itself a trusted
    /// proxy). A connection from a trusted proxy without the header is served as its own client,
    /// its forwarding headers ignored; a PROXY header from any other peer closes the
    /// connection. Needs `trusted_proxies`. Default `false`.
    pub proxy_protocol: bool,
    /// The forwarding header `trusted_proxies` write, and the only one read from them: the other
    /// is ignored, as a proxy passes it through from its client unchanged.
    pub forwarded_header: proxies::ForwardedHeader,
    /// Logging.
    pub log: LogConfig,
    /// Traces (OpenTelemetry over OTLP/HTTP).
    pub telemetry: telemetry::TelemetryConfig,
}

impl Default for GatekeeperConfig {
    fn default() -> Self {
        let base = Config::default();
        Self {
            listen: base.listen,
            tls: None,
            upstream: None,
            upstream_ca_file: None,
            data_dir: base.data_dir,
            internal: InternalConfig::default(),
            auth: base.auth,
            rate_limits: base.rate_limits,
            limits: base.limits,
            cors: base.cors,
            admin: AdminListenerConfig::default(),
            trusted_proxies: Vec::new(),
            proxy_protocol: false,
            forwarded_header: proxies::ForwardedHeader::default(),
            log: base.log,
            telemetry: base.telemetry,
        }
    }
}

impl GatekeeperConfig {
    /// Loads defaults, then `file`, then `SHARDGATE_*` variables (as [`Config::load`]).
    pub fn load(file: Option<&Path>) -> Result<Loaded<Self>, ConfigError> {
        load_layers(file, std::env::vars())
    }

    /// Like [`GatekeeperConfig::load`] but with environment variables taken from `vars`.
    pub fn load_from(file: Option<&Path>, vars: &[(&str, &str)]) -> Result<Loaded<Self>, ConfigError> {
        load_layers(file, vars.iter().map(|(name, value)| ((*name).to_owned(), (*value).to_owned())))
    }
}

/// The `[cors]` section: which browser origins may call the API.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CorsConfig {
    /// Origins allowed to call the API from a browser, e.g. `["https://app.example.com"]`.
    /// Default: none (no CORS headers; browsers refuse cross-origin calls). `["*"]` allows any
    /// origin (credentials are never allowed).
    pub allowed_origins: Vec<String>,
    /// How long browsers may cache a preflight answer. Default 10 minutes.
    #[serde(with = "shardgate_shard_router::db::humantime_serde", default = "default_preflight_max_age")]
    pub max_age: std::time::Duration,
}

impl Default for CorsConfig {
    fn default() -> Self {
        Self { allowed_origins: Vec::new(), max_age: default_preflight_max_age() }
    }
}

fn default_preflight_max_age() -> std::time::Duration {
    std::time::Duration::from_secs(600)
}

/// The `[log]` section.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogConfig {
    /// `tracing` filter, e.g. `info` or `shardgate=debug`. Default `info,sqlx=warn`. `RUST_LOG` wins.
    pub filter: String,
    /// `text` or `json`. Default `text`.
    pub format: LogFormat,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self { filter: "info,sqlx=warn".to_owned(), format: LogFormat::Text }
    }
}

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Environment variables of shardgate that are not configuration keys: a command-line option,
/// the tests' switch that rewrites their committed snapshots (`SHARDGATE_BLESS=1`), which a
/// shell that ran the tests may still export, and the gateway and token of `shardgate admin`,
/// which an operator's shell exports.
const NOT_CONFIG_KEYS: &[&str] = &["SHARDGATE_CONFIG", "SHARDGATE_BLESS", "SHARDGATE_URL", "SHARDGATE_TOKEN"];

/// A configuration as loaded, with the `SHARDGATE_*` environment variables that name no
/// configuration key and were left out.
#[derive(Debug)]
pub struct Loaded<C> {
    /// The configuration.
    pub config: C,
    /// Variables left out, in the order found.
    pub unknown_env: Vec<UnknownVariable>,
}

/// A `SHARDGATE_*` environment variable that names no configuration key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownVariable {
    /// Its name, e.g. `SHARDGATE_LISTN`.
    pub name: String,
    /// The variable of the nearest key, if one is near enough to be meant (`SHARDGATE_LISTEN`).
    pub did_you_mean: Option<String>,
}

/// Logs a warning naming each variable [`Loaded::unknown_env`] holds, and the variable it may
/// have been meant as (call it once logging is set up).
pub fn warn_unknown_env(unknown_env: &[UnknownVariable]) {
    for variable in unknown_env {
        match &variable.did_you_mean {
            Some(meant) => tracing::warn!(
                variable = %variable.name,
                did_you_mean = %meant,
                "ignoring an environment variable that names no configuration key: did you mean {meant}?"
            ),
            None => tracing::warn!(
                variable = %variable.name,
                "ignoring an environment variable that names no configuration key (Kubernetes sets \
                 SHARDGATE_PORT and the like for a Service named shardgate)"
            ),
        }
    }
}

impl Config {
    /// Loads defaults, then `file` (if given), then `SHARDGATE_*` variables from the process
    /// environment.
    pub fn load(file: Option<&Path>) -> Result<Loaded<Self>, ConfigError> {
        load_layers(file, std::env::vars())
    }

    /// Like [`Config::load`] but with environment variables taken from `vars` (for tests).
    pub fn load_from(file: Option<&Path>, vars: &[(&str, &str)]) -> Result<Loaded<Self>, ConfigError> {
        load_layers(file, vars.iter().map(|(name, value)| ((*name).to_owned(), (*value).to_owned())))
    }
}

/// One `SHARDGATE_*` environment variable as a configuration layer:
/// `SHARDGATE_LIMITS__MAX_RECORD_BYTES=20` sets `limits.max_record_bytes`. Errors name it.
#[derive(Debug, Clone)]
struct EnvVar {
    name: String,
    /// The dotted key path.
    key: String,
    value: figment::value::Value,
}

impl EnvVar {
    /// The variable if it is one of ours (`SHARDGATE_` and a key).
    fn parse(name: String, value: &str) -> Option<Self> {
        let key = name.strip_prefix("SHARDGATE_")?.to_ascii_lowercase().replace("__", ".");
        if key.is_empty() || NOT_CONFIG_KEYS.contains(&name.as_str()) {
            return None;
        }
        let value = value.parse().unwrap_or_else(|never| match never {});
        Some(Self { name, key, value })
    }

    fn source(&self) -> String {
        format!("environment variable {}", self.name)
    }
}

impl figment::Provider for EnvVar {
    fn metadata(&self) -> figment::Metadata {
        figment::Metadata::named(self.source())
    }

    fn data(&self) -> Result<figment::value::Map<figment::Profile, figment::value::Dict>, figment::Error> {
        Serialized::default(&self.key, &self.value).data()
    }
}

/// Defaults, then `file`, then the `SHARDGATE_*` variables among `vars`. A variable naming no
/// key of any shardgate configuration is left out and reported rather than refused: platforms
/// set variables of their own under the prefix (Kubernetes: `SHARDGATE_PORT`,
/// `SHARDGATE_SERVICE_HOST`, ... for a Service named `shardgate`). An unknown key in the file, a
/// key of the other configuration (a storage key given to the gatekeeper), or a bad value is an
/// error.
fn load_layers<C: serde::de::DeserializeOwned>(
    file: Option<&Path>,
    vars: impl IntoIterator<Item = (String, String)>,
) -> Result<Loaded<C>, ConfigError> {
    let layers: Vec<EnvVar> = vars.into_iter().filter_map(|(name, value)| EnvVar::parse(name, &value)).collect();
    let for_gatekeeper = unknown_keys::<GatekeeperConfig>(&layers);
    let unknown_env: Vec<UnknownVariable> = unknown_keys::<Config>(&layers)
        .into_iter()
        .filter(|variable| for_gatekeeper.iter().any(|other| other.name == variable.name))
        .collect();
    let mut figment = Figment::new();
    if let Some(file) = file {
        std::fs::metadata(file).map_err(|e| ConfigError::unreadable_file(file, &e))?;
        figment = figment.merge(Toml::file_exact(file));
    }
    for layer in layers.iter().filter(|layer| !unknown_env.iter().any(|unknown| unknown.name == layer.name)) {
        figment = figment.merge(layer.clone());
    }
    figment.extract().map(|config| Loaded { config, unknown_env }).map_err(|error| {
        ConfigError::describe(error, |source| {
            if let Some(layer) = layers.iter().find(|layer| layer.source() == source) {
                return Some(Origin::Variable(layer.name.clone()));
            }
            file.filter(|_| source == TOML_FILE).map(|file| Origin::File(file.to_path_buf()))
        })
    })
}

/// The name figment gives the layer of a TOML file.
const TOML_FILE: &str = "TOML file";

/// The variables among `layers` that name no key of `C`. Each pass leaves out the variables its
/// errors name, until the rest loads (a bad value is left for the real load to report).
fn unknown_keys<C: serde::de::DeserializeOwned>(layers: &[EnvVar]) -> Vec<UnknownVariable> {
    let mut scan = layers.to_vec();
    let mut unknown = Vec::new();
    loop {
        let figment = scan.iter().fold(Figment::new(), |figment, layer| figment.merge(layer.clone()));
        let Err(error) = figment.extract::<C>() else { return unknown };
        let mut left_out = false;
        for error in error {
            let source = error.metadata.as_ref().map(|metadata| metadata.name.to_string());
            let Some(name) = scan.iter().find(|layer| Some(layer.source()) == source).map(|layer| layer.name.clone())
            else {
                continue;
            };
            if let figment::error::Kind::UnknownField(field, expected) = &error.kind {
                let parent = error::parent_of(&error.path, field);
                let did_you_mean = error::nearest(field, expected).map(|near| error::variable_of(&parent, near));
                unknown.push(UnknownVariable { name: name.clone(), did_you_mean });
            }
            scan.retain(|layer| layer.name != name);
            left_out = true;
        }
        if !left_out {
            return unknown;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_callers_cap_exceeds_half_of_the_instances_cap() {
        use shardgate_shard_router::Tier;
        let mut limits = LimitsConfig { max_concurrent_requests: 200, ..LimitsConfig::default() };
        // Standard 256 and premium 512 are above 100; free 32 and anonymous 64 are not.
        assert_eq!(limits.tenant_cap(Tier::Standard), 100);
        assert_eq!(limits.tenant_cap(Tier::Premium), 100);
        assert_eq!(limits.tenant_cap(Tier::Free), 32);
        assert_eq!(limits.anonymous_cap(), 64);
        assert_eq!(
            limits.caps_above_bound(),
            vec![
                ("limits.tenant_concurrent_requests.standard", 256, 100),
                ("limits.tenant_concurrent_requests.premium", 512, 100),
            ]
        );
        limits.max_concurrent_requests = 1;
        assert_eq!(limits.tenant_cap(Tier::Free), 1, "at least one");
        assert!(LimitsConfig::default().caps_above_bound().is_empty(), "the defaults fit");
    }
    use std::io::Write;

    /// The operations guide's production example is a configuration this version takes, key for
    /// key (its files are those of a real host, so only their reading is left to the start-up).
    #[test]
    fn the_operations_guides_production_example_loads() {
        let guide = include_str!("../../../docs/operations.md");
        let section = guide.split("### A production example").nth(1).expect("the guide has the section");
        let example =
            section.split("```toml\n").nth(1).and_then(|rest| rest.split("```").next()).expect("a TOML block");
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(example.as_bytes()).unwrap();
        let config = match Config::load_from(Some(file.path()), &[]) {
            Ok(loaded) => loaded.config,
            Err(e) => panic!("the operations guide's production example does not load: {e}"),
        };
        assert!(config.tls.is_some());
        assert!(config.storage.catalog_url.is_some());
        assert_eq!(config.auth.issuers.len(), 1);
    }

    #[test]
    fn defaults_are_the_embedded_default() {
        let config = Config::load_from(None, &[]).unwrap().config;
        assert_eq!(config.listen.to_string(), "127.0.0.1:8080");
        assert_eq!(config.data_dir, PathBuf::from("./shardgate-data"));
        assert!(config.storage.catalog_url.is_none());
        assert_eq!(config.storage.embedded_shards, 4);
        assert_eq!(config.limits.max_record_bytes, 1024 * 1024);
        assert_eq!(config.cors.max_age, std::time::Duration::from_secs(600), "browsers may cache a preflight");
    }

    #[test]
    fn file_then_environment_with_nested_keys() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        writeln!(file, "listen = \"0.0.0.0:9000\"\n[limits]\nmax_record_bytes = 10\n[storage]\ncatalog_url = \"postgres://u:hunter2@db/cat\"").unwrap();
        let config =
            Config::load_from(Some(file.path()), &[("SHARDGATE_LIMITS__MAX_RECORD_BYTES", "20")]).unwrap().config;
        assert_eq!(config.listen.to_string(), "0.0.0.0:9000");
        assert_eq!(config.limits.max_record_bytes, 20);
        let debug = format!("{config:?}");
        assert!(!debug.contains("hunter2"), "secrets leak into Debug: {debug}");
    }

    #[test]
    fn connection_limits_have_defaults_and_take_durations() {
        use std::time::Duration;
        let limits = Config::load_from(None, &[]).unwrap().config.limits;
        assert_eq!(limits.header_read_timeout, Duration::from_secs(10));
        assert_eq!(limits.keep_alive_idle_timeout, Duration::from_secs(60));
        assert_eq!(limits.max_connections, None, "derived from the open-file limit");
        let limits = Config::load_from(
            None,
            &[
                ("SHARDGATE_LIMITS__HEADER_READ_TIMEOUT", "2s"),
                ("SHARDGATE_LIMITS__KEEP_ALIVE_IDLE_TIMEOUT", "500ms"),
                ("SHARDGATE_LIMITS__MAX_CONNECTIONS", "100"),
            ],
        )
        .unwrap()
        .config
        .limits;
        assert_eq!(limits.header_read_timeout, Duration::from_secs(2));
        assert_eq!(limits.keep_alive_idle_timeout, Duration::from_millis(500));
        assert_eq!(limits.max_connections, Some(100));
    }

    #[test]
    fn tier_quotas_keep_their_defaults_unless_listed_and_refuse_what_is_not_a_quota() {
        use shardgate_shard_router::usage::quotas::{FREE_TIER_QUOTAS, Quotas};
        let defaults = Config::load_from(None, &[]).unwrap().config.quotas.tier_quotas();
        assert_eq!(defaults.free, FREE_TIER_QUOTAS);
        assert_eq!(defaults.free.record_bytes, Some(1_073_741_824));
        assert_eq!((defaults.standard, defaults.premium), (Quotas::UNLIMITED, Quotas::UNLIMITED));

        let mut file = tempfile::NamedTempFile::new().unwrap();
        writeln!(file, "[quotas.tiers.free]\nrecords = 10\n[quotas.tiers.premium]\nblobs = 7").unwrap();
        let loaded = Config::load_from(Some(file.path()), &[("SHARDGATE_QUOTAS__TIERS__STANDARD__BLOB_BYTES", "99")]);
        let tiers = loaded.unwrap().config.quotas.tier_quotas();
        assert_eq!(tiers.free, Quotas { records: Some(10), ..Quotas::UNLIMITED }, "a listed tier has what it sets");
        assert_eq!(tiers.premium, Quotas { blobs: Some(7), ..Quotas::UNLIMITED });
        assert_eq!(tiers.standard, Quotas { blob_bytes: Some(99), ..Quotas::UNLIMITED });

        for (text, named) in [
            ("[quotas.tiers.gold]\nrecords = 1", "gold"),
            ("[quotas.tiers.free]\nrows = 1", "rows"),
            ("[quotas.tiers.free]\nrecords = -1", "quotas.tiers.free.records"),
        ] {
            let mut file = tempfile::NamedTempFile::new().unwrap();
            writeln!(file, "{text}").unwrap();
            let err = Config::load_from(Some(file.path()), &[]).unwrap_err().to_string();
            assert!(err.contains(named), "{text}: {err}");
        }
    }

    #[test]
    fn unknown_keys_are_errors_that_name_the_key() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        writeln!(file, "[storage]\ncatalog_ulr = \"x\"").unwrap();
        let err = Config::load_from(Some(file.path()), &[]).unwrap_err().to_string();
        assert!(err.contains("catalog_ulr"), "{err}");
        let err = Config::load_from(None, &[("SHARDGATE_LISTEN", "x")]).unwrap_err().to_string();
        assert!(err.contains("SHARDGATE_LISTEN"), "a bad value names its variable: {err}");
    }

    #[test]
    fn errors_name_the_file_and_key_as_written_and_suggest_the_nearest_key() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        writeln!(file, "[storage]\nembeded_shards = 2").unwrap();
        let err = Config::load_from(Some(file.path()), &[]).unwrap_err().to_string();
        assert!(err.contains(&format!("configuration file {}", file.path().display())), "the path as given: {err}");
        assert!(err.contains("`storage.embeded_shards`"), "{err}");
        assert!(err.contains("did you mean `storage.embedded_shards`?"), "{err}");
        assert!(!err.contains("default.") && !err.contains("``"), "no profile prefix, no nested backticks: {err}");

        let err = Config::load_from(None, &[("SHARDGATE_LISTEN", "nowhere")]).unwrap_err().to_string();
        assert!(err.contains("environment variable SHARDGATE_LISTEN"), "{err}");
        assert!(!err.contains("default.") && !err.contains("\"LISTEN\""), "{err}");

        let loaded = Config::load_from(None, &[("SHARDGATE_LISTN", "0.0.0.0:9")]).unwrap();
        let expected =
            UnknownVariable { name: "SHARDGATE_LISTN".into(), did_you_mean: Some("SHARDGATE_LISTEN".into()) };
        assert_eq!(loaded.unknown_env, [expected]);
        let loaded = Config::load_from(None, &[("SHARDGATE_STORAGE__EMBEDED_SHARDS", "2")]).unwrap();
        assert_eq!(loaded.unknown_env[0].did_you_mean.as_deref(), Some("SHARDGATE_STORAGE__EMBEDDED_SHARDS"));

        let missing = file.path().with_extension("missing.toml");
        let err = Config::load_from(Some(&missing), &[]).unwrap_err().to_string();
        assert!(err.contains(&missing.display().to_string()) && err.contains("does not exist"), "{err}");
    }

    #[test]
    fn the_tests_bless_switch_is_no_configuration_key() {
        let loaded = Config::load_from(None, &[("SHARDGATE_BLESS", "1")]).expect("serve starts with it set");
        assert!(loaded.unknown_env.is_empty(), "not even a warning: {:?}", loaded.unknown_env);
    }

    #[test]
    fn the_admin_clis_variables_are_no_configuration_keys() {
        let env = [("SHARDGATE_URL", "http://127.0.0.1:8080"), ("SHARDGATE_TOKEN", "a.b.c")];
        let loaded = Config::load_from(None, &env).expect("serve starts with them set");
        assert!(loaded.unknown_env.is_empty(), "not even a warning: {:?}", loaded.unknown_env);
    }

    #[test]
    fn variables_naming_no_key_are_left_out_and_reported() {
        // What Kubernetes injects into every pod of a namespace with a Service named `shardgate`.
        let kubernetes = [
            ("SHARDGATE_PORT", "tcp://10.96.0.12:8080"),
            ("SHARDGATE_PORT_8080_TCP", "tcp://10.96.0.12:8080"),
            ("SHARDGATE_PORT_8080_TCP_ADDR", "10.96.0.12"),
            ("SHARDGATE_SERVICE_HOST", "10.96.0.12"),
            ("SHARDGATE_SERVICE_PORT", "8080"),
        ];
        let mut vars = kubernetes.to_vec();
        vars.extend([
            ("SHARDGATE_LIMITS__MAX_RECORD_BYTES", "20"),
            ("SHARDGATE_STORAGE__EMBEDED_SHARDS", "9"),
            ("SHARDGATE_CONFIG", "/etc/shardgate.toml"),
            ("PATH", "/usr/bin"),
        ]);
        let loaded = Config::load_from(None, &vars).unwrap();
        assert_eq!(loaded.config.limits.max_record_bytes, 20, "known keys still apply");
        assert_eq!(loaded.config.storage.embedded_shards, 4, "a misspelt key changes nothing");
        let mut expected: Vec<String> = kubernetes.iter().map(|(name, _)| (*name).to_owned()).collect();
        expected.push("SHARDGATE_STORAGE__EMBEDED_SHARDS".to_owned());
        let mut reported: Vec<String> = loaded.unknown_env.iter().map(|v| v.name.clone()).collect();
        reported.sort();
        expected.sort();
        assert_eq!(reported, expected, "the command-line option and other variables are not reported");
        // The gatekeeper's configuration loads the same way.
        let gatekeeper: Loaded<GatekeeperConfig> =
            load_layers(None, vars.iter().map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))).unwrap();
        assert!(gatekeeper.unknown_env.iter().any(|v| v.name == "SHARDGATE_PORT"));
        // A key of the other configuration is no stranger: it is refused by the gatekeeper and
        // not reported by the backend.
        let storage = [("SHARDGATE_STORAGE__CATALOG_URL".to_owned(), "postgres://db/cat".to_owned())];
        let err = load_layers::<GatekeeperConfig>(None, storage).unwrap_err().to_string();
        assert!(err.contains("SHARDGATE_STORAGE__CATALOG_URL"), "{err}");
        let upstream = [("SHARDGATE_UPSTREAM".to_owned(), "http://127.0.0.1:9".to_owned())];
        let err = load_layers::<Config>(None, upstream).unwrap_err().to_string();
        assert!(err.contains("SHARDGATE_UPSTREAM"), "{err}");
        // A bad value for a key that exists stays an error, naming the variable.
        let err = Config::load_from(None, &[("SHARDGATE_PORT", "x"), ("SHARDGATE_LIMITS__MAX_RECORD_BYTES", "many")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("SHARDGATE_LIMITS__MAX_RECORD_BYTES"), "{err}");
    }

    #[test]
    fn tenant_caps_are_set_per_tier_and_keep_their_defaults_otherwise() {
        use shardgate_shard_router::Tier;
        let config = Config::load_from(
            None,
            &[
                ("SHARDGATE_LIMITS__TENANT_CONCURRENT_REQUESTS__FREE", "8"),
                ("SHARDGATE_LIMITS__TRANSFER_IDLE_TIMEOUT", "5s"),
                ("SHARDGATE_LIMITS__MAX_INDEXES_PER_COLLECTION__PREMIUM", "64"),
            ],
        )
        .unwrap()
        .config;
        let caps = config.limits.tenant_concurrent_requests;
        assert_eq!(
            (caps.for_tier(Tier::Free), caps.for_tier(Tier::Standard), caps.for_tier(Tier::Premium)),
            (8, 256, 512)
        );
        let indexes = config.limits.max_indexes_per_collection;
        assert_eq!(
            (indexes.for_tier(Tier::Free), indexes.for_tier(Tier::Standard), indexes.for_tier(Tier::Premium)),
            (8, 16, 64)
        );
        assert_eq!(config.limits.transfer_idle_timeout, std::time::Duration::from_secs(5));
        assert_eq!(config.limits.anonymous_concurrent_requests, 64);
        let mut file = tempfile::NamedTempFile::new().unwrap();
        writeln!(file, "[limits.tenant_concurrent_requests]\ngold = 8").unwrap();
        let err = Config::load_from(Some(file.path()), &[]).unwrap_err().to_string();
        assert!(err.contains("gold"), "an unknown tier in the file is an error: {err}");
    }

    #[test]
    fn listener_tls_and_redis_ca_files_load_from_the_file_and_the_environment() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        writeln!(
            file,
            "[valet]\nlisten = \"127.0.0.1:9001\"\ntls = {{ cert_file = \"/v.crt\", key_file = \"/v.key\" }}\n\
             [cache]\nredis_url = \"rediss://r:6380\"\nredis_ca_file = \"/ca.crt\""
        )
        .unwrap();
        let vars = [("SHARDGATE_TLS__CERT_FILE", "/api.crt"), ("SHARDGATE_TLS__KEY_FILE", "/api.key")];
        let loaded = Config::load_from(Some(file.path()), &vars).unwrap();
        assert!(loaded.unknown_env.is_empty(), "{:?}", loaded.unknown_env);
        let config = loaded.config;
        assert_eq!(config.tls.unwrap().cert_file, PathBuf::from("/api.crt"));
        assert_eq!(config.valet.tls.unwrap().key_file, PathBuf::from("/v.key"));
        assert_eq!(config.cache.redis_ca_file, Some(PathBuf::from("/ca.crt")));
        let defaults = Config::load_from(None, &[]).unwrap().config;
        assert!(defaults.tls.is_none() && defaults.valet.tls.is_none(), "plain HTTP by default");

        let mut file = tempfile::NamedTempFile::new().unwrap();
        writeln!(file, "tls = {{ cert_file = \"/a.crt\", key_file = \"/a.key\", ciphers = \"weak\" }}").unwrap();
        let err = Config::load_from(Some(file.path()), &[]).unwrap_err().to_string();
        assert!(err.contains("ciphers"), "an unknown key of tls is an error: {err}");
        let gatekeeper = [("SHARDGATE_UPSTREAM_CA_FILE", "/backend-ca.crt")];
        let gatekeeper = load_layers::<GatekeeperConfig>(
            None,
            gatekeeper.iter().map(|(name, value)| ((*name).to_owned(), (*value).to_owned())),
        )
        .unwrap()
        .config;
        assert_eq!(gatekeeper.upstream_ca_file, Some(PathBuf::from("/backend-ca.crt")));
    }

    #[test]
    fn the_environment_takes_a_list_or_comma_separated_networks_and_errors_name_the_variable() {
        use super::proxies::{Cidr, ForwardedHeader};
        for value in ["10.0.0.0/8,fd00::/8", r#"["10.0.0.0/8", "fd00::/8"]"#] {
            let vars = [("SHARDGATE_TRUSTED_PROXIES", value), ("SHARDGATE_FORWARDED_HEADER", "forwarded")];
            let config = Config::load_from(None, &vars).unwrap().config;
            let shown: Vec<String> = config.trusted_proxies.iter().map(Cidr::to_string).collect();
            assert_eq!(shown, ["10.0.0.0/8", "fd00::/8"], "{value}");
            assert_eq!(config.forwarded_header, ForwardedHeader::Forwarded);
            let gatekeeper = GatekeeperConfig::load_from(None, &vars).unwrap().config;
            assert_eq!(gatekeeper.trusted_proxies, config.trusted_proxies);
        }
        let single = Config::load_from(None, &[("SHARDGATE_TRUSTED_PROXIES", "127.0.0.1")]).unwrap().config;
        assert_eq!(single.trusted_proxies, [Cidr::parse("127.0.0.1/32").unwrap()]);
        let defaults = Config::load_from(None, &[]).unwrap().config;
        assert!(defaults.trusted_proxies.is_empty() && !defaults.proxy_protocol);
        assert_eq!(defaults.forwarded_header, ForwardedHeader::XForwardedFor);
        let refused = Config::load_from(None, &[("SHARDGATE_TRUSTED_PROXIES", "10.0.0.1/8")]).unwrap_err().to_string();
        assert!(refused.contains("SHARDGATE_TRUSTED_PROXIES") && refused.contains("10.0.0.0/8"), "{refused}");
    }
}
