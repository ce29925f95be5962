//! The recorder: many client tasks note their calls in one shared [`History`].

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::checker::{Verdict, check};
use super::operation::{Call, Operation};

/// A client history being recorded: cheap to clone (one `Arc`), safe to use from many tokio tasks
/// at once. Times are nanoseconds since the history was created, on the monotonic clock.
///
/// Call [`History::invoke`] right before sending a request and finish the returned [`Pending`]
/// right after the answer was read: the interval must contain the moment the server acted.
#[derive(Debug, Clone)]
pub struct History {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    base: Instant,
    operations: Mutex<Vec<Operation>>,
}

/// A call in flight: finish it with `ok(...)`, [`Pending::unknown`] or [`Pending::refused`]. One
/// dropped unfinished (a task cancelled or panicking mid-request) is recorded as of unknown
/// outcome, since its request may have reached the server.
#[derive(Debug)]
#[must_use = "finish the call with ok(...), unknown() or refused()"]
pub struct Pending<'h, R: Request> {
    history: &'h History,
    key: String,
    invoked: u64,
    request: Option<R>,
}

/// What a client is about to ask, before it knows the answer: [`PutRequest`], [`GetRequest`] or
/// [`DeleteRequest`].
pub trait Request {
    /// The call recorded when the outcome stays unknown (its result fields are not read).
    fn unknown_outcome(self) -> Call;
}

/// An unconditional write of `value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PutRequest {
    /// The value to write.
    pub value: String,
}

/// A read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GetRequest;

/// A delete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeleteRequest;

impl Request for PutRequest {
    fn unknown_outcome(self) -> Call {
        Call::Put { value: self.value }
    }
}

impl Request for GetRequest {
    fn unknown_outcome(self) -> Call {
        Call::Get { observed: None }
    }
}

impl Request for DeleteRequest {
    fn unknown_outcome(self) -> Call {
        Call::Delete { found: false }
    }
}

impl Default for History {
    fn default() -> Self {
        Self::new()
    }
}

impl History {
    /// An empty history whose clock starts now.
    pub fn new() -> Self {
        Self { shared: Arc::new(Shared { base: Instant::now(), operations: Mutex::new(Vec::new()) }) }
    }

    /// Notes that `request` on `key` is being sent now.
    pub fn invoke<R: Request>(&self, key: impl Into<String>, request: R) -> Pending<'_, R> {
        Pending { history: self, key: key.into(), invoked: self.now(), request: Some(request) }
    }

    /// The operations finished so far, in the order they finished.
    pub fn operations(&self) -> Vec<Operation> {
        self.lock().clone()
    }

    /// How many operations have finished.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no operation has finished yet.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Checks the operations finished so far: [`check`] on [`History::operations`].
    pub fn check(&self, time_limit: Duration) -> Verdict {
        check(&self.operations(), time_limit)
    }

    /// Nanoseconds since the history was created.
    fn now(&self) -> u64 {
        u64::try_from(self.shared.base.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn record(&self, operation: Operation) {
        self.lock().push(operation);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Operation>> {
        // A panic while pushing cannot leave the vector half-written: the data stays usable.
        self.shared.operations.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<R: Request> Pending<'_, R> {
    /// The client never learned the outcome (timeout, `write_outcome_unknown`, connection error).
    pub fn unknown(mut self) {
        self.finish_unknown();
    }

    /// The server definitely did not apply the request (a `4xx`, a `503` saying so): nothing is
    /// recorded, since it took no effect.
    pub fn refused(mut self) {
        self.request = None;
    }

    fn finish_unknown(&mut self) {
        if let Some(request) = self.request.take() {
            self.finish(request.unknown_outcome(), None);
        }
    }

    fn finish(&mut self, call: Call, completed: Option<u64>) {
        let key = std::mem::take(&mut self.key);
        self.history.record(Operation { key, call, invoked: self.invoked, completed });
    }

    fn complete(&mut self, call: impl FnOnce(R) -> Call) {
        if let Some(request) = self.request.take() {
            let completed = self.history.now();
            self.finish(call(request), Some(completed));
        }
    }
}

impl Pending<'_, PutRequest> {
    /// The write was acknowledged.
    pub fn ok(mut self) {
        self.complete(|request| Call::Put { value: request.value });
    }
}

impl Pending<'_, GetRequest> {
    /// The read returned `observed` (`None` for `404`).
    pub fn ok(mut self, observed: Option<String>) {
        self.complete(|_| Call::Get { observed });
    }
}

impl Pending<'_, DeleteRequest> {
    /// The delete was answered: `found` is `true` for `204`, `false` for `404`.
    pub fn ok(mut self, found: bool) {
        self.complete(|_| Call::Delete { found });
    }
}

impl<R: Request> Drop for Pending<'_, R> {
    fn drop(&mut self) {
        self.finish_unknown();
    }
}
