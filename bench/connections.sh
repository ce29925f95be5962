#!/usr/bin/env bash
# Connection hygiene under an attack that needs no token (issue 12, item 4): 20,000 requests with
# made-up methods, then 20,000 idle or half-sent connections, against the embedded gateway
# (SQLite, no services). Prints what /metrics and the process look like after the junk methods,
# and how /healthz and a new client fare while the connections are held. It reports; it never
# fails on a figure: the exit status is non-zero only when a step itself broke.
#
#   bench/connections.sh                          # 20,000 junk requests, 2 x 10,000 connections held 30 s
#   JUNK=50000 CONNECTIONS=30000 HOLD=60 bench/connections.sh
#   MAX_CONNECTIONS=5000 bench/connections.sh     # the gateway's limits.max_connections (default: derived)
#   KEEP_WORK=1 bench/connections.sh              # keep the clients' output and the gateway log
#   NO_BUILD=1 bench/connections.sh               # use target/release/{shardgate,conn_flood} as they are
#
# See bench/README.md ("Connection hygiene") for what is measured and how to read the table.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" # sets ROOT, the workspace, and works there

JUNK="${JUNK:-20000}"
CONNECTIONS="${CONNECTIONS:-20000}"
HOLD="${HOLD:-30}"
PROBES="${PROBES:-200}"
for v in JUNK CONNECTIONS HOLD PROBES; do
    [[ "${!v}" =~ ^[0-9]+$ && "${!v}" -gt 0 ]] || die "$v must be a positive number (got '${!v}')"
done
BIN="$ROOT/target/release"

require_tools curl python3
build_release "shardgate-api shardgate-bench" shardgate conn_flood

WORK="$(mktemp -d -t sgconn.XXXXXX)"
HOLDERS=()
release() {
    local pid
    for pid in "${HOLDERS[@]}"; do stop_pid "$pid"; done
    stop_gateway
}
cleanup_on_exit

