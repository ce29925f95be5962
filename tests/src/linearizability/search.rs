//! The search for one key: Wing and Gong's algorithm with Lowe's cache, as in the Porcupine
//! paper.
//!
//! The operations' call and return events sit in one doubly linked list sorted by time (a call
//! before a return at the same instant, so operations that touch are concurrent). The search walks
//! the list: at a call it tries to make that operation take effect next (the register allows it
//! and the pair (set of operations taken, register state) was never reached before); if so the
//! call and its return are lifted out of the list and the walk starts over. Reaching a return
//! means that operation had to take effect already: the last choice is undone (unlifted) and the
//! walk goes on after it. An empty list is a linearization; backtracking past the first choice
//! proves there is none.
//!
//! One pruning of our own: when a read (or a `delete -> absent`) may take effect now and the
//! register allows it, it is taken first and nothing else is tried in its place, since a
//! linearization from here, if any, can always be reordered to start with it.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use super::operation::{Call, Operation};

/// How often (in steps of the walk) the search looks at the clock and at the stop flag.
const STEPS_BETWEEN_CHECKS: u32 = 1 << 10;

/// The register state "absent"; a value `v` is its interned number plus one.
const ABSENT: u32 = 0;

/// Marks the end of the list.
const NIL: usize = usize::MAX;

/// The list's head: a sentinel before the first event.
const HEAD: usize = 0;

/// The operations of one key, ready to search.
#[derive(Debug)]
pub(super) struct KeyHistory<'a> {
    /// The key.
    pub(super) key: &'a str,
    /// Its operations sorted by invocation, reads of unknown outcome left out.
    pub(super) operations: Vec<&'a Operation>,
    /// The operations searched (indices into `operations`): writes of unknown outcome that
    /// nothing could have seen are left out (see [`KeyHistory::new`]).
    searched: Vec<usize>,
    /// Each searched operation's effect on the register.
    effects: Vec<Effect>,
    /// The values, by interned number.
    values: Vec<&'a str>,
}

/// What one operation does to the register, with values as interned numbers.
#[derive(Debug, Clone, Copy)]
enum Effect {
    /// Sets the state (a put, or a delete of unknown outcome).
    Write(u32),
    /// Requires the state and leaves it (a read, or a delete that found nothing).
    Read(u32),
    /// Requires a value and removes it (a delete that found the record).
    Remove,
}

/// How a search ended.
#[derive(Debug)]
pub(super) enum Outcome {
    /// A linearization exists.
    Linearizable,
    /// None exists; the deepest point the search reached says where it fails.
    Violation(Deepest),
    /// The deadline passed first.
    Undecided,
    /// Another key's violation stopped the check.
    Stopped,
}

/// The longest sequence of operations the search could make take effect, and the operation that
/// then had to take effect next but could not.
#[derive(Debug)]
pub(super) struct Deepest {
    /// The sequence, as indices into [`KeyHistory::operations`].
    pub(super) order: Vec<usize>,
    /// The operation that could not follow it, as an index into [`KeyHistory::operations`].
    pub(super) blocked: usize,
    /// The register after the sequence: `None` for absent.
    pub(super) holding: Option<String>,
}

/// When a search must give up.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits<'s> {
    /// The deadline of the whole check.
    pub(super) deadline: Instant,
    /// Set when another key was found violated.
    pub(super) stop: &'s AtomicBool,
}

