//! Smart batching on the shard path (DESIGN.md §5, the resource-governance pattern's "buffering
//! with asynchronous batching"): point operations that meet on one shard share its statements
//! and its commits.
//!
//! Each shard database has one [`Batcher`] per kind of operation and table ([`Batches`]). There
//! is no timer: an operation that finds its batcher idle leaves at once, alone; operations that
//! arrive while a batch is in flight queue, and the queue leaves as the next batch (at most
//! `max_batch`) when that batch returns. So a lone request pays no wait, and a busy shard pays one
//! statement and one commit for many operations.
//!
//! A batch runs as one statement through the shard's health (one bulkhead slot, one deadline,
//! one judgement by the breaker) and each of its operations gets its own answer
//! ([`BatchReply`]). A batch that fails as a whole answers each operation as a lone statement
//! would have been answered: the same refusal (a missed deadline, an open breaker, a broken
//! connection) for every one, or, when the database refused the statement itself (an error
//! that is an answer, not a failure of the database), [`BatchReply::Alone`]: the operation
//! runs again on its own. The statements and how each operation's answer is read out of the
//! batch's rows are the stores' (`records`); this module only gathers and hands out.
//!
//! Traces: each batch runs in a `shard.batch` span (`TRACE` level: made only when traces are
//! on). A lone operation's batch is a child of its caller's span; a queued one's links (as
//! `follows_from`) the span of every operation in it, each of which may be in another trace.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;
use tracing::{Instrument, Span};

use crate::storage::health::{Refusal, is_health_failure};

/// The `[storage.batching]` configuration section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BatchingConfig {
    /// Batch point reads and writes of records that meet on one shard: while a
    /// batch is in flight on a shard, the next operations queue and leave together as one
    /// statement and one commit when it returns; an operation that finds its shard idle leaves
    /// at once. False: every operation is sent alone. Default true.
    pub enabled: bool,
    /// Most operations in one batch. At least 1 (1: every operation alone), at most 1000.
    /// Default 64.
    pub max_batch: u32,
    /// Most batches of one kind in flight on one shard at once: operations queue while this
    /// many are. 1 to 64. Default 2 (a shard database runs one batch on one core; two keep two
    /// of its cores busy). On two cores, 1 served more `PUT`s (see `docs/operations.md`).
    pub max_in_flight: u32,
}

impl Default for BatchingConfig {
    fn default() -> Self {
        Self { enabled: true, max_batch: 64, max_in_flight: 2 }
    }
}

impl BatchingConfig {
    /// The most operations a batch takes: 1 (every operation alone) when batching is off.
    pub fn limit(&self) -> usize {
        if self.enabled { usize::try_from(self.max_batch.clamp(1, MAX_BATCH)).unwrap_or(1) } else { 1 }
    }

    /// The most batches of one kind in flight on one shard.
    pub fn in_flight(&self) -> usize {
        usize::try_from(self.max_in_flight.clamp(1, 64)).unwrap_or(1)
    }

    /// Checks the settings; the message names the setting.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=MAX_BATCH).contains(&self.max_batch) {
            return Err(format!("storage.batching.max_batch must be from 1 to {MAX_BATCH}, not {}", self.max_batch));
        }
        if !(1..=64).contains(&self.max_in_flight) {
            return Err(format!("storage.batching.max_in_flight must be from 1 to 64, not {}", self.max_in_flight));
        }
        Ok(())
    }
}

/// The largest `max_batch`: a batch's operations travel as one parameter.
const MAX_BATCH: u32 = 1000;

/// What an operation in a batch is answered.
#[derive(Debug)]
pub enum BatchReply<T> {
    /// Its own outcome, and its share of the batch's statement time (for the load picture).
    Done(T, Duration),
    /// The batch was refused or failed as a whole; this is what a lone statement would have
    /// been told.
    Refused(Refusal, Duration),
    /// Run it alone (batching is off, or the database refused the batch's statement: each
    /// operation then gets the answer its own statement gets).
    Alone,
}

/// What a batch's run answers: one reply per operation, in order, or the batch's failure.
pub type BatchOutcome<T> = Result<Vec<T>, Refusal>;

/// The kinds of batches, as named in `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchKind {
    /// Point reads of records.
    Read,
    /// Unconditional writes of records.
    Write,
    /// Conditional writes (the compare-and-swap after the read) and deletes of records.
    Conditional,
}

