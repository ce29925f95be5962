//! The checker on histories whose answer is known: hand-written ones, a simulated register's, and
//! one made to take forever.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{Call, DeleteRequest, GetRequest, History, Operation, PutRequest, Verdict, check};

/// Enough for every history here, even in a debug build on a busy machine.
const LIMIT: Duration = Duration::from_secs(30);

fn put(value: &str, invoked: u64, completed: u64) -> Operation {
    Operation { key: "k".to_owned(), call: Call::Put { value: value.to_owned() }, invoked, completed: Some(completed) }
}

fn lost_put(value: &str, invoked: u64) -> Operation {
    Operation { key: "k".to_owned(), call: Call::Put { value: value.to_owned() }, invoked, completed: None }
}

fn get(observed: Option<&str>, invoked: u64, completed: u64) -> Operation {
    let observed = observed.map(str::to_owned);
    Operation { key: "k".to_owned(), call: Call::Get { observed }, invoked, completed: Some(completed) }
}

fn delete(found: bool, invoked: u64, completed: u64) -> Operation {
    Operation { key: "k".to_owned(), call: Call::Delete { found }, invoked, completed: Some(completed) }
}

fn lost_delete(invoked: u64) -> Operation {
    Operation { key: "k".to_owned(), call: Call::Delete { found: false }, invoked, completed: None }
}

#[track_caller]
fn assert_linearizable(operations: &[Operation]) {
    let verdict = check(operations, LIMIT);
    assert!(verdict.is_linearizable(), "{verdict}");
}

/// The explanation of the violation found on key `k`.
#[track_caller]
fn violation(operations: &[Operation]) -> String {
    match check(operations, LIMIT) {
        Verdict::Violation { key, explanation } => {
            assert_eq!(key, "k");
            explanation
        }
        other => panic!("expected a violation, got {other}"),
    }
}

#[test]
fn an_empty_history_is_linearizable() {
    assert_eq!(check(&[], LIMIT), Verdict::Linearizable { keys: 0, operations: 0 });
}

#[test]
fn reads_concurrent_with_writes_may_see_either_value() {
    // Two concurrent puts: a later read sees whichever took effect last.
    assert_linearizable(&[put("a", 0, 10), put("b", 2, 8), get(Some("a"), 11, 12)]);
    assert_linearizable(&[put("a", 0, 10), put("b", 2, 8), get(Some("b"), 11, 12), get(Some("b"), 13, 14)]);
    // Reads overlapping a put see the old value, then the new one.
    assert_linearizable(&[
        put("a", 0, 1),
        put("b", 5, 20),
        get(Some("a"), 6, 7),
        get(Some("b"), 8, 9),
        get(Some("b"), 10, 11),
    ]);
    // A read overlapping a put and a delete may see absent, and sequential deletes find the truth.
    assert_linearizable(&[
        get(None, 0, 1),
        put("a", 2, 10),
        delete(true, 3, 12),
        get(None, 4, 5),
        delete(false, 13, 14),
    ]);
}

#[test]
fn operations_that_touch_are_concurrent() {
    // The put completes at the instant the read is invoked: either order is allowed.
    assert_linearizable(&[put("a", 0, 5), get(None, 5, 6)]);
}

#[test]
fn writes_of_unknown_outcome_may_be_seen_late_or_never() {
    // Seen long after the client gave up on it.
    assert_linearizable(&[
        put("a", 0, 1),
        lost_put("b", 2),
        get(Some("a"), 3, 4),
        get(Some("b"), 100, 101),
        get(Some("b"), 200, 201),
    ]);
    // Never seen.
    assert_linearizable(&[put("a", 0, 1), lost_put("b", 2), get(Some("a"), 3, 4), get(Some("a"), 100, 101)]);
    // Only seen by a delete that found the record, so it must have taken effect.
    assert_linearizable(&[lost_put("b", 0), delete(true, 5, 6), get(None, 7, 8)]);
    // A lost delete, seen by a read of absent.
    assert_linearizable(&[put("a", 0, 1), lost_delete(2), get(Some("a"), 3, 4), get(None, 5, 6)]);
}

