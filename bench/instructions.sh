#!/usr/bin/env bash
# Instructions per request of one or more gateway binaries, counted by callgrind, scenario by
# scenario and crate by crate, in the production configuration of bench/run.sh (PostgreSQL shards,
# the rate limiter and the cache in Redis). Instruction counts do not depend on what else the
# machine is doing, so two builds can be compared on a busy machine where req/s cannot (see
# bench/README.md, "Instructions per request").
#
#   bench/instructions.sh                                   # target/release/shardgate
#   bench/instructions.sh /tmp/base/shardgate target/release/shardgate
#   REQUESTS=2000 bench/instructions.sh ...                 # requests per scenario (default 1000)
#   SCENARIOS="get_redis put" bench/instructions.sh ...     # some scenarios only
#   TELEMETRY=0.01 bench/instructions.sh ...                # traces on, this sampling ratio
#   QUOTAS='{"records":1000000000}' bench/instructions.sh   # the tenant's own quotas (JSON)
#   KEEP_WORK=1 bench/instructions.sh ...                   # keep the callgrind dumps and logs
#   bench/instructions.sh --check [BINARY]                  # CI: against the committed baseline
#   bench/instructions.sh --bless [BINARY]                  # write that baseline
#
# The scenarios (each REQUESTS requests, 4 at a time on reused connections, by curl):
#
#   ceiling       GET / of bench/src/bin/ceiling.rs (axum, a fixed body): the HTTP floor; measured
#                 when target/release/ceiling exists (cargo build --release -p shardgate-bench)
#   get_l1        GET of a record from the in-process cache (L1 on, Redis behind it)
#   get_redis     GET of a record from Redis (L1 off)
#   get_uncached  GET of a record from its shard (the cache off)
#   put           PUT of a record (a 40-byte value) over existing keys
#   put_create    PUT with If-None-Match: * of a new key each time (a conditional write)
#   list_1        a page of 10 records of a collection on the tenant's home shard
#   list_16       a page of 10 records of a hash-distributed collection on 16 shards (a fan-out)
#   valet_get     a 1 KiB blob downloaded through a valet URL (no token)
#
# Every gateway has 16 PostgreSQL shards and a catalog, and three configurations are started in
# turn: the cache in Redis with L1 off (get_redis, put, put_create, list_1, list_16, valet_get),
# L1 on (get_l1), the cache off (get_uncached). Set-up and warm-up run uninstrumented (callgrind
# --instr-atstart=no, at full speed); each scenario's pass is counted alone (zeroed before, dumped
# after a settling second). Counts include the instance's background work during a pass (catalog
# polls, health probes, about 290,000 instructions a second): the same for every binary.
#
# The report: a table of instructions per request per scenario and binary (and as a multiple of
# the ceiling), then per scenario the crates that cost most (self cost from callgrind_annotate,
# grouped by crate by bench/crates.py: a regression names its crate).
#
# --check runs the scenarios of bench/instructions-baseline.txt (with its request count) on one
# binary (default: the dist binary of scripts/dist-build.sh, built if it is stale, as CI's image
# step leaves it) and fails when one costs more than 5 % above its baseline
# (bench/instructions_check.py); --bless writes the baseline from three such runs, the median of
# each scenario. TELEMETRY=<ratio>
# turns `[telemetry]` on, exporting to a real OTLP/HTTP receiver the script starts
# (tests/otlp_receiver.py); QUOTAS=<json> gives the measured tenant these quotas.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" # sets ROOT, the workspace, and works there

