//! The valet audit writer: every request to `/valet/...` leaves an audit row (`valet.download`,
//! `valet.upload`, `valet.refused`), written off the request's path, in batches, within bounds.
//!
//! A request puts its row in a bounded queue ([`ValetAudit::record`]) and never waits. One
//! background task drains the queue: it writes up to [`BATCH_ROWS`] rows in one catalog
//! transaction ([`Catalog::append_audits`]: multi-row `INSERT`s), as soon as that many are queued
//! or [`FLUSH_EVERY`] after the first row of a batch arrived. Valet URLs are public, so nothing a
//! client sends here may grow without bound:
//! - when the queue is full (`valet.audit_queue_rows` rows, default 10,000; a frozen or slow
//!   catalog fills it), the row is dropped and counted in
//!   `shardgate_valet_audit_dropped_total{reason="queue_full"}`, with a warning at most every
//!   [`WARN_EVERY`];
//! - a batch the catalog refuses is dropped and counted (`reason="write_failed"`), not retried:
//!   an `INSERT` whose commit may have happened is not idempotent;
//! - a row's target (the URL's path) is cut to [`MAX_TARGET_BYTES`] and its request id (which the
//!   client may send) to [`MAX_REQUEST_ID_BYTES`], so a row holds about 4.3 KiB at most and a
//!   full queue of the default 10,000 rows about 43 MiB (typical rows are a tenth of that).
//!
//! Refusals ([`ValetAudit::record_refusal`]) are sampled first: one row per refusal code and
//! minute, and a row counting the others once the minute is over
//! ([`crate::valet::refusals::RefusalSampler`]), so anonymous clients cannot fill the log.
//!
//! On shutdown ([`ValetAudit::close`], after the server stopped taking requests) the task writes
//! what is queued, for at most [`CLOSE_WITHIN`]; rows it could not write by then are counted
//! (`reason="shut_down"`). What a crash loses is said in `docs/valet-keys.md`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use shardgate_shard_router::Clock;
use shardgate_shard_router::catalog::{Audit, Catalog, TimedAudit};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::observability::rate_limited_warning::RateLimitedWarning;
use crate::valet::refusals::RefusalSampler;

/// How often the writer looks for minutes of sampled refusals that are over.
pub const SUMMARY_EVERY: Duration = Duration::from_secs(1);

/// The most rows one catalog transaction of the writer holds.
pub const BATCH_ROWS: usize = 200;

/// How long the first row of a batch waits for others before the batch is written.
pub const FLUSH_EVERY: Duration = Duration::from_millis(100);

/// The least time between two warnings about dropped rows (each kind).
pub const WARN_EVERY: Duration = Duration::from_secs(10);

/// How long a shutdown waits for the queued rows to be written.
pub const CLOSE_WITHIN: Duration = Duration::from_secs(5);

/// The longest target an audit row keeps, in bytes (a valet URL's path, which a client chooses).
pub const MAX_TARGET_BYTES: usize = 4096;

/// The longest request id an audit row keeps, in bytes (a client may send its own `x-request-id`).
pub const MAX_REQUEST_ID_BYTES: usize = 128;

/// Labels of the dropped-rows counter (a closed set).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DropLabels {
    /// `queue_full`, `write_failed` or `shut_down`.
    pub reason: &'static str,
}

/// Valet audit rows dropped, by reason.
pub type DropCounter = Family<DropLabels, Counter>;

/// What the request path and the writer task share.
#[derive(Debug)]
struct Shared {
    dropped: DropCounter,
    /// Which refusals get rows of their own.
    refusals: RefusalSampler,
    /// The clock refusals are sampled by (the minutes).
    clock: Arc<dyn Clock>,
    /// Rows the writer took from the queue and has not finished writing.
    writing: AtomicUsize,
    /// Warnings about dropped rows, each at most once per [`WARN_EVERY`].
    queue_full: RateLimitedWarning,
    write_failed: RateLimitedWarning,
}

impl Shared {
    fn drop_rows(&self, reason: &'static str, rows: usize) {
        self.dropped.get_or_create(&DropLabels { reason }).inc_by(rows as u64);
    }
}

