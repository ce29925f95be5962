//! [`PgCluster`]: a PostgreSQL cluster of a test's own (`initdb` and `pg_ctl` as the `postgres`
//! user, on a free loopback port), which the test may stop, kill, freeze and thaw to play a shard
//! outage without touching the machine's shared server. [`PgCluster::start_tls`] starts one that
//! speaks TLS with a certificate from a [`TestCa`], for the tests of TLS to PostgreSQL;
//! [`PgCluster::start_primary`] and [`PgCluster::start_standby_of`] a primary and its streaming
//! standby, for the tests of failover.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use secrecy::SecretString;
use shardgate_shard_router::ShardId;
use shardgate_shard_router::router::ShardSeed;

use crate::tls::TestCa;

/// A PostgreSQL cluster of one test's own. Dropping it stops the cluster and removes its files.
#[derive(Debug)]
pub struct PgCluster {
    /// Its port on 127.0.0.1.
    pub port: u16,
    max_connections: u32,
    dir: tempfile::TempDir,
    bin: PathBuf,
    /// Server options beyond the common ones (TLS).
    extra_options: String,
}

/// The role the gateway connects as to a cluster of [`PgCluster::start_tls`] (a superuser, so it
/// may migrate); the test's own connections stay `postgres`, over plain TCP.
pub const GATEWAY_ROLE: &str = "gateway";

/// How a cluster of [`PgCluster::start_tls`] speaks TLS.
#[derive(Debug, Clone, Copy)]
pub struct PgTlsSetup<'a> {
    /// The CA that signs the server's certificate.
    pub ca: &'a TestCa,
    /// The names the server's certificate carries (`localhost`; another name to play a
    /// certificate for the wrong host).
    pub names: &'a [&'a str],
    /// Whether [`GATEWAY_ROLE`] may connect over TLS only (pg_hba `hostssl`); else plain too.
    pub tls_only: bool,
    /// Whether [`GATEWAY_ROLE`] must present a client certificate signed by `ca` whose common
    /// name is the role (pg_hba `hostssl ... cert`, `ssl_ca_file` the CA's certificate).
    pub client_cert: bool,
}

/// The directory of the newest installed PostgreSQL's programs.
fn pg_bin() -> PathBuf {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL is installed under /usr/lib/postgresql")
        .filter_map(|entry| entry.ok().map(|e| e.path().join("bin")))
        .filter(|bin| bin.join("initdb").exists())
        .collect();
    versions.sort();
    versions.pop().expect("an initdb under /usr/lib/postgresql/*/bin")
}