impl<'a> KeyHistory<'a> {
    /// Prepares the operations of `key` (all of them have that key).
    ///
    /// A write of unknown outcome is left out when nothing could have seen it: a put whose value
    /// no read returned, with no acknowledged `delete -> deleted` completing after the put was
    /// invoked; a delete with no read of absent nor `delete -> absent` completing after it was
    /// invoked. In any linearization, the next operation after such a write is then another
    /// write that ignores the state it finds (or nothing), so the write can be removed without
    /// changing anything that follows; and a history without it is a history where it never took
    /// effect, which an unknown outcome allows. This keeps lost writes from widening the search.
    pub(super) fn new(key: &'a str, mut operations: Vec<&'a Operation>) -> Self {
        operations.retain(|operation| operation.is_completed() || operation.is_write());
        operations.sort_by_key(|operation| (operation.invoked, returned(operation)));
        let mut history = Self { key, operations, searched: Vec::new(), effects: Vec::new(), values: Vec::new() };
        let mut interned = HashMap::new();
        let seen = Seen::of(&history.operations);
        for index in 0..history.operations.len() {
            let operation = history.operations[index];
            if !operation.is_completed() && !seen.may_have_seen(operation) {
                continue;
            }
            let effect = history.effect(operation, &mut interned);
            history.searched.push(index);
            history.effects.push(effect);
        }
        history
    }

    /// Whether the operation at `index` of [`KeyHistory::operations`] was left out as a write of
    /// unknown outcome that nothing could have seen.
    pub(super) fn is_left_out(&self, index: usize) -> bool {
        self.searched.binary_search(&index).is_err()
    }

    fn effect(&mut self, operation: &'a Operation, interned: &mut HashMap<&'a str, u32>) -> Effect {
        let mut state_of = |value: &'a str| {
            *interned.entry(value).or_insert_with(|| {
                self.values.push(value);
                u32::try_from(self.values.len()).expect("fewer than 4 billion values per key")
            })
        };
        match (&operation.call, operation.is_completed()) {
            (Call::Put { value }, _) => Effect::Write(state_of(value)),
            (Call::Get { observed: Some(value) }, _) => Effect::Read(state_of(value)),
            (Call::Get { observed: None }, _) | (Call::Delete { found: false }, true) => Effect::Read(ABSENT),
            (Call::Delete { found: true }, true) => Effect::Remove,
            (Call::Delete { .. }, false) => Effect::Write(ABSENT),
        }
    }

    fn value_of(&self, state: u32) -> Option<String> {
        let index = usize::try_from(state).ok()?.checked_sub(1)?;
        self.values.get(index).map(|value| (*value).to_owned())
    }

    /// Looks for a linearization.
    pub(super) fn search(&self, limits: Limits<'_>) -> Outcome {
        let mut walk = Walk::new(self);
        let mut deepest: Option<Deepest> = None;
        let mut steps = 0u32;
        let mut event = walk.events.first();
        let mut fresh = true;
        loop {
            if walk.events.first() == NIL {
                return Outcome::Linearizable;
            }
            steps = steps.wrapping_add(1);
            if steps.is_multiple_of(STEPS_BETWEEN_CHECKS) {
                if limits.stop.load(Ordering::Relaxed) {
                    return Outcome::Stopped;
                }
                if Instant::now() >= limits.deadline {
                    return Outcome::Undecided;
                }
            }
            let next_move = match (if std::mem::take(&mut fresh) { walk.applicable_read() } else { None }, event) {
                (Some(read), _) => Move::Forced(read),
                (None, call) if Events::is_call(call) => Move::Try(call),
                (None, ret) => Move::Stuck(ret),
            };
            let dead_end = match next_move {
                Move::Forced(read) => !walk.take(read, true),
                Move::Try(call) => {
                    if !walk.take(call, false) {
                        event = walk.events.next(call);
                        continue;
                    }
                    false
                }
                Move::Stuck(ret) => {
                    if deepest.as_ref().is_none_or(|deepest| walk.choices.len() > deepest.order.len()) {
                        deepest = Some(self.deepest(&walk.choices, Events::operation(ret), walk.state));
                    }
                    true
                }
            };
            if !dead_end {
                (event, fresh) = (walk.events.first(), true);
                continue;
            }
            event = walk.backtrack();
            if event == NIL {
                // Every search that fails gets stuck at a return at least once (a pair reached
                // twice was a dead end the first time), so `deepest` is known here.
                return Outcome::Violation(deepest.unwrap_or_else(|| self.deepest(&[], 0, ABSENT)));
            }
        }
    }

    fn deepest(&self, choices: &[Choice], blocked: usize, state: u32) -> Deepest {
        Deepest {
            order: choices.iter().map(|choice| self.searched[Events::operation(choice.call)]).collect(),
            blocked: self.searched[blocked],
            holding: self.value_of(state),
        }
    }
}