impl BatchKind {
    /// Every kind.
    pub const ALL: [BatchKind; 3] = [BatchKind::Read, BatchKind::Write, BatchKind::Conditional];

    /// As named in `/metrics`.
    pub fn as_str(self) -> &'static str {
        match self {
            BatchKind::Read => "read",
            BatchKind::Write => "write",
            BatchKind::Conditional => "conditional",
        }
    }
}

/// The upper bounds of the batch size histogram's buckets.
pub const SIZE_BUCKETS: [u64; 8] = [1, 2, 4, 8, 16, 32, 64, 128];

/// How many batches of each size a batcher sent: a cumulative-ready histogram.
#[derive(Debug, Default)]
pub struct SizeHistogram {
    /// Batches per bucket of [`SIZE_BUCKETS`], and the last for larger ones.
    buckets: [AtomicU64; SIZE_BUCKETS.len() + 1],
    /// Operations in all batches.
    sum: AtomicU64,
}

impl SizeHistogram {
    fn observe(&self, size: usize) {
        let size = size as u64;
        let bucket = SIZE_BUCKETS.iter().position(|b| size <= *b).unwrap_or(SIZE_BUCKETS.len());
        self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        self.sum.fetch_add(size, Ordering::Relaxed);
    }

    /// Batches per bucket (not cumulative; the last counts batches above the largest bound),
    /// and the operations in all of them.
    pub fn read(&self) -> (Vec<u64>, u64) {
        (self.buckets.iter().map(|b| b.load(Ordering::Relaxed)).collect(), self.sum.load(Ordering::Relaxed))
    }

    /// Batches sent.
    pub fn count(&self) -> u64 {
        self.buckets.iter().map(|b| b.load(Ordering::Relaxed)).sum()
    }
}

/// One queued operation and where its answer goes.
struct Pending<Op, Out> {
    op: Op,
    reply: oneshot::Sender<BatchReply<Out>>,
    /// The caller's span, kept when batch spans are made (traces on), else none.
    caller: Span,
}

/// How an operation enters a batcher.
enum Entry<Op, Out> {
    /// Sent at once, alone, from its caller's task.
    Alone(Op),
    /// Queued: its answer comes from a drain task.
    Queued(oneshot::Receiver<BatchReply<Out>>),
}

struct Queue<Op, Out> {
    waiting: VecDeque<Pending<Op, Out>>,
    /// Batches in flight (tasks draining the queue).
    running: usize,
}

/// Gathers the operations of one kind on one shard into batches: see the module's doc.
pub struct Batcher<Op, Out> {
    queue: Mutex<Queue<Op, Out>>,
    sizes: SizeHistogram,
}

impl<Op, Out> std::fmt::Debug for Batcher<Op, Out> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batcher").field("batches", &self.sizes.count()).finish_non_exhaustive()
    }
}

impl<Op, Out> Default for Batcher<Op, Out> {
    fn default() -> Self {
        Self { queue: Mutex::new(Queue { waiting: VecDeque::new(), running: 0 }), sizes: SizeHistogram::default() }
    }
}

impl<Op: Send + 'static, Out: Send + 'static> Batcher<Op, Out> {
    /// The sizes of the batches sent so far.
    pub fn sizes(&self) -> &SizeHistogram {
        &self.sizes
    }

