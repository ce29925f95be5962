//! [`PgCluster`]: a PostgreSQL cluster of a test's own (`initdb` and `pg_ctl` as the `postgres`
//! user, on a free loopback port), which the test may stop, kill, freeze and thaw to play a shard
//! outage without touching the machine's shared server.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// A PostgreSQL cluster of one test's own. Dropping it stops the cluster and removes its files.
#[derive(Debug)]
pub struct PgCluster {
    /// Its port on 127.0.0.1.
    pub port: u16,
    max_connections: u32,
    dir: tempfile::TempDir,
    bin: PathBuf,
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
        let dir = tempfile::Builder::new().prefix("sg-pg-").tempdir().expect("temp dir");
        let chown = Command::new("chown").args(["-R", "postgres:postgres"]).arg(dir.path()).status().unwrap();
        assert!(chown.success(), "chown of the cluster directory failed");
        let bin = pg_bin();
        let data = dir.path().join("data");
        as_postgres(
            &bin.join("initdb"),
            &["-D", data.to_str().unwrap(), "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8"],
        );
        let cluster = Self { port: crate::free_port(), max_connections, dir, bin };
        cluster.launch();
        cluster
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn launch(&self) {
        let options = format!(
            "-p {} -c listen_addresses=127.0.0.1 -k {} -c fsync=off -c max_connections={}",
            self.port,
            self.dir.path().display(),
            self.max_connections
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
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(&self.url("postgres")).await.expect("connect to the test cluster");
        sqlx::Executor::execute(&mut conn, format!("CREATE DATABASE \"{name}\"").as_str())
            .await
            .expect("CREATE DATABASE");
        conn.close().await.ok();
        self.url(name)
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
        let open: i64 =
            sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'")
                .fetch_one(&mut conn)
                .await
                .expect("count connections");
        conn.close().await.ok();
        open - 1 // not this one
    }
}
