# Helpers the bench scripts share. A script starts with
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# which sets ROOT (the workspace) and makes it the working directory.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Duration in whole seconds ("15s", "2m", "15").
duration_secs() {
    case "$1" in
        *s) echo "${1%s}" ;;
        *m) echo "$(( ${1%m} * 60 ))" ;;
        *) echo "$1" ;;
    esac
}

# Installs Debian packages (updating the index once if needed).
apt_install() {
    local sudo=()
    [[ "$(id -u)" -eq 0 ]] || sudo=(sudo)
    log "installing $*"
    # RUNLEVEL=1: package scripts must not start system-wide services (nginx on port 80).
    "${sudo[@]}" env RUNLEVEL=1 apt-get install -y "$@" >/dev/null || {
        "${sudo[@]}" apt-get update >/dev/null && "${sudo[@]}" env RUNLEVEL=1 apt-get install -y "$@" >/dev/null
    }
}

# How many compilers and linkers are running (they skew figures).
busy_builds() { pgrep -xc 'rustc|clippy-driver|cc1|cc1plus|ld|cargo|cargo-nextest' 2>/dev/null || true; }

stop_pid() { # pid: SIGTERM, wait for it to exit
    local pid="$1"
    [[ -n "$pid" ]] || return 0
    if kill -0 "$pid" 2>/dev/null; then
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
}

# Dies unless every named tool is on PATH (or, for a path, exists and runs).
require_tools() {
    local tool
    for tool in "$@"; do
        command -v "$tool" >/dev/null || die "$tool is not installed"
    done
}

# build_release "PACKAGE ..." BINARY ...: `cargo build --release` of the packages, or with NO_BUILD
# set, the binaries in $BIN as they are (each must exist).
build_release() {
    local packages=() package binary
    for package in $1; do packages+=(-p "$package"); done
    shift
    if [[ -n "${NO_BUILD:-}" ]]; then
        for binary in "$@"; do
            [[ -x "$BIN/$binary" ]] || die "NO_BUILD is set but $BIN/$binary does not exist"
        done
        log "using the existing $* in $BIN (NO_BUILD), $1 built $(date -r "$BIN/$1" '+%F %T')"
    else
        log "building (release)"
        cargo build --release "${packages[@]}" >&2
    fi
}

# field NAME LINE: the value of NAME=... in a summary line such as bench/paced_get.py prints.
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }

# ratio A B: A/B with 2 decimals, or n/a unless both are figures and B > 0.
ratio() { # a b
    if [[ "$1" =~ ^[0-9.]+$ && "$2" =~ ^[0-9.]+$ ]] && awk -v b="$2" 'BEGIN { exit !(b > 0) }'; then
        awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'
    else
        echo "n/a"
    fi
}
# meets VALUE OP TARGET (OP: >= or <=): yes, no, or n/a unless VALUE is a figure.
meets() { # value op target
    [[ "$1" =~ ^[0-9.]+$ ]] || { echo "n/a"; return; }
    if awk -v v="$1" -v t="$3" -v op="$2" 'BEGIN { exit !(op == ">=" ? v >= t : v <= t) }'; then echo yes; else echo no; fi
}

# A TCP port on 127.0.0.1 that nothing listens on right now.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Deletes the bench's Redis keys: those under $PREFIX, reached with the redis-cli options in
# $REDIS (never FLUSHALL: the Redis is shared).
flush_prefix() {
    redis-cli "${REDIS[@]}" --scan --pattern "${PREFIX}*" | xargs -r redis-cli "${REDIS[@]}" del >/dev/null
}

# The benches' PostgreSQL databases: the names in $DBS, reached with the psql options in $PG.
drop_dbs() {
    local db
    for db in "${DBS[@]}"; do
        psql "${PG[@]}" -q -v ON_ERROR_STOP=1 -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" postgres >/dev/null
    done
}
create_fresh_dbs() {
    local db
    log "creating fresh databases ${DBS[*]}"
    drop_dbs
    for db in "${DBS[@]}"; do
        psql "${PG[@]}" -q -v ON_ERROR_STOP=1 -c "CREATE DATABASE $db" postgres >/dev/null
    done
}

# cleanup_on_exit: from here on, leaving the script (normally, on an error, INT or TERM) runs the
# script's own `release` (stop its processes, drop its databases), prints the end of each gateway
# log in $WORK if the run failed, and removes $WORK unless KEEP_WORK is set (then it says that
# ${KEPT:-raw outputs} are kept).
cleanup_on_exit() {
    trap on_exit EXIT
    trap 'exit 130' INT TERM
}
on_exit() {
    local status=$? logfile
    set +e
    release
    if [[ $status -ne 0 ]]; then
        for logfile in "$WORK"/gateway*.log; do
            [[ -f "$logfile" ]] || continue
            echo "--- last lines of $logfile ---" >&2
            tail -n 20 "$logfile" >&2
        done
    fi
    if [[ -n "${KEEP_WORK:-}" ]]; then
        echo "${KEPT:-raw outputs} kept in $WORK" >&2
    else
        rm -rf "$WORK"
    fi
    exit "$status"
}

# gateway_at ADDR: where the gateway listens ($GW_ADDR, $GW_URL) and the settings every bench gives
# it (data in $WORK/data, warnings only).
gateway_at() {
    GW_ADDR="$1"
    GW_URL="http://$GW_ADDR"
    export SHARDGATE_LISTEN="$GW_ADDR"
    export SHARDGATE_DATA_DIR="$WORK/data"
    export SHARDGATE_LOG__FILTER=warn
    mkdir -p "$SHARDGATE_DATA_DIR"
}

# start_gateway [VAR=value ...]: starts $BIN/shardgate with these extra variables (its output in
# ${GW_LOG:-$WORK/gateway.log}) and waits for /readyz = 200 at $GW_URL. Returns 1 (gateway stopped,
# reason in $GW_FAILURE) if it exits or is not ready after 60 s.
GW_PID=""
GW_FAILURE=""
start_gateway() {
    local logfile="${GW_LOG:-$WORK/gateway.log}" _
    stop_gateway
    env "$@" "$BIN/shardgate" serve >"$logfile" 2>&1 &
    GW_PID=$!
    for _ in $(seq 1 300); do
        if ! kill -0 "$GW_PID" 2>/dev/null; then
            wait "$GW_PID" 2>/dev/null || true
            GW_PID=""
            GW_FAILURE="$(grep -v '^\s*$' "$logfile" | tail -n 3 | tr '\n' ' ')"
            return 1
        fi
        [[ "$(curl -s -o /dev/null -w '%{http_code}' "$GW_URL/readyz")" == 200 ]] && return 0
        sleep 0.2
    done
    GW_FAILURE="not ready after 60 s: $(curl -s "$GW_URL/readyz")"
    stop_gateway
    return 1
}
stop_gateway() {
    stop_pid "$GW_PID"
    GW_PID=""
}
