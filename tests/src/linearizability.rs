//! Per-key linearizability of client histories: record what load-test clients did to records,
//! then check that some order of those operations, one that respects their times, explains every
//! answer they got.
//!
//! Each record key is a register that starts absent; a put sets it, a delete makes it absent, a
//! get returns it. The check is Wing and Gong's search with Lowe's memoization, as in the
//! Porcupine paper, run on each key on its own (linearizability is local, so a history is
//! linearizable when each key's is), with a time limit.
//!
//! # Recording
//!
//! Clients share one [`History`]. Right before sending a request a client calls
//! [`History::invoke`]; right after reading the answer it finishes the [`Pending`] call:
//!
//! - an acknowledged put, a get (`200` with its value, or `404`) and a delete (`204` or `404`) end
//!   with `ok(...)`;
//! - when the client cannot know whether the request took effect (a timeout, `504
//!   write_outcome_unknown`, a `500`, a broken connection), it ends with [`Pending::unknown`]:
//!   such a write may have taken effect at any time after its invocation, or never (it "completes
//!   at infinity"), and such a read is left out of the check. A `Pending` dropped unfinished
//!   counts as unknown;
//! - **writes the server definitely refused are not recorded at all**: a `4xx` (a `429` included)
//!   or a `503` (`shard_unavailable`, `shard_busy`, `overloaded`, ...) says the write was not
//!   applied (the API answers `504 write_outcome_unknown` when it may have been), so the client
//!   ends the call with [`Pending::refused`], which forgets it. A failed read can end the same way.
//!
//! # Checking
//!
//! [`check`] (or [`History::check`]) returns a [`Verdict`]: [`Verdict::Linearizable`] with the
//! numbers checked, [`Verdict::Violation`] with a readable account of the first key found wrong
//! (the longest consistent sequence found, the operation that finds no place after it, and the
//! key's operations around it with their times and results), or [`Verdict::Undecided`] when the
//! time limit ran out.
//!
//! The search is exponential in the worst case; what it costs is the number of operations in
//! flight on one key at once. Taking a read the register allows as soon as it may (it is never a
//! wrong choice) and leaving out lost writes that nothing saw keep ordinary histories cheap: 10,000
//! operations over 100 keys with about eight in flight per key take about a tenth of a second
//! (half a second in a debug build); sixteen in flight per key take seconds.
//!
//! ```
//! use std::time::Duration;
//! use shardgate_tests::linearizability::{GetRequest, History, PutRequest};
//!
//! let history = History::new();
//! history.invoke("k1", PutRequest { value: "a".to_owned() }).ok();
//! history.invoke("k1", GetRequest).ok(Some("a".to_owned()));
//! assert!(history.check(Duration::from_secs(1)).is_linearizable());
//! ```

mod checker;
mod explain;
mod history;
mod operation;
mod search;
#[cfg(test)]
mod tests;

pub use checker::{Verdict, check};
pub use history::{DeleteRequest, GetRequest, History, Pending, PutRequest, Request};
pub use operation::{Call, Operation};
