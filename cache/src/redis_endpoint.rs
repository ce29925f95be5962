//! [`RedisEndpoint`]: a Redis URL together with the TLS material a `rediss://` connection needs,
//! checked when the configuration is read, so that a CA file that is missing or not PEM stops
//! start-up with a message naming the key, instead of surfacing later as a cache that never
//! connects.
//!
//! `rediss://` always verifies the server's certificate and host name (rustls on ring). Without
//! a CA file the roots are the Mozilla set built in (`webpki-roots`): a managed Redis with a
//! public certificate works as is; a private CA is named by its file. A client certificate and
//! key (both or neither) make the connection mutual TLS.
//!
//! `redis+sentinel://[user:password@]host1:port1,host2:port2/<master name>[/<db>]` (or
//! `rediss+sentinel://`, TLS to the sentinels and the master alike) names a Sentinel deployment:
//! the master is whatever the sentinels say it is (`SENTINEL get-master-addr-by-name`), asked
//! again whenever the connection to it fails or it no longer says it is a master
//! (`crate::l2`). The user and password are the master's; the sentinels are asked without.
//!
//! `redis+cluster://[user:password@]host1:port1,host2:port2` (or `rediss+cluster://`) names a
//! Redis Cluster by some of its nodes (seeds): the client learns the rest, and the slots, from
//! them, and follows the cluster's failovers and resharding. A cluster has one database: no path.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use secrecy::{ExposeSecret, SecretString};
use shardgate_shard_router::storage::hosts::{UrlParts, url_parts};
use shardgate_shard_router::storage::password_file::PasswordFile;

/// Makes rustls's ring provider the process's default (once; later calls do nothing): rustls
/// must not pick a provider by the features other crates happen to enable.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The TLS files of one Redis URL setting, as configured (paths, not yet read).
#[derive(Debug, Clone, Copy, Default)]
pub struct RedisTlsFiles<'a> {
    /// PEM certificates of the CA(s) that sign the server's certificate.
    pub ca_file: Option<&'a Path>,
    /// PEM certificate chain of this client (mutual TLS).
    pub client_cert_file: Option<&'a Path>,
    /// PEM private key of this client (mutual TLS).
    pub client_key_file: Option<&'a Path>,
}

/// Configuration keys of one Redis URL setting, for error messages (`cache` or `rate_limits`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Section(pub &'static str);

/// The sentinels of a `redis+sentinel://` URL, and how to reach the master they name.
#[derive(Debug, Clone)]
struct Sentinels {
    /// `host:port` of each sentinel, in the order given.
    nodes: Vec<String>,
    /// The master's name, as the sentinels monitor it.
    master: String,
    /// The master's URL with `{addr}` in place of its host and port: scheme, user and password,
    /// database.
    master_url: SecretString,
}

/// The seed nodes of a `redis+cluster://` URL, and how to reach each.
#[derive(Debug, Clone)]
struct ClusterSeeds {
    /// `host:port` of each seed, in the order given.
    nodes: Vec<String>,
    /// A node's URL with `{addr}` in place of its host and port: scheme, user and password.
    node_url: SecretString,
}

/// A Redis URL and its TLS material, read and checked: once one exists, a client can be built.
#[derive(Clone)]
pub struct RedisEndpoint {
    url: SecretString,
    /// Set for a `redis+sentinel://` URL: the master is found through them.
    sentinels: Option<Sentinels>,
    /// Set for a `redis+cluster://` URL.
    cluster: Option<ClusterSeeds>,
    section: &'static str,
    tls: bool,
    certificates: Option<redis::TlsCertificates>,
    /// Where the password is read from (`<section>.redis_password_file`), if it is.
    password_file: Option<Arc<PasswordFile>>,
}

impl std::fmt::Debug for RedisEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisEndpoint").field("tls", &self.is_tls()).finish_non_exhaustive()
    }
}

