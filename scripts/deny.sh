#!/usr/bin/env bash
# Checks the dependency graph (Cargo.lock) against deny.toml with cargo-deny (crates.io, pinned
# below, installed into the user's cache by scripts/cargo-tool.sh): licences, bans, sources and,
# when a copy of the RustSec advisory database is at hand, advisories. Run by .ci/run. Nothing
# is fetched at check time (`--frozen`: offline, Cargo.lock as it is): not the crates index, not
# the advisory database.
#
# The advisory database: cargo-deny reads a git clone of github.com/rustsec/advisory-db at the
# place deny.toml's db-path and db-urls name (below, ADVISORY_DB). This script lays it out from
# SHARDGATE_ADVISORY_DB when that names a clone of the database (any git clone, bare or not,
# e.g. one brought by hand or shared by a team), and otherwise uses the copy already there.
# With neither it checks the other three, says plainly that advisories were NOT checked, and
# exits 0: a machine with no copy of the database cannot check it, and says so rather than
# failing every run. A copy older than deny.toml's maximum-db-staleness fails the check.
#
#   scripts/deny.sh
#   SHARDGATE_ADVISORY_DB=/path/to/advisory-db scripts/deny.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/cargo-tool.sh

CARGO_DENY_VERSION=0.20.2
cargo_deny=$(cargo_tool cargo-deny "$CARGO_DENY_VERSION")

# deny.toml: db-path "~/.cache/shardgate/advisory-dbs", db-urls ["https://github.com/rustsec/advisory-db"].
# cargo-deny keeps each database in "<last segment of the URL>-<XxHash64 of the URL, seed
# 0xca80de71, 16 hex digits>" under db-path; for that URL the name is the one below (a change of
# the URL or of cargo-deny's naming shows as "failed to open" in the advisories check).
ADVISORY_DB="$HOME/.cache/shardgate/advisory-dbs/advisory-db-3157b0e258782691"

if [ -n "${SHARDGATE_ADVISORY_DB:-}" ]; then
    echo "laying out the advisory database from $SHARDGATE_ADVISORY_DB"
    rm -rf "$ADVISORY_DB.new"
    git clone --quiet "$SHARDGATE_ADVISORY_DB" "$ADVISORY_DB.new"
    rm -rf "$ADVISORY_DB"
    mv "$ADVISORY_DB.new" "$ADVISORY_DB"
fi

checks=(licenses bans sources)
if git -C "$ADVISORY_DB" rev-parse --verify --quiet HEAD >/dev/null 2>&1; then
    checks+=(advisories)
    echo "advisory database: $ADVISORY_DB, commit $(git -C "$ADVISORY_DB" log -1 --format='%h of %cs')"
fi

# cargo-deny reads the metadata of every platform's crates (windows-sys among them), which a
# build on Linux never downloads: fetch them first (crates.io, Cargo.lock as it is; nothing to do
# when they are in the cache), so a fresh machine's check does not stop at a missing source.
cargo fetch --locked --quiet

status=0
PATH="$(dirname "$cargo_deny"):$PATH" cargo deny --frozen check --show-stats --hide-inclusion-graph "${checks[@]}" || status=$?
if [[ " ${checks[*]} " != *" advisories "* ]]; then
    echo "ADVISORIES NOT CHECKED: no advisory database at $ADVISORY_DB; give a clone of" >&2
    echo "github.com/rustsec/advisory-db as SHARDGATE_ADVISORY_DB (docs/deploy.md, \"Release artefacts\")" >&2
fi
exit "$status"
