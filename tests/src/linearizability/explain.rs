//! The account of a violation: where the search got stuck and the key's operations around it.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

use super::operation::{Call, Operation, format_nanos};
use super::search::{Deepest, KeyHistory};

/// How many operations that completed before the stuck one was invoked are shown.
const EARLIER_SHOWN: usize = 8;

/// How many writes of the value a stuck read returned are shown.
const SOURCES_SHOWN: usize = 3;

/// At most this many rows are shown, the nearest to the stuck operation.
const ROWS_SHOWN: usize = 40;

/// A readable account of why `key` has no linearization, from the deepest point of its search.
pub(super) fn explain(key: &KeyHistory<'_>, deepest: &Deepest) -> String {
    let operations = &key.operations;
    let blocked = operations[deepest.blocked];
    let mut text = String::new();
    let holding = deepest.holding.as_ref().map_or_else(|| "absent".to_owned(), |value| format!("holding {value:?}"));
    let _ = writeln!(
        text,
        "key {:?}: its {} operations have no linearization (the record starts absent).",
        key.key,
        operations.len()
    );
    let _ = writeln!(
        text,
        "The longest order found that their times and answers allow takes {} of them and leaves the record {holding}.",
        deepest.order.len(),
    );
    let _ = writeln!(
        text,
        "Nothing else invoked before #{n} completed can come next without a dead end, so #{n} `{blocked}` \
         (invoked {}, completed {}) finds no place.",
        format_nanos(blocked.invoked),
        completed(blocked),
        n = deepest.blocked + 1,
    );
    if let Call::Get { observed: Some(value) } = &blocked.call
        && sources(operations, value).is_empty()
    {
        let _ = writeln!(text, "{value:?} was never written to this key.");
    }
    let _ = writeln!(
        text,
        "Operations of this key around it, by invocation (`order`: place in that order, `-` if not in it):"
    );
    let _ = writeln!(text, "{:>6}  {:>5}  {:>14}  {:>14}  operation", "#", "order", "invoked", "completed");
    let places: HashMap<usize, usize> =
        deepest.order.iter().enumerate().map(|(place, &index)| (index, place)).collect();
    for index in rows(operations, deepest.blocked) {
        let operation = operations[index];
        let place = places.get(&index).map_or_else(|| "-".to_owned(), |place| (place + 1).to_string());
        let note = if index == deepest.blocked {
            "   <- finds no place"
        } else if key.is_left_out(index) {
            "   (outcome unknown and never seen: left out)"
        } else {
            ""
        };
        let _ = writeln!(
            text,
            "{:>6}  {place:>5}  {:>14}  {:>14}  {operation}{note}",
            format!("#{}", index + 1),
            format_nanos(operation.invoked),
            completed(operation),
        );
    }
    text
}

/// The operations shown: those overlapping the stuck one, the last few completed before it was
/// invoked, and, for a read, the writes of the value it returned; the nearest [`ROWS_SHOWN`].
fn rows(operations: &[&Operation], blocked: usize) -> Vec<usize> {
    let stuck = operations[blocked];
    let stuck_end = stuck.completed.unwrap_or(u64::MAX);
    let mut shown: BTreeSet<usize> = (0..operations.len())
        .filter(|&index| {
            let operation = operations[index];
            operation.invoked <= stuck_end && operation.completed.is_none_or(|end| end >= stuck.invoked)
        })
        .collect();
    let mut earlier: Vec<usize> = (0..operations.len())
        .filter(|&index| operations[index].completed.is_some_and(|end| end < stuck.invoked))
        .collect();
    earlier.sort_by_key(|&index| std::cmp::Reverse(operations[index].completed));
    shown.extend(earlier.into_iter().take(EARLIER_SHOWN));
    if let Call::Get { observed: Some(value) } = &stuck.call {
        shown.extend(sources(operations, value).into_iter().take(SOURCES_SHOWN));
    }
    let mut shown: Vec<usize> = shown.into_iter().collect();
    if shown.len() > ROWS_SHOWN {
        shown.sort_by_key(|&index| index.abs_diff(blocked));
        shown.truncate(ROWS_SHOWN);
        shown.sort_unstable();
    }
    shown
}

/// The puts of `value`.
fn sources(operations: &[&Operation], value: &str) -> Vec<usize> {
    (0..operations.len())
        .filter(|&index| matches!(&operations[index].call, Call::Put { value: written } if written == value))
        .collect()
}

fn completed(operation: &Operation) -> String {
    operation.completed.map_or_else(|| "unknown".to_owned(), format_nanos)
}
