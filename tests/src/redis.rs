//! [`RedisServer`]: a `redis-server` process of a test's own, which the test may pause, kill and
//! restart to play an outage; plain, or TLS only ([`RedisServer::start_tls`]) with a certificate
//! from a [`TestCa`](crate::TestCa); a replica of another ([`RedisServer::start_replica_of`]);
//! [`Sentinels`] that watch a master and fail it over; and a [`RedisCluster`] of three masters
//! with a replica each.

use std::path::PathBuf;
use std::time::Duration;

use crate::TestCa;

/// A Redis server of a test's own, on a free port, so the test can stop, pause and restart it.
#[derive(Debug)]
pub struct RedisServer {
    /// Its port (with TLS: its TLS port, the only one it listens on).
    pub port: u16,
    tls: Option<RedisTls>,
    child: Option<std::process::Child>,
    /// Arguments after the common ones (`--replicaof`).
    extra: Vec<String>,
    /// Its working directory: a replica writes the copy it receives there (`dump.rdb`), which a
    /// server started in the same directory would load. Emptied before every start.
    dir: tempfile::TempDir,
}

/// The files of a TLS-only Redis server.
#[derive(Debug, Clone)]
struct RedisTls {
    cert_file: PathBuf,
    key_file: PathBuf,
    ca_file: PathBuf,
    /// Whether clients must present a certificate `ca_file` signs (mutual TLS).
    client_certificates: bool,
}

impl RedisServer {
    /// Starts `redis-server` on a free port (no persistence) and waits until it answers.
    pub async fn start() -> Self {
        let port = crate::free_port();
        let mut server = Self { port, tls: None, child: None, extra: Vec::new(), dir: work_dir() };
        server.launch().await;
        server
    }

    /// Starts `redis-server` speaking TLS only (`--port 0 --tls-port <free>`), with a
    /// certificate for `localhost` and `127.0.0.1` issued by `ca`; clients need no certificate.
    pub async fn start_tls(ca: &TestCa) -> Self {
        Self::start_tls_with(ca, false).await
    }

    /// [`RedisServer::start_tls`], refusing clients without a certificate `ca` signs.
    pub async fn start_tls_requiring_client_certificates(ca: &TestCa) -> Self {
        Self::start_tls_with(ca, true).await
    }

    async fn start_tls_with(ca: &TestCa, client_certificates: bool) -> Self {
        let port = crate::free_port();
        let issued = ca.issue(&format!("redis-{port}"), &["localhost", "127.0.0.1"]);
        let tls = RedisTls {
            cert_file: issued.cert_path,
            key_file: issued.key_path,
            ca_file: ca.cert_path.clone(),
            client_certificates,
        };
        let mut server = Self { port, tls: Some(tls), child: None, extra: Vec::new(), dir: work_dir() };
        server.launch().await;
        server
    }

    /// A plain server replicating `master` (`--replicaof`), on a free port.
    pub async fn start_replica_of(master: &RedisServer) -> Self {
        let port = crate::free_port();
        let extra = vec!["--replicaof".to_owned(), "127.0.0.1".to_owned(), master.port.to_string()];
        let mut server = Self { port, tls: None, child: None, extra, dir: work_dir() };
        server.launch().await;
        server
    }

    /// `redis://127.0.0.1:<port>`, or `rediss://localhost:<port>` with TLS.
    pub fn url(&self) -> String {
        match self.tls {
            None => format!("redis://127.0.0.1:{}", self.port),
            Some(_) => format!("rediss://localhost:{}", self.port),
        }
    }