/// A Redis setting that cannot be used; the message names the key and says what to fix. The
/// URL itself (which may hold a password) is never part of it.
#[derive(Debug, thiserror::Error)]
pub enum RedisConfigError {
    /// The URL does not parse.
    #[error("{section}.redis_url is not a Redis URL ({source}); use redis://host:port or rediss://host:port")]
    Url {
        /// The section.
        section: &'static str,
        /// Why.
        #[source]
        source: redis::RedisError,
    },
    /// A TLS file is set for a plain `redis://` URL, where it would silently do nothing.
    #[error(
        "{section}.{key} is set but {section}.redis_url is not rediss://: use a rediss:// URL for TLS, or remove {section}.{key}"
    )]
    TlsFileWithoutTls {
        /// The section.
        section: &'static str,
        /// The file's key.
        key: &'static str,
    },
    /// A TLS file is set without a URL of its section (the cache's files go with the cache's URL).
    #[error(
        "{section}.{key} is set without {section}.redis_url: set {section}.redis_url = \"rediss://...\", or remove {section}.{key}"
    )]
    TlsFileWithoutUrl {
        /// The section.
        section: &'static str,
        /// The file's key.
        key: &'static str,
    },
    /// A file cannot be read.
    #[error("{section}.{key}: cannot read {path}: {reason}")]
    Unreadable {
        /// The section.
        section: &'static str,
        /// The file's key.
        key: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        reason: std::io::Error,
    },
    /// A file is not what its key needs.
    #[error("{section}.{key}: {path} {problem}")]
    NotPem {
        /// The section.
        section: &'static str,
        /// The file's key.
        key: &'static str,
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// A `rediss://` URL asks to skip certificate verification (`#insecure`).
    #[error(
        "{section}.redis_url asks for #insecure: certificate verification cannot be turned off; name the server's CA in {section}.redis_ca_file instead"
    )]
    Insecure {
        /// The section.
        section: &'static str,
    },
    /// A `redis+sentinel://` URL that does not say which sentinels or which master.
    #[error(
        "{section}.redis_url: {problem}; a Sentinel URL is redis+sentinel://[user:password@]host1:port1,host2:port2/<master name>[/<db>]"
    )]
    Sentinel {
        /// The section.
        section: &'static str,
        /// What is wrong.
        problem: &'static str,
    },
    /// A `redis+cluster://` URL that does not name its seed nodes rightly.
    #[error("{section}.redis_url: {problem}; a cluster URL is redis+cluster://[user:password@]host1:port1,host2:port2")]
    Cluster {
        /// The section.
        section: &'static str,
        /// What is wrong.
        problem: &'static str,
    },
    /// Only one of the client certificate and key is set.
    #[error(
        "{section}.redis_client_cert_file and {section}.redis_client_key_file go together (mutual TLS): set both or neither"
    )]
    HalfClientPair {
        /// The section.
        section: &'static str,
    },
}

impl RedisTlsFiles<'_> {
    /// The key of the first file set, if any.
    pub fn first_set(&self) -> Option<&'static str> {
        [
            ("redis_ca_file", self.ca_file),
            ("redis_client_cert_file", self.client_cert_file),
            ("redis_client_key_file", self.client_key_file),
        ]
        .into_iter()
        .find_map(|(key, file)| file.map(|_| key))
    }
}

impl RedisEndpoint {
    /// Checks `url` and reads `files` (keys of `section`): a CA file must hold at least one PEM
    /// certificate, a client certificate file a PEM chain and a key file a PEM private key.
    pub fn parse(url: &SecretString, files: RedisTlsFiles<'_>, section: Section) -> Result<Self, RedisConfigError> {
        let section = section.0;
        let sentinels = parse_sentinels(url.expose_secret(), section)?;
        let cluster = parse_cluster(url.expose_secret(), section)?;
        // A Sentinel URL is checked as its master's URL would be, with its first sentinel's
        // address standing in for the master's; a cluster's as its first seed's.
        let checked = match (&sentinels, &cluster) {
            (Some(sentinels), _) => sentinels.master_url.expose_secret().replace(ADDR, &sentinels.nodes[0]),
            (None, Some(cluster)) => cluster.node_url.expose_secret().replace(ADDR, &cluster.nodes[0]),
            (None, None) => url.expose_secret().to_owned(),
        };
        let parsed = redis::IntoConnectionInfo::into_connection_info(checked.as_str())
            .map_err(|source| RedisConfigError::Url { section, source })?;
        let tls = match parsed.addr {
            redis::ConnectionAddr::TcpTls { insecure: true, .. } => return Err(RedisConfigError::Insecure { section }),
            redis::ConnectionAddr::TcpTls { .. } => true,
            _ => false,
        };
        if !tls && let Some(key) = files.first_set() {
            return Err(RedisConfigError::TlsFileWithoutTls { section, key });
        }
        let root_cert = files.ca_file.map(|path| read_certificates(section, "redis_ca_file", path)).transpose()?;
        let client_tls = match (files.client_cert_file, files.client_key_file) {
            (None, None) => None,
            (Some(cert), Some(key)) => Some(redis::ClientTlsConfig {
                client_cert: read_certificates(section, "redis_client_cert_file", cert)?,
                client_key: read_key(section, "redis_client_key_file", key)?,
            }),
            _ => return Err(RedisConfigError::HalfClientPair { section }),
        };
        let custom = root_cert.is_some() || client_tls.is_some();
        let certificates = custom.then_some(redis::TlsCertificates { client_tls, root_cert });
        Ok(Self { url: url.clone(), sentinels, cluster, section, tls, certificates, password_file: None })
    }

