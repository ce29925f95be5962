//! The test command (`scripts/test.sh`, the README's) runs every one of its steps whatever the
//! steps before it did, names each step that failed at the end, and exits non-zero if any did.
//!
//! Each test runs a copy of the script in a tree of its own, beside stand-ins for the scripts it
//! calls and for `cargo` (first on `PATH`), which write what they were asked into a log and fail
//! when told to. Nothing is built and no service is touched.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// The scripts `scripts/test.sh` calls from `scripts/`, each replaced by a stand-in.
const CALLED_SCRIPTS: &[&str] =
    &["services.sh", "chromium.sh", "kubectl.sh", "promtool.sh", "otlp-receiver.sh", "previous-release.sh"];

/// The workspace's root.
fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ is in the workspace").to_path_buf()
}

/// A tree holding the real `scripts/test.sh` (and the files it sources), stand-ins for the
/// scripts it calls, and a stand-in `cargo` in `bin/`.
struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    /// The tree, with each stand-in failing (exit 1) when `fails` holds for what it was called
    /// as (`cargo nextest run ...`, `scripts/chromium.sh`).
    fn new(fails: &[&str]) -> Self {
        let dir = tempfile::Builder::new().prefix("sg-test-command-").tempdir().expect("temp dir");
        let scripts = dir.path().join("scripts");
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&scripts).unwrap();
        std::fs::create_dir_all(&bin).unwrap();
        // The script and what it sources from scripts/ (any shell file it names with `source`
        // or `.`), copied as they are.
        let script = std::fs::read_to_string(workspace().join("scripts/test.sh")).expect("scripts/test.sh");
        std::fs::write(scripts.join("test.sh"), &script).unwrap();
        for sourced in sourced_files(&script) {
            let text = std::fs::read_to_string(workspace().join("scripts").join(&sourced))
                .unwrap_or_else(|e| panic!("scripts/{sourced}, sourced by scripts/test.sh: {e}"));
            std::fs::write(scripts.join(&sourced), text).unwrap();
        }
        let log = dir.path().join("calls.log");
        let stand_in = |called_as: &str| {
            let fail = fails.iter().any(|f| called_as.starts_with(f));
            format!("#!/usr/bin/env bash\necho \"{called_as} $*\" >> '{}'\nexit {}\n", log.display(), u8::from(fail))
        };
        for name in CALLED_SCRIPTS {
            write_executable(&scripts.join(name), &stand_in(&format!("scripts/{name}")));
        }
        // `cargo` fails for the subcommands named in `fails` (`cargo nextest`, `cargo test --workspace --doc`).
        let cargo = format!(
            "#!/usr/bin/env bash\necho \"cargo $*\" >> '{log}'\ncase \"cargo $*\" in\n{cases}\nesac\nexit 0\n",
            log = log.display(),
            cases = fails
                .iter()
                .filter(|f| f.starts_with("cargo "))
                .map(|f| format!("  \"{f}\"*) exit 1 ;;"))
                .collect::<Vec<_>>()
                .join("\n"),
        );
        write_executable(&bin.join("cargo"), &cargo);
        Self { dir }
    }

    /// Runs the script to its end (bounded at 60 s).
    fn run(&self) -> Output {
        let path = format!("{}:{}", self.dir.path().join("bin").display(), std::env::var("PATH").unwrap_or_default());
        let mut child = Command::new("bash")
            .arg(self.dir.path().join("scripts/test.sh"))
            .env("PATH", path)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("bash runs");
        let started = Instant::now();
        while child.try_wait().expect("the script's status").is_none() {
            if started.elapsed() > Duration::from_secs(60) {
                let _ = child.kill();
                panic!("scripts/test.sh did not end within 60 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        child.wait_with_output().expect("the script's output")
    }

    /// The commands the stand-ins were called as, in order.
    fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("calls.log"))
            .unwrap_or_default()
            .lines()
            .map(|line| line.trim_end().to_owned())
            .collect()
    }
}

