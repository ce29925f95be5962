#!/usr/bin/env bash
# Load harness of shardgate: runs the gateway on PostgreSQL shards (+ Redis cache) under wrk and
# compares each scenario with its physical baseline (HTTP ceiling, redis-benchmark, pgbench) at the
# same concurrency. Prints one markdown table. It reports; it never fails on a figure: the exit
# status is non-zero only when a step itself broke.
#
#   bench/run.sh                          # 15 s per measurement, 32 connections, 2 threads
#   DURATION=5s CONNECTIONS=64 bench/run.sh
#   KEEP_WORK=1 bench/run.sh              # keep the raw wrk/pgbench/redis-benchmark outputs
#   NO_BUILD=1 bench/run.sh               # the release binaries as they are (no cargo build)
#
# See bench/README.md ("Load harness") for what each scenario measures and how to read the table.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" # sets ROOT, the workspace, and works there

DURATION="${DURATION:-15s}"
CONNECTIONS="${CONNECTIONS:-32}"
THREADS=2
KEYS=10000
TENANT=bench
PREFIX=sgbench                       # Redis key prefix of everything the harness writes
DBS=(sgbench_cat sgbench_s0 sgbench_s1)
GW_ADDR=127.0.0.1:18081
CEILING_ADDR=127.0.0.1:18080
PG=(-h 127.0.0.1 -p 5432 -U postgres)
export PGOPTIONS="-c client_min_messages=warning"  # no NOTICEs from DROP ... IF EXISTS
REDIS=(-h 127.0.0.1 -p 6379)
BIN="$ROOT/target/release"
export WRK_DIR="$ROOT/bench/wrk" KEYS TENANT


SECS="$(duration_secs "$DURATION")"
[[ "$SECS" =~ ^[0-9]+$ && "$SECS" -gt 0 ]] || die "DURATION must look like 15s, 2m or 15 (got '$DURATION')"
[[ "$CONNECTIONS" =~ ^[0-9]+$ ]] || die "CONNECTIONS must be a number (got '$CONNECTIONS')"

# ---------------------------------------------------------------------------------------------
# Tools and services
# ---------------------------------------------------------------------------------------------
command -v wrk >/dev/null || apt_install wrk
command -v pgbench >/dev/null || apt_install postgresql-contrib
command -v redis-benchmark >/dev/null || apt_install redis-tools
command -v pgbouncer >/dev/null || [[ -x /usr/sbin/pgbouncer ]] || apt_install pgbouncer
PATH="$PATH:/usr/sbin"
require_tools wrk pgbench redis-benchmark redis-cli psql curl

log "starting PostgreSQL and Redis if needed"
scripts/services.sh >&2

build_release "shardgate-api shardgate-bench" shardgate ceiling

# ---------------------------------------------------------------------------------------------
# State and cleanup
# ---------------------------------------------------------------------------------------------
WORK="$(mktemp -d -t sgbench.XXXXXX)"
CEILING_PID=""

# stop_pgbouncer: stops the PgBouncer this run started, if it runs.
stop_pgbouncer() {
    local pid _
    pid="$(cat "${PGB_DIR:-/nonexistent}/pgbouncer.pid" 2>/dev/null)" || return 0
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    rm -f "$PGB_DIR/pgbouncer.pid"
}
release() {
    stop_pid "$GW_PID"
    stop_pid "$CEILING_PID"
    stop_pgbouncer
    drop_dbs 2>/dev/null
    flush_prefix 2>/dev/null
}
cleanup_on_exit

# ---------------------------------------------------------------------------------------------
# Databases, Redis prefix, gateway configuration
# ---------------------------------------------------------------------------------------------
create_fresh_dbs
flush_prefix

gateway_at "$GW_ADDR"
export SHARDGATE_STORAGE__CATALOG_URL="postgres://postgres@127.0.0.1:5432/sgbench_cat"
export SHARDGATE_STORAGE__SHARDS='[{id="s0",url="postgres://postgres@127.0.0.1:5432/sgbench_s0"},{id="s1",url="postgres://postgres@127.0.0.1:5432/sgbench_s1"}]'

