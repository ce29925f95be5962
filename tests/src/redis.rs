//! [`RedisServer`]: a `redis-server` process of a test's own, which the test may pause, kill and
//! restart to play an outage.

use std::time::Duration;

/// A Redis server of a test's own, on a free port, so the test can stop, pause and restart it.
#[derive(Debug)]
pub struct RedisServer {
    /// Its port.
    pub port: u16,
    child: Option<std::process::Child>,
}

impl RedisServer {
    /// Starts `redis-server` on a free port (no persistence) and waits until it answers.
    pub async fn start() -> Self {
        let port = crate::free_port();
        let mut server = Self { port, child: None };
        server.launch().await;
        server
    }

    /// `redis://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    async fn launch(&mut self) {
        let child = std::process::Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("redis-server is installed");
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

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.resume();
        self.stop();
    }
}