/// The running writer: how to stop it, and its task.
#[derive(Debug)]
struct Writer {
    close: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

/// The queue of valet audit rows and the task that writes them to the catalog.
#[derive(Debug)]
pub struct ValetAudit {
    queue: mpsc::Sender<TimedAudit>,
    shared: Arc<Shared>,
    writer: tokio::sync::Mutex<Option<Writer>>,
}

impl ValetAudit {
    /// Starts the writer on `catalog` with a queue of `capacity` rows (at least 1), sampling
    /// refusals by the minutes of `clock`, and registers
    /// `shardgate_valet_audit_dropped_total{reason}` in `registry`.
    pub fn start(catalog: Catalog, capacity: usize, clock: Arc<dyn Clock>, registry: &mut Registry) -> Self {
        let dropped = DropCounter::default();
        // Every reason shows from the start (at 0), so a dashboard need not wait for the first drop.
        for reason in ["queue_full", "write_failed", "shut_down"] {
            drop(dropped.get_or_create(&DropLabels { reason }));
        }
        registry.register("valet_audit_dropped", "Valet audit rows dropped, by reason", dropped.clone());
        let shared = Arc::new(Shared {
            dropped,
            refusals: RefusalSampler::default(),
            clock,
            writing: AtomicUsize::new(0),
            queue_full: RateLimitedWarning::new(WARN_EVERY),
            write_failed: RateLimitedWarning::new(WARN_EVERY),
        });
        let (queue, rows) = mpsc::channel(capacity.max(1));
        let (close, closed) = oneshot::channel();
        let task = tokio::spawn(drain(catalog, rows, closed, shared.clone()));
        Self { queue, shared, writer: tokio::sync::Mutex::new(Some(Writer { close, task })) }
    }

    /// Queues `audit` (happening now) for the writer; never waits. A full queue drops the row
    /// and counts it.
    pub fn record(&self, mut audit: Audit) {
        truncate(&mut audit.target, MAX_TARGET_BYTES);
        truncate(&mut audit.request_id, MAX_REQUEST_ID_BYTES);
        let row = TimedAudit { at_ms: shardgate_shard_router::now_ms(), audit };
        match self.queue.try_send(row) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(row)) => {
                self.shared.drop_rows("queue_full", 1);
                if self.shared.queue_full.due() {
                    tracing::warn!(
                        action = row.audit.action,
                        queue_rows = self.queue.max_capacity(),
                        "the valet audit queue is full: rows are dropped (counted in shardgate_valet_audit_dropped_total)"
                    );
                }
            }
            Err(mpsc::error::TrySendError::Closed(_)) => self.shared.drop_rows("shut_down", 1),
        }
    }

    /// Queues the row of a refused request with `code`, if it is the first of its code in this
    /// minute; otherwise only counts it for the minute's summary row (queued once the minute is
    /// over, by the writer).
    pub fn record_refusal(&self, audit: Audit, code: &'static str) {
        let (own_row, ended) = self.shared.refusals.admit(code, self.shared.clock.now_ms());
        for summary in ended {
            self.record(summary);
        }
        if own_row {
            self.record(audit);
        }
    }

    /// Rows waiting in the queue.
    pub fn queued(&self) -> usize {
        self.queue.max_capacity() - self.queue.capacity()
    }

    /// Stops taking rows and writes what is queued, for at most [`CLOSE_WITHIN`]; the rows left
    /// then are counted as dropped. Later calls return at once.
    pub async fn close(&self) {
        let Some(Writer { close, mut task }) = self.writer.lock().await.take() else { return };
        for summary in self.shared.refusals.ended(None) {
            self.record(summary);
        }
        let _ = close.send(());
        if tokio::time::timeout(CLOSE_WITHIN, &mut task).await.is_err() {
            task.abort();
            let left = self.queued() + self.shared.writing.swap(0, Ordering::Relaxed);
            self.shared.drop_rows("shut_down", left);
            tracing::warn!(
                rows = left,
                timeout_s = CLOSE_WITHIN.as_secs(),
                "valet audit rows could not be written before shutdown"
            );
        }
    }
}

/// Cuts `text` to at most `max` bytes, on a character boundary.
fn truncate(text: &mut String, max: usize) {
    if text.len() > max {
        let end = (0..=max).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
        text.truncate(end);
    }
}

