//! The clients of `bench/connections.sh`: what an attacker without a token does to connections
//! and metrics, and what a well-behaved client sees meanwhile. Raw HTTP/1.1 over tokio sockets,
//! so that nothing in a client library (pools, retries) hides what the server does.
//!
//! Usage, one mode per process (each prints one `SG...` line, figures as `key=value`):
//!
//! - `conn_flood junk ADDR REQUESTS CONNECTIONS`: `REQUESTS` requests, each with a method of its
//!   own (`JUNK00000`, `JUNK00001`, ...), spread over `CONNECTIONS` keep-alive connections and
//!   pipelined 64 at a time, alternately to `/healthz` and to `/nowhere/<i>`. Prints
//!   `SGJUNK requests=.. answered=.. secs=.. statuses=<status>:<count>,...`.
//! - `conn_flood hold ADDR COUNT idle|half SECONDS`: opens `COUNT` connections (256 connects at a
//!   time) that send nothing (`idle`) or the start of a request head that never ends (`half`), and
//!   holds them for `SECONDS` from when the last one connected. Prints `SGOPEN opened=..
//!   failed=.. secs=..` once they are open, then `SGHOLD mode=.. opened=.. failed=..
//!   closed_by_server=.. still_open=.. close_p50_s=.. close_max_s=..` (seconds from each
//!   connection's opening to the server closing it).
//! - `conn_flood probe ADDR COUNT`: `COUNT` sequential `GET /healthz`, each on a new connection,
//!   timed from connect to the end of the answer (5 s at most each). Prints `SGPROBE count=.. ok=..
//!   failed=.. p50_ms=.. p99_ms=.. max_ms=..`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Requests written before their answers are read, in `junk` mode.
const PIPELINE: usize = 64;

/// The longest a probe waits for its answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

#[tokio::main]
async fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).cloned().ok_or_else(|| format!("missing argument {}; see the doc comment", i + 1));
    let number = |i: usize| arg(i)?.parse::<usize>().map_err(|e| format!("argument {}: {e}", i + 1));
    match arg(0)?.as_str() {
        "junk" => junk(&arg(1)?, number(2)?, number(3)?.max(1)).await,
        "hold" => hold(&arg(1)?, number(2)?, &arg(3)?, number(4)?).await,
        "probe" => {
            probe(&arg(1)?, number(2)?).await;
            Ok(())
        }
        other => Err(format!("unknown mode {other:?}: junk, hold or probe")),
    }
}

/// Junk-method requests over a few keep-alive connections.
async fn junk(addr: &str, requests: usize, connections: usize) -> Result<(), String> {
    let started = Instant::now();
    let statuses = Arc::new(Mutex::new(BTreeMap::<u16, usize>::new()));
    let per_connection = requests.div_ceil(connections);
    let mut tasks = Vec::new();
    for c in 0..connections {
        let first = c * per_connection;
        let last = (first + per_connection).min(requests);
        let (addr, statuses) = (addr.to_owned(), statuses.clone());
        tasks.push(tokio::spawn(async move { junk_connection(&addr, first..last, &statuses).await }));
    }
    for task in tasks {
        task.await.map_err(|e| e.to_string())??;
    }
    let statuses = statuses.lock();
    let answered: usize = statuses.values().sum();
    let listed: Vec<String> = statuses.iter().map(|(status, count)| format!("{status}:{count}")).collect();
    println!(
        "SGJUNK requests={requests} answered={answered} secs={:.2} statuses={}",
        started.elapsed().as_secs_f64(),
        listed.join(",")
    );
    Ok(())
}

/// Requests `range` on one connection (a new one whenever the server closes it).
async fn junk_connection(
    addr: &str,
    range: std::ops::Range<usize>,
    statuses: &Mutex<BTreeMap<u16, usize>>,
) -> Result<(), String> {
    let mut stream = Responses::connect(addr).await?;
    let mut next = range.start;
    while next < range.end {
        let batch_end = (next + PIPELINE).min(range.end);
        let mut batch = String::new();
        for i in next..batch_end {
            let path = if i % 2 == 0 { "/healthz".to_owned() } else { format!("/nowhere/{i}") };
            batch.push_str(&format!("JUNK{i:05} {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n"));
        }
        stream.stream.write_all(batch.as_bytes()).await.map_err(|e| e.to_string())?;
        let mut answered = 0;
        while next + answered < batch_end {
            match stream.next_status().await {
                Some(status) => {
                    *statuses.lock().entry(status).or_default() += 1;
                    answered += 1;
                }
                None => break,
            }
        }
        next += answered;
        if next < batch_end {
            // The server closed the connection: the unanswered requests go again on a new one.
            stream = Responses::connect(addr).await?;
        }
    }
    Ok(())
}

/// A connection and the bytes read from it that no response has consumed yet.
struct Responses {
    stream: TcpStream,
    buffer: Vec<u8>,
}