/// The files of `scripts/` that `script` sources (`source "$here/x.sh"`, `. scripts/x.sh`).
fn sourced_files(script: &str) -> Vec<String> {
    script
        .lines()
        .map(str::trim)
        .filter(|line| line.starts_with("source ") || line.starts_with(". "))
        .filter_map(|line| line.split(['/', ' ', '"']).rfind(|part| part.ends_with(".sh")).map(str::to_owned))
        .collect()
}

fn write_executable(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Everything the script printed, both streams.
fn printed(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

/// The failed steps the script names at its end: the lines after its last line that ends with
/// `failed:` (`2 of 7 steps failed:`), trimmed.
fn named_at_the_end(output: &Output) -> Vec<String> {
    let printed = printed(output);
    let lines: Vec<&str> = printed.lines().collect();
    let Some(heading) = lines.iter().rposition(|line| line.trim_end().ends_with("failed:")) else {
        panic!("no list of failed steps at the end:\n{printed}");
    };
    lines[heading + 1..].iter().map(|line| line.trim().to_owned()).filter(|line| !line.is_empty()).collect()
}

#[test]
fn the_doc_tests_run_after_a_failed_nextest_run_and_the_failure_is_named_at_the_end() {
    let tree = Tree::new(&["cargo nextest"]);
    let output = tree.run();
    let calls = tree.calls();
    assert!(
        calls.iter().any(|c| c.starts_with("cargo test --workspace --doc")),
        "the doc tests run although nextest failed: calls {calls:#?}, output:\n{}",
        printed(&output)
    );
    assert!(!output.status.success(), "a failed step fails the command: {}", printed(&output));
    let named = named_at_the_end(&output);
    assert_eq!(named.len(), 1, "the end names the failed step, and no other: {named:#?}");
    assert!(named[0].starts_with("cargo nextest run"), "{named:#?}");
}

#[test]
fn every_failed_step_is_named_and_every_step_runs() {
    let tree = Tree::new(&["scripts/chromium.sh", "cargo nextest", "cargo test --workspace --doc"]);
    let output = tree.run();
    let calls = tree.calls();
    for expected in [
        "scripts/services.sh",
        "scripts/chromium.sh",
        "scripts/kubectl.sh",
        "scripts/promtool.sh",
        "scripts/otlp-receiver.sh",
        "scripts/previous-release.sh",
    ] {
        assert!(calls.iter().any(|c| c.starts_with(expected)), "{expected} ran: {calls:#?}");
    }
    for expected in ["cargo test --workspace --no-run", "cargo nextest run", "cargo test --workspace --doc"] {
        assert!(calls.iter().any(|c| c.starts_with(expected)), "{expected} ran: {calls:#?}");
    }
    assert!(!output.status.success());
    let named = named_at_the_end(&output);
    assert_eq!(named.len(), 3, "{named:#?}");
    for (name, failed) in named.iter().zip(["scripts/chromium.sh", "cargo nextest run", "cargo test --workspace --doc"])
    {
        assert!(name.starts_with(failed), "the end names {failed}, in the order the steps ran: {named:#?}");
    }
}

#[test]
fn a_run_in_which_every_step_passes_exits_zero() {
    let tree = Tree::new(&[]);
    let output = tree.run();
    assert!(output.status.success(), "{}", printed(&output));
    assert!(tree.calls().iter().any(|c| c.starts_with("cargo test --workspace --doc")), "{:#?}", tree.calls());
}

#[test]
fn a_previous_release_that_cannot_be_built_for_want_of_history_is_no_failure() {
    // scripts/previous-release.sh exits 3 when the checkout has no history: the rolling-upgrade
    // test then says it could not run; the command goes on and passes.
    let tree = Tree::new(&[]);
    let script = tree.dir.path().join("scripts/previous-release.sh");
    write_executable(&script, "#!/usr/bin/env bash\nexit 3\n");
    let output = tree.run();
    assert!(output.status.success(), "{}", printed(&output));
}
