//! The check of a whole history: split by key, each key searched on its own (in parallel), one
//! verdict.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::explain::explain;
use super::operation::Operation;
use super::search::{KeyHistory, Limits, Outcome};

/// What [`check`] concluded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every key's operations have a linearization.
    Linearizable {
        /// How many keys were checked.
        keys: usize,
        /// How many operations were checked (reads of unknown outcome are not counted).
        operations: usize,
    },
    /// One key's operations have none.
    Violation {
        /// The key.
        key: String,
        /// A readable account: where the search got stuck, and the key's operations around it
        /// with their times and results.
        explanation: String,
    },
    /// The time limit ran out before this key was decided (and no violation was found).
    Undecided {
        /// The key being searched when time ran out.
        key: String,
    },
}

impl Verdict {
    /// Whether the history was found linearizable.
    pub fn is_linearizable(&self) -> bool {
        matches!(self, Self::Linearizable { .. })
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Linearizable { keys, operations } => {
                write!(f, "linearizable: {operations} operations on {keys} keys")
            }
            Self::Violation { explanation, .. } => write!(f, "not linearizable: {explanation}"),
            Self::Undecided { key } => write!(f, "undecided: the time limit ran out while checking key {key:?}"),
        }
    }
}

/// Checks that `operations` are linearizable, each key being a register that starts absent.
///
/// Keys are independent (linearizability is local), so each key is searched on its own, on as
/// many threads as the machine has cores, biggest keys first. `time_limit` bounds the whole
/// check: a key still being searched when it runs out makes the verdict [`Verdict::Undecided`],
/// unless another key was found violated.
pub fn check(operations: &[Operation], time_limit: Duration) -> Verdict {
    let deadline = Instant::now() + time_limit;
    let mut keys = by_key(operations);
    keys.sort_by(|a, b| b.operations.len().cmp(&a.operations.len()).then_with(|| a.key.cmp(b.key)));
    let outcomes = search_all(&keys, deadline);
    verdict(&keys, outcomes)
}

fn by_key(operations: &[Operation]) -> Vec<KeyHistory<'_>> {
    let mut grouped: HashMap<&str, Vec<&Operation>> = HashMap::new();
    for operation in operations {
        grouped.entry(operation.key.as_str()).or_default().push(operation);
    }
    grouped.into_iter().map(|(key, operations)| KeyHistory::new(key, operations)).collect()
}

/// Searches every key, on worker threads taking keys in order; a violation stops the others.
fn search_all(keys: &[KeyHistory<'_>], deadline: Instant) -> Vec<(usize, Outcome)> {
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let outcomes = Mutex::new(Vec::with_capacity(keys.len()));
    let limits = Limits { deadline, stop: &stop };
    let workers = std::thread::available_parallelism().map_or(1, |cores| cores.get()).min(keys.len());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index >= keys.len() {
                        break;
                    }
                    let outcome = keys[index].search(limits);
                    if matches!(outcome, Outcome::Violation(_)) {
                        stop.store(true, Ordering::Relaxed);
                    }
                    outcomes.lock().unwrap_or_else(PoisonError::into_inner).push((index, outcome));
                }
            });
        }
    });
    outcomes.into_inner().unwrap_or_else(PoisonError::into_inner)
}

/// One verdict from the keys' outcomes: the violation of the smallest key, else the smallest key
/// left undecided, else linearizable.
fn verdict(keys: &[KeyHistory<'_>], outcomes: Vec<(usize, Outcome)>) -> Verdict {
    let mut violation = None;
    let mut undecided = None;
    for (index, outcome) in outcomes {
        let key = &keys[index];
        match outcome {
            Outcome::Linearizable | Outcome::Stopped => {}
            Outcome::Undecided => undecided = Some(undecided.map_or(key.key, |first: &str| first.min(key.key))),
            Outcome::Violation(deepest) => {
                if violation.as_ref().is_none_or(|(smallest, _): &(&str, _)| key.key < *smallest) {
                    violation = Some((key.key, explain(key, &deepest)));
                }
            }
        }
    }
    if let Some((key, explanation)) = violation {
        return Verdict::Violation { key: key.to_owned(), explanation };
    }
    if let Some(key) = undecided {
        return Verdict::Undecided { key: key.to_owned() };
    }
    Verdict::Linearizable { keys: keys.len(), operations: keys.iter().map(|key| key.operations.len()).sum() }
}
