//! An injected network round trip: a TCP proxy on loopback that holds every chunk of bytes, in
//! each direction, for a fixed time before passing it on. A shard reached through one behaves as
//! a database that far away: each statement's round trip costs the delay twice, while the proxy
//! keeps the order of the bytes and never limits how many are in flight (a chunk is held until
//! its time comes, not until the one before it was written).
//!
//! The same idea as CockroachDB's artificial latency map for its multi-region tests, or `tc
//! netem delay` on a real interface, but in the bench's own process and without privileges.
//!
//! The holding is done by one thread of its own ([`DelayLine`]), not by tokio's timers: those
//! tick in whole milliseconds and round a hold up to the next tick, which made a 1 ms hold
//! 1 to 2 ms (a "2 ms" round trip measured 4.3 to 4.8 ms). The thread sleeps to each chunk's
//! time with the operating system's precision (tens of microseconds) and hands it to its
//! connection's writer.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// A proxy from a loopback port to `upstream` that delays each direction by `one_way`; stops
/// listening when dropped (connections already made end with their ends).
#[derive(Debug)]
pub struct DelayProxy {
    /// Where clients connect.
    pub addr: SocketAddr,
    listening: tokio::task::JoinHandle<()>,
}

impl DelayProxy {
    /// Listens on a free loopback port; chunks are held on `line`.
    pub async fn start(upstream: SocketAddr, one_way: Duration, line: &DelayLine) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let line = line.clone();
        let listening = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let line = line.clone();
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(upstream).await else { return };
                    let _ = client.set_nodelay(true);
                    let _ = server.set_nodelay(true);
                    let (client_read, client_write) = client.into_split();
                    let (server_read, server_write) = server.into_split();
                    tokio::join!(
                        pump(client_read, server_write, one_way, &line),
                        pump(server_read, client_write, one_way, &line)
                    );
                });
            }
        });
        Ok(Self { addr, listening })
    }
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        self.listening.abort();
    }
}

/// A chunk held until its time, and the writer it goes to then.
struct Held {
    at: std::time::Instant,
    chunk: Vec<u8>,
    to: mpsc::UnboundedSender<Vec<u8>>,
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Held").field("at", &self.at).field("bytes", &self.chunk.len()).finish()
    }
}

/// The thread that holds every chunk of the [`DelayProxy`]s given it until its time; ends
/// when the last handle is dropped.
#[derive(Debug, Clone)]
pub struct DelayLine(std::sync::mpsc::Sender<Held>);

impl DelayLine {
    /// Starts the thread.
    pub fn start() -> Self {
        let (hold, held) = std::sync::mpsc::channel::<Held>();
        std::thread::spawn(move || {
            // Chunks arrive in the order they were read, and the proxies on one line hold
            // them equally long (give each hold a line of its own), so a queue in arrival order
            // is in time order too.
            let mut queue = std::collections::VecDeque::<Held>::new();
            loop {
                let now = std::time::Instant::now();
                while queue.front().is_some_and(|first| first.at <= now) {
                    let Held { chunk, to, .. } = queue.pop_front().expect("just seen");
                    let _ = to.send(chunk);
                }
                let next = match queue.front() {
                    Some(first) => held.recv_timeout(first.at.saturating_duration_since(now)),
                    None => held.recv().map_err(|_| std::sync::mpsc::RecvTimeoutError::Disconnected),
                };
                match next {
                    Ok(chunk) => queue.push_back(chunk),
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
                }
            }
        });
        Self(hold)
    }
}

/// Passes what `from` reads to `to`, each chunk `delay` after it was read (held on `line`);
/// shuts `to` down when `from` ends.
async fn pump(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, delay: Duration, line: &DelayLine) {
    let (ready, mut due) = mpsc::unbounded_channel::<Vec<u8>>();
    let read = async move {
        let mut buffer = vec![0u8; 64 * 1024];
        while let Ok(n @ 1..) = from.read(&mut buffer).await {
            let held = Held { at: std::time::Instant::now() + delay, chunk: buffer[..n].to_vec(), to: ready.clone() };
            if line.0.send(held).is_err() {
                break;
            }
        }
    };
    let write = async move {
        while let Some(chunk) = due.recv().await {
            if to.write_all(&chunk).await.is_err() {
                break;
            }
        }
        let _ = to.shutdown().await;
    };
    tokio::join!(read, write);
}

/// The median time of `SELECT 1` on `url` over 50 tries: what a statement's round trip costs
/// there (through a [`DelayProxy`], the injected delay included).
pub async fn median_round_trip(url: &str) -> Result<Duration, sqlx::Error> {
    use sqlx::Connection;
    let mut db = sqlx::PgConnection::connect(url).await?;
    let mut times = Vec::with_capacity(50);
    for _ in 0..50 {
        let started = std::time::Instant::now();
        sqlx::query("SELECT 1").execute(&mut db).await?;
        times.push(started.elapsed());
    }
    db.close().await?;
    times.sort();
    Ok(times[times.len() / 2])
}
