#!/usr/bin/env bash
# The test command: every unit, conformance (SQLite and PostgreSQL) and doc test of the workspace.
# Needs PostgreSQL on 127.0.0.1:5432 (user postgres, trust auth) and Redis on 127.0.0.1:6379,
# which scripts/services.sh starts, and Debian's Chromium with its WebDriver for the console's
# browser tests, which scripts/chromium.sh installs, kubectl (scripts/kubectl.sh) for the test
# that starts the binary with the Kubernetes manifests' settings, promtool (scripts/promtool.sh)
# for the test that parses the monitoring queries, and the git history (the
# rolling-upgrade test builds the previous release from it). About half an hour on two cores.
#
# Every step runs, whatever the steps before it did (a failed nextest run still leaves the doc
# tests to run); the end names each step that failed, and the exit status is 1 if any did.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/steps.sh

# The previous release's binary for the rolling-upgrade test (api/tests/rolling_upgrade.rs);
# exit status 3 says the checkout has no history to build it from: the test then says it could
# not run, and that is no failure of this command.
previous_release() {
    scripts/previous-release.sh >/dev/null || [ $? -eq 3 ]
}

step "scripts/services.sh" scripts/services.sh
step "scripts/chromium.sh" scripts/chromium.sh
step "scripts/kubectl.sh" scripts/kubectl.sh
# promtool parses the dashboards' and alerts' queries (api/tests/monitoring.rs).
step "scripts/promtool.sh" scripts/promtool.sh
step "scripts/otlp-receiver.sh" scripts/otlp-receiver.sh
# The build first, then the previous release (built beside this build's crates): both before the
# tests, so that they do not compete with them.
step "cargo test --workspace --no-run" cargo test --workspace --no-run --quiet
step "scripts/previous-release.sh" previous_release
step "cargo nextest run --workspace" cargo nextest run --workspace --no-fail-fast
# nextest does not run doc tests (the examples in doc comments); cargo test does.
step "cargo test --workspace --doc" cargo test --workspace --doc
finish
