//! The history model: one record operation as the client saw it, with its interval and result.

use std::fmt;

/// One call a client made on one record, with the time it was invoked, the time its answer
/// arrived and what the answer said.
///
/// Times are nanoseconds on one monotonic clock (a [`super::History`] counts from its creation).
/// An operation takes effect at one instant between `invoked` and `completed`; `completed: None`
/// means the client never learned the outcome (a timeout, a `5xx write_outcome_unknown`, a broken
/// connection): a write may then have taken effect at any time after `invoked`, or never, and a
/// read is left out of the check. The result fields of `call` are not read for such operations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operation {
    /// The record key; each key is a register of its own.
    pub key: String,
    /// What was asked and what the answer said.
    pub call: Call,
    /// When the request was about to be sent, in nanoseconds.
    pub invoked: u64,
    /// When the answer arrived, in nanoseconds; `None` when the outcome is unknown. A value below
    /// `invoked` is read as `invoked`.
    pub completed: Option<u64>,
}

/// What a client asked of a record and what it was answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// An unconditional write of `value`, acknowledged (`200`/`201`) when completed.
    Put {
        /// The value written.
        value: String,
    },
    /// A read: `observed` is the value returned, `None` for `404`.
    Get {
        /// The value the read returned; `None` when the record was absent.
        observed: Option<String>,
    },
    /// A delete: `found` is `true` for `204` (it was there and is gone), `false` for `404` (it was
    /// already absent).
    Delete {
        /// Whether the record existed when the delete took effect.
        found: bool,
    },
}

impl Operation {
    /// Whether the client learned the outcome.
    pub fn is_completed(&self) -> bool {
        self.completed.is_some()
    }

    /// Whether this operation changes the register (a put or a delete).
    pub fn is_write(&self) -> bool {
        !matches!(self.call, Call::Get { .. })
    }
}

impl fmt::Display for Operation {
    /// `put "v1"`, `get -> "v1"`, `get -> absent`, `delete -> deleted`, `delete -> absent`, and
    /// for an unknown outcome `put "v1" -> unknown`, `delete -> unknown`, `get -> unknown`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.call, self.completed.is_some()) {
            (Call::Put { value }, true) => write!(f, "put {value:?}"),
            (Call::Put { value }, false) => write!(f, "put {value:?} -> unknown"),
            (Call::Get { observed: Some(value) }, true) => write!(f, "get -> {value:?}"),
            (Call::Get { observed: None }, true) => f.write_str("get -> absent"),
            (Call::Get { .. }, false) => f.write_str("get -> unknown"),
            (Call::Delete { found: true }, true) => f.write_str("delete -> deleted"),
            (Call::Delete { found: false }, true) => f.write_str("delete -> absent"),
            (Call::Delete { .. }, false) => f.write_str("delete -> unknown"),
        }
    }
}

/// Nanoseconds as milliseconds with six decimals: `1234567` → `1.234567 ms`.
pub(super) fn format_nanos(nanos: u64) -> String {
    format!("{}.{:06} ms", nanos / 1_000_000, nanos % 1_000_000)
}