    /// Runs `redis-cli` against the server (over TLS, trusting its CA, when it speaks TLS) and
    /// returns what it printed.
    pub fn cli(&self, args: &[&str]) -> String {
        let mut command = std::process::Command::new("redis-cli");
        command.args(["-h", "127.0.0.1", "-p", &self.port.to_string()]);
        if let Some(tls) = &self.tls {
            command.arg("--tls").arg("--cacert").arg(&tls.ca_file);
            if tls.client_certificates {
                command.arg("--cert").arg(&tls.cert_file).arg("--key").arg(&tls.key_file);
            }
        }
        let output = command.args(args).output().expect("redis-cli is installed");
        assert!(output.status.success(), "redis-cli {args:?}: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    async fn launch(&mut self) {
        let port = self.port.to_string();
        // A fresh server holds nothing: no copy a replica received before is loaded.
        let _ = std::fs::remove_file(self.dir.path().join("dump.rdb"));
        let mut command = std::process::Command::new("redis-server");
        command.args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]).arg("--dir").arg(self.dir.path());
        match &self.tls {
            None => {
                command.args(["--port", &port]);
            }
            Some(tls) => {
                command
                    .args(["--port", "0", "--tls-port", &port])
                    .args(["--tls-auth-clients", if tls.client_certificates { "yes" } else { "no" }])
                    .arg("--tls-cert-file")
                    .arg(&tls.cert_file)
                    .arg("--tls-key-file")
                    .arg(&tls.key_file)
                    .arg("--tls-ca-cert-file")
                    .arg(&tls.ca_file);
            }
        }
        command.args(&self.extra);
        let child = command.stdout(std::process::Stdio::null()).spawn().expect("redis-server is installed");
        self.child = Some(child);
        for _ in 0..100 {
            if tokio::net::TcpStream::connect(("127.0.0.1", self.port)).await.is_ok() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("redis-server did not start on port {}", self.port);
    }

    fn signal(&self, signal: &str) {
        if let Some(child) = &self.child {
            let status = std::process::Command::new("kill").args([signal, &child.id().to_string()]).status().unwrap();
            assert!(status.success(), "kill {signal} failed");
        }
    }

    /// Freezes the server (SIGSTOP): connections stay open, nothing answers, data is kept.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Thaws a paused server (SIGCONT), with its data.
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    /// Kills the server (its data is gone).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts a fresh server on the same port.
    pub async fn restart(&mut self) {
        self.stop();
        self.launch().await;
    }
}

/// A new working directory for a server.
fn work_dir() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("sg-redis-").tempdir().expect("temp dir")
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.resume();
        self.stop();
    }
}

/// Redis Sentinels of a test's own (`redis-server --sentinel`, each on a free port with its own
/// configuration file), watching one master under the name [`Sentinels::MASTER`]. They agree
/// that it is down after a second without an answer (two of three), and promote a replica.
#[derive(Debug)]
pub struct Sentinels {
    /// Their ports.
    pub ports: Vec<u16>,
    children: Vec<std::process::Child>,
    _dir: tempfile::TempDir,
}

impl Sentinels {
    /// The name they watch the master under.
    pub const MASTER: &'static str = "sg-main";

    /// Starts three sentinels watching `master` and waits until each answers and knows of a
    /// replica (`replicas` of them).
    pub async fn start(master: &RedisServer, replicas: usize) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut ports = Vec::new();
        let mut children = Vec::new();
        for i in 0..3 {
            let port = crate::free_port();
            let conf = dir.path().join(format!("sentinel-{i}.conf"));
            let text = format!(
                "port {port}\nbind 127.0.0.1\ndir {dir}\n\
                 sentinel monitor {name} 127.0.0.1 {master} 2\n\
                 sentinel down-after-milliseconds {name} 1000\n\
                 sentinel failover-timeout {name} 5000\n\
                 sentinel parallel-syncs {name} 1\n",
                dir = dir.path().display(),
                name = Self::MASTER,
                master = master.port,
            );
            std::fs::write(&conf, text).expect("the sentinel's configuration is written");
            let child = std::process::Command::new("redis-server")
                .arg(&conf)
                .arg("--sentinel")
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("redis-server is installed");
            ports.push(port);
            children.push(child);
        }
        let sentinels = Self { ports, children, _dir: dir };
        for port in &sentinels.ports {
            let knows = async || {
                let output = sentinels.cli(*port, &["SENTINEL", "replicas", Self::MASTER]);
                (output.matches("slave").count() >= replicas || output.matches("replica").count() >= replicas)
                    .then_some(())
            };
            assert!(
                crate::eventually(Duration::from_secs(20), knows).await.is_some(),
                "sentinel {port} knows the master and its replicas"
            );
        }
        sentinels
    }

    /// `redis+sentinel://127.0.0.1:<port>,.../<master>`.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self.ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
        format!("redis+sentinel://{}/{}", hosts.join(","), Self::MASTER)
    }

    /// The port of the master as sentinel `port` names it now.
    pub fn master_port(&self) -> Option<u16> {
        let output = self.cli(self.ports[0], &["SENTINEL", "get-master-addr-by-name", Self::MASTER]);
        output.lines().nth(1).and_then(|port| port.trim().parse().ok())
    }

    fn cli(&self, port: u16, args: &[&str]) -> String {
        let output = std::process::Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &port.to_string()])
            .args(args)
            .output()
            .expect("redis-cli is installed");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }
}