# The production configuration: rate limits on (the default), decided in Redis for every scenario.
export SHARDGATE_RATE_LIMITS__REDIS_URL=redis://127.0.0.1:6379 SHARDGATE_RATE_LIMITS__KEY_PREFIX="$PREFIX:rl"
# Cache settings of the scenarios (passed to the gateway only, on top of the exported ones).
CACHE_L1=(SHARDGATE_CACHE__REDIS_URL=redis://127.0.0.1:6379 SHARDGATE_CACHE__KEY_PREFIX="$PREFIX" SHARDGATE_CACHE__L1__ENABLED=true)
CACHE_REDIS=(SHARDGATE_CACHE__REDIS_URL=redis://127.0.0.1:6379 SHARDGATE_CACHE__KEY_PREFIX="$PREFIX" SHARDGATE_CACHE__L1__ENABLED=false)
CACHE_OFF=(SHARDGATE_CACHE__ENABLED=false)

# A configuration the gateway rejects (an unknown SHARDGATE_CACHE__* key, while the cache settings
# are not in this build) skips the scenarios that need it; any other start-up failure is an error.
config_rejected() { grep -qiE 'invalid configuration|unknown (field|key)' <<<"$GW_FAILURE"; }

NO_CACHE_SETTINGS=""
log "starting the gateway, cache disabled"
if ! start_gateway "${CACHE_OFF[@]}"; then
    config_rejected || die "the gateway does not start: $GW_FAILURE"
    NO_CACHE_SETTINGS="$GW_FAILURE"
    log "cache settings rejected; continuing without them: $GW_FAILURE"
    CACHE_OFF=()
    start_gateway || die "the gateway does not start: $GW_FAILURE"
fi

# ---------------------------------------------------------------------------------------------
# Tokens, tenant, seeding
# ---------------------------------------------------------------------------------------------
ADMIN_TOKEN="$("$BIN/shardgate" token --admin --data-dir "$SHARDGATE_DATA_DIR")"
printf 'header = "Authorization: Bearer %s"\n' "$ADMIN_TOKEN" >"$WORK/admin.curl"
chmod 600 "$WORK/admin.curl"

# The tenant's own rate limit is far above what this machine can send: the limiter runs on every
# request (its cost is measured) but never refuses.
log "creating tenant $TENANT"
code="$(curl -s -o "$WORK/tenant.json" -w '%{http_code}' -K "$WORK/admin.curl" \
    -H 'Content-Type: application/json' \
    -d "{\"id\":\"$TENANT\",\"rate_limit\":{\"per_second\":1000000000,\"burst\":1000000000}}" \
    "http://$GW_ADDR/v1/admin/tenants")"
[[ "$code" == 201 || "$code" == 200 ]] || die "creating the tenant answered $code: $(cat "$WORK/tenant.json")"

# Minted after the tenant exists: a token issued in a second before the tenant's creation is
# refused (it cannot be for this incarnation of the tenant).
TOKEN="$("$BIN/shardgate" token --tenant "$TENANT" --scopes read,write --ttl 2h --data-dir "$SHARDGATE_DATA_DIR")"
export TOKEN
printf 'header = "Authorization: Bearer %s"\n' "$TOKEN" >"$WORK/tenant.curl"
chmod 600 "$WORK/tenant.curl"

route="$(curl -sf -K "$WORK/admin.curl" "http://$GW_ADDR/v1/admin/route?tenant=$TENANT")" || die "GET /v1/admin/route failed"
HOME_SHARD="$(sed -n 's/.*"shard":"\([^"]*\)".*/\1/p' <<<"$route")"
case "$HOME_SHARD" in
    s0 | s1) HOME_DB="sgbench_$HOME_SHARD" ;;
    *) die "unexpected route answer: $route" ;;
esac
log "tenant $TENANT lives on shard $HOME_SHARD (database $HOME_DB)"

# One pass over all keys with curl's parallel mode (one process, 32 transfers at a time). Prints
# the number of answers that were not 2xx.
one_pass() { # method (GET|PUT)
    local method="$1" cfg="$WORK/pass.curl"
    {
        cat "$WORK/tenant.curl"
        if [[ "$method" == PUT ]]; then
            echo 'request = "PUT"'
            echo 'header = "Content-Type: application/json"'
            echo 'data-binary = "{\"n\":0,\"pad\":\"xxxxxxxxxxxxxxxxxxxxxxxx\"}"'
        fi
        awk -v n="$KEYS" -v base="http://$GW_ADDR/v1/tenants/$TENANT/collections/items/records/" \
            'BEGIN { for (i = 0; i < n; i++) printf "url = \"%sk-%05d\"\noutput = \"/dev/null\"\n", base, i }'
    } >"$cfg"
    curl -s --no-progress-meter --parallel --parallel-max 32 -K "$cfg" -w '%{http_code}\n' | grep -cv '^2' || true
}

log "seeding $KEYS records"
bad="$(one_pass PUT)"
[[ "$bad" -eq 0 ]] || die "seeding: $bad of $KEYS PUTs were not 2xx"

# ---------------------------------------------------------------------------------------------
# Measurements
# ---------------------------------------------------------------------------------------------
declare -A RPS P50 P99 NOTE

# Where the CPU of the runs named in SPLIT (in the order of their table) goes, by process:
# bench/cpu_split.py samples the middle of the run (from 2 s after its start to 2 s before its
# end) into CPU_SPLIT[name].
declare -A CPU_SPLIT
SPLIT=(put put_unbatched pg_put pgb_put get_uncached pg_select pgb_select)
CPU_PID=""
split_start() { # name
    CPU_PID=""
    [[ " ${SPLIT[*]} " == *" $1 "* && "$SECS" -gt 6 ]] || return 0
    (sleep 2 && python3 "$ROOT/bench/cpu_split.py" "$((SECS - 4))" >"$WORK/cpu-$1.txt") &
    CPU_PID=$!
}
split_end() { # name
    [[ -n "$CPU_PID" ]] || return 0
    wait "$CPU_PID" || true
    CPU_SPLIT[$1]="$(grep '^SGCPU ' "$WORK/cpu-$1.txt" 2>/dev/null || true)"
}

# run_wrk NAME URL SCRIPT: fills RPS/P50/P99 (ms) for NAME.
run_wrk() { # name url script [connections]
    local name="$1" url="$2" script="$3" connections="${4:-$CONNECTIONS}" out line threads="$THREADS"
    [[ "$connections" -ge "$threads" ]] || threads="$connections"
    log "wrk: $name ($DURATION, $connections connections, $threads threads)"
    split_start "$name"
    out="$(wrk -t"$threads" -c"$connections" -d"$DURATION" --latency -s "$script" "$url")"
    split_end "$name"
    printf '%s\n' "$out" >"$WORK/wrk-$name.txt"
    line="$(grep '^SGBENCH ' <<<"$out" || true)"
    [[ -n "$line" ]] || die "wrk printed no summary for $name: $out"
    RPS[$name]="$(field rps "$line")"
    P50[$name]="$(us_to_ms "$(field p50_us "$line")")"
    P99[$name]="$(us_to_ms "$(field p99_us "$line")")"
    local non2xx errors
    non2xx="$(field non2xx "$line")"
    errors="$(field socket_errors "$line")"
    if [[ "$non2xx" != 0 || "$errors" != 0 ]]; then
        NOTE[$name]="$non2xx non-2xx answers, $errors socket errors"
    fi
}
us_to_ms() { awk -v us="$1" 'BEGIN { printf "%.3f", us / 1000 }'; }

skip() { # name reason
    RPS[$1]="n/a"; P50[$1]="n/a"; P99[$1]="n/a"; NOTE[$1]="not run: $2"
}

REJECTED=""   # the gateway's words when it rejected a cache configuration

# cache_gateway NAME VAR=value...: restarts the gateway with these cache settings on an empty
# cache prefix and warms the cache with one GET per key. On a rejected configuration, marks NAME
# as not run and returns 1.
cache_gateway() {
    local name="$1" bad
    shift
    flush_prefix
    log "restarting the gateway: $*"
    if ! start_gateway "$@"; then
        config_rejected || die "the gateway does not start with $*: $GW_FAILURE"
        REJECTED="$GW_FAILURE"
        skip "$name" "the gateway rejects its cache settings (see below)"
        return 1
    fi
    log "warming the cache (one GET per key)"
    bad="$(one_pass GET)"
    [[ "$bad" -eq 0 ]] || NOTE[$name]="warm-up: $bad of $KEYS GETs were not 2xx"
}
[[ -z "$NO_CACHE_SETTINGS" ]] || REJECTED="$NO_CACHE_SETTINGS"

# (c) uncached GET (the gateway started above has the cache disabled).
run_wrk get_uncached "$GW_URL" bench/wrk/get.lua
[[ -z "$NO_CACHE_SETTINGS" ]] || NOTE[get_uncached]="run with the cache variables omitted (this build rejects them)"

# (b) GET from Redis, L1 off; (d) PUT with the same settings.
if cache_gateway get_redis "${CACHE_REDIS[@]}"; then
    run_wrk get_redis "$GW_URL" bench/wrk/get.lua
    run_wrk put "$GW_URL" bench/wrk/put.lua
    run_wrk put_c1 "$GW_URL" bench/wrk/put.lua 1
    # The same with smart batching off: what batching gains, as a ratio within one run. The
    # one-client runs with batching on and off follow each other, so that both meet the same
    # machine.
    log "restarting the gateway: batching off"
    start_gateway "${CACHE_REDIS[@]}" SHARDGATE_STORAGE__BATCHING__ENABLED=false \
        || die "the gateway does not start with batching off: $GW_FAILURE"
    run_wrk put_unbatched_c1 "$GW_URL" bench/wrk/put.lua 1
    run_wrk put_unbatched "$GW_URL" bench/wrk/put.lua
    start_gateway "${CACHE_OFF[@]}" SHARDGATE_STORAGE__BATCHING__ENABLED=false \
        || die "the gateway does not start with batching off: $GW_FAILURE"
    run_wrk get_uncached_unbatched "$GW_URL" bench/wrk/get.lua
    run_wrk get_uncached_unbatched_c1 "$GW_URL" bench/wrk/get.lua 1
    log "restarting the gateway: batching on, cache off"
    start_gateway "${CACHE_OFF[@]}" || die "the gateway does not start: $GW_FAILURE"
    run_wrk get_uncached_c1 "$GW_URL" bench/wrk/get.lua 1
else
    LABEL_PUT="PUT (cache settings rejected: run with the cache off)"
    start_gateway "${CACHE_OFF[@]}" || die "the gateway does not start: $GW_FAILURE"
    run_wrk put "$GW_URL" bench/wrk/put.lua
fi

# (a) GET from L1, then the same with the limiter off: their ratio is what the limiter costs.
if cache_gateway get_l1 "${CACHE_L1[@]}"; then
    run_wrk get_l1 "$GW_URL" bench/wrk/get.lua
fi
if cache_gateway get_l1_unlimited "${CACHE_L1[@]}" SHARDGATE_RATE_LIMITS__ENABLED=false; then
    run_wrk get_l1_unlimited "$GW_URL" bench/wrk/get.lua
fi
stop_gateway

# (e) HTTP ceiling.
log "starting the HTTP ceiling on $CEILING_ADDR"
"$BIN/ceiling" "$CEILING_ADDR" >"$WORK/ceiling.log" 2>&1 &
CEILING_PID=$!
for _ in $(seq 1 100); do
    curl -sf -o /dev/null "http://$CEILING_ADDR/" && break
    kill -0 "$CEILING_PID" 2>/dev/null || die "ceiling exited: $(cat "$WORK/ceiling.log")"
    sleep 0.1
done
run_wrk ceiling "http://$CEILING_ADDR" bench/wrk/ceiling.lua
stop_pid "$CEILING_PID"
CEILING_PID=""

# Baselines: pgbench on the tenant's home shard database.
# p50/p99 from pgbench's per-transaction log (column 3: latency in µs), nearest rank.
pg_percentiles() { # log-prefix -> "p50_ms p99_ms"
    cat "$1".* | awk '{ print $3 }' | sort -n | awk '
        { v[NR] = $1 }
        END {
            if (NR == 0) { print "n/a n/a"; exit }
            i50 = int(NR * 0.50); if (i50 < NR * 0.50) i50++; if (i50 < 1) i50 = 1
            i99 = int(NR * 0.99); if (i99 < NR * 0.99) i99++; if (i99 < 1) i99 = 1
            printf "%.3f %.3f\n", v[i50] / 1000, v[i99] / 1000
        }'
}
# PGBENCH_AT (the connection options, default "${PG[*]}") and PGBENCH_MODE (the query protocol,
# default prepared) for the runs through PgBouncer.
run_pgbench() { # name args...
    local name="$1" out tps p at
    shift
    read -ra at <<<"${PGBENCH_AT:-${PG[*]}}"
    log "pgbench: $name ($SECS s, $CONNECTIONS clients, $THREADS threads)"
    split_start "$name"
    out="$(cd "$WORK" && pgbench "${at[@]}" -n -M "${PGBENCH_MODE:-prepared}" -c "$CONNECTIONS" -j "$THREADS" \
        -T "$SECS" -l --log-prefix="$WORK/pg-$name" "$@" "$HOME_DB" 2>&1)" || die "pgbench $name failed: $out"
    split_end "$name"
    printf '%s\n' "$out" >"$WORK/pgbench-$name.txt"
    tps="$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time).*/\1/p' <<<"$out")"
    [[ -n "$tps" ]] || tps="$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out" | tail -n 1)"
    RPS[$name]="${tps:-n/a}"
    read -r P50[$name] P99[$name] <<<"$(pg_percentiles "$WORK/pg-$name")"
    if grep -q 'number of failed transactions: [1-9]' <<<"$out"; then
        NOTE[$name]="$(grep 'number of failed transactions' <<<"$out")"
    fi
}
log "initialising pgbench tables in $HOME_DB (beside the records table)"
pgbench "${PG[@]}" -i -s 1 -q "$HOME_DB" >/dev/null 2>&1 || die "pgbench -i failed"
run_pgbench pg_select -S
run_pgbench pg_put -f "$ROOT/bench/pgbench/put.sql"

# Peers: the same two through PgBouncer (Debian's), transaction pooling, what users put in front
# of PostgreSQL; as many server connections as a gateway's pool to one shard (twice the CPUs). It
# runs as postgres (it refuses root) from a directory of its own, on a free port, and is stopped
# at the end. PgBouncer before 1.21 keeps no prepared statement across transactions, so pgbench
# runs through it with the extended protocol (-M extended: parse, bind, execute each time).
PGB_DIR="$WORK/pgbouncer"
mkdir -p "$PGB_DIR"
PGB_PORT="$(free_port)"
printf '"postgres" ""\n' >"$PGB_DIR/users.txt"
cat >"$PGB_DIR/pgbouncer.ini" <<INI
[databases]
$HOME_DB = host=127.0.0.1 port=5432 dbname=$HOME_DB user=postgres
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PGB_PORT
unix_socket_dir =
auth_type = trust
auth_file = $PGB_DIR/users.txt
pool_mode = transaction
default_pool_size = $((2 * $(nproc)))
max_client_conn = $((CONNECTIONS + 16))
ignore_startup_parameters = extra_float_digits,options
logfile = $PGB_DIR/pgbouncer.log
pidfile = $PGB_DIR/pgbouncer.pid
INI
chown -R postgres "$PGB_DIR"
chmod 755 "$WORK"
log "starting PgBouncer on 127.0.0.1:$PGB_PORT (transaction pooling, $((2 * $(nproc))) server connections)"
runuser -u postgres -- pgbouncer -d "$PGB_DIR/pgbouncer.ini" || die "PgBouncer did not start: $(tail -n 3 "$PGB_DIR/pgbouncer.log")"
for _ in $(seq 1 50); do
    psql -h 127.0.0.1 -p "$PGB_PORT" -U postgres -Atc 'SELECT 1' "$HOME_DB" &>/dev/null && break
    sleep 0.1
done
PGBENCH_AT="-h 127.0.0.1 -p $PGB_PORT -U postgres" PGBENCH_MODE=extended run_pgbench pgb_select -S
PGBENCH_AT="-h 127.0.0.1 -p $PGB_PORT -U postgres" PGBENCH_MODE=extended \
    run_pgbench pgb_put -f "$ROOT/bench/pgbench/put.sql"
stop_pgbouncer

# Baseline: redis-benchmark GET of values the size of a cached record, under the harness prefix.
log "redis-benchmark: GET (32 clients, $THREADS threads, no pipelining)"
awk -v n="$KEYS" -v p="$PREFIX" 'BEGIN {
    v = sprintf("%0110d", 0)
    for (i = 0; i < n; i++) printf "SET %s:rb:%012d %s\r\n", p, i, v
}' | redis-cli "${REDIS[@]}" --pipe >/dev/null
rb_threads=()
redis-benchmark --help 2>&1 | grep -q -- '--threads' && rb_threads=(--threads "$THREADS")
redis_bench() { # requests -> csv line of the GET test
    redis-benchmark "${REDIS[@]}" -c "$CONNECTIONS" -n "$1" -P 1 -r "$KEYS" "${rb_threads[@]}" --csv \
        GET "$PREFIX:rb:__rand_int__" | tail -n 1
}
# A short calibration run sizes -n for about DURATION.
calib="$(redis_bench 50000)"
calib_rps="$(tr -d '"' <<<"$calib" | cut -d, -f2)"
rb_n="$(awk -v r="${calib_rps:-0}" -v s="$SECS" 'BEGIN { n = int(r * s); if (n < 50000) n = 50000; print n }')"
csv="$(redis_bench "$rb_n")"
printf '%s\n' "$csv" >"$WORK/redis-benchmark.csv"
# CSV columns (redis-benchmark >= 6.2): test, rps, avg, min, p50, p95, p99, max (ms).
IFS=, read -r _ rb_rps _ _ rb_p50 _ rb_p99 _ <<<"$(tr -d '"' <<<"$csv")"
RPS[redis_get]="${rb_rps:-n/a}"
P50[redis_get]="${rb_p50:-n/a}"
P99[redis_get]="${rb_p99:-n/a}"
[[ "${P50[redis_get]}" =~ ^[0-9.]+$ ]] || { P50[redis_get]="n/a"; P99[redis_get]="n/a"; }

# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------
fmt_rps() { [[ "$1" =~ ^[0-9.]+$ ]] && printf '%.0f' "$1" || echo "$1"; }

declare -A LABEL=(
    [get_l1]="GET, L1 cache"
    [get_l1_unlimited]="GET, L1 cache, rate limits off"
    [get_redis]="GET, Redis cache (L1 off)"
    [get_uncached]="GET, uncached"
    [put]="PUT (Redis cache, L1 off)"
    [put_c1]="PUT, 1 client"
    [put_unbatched]="PUT, batching off"
    [put_unbatched_c1]="PUT, 1 client, batching off"
    [get_uncached_c1]="GET, uncached, 1 client"
    [get_uncached_unbatched]="GET, uncached, batching off"
    [get_uncached_unbatched_c1]="GET, uncached, 1 client, batching off"
    [ceiling]="HTTP ceiling (axum, fixed body)"
    [redis_get]="redis-benchmark GET"
    [pg_select]="pgbench -S"
    [pg_put]="pgbench put.sql"
    [pgb_select]="pgbench -S through PgBouncer"
    [pgb_put]="pgbench put.sql through PgBouncer"
)
[[ -z "${LABEL_PUT:-}" ]] || LABEL[put]="$LABEL_PUT"

echo
echo "## shardgate load harness"
echo
echo "$DURATION per run, $CONNECTIONS connections/clients, $THREADS threads; $KEYS records of tenant \`$TENANT\` on shard $HOME_SHARD; $(nproc) CPUs shared by load generator and server."
echo
echo "| scenario | req/s | p50 ms | p99 ms | baseline | baseline req/s | baseline p50 ms | baseline p99 ms | ratio | target | meets |"
echo "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |"
for pair in "get_l1 ceiling 0.6" "get_redis redis_get 0.4" "get_uncached pg_select 0.6" "put pg_put 1.0" \
    "put_unbatched pg_put 0.6" "put put_unbatched 1.0" "get_uncached get_uncached_unbatched 1.0" "get_l1 get_l1_unlimited 0.95" \
    "get_uncached pgb_select 1.0" "put pgb_put 1.5"; do
    read -r s b t <<<"$pair"
    r="$(ratio "${RPS[$s]}" "${RPS[$b]}")"
    echo "| ${LABEL[$s]} | $(fmt_rps "${RPS[$s]}") | ${P50[$s]} | ${P99[$s]} | ${LABEL[$b]} | $(fmt_rps "${RPS[$b]}") | ${P50[$b]} | ${P99[$b]} | $r | ≥ $t | $(meets "$r" ">=" "$t") |"
