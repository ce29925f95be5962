#!/usr/bin/env bash
# Builds the `shardgate` binary of the previous release and prints its path, for the
# rolling-upgrade test (api/tests/rolling_upgrade.rs), which runs it beside this tree's binary on
# one fleet.
#
# The previous release is the code a rolling upgrade to this tree replaces: the tree just before
# the newest commit that changed migrations/ (the first parent of that commit). Its schema is the
# one this tree's migrations expand, so the test checks what docs/operations.md ("A rolling
# upgrade") promises: an instance of the previous release keeps working on a migrated fleet.
# PREVIOUS_RELEASE=<commit> names another.
#
# The source comes from git (`git archive`, so the checkout's work tree is not touched) and is
# built in a target directory of its own, under this tree's, in which the third-party crates
# already compiled for this tree are copied first (the workspace's own crates are not), and this
# tree's target/debug/shardgate is never overwritten by the old one. The copies serve only where
# the old tree resolves the same features: measured in a fresh clone, about a hundred crates
# still compile (the old manifests ask other features of serde, tokio, rustls...), 4 to 7
# minutes on two cores. The result is kept per commit: a second run prints the path at once.
#
#   scripts/previous-release.sh          # prints .../previous-release/<commit>/target/debug/shardgate
set -euo pipefail
cd "$(dirname "$0")/.."

# Exit status 3 when there is no history to build from (the test then says it could not run).
if [ "$(git rev-parse --is-shallow-repository 2>/dev/null)" = true ]; then
    git fetch --quiet --unshallow 2>/dev/null || true
fi
if [ "$(git rev-parse --is-shallow-repository 2>/dev/null)" != false ]; then
    echo "scripts/previous-release.sh: this checkout has no full git history (a shallow clone that" \
        "cannot be deepened, or no repository), so the previous release cannot be built; clone" \
        "with history" >&2
    exit 3
fi
if [ -n "${PREVIOUS_RELEASE:-}" ]; then
    commit=$(git rev-parse --verify "$PREVIOUS_RELEASE^{commit}")
else
    changed=$(git log -1 --format=%H HEAD -- migrations)
    commit=$(git rev-parse --verify "$changed^1")
fi
target="$(mkdir -p "${CARGO_TARGET_DIR:-target}" && cd "${CARGO_TARGET_DIR:-target}" && pwd)"
home="$target/previous-release/$commit"
binary="$home/target/debug/shardgate"
# Prints the binary and ends the script if it was built already.
done_if_built() {
    if [ -x "$binary" ] && [ -f "$home/built" ]; then
        echo "$binary"
        exit 0
    fi
}
done_if_built

# One build at a time per commit (two test processes may ask together).
mkdir -p "$home"
exec 9>"$home/lock"
flock 9
done_if_built
rm -rf "$home/source"
mkdir -p "$home/source" "$home/target/debug"
git archive "$commit" | tar -x -C "$home/source"

# Third-party crates compiled for this tree, copied (not hard-linked: a rebuild must not write
# through a link into this tree's files). The workspace's crates are all named shardgate-*.
if [ -d "$target/debug/deps" ]; then
    for dir in deps build .fingerprint; do
        [ -d "$target/debug/$dir" ] || continue
        mkdir -p "$home/target/debug/$dir"
        find "$target/debug/$dir" -mindepth 1 -maxdepth 1 ! -name 'shardgate*' ! -name 'libshardgate*' \
            -exec cp -a --reflink=auto -t "$home/target/debug/$dir" {} +
    done
fi

echo "building the previous release (${commit:0:12}) in $home" >&2
# `--workspace` resolves features over the whole old workspace, as the test command does here.
(cd "$home/source" && CARGO_TARGET_DIR="$home/target" CARGO_INCREMENTAL=0 \
    cargo build --quiet --locked --workspace --bin shardgate --examples >&2)
touch "$home/built"
echo "$binary"