/// The state of a search: the events left, the operations taken (in order, with the state each
/// found) and the pairs (operations taken, state) reached so far.
#[derive(Debug)]
struct Walk<'k> {
    effects: &'k [Effect],
    events: Events,
    taken: Bitset,
    reached: HashSet<(Vec<u64>, u32)>,
    choices: Vec<Choice>,
    state: u32,
}

/// What the search does next.
#[derive(Debug, Clone, Copy)]
enum Move {
    /// Take this applicable read: the only choice worth making.
    Forced(usize),
    /// Try to take the operation called here.
    Try(usize),
    /// This operation returns here and was not taken: a dead end.
    Stuck(usize),
}

/// One operation taken: its call event, the state it found, and whether it was the only choice.
#[derive(Debug, Clone, Copy)]
struct Choice {
    call: usize,
    before: u32,
    forced: bool,
}

impl<'k> Walk<'k> {
    fn new(key: &'k KeyHistory<'_>) -> Self {
        let operations: Vec<&Operation> = key.searched.iter().map(|&index| key.operations[index]).collect();
        Self {
            effects: &key.effects,
            events: Events::new(&operations),
            taken: Bitset::new(operations.len()),
            reached: HashSet::new(),
            choices: Vec::new(),
            state: ABSENT,
        }
    }

    /// A read (or `delete -> absent`) that may take effect now, before every remaining return,
    /// and that the register allows.
    fn applicable_read(&self) -> Option<usize> {
        let mut event = self.events.first();
        while event != NIL && Events::is_call(event) {
            if let Effect::Read(required) = self.effects[Events::operation(event)]
                && required == self.state
            {
                return Some(event);
            }
            event = self.events.next(event);
        }
        None
    }

    /// Makes the operation called at `call` take effect next, unless the register refuses it or
    /// the pair it leads to was reached before (and so led nowhere).
    fn take(&mut self, call: usize, forced: bool) -> bool {
        let operation = Events::operation(call);
        let Some(next) = apply(self.effects[operation], self.state) else { return false };
        self.taken.set(operation);
        if !self.reached.insert((self.taken.words.clone(), next)) {
            self.taken.clear(operation);
            return false;
        }
        self.choices.push(Choice { call, before: self.state, forced });
        self.state = next;
        self.events.lift(call);
        true
    }

    /// Undoes choices back to the last one that had alternatives, and returns the event after it
    /// to try next; [`NIL`] when there is none.
    fn backtrack(&mut self) -> usize {
        while let Some(choice) = self.choices.pop() {
            self.state = choice.before;
            self.taken.clear(Events::operation(choice.call));
            self.events.unlift(choice.call);
            if !choice.forced {
                return self.events.next(choice.call);
            }
        }
        NIL
    }
}

/// The state after `effect` on `state`, or `None` when the register does not allow it.
fn apply(effect: Effect, state: u32) -> Option<u32> {
    match effect {
        Effect::Write(next) => Some(next),
        Effect::Read(required) => (state == required).then_some(state),
        Effect::Remove => (state != ABSENT).then_some(ABSENT),
    }
}

/// When an operation returns: its completion, or never.
fn returned(operation: &Operation) -> u64 {
    operation.completed.map_or(u64::MAX, |completed| completed.max(operation.invoked))
}

/// The latest completions of the acknowledged operations that can see an unknown write.
#[derive(Debug)]
struct Seen<'a> {
    /// Values some read returned.
    read_values: HashSet<&'a str>,
    /// The latest completion of a `delete -> deleted`, which can see a put.
    latest_removal: Option<u64>,
    /// The latest completion of a read of absent or a `delete -> absent`, which can see a delete.
    latest_absence: Option<u64>,
}