    /// Sends `op` and waits for its answer. If fewer than `in_flight` batches are in flight,
    /// `op` is sent at once, alone, from the caller's own task (a lone operation costs what it
    /// costs unbatched); otherwise it queues. When a batch returns and operations wait, a task
    /// drains the queue: it sends what waits (at most `limit` operations) as one batch through
    /// `run`, hands out the answers, and goes on while operations wait. An operation whose
    /// caller gave up before its batch left is not sent.
    ///
    /// `run` answers a batch with one reply per operation, in order, or fails it as a whole
    /// ([`BatchOutcome`]); it is given the batch's operations and runs them as one statement.
    pub async fn submit<F, Fut>(self: &Arc<Self>, op: Op, (limit, in_flight): (usize, usize), run: F) -> BatchReply<Out>
    where
        F: Fn(Vec<Op>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = (BatchOutcome<Out>, Duration)> + Send + 'static,
    {
        let entry = {
            let mut queue = self.queue.lock();
            if queue.running < in_flight.max(1) {
                queue.running += 1;
                Entry::Alone(op)
            } else {
                let (reply, answer) = oneshot::channel();
                let caller = if batch_spans() { Span::current() } else { Span::none() };
                queue.waiting.push_back(Pending { op, reply, caller });
                Entry::Queued(answer)
            }
        };
        let answer = match entry {
            Entry::Queued(answer) => answer,
            Entry::Alone(op) => {
                // Sent alone, from here; whatever queues meanwhile is handed to a drain task
                // when this batch ends (or is given up on: the hand-over is the guard's drop).
                self.sizes.observe(1);
                let statement = run(vec![op]);
                let turn = Turn { batcher: self.clone(), limit: limit.max(1), run: Some(run) };
                let (outcome, elapsed) =
                    crate::in_trace_span!(tracing::trace_span!("shard.batch", size = 1_usize), statement);
                drop(turn);
                return replies(outcome, elapsed, 1).pop().unwrap_or(BatchReply::Alone);
            }
        };
        // The drain task answers every operation it takes; an operation it dropped unanswered
        // (it panicked) is told what a statement abandoned in flight is told.
        answer.await.unwrap_or_else(|_| {
            BatchReply::Refused(
                Refusal::Interrupted {
                    reason: "the batch was abandoned".to_owned(),
                    retry_after: Duration::from_secs(1),
                },
                Duration::ZERO,
            )
        })
    }

    /// Sends what waits, batch after batch, until nothing does; then this batch in flight ends.
    async fn drain<F, Fut>(self: Arc<Self>, limit: usize, run: F)
    where
        F: Fn(Vec<Op>) -> Fut,
        Fut: Future<Output = (BatchOutcome<Out>, Duration)>,
    {
        // If `run` panics, the drain is not counted as running forever: the next operation
        // starts a new one.
        struct Stop<'a, Op, Out>(&'a Mutex<Queue<Op, Out>>);
        impl<Op, Out> Drop for Stop<'_, Op, Out> {
            fn drop(&mut self) {
                if std::thread::panicking() {
                    self.0.lock().running -= 1;
                }
            }
        }
        let _stop = Stop(&self.queue);
        loop {
            let batch: Vec<Pending<Op, Out>> = {
                let mut queue = self.queue.lock();
                let batch = queue.take(limit);
                if batch.is_empty() {
                    queue.running -= 1;
                    return;
                }
                batch
            };
            self.sizes.observe(batch.len());
            let span = tracing::trace_span!(parent: None, "shard.batch", size = batch.len());
            let mut ops = Vec::with_capacity(batch.len());
            let mut senders = Vec::with_capacity(batch.len());
            for pending in batch {
                span.follows_from(&pending.caller);
                ops.push(pending.op);
                senders.push(pending.reply);
            }
            let count = senders.len();
            let (outcome, elapsed) = run(ops).instrument(span).await;
            for (sender, reply) in senders.into_iter().zip(replies(outcome, elapsed, count)) {
                let _ = sender.send(reply);
            }
        }
    }
}

/// Whether `shard.batch` spans are made (traces on): only then is a queued operation's span
/// kept for its batch to link.
fn batch_spans() -> bool {
    tracing::enabled!(kind: tracing::metadata::Kind::SPAN, target: "shardgate_shard_router::storage::batch", tracing::Level::TRACE)
}

impl<Op, Out> Queue<Op, Out> {
    /// The next batch: at most `limit` waiting operations whose callers still wait.
    fn take(&mut self, limit: usize) -> Vec<Pending<Op, Out>> {
        let mut batch = Vec::with_capacity(limit.min(self.waiting.len()));
        while batch.len() < limit
            && let Some(pending) = self.waiting.pop_front()
        {
            if !pending.reply.is_closed() {
                batch.push(pending);
            }
        }
        batch
    }
}