#[test]
fn a_write_of_unknown_outcome_cannot_be_undone_once_seen() {
    let explanation = violation(&[put("a", 0, 1), lost_put("b", 2), get(Some("b"), 3, 4), get(Some("a"), 5, 6)]);
    assert!(explanation.contains(r#"get -> "a""#), "{explanation}");
    violation(&[lost_put("b", 0), delete(true, 5, 6), delete(true, 7, 8)]);
}

#[test]
fn reads_of_unknown_outcome_are_left_out() {
    let lost_read = Operation { completed: None, ..get(Some("never written"), 0, 0) };
    assert_eq!(check(&[lost_read, put("a", 1, 2)], LIMIT), Verdict::Linearizable { keys: 1, operations: 1 });
}

#[test]
fn a_stale_read_after_an_acknowledged_write_is_a_violation() {
    let explanation = violation(&[put("a", 0, 1_000), put("b", 2_000, 3_000), get(Some("a"), 4_000, 5_000)]);
    assert!(explanation.contains(r#"key "k": its 3 operations have no linearization"#), "{explanation}");
    assert!(explanation.contains("leaves the record holding \"b\""), "{explanation}");
    assert!(explanation.contains(r#"#3 `get -> "a"` (invoked 0.004000 ms, completed 0.005000 ms)"#), "{explanation}");
    for row in [
        r#"    #1      1     0.000000 ms     0.001000 ms  put "a""#,
        r#"    #2      2     0.002000 ms     0.003000 ms  put "b""#,
        r#"    #3      -     0.004000 ms     0.005000 ms  get -> "a"   <- finds no place"#,
    ] {
        assert!(explanation.contains(row), "{row} is missing from\n{explanation}");
    }
}

#[test]
fn a_read_of_a_value_never_written_is_a_violation() {
    let explanation = violation(&[put("a", 0, 1), get(Some("x"), 2, 3)]);
    assert!(explanation.contains(r#""x" was never written to this key."#), "{explanation}");
    violation(&[get(Some("x"), 0, 1)]);
}

#[test]
fn a_value_read_after_its_acknowledged_delete_is_a_violation() {
    violation(&[put("a", 0, 1), delete(true, 2, 3), get(Some("a"), 4, 5)]);
    violation(&[delete(true, 0, 1)]);
    violation(&[put("a", 0, 1), delete(false, 2, 3)]);
}

#[test]
fn sequential_reads_in_an_impossible_order_are_a_violation() {
    // "b" is being written while the reads run; once one read saw it, no later read may see "a".
    let explanation = violation(&[put("a", 0, 1), put("b", 2, 100), get(Some("b"), 3, 4), get(Some("a"), 5, 6)]);
    assert!(explanation.contains(r#"#4 `get -> "a"`"#), "{explanation}");
}

#[test]
fn keys_are_checked_on_their_own() {
    let mut operations = vec![put("a", 0, 1), get(Some("a"), 2, 3)];
    operations.push(Operation { key: "other".to_owned(), ..get(None, 2, 3) });
    operations.push(Operation { key: "other".to_owned(), ..get(Some("a"), 4, 5) });
    match check(&operations, LIMIT) {
        Verdict::Violation { key, .. } => assert_eq!(key, "other"),
        other => panic!("expected a violation on key \"other\", got {other}"),
    }
    operations.truncate(3);
    assert_eq!(check(&operations, LIMIT), Verdict::Linearizable { keys: 2, operations: 3 });
}

#[test]
fn a_simulated_register_of_ten_thousand_operations_over_a_hundred_keys_is_linearizable() {
    let operations = simulated_history(7);
    assert!(operations.len() >= 10_000);
    let started = Instant::now();
    let verdict = check(&operations, LIMIT);
    eprintln!("checked {} operations in {:?}: {verdict}", operations.len(), started.elapsed());
    match verdict {
        Verdict::Linearizable { keys, operations: checked } => {
            assert_eq!(keys, KEYS);
            assert!(checked >= 9_900, "{checked} operations checked");
        }
        other => panic!("expected linearizable, got {other}"),
    }
}

#[test]
fn one_stale_read_among_ten_thousand_operations_is_found() {
    let mut operations = simulated_history(11);
    let (index, key) = inject_stale_read(&mut operations);
    let started = Instant::now();
    let verdict = check(&operations, LIMIT);
    eprintln!("checked {} operations in {:?}", operations.len(), started.elapsed());
    match verdict {
        Verdict::Violation { key: found, explanation } => {
            assert_eq!(found, key);
            let read = &operations[index];
            let row = format!("{read}   <- finds no place");
            assert!(explanation.contains(&row), "{row} is missing from\n{explanation}");
        }
        other => panic!("expected a violation on {key}, got {other}"),
    }
}

#[test]
fn a_history_too_tangled_to_decide_in_time_is_undecided() {
    // Many puts at once, then a read of the first value and a read of the second: no order works,
    // and proving it means trying every subset of the puts.
    let tangle = |puts: usize| {
        let mut operations: Vec<Operation> = (0..puts).map(|i| put(&format!("v{i}"), 0, 1_000)).collect();
        operations.push(get(Some("v0"), 2_000, 2_001));
        operations.push(get(Some("v1"), 3_000, 3_001));
        operations
    };
    violation(&tangle(6));
    let started = Instant::now();
    let verdict = check(&tangle(40), Duration::from_millis(50));
    assert_eq!(verdict, Verdict::Undecided { key: "k".to_owned() });
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_recorder_takes_calls_from_many_tasks_at_once() {
    let history = History::new();
    let records: Arc<Mutex<HashMap<String, String>>> = Arc::default();
    let tasks: Vec<_> = (0..16)
        .map(|client| {
            let (history, records) = (history.clone(), Arc::clone(&records));
            tokio::spawn(async move {
                for i in 0..200 {
                    let key = format!("k{}", (client + i) % 8);
                    match i % 3 {
                        0 => {
                            let value = format!("c{client}-{i}");
                            let pending = history.invoke(&key, PutRequest { value: value.clone() });
                            records.lock().expect("no panics while held").insert(key, value);
                            pending.ok();
                        }
                        1 => {
                            let pending = history.invoke(&key, GetRequest);
                            let observed = records.lock().expect("no panics while held").get(&key).cloned();
                            pending.ok(observed);
                        }
                        _ => {
                            let pending = history.invoke(&key, DeleteRequest);
                            let found = records.lock().expect("no panics while held").remove(&key).is_some();
                            pending.ok(found);
                        }
                    }
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("the client task ran to its end");
    }
    assert_eq!(history.len(), 16 * 200);
    assert_eq!(history.check(LIMIT), Verdict::Linearizable { keys: 8, operations: 16 * 200 });
}

#[test]
fn the_recorder_catches_a_store_that_serves_old_values() {
    let history = History::new();
    history.invoke("k", PutRequest { value: "a".to_owned() }).ok();
    history.invoke("k", PutRequest { value: "b".to_owned() }).ok();
    history.invoke("k", GetRequest).ok(Some("a".to_owned()));
    assert!(matches!(history.check(LIMIT), Verdict::Violation { key, .. } if key == "k"));
}

#[test]
fn calls_dropped_unfinished_are_unknown_and_refused_ones_are_forgotten() {
    let history = History::new();
    drop(history.invoke("k", PutRequest { value: "a".to_owned() }));
    history.invoke("k", PutRequest { value: "b".to_owned() }).refused();
    history.invoke("k", DeleteRequest).unknown();
    history.invoke("k", GetRequest).unknown();
    let operations = history.operations();
    let calls: Vec<(&Call, bool)> = operations.iter().map(|o| (&o.call, o.is_completed())).collect();
    assert_eq!(
        calls,
        [
            (&Call::Put { value: "a".to_owned() }, false),
            (&Call::Delete { found: false }, false),
            (&Call::Get { observed: None }, false),
        ]
    );
    assert!(operations.windows(2).all(|pair| pair[0].invoked <= pair[1].invoked));
}

#[test]
fn the_search_agrees_with_trying_every_order_on_small_random_histories() {
    let mut random = SplitMix64(3);
    let (mut linearizable, mut violated) = (0, 0);
    for _ in 0..3_000 {
        let operations = random_small_history(&mut random);
        let expected = linearizable_by_trying_every_order(&operations);
        let verdict = check(&operations, LIMIT);
        assert_eq!(verdict.is_linearizable(), expected, "{operations:#?}\n{verdict}");
        if expected { linearizable += 1 } else { violated += 1 }
    }
    assert!(linearizable > 300 && violated > 300, "{linearizable} linearizable, {violated} violated");
}

/// Up to seven operations on one key, with short random intervals (so that many overlap or touch),
/// two values, random answers, and some outcomes unknown.
fn random_small_history(random: &mut SplitMix64) -> Vec<Operation> {
    let value = |random: &mut SplitMix64| ["a", "b"][usize::from(random.below(2) == 0)];
    (0..1 + random.below(7))
        .map(|_| {
            let invoked = random.below(10);
            let completed = invoked + random.below(5);
            let mut operation = match random.below(3) {
                0 => put(value(random), invoked, completed),
                1 => get(
                    [None, Some("a"), Some("b")][usize::try_from(random.below(3)).expect("small")],
                    invoked,
                    completed,
                ),
                _ => delete(random.below(2) == 0, invoked, completed),
            };
            if random.below(5) == 0 {
                operation.completed = None;
            }
            operation
        })
        .collect()
}

/// The definition, by brute force: some order of the operations (writes of unknown outcome
/// possibly left out, reads of unknown outcome always) that keeps every operation after those
/// that completed before it was invoked, and in which every answer is the register's.
fn linearizable_by_trying_every_order(operations: &[Operation]) -> bool {
    fn extend(operations: &[&Operation], taken: &mut Vec<bool>, state: Option<&str>) -> bool {
        if taken.iter().all(|&t| t) {
            return true;
        }
        for next in 0..operations.len() {
            let end = |operation: &Operation| operation.completed.unwrap_or(u64::MAX);
            let waits =
                (0..operations.len()).any(|other| !taken[other] && end(operations[other]) < operations[next].invoked);
            if taken[next] || waits {
                continue;
            }
            let after = match &operations[next].call {
                Call::Put { value } => Some(Some(value.as_str())),
                Call::Delete { .. } if !operations[next].is_completed() => Some(None),
                Call::Delete { found } => (state.is_some() == *found).then_some(None),
                Call::Get { observed } => (observed.as_deref() == state).then_some(state),
            };
            if let Some(after) = after {
                taken[next] = true;
                if extend(operations, taken, after) {
                    return true;
                }
                taken[next] = false;
            }
        }
        false
    }
    let kept: Vec<&Operation> = operations.iter().filter(|o| o.is_completed() || o.is_write()).collect();
    let unknown: Vec<usize> = (0..kept.len()).filter(|&i| !kept[i].is_completed()).collect();
    (0..1u32 << unknown.len()).any(|left_out| {
        let included: Vec<&Operation> = (0..kept.len())
            .filter(|i| unknown.iter().position(|u| u == i).is_none_or(|bit| left_out & (1 << bit) == 0))
            .map(|i| kept[i])
            .collect();
        extend(&included, &mut vec![false; included.len()], None)
    })
}

/// The keys of a simulated history.
const KEYS: usize = 100;

/// Clients of a simulated history, each making [`CALLS_PER_CLIENT`] calls one after another.
const CLIENTS: usize = 1_000;

/// Calls per client of a simulated history.
const CALLS_PER_CLIENT: usize = 10;

/// A real register's history: [`CLIENTS`] clients each make [`CALLS_PER_CLIENT`] calls one after
/// another on random keys, with random gaps and durations (so about eight calls are in flight on
/// each key at once). Each call takes effect atomically at a random instant inside its interval;
/// one write in fifty has an unknown outcome and takes effect at a random instant after its
/// invocation, even after the client gave up, or never.
fn simulated_history(seed: u64) -> Vec<Operation> {
    let mut random = SplitMix64(seed);
    let mut operations = Vec::with_capacity(CLIENTS * CALLS_PER_CLIENT);
    let mut takes_effect = Vec::with_capacity(CLIENTS * CALLS_PER_CLIENT);
    for client in 0..CLIENTS {
        let mut now = random.below(1_000);
        for call in 0..CALLS_PER_CLIENT {
            let key = format!("key-{}", random.below(KEYS as u64));
            let invoked = now + random.below(200);
            let duration = 1 + random.below(1_000);
            let (call, is_write) = match random.below(100) {
                0..50 => (Call::Get { observed: None }, false),
                50..85 => (Call::Put { value: format!("c{client}-{call}") }, true),
                _ => (Call::Delete { found: false }, true),
            };
            let unknown = is_write && random.below(50) == 0;
            let (completed, instant) = if !unknown {
                (Some(invoked + duration), Some(invoked + random.below(duration + 1)))
            } else if random.below(2) == 0 {
                (None, Some(invoked + random.below(3 * duration)))
            } else {
                (None, None)
            };
            operations.push(Operation { key, call, invoked, completed });
            takes_effect.push(instant);
            now = invoked + duration;
        }
    }
    run_register(&mut operations, &takes_effect);
    operations
}

/// Fills in the answers of `operations`, each taking effect at its instant (or never).
fn run_register(operations: &mut [Operation], takes_effect: &[Option<u64>]) {
    let mut order: Vec<(u64, usize)> =
        takes_effect.iter().enumerate().filter_map(|(index, instant)| instant.map(|at| (at, index))).collect();
    order.sort_unstable();
    let mut register: HashMap<String, String> = HashMap::new();
    for (_, index) in order {
        let operation = &mut operations[index];
        match &mut operation.call {
            Call::Put { value } => {
                register.insert(operation.key.clone(), value.clone());
            }
            Call::Get { observed } => *observed = register.get(&operation.key).cloned(),
            Call::Delete { found } => *found = register.remove(&operation.key).is_some(),
        }
    }
}

/// Makes one read return a value overwritten before it began: a put of that value completed, then
/// another acknowledged write began and completed, then the read began. Values are unique per
/// put, so no order can explain it. Returns the read's index and key.
fn inject_stale_read(operations: &mut [Operation]) -> (usize, String) {
    for read in 0..operations.len() {
        if let Some(value) = overwritten_before(operations, &operations[read]) {
            operations[read].call = Call::Get { observed: Some(value) };
            return (read, operations[read].key.clone());
        }
    }
    panic!("the simulated history has no read after two sequential writes");
}

/// For an acknowledged read: a value it did not return, put by an acknowledged put that completed
/// before another acknowledged write of the key was invoked, which completed before the read was
/// invoked.
fn overwritten_before(operations: &[Operation], read: &Operation) -> Option<String> {
    let (Call::Get { observed }, Some(_)) = (&read.call, read.completed) else { return None };
    let acknowledged = |other: &&Operation| other.key == read.key && other.completed.is_some();
    let overwrites =
        operations.iter().filter(acknowledged).filter(|w| w.is_write() && w.completed < Some(read.invoked));
    for overwrite in overwrites {
        for earlier in operations.iter().filter(acknowledged) {
            if let Call::Put { value } = &earlier.call
                && earlier.completed < Some(overwrite.invoked)
                && observed.as_ref() != Some(value)
            {
                return Some(value.clone());
            }
        }
    }
    None
}

/// A small, seeded pseudo-random generator (Steele, Lea and Flood's SplitMix64), so that a
/// simulated history is the same on every run.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..bound`.
    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }
}
