#!/usr/bin/env bash
# Instructions per request of one or more gateway binaries, counted by callgrind: the same
# production configuration as bench/run.sh (PostgreSQL shards, Redis cache with L1 off, the rate
# limiter in Redis), a fixed number of cached GETs and of PUTs. Instruction counts do not depend
# on what else the machine is doing, so two builds can be compared on a busy or noisy machine
# where req/s cannot (see bench/README.md, "Instructions per request"). It reports; it never
# fails on a figure.
#
#   bench/instructions.sh                                   # target/release/shardgate
#   bench/instructions.sh /tmp/base/shardgate target/release/shardgate
#   GETS=5000 PUTS=1000 bench/instructions.sh ...           # more requests (default 2000 / 500)
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" # sets ROOT, the workspace, and works there

GETS="${GETS:-2000}"
PUTS="${PUTS:-500}"
KEYS=200                               # distinct keys the requests cycle through
TENANT=cgbench
PREFIX=sgcgbench                       # Redis key prefix of everything the harness writes
DBS=(sgcgbench_cat sgcgbench_s0 sgcgbench_s1)
PG=(-h 127.0.0.1 -p 5432 -U postgres)
export PGOPTIONS="-c client_min_messages=warning"
REDIS=(-h 127.0.0.1 -p 6379)
[[ "$GETS" =~ ^[1-9][0-9]*$ && "$PUTS" =~ ^[1-9][0-9]*$ ]] || die "GETS and PUTS must be positive numbers"