    /// Whether it names a Redis Cluster (`redis+cluster://`).
    pub fn is_cluster(&self) -> bool {
        self.cluster.is_some()
    }

    /// A cluster client for its seeds (no connection yet), with the password file's content now;
    /// each connection it makes waits `timeout` to connect and for each answer. `None` unless
    /// it names a cluster.
    pub(crate) fn cluster_client(
        &self,
        timeout: Duration,
    ) -> Option<Result<redis::cluster::ClusterClient, RedisConfigError>> {
        let cluster = self.cluster.as_ref()?;
        install_crypto_provider();
        let build = || {
            let node_url = self.with_password_file_content(&cluster.node_url)?;
            let urls: Vec<String> =
                cluster.nodes.iter().map(|node| node_url.expose_secret().replace(ADDR, node)).collect();
            let mut builder = redis::cluster::ClusterClientBuilder::new(urls)
                .connection_timeout(timeout.max(Duration::from_millis(500)))
                .response_timeout(timeout)
                // One retry: the client learns a new slot map when an operation fails, and
                // without a retry it would never use a promoted replica.
                .retries(1);
            if let Some(certificates) = &self.certificates {
                builder = builder.certs(certificates.clone());
            }
            builder.build().map_err(|source| RedisConfigError::Url { section: self.section, source })
        };
        Some(build())
    }

    /// A client for seed number `turn` (modulo their number) of a cluster, for a subscription:
    /// a cluster's nodes all see what is published on any of them. `None` unless it names a
    /// cluster.
    pub(crate) fn seed_client(&self, turn: usize) -> Option<Result<redis::Client, RedisConfigError>> {
        let cluster = self.cluster.as_ref()?;
        let node = &cluster.nodes[turn % cluster.nodes.len()];
        Some(self.client_with_password(&SecretString::from(cluster.node_url.expose_secret().replace(ADDR, node))))
    }

    /// Whether the master is found through sentinels (`redis+sentinel://`).
    pub fn is_sentinel(&self) -> bool {
        self.sentinels.is_some()
    }