/// Runs a PostgreSQL program as the `postgres` user (it refuses to run as root); panics with its
/// output on failure.
fn as_postgres(program: &Path, args: &[&str]) {
    let output = Command::new("runuser")
        .args(["-u", "postgres", "--"])
        .arg(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("runuser runs");
    assert!(
        output.status.success(),
        "{} {args:?} failed: {}{}",
        program.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

impl PgCluster {
    /// Creates a cluster in a new temporary directory (trust authentication, listening on
    /// 127.0.0.1 only, its socket in that directory) and starts it, with `max_connections = 60`.
    pub async fn start() -> Self {
        Self::start_with_max_connections(60).await
    }

    /// [`PgCluster::start`] with the server's `max_connections`.
    pub async fn start_with_max_connections(max_connections: u32) -> Self {
        let cluster = Self::init(max_connections);
        cluster.launch();
        cluster
    }

    /// A new cluster, its files made (`initdb`), not started.
    fn init(max_connections: u32) -> Self {
        let dir = tempfile::Builder::new().prefix("sg-pg-").tempdir().expect("temp dir");
        let chown = Command::new("chown").args(["-R", "postgres:postgres"]).arg(dir.path()).status().unwrap();
        assert!(chown.success(), "chown of the cluster directory failed");
        let bin = pg_bin();
        let data = dir.path().join("data");
        as_postgres(
            &bin.join("initdb"),
            &["-D", data.to_str().unwrap(), "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8"],
        );
        Self { port: crate::free_port(), max_connections, dir, bin, extra_options: String::new() }
    }

    /// A cluster that speaks TLS (`ssl = on`) with a server certificate `setup.ca` issues for
    /// `setup.names` (files owned by `postgres`, the key mode 0600), and a role
    /// [`GATEWAY_ROLE`] whose connections `setup` rules (pg_hba); `postgres` connects plain.
    pub async fn start_tls(setup: PgTlsSetup<'_>) -> Self {
        let mut cluster = Self::init(60);
        let issued = setup.ca.issue_in(cluster.dir.path(), "server", setup.names);
        let ca_file = cluster.dir.path().join("root.crt");
        std::fs::write(&ca_file, &setup.ca.cert_pem).expect("the CA certificate is written");
        for file in [&issued.cert_path, &issued.key_path, &ca_file] {
            let chown = Command::new("chown").arg("postgres:postgres").arg(file).status().unwrap();
            assert!(chown.success(), "chown of {} failed", file.display());
        }
        cluster.extra_options = format!(
            "-c ssl=on -c ssl_cert_file={} -c ssl_key_file={}",
            issued.cert_path.display(),
            issued.key_path.display()
        );
        if setup.client_cert {
            cluster.extra_options.push_str(&format!(" -c ssl_ca_file={}", ca_file.display()));
        }
        let gateway = match (setup.client_cert, setup.tls_only) {
            (true, _) => format!("hostssl all {GATEWAY_ROLE} 127.0.0.1/32 cert"),
            (false, true) => format!("hostssl all {GATEWAY_ROLE} 127.0.0.1/32 trust"),
            (false, false) => format!("host all {GATEWAY_ROLE} 127.0.0.1/32 trust"),
        };
        let hba = format!("local all all trust\nhost all postgres 127.0.0.1/32 trust\n{gateway}\n");
        std::fs::write(cluster.data().join("pg_hba.conf"), hba).expect("pg_hba.conf is written");
        cluster.launch();
        cluster.admin_execute(&format!("CREATE ROLE {GATEWAY_ROLE} LOGIN SUPERUSER")).await;
        cluster
    }

    /// A cluster where `postgres` is trusted and every other role logs in over TCP with its
    /// password (`scram-sha-256`): for the stories of rotated credentials.
    pub async fn start_with_passwords() -> Self {
        let cluster = Self::init(60);
        let hba =
            "local all all trust\nhost all postgres 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 scram-sha-256\n";
        std::fs::write(cluster.data().join("pg_hba.conf"), hba).expect("pg_hba.conf is written");
        cluster.launch();
        cluster
    }

    /// A cluster that streaming standbys may follow ([`PgCluster::start_standby_of`];
    /// asynchronous replication until [`PgCluster::make_replication_synchronous`]).
    pub async fn start_primary() -> Self {
        let cluster = Self::init(60);
        cluster.append_settings("wal_level = replica\nmax_wal_senders = 5\nwal_keep_size = '64MB'\n");
        cluster.launch();
        cluster
    }

    /// From now on a commit waits until a standby has flushed it (`synchronous_standby_names =
    /// '*'`), so no acknowledged write is lost when a standby is promoted. Waits (at most 30 s)
    /// until a standby is in sync: before, every commit would wait.
    pub async fn make_replication_synchronous(&self) {
        self.admin_execute("ALTER SYSTEM SET synchronous_standby_names = '*'").await;
        self.admin_execute("SELECT pg_reload_conf()").await;
        let in_sync = async || {
            use sqlx::Connection;
            let mut conn = sqlx::PgConnection::connect(&self.url("postgres")).await.ok()?;
            let sync: i64 = sqlx::query_scalar("SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'")
                .fetch_one(&mut conn)
                .await
                .ok()?;
            conn.close().await.ok();
            (sync > 0).then_some(())
        };
        assert!(crate::eventually(Duration::from_secs(30), in_sync).await.is_some(), "a standby is in sync");
    }

    /// A streaming standby of `primary` (`pg_basebackup -R`), started on a loopback port of its
    /// own. It waits for no standby of its own once promoted.
    pub async fn start_standby_of(primary: &PgCluster) -> Self {
        let dir = tempfile::Builder::new().prefix("sg-pg-standby-").tempdir().expect("temp dir");
        let chown = Command::new("chown").args(["-R", "postgres:postgres"]).arg(dir.path()).status().unwrap();
        assert!(chown.success(), "chown of the standby's directory failed");
        let data = dir.path().join("data");
        let port = primary.port.to_string();
        as_postgres(
            &primary.bin.join("pg_basebackup"),
            &[
                "-D",
                data.to_str().unwrap(),
                "-h",
                "127.0.0.1",
                "-p",
                &port,
                "-U",
                "postgres",
                "-R",
                "-X",
                "stream",
                "-c",
                "fast",
            ],
        );
        let standby = Self {
            port: crate::free_port(),
            max_connections: 60,
            dir,
            bin: primary.bin.clone(),
            extra_options: String::new(),
        };
        standby.append_settings("synchronous_standby_names = ''\n");
        standby.launch();
        standby
    }

    /// Adds `lines` to the cluster's settings and has the running server read them again
    /// (`pg_ctl reload`): for settings that need no restart (`recovery_min_apply_delay`, ...).
    pub fn reconfigure(&self, lines: &str) {
        self.append_settings(lines);
        as_postgres(&self.bin.join("pg_ctl"), &["-D", self.data().to_str().unwrap(), "reload"]);
    }

    /// Promotes a standby (`pg_ctl promote`): it takes writes when this returns.
    pub fn promote(&self) {
        as_postgres(&self.bin.join("pg_ctl"), &["-D", self.data().to_str().unwrap(), "-w", "-t", "30", "promote"]);
    }

    /// Adds lines to the cluster's `postgresql.conf` (later lines win).
    fn append_settings(&self, lines: &str) {
        use std::io::Write;
        let mut conf = std::fs::OpenOptions::new()
            .append(true)
            .open(self.data().join("postgresql.conf"))
            .expect("postgresql.conf opens");
        conf.write_all(lines.as_bytes()).expect("postgresql.conf is written");
    }

    /// Runs `sql` as `postgres` on database `postgres` (roles, passwords); panics if it fails.
    pub async fn execute(&self, sql: &str) {
        self.admin_execute(sql).await;
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn launch(&self) {
        let options = format!(
            "-p {} -c listen_addresses=127.0.0.1 -k {} -c fsync=off -c max_connections={} {}",
            self.port,
            self.dir.path().display(),
            self.max_connections,
            self.extra_options
        );
        let log = self.dir.path().join("log");
        as_postgres(
            &self.bin.join("pg_ctl"),
            &[
                "-D",
                self.data().to_str().unwrap(),
                "-l",
                log.to_str().unwrap(),
                "-o",
                &options,
                "-w",
                "-t",
                "30",
                "start",
            ],
        );
    }

    /// `postgres://postgres@127.0.0.1:<port>/<database>`.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }

    /// Creates a database and returns its URL.
    pub async fn create_database(&self, name: &str) -> String {
        self.admin_execute(&format!("CREATE DATABASE \"{name}\"")).await;
        self.url(name)
    }

    /// Creates databases `<prefix>0` to `<prefix><count - 1>` and returns them as the seeds of
    /// shards `pg-0` to `pg-<count - 1>` (no password file).
    pub async fn create_shards(&self, prefix: &str, count: u32) -> Vec<ShardSeed> {
        let mut seeds = Vec::new();
        for i in 0..count {
            let url = self.create_database(&format!("{prefix}{i}")).await;
            seeds.push(ShardSeed {
                id: ShardId::parse(&format!("pg-{i}")).unwrap(),
                url: SecretString::from(url),
                password_file: None,
            });
        }
        seeds
    }

    /// Runs `sql` as `postgres` on database `postgres`; panics if it fails.
    async fn admin_execute(&self, sql: &str) {
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(&self.url("postgres")).await.expect("connect to the test cluster");
        sqlx::Executor::execute(&mut conn, sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
        conn.close().await.ok();
    }

    /// `postgres://gateway@<host>:<port>/<database>?<params>`: how the gateway reaches a
    /// database of a cluster of [`PgCluster::start_tls`] (`host` is `localhost`, `127.0.0.1` or
    /// any name that resolves to it, for the host-name check of `verify-full`).
    pub fn gateway_url(&self, host: &str, database: &str, params: &str) -> String {
        format!("postgres://{GATEWAY_ROLE}@{host}:{}/{database}?{params}", self.port)
    }

    /// Every client connection on the server but the caller's own, from `pg_stat_activity`
    /// joined with `pg_stat_ssl`.
    pub async fn ssl_of_connections(&self) -> Vec<ServerConnection> {
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(&self.url("postgres")).await.expect("connect to the test cluster");
        let rows: Vec<(String, String, String, bool)> = sqlx::query_as(
            "SELECT a.usename::text, coalesce(a.datname::text, ''), a.application_name, s.ssl \
             FROM pg_stat_activity a JOIN pg_stat_ssl s ON s.pid = a.pid \
             WHERE a.backend_type = 'client backend' AND a.pid <> pg_backend_pid()",
        )
        .fetch_all(&mut conn)
        .await
        .expect("read pg_stat_ssl");
        conn.close().await.ok();
        rows.into_iter()
            .map(|(user, database, application, ssl)| ServerConnection { user, database, application, ssl })
            .collect()
    }

    /// The postmaster and every backend: each process of the cluster.
    fn pids(&self) -> Vec<String> {
        let Ok(pid_file) = std::fs::read_to_string(self.data().join("postmaster.pid")) else { return Vec::new() };
        let Some(postmaster) = pid_file.lines().next().map(str::trim).map(str::to_owned) else { return Vec::new() };
        let children = Command::new("pgrep").args(["-P", &postmaster]).output().map(|o| o.stdout).unwrap_or_default();
        std::iter::once(postmaster)
            .chain(String::from_utf8_lossy(&children).lines().map(str::to_owned))
            .filter(|pid| !pid.is_empty())
            .collect()
    }

    fn signal_all(&self, signal: &str) {
        for pid in self.pids() {
            // A backend may exit between listing and signalling; that is fine.
            let _ = Command::new("kill").args([signal, &pid]).status();
        }
    }

    /// Freezes the cluster: SIGSTOP to the postmaster and every backend. Connections stay open
    /// and nothing answers; new connections are accepted by the kernel and never answered.
    pub fn freeze(&self) {
        self.signal_all("-STOP");
    }

    /// Thaws a frozen cluster (SIGCONT to all its processes).
    pub fn thaw(&self) {
        self.signal_all("-CONT");
    }

    /// Kills every process of the cluster at once (`kill -9`): connections break, new ones are
    /// refused.
    pub fn kill(&self) {
        let pids = self.pids();
        for pid in &pids {
            let _ = Command::new("kill").args(["-CONT", pid]).status();
        }
        for pid in &pids {
            let _ = Command::new("kill").args(["-9", pid]).status();
        }
        // Wait for the port to close, so `restart` can take it again.
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // A killed postmaster may linger as a zombie nobody reaps, which would make the next one
        // think it still runs: its lock files go with it.
        let _ = std::fs::remove_file(self.data().join("postmaster.pid"));
        let _ = std::fs::remove_file(self.dir.path().join(format!(".s.PGSQL.{}.lock", self.port)));
        let _ = std::fs::remove_file(self.dir.path().join(format!(".s.PGSQL.{}", self.port)));
    }

    /// Starts the cluster again on the same port, with its data (after [`PgCluster::kill`] or
    /// [`PgCluster::stop`]).
    pub fn restart(&self) {
        self.launch();
    }

    /// Restarts the cluster as an operator does (`pg_ctl restart -m fast`): the server ends
    /// every connection, shuts down cleanly and is back on the same port when this returns.
    pub fn fast_restart(&self) {
        self.stop();
        self.launch();
    }

    /// Stops the cluster cleanly (`pg_ctl stop -m fast`): connections end, new ones are refused
    /// until [`PgCluster::restart`].
    pub fn stop(&self) {
        as_postgres(
            &self.bin.join("pg_ctl"),
            &["-D", self.data().to_str().unwrap(), "-m", "fast", "-w", "-t", "30", "stop"],
        );
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        self.thaw();
        let _ = Command::new("runuser")
            .args(["-u", "postgres", "--"])
            .arg(self.bin.join("pg_ctl"))
            .args(["-D", self.data().to_str().unwrap_or_default(), "-m", "immediate", "-w", "-t", "10", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        // Anything left (a postmaster that would not stop) is killed before its files go.
        self.kill();
    }
}

impl PgCluster {
    /// Connections open on the server now (client backends only).
    pub async fn connections(&self) -> i64 {
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(&self.url("postgres")).await.expect("connect to the test cluster");
        // Not the connections to the maintenance database `postgres`: this one, and those of
        // earlier counts, whose backends may still be ending on a loaded machine (a watcher that
        // counts every 50 ms once saw 66 of a budget of 64).
        let open: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' \
             AND datname IS DISTINCT FROM 'postgres'",
        )
        .fetch_one(&mut conn)
        .await
        .expect("count connections");
        conn.close().await.ok();
        open
    }
}

/// One client connection as the server sees it ([`PgCluster::ssl_of_connections`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ServerConnection {
    /// Its role.
    pub user: String,
    /// Its database.
    pub database: String,
    /// Its `application_name`.
    pub application: String,
    /// Whether it runs over TLS (`pg_stat_ssl.ssl`).
    pub ssl: bool,
}