MODE=report
case "${1:-}" in
--check) MODE=check; shift ;;
--bless) MODE=bless; shift ;;
esac
BASELINE="$ROOT/bench/instructions-baseline.txt"
ALL_SCENARIOS="ceiling get_l1 get_redis get_uncached put put_create list_1 list_16 valet_get"
if [[ "$MODE" != report ]]; then
    [[ $# -le 1 ]] || die "--check and --bless take one binary"
    [[ -z "${TELEMETRY:-}${QUOTAS:-}" ]] || die "--check and --bless measure the default configuration"
    if [[ "$MODE" == check ]]; then
        [[ -f "$BASELINE" ]] || die "no baseline at $BASELINE (write one with --bless)"
        REQUESTS="$(awk '$1 == "requests" { print $2 }' "$BASELINE")"
        SCENARIOS="$(awk '$1 ~ /^[a-z_0-9]+$/ && $1 != "requests" { printf "%s ", $1 }' "$BASELINE")"
    else
        REQUESTS="${REQUESTS:-500}"
        SCENARIOS="${ALL_SCENARIOS#ceiling }"
    fi
    if [[ $# -eq 0 ]]; then
        source scripts/dist-build.sh
        build_dist >&2
        set -- "$dist_binary"
    fi
fi
REQUESTS="${REQUESTS:-1000}"
SCENARIOS="${SCENARIOS:-$ALL_SCENARIOS}"
[[ "$REQUESTS" =~ ^[1-9][0-9]*$ ]] || die "REQUESTS must be a positive number"
for scenario in $SCENARIOS; do
    [[ " $ALL_SCENARIOS " == *" $scenario "* ]] || die "unknown scenario $scenario (known: $ALL_SCENARIOS)"
done
wanted() { [[ " $SCENARIOS " == *" $1 "* ]]; }

KEYS=200                               # distinct records the GETs and PUTs cycle through
SHARD_COUNT=16
TENANT=cgbench
PREFIX=sgcgbench                       # Redis key prefix of everything the harness writes
DBS=(sgcgbench_cat)
for i in $(seq 0 $((SHARD_COUNT - 1))); do DBS+=("sgcgbench_s$i"); done
PG=(-h 127.0.0.1 -p 5432 -U postgres)
export PGOPTIONS="-c client_min_messages=warning"
REDIS=(-h 127.0.0.1 -p 6379)
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
CEILING="${CEILING:-$ROOT/target/release/ceiling}"
if wanted ceiling && [[ ! -x "$CEILING" ]]; then
    log "no $CEILING (cargo build --release -p shardgate-bench --bin ceiling): the ceiling is not measured"
    SCENARIOS="${SCENARIOS/ceiling/}"
fi

command -v valgrind >/dev/null || apt_install valgrind
require_tools valgrind callgrind_control callgrind_annotate psql redis-cli curl python3
log "starting PostgreSQL and Redis if needed"
scripts/services.sh >&2

WORK="$(mktemp -d -t sgcgbench.XXXXXX)"
KEPT="callgrind dumps (callgrind-B-C.out.N: binary B, configuration C, Nth scenario), gateway logs and spans"
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
# a pass's last spans is counted in that pass. With traces off it is a plain second.
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

# requests FILE COUNT [HEADER...] -- URL-FORMAT [METHOD [DATA]]: writes a curl config of COUNT
# requests (a printf format: %05d is the request's number, %% a percent sign), each with the
# headers.
requests() {
    local file="$1" count="$2" header url method data
    shift 2
    : >"$file"
    while [[ "$1" != -- ]]; do
        printf 'header = "%s"\n' "$1" >>"$file"
        shift
    done
    url="$2" method="${3:-GET}" data="${4:-}"
    [[ "$method" == GET ]] || printf 'request = "%s"\n' "$method" >>"$file"
    [[ -z "$data" ]] || printf 'data-binary = "%s"\n' "${data//\"/\\\"}" >>"$file"
    awk -v n="$count" -v url="$url" \
        'BEGIN { for (i = 0; i < n; i++) { printf "url = \""; printf url, i; printf "\"\noutput = \"/dev/null\"\n" } }' >>"$file"
}

# run FILE: sends the requests of a curl config, 4 at a time; prints how many were not 2xx, and
# keeps the statuses that were not (with their counts) in FILE.refused.
run() {
    curl -s --no-progress-meter --parallel --parallel-max 4 -K "$1" -w '%{http_code}\n' >"$1.codes" || true
    grep -v '^2' "$1.codes" | sort | uniq -c | tr '\n' ' ' >"$1.refused" || true
    grep -cv '^2' "$1.codes" || true
}

# instructions FILE: the event total of a callgrind dump.
instructions() { sed -n 's/^summary: //p' "$1" | head -n 1; }

# Results: IR[binary,scenario] instructions per request, DUMP[binary,scenario] its dump.
declare -A IR DUMP SPANS_PER
# measure_pass B NAME CONFIG OUT: the pass of scenario NAME (its requests in CONFIG) counted alone in
# the callgrind process of $GW_PID, its dump the next OUT.N.
# The instance's background work (catalog polls, health probes of 16 shards, metrics): measured
# idle before the passes of each gateway, in instructions per second (BACKGROUND), and taken off
# each pass for the time it lasted, so that a pass slowed down by a busy machine does not count
# more background per request. Its raw count stays in the dump.
DUMPS=0
BACKGROUND=0
IDLE_SECS=5
# dump NAME OUT: dumps the count of the process of $GW_PID as the next OUT.N, its path in DUMPED.
dump() {
    local _
    callgrind_control -d "$1" "$GW_PID" &>/dev/null
    DUMPS=$((DUMPS + 1))
    DUMPED="$2.$DUMPS"
    for _ in $(seq 1 100); do [[ -s "$DUMPED" ]] && break; sleep 0.1; done
}
# measure_idle OUT: sets BACKGROUND from an idle stretch of IDLE_SECS.
measure_idle() {
    local started
    sleep 3 # what the warm-up left behind (flushes, pool upkeep) ends first
    callgrind_control -z "$GW_PID" &>/dev/null
    started="$(date +%s.%N)"
    sleep "$IDLE_SECS"
    dump idle "$1"
    BACKGROUND="$(awk -v t="$(instructions "$DUMPED")" -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", t / (b - a) }')"
    BACKGROUNDS+=("$BACKGROUND")
}
BACKGROUNDS=()
measure_pass() {
    local b="$1" name="$2" config="$3" out="$4" bad spans0 started
    spans0="$(spans_received)"
    callgrind_control -z "$GW_PID" &>/dev/null
    started="$(date +%s.%N)"
    bad="$(run "$config")"
    [[ "$bad" -eq 0 ]] || die "$name: $bad of $REQUESTS requests were not 2xx (count, status: $(cat "$config.refused"))"
    settle
    dump "$name" "$out"
    DUMP[$b,$name]="$DUMPED"
    IR[$b,$name]="$(awk -v t="$(instructions "$DUMPED")" -v n="$REQUESTS" -v bg="$BACKGROUND" -v a="$started" \
        -v b="$(date +%s.%N)" 'BEGIN { net = t - bg * (b - a); if (net < 0) net = 0; printf "%.0f", net / n }')"
    SPANS_PER[$b,$name]="$(awk -v s="$(($(spans_received) - spans0))" -v n="$REQUESTS" 'BEGIN { printf "%.2f", s / n }')"
}

# under_callgrind OUT LOG COMMAND...: starts COMMAND under callgrind, uninstrumented until asked.
under_callgrind() {
    local out="$1" log="$2"
    shift 2
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out" "$@" >"$log" 2>&1 &
    GW_PID=$!
    DUMPS=0
}

# wait_ready URL LOG: until URL answers 200 (the process of $GW_PID must keep running).
wait_ready() {
    local _
    for _ in $(seq 1 600); do
        [[ "$(curl -s -o /dev/null -w '%{http_code}' "$1")" == 200 ]] && return 0
        kill -0 "$GW_PID" 2>/dev/null || die "stopped at start-up: $(tail -n 3 "$2")"
        sleep 0.5
    done
    die "$1 did not answer 200 within 5 minutes"
}

# gateway B BINARY CONFIG: starts the gateway (configuration redis, l1 or uncached) on fresh
# databases and Redis keys under callgrind, with tenant $TENANT, its token $TOKEN and admin token
# $ADMIN; OUT is its dump prefix.
gateway() {
    local b="$1" binary="$2" config="$3" shards="" i
    OUT="$WORK/callgrind-$b-$config.out"
    create_fresh_dbs
    flush_prefix
    rm -rf "$WORK/data"
    gateway_at "127.0.0.1:$(free_port)"
    for i in $(seq 1 $SHARD_COUNT); do
        shards+="${shards:+,}{id=\"s$((i - 1))\",url=\"postgres://postgres@127.0.0.1:5432/${DBS[$i]}\"}"
    done
    (
        export SHARDGATE_STORAGE__CATALOG_URL="postgres://postgres@127.0.0.1:5432/${DBS[0]}"
        export SHARDGATE_STORAGE__SHARDS="[$shards]"
        export SHARDGATE_RATE_LIMITS__REDIS_URL=redis://127.0.0.1:6379 SHARDGATE_RATE_LIMITS__KEY_PREFIX="$PREFIX:rl"
        # The fan-out budget would refuse a flood of 16-shard listings: the rate is the point here.
        export SHARDGATE_LIMITS__TENANT_FAN_OUT_SHARD_READS_PER_SECOND=0
        # Valet downloads come without a token, from one address here: limited as anonymous.
        export SHARDGATE_RATE_LIMITS__ANONYMOUS__PER_SECOND=1000000000 SHARDGATE_RATE_LIMITS__ANONYMOUS__BURST=1000000000
        case "$config" in
        redis | l1)
            export SHARDGATE_CACHE__REDIS_URL=redis://127.0.0.1:6379 SHARDGATE_CACHE__KEY_PREFIX="$PREFIX"
            export SHARDGATE_CACHE__L1__ENABLED="$([[ "$config" == l1 ]] && echo true || echo false)"
            ;;
        uncached) export SHARDGATE_CACHE__ENABLED=false ;;
        esac
        if [[ -n "$TELEMETRY" ]]; then
            export SHARDGATE_TELEMETRY__ENABLED=true SHARDGATE_TELEMETRY__SAMPLING_RATIO="$TELEMETRY"
            export SHARDGATE_TELEMETRY__ENDPOINT="http://127.0.0.1:$OTLP_PORT/v1/traces"
        fi
        exec valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$OUT" "$binary" serve
    ) >"$WORK/gateway-$b-$config.log" 2>&1 &
    GW_PID=$!
    DUMPS=0
    wait_ready "$GW_URL/readyz" "$WORK/gateway-$b-$config.log"
    if [[ -n "$TELEMETRY" ]] && ! curl -s "$GW_URL/metrics" | grep -q '^shardgate_trace_spans_exported'; then
        die "$binary has no [telemetry] (no trace counters in its /metrics): it would run with traces off"
    fi
    ADMIN="$("$binary" token --admin --data-dir "$SHARDGATE_DATA_DIR")"
    admin_call POST /v1/admin/tenants \
        "{\"id\":\"$TENANT\",\"rate_limit\":{\"per_second\":1000000000,\"burst\":1000000000}}" >/dev/null
    if [[ -n "$QUOTAS" ]]; then
        admin_call PATCH "/v1/admin/tenants/$TENANT" "{\"quotas\":$QUOTAS}" >/dev/null ||
            die "$binary refused the quotas $QUOTAS (a build before quotas: measure it without QUOTAS)"
    fi
    sleep 1.1 # a token issued in the second the tenant was created is refused
    TOKEN="$("$binary" token --tenant "$TENANT" --scopes read,write --ttl 1h --data-dir "$SHARDGATE_DATA_DIR")"
}

# admin_call METHOD PATH [BODY]: an admin request that must succeed; prints the answer.
admin_call() {
    curl -sf -X "$1" -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' \
        ${3:+-d "$3"} "$GW_URL$2" || die "$1 $2 failed"
}

# ok FILE WHAT: runs a curl config that must succeed whole.
ok() {
    local bad
    bad="$(run "$1")"
    [[ "$bad" -eq 0 ]] || die "$2: $bad requests were not 2xx (count, status: $(cat "$1.refused"))"
}

RECORDS="/v1/tenants/$TENANT/collections"
PUT_BODY='{"n":0,"pad":"xxxxxxxxxxxxxxxxxxxxxxxx"}'

# measure B BINARY: every wanted scenario of the gateway binary, the Bth.
measure() {
    local b="$1" binary="$2" auth json
    if wanted get_redis || wanted put || wanted put_create || wanted list_1 || wanted list_16 || wanted valet_get; then
        gateway "$b" "$binary" redis
        auth="Authorization: Bearer $TOKEN" json="Content-Type: application/json"
        requests "$WORK/seed" "$KEYS" "$auth" "$json" -- "$GW_URL$RECORDS/items/records/k-%05d" PUT "$PUT_BODY"
        ok "$WORK/seed" "seeding items"
        admin_call PUT "/v1/admin/tenants/$TENANT/collections/spread" '{"distribution":"hash"}' >/dev/null
        requests "$WORK/seed" 320 "$auth" "$json" -- "$GW_URL$RECORDS/spread/records/k-%05d" PUT "$PUT_BODY"
        ok "$WORK/seed" "seeding spread"
        head -c 1024 /dev/urandom >"$WORK/blob"
        curl -sf -o /dev/null -X PUT -H "$auth" -H 'Content-Type: application/octet-stream' \
            --data-binary "@$WORK/blob" "$GW_URL/v1/tenants/$TENANT/blobs/bench.bin" || die "uploading the blob failed"
        local valet
        valet="$(curl -sf -H "$auth" -H "$json" -d '{"path":"bench.bin","permission":"read","expires_in":3600}' \
            "$GW_URL/v1/tenants/$TENANT/valet-keys" | python3 -c \
            'import json, sys, urllib.parse; u = urllib.parse.urlsplit(json.load(sys.stdin)["url"]); print(u.path + "?" + u.query)')" ||
            die "issuing a valet key failed"
        requests "$WORK/get_redis" "$REQUESTS" "$auth" -- "$GW_URL$RECORDS/items/records/k-%05d"
        requests_cycle "$WORK/get_redis"
        requests "$WORK/put" "$REQUESTS" "$auth" "$json" -- "$GW_URL$RECORDS/items/records/k-%05d" PUT "$PUT_BODY"
        requests_cycle "$WORK/put"
        requests "$WORK/put_create" "$REQUESTS" "$auth" "$json" "If-None-Match: *" -- \
            "$GW_URL$RECORDS/items/records/new-%05d" PUT "$PUT_BODY"
        requests "$WORK/list_1" "$REQUESTS" "$auth" -- "$GW_URL$RECORDS/items/records?limit=10"
        requests "$WORK/list_16" "$REQUESTS" "$auth" -- "$GW_URL$RECORDS/spread/records?limit=10"
        # Used exactly as issued (a parameter added would break its signature); its escapes kept
        # from printf.
        requests "$WORK/valet_get" "$REQUESTS" -- "$GW_URL${valet//%/%%}"
        for scenario in get_redis list_1 list_16 valet_get; do
            ok "$WORK/$scenario" "warming $scenario"
        done
        callgrind_control -i on "$GW_PID" &>/dev/null
        measure_idle "$OUT"
        for scenario in get_redis put put_create list_1 list_16 valet_get; do
            wanted "$scenario" && measure_pass "$b" "$scenario" "$WORK/$scenario" "$OUT"
        done
        stop_pid "$GW_PID"
        GW_PID=""
    fi
    local config
    for config in l1 uncached; do
        local scenario="get_$config"
        wanted "$scenario" || continue
        gateway "$b" "$binary" "$config"
        auth="Authorization: Bearer $TOKEN" json="Content-Type: application/json"
        requests "$WORK/seed" "$KEYS" "$auth" "$json" -- "$GW_URL$RECORDS/items/records/k-%05d" PUT "$PUT_BODY"
        ok "$WORK/seed" "seeding items"
        requests "$WORK/$scenario" "$REQUESTS" "$auth" -- "$GW_URL$RECORDS/items/records/k-%05d"
        requests_cycle "$WORK/$scenario"
        ok "$WORK/$scenario" "warming $scenario"
        callgrind_control -i on "$GW_PID" &>/dev/null
        measure_idle "$OUT"
        measure_pass "$b" "$scenario" "$WORK/$scenario" "$OUT"
        stop_pid "$GW_PID"
        GW_PID=""
    done
}

# requests_cycle FILE: rewrites the record keys k-NNNNN of a curl config to cycle over the $KEYS
# seeded keys (k-00000 .. k-00199, then again).
requests_cycle() {
    awk -v k="$KEYS" '
        /^url = / && match($0, /k-[0-9]+/) {
            n = substr($0, RSTART + 2, RLENGTH - 2) + 0
            $0 = substr($0, 1, RSTART - 1) sprintf("k-%05d", n % k) substr($0, RSTART + RLENGTH)
        }
        { print }' "$1" >"$1.cycled" && mv "$1.cycled" "$1"
}

# measure_ceiling B: the ceiling server's GET /, under callgrind like the gateway.
measure_ceiling() {
    local b="$1" addr
    addr="127.0.0.1:$(free_port)"
    OUT="$WORK/callgrind-$b-ceiling.out"
    under_callgrind "$OUT" "$WORK/gateway-$b-ceiling.log" "$CEILING" "$addr"
    wait_ready "http://$addr/" "$WORK/gateway-$b-ceiling.log"
    requests "$WORK/ceiling" "$REQUESTS" -- "http://$addr/"
    ok "$WORK/ceiling" "warming the ceiling"
    callgrind_control -i on "$GW_PID" &>/dev/null
    measure_idle "$OUT"
    measure_pass "$b" ceiling "$WORK/ceiling" "$OUT"
    stop_pid "$GW_PID"
    GW_PID=""
}

for i in "${!BINARIES[@]}"; do
    log "measuring ${BINARIES[$i]}"
    measure "$i" "${BINARIES[$i]}"
done
if wanted ceiling; then
    log "measuring the ceiling $CEILING"
    measure_ceiling c
fi

MEASURED="$WORK/measured.txt"
ALL_MEASURED="$SCENARIOS"
# write_measured: the last binary's counts, as bench/instructions_check.py reads them.
write_measured() {
    {
        echo "requests $REQUESTS"
        for scenario in $ALL_MEASURED; do
            [[ "$scenario" == ceiling ]] && continue
            echo "$scenario ${IR[$((${#BINARIES[@]} - 1)),$scenario]}"
        done
    } >"$MEASURED"
}
write_measured

if [[ "$MODE" == bless ]]; then
    # Two passes of one binary differ by up to 5 % or so (the background work taken off each pass
    # varies): a baseline from one low pass would make --check fail on a typical one. So every
    # scenario is measured three times and the baseline is the median.
    declare -A PASSES
    for scenario in $ALL_MEASURED; do PASSES[$scenario]="${IR[0,$scenario]}"; done
    for pass in 2 3; do
        log "measuring again for the median (pass $pass of 3)"
        measure 0 "${BINARIES[0]}"
        for scenario in $ALL_MEASURED; do PASSES[$scenario]+=" ${IR[0,$scenario]}"; done
    done
    for scenario in $ALL_MEASURED; do
        IR[0,$scenario]="$(tr ' ' '\n' <<<"${PASSES[$scenario]}" | sort -n | sed -n 2p)"
        echo "$scenario: passes ${PASSES[$scenario]}, median ${IR[0,$scenario]}" >&2
    done
    write_measured
    {
        echo "# Instructions per request of each scenario of bench/instructions.sh, the baseline of"
        echo "# \`bench/instructions.sh --check\` (CI fails a scenario more than 5 % above it). Written by"
        echo "# \`bench/instructions.sh --bless\` on $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!bench/instructions-baseline.txt' || echo ' and the change committed with it') ($(date -u +%F)); bless again"
        echo "# when a change costs more on purpose (say why in its commit) or costs less."
        cat "$MEASURED"
    } >"$BASELINE"
    cat "$BASELINE"
    exit 0
fi
if [[ "$MODE" == check ]]; then
    python3 bench/instructions_check.py --failed "$WORK/failed" "$BASELINE" "$MEASURED" && exit 0
    FAILED="$(tr '\n' ' ' <"$WORK/failed")"
    [[ -n "${FAILED// /}" ]] || exit 1 # failed for another reason (a scenario missing, another count)
    # Two runs of one binary on a quiet machine differ by up to 4 % (bench/README.md): a scenario
    # over the line is measured once more, and the lower count stands. A real regression fails
    # twice.
    log "measuring again what failed: $FAILED"
    declare -A FIRST
    for scenario in $FAILED; do FIRST[$scenario]="${IR[0,$scenario]}"; done
    SCENARIOS="$FAILED"
    measure 0 "${BINARIES[0]}"
    for scenario in $FAILED; do
        [[ "${FIRST[$scenario]}" -lt "${IR[0,$scenario]}" ]] && IR[0,$scenario]="${FIRST[$scenario]}"
    done
    write_measured
    echo
    echo "Measured again ($FAILED), the lower of the two counts:"
    python3 bench/instructions_check.py "$BASELINE" "$MEASURED"
    exit $?
fi

echo
echo "## Instructions per request (callgrind), traces ${TELEMETRY:+on at sampling ratio $TELEMETRY}${TELEMETRY:-off}"
echo
echo "$REQUESTS requests per scenario, 16 PostgreSQL shards, the rate limiter and the cache in Redis${QUOTAS:+, quotas $QUOTAS on the tenant}."
echo
header="| scenario |"
rule="| --- |"
for i in "${!BINARIES[@]}"; do
    header+=" \`${BINARIES[$i]}\` |"
    rule+=" ---: |"
done
[[ ${#BINARIES[@]} -gt 1 ]] && header+=" last vs first |" && rule+=" ---: |"
wanted ceiling && header+=" last vs ceiling |" && rule+=" ---: |"
echo "$header"
echo "$rule"
last=$((${#BINARIES[@]} - 1))
for scenario in $SCENARIOS; do
    [[ "$scenario" == ceiling ]] && { echo "| ceiling | ${IR[c,ceiling]} (the ceiling server) |"; continue; }
    row="| $scenario |"
    for i in "${!BINARIES[@]}"; do row+=" ${IR[$i,$scenario]} |"; done
    [[ ${#BINARIES[@]} -gt 1 ]] && row+=" $(awk -v a="${IR[$last,$scenario]}" -v b="${IR[0,$scenario]}" 'BEGIN { printf "%.3f", a / b }') |"
    wanted ceiling && row+=" $(awk -v a="${IR[$last,$scenario]}" -v b="${IR[c,ceiling]}" 'BEGIN { printf "%.1f×", a / b }') |"
    echo "$row"
done
echo
echo "Background work measured idle, taken off each pass for its duration (instructions a second, per gateway started): ${BACKGROUNDS[*]}."
if [[ -n "$TELEMETRY" ]]; then
    echo
    echo "Spans received per request:"
    for scenario in $SCENARIOS; do
        [[ "$scenario" == ceiling ]] && continue
        line="- $scenario:"
        for i in "${!BINARIES[@]}"; do line+=" ${SPANS_PER[$i,$scenario]}"; done
        echo "$line"
    done
fi
echo
echo "### By crate (self cost per request; the crates costing most in the last binary)"
for scenario in $SCENARIOS; do
    dumps=()
    if [[ "$scenario" == ceiling ]]; then
        dumps=("${DUMP[c,ceiling]}")
    else
        for i in "${!BINARIES[@]}"; do dumps+=("${DUMP[$i,$scenario]}"); done
    fi
    echo
    echo "#### $scenario"
    echo
    python3 bench/crates.py --requests "$REQUESTS" "${dumps[@]}"
done