    /// Asks the sentinels, in the order given and each within `timeout`, where the master is
    /// now: `host:port` from the first that knows. `Err` says why none answered.
    pub(crate) async fn find_master(&self, timeout: Duration) -> Result<String, String> {
        let Some(sentinels) = &self.sentinels else { return Err("no sentinels".to_owned()) };
        let scheme = if self.tls { "rediss" } else { "redis" };
        let mut failures = Vec::new();
        for node in &sentinels.nodes {
            let ask = async {
                let client =
                    self.client_at(&SecretString::from(format!("{scheme}://{node}"))).map_err(|e| e.to_string())?;
                let mut conn = client.get_multiplexed_async_connection().await.map_err(|e| e.to_string())?;
                let addr: Option<(String, u16)> = redis::cmd("SENTINEL")
                    .arg("get-master-addr-by-name")
                    .arg(&sentinels.master)
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| e.to_string())?;
                addr.ok_or_else(|| format!("it knows no master named {}", sentinels.master))
            };
            match tokio::time::timeout(timeout, ask).await {
                Ok(Ok((host, port))) if host.contains(':') => return Ok(format!("[{host}]:{port}")),
                Ok(Ok((host, port))) => return Ok(format!("{host}:{port}")),
                Ok(Err(why)) => failures.push(format!("sentinel {node}: {why}")),
                Err(_) => failures.push(format!("sentinel {node}: no answer within {timeout:?}")),
            }
        }
        Err(failures.join("; "))
    }

    /// A client for the master at `addr` (`host:port`, from [`RedisEndpoint::find_master`]),
    /// with its password file's content now.
    pub(crate) fn master_client(&self, addr: &str) -> Result<redis::Client, RedisConfigError> {
        let Some(sentinels) = &self.sentinels else { return self.client() };
        self.client_with_password(&SecretString::from(sentinels.master_url.expose_secret().replace(ADDR, addr)))
    }

    /// Whether the connection is TLS (`rediss://`).
    pub fn is_tls(&self) -> bool {
        self.tls
    }

    /// This endpoint, its password read from `path` (`<section>.redis_password_file`) in place
    /// of the URL's: the file's content, a trailing line break left out, when a client is made.
    /// A file that cannot be read now stops the start ([`RedisConfigError::Unreadable`]).
    pub fn with_password_file(self, path: Option<PathBuf>) -> Result<Self, RedisConfigError> {
        let Some(path) = path else { return Ok(self) };
        let file = PasswordFile::new(path.clone());
        file.apply(&self.url).map_err(|e| RedisConfigError::Unreadable {
            section: self.section,
            key: "redis_password_file",
            path,
            reason: std::io::Error::other(e.to_string()),
        })?;
        Ok(Self { password_file: Some(Arc::new(file)), ..self })
    }

    /// Whether its password file holds another password than the client last made used (never,
    /// without a password file).
    pub(crate) fn password_changed(&self) -> bool {
        self.password_file.as_ref().is_some_and(|file| file.changed())
    }

    /// A client for the endpoint (no connection yet), with its password file's content now.
    pub(crate) fn client(&self) -> Result<redis::Client, RedisConfigError> {
        self.client_with_password(&self.url)
    }

    /// A client for `url` with the password file's content in it, if there is a file.
    fn client_with_password(&self, url: &SecretString) -> Result<redis::Client, RedisConfigError> {
        self.client_at(&self.with_password_file_content(url)?)
    }

    /// `url` with the password file's content in it, if there is a file.
    fn with_password_file_content(&self, url: &SecretString) -> Result<SecretString, RedisConfigError> {
        match &self.password_file {
            Some(file) => file.apply(url).map_err(|e| RedisConfigError::Unreadable {
                section: self.section,
                key: "redis_password_file",
                path: file.path().to_owned(),
                reason: std::io::Error::other(e.to_string()),
            }),
            None => Ok(url.clone()),
        }
    }

    /// A client for `url` as it is, with the endpoint's TLS material.
    fn client_at(&self, url: &SecretString) -> Result<redis::Client, RedisConfigError> {
        install_crypto_provider();
        let client = match &self.certificates {
            Some(certificates) => redis::Client::build_with_tls(url.expose_secret(), certificates.clone()),
            None => redis::Client::open(url.expose_secret()),
        };
        client.map_err(|source| RedisConfigError::Url { section: self.section, source })
    }
}

/// What stands for the master's `host:port` in [`Sentinels::master_url`].
const ADDR: &str = "{addr}";

/// The sentinels of `raw` if it is a `redis+sentinel://` or `rediss+sentinel://` URL.
fn parse_sentinels(raw: &str, section: &'static str) -> Result<Option<Sentinels>, RedisConfigError> {
    let Some(UrlParts { scheme, userinfo, hosts, tail }) = url_parts(raw) else { return Ok(None) };
    let master_scheme = match scheme {
        "redis+sentinel" => "redis",
        "rediss+sentinel" => "rediss",
        _ => return Ok(None),
    };
    let refuse = |problem| RedisConfigError::Sentinel { section, problem };
    if tail.contains(['?', '#']) {
        return Err(refuse("it takes no parameters"));
    }
    let path = tail.strip_prefix('/').ok_or_else(|| refuse("it names no master"))?;
    let nodes: Vec<String> = hosts.split(',').map(str::to_owned).collect();
    if nodes.iter().any(String::is_empty) {
        return Err(refuse("its list of sentinels is empty or has an empty entry"));
    }
    let (master, db) = path.split_once('/').unwrap_or((path, ""));
    if master.is_empty() {
        return Err(refuse("it names no master"));
    }
    if !db.is_empty() && db.parse::<u32>().is_err() {
        return Err(refuse("the database after the master's name is not a number"));
    }
    let db = if db.is_empty() { String::new() } else { format!("/{db}") };
    let master_url = SecretString::from(format!("{master_scheme}://{userinfo}{ADDR}{db}"));
    Ok(Some(Sentinels { nodes, master: master.to_owned(), master_url }))
}

