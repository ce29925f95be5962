//! The verdict of `bench/instructions.sh --check` (`bench/instructions_check.py`): a scenario
//! costing more than 5 % above its committed baseline fails CI, and so does one missing or
//! measured with another request count; within the tolerance, or cheaper, passes. Each test
//! writes a baseline and a measurement of its own and runs the real script on them.

use std::path::{Path, PathBuf};
use std::process::Output;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ is in the workspace").to_path_buf()
}

/// Runs the check on a baseline and a measurement given as their files' text.
fn check(baseline: &str, measured: &str) -> Output {
    let dir = tempfile::Builder::new().prefix("sg-instruction-check-").tempdir().expect("temp dir");
    let (base, now) = (dir.path().join("baseline.txt"), dir.path().join("measured.txt"));
    std::fs::write(&base, baseline).unwrap();
    std::fs::write(&now, measured).unwrap();
    std::process::Command::new("python3")
        .arg(workspace().join("bench/instructions_check.py"))
        .args([&base, &now])
        .output()
        .expect("python3 runs")
}

const BASELINE: &str = "# a comment\nrequests 500\nget_redis 80000\nput 160000\n";

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The committed baseline reads, and names every scenario the script knows (so CI checks them).
#[test]
fn the_committed_baseline_names_the_scenarios() {
    let baseline = std::fs::read_to_string(workspace().join("bench/instructions-baseline.txt")).unwrap();
    let passes = check(&baseline, &baseline);
    assert!(passes.status.success(), "the baseline against itself: {}", stderr(&passes));
    let script = std::fs::read_to_string(workspace().join("bench/instructions.sh")).unwrap();
    let known = script.lines().find_map(|line| line.strip_prefix("ALL_SCENARIOS=\"")).unwrap().trim_end_matches('"');
    for scenario in known.split_whitespace().filter(|s| *s != "ceiling") {
        assert!(
            baseline.lines().any(|line| line.split_whitespace().next() == Some(scenario)),
            "{scenario} is in bench/instructions-baseline.txt"
        );
    }
}

#[test]
fn within_the_tolerance_or_cheaper_passes() {
    let measured = "requests 500\nget_redis 83900\nput 120000\n";
    let output = check(BASELINE, measured);
    assert!(output.status.success(), "{}", stderr(&output));
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(table.contains("| get_redis | 80000 | 83900 | 1.049 | ok |"), "{table}");
    assert!(table.contains("| put | 160000 | 120000 | 0.750 | cheaper"), "{table}");
}

#[test]
fn a_scenario_more_than_five_percent_above_its_baseline_fails_and_is_named() {
    let output = check(BASELINE, "requests 500\nget_redis 80000\nput 168500\n");
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert!(err.contains("put: 168500 instructions per request, 1.053× its baseline 160000"), "{err}");
    assert!(!err.contains("get_redis"), "{err}");
}

/// `--failed` names the scenarios that cost too much, one a line, for the script to measure again.
#[test]
fn the_scenarios_that_cost_too_much_are_written_for_a_second_measurement() {
    let dir = tempfile::Builder::new().prefix("sg-instruction-failed-").tempdir().expect("temp dir");
    let (base, now, failed) =
        (dir.path().join("baseline.txt"), dir.path().join("measured.txt"), dir.path().join("failed"));
    std::fs::write(&base, BASELINE).unwrap();
    std::fs::write(&now, "requests 500\nget_redis 90000\nput 168500\n").unwrap();
    let output = std::process::Command::new("python3")
        .arg(workspace().join("bench/instructions_check.py"))
        .arg("--failed")
        .args([&failed, &base, &now])
        .output()
        .expect("python3 runs");
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(std::fs::read_to_string(&failed).unwrap(), "get_redis\nput\n");
}

#[test]
fn a_missing_scenario_or_another_request_count_fails() {
    let missing = check(BASELINE, "requests 500\nget_redis 80000\n");
    assert_eq!(missing.status.code(), Some(1));
    assert!(stderr(&missing).contains("put: not measured"), "{}", stderr(&missing));
    let other_count = check(BASELINE, "requests 100\nget_redis 80000\nput 160000\n");
    assert_eq!(other_count.status.code(), Some(1));
    assert!(stderr(&other_count).contains("measured with 100 requests"), "{}", stderr(&other_count));
    let unreadable = check(BASELINE, "requests 500\nget_redis eighty\n");
    assert_ne!(unreadable.status.code(), Some(0), "a malformed measurement never passes");
}