/// A batch sent from its caller's task: when it ends (or its caller gives up on it), what
/// queued meanwhile goes on in a drain task, which takes over its place in flight; if nothing
/// did, the place is free.
struct Turn<Op, Out, F, Fut>
where
    Op: Send + 'static,
    Out: Send + 'static,
    F: Fn(Vec<Op>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = (BatchOutcome<Out>, Duration)> + Send + 'static,
{
    batcher: Arc<Batcher<Op, Out>>,
    limit: usize,
    run: Option<F>,
}

impl<Op, Out, F, Fut> Drop for Turn<Op, Out, F, Fut>
where
    Op: Send + 'static,
    Out: Send + 'static,
    F: Fn(Vec<Op>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = (BatchOutcome<Out>, Duration)> + Send + 'static,
{
    fn drop(&mut self) {
        let mut queue = self.batcher.queue.lock();
        let waiting = queue.waiting.iter().any(|p| !p.reply.is_closed());
        match (waiting, self.run.take(), tokio::runtime::Handle::try_current()) {
            (true, Some(run), Ok(runtime)) => {
                drop(queue);
                runtime.spawn(self.batcher.clone().drain(self.limit, run));
            }
            _ => queue.running -= 1,
        }
    }
}

/// The replies to the `count` operations of a batch that ran with `outcome` in `elapsed`:
/// each operation's own answer and its share of the time; for a batch refused as a whole, the
/// same refusal for each; for a batch whose statement the database refused (an answer, not a
/// failure of its health), [`BatchReply::Alone`] for each, so each gets the answer that is its
/// own.
fn replies<Out>(outcome: BatchOutcome<Out>, elapsed: Duration, count: usize) -> Vec<BatchReply<Out>> {
    let share = elapsed / u32::try_from(count.max(1)).unwrap_or(u32::MAX);
    match outcome {
        Ok(outs) => outs.into_iter().map(|out| BatchReply::Done(out, share)).collect(),
        Err(Refusal::Sql(e)) if count > 1 && !is_health_failure(&e) => {
            tracing::debug!(error = %e, operations = count, "a batch failed; its operations run alone");
            (0..count).map(|_| BatchReply::Alone).collect()
        }
        Err(refusal) => {
            let mut replies: Vec<BatchReply<Out>> =
                (1..count).map(|_| BatchReply::Refused(replicate(&refusal), share)).collect();
            replies.push(BatchReply::Refused(refusal, share));
            replies
        }
    }
}

/// The same refusal again, for another operation of a batch refused as a whole: of the same
/// kind, so that it maps to the same answer (503, 504 `write_outcome_unknown`, ...).
fn replicate(refusal: &Refusal) -> Refusal {
    match refusal {
        Refusal::Open { state, reason, retry_after } => {
            Refusal::Open { state, reason: reason.clone(), retry_after: *retry_after }
        }
        Refusal::Busy(limit) => Refusal::Busy(*limit),
        Refusal::Deadline(deadline) => Refusal::Deadline(*deadline),
        Refusal::Interrupted { reason, retry_after } => {
            Refusal::Interrupted { reason: reason.clone(), retry_after: *retry_after }
        }
        Refusal::Sql(e) => Refusal::Sql(match e {
            sqlx::Error::PoolTimedOut => sqlx::Error::PoolTimedOut,
            sqlx::Error::PoolClosed => sqlx::Error::PoolClosed,
            sqlx::Error::Io(io) => sqlx::Error::Io(std::io::Error::new(io.kind(), io.to_string())),
            // A broken or refused connection, a cancelled statement: still a failure of the
            // database's health ([`is_health_failure`]), told in the driver's words.
            other => sqlx::Error::Protocol(other.to_string()),
        }),
    }
}

/// A record's address, for a point read.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct RowKey {
    /// Tenant.
    #[serde(rename = "t")]
    pub tenant: String,
    /// Collection.
    #[serde(rename = "c")]
    pub collection: String,
    /// Key.
    #[serde(rename = "k")]
    pub key: String,
}

/// A record's address and the values of an unconditional write of it (owned: it waits in a
/// queue).
#[derive(Debug, Clone, Serialize)]
pub struct RowWrite {
    /// The record.
    #[serde(flatten)]
    pub address: RowKey,
    /// The row's vshard tag.
    #[serde(rename = "v")]
    pub tag: i64,
    /// The write's time (ms).
    #[serde(rename = "n")]
    pub now_ms: i64,
    /// The value (JSON text).
    #[serde(rename = "val")]
    pub value: String,
    /// The map epoch it was routed on.
    #[serde(rename = "e")]
    pub epoch: i64,
}

/// What a compare-and-swap write does to a record: the write a conditional put or a delete sends
/// once it has read the record (or, for an unconditional delete, without reading).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Swap {
    /// Insert it (version 1) unless the key exists.
    #[serde(rename = "i")]
    Insert,
    /// Write the value over version `from` (reviving a tombstone).
    #[serde(rename = "u")]
    Update,
    /// Tombstone version `from`.
    #[serde(rename = "d")]
    Delete,
    /// Tombstone it if it is live, whatever its version.
    #[serde(rename = "a")]
    DeleteLive,
}

impl RowKey {
    /// Tenant, collection and key, as a lone statement binds them.
    pub(crate) fn borrowed(&self) -> [&str; 3] {
        [&self.tenant, &self.collection, &self.key]
    }
}