impl Responses {
    async fn connect(addr: &str) -> Result<Self, String> {
        let stream = TcpStream::connect(addr).await.map_err(|e| format!("connect {addr}: {e}"))?;
        Ok(Self { stream, buffer: Vec::new() })
    }

    /// The status of the next response (its body skipped by `content-length`), or `None` when
    /// the connection ends first.
    async fn next_status(&mut self) -> Option<u16> {
        loop {
            if let Some(end) = find(&self.buffer, b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&self.buffer[..end]).into_owned();
                let length = head
                    .lines()
                    .find_map(|line| {
                        let (name, value) = line.split_once(':')?;
                        name.eq_ignore_ascii_case("content-length").then(|| value.trim().parse::<usize>().ok())?
                    })
                    .unwrap_or(0);
                if self.buffer.len() >= end + 4 + length {
                    self.buffer.drain(..end + 4 + length);
                    return head.split(' ').nth(1).and_then(|status| status.parse().ok());
                }
            }
            let mut chunk = [0u8; 16 * 1024];
            match self.stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.buffer.extend_from_slice(&chunk[..n]),
            }
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|window| window == needle)
}

/// Opens and holds idle or half-sent connections, and reports when the server closed them.
async fn hold(addr: &str, count: usize, mode: &str, seconds: usize) -> Result<(), String> {
    let opening: &[u8] = match mode {
        "idle" => b"",
        "half" => b"GET /healthz HTTP/1.1\r\nHost: gateway\r\nX-Slow: ",
        other => return Err(format!("unknown hold mode {other:?}: idle or half")),
    };
    let started = Instant::now();
    let failed = Arc::new(AtomicUsize::new(0));
    let closed_after = Arc::new(Mutex::new(Vec::<f64>::new()));
    let streams: Vec<(TcpStream, Instant)> = futures::stream::iter(0..count)
        .map(|_| {
            let failed = failed.clone();
            async move {
                match TcpStream::connect(addr).await {
                    Ok(mut stream) => {
                        let opened_at = Instant::now();
                        if !opening.is_empty() && stream.write_all(opening).await.is_err() {
                            failed.fetch_add(1, Ordering::Relaxed);
                            return None;
                        }
                        Some((stream, opened_at))
                    }
                    Err(_) => {
                        failed.fetch_add(1, Ordering::Relaxed);
                        None
                    }
                }
            }
        })
        .buffer_unordered(256)
        .filter_map(|stream| async move { stream })
        .collect()
        .await;
    let opened = streams.len();
    let failed = failed.load(Ordering::Relaxed);
    println!("SGOPEN mode={mode} opened={opened} failed={failed} secs={:.2}", started.elapsed().as_secs_f64());
    for (mut stream, opened_at) in streams {
        let closed_after = closed_after.clone();
        tokio::spawn(async move {
            let mut byte = [0u8; 1024];
            loop {
                match stream.read(&mut byte).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
            closed_after.lock().push(opened_at.elapsed().as_secs_f64());
        });
    }
    tokio::time::sleep(Duration::from_secs(seconds as u64)).await;
    let mut closed = closed_after.lock().clone();
    closed.sort_by(f64::total_cmp);
    let percentile = |q: f64| closed.get(((closed.len() as f64 * q).ceil() as usize).saturating_sub(1)).copied();
    let show = |value: Option<f64>| value.map_or("n/a".to_owned(), |v| format!("{v:.2}"));
    println!(
        "SGHOLD mode={mode} opened={opened} failed={failed} closed_by_server={} still_open={} close_p50_s={} close_max_s={}",
        closed.len(),
        opened - closed.len(),
        show(percentile(0.5)),
        show(closed.last().copied()),
    );
    Ok(())
}

/// Sequential `/healthz` probes, each on a new connection.
async fn probe(addr: &str, count: usize) {
    let mut latencies = Vec::new();
    let mut failed = 0;
    for _ in 0..count {
        let started = Instant::now();
        let answer = tokio::time::timeout(PROBE_TIMEOUT, async {
            let mut responses = Responses::connect(addr).await.ok()?;
            let request = format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
            responses.stream.write_all(request.as_bytes()).await.ok()?;
            responses.next_status().await
        })
        .await;
        match answer {
            Ok(Some(200)) => latencies.push(started.elapsed().as_secs_f64() * 1000.0),
            _ => failed += 1,
        }
    }
    latencies.sort_by(f64::total_cmp);
    let percentile = |q: f64| {
        latencies
            .get(((latencies.len() as f64 * q).ceil() as usize).saturating_sub(1))
            .map_or("n/a".to_owned(), |v| format!("{v:.2}"))
    };
    println!(
        "SGPROBE count={count} ok={} failed={failed} p50_ms={} p99_ms={} max_ms={}",
        latencies.len(),
        percentile(0.5),
        percentile(0.99),
        latencies.last().map_or("n/a".to_owned(), |v| format!("{v:.2}")),
    );
}
