//! An injected network round trip: a TCP proxy on loopback that holds every chunk of bytes, in
//! each direction, for a fixed time before passing it on. A shard reached through one behaves as
//! a database that far away: each statement's round trip costs the delay twice, while the proxy
//! keeps the order of the bytes and never limits how many are in flight (a chunk is held until
//! its time comes, not until the one before it was written).
//!
//! The same idea as CockroachDB's artificial latency map for its multi-region tests, or `tc
//! netem delay` on a real interface, but in the bench's own process and without privileges.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// A proxy from a loopback port to `upstream` that delays each direction by `one_way`; stops
/// listening when dropped (connections already made end with their ends).
#[derive(Debug)]
pub struct DelayProxy {
    /// Where clients connect.
    pub addr: SocketAddr,
    listening: tokio::task::JoinHandle<()>,
}

impl DelayProxy {
    /// Listens on a free loopback port.
    pub async fn start(upstream: SocketAddr, one_way: Duration) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let listening = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(upstream).await else { return };
                    let _ = client.set_nodelay(true);
                    let _ = server.set_nodelay(true);
                    let (client_read, client_write) = client.into_split();
                    let (server_read, server_write) = server.into_split();
                    tokio::join!(pump(client_read, server_write, one_way), pump(server_read, client_write, one_way));
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

/// Passes what `from` reads to `to`, each chunk `delay` after it was read; shuts `to` down
/// when `from` ends.
async fn pump(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, delay: Duration) {
    let (held, mut due) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let read = async move {
        let mut buffer = vec![0u8; 64 * 1024];
        while let Ok(n @ 1..) = from.read(&mut buffer).await {
            if held.send((Instant::now() + delay, buffer[..n].to_vec())).is_err() {
                break;
            }
        }
    };
    let write = async move {
        while let Some((at, chunk)) = due.recv().await {
            tokio::time::sleep_until(at).await;
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