BINARIES=("$@")
[[ ${#BINARIES[@]} -gt 0 ]] || BINARIES=("$ROOT/target/release/shardgate")
for binary in "${BINARIES[@]}"; do
    [[ -x "$binary" ]] || die "$binary is not an executable (build it: cargo build --release -p shardgate-api)"
done

command -v valgrind >/dev/null || apt_install valgrind
require_tools valgrind callgrind_control psql redis-cli curl
log "starting PostgreSQL and Redis if needed"
scripts/services.sh >&2

WORK="$(mktemp -d -t sgcgbench.XXXXXX)"
GW_PID=""
release() {
    stop_pid "$GW_PID"
    drop_dbs 2>/dev/null
    flush_prefix 2>/dev/null
}
cleanup_on_exit

# pass METHOD COUNT TOKEN: COUNT requests over the KEYS keys, 4 at a time on reused connections;
# prints how many answers were not 2xx.
pass() {
    local method="$1" count="$2" token="$3"
    {
        printf 'header = "Authorization: Bearer %s"\n' "$token"
        if [[ "$method" == PUT ]]; then
            echo 'request = "PUT"'
            echo 'header = "Content-Type: application/json"'
            echo 'data-binary = "{\"n\":0,\"pad\":\"xxxxxxxxxxxxxxxxxxxxxxxx\"}"'
        fi
        awk -v n="$count" -v k="$KEYS" -v base="$GW_URL/v1/tenants/$TENANT/collections/items/records/" \
            'BEGIN { for (i = 0; i < n; i++) printf "url = \"%sk-%05d\"\noutput = \"/dev/null\"\n", base, i % k }'
    } >"$WORK/pass.curl"
    curl -s --no-progress-meter --parallel --parallel-max 4 -K "$WORK/pass.curl" -w '%{http_code}\n' | grep -cv '^2' || true
}

# instructions FILE: the event total of a callgrind dump.
instructions() { sed -n 's/^summary: //p' "$1" | head -n 1; }

# measure BINARY: fills GET_IR and PUT_IR (instructions per request) for one binary.
measure() {
    local binary="$1" out="$WORK/callgrind.out" admin token bad
    create_fresh_dbs
    flush_prefix
    rm -rf "$WORK/data" "$out"*
    gateway_at "127.0.0.1:$(free_port)"
    # Instrumented only between the marks below: start-up and the warm-up run at full speed.
    (
        export SHARDGATE_STORAGE__CATALOG_URL="postgres://postgres@127.0.0.1:5432/${DBS[0]}"
        export SHARDGATE_STORAGE__SHARDS="[{id=\"s0\",url=\"postgres://postgres@127.0.0.1:5432/${DBS[1]}\"},{id=\"s1\",url=\"postgres://postgres@127.0.0.1:5432/${DBS[2]}\"}]"
        export SHARDGATE_RATE_LIMITS__REDIS_URL=redis://127.0.0.1:6379 SHARDGATE_RATE_LIMITS__KEY_PREFIX="$PREFIX:rl"
        export SHARDGATE_CACHE__REDIS_URL=redis://127.0.0.1:6379 SHARDGATE_CACHE__KEY_PREFIX="$PREFIX"
        export SHARDGATE_CACHE__L1__ENABLED=false
        exec valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out" "$binary" serve
    ) >"$WORK/gateway.log" 2>&1 &
    GW_PID=$!
    local _
    for _ in $(seq 1 600); do
        [[ "$(curl -s -o /dev/null -w '%{http_code}' "$GW_URL/readyz")" == 200 ]] && break
        kill -0 "$GW_PID" 2>/dev/null || die "$binary stopped at start-up: $(tail -n 3 "$WORK/gateway.log")"
        sleep 0.5
    done
    admin="$("$binary" token --admin --data-dir "$SHARDGATE_DATA_DIR")"
    curl -sf -o /dev/null -H "Authorization: Bearer $admin" -H 'Content-Type: application/json' \
        -d "{\"id\":\"$TENANT\",\"rate_limit\":{\"per_second\":1000000000,\"burst\":1000000000}}" \
        "$GW_URL/v1/admin/tenants" || die "creating tenant $TENANT failed"
    sleep 1.1 # a token issued in the second the tenant was created is refused
    token="$("$binary" token --tenant "$TENANT" --scopes read,write --ttl 1h --data-dir "$SHARDGATE_DATA_DIR")"
    bad="$(pass PUT "$KEYS" "$token")"; [[ "$bad" -eq 0 ]] || die "seeding: $bad PUTs were not 2xx"
    bad="$(pass GET "$((2 * KEYS))" "$token")"; [[ "$bad" -eq 0 ]] || die "warming: $bad GETs were not 2xx"

    callgrind_control -z "$GW_PID" &>/dev/null
    callgrind_control -i on "$GW_PID" &>/dev/null
    bad="$(pass GET "$GETS" "$token")"; [[ "$bad" -eq 0 ]] || die "$bad of $GETS GETs were not 2xx"
    callgrind_control -d gets "$GW_PID" &>/dev/null
    callgrind_control -z "$GW_PID" &>/dev/null
    bad="$(pass PUT "$PUTS" "$token")"; [[ "$bad" -eq 0 ]] || die "$bad of $PUTS PUTs were not 2xx"
    callgrind_control -d puts "$GW_PID" &>/dev/null
    stop_pid "$GW_PID"
    GW_PID=""
    GET_IR="$(awk -v t="$(instructions "$out.1")" -v n="$GETS" 'BEGIN { printf "%.0f", t / n }')"
    PUT_IR="$(awk -v t="$(instructions "$out.2")" -v n="$PUTS" 'BEGIN { printf "%.0f", t / n }')"
}

echo
echo "## Instructions per request (callgrind)"
echo
echo "$GETS GETs (Redis cache, L1 off) and $PUTS PUTs over $KEYS keys, rate limiter in Redis, PostgreSQL shards."
echo
echo "| binary | GET instructions | PUT instructions | GET vs first | PUT vs first |"
echo "| --- | ---: | ---: | ---: | ---: |"
FIRST_GET="" FIRST_PUT=""
for binary in "${BINARIES[@]}"; do
    log "measuring $binary"
    measure "$binary"
    FIRST_GET="${FIRST_GET:-$GET_IR}" FIRST_PUT="${FIRST_PUT:-$PUT_IR}"
    echo "| \`$binary\` | $GET_IR | $PUT_IR | $(awk -v a="$GET_IR" -v b="$FIRST_GET" 'BEGIN { printf "%.3f", a / b }') | $(awk -v a="$PUT_IR" -v b="$FIRST_PUT" 'BEGIN { printf "%.3f", a / b }') |"
done
echo
echo "Counts include the instance's background work during the passes (catalog polls, health"
echo "probes); they are the same for every binary of one configuration."
