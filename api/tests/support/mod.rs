//! The `shardgate` binary as a child process, for the tests in `api/tests/` that run it for
//! real: built as a command, started on a free port, waited for, killed on drop.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// `shardgate <args> --data-dir <data_dir>`, not started yet.
pub fn shardgate(args: &[&str], data_dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_shardgate"));
    command.args(args).arg("--data-dir").arg(data_dir);
    command
}

/// Runs `command` to its end, for at most 30 s (then kills it and fails the test), and returns
/// its status and output.
pub fn finish(command: &mut Command) -> Output {
    finish_within(command, Duration::from_secs(30))
}

/// [`finish`] for at most `bound`.
pub fn finish_within(command: &mut Command, bound: Duration) -> Output {
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("the command starts");
    let deadline = Instant::now() + bound;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{command:?} did not end within {bound:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// A running `shardgate` process, killed when dropped. Its log (standard output, at `warn`) is
/// kept: [`Process::log`].
#[derive(Debug)]
pub struct Process {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    log: Arc<Mutex<String>>,
}

impl Process {
    /// Starts `shardgate <args>` on a free port with `data_dir` and the environment `envs`.
    pub fn start<K, V>(args: &[&str], data_dir: &Path, envs: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        Self::start_command(shardgate(args, data_dir), envs)
    }

    /// Starts `command` (a `shardgate` command line: `serve`, `gatekeeper`) on a free port with
    /// the environment `envs`.
    pub fn start_command<K, V>(mut command: Command, envs: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut child = command
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .env("SHARDGATE_LOG__FILTER", "warn")
            .envs(envs)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the shardgate binary starts");
        // Drained as it comes, so a chatty process never blocks on a full pipe.
        let log = Arc::new(Mutex::new(String::new()));
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout is piped"));
        let kept = log.clone();
        std::thread::spawn(move || {
            let mut line = String::new();
            while stdout.read_line(&mut line).is_ok_and(|n| n > 0) {
                kept.lock().unwrap().push_str(&line);
                line.clear();
            }
        });
        Self { child, base: format!("http://127.0.0.1:{port}"), log }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What the process logged so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Waits until `GET probe` (`/healthz`, `/readyz`) answers with a success, for at most
    /// 10 s, asking every 100 ms.
    pub async fn wait_until_ok(&self, client: &reqwest::Client, probe: &str) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(response) = client.get(format!("{}{probe}", self.base)).send().await
                && response.status().is_success()
            {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{}{probe} did not succeed within 10 s (pid {}); the log:\n{}",
                self.base,
                self.pid(),
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// `POST /v1/admin/tenants {"id": id}` through this process with the admin token `admin`;
    /// asserts 201.
    pub async fn create_tenant(&self, client: &reqwest::Client, admin: &str, id: &str) {
        let response = client
            .post(format!("{}/v1/admin/tenants", self.base))
            .bearer_auth(admin)
            .json(&serde_json::json!({ "id": id }))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 201, "creating tenant {id} through {}", self.base);
    }

    /// `GET path` through this process with the bearer token `token`: the JSON it answers.
    pub async fn get_json(&self, client: &reqwest::Client, path: &str, token: &str) -> serde_json::Value {
        client.get(format!("{}{path}", self.base)).bearer_auth(token).send().await.unwrap().json().await.unwrap()
    }
}

/// Two `shardgate serve` processes on the environment `envs` (so on one catalog), each with a
/// data directory of its own, ready: the first creates the catalog, the second joins it. Returns
/// them with their directories.
pub async fn serve_two(
    client: &reqwest::Client,
    envs: Vec<(String, String)>,
) -> ([Process; 2], [tempfile::TempDir; 2]) {
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let a = Process::start(&["serve"], dirs[0].path(), envs.clone());
    a.wait_until_ok(client, "/readyz").await;
    let b = Process::start(&["serve"], dirs[1].path(), envs);
    b.wait_until_ok(client, "/readyz").await;
    ([a, b], dirs)
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