impl<'a> Seen<'a> {
    fn of(operations: &[&'a Operation]) -> Self {
        let mut seen = Self { read_values: HashSet::new(), latest_removal: None, latest_absence: None };
        for operation in operations {
            let Some(completed) = operation.completed else { continue };
            match &operation.call {
                Call::Get { observed: Some(value) } => {
                    seen.read_values.insert(value.as_str());
                }
                Call::Get { observed: None } | Call::Delete { found: false } => {
                    seen.latest_absence = seen.latest_absence.max(Some(completed));
                }
                Call::Delete { found: true } => seen.latest_removal = seen.latest_removal.max(Some(completed)),
                Call::Put { .. } => {}
            }
        }
        seen
    }

    /// Whether an acknowledged operation could have seen the effect of the unknown write `write`.
    fn may_have_seen(&self, write: &Operation) -> bool {
        let after = |latest: Option<u64>| latest.is_some_and(|latest| latest >= write.invoked);
        match &write.call {
            Call::Put { value } => self.read_values.contains(value.as_str()) || after(self.latest_removal),
            Call::Delete { .. } => after(self.latest_absence),
            Call::Get { .. } => false,
        }
    }
}

/// The call and return events of the searched operations in a doubly linked list sorted by time.
/// Node `0` is the head; operation `i` has its call at node `2i + 1` and its return at `2i + 2`.
#[derive(Debug)]
struct Events {
    next: Vec<usize>,
    prev: Vec<usize>,
}

impl Events {
    fn new(operations: &[&Operation]) -> Self {
        let mut order: Vec<(u64, bool, usize)> = Vec::with_capacity(2 * operations.len());
        for (index, operation) in operations.iter().enumerate() {
            order.push((operation.invoked, false, 2 * index + 1));
            order.push((returned(operation), true, 2 * index + 2));
        }
        // At one instant calls come first (`false < true`): operations that touch overlap.
        order.sort_unstable();
        let nodes = 2 * operations.len() + 1;
        let mut events = Self { next: vec![NIL; nodes], prev: vec![NIL; nodes] };
        let mut last = HEAD;
        for (_, _, node) in order {
            events.next[last] = node;
            events.prev[node] = last;
            last = node;
        }
        events
    }

    fn first(&self) -> usize {
        self.next[HEAD]
    }

    fn next(&self, node: usize) -> usize {
        self.next[node]
    }

    fn operation(node: usize) -> usize {
        (node - 1) / 2
    }

    fn is_call(node: usize) -> bool {
        node % 2 == 1
    }

    /// Takes the call at `call` and its return out of the list.
    fn lift(&mut self, call: usize) {
        self.unlink(call);
        self.unlink(call + 1);
    }

    /// Puts the call at `call` and its return back, undoing the matching [`Events::lift`].
    fn unlift(&mut self, call: usize) {
        self.relink(call + 1);
        self.relink(call);
    }

    /// Takes `node` out, keeping its own links so that [`Events::relink`] can put it back.
    fn unlink(&mut self, node: usize) {
        let (prev, next) = (self.prev[node], self.next[node]);
        self.next[prev] = next;
        if next != NIL {
            self.prev[next] = prev;
        }
    }

    fn relink(&mut self, node: usize) {
        let (prev, next) = (self.prev[node], self.next[node]);
        self.next[prev] = node;
        if next != NIL {
            self.prev[next] = node;
        }
    }
}

/// A set of operation indices.
#[derive(Debug)]
struct Bitset {
    words: Vec<u64>,
}

impl Bitset {
    fn new(len: usize) -> Self {
        Self { words: vec![0; len.div_ceil(64)] }
    }

    fn set(&mut self, index: usize) {
        self.words[index / 64] |= 1 << (index % 64);
    }

    fn clear(&mut self, index: usize) {
        self.words[index / 64] &= !(1 << (index % 64));
    }
}