done
for s in get_l1 get_redis; do
    echo "| p99 of ${LABEL[$s]} | | | ${P99[$s]} | latency target | | | 2 | | ≤ 2 ms | $(meets "${P99[$s]}" "<=" 2) |"
done
# One client: batching must cost nothing at low load (an idle shard sends a lone operation at
# once). p50 and p99 with batching on ÷ off: within 1.1.
for pair in "put_c1 put_unbatched_c1" "get_uncached_c1 get_uncached_unbatched_c1"; do
    read -r s b <<<"$pair"
    for q in P50 P99; do
        declare -n on="$q"
        r="$(ratio "${on[$s]:-n/a}" "${on[$b]:-n/a}")"
        echo "| ${q,,} of ${LABEL[$s]} | | | ${on[$s]:-n/a} | ${LABEL[$b]} | | | ${on[$b]:-n/a} | $r | ≤ 1.1 | $(meets "$r" "<=" 1.1) |"
        unset -n on
    done
done
echo
echo "ratio = gateway req/s ÷ baseline req/s (tps for pgbench); for the one-client rows, latency with batching on ÷ off."
for s in get_l1 get_l1_unlimited get_redis get_uncached get_uncached_c1 get_uncached_unbatched get_uncached_unbatched_c1 put put_c1 put_unbatched put_unbatched_c1 ceiling pg_select pg_put pgb_select pgb_put redis_get; do
    [[ -z "${NOTE[$s]:-}" ]] || echo "- ${LABEL[$s]}: ${NOTE[$s]}"
done
[[ -z "$REJECTED" ]] || echo "- the gateway rejected the cache settings: $(tr '`' "'" <<<"$REJECTED")"
echo
echo "### CPU per request, by process"
echo
echo "Each process's CPU time in the middle of the run (bench/cpu_split.py) ÷ the requests served, in µs; other: every other process, the kernel's threads included."
echo
echo "| scenario | req/s | gateway | PostgreSQL | Redis | load generator | other | total |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for s in "${SPLIT[@]}"; do
    line="${CPU_SPLIT[$s]:-}"
    [[ -n "$line" && "${RPS[$s]:-n/a}" != n/a ]] || continue
    row="$(awk -v rps="${RPS[$s]}" -v line="$line" 'BEGIN {
        n = split(line, parts, " "); total = 0; out = ""
        for (i = 2; i <= n; i++) { split(parts[i], kv, "="); us = kv[2] * 1000 / rps; total += us; out = out sprintf(" %.0f |", us) }
        printf "%s %.0f |", out, total }')"
    echo "| ${LABEL[$s]} | $(fmt_rps "${RPS[$s]}") |$row"
done
