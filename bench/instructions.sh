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
#   TELEMETRY=0.01 bench/instructions.sh ...                # traces on, this sampling ratio
#   KEEP_WORK=1 bench/instructions.sh ...                   # keep the callgrind dumps and logs
#   QUOTAS='{"records":1000000000}' bench/instructions.sh   # the tenant's own quotas (JSON)
#
# QUOTAS=<json> gives the measured tenant quotas (PATCH /v1/admin/tenants/{id}), so every write
# passes the quota check and spends an allowance (usage::grants): what quotas cost is the
# difference from a run without it. Limits far above what the run writes keep every write
# admitted.
#
# TELEMETRY=<ratio> (0 to 1; unset: traces off, the default configuration) turns `[telemetry]` on
# in every binary, exporting at that sampling ratio to a real OTLP/HTTP receiver the script starts
# (tests/otlp_receiver.py, in the venv of scripts/otlp-receiver.sh): what traces cost is then the
# difference from a run without it. Every binary must know `[telemetry]` (a build before it
# only warns about the variables and runs without traces, so the script stops on a binary whose
# /metrics has no trace counters). The exporter's own thread runs in the gateway, so its work
# (encoding, the HTTP posts) is counted with the requests'.
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
TELEMETRY="${TELEMETRY:-}"
QUOTAS="${QUOTAS:-}"
if [[ -n "$TELEMETRY" ]]; then
    awk -v r="$TELEMETRY" 'BEGIN { exit !(r ~ /^[0-9]*\.?[0-9]+$/ && r + 0 <= 1) }' ||
        die "TELEMETRY must be a sampling ratio from 0 to 1, not $TELEMETRY"
fi

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
KEPT="callgrind dumps (callgrind-N.out.1 GETs, .2 PUTs; N the binary's place), gateway logs and spans"
GW_PID=""
RECEIVER_PID=""
SPANS="$WORK/spans.jsonl" # the receiver's output: `listening PORT`, then one JSON line per span
release() {
    stop_pid "$GW_PID"
    stop_pid "$RECEIVER_PID"
    drop_dbs 2>/dev/null
    flush_prefix 2>/dev/null
}
cleanup_on_exit

# One receiver for the whole run: the binaries are measured one after the other.
if [[ -n "$TELEMETRY" ]]; then
    log "starting the OTLP receiver"
    OTLP_PYTHON="$(scripts/otlp-receiver.sh)"
    "$OTLP_PYTHON" tests/otlp_receiver.py >"$SPANS" 2>"$WORK/receiver.log" &
    RECEIVER_PID=$!
    OTLP_PORT=""
    for _ in $(seq 1 100); do
        OTLP_PORT="$(sed -n '1s/^listening \([0-9][0-9]*\)$/\1/p' "$SPANS")"
        [[ -n "$OTLP_PORT" ]] && break
        kill -0 "$RECEIVER_PID" 2>/dev/null || die "the OTLP receiver stopped: $(tail -n 3 "$WORK/receiver.log")"
        sleep 0.1
    done
    [[ -n "$OTLP_PORT" ]] || die "the OTLP receiver did not say its port within 10 s"
fi

# spans_received: how many spans the receiver printed so far (0 with traces off).
spans_received() { if [[ -f "$SPANS" ]]; then grep -c '^{"trace_id"' "$SPANS" || true; else echo 0; fi; }

# settle: waits until the receiver has taken no span for a second (at most 30 s), so the export of
# a pass's last spans (the exporter sends a batch when it is full or 200 ms after its first span)
# is counted in that pass, not in the next one or not at all. With traces off it is a plain second:
# every configuration then counts at least a second of idle background work (about 290,000
# instructions on a build of 6f4c487) with its passes, and traces on only what more they take.
settle() {
    local before after _
    after="$(spans_received)"
    for _ in $(seq 1 30); do
        before="$after"
        sleep 1
        after="$(spans_received)"
        [[ "$after" -eq "$before" ]] && return 0
    done
    log "spans were still arriving 30 s after the pass"
}

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

