# Sourced by the scripts that check a running gateway (schemathesis.sh, client-tour.sh,
# deploy-check.sh, docs-page.sh): builds the debug binary, makes a work directory removed on exit,
# and `start_embedded_server` starts the embedded default there on a free loopback port. Sets
# `shardgate` (the binary), `work`, `port`, `base` and `server_pid` (the server's own process);
# the server's log is `$work/server.log`.
#
# On exit the server is stopped (SIGTERM, then SIGKILL after 10 s) and waited for; if a server
# started from the work directory is still alive afterwards, the sourcing script fails.
# `scripts/check-embedded-server.sh` checks this.

TARGET="${CARGO_TARGET_DIR:-target}"
# Built as the test command builds it (`cargo nextest run --workspace` is `cargo test --no-run
# --workspace`, then the tests): with the features of every crate and test of the workspace
# unified, so after scripts/test.sh this builds nothing. `cargo build --bin shardgate` would
# resolve other features and compile a dozen crates again (about 7 minutes on two cores).
# `SHARDGATE_BIN=<binary>` runs that binary instead and builds nothing.
if [ -n "${SHARDGATE_BIN:-}" ]; then
    shardgate="$SHARDGATE_BIN"
else
    cargo test --workspace --no-run --quiet
    shardgate="$PWD/$TARGET/debug/shardgate"
    [ -x "$shardgate" ] || shardgate="$TARGET/debug/shardgate"
fi

work=$(mktemp -d)
server_pid=""

# The processes still running `shardgate serve` on this work directory's data.
servers_left() {
    pgrep -f -- "serve --data-dir $work/data" || true
}

stop_embedded_server() {
    local status=$?
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill "$server_pid" 2>/dev/null || true
        for _ in $(seq 1 100); do
            kill -0 "$server_pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$server_pid" 2>/dev/null; then
            echo "the embedded server (pid $server_pid) did not stop within 10 s of SIGTERM; killing it" >&2
            kill -9 "$server_pid" 2>/dev/null || true
            status=1
        fi
        wait "$server_pid" 2>/dev/null || true
    fi
    local left
    left=$(servers_left)
    if [ -n "$left" ]; then
        echo "an embedded server is still running after the script ended (pids: $(echo $left)); killing it" >&2
        kill -9 $left 2>/dev/null || true
        status=1
    fi
    rm -rf "$work"
    exit "$status"
}
trap stop_embedded_server EXIT

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"

# Starts `shardgate serve` in the work directory (whatever a request makes it create stays there)
# with the environment assignments given as arguments, and waits until it is ready; a server that
# exits first fails the script with its log. The subshell `exec`s the server, so `$!` (kept in
# `server_pid`) is the server's own pid, not that of a shell that would leave it orphaned.
start_embedded_server() {
    (cd "$work" && exec env SHARDGATE_LOG__FILTER=warn "$@" \
        "$shardgate" serve --data-dir "$work/data" --listen "127.0.0.1:$port" >"$work/server.log" 2>&1) &
    server_pid=$!
    for _ in $(seq 1 100); do
        curl -fsS "$base/readyz" >/dev/null 2>&1 && return 0
        kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
        sleep 0.1
    done
    curl -fsS "$base/readyz" >/dev/null
}
