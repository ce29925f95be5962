# Sourced by the scripts that check a running gateway (schemathesis.sh, docs-page.sh): builds the
# debug binary, makes a work directory removed on exit, and `start_embedded_server` starts the
# embedded default there on a free loopback port. Sets `shardgate` (the binary), `work`, `port`,
# `base` and `server_pid`; the server's log is `$work/server.log`.

TARGET="${CARGO_TARGET_DIR:-target}"
cargo build --quiet --bin shardgate
shardgate="$PWD/$TARGET/debug/shardgate"
[ -x "$shardgate" ] || shardgate="$TARGET/debug/shardgate"

work=$(mktemp -d)
server_pid=""
stop_embedded_server() {
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill "$server_pid"
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap stop_embedded_server EXIT

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"

# Starts `shardgate serve` in the work directory (whatever a request makes it create stays there)
# with the environment assignments given as arguments, and waits until it is ready; a server that
# exits first fails the script with its log.
start_embedded_server() {
    (cd "$work" && env SHARDGATE_LOG__FILTER=warn "$@" \
        "$shardgate" serve --data-dir "$work/data" --listen "127.0.0.1:$port" >"$work/server.log" 2>&1) &
    server_pid=$!
    for _ in $(seq 1 100); do
        curl -fsS "$base/readyz" >/dev/null 2>&1 && return 0
        kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
        sleep 0.1
    done
    curl -fsS "$base/readyz" >/dev/null
}