/// The seeds of `raw` if it is a `redis+cluster://` or `rediss+cluster://` URL.
fn parse_cluster(raw: &str, section: &'static str) -> Result<Option<ClusterSeeds>, RedisConfigError> {
    let Some(UrlParts { scheme, userinfo, hosts, tail }) = url_parts(raw) else { return Ok(None) };
    let node_scheme = match scheme {
        "redis+cluster" => "redis",
        "rediss+cluster" => "rediss",
        _ => return Ok(None),
    };
    let refuse = |problem| RedisConfigError::Cluster { section, problem };
    if !tail.is_empty() && tail != "/" {
        return Err(refuse("it takes no path or parameters (a cluster has one database)"));
    }
    let nodes: Vec<String> = hosts.split(',').map(str::to_owned).collect();
    if nodes.iter().any(String::is_empty) {
        return Err(refuse("its list of nodes is empty or has an empty entry"));
    }
    Ok(Some(ClusterSeeds { nodes, node_url: SecretString::from(format!("{node_scheme}://{userinfo}{ADDR}")) }))
}

fn read(section: &'static str, key: &'static str, path: &Path) -> Result<Vec<u8>, RedisConfigError> {
    std::fs::read(path).map_err(|reason| RedisConfigError::Unreadable { section, key, path: path.to_owned(), reason })
}

/// The file's bytes, if it holds PEM certificates and nothing unreadable.
fn read_certificates(section: &'static str, key: &'static str, path: &Path) -> Result<Vec<u8>, RedisConfigError> {
    let bytes = read(section, key, path)?;
    let not_pem = |problem: String| RedisConfigError::NotPem { section, key, path: path.to_owned(), problem };
    let certificates = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| not_pem(format!("is not valid PEM ({e})")))?;
    if certificates.is_empty() {
        return Err(not_pem("holds no PEM certificate (-----BEGIN CERTIFICATE-----)".to_owned()));
    }
    Ok(bytes)
}

