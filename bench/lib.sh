# Helpers the bench scripts share: `source "$ROOT/bench/lib.sh"` after `cd "$ROOT"`.

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