# measure BINARY N: fills GET_IR and PUT_IR (instructions per request) for the binary, the Nth,
# and with traces on GET_SPANS and PUT_SPANS (spans received per request) and EXPORT (the
# gateway's own count of spans exported and dropped).
measure() {
    local binary="$1" out="$WORK/callgrind-$2.out" log="$WORK/gateway-$2.log" admin token bad spans0 spans1
    create_fresh_dbs
    flush_prefix
    rm -rf "$WORK/data"
    gateway_at "127.0.0.1:$(free_port)"
    # Instrumented only between the marks below: start-up and the warm-up run at full speed.
    (
        export SHARDGATE_STORAGE__CATALOG_URL="postgres://postgres@127.0.0.1:5432/${DBS[0]}"
        export SHARDGATE_STORAGE__SHARDS="[{id=\"s0\",url=\"postgres://postgres@127.0.0.1:5432/${DBS[1]}\"},{id=\"s1\",url=\"postgres://postgres@127.0.0.1:5432/${DBS[2]}\"}]"
        export SHARDGATE_RATE_LIMITS__REDIS_URL=redis://127.0.0.1:6379 SHARDGATE_RATE_LIMITS__KEY_PREFIX="$PREFIX:rl"
        export SHARDGATE_CACHE__REDIS_URL=redis://127.0.0.1:6379 SHARDGATE_CACHE__KEY_PREFIX="$PREFIX"
        export SHARDGATE_CACHE__L1__ENABLED=false
        if [[ -n "$TELEMETRY" ]]; then
            export SHARDGATE_TELEMETRY__ENABLED=true SHARDGATE_TELEMETRY__SAMPLING_RATIO="$TELEMETRY"
            export SHARDGATE_TELEMETRY__ENDPOINT="http://127.0.0.1:$OTLP_PORT/v1/traces"
        fi
        exec valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out" "$binary" serve
    ) >"$log" 2>&1 &
    GW_PID=$!
    local _
    for _ in $(seq 1 600); do
        [[ "$(curl -s -o /dev/null -w '%{http_code}' "$GW_URL/readyz")" == 200 ]] && break
        kill -0 "$GW_PID" 2>/dev/null || die "$binary stopped at start-up: $(tail -n 3 "$log")"
        sleep 0.5
    done
    if [[ -n "$TELEMETRY" ]] && ! curl -s "$GW_URL/metrics" | grep -q '^shardgate_trace_spans_exported'; then
        die "$binary has no [telemetry] (no trace counters in its /metrics): it would run with traces off"
    fi
    admin="$("$binary" token --admin --data-dir "$SHARDGATE_DATA_DIR")"
    curl -sf -o /dev/null -H "Authorization: Bearer $admin" -H 'Content-Type: application/json' \
        -d "{\"id\":\"$TENANT\",\"rate_limit\":{\"per_second\":1000000000,\"burst\":1000000000}}" \
        "$GW_URL/v1/admin/tenants" || die "creating tenant $TENANT failed"
    if [[ -n "$QUOTAS" ]]; then
        curl -sf -o /dev/null -X PATCH -H "Authorization: Bearer $admin" -H 'Content-Type: application/json' \
            -d "{\"quotas\":$QUOTAS}" "$GW_URL/v1/admin/tenants/$TENANT" ||
            die "$binary refused the quotas $QUOTAS (a build before quotas: measure it without QUOTAS)"
    fi
    sleep 1.1 # a token issued in the second the tenant was created is refused
    token="$("$binary" token --tenant "$TENANT" --scopes read,write --ttl 1h --data-dir "$SHARDGATE_DATA_DIR")"
    bad="$(pass PUT "$KEYS" "$token")"; [[ "$bad" -eq 0 ]] || die "seeding: $bad PUTs were not 2xx"
    bad="$(pass GET "$((2 * KEYS))" "$token")"; [[ "$bad" -eq 0 ]] || die "warming: $bad GETs were not 2xx"
    settle

    spans0="$(spans_received)"
    callgrind_control -z "$GW_PID" &>/dev/null
    callgrind_control -i on "$GW_PID" &>/dev/null
    bad="$(pass GET "$GETS" "$token")"; [[ "$bad" -eq 0 ]] || die "$bad of $GETS GETs were not 2xx"
    settle
    callgrind_control -d gets "$GW_PID" &>/dev/null
    spans1="$(spans_received)"
    GET_SPANS="$(awk -v s="$((spans1 - spans0))" -v n="$GETS" 'BEGIN { printf "%.2f", s / n }')"
    callgrind_control -z "$GW_PID" &>/dev/null
    bad="$(pass PUT "$PUTS" "$token")"; [[ "$bad" -eq 0 ]] || die "$bad of $PUTS PUTs were not 2xx"
    settle
    callgrind_control -d puts "$GW_PID" &>/dev/null
    PUT_SPANS="$(awk -v s="$(($(spans_received) - spans1))" -v n="$PUTS" 'BEGIN { printf "%.2f", s / n }')"
    # The gateway's side of the export: spans dropped (queue full, export failed) were not sent,
    # so their export is missing from the counts above.
    EXPORT="$(curl -s "$GW_URL/metrics" | awk '/^shardgate_trace_spans_(exported|dropped)/ { printf "%s%s", sep, $0; sep = ", " }')"
    stop_pid "$GW_PID"
    GW_PID=""
    GET_IR="$(awk -v t="$(instructions "$out.1")" -v n="$GETS" 'BEGIN { printf "%.0f", t / n }')"
    PUT_IR="$(awk -v t="$(instructions "$out.2")" -v n="$PUTS" 'BEGIN { printf "%.0f", t / n }')"
}

echo
if [[ -n "$TELEMETRY" ]]; then
    echo "## Instructions per request (callgrind), traces on at sampling ratio $TELEMETRY"
else
    echo "## Instructions per request (callgrind), traces off"
fi
echo
echo "$GETS GETs (Redis cache, L1 off) and $PUTS PUTs over $KEYS keys, rate limiter in Redis, PostgreSQL shards."
echo
echo "| binary | GET instructions | PUT instructions | GET vs first | PUT vs first |"
echo "| --- | ---: | ---: | ---: | ---: |"
FIRST_GET="" FIRST_PUT="" EXPORTS=()
for i in "${!BINARIES[@]}"; do
    binary="${BINARIES[$i]}"
    log "measuring $binary"
    measure "$binary" "$((i + 1))"
    FIRST_GET="${FIRST_GET:-$GET_IR}" FIRST_PUT="${FIRST_PUT:-$PUT_IR}"
    echo "| \`$binary\` | $GET_IR | $PUT_IR | $(awk -v a="$GET_IR" -v b="$FIRST_GET" 'BEGIN { printf "%.3f", a / b }') | $(awk -v a="$PUT_IR" -v b="$FIRST_PUT" 'BEGIN { printf "%.3f", a / b }') |"
    EXPORTS+=("\`$binary\`: $GET_SPANS spans per GET, $PUT_SPANS per PUT; its /metrics: $EXPORT")
done
echo
echo "Counts include the instance's background work during the passes (catalog polls, health"
echo "probes); they are the same for every binary of one configuration."
if [[ -n "$TELEMETRY" ]]; then
    echo
    echo "The OTLP receiver got $(spans_received) spans in all (warm-up included):"
    echo
    for line in "${EXPORTS[@]}"; do echo "- $line"; done
fi