/// The file's bytes, if it holds a PEM private key.
fn read_key(section: &'static str, key: &'static str, path: &Path) -> Result<Vec<u8>, RedisConfigError> {
    let bytes = read(section, key, path)?;
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| RedisConfigError::NotPem {
        section,
        key,
        path: path.to_owned(),
        problem: format!("holds no PEM private key ({e})"),
    })?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CACHE: Section = Section("cache");

    fn url(raw: &str) -> SecretString {
        SecretString::from(raw.to_owned())
    }

    /// Why `raw` with `files` is refused, for `section`.
    fn refusal(raw: &str, files: RedisTlsFiles<'_>, section: Section) -> String {
        match RedisEndpoint::parse(&url(raw), files, section) {
            Ok(_) => panic!("the endpoint is accepted"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_plain_url_needs_no_files_and_a_rediss_url_alone_uses_the_built_in_roots() {
        let plain = RedisEndpoint::parse(&url("redis://127.0.0.1:6379"), RedisTlsFiles::default(), CACHE).unwrap();
        assert!(!plain.is_tls());
        let tls =
            RedisEndpoint::parse(&url("rediss://redis.example.com:6380"), RedisTlsFiles::default(), CACHE).unwrap();
        assert!(tls.is_tls() && tls.certificates.is_none());
        tls.client().expect("a TLS client builds without a CA file");
    }

    #[test]
    fn a_ca_file_that_is_missing_or_not_pem_names_its_key() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.crt");
        let files = RedisTlsFiles { ca_file: Some(&missing), ..Default::default() };
        let error = refusal("rediss://localhost:6380", files, CACHE);
        assert!(error.starts_with("cache.redis_ca_file: cannot read") && error.contains("missing.crt"), "{error}");

        let garbage = dir.path().join("garbage.crt");
        std::fs::write(&garbage, "not a certificate").unwrap();
        let files = RedisTlsFiles { ca_file: Some(&garbage), ..Default::default() };
        let error = refusal("rediss://localhost:6380", files, Section("rate_limits"));
        assert!(error.contains("rate_limits.redis_ca_file") && error.contains("holds no PEM certificate"), "{error}");
    }

    #[test]
    fn tls_files_on_a_plain_url_and_half_a_client_pair_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.crt");
        let files = RedisTlsFiles { ca_file: Some(&ca), ..Default::default() };
        let error = refusal("redis://localhost:6379", files, CACHE);
        assert!(error.contains("is not rediss://"), "{error}");
        let files = RedisTlsFiles { client_key_file: Some(&ca), ..Default::default() };
        let error = refusal("rediss://localhost:6380", files, CACHE);
        assert!(error.contains("set both or neither"), "{error}");
        let error = refusal("rediss://localhost:6380/#insecure", RedisTlsFiles::default(), CACHE);
        assert!(error.contains("cannot be turned off"), "{error}");
    }

    #[test]
    fn a_sentinel_url_names_its_sentinels_and_master_and_is_checked() {
        let endpoint = RedisEndpoint::parse(
            &url("redis+sentinel://:pw@10.0.0.1:26379,s2:26380/main/2"),
            RedisTlsFiles::default(),
            CACHE,
        )
        .unwrap();
        assert!(endpoint.is_sentinel() && !endpoint.is_tls());
        let sentinels = endpoint.sentinels.as_ref().unwrap();
        assert_eq!(sentinels.nodes, ["10.0.0.1:26379", "s2:26380"]);
        assert_eq!(sentinels.master, "main");
        let master = endpoint.master_client("10.0.0.9:6380").unwrap();
        assert_eq!(master.get_connection_info().addr.to_string(), "10.0.0.9:6380");
        assert_eq!(master.get_connection_info().redis.db, 2);
        assert_eq!(master.get_connection_info().redis.password.as_deref(), Some("pw"));
        let tls =
            RedisEndpoint::parse(&url("rediss+sentinel://s1:26379/main"), RedisTlsFiles::default(), CACHE).unwrap();
        assert!(tls.is_tls() && tls.is_sentinel());
        for (raw, problem) in [
            ("redis+sentinel://s1:26379", "names no master"),
            ("redis+sentinel://s1:26379/", "names no master"),
            ("redis+sentinel://s1,,s2/main", "empty entry"),
            ("redis+sentinel:///main", "empty entry"),
            ("redis+sentinel://s1/main/x", "not a number"),
            ("redis+sentinel://s1/main?timeout=1", "takes no parameters"),
            ("rediss+sentinel://s1/main#insecure", "takes no parameters"),
        ] {
            let error = refusal(raw, RedisTlsFiles::default(), CACHE);
            assert!(error.contains(problem) && error.contains("redis+sentinel://[user:password@]"), "{raw}: {error}");
        }
    }

    #[test]
    fn a_cluster_url_names_its_seeds_and_is_checked() {
        let endpoint =
            RedisEndpoint::parse(&url("redis+cluster://:pw@10.0.0.1:7000,n2:7001/"), RedisTlsFiles::default(), CACHE)
                .unwrap();
        assert!(endpoint.is_cluster() && !endpoint.is_sentinel() && !endpoint.is_tls());
        assert!(endpoint.cluster_client(Duration::from_secs(1)).unwrap().is_ok());
        let second = endpoint.seed_client(3).unwrap().unwrap();
        assert_eq!(second.get_connection_info().addr.to_string(), "n2:7001");
        assert_eq!(second.get_connection_info().redis.password.as_deref(), Some("pw"));
        let tls = RedisEndpoint::parse(&url("rediss+cluster://n1:7000"), RedisTlsFiles::default(), CACHE).unwrap();
        assert!(tls.is_tls() && tls.is_cluster());
        let plain = RedisEndpoint::parse(&url("redis://n1:6379"), RedisTlsFiles::default(), CACHE).unwrap();
        assert!(plain.cluster_client(Duration::from_secs(1)).is_none() && plain.seed_client(0).is_none());
        for (raw, problem) in [
            ("redis+cluster://n1,,n2", "empty entry"),
            ("redis+cluster:///", "empty entry"),
            ("redis+cluster://n1:7000/2", "no path or parameters"),
            ("redis+cluster://n1:7000?timeout=1", "no path or parameters"),
        ] {
            let error = refusal(raw, RedisTlsFiles::default(), CACHE);
            assert!(error.contains(problem) && error.contains("redis+cluster://[user:password@]"), "{raw}: {error}");
        }
    }

    #[test]
    fn a_bad_url_does_not_print_its_password() {
        let error = refusal("nonsense://user:hunter2@x", RedisTlsFiles::default(), CACHE);
        assert!(!error.contains("hunter2"), "{error}");
        assert!(error.starts_with("cache.redis_url is not a Redis URL"), "{error}");
    }
}
