#!/usr/bin/env bash
# The test command: every unit, conformance (SQLite and PostgreSQL) and doc test of the workspace.
# Needs PostgreSQL on 127.0.0.1:5432 (user postgres, trust auth) and Redis on 127.0.0.1:6379,
# which scripts/services.sh starts, and Debian's Chromium with its WebDriver for the console's
# browser tests, which scripts/chromium.sh installs, kubectl (scripts/kubectl.sh) for the test
# that starts the binary with the Kubernetes manifests' settings, and the git history (the
# rolling-upgrade test builds the previous release from it).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/services.sh >/dev/null
scripts/chromium.sh
scripts/kubectl.sh
# The build first, then the previous release's binary for the rolling-upgrade test
# (api/tests/rolling_upgrade.rs), which scripts/previous-release.sh builds from git history beside
# this build's crates: built here, before the tests, so it does not compete with them.
cargo test --workspace --no-run --quiet
scripts/previous-release.sh >/dev/null || [ $? -eq 3 ]
cargo nextest run --workspace --no-fail-fast
# nextest does not run doc tests (the examples in doc comments); cargo test does.
cargo test --workspace --doc