/// A compare-and-swap write of one record (owned: it waits in a queue).
#[derive(Debug, Clone, Serialize)]
pub struct RowSwap {
    /// The record.
    #[serde(flatten)]
    pub address: RowKey,
    /// What the write does.
    #[serde(rename = "x")]
    pub swap: Swap,
    /// The version it must find ([`Swap::Update`], [`Swap::Delete`]).
    #[serde(rename = "ver")]
    pub from: Option<i64>,
    /// The value (JSON text) it writes ([`Swap::Insert`], [`Swap::Update`]).
    #[serde(rename = "val")]
    pub value: Option<String>,
    /// The row's vshard tag.
    #[serde(rename = "v")]
    pub tag: i64,
    /// The write's time (ms).
    #[serde(rename = "n")]
    pub now_ms: i64,
    /// The map epoch it was routed on.
    #[serde(rename = "e")]
    pub epoch: i64,
}

/// A record's row as a point read returns it.
#[derive(Debug, Clone)]
pub struct RowRead {
    /// Key.
    pub key: String,
    /// Version.
    pub version: i64,
    /// Last write (ms).
    pub updated_at: i64,
    /// The value (JSON text).
    pub value: String,
    /// Whether it is a tombstone.
    pub deleted: bool,
}

/// What an unconditional write returns: the version and the version the record last became
/// live at; `None` when a fence refused it.
pub type Written = Option<(i64, i64)>;

/// The batchers of one shard database, shared by every clone of its
/// [`crate::storage::db::Database`].
#[derive(Debug)]
pub struct Batches {
    config: BatchingConfig,
    /// Point reads of `records` and of `spread_records`.
    pub(crate) reads: [Arc<Batcher<RowKey, Option<RowRead>>>; 2],
    /// Unconditional writes of `records` and of `spread_records`.
    pub(crate) writes: [Arc<Batcher<RowWrite, Written>>; 2],
    /// Compare-and-swap writes of `records` and of `spread_records`: the new version, `None`
    /// when the version was not the one expected or a fence refused.
    pub(crate) swaps: [Arc<Batcher<RowSwap, Option<i64>>>; 2],
}

impl Batches {
    /// Batchers configured by `config`.
    pub fn new(config: BatchingConfig) -> Self {
        Self { config, reads: Default::default(), writes: Default::default(), swaps: Default::default() }
    }

    /// Their settings.
    pub fn config(&self) -> BatchingConfig {
        self.config
    }