/// The writer task: batches of up to [`BATCH_ROWS`] rows, each written as soon as it is full or
/// [`FLUSH_EVERY`] after its first row; after `closed`, what is queued, at once; then it ends.
async fn drain(
    catalog: Catalog,
    mut rows: mpsc::Receiver<TimedAudit>,
    mut closed: oneshot::Receiver<()>,
    shared: Arc<Shared>,
) {
    let mut batch = Vec::with_capacity(BATCH_ROWS);
    let mut closing = false;
    let mut summaries = tokio::time::interval(SUMMARY_EVERY);
    summaries.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let received = tokio::select! {
            received = rows.recv_many(&mut batch, BATCH_ROWS) => received,
            _ = summaries.tick(), if !closing => {
                let now_ms = shared.clock.now_ms();
                let ended = shared.refusals.ended(Some(now_ms));
                if ended.is_empty() {
                    continue;
                }
                batch.extend(ended.into_iter().map(|audit| TimedAudit { at_ms: now_ms, audit }));
                batch.len()
            }
            _ = &mut closed, if !closing => {
                closing = true;
                rows.close();
                continue;
            }
        };
        if received == 0 {
            // Closed (or every sender gone) and nothing left.
            return;
        }
        let deadline = tokio::time::Instant::now() + FLUSH_EVERY;
        while batch.len() < BATCH_ROWS && !closing {
            let room = BATCH_ROWS - batch.len();
            tokio::select! {
                received = rows.recv_many(&mut batch, room) => if received == 0 { break },
                () = tokio::time::sleep_until(deadline) => break,
                _ = &mut closed => {
                    closing = true;
                    rows.close();
                }
            }
        }
        shared.writing.store(batch.len(), Ordering::Relaxed);
        if let Err(e) = catalog.append_audits(&batch).await {
            shared.drop_rows("write_failed", batch.len());
            if shared.write_failed.due() {
                tracing::warn!(error = %e, rows = batch.len(), "could not write valet audit rows; they are dropped");
            }
        }
        shared.writing.store(0, Ordering::Relaxed);
        batch.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::SecretString;
    use shardgate_shard_router::catalog::AuditFilter;
    use shardgate_shard_router::db::{Database, PoolConfig, Schema};

    fn audit(i: usize) -> Audit {
        Audit {
            actor: "valet".into(),
            tenant: Some("acme".into()),
            action: "valet.download",
            target: format!("/valet/acme/file-{i}"),
            request_id: format!("req-{i}"),
            client_request_id: None,
            client_address: None,
        }
    }

    fn dropped(registry: &Registry, reason: &str) -> u64 {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
        let line = format!("shardgate_valet_audit_dropped_total{{reason=\"{reason}\"}} ");
        text.lines().find_map(|l| l.strip_prefix(&line)).map_or(0, |n| n.parse().unwrap())
    }

    async fn sqlite_catalog(dir: &tempfile::TempDir) -> Catalog {
        let url = SecretString::from(format!("sqlite://{}", dir.path().join("catalog.db").display()));
        let db = Database::open(&url, &PoolConfig::default()).unwrap();
        db.migrate(Schema::Catalog).await.unwrap();
        Catalog::new(db)
    }

    async fn valet_rows(catalog: &Catalog) -> Vec<String> {
        let valet = AuditFilter { actor: Some("valet".to_owned()), ..AuditFilter::default() };
        let entries = catalog.list_audit(&valet, None, 10_000).await.unwrap();
        entries.into_iter().map(|e| e.request_id).collect()
    }

    #[tokio::test]
    async fn a_full_queue_drops_and_counts_rows_instead_of_waiting() {
        // A catalog nobody listens for: every write fails.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let url = SecretString::from(format!("postgres://postgres@127.0.0.1:{port}/nowhere"));
        let config = PoolConfig { acquire_timeout: Duration::from_millis(200), ..PoolConfig::default() };
        let catalog = Catalog::new(Database::open(&url, &config).unwrap());
        let mut registry = Registry::with_prefix("shardgate");
        let writer = ValetAudit::start(catalog, 4, Arc::new(shardgate_shard_router::SystemClock), &mut registry);
        // `record` never awaits, so on this single-threaded runtime the writer cannot take a row
        // before the loop ends: four rows fit, the rest are dropped at once.
        for i in 0..100 {
            writer.record(audit(i));
        }
        assert_eq!(writer.queued(), 4);
        assert_eq!(dropped(&registry, "queue_full"), 96);
        // The writer takes the four, fails to write them, and counts them.
        writer.close().await;
        assert_eq!(dropped(&registry, "write_failed") + dropped(&registry, "shut_down"), 4);
        writer.record(audit(100));
        assert_eq!(dropped(&registry, "shut_down") + dropped(&registry, "write_failed"), 5, "closed: counted");
    }

    #[tokio::test]
    async fn shutdown_writes_every_queued_row() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = sqlite_catalog(&dir).await;
        let mut registry = Registry::with_prefix("shardgate");
        let writer =
            ValetAudit::start(catalog.clone(), 1000, Arc::new(shardgate_shard_router::SystemClock), &mut registry);
        let rows = 2 * BATCH_ROWS + 7;
        for i in 0..rows {
            writer.record(audit(i));
        }
        writer.close().await;
        let expected: Vec<String> = (0..rows).map(|i| format!("req-{i}")).collect();
        assert_eq!(valet_rows(&catalog).await, expected, "all of them, in order");
        assert_eq!(dropped(&registry, "queue_full") + dropped(&registry, "write_failed"), 0);
    }

    #[test]
    fn long_targets_are_cut_on_a_character_boundary() {
        let mut text = "é".repeat(3000);
        truncate(&mut text, MAX_TARGET_BYTES);
        assert_eq!(text.len(), MAX_TARGET_BYTES);
        let mut text = format!("a{}", "é".repeat(3000));
        truncate(&mut text, MAX_TARGET_BYTES);
        assert_eq!((text.len(), text.chars().last()), (MAX_TARGET_BYTES - 1, Some('é')));
        let mut short = "/valet/acme/x".to_owned();
        truncate(&mut short, MAX_TARGET_BYTES);
        assert_eq!(short, "/valet/acme/x");
    }
}