impl Drop for Sentinels {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A Redis Cluster of a test's own: three masters with one replica each (`redis-server
/// --cluster-enabled yes`, joined by `redis-cli --cluster create`), each on a free port. A
/// master is judged failed after a second without an answer, and its replica then takes over
/// however far behind it is.
#[derive(Debug)]
pub struct RedisCluster {
    /// Every node, in the order given to `redis-cli --cluster create` (the masters first).
    pub nodes: Vec<RedisServer>,
}

impl RedisCluster {
    /// Starts six nodes, makes them a cluster and waits (at most 30 s) until every node says
    /// it is `ok`.
    pub async fn start() -> Self {
        let mut nodes = Vec::new();
        for _ in 0..6 {
            let port = crate::free_port();
            let extra = [
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
                "--cluster-node-timeout",
                "1000",
                "--cluster-replica-validity-factor",
                "0",
            ]
            .map(str::to_owned)
            .to_vec();
            let mut node = RedisServer { port, tls: None, child: None, extra, dir: work_dir() };
            node.launch().await;
            nodes.push(node);
        }
        let addresses: Vec<String> = nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)).collect();
        let output = std::process::Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addresses)
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .output()
            .expect("redis-cli is installed");
        assert!(output.status.success(), "redis-cli --cluster create: {}", String::from_utf8_lossy(&output.stdout));
        let cluster = Self { nodes };
        let ok = async || {
            cluster.live_nodes().all(|n| n.cli(&["CLUSTER", "INFO"]).contains("cluster_state:ok")).then_some(())
        };
        assert!(crate::eventually(Duration::from_secs(30), ok).await.is_some(), "the cluster is ok");
        cluster
    }

    /// `redis+cluster://127.0.0.1:<port>,...` naming every node as a seed.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self.nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)).collect();
        format!("redis+cluster://{}", hosts.join(","))
    }

    /// The nodes whose process runs.
    pub fn live_nodes(&self) -> impl Iterator<Item = &RedisServer> {
        self.nodes.iter().filter(|n| n.child.is_some())
    }

    /// The index in [`RedisCluster::nodes`] of the node with `port`.
    pub fn index_of(&self, port: u16) -> usize {
        self.nodes.iter().position(|n| n.port == port).expect("a node of the cluster")
    }

    /// The master that serves `key` now, as a live node says (`CLUSTER KEYSLOT`, `CLUSTER
    /// NODES`), and its replicas.
    pub fn serving(&self, key: &str) -> Option<(u16, Vec<u16>)> {
        let node = self.live_nodes().next()?;
        let slot: u16 = node.cli(&["CLUSTER", "KEYSLOT", key]).trim().parse().ok()?;
        let nodes = node.cli(&["CLUSTER", "NODES"]);
        let port_of = |addr: &str| addr.split(['@', ':']).nth(1).and_then(|p| p.parse::<u16>().ok());
        let master = nodes.lines().find_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let serves = fields.get(8..)?.iter().any(|range| {
                let (from, to) = range.split_once('-').unwrap_or((range, range));
                matches!((from.parse::<u16>(), to.parse::<u16>()), (Ok(from), Ok(to)) if (from..=to).contains(&slot))
            });
            (serves && fields[2].contains("master") && !fields[2].contains("fail")).then(|| (fields[0], fields[1]))
        })?;
        let replicas = nodes
            .lines()
            .filter_map(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                (fields.get(3) == Some(&master.0)).then(|| port_of(fields[1])).flatten()
            })
            .collect();
        Some((port_of(master.1)?, replicas))
    }
}
