# Sourced by scripts/image.sh and scripts/release.sh. `build_dist` builds the `dist` binary of
# the checkout in the current directory:
#
#   cargo build --locked --profile dist -p shardgate-api --bin shardgate
#
# with its target directory in the user's cache (SHARDGATE_DIST_TARGET, by default
# ~/.cache/shardgate/dist-target), outside any checkout: the compiled dependencies (about 400
# crates) stay built across runs and checkouts, so a source change recompiles only the workspace
# crates it touches. Sets `dist_binary` to the binary's path.

DIST_TARGET="${SHARDGATE_DIST_TARGET:-${XDG_CACHE_HOME:-$HOME/.cache}/shardgate/dist-target}"

build_dist() {
    # Cargo judges the workspace's own crates fresh by modification times. The target directory
    # is shared by every checkout on the machine (CI's clones, a developer's tree,
    # scripts/release.sh's export), and another checkout's build may be newer than this one's
    # files though its sources differ: unless the last build came from this checkout, the
    # workspace's crates are built again (their dependencies, the bulk of the build, are kept).
    local stamp="$DIST_TARGET/last-checkout"
    if [ "$(cat "$stamp" 2>/dev/null)" != "$PWD" ]; then
        # The workspace crates the binary is built from: shardgate-api and its path
        # dependencies. Only those: `cargo clean -p` removes files by target name, and the tests
        # crate's `http` test would take the `http` crate with it.
        local members
        members=$(cargo metadata --locked --no-deps --format-version 1 | python3 -c '
import json, sys
packages = {p["name"]: p for p in json.load(sys.stdin)["packages"]}
todo, seen = ["shardgate-api"], set()
while todo:
    name = todo.pop()
    if name not in seen:
        seen.add(name)
        todo += [d["name"] for d in packages[name]["dependencies"] if d.get("path") and d["kind"] != "dev"]
print(" ".join("-p " + name for name in sorted(seen)))')
        # shellcheck disable=SC2086 # one word per flag
        CARGO_TARGET_DIR="$DIST_TARGET" cargo clean --quiet --profile dist $members
    fi
    mkdir -p "$DIST_TARGET"
    echo "$PWD" >"$stamp"
    CARGO_TARGET_DIR="$DIST_TARGET" cargo build --locked --profile dist -p shardgate-api --bin shardgate
    dist_binary="$DIST_TARGET/dist/shardgate"
}