    /// The sizes of the batches of `kind` sent so far, over both tables.
    pub fn sizes(&self, kind: BatchKind) -> (Vec<u64>, u64) {
        let histograms: Vec<&SizeHistogram> = match kind {
            BatchKind::Read => self.reads.iter().map(|b| b.sizes()).collect(),
            BatchKind::Write => self.writes.iter().map(|b| b.sizes()).collect(),
            BatchKind::Conditional => self.swaps.iter().map(|b| b.sizes()).collect(),
        };
        let mut buckets = vec![0; SIZE_BUCKETS.len() + 1];
        let mut sum = 0;
        for histogram in histograms {
            let (counts, total) = histogram.read();
            buckets.iter_mut().zip(counts).for_each(|(b, c)| *b += c);
            sum += total;
        }
        (buckets, sum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run that answers each operation with itself doubled, after `pause`, and records the
    /// sizes of the batches it was given.
    fn doubling(
        pause: Duration,
        seen: Arc<Mutex<Vec<usize>>>,
    ) -> impl Fn(Vec<u64>) -> futures::future::BoxFuture<'static, (BatchOutcome<u64>, Duration)> + Send + Sync + 'static
    {
        move |ops: Vec<u64>| {
            let seen = seen.clone();
            Box::pin(async move {
                seen.lock().push(ops.len());
                tokio::time::sleep(pause).await;
                (Ok(ops.iter().map(|o| o * 2).collect()), pause)
            })
        }
    }

    #[tokio::test]
    async fn a_lone_operation_leaves_alone_and_operations_that_wait_leave_together() {
        let batcher: Arc<Batcher<u64, u64>> = Arc::default();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let run = doubling(Duration::from_millis(50), seen.clone());
        match batcher.submit(1, (64, 1), run).await {
            BatchReply::Done(2, _) => {}
            other => panic!("{other:?}"),
        }
        assert_eq!(*seen.lock(), [1], "an idle batcher sends an operation at once, alone");
        let answers = futures::future::join_all((0..10u64).map(|i| {
            let batcher = batcher.clone();
            let run = doubling(Duration::from_millis(50), seen.clone());
            async move { batcher.submit(i, (4, 1), run).await }
        }))
        .await;
        for (i, answer) in answers.into_iter().enumerate() {
            match answer {
                BatchReply::Done(out, share) => {
                    assert_eq!(out, 2 * i as u64, "each operation gets its own answer");
                    assert!(share <= Duration::from_millis(50));
                }
                other => panic!("{other:?}"),
            }
        }
        let sizes = seen.lock().clone();
        assert_eq!(sizes.iter().sum::<usize>(), 11);
        assert_eq!(
            &sizes[1..],
            [1, 4, 4, 1],
            "the first of the ten leaves at once, alone; the nine that waited in batches of at most 4"
        );
        assert_eq!(batcher.sizes().count(), 5);
    }

    #[tokio::test]
    async fn a_batch_refused_as_a_whole_refuses_each_operation_the_same_way() {
        let batcher: Arc<Batcher<u64, u64>> = Arc::default();
        let deadline = |_: Vec<u64>| async { (Err(Refusal::Deadline(Duration::from_secs(5))), Duration::from_secs(5)) };
        let answers = futures::future::join_all((0..3).map(|i| batcher.submit(i, (64, 1), deadline))).await;
        for answer in answers {
            assert!(matches!(answer, BatchReply::Refused(Refusal::Deadline(_), _)), "{answer:?}");
        }
        let constraint = |_: Vec<u64>| async {
            tokio::time::sleep(Duration::from_millis(10)).await;
            (Err(Refusal::Sql(sqlx::Error::RowNotFound)), Duration::from_millis(10))
        };
        let alone = batcher.submit(0, (64, 1), constraint).await;
        assert!(
            matches!(alone, BatchReply::Refused(Refusal::Sql(sqlx::Error::RowNotFound), _)),
            "a batch of one is a lone statement: its answer stands"
        );
        let answers = futures::future::join_all((0..3).map(|i| batcher.submit(i, (64, 1), constraint))).await;
        assert!(matches!(answers[0], BatchReply::Refused(Refusal::Sql(sqlx::Error::RowNotFound), _)), "alone");
        for answer in &answers[1..] {
            assert!(matches!(answer, BatchReply::Alone), "the database refused the batch: each runs alone: {answer:?}");
        }
    }

    #[tokio::test]
    async fn an_operation_given_up_before_its_batch_left_is_not_sent() {
        let batcher: Arc<Batcher<u64, u64>> = Arc::default();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let first = tokio::spawn({
            let (batcher, run) = (batcher.clone(), doubling(Duration::from_millis(100), seen.clone()));
            async move { batcher.submit(1, (64, 1), run).await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        let gave_up = tokio::time::timeout(
            Duration::from_millis(10),
            batcher.submit(2, (64, 1), doubling(Duration::from_millis(100), seen.clone())),
        )
        .await;
        assert!(gave_up.is_err());
        assert!(matches!(first.await.unwrap(), BatchReply::Done(2, _)));
        let last = batcher.submit(3, (64, 1), doubling(Duration::from_millis(1), seen.clone())).await;
        assert!(matches!(last, BatchReply::Done(6, _)));
        assert_eq!(*seen.lock(), [1, 1], "the operation given up on was never sent");
    }

    #[test]
    fn the_size_histogram_puts_each_batch_in_its_bucket() {
        let histogram = SizeHistogram::default();
        for size in [1, 2, 3, 64, 65, 500] {
            histogram.observe(size);
        }
        let (buckets, sum) = histogram.read();
        assert_eq!(buckets, [1, 1, 1, 0, 0, 0, 1, 1, 1]);
        assert_eq!(sum, 635);
    }

    #[test]
    fn batching_off_sends_every_operation_alone() {
        assert_eq!(BatchingConfig { enabled: false, ..BatchingConfig::default() }.limit(), 1);
        assert_eq!(BatchingConfig::default().limit(), 64);
        assert!(BatchingConfig { max_batch: 0, ..BatchingConfig::default() }.validate().is_err());
        assert!(BatchingConfig { max_batch: 1001, ..BatchingConfig::default() }.validate().is_err());
        assert!(BatchingConfig { max_in_flight: 0, ..BatchingConfig::default() }.validate().is_err());
    }
}