# ---------------------------------------------------------------------------------------------
# Helpers: the gateway process as the kernel sees it, and its metrics
# ---------------------------------------------------------------------------------------------
rss_mib() { awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$GW_PID/status"; }
open_fds() { find "/proc/$GW_PID/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }
fd_limit() { awk '/^Max open files/ { print $4 }' "/proc/$GW_PID/limits"; }
metrics() { curl -s --max-time 10 "$GW_URL/metrics"; }
# metric NAME: the value of the sample line NAME (with its labels, if any) in $WORK/metrics.
metric() { awk -v name="$1" '$1 == name { print $2 }' "$WORK/metrics"; }
# field KEY LINE: the value of KEY=value in one SG... line.
field() { tr ' ' '\n' <<<"$2" | awk -F= -v key="$1" '$1 == key { print $2 }'; }
# The client processes need a socket each: raise their own soft open-file limit to the hard one.
client() { (ulimit -n "$(ulimit -Hn)"; exec "$BIN/conn_flood" "$@"); }

# ---------------------------------------------------------------------------------------------
# The gateway
# ---------------------------------------------------------------------------------------------
gateway_at "127.0.0.1:$(free_port)"
extra=()
[[ -n "${MAX_CONNECTIONS:-}" ]] && extra+=("SHARDGATE_LIMITS__MAX_CONNECTIONS=$MAX_CONNECTIONS")
log "starting the gateway on $GW_ADDR"
start_gateway "${extra[@]}" || die "the gateway did not start: $GW_FAILURE"
metrics >"$WORK/metrics"
CAP="$(metric shardgate_connections_max)"
FD_LIMIT="$(fd_limit)"
RSS_START="$(rss_mib)"

# ---------------------------------------------------------------------------------------------
# 1. Junk methods
# ---------------------------------------------------------------------------------------------
log "sending $JUNK requests with made-up methods over 4 keep-alive connections"
JUNK_LINE="$(client junk "$GW_ADDR" "$JUNK" 4 | grep '^SGJUNK')"
metrics >"$WORK/metrics"
METRICS_BYTES="$(wc -c <"$WORK/metrics")"
REQUEST_SERIES="$(grep -c '^shardgate_http_requests_total{' "$WORK/metrics" || true)"
JUNK_NAMES="$(grep -c 'JUNK' "$WORK/metrics" || true)"
RSS_AFTER_JUNK="$(rss_mib)"

# ---------------------------------------------------------------------------------------------
# 2. Idle and half-sent connections
# ---------------------------------------------------------------------------------------------
log "/healthz before: $PROBES probes, each on a new connection"
PROBE_BEFORE="$(client probe "$GW_ADDR" "$PROBES")"
IDLE=$(( CONNECTIONS / 2 ))
HALF=$(( CONNECTIONS - IDLE ))
log "opening $IDLE idle and $HALF half-sent connections, held ${HOLD}s"
client hold "$GW_ADDR" "$IDLE" idle "$HOLD" >"$WORK/hold-idle.out" 2>&1 &
HOLDERS+=($!)
client hold "$GW_ADDR" "$HALF" half "$HOLD" >"$WORK/hold-half.out" 2>&1 &
HOLDERS+=($!)
for _ in $(seq 1 600); do
    [[ "$(cat "$WORK"/hold-*.out | grep -c "^SGOPEN" || true)" -ge 2 ]] && break
    sleep 0.1
done
OPEN_LINES="$(grep -h '^SGOPEN' "$WORK"/hold-*.out || true)"
FDS_DURING="$(open_fds)"
metrics >"$WORK/metrics"
OPEN_DURING="$(metric shardgate_connections_open)"
log "/healthz while the connections are held"
PROBE_DURING="$(client probe "$GW_ADDR" "$PROBES")"
NEW_CLIENT="$(curl -s -o /dev/null --max-time 10 -w '%{http_code} in %{time_total}s' "$GW_URL/readyz" || echo failed)"
RSS_DURING="$(rss_mib)"
FDS_PEAK="$FDS_DURING"
for pid in "${HOLDERS[@]}"; do wait "$pid" || true; done
HOLDERS=()
HOLD_LINES="$(grep -h '^SGHOLD' "$WORK"/hold-*.out || true)"
metrics >"$WORK/metrics"
CLOSED_HEADER="$(metric 'shardgate_connections_closed_total{reason="header_timeout"}')"
CLOSED_IDLE="$(metric 'shardgate_connections_closed_total{reason="idle_timeout"}')"
CLOSED_CROWDED="$(metric 'shardgate_connections_closed_total{reason="crowded_out"}')"
log "/healthz after"
PROBE_AFTER="$(client probe "$GW_ADDR" "$PROBES")"
EMFILE="$(grep -c 'Too many open files' "$WORK/gateway.log" || true)"

# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------
probe_row() { # label line
    printf '| %s | %s/%s | %s | %s | %s |\n' "$1" "$(field ok "$2")" "$(field count "$2")" \
        "$(field p50_ms "$2")" "$(field p99_ms "$2")" "$(field max_ms "$2")"
}
echo
echo "gateway: open-file limit $FD_LIMIT, limits.max_connections in force $CAP, RSS at start $RSS_START MiB"
echo
echo "### $JUNK requests with made-up methods"
echo
echo "| figure | value |"
echo "| --- | --- |"
echo "| answered | $(field answered "$JUNK_LINE") of $(field requests "$JUNK_LINE") in $(field secs "$JUNK_LINE") s ($(field statuses "$JUNK_LINE")) |"
echo "| /metrics size | $METRICS_BYTES bytes (target < 100 KB) |"
echo "| shardgate_http_requests_total series | $REQUEST_SERIES |"
echo "| lines naming a JUNK method | $JUNK_NAMES |"
echo "| gateway RSS | $RSS_START MiB before, $RSS_AFTER_JUNK MiB after |"
echo
echo "### $CONNECTIONS idle or half-sent connections (held ${HOLD}s)"
echo
echo "| /healthz, new connection each | ok/sent | p50 ms | p99 ms | max ms |"
echo "| --- | --- | --- | --- | --- |"
probe_row "before" "$PROBE_BEFORE"
probe_row "while held" "$PROBE_DURING"
probe_row "after" "$PROBE_AFTER"
echo
echo "| figure | value |"
echo "| --- | --- |"
while read -r line; do
    [[ -n "$line" ]] || continue
    echo "| clients opened ($(field mode "$line")) | $(field opened "$line") opened, $(field failed "$line") failed, in $(field secs "$line") s |"
done <<<"$OPEN_LINES"
while read -r line; do
    [[ -n "$line" ]] || continue
    echo "| closed by the gateway ($(field mode "$line")) | $(field closed_by_server "$line") of $(field opened "$line"); after p50 $(field close_p50_s "$line") s, max $(field close_max_s "$line") s; $(field still_open "$line") still open at the end |"
done <<<"$HOLD_LINES"
echo "| gateway connections open (gauge) once the clients had connected | $OPEN_DURING (cap $CAP) |"
echo "| gateway open file descriptors then | $FDS_PEAK (limit $FD_LIMIT) |"
echo "| a new client: GET /readyz while held | $NEW_CLIENT |"
echo "| gateway closes by reason | header_timeout $CLOSED_HEADER, idle_timeout $CLOSED_IDLE, crowded_out $CLOSED_CROWDED |"
echo "| gateway RSS while held | $RSS_DURING MiB |"
echo "| 'Too many open files' in the gateway log | $EMFILE |"
