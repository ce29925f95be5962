#!/usr/bin/env bash
# Valet download throughput: downloads of a 1 MiB and a 64 MiB blob through valet URLs (no token),
# with the chunk cache warm ("hot") and disabled ("cold"), against two anchors measured in the
# same run at the same concurrency: nginx serving the same bytes from a file (sendfile), and
# target/release/blob_fetch reading the same chunks from the shard with sqlx (the database's own
# limit). Prints markdown tables. It reports; it never fails on a figure: the exit status is
# non-zero only when a step itself broke.
#
#   bench/valet.sh                        # 3 rounds of 10 s per row, 8 connections, 2 wrk threads
#   DURATION=15s ROUNDS=5 CONNECTIONS=16 bench/valet.sh
#   POOL=16 bench/valet.sh                # connections per database, gateway and blob_fetch alike
#   KEEP_WORK=1 bench/valet.sh            # keep raw outputs, CPU samples and logs
#   NO_BUILD=1 bench/valet.sh             # run target/release/{shardgate,blob_fetch} as they are
#   QUIET_WAIT=120 bench/valet.sh         # each run first waits up to 120 s for compilers to finish
#
# See bench/valet.md for what each row measures and how to read the tables.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" # sets ROOT, the workspace, and works there

DURATION="${DURATION:-10s}"
CONNECTIONS="${CONNECTIONS:-8}"
THREADS="${THREADS:-2}"
ROUNDS="${ROUNDS:-3}"                # every row is measured once per round; the median is reported
QUIET_WAIT="${QUIET_WAIT:-0}"        # seconds each run may wait for running compilers to finish
# Connections per database, set alike on the gateway (storage.pool.max_connections) and on
# blob_fetch; default: the gateway's documented default, twice the CPUs.
POOL="${POOL:-$((2 * $(nproc)))}"
TENANT=bench
DB_PREFIX=sgbench_valet              # distinct from bench/run.sh's sgbench_{cat,s0,s1}
DBS=("${DB_PREFIX}_cat" "${DB_PREFIX}_s0" "${DB_PREFIX}_s1")
PG=(-h 127.0.0.1 -p 5432 -U postgres)
export PGOPTIONS="-c client_min_messages=warning"  # no NOTICEs from DROP ... IF EXISTS
BIN="$ROOT/target/release"
SIZES=(1m 64m)
declare -A BYTES=([1m]=1048576 [64m]=67108864)
declare -A SIZE_LABEL=([1m]="1 MiB" [64m]="64 MiB")
declare -A BLOB_PATH=([1m]="valet-bench/1mib.bin" [64m]="valet-bench/64mib.bin")


SECS="$(duration_secs "$DURATION")"
[[ "$SECS" =~ ^[0-9]+$ && "$SECS" -gt 0 ]] || die "DURATION must look like 10s, 2m or 10 (got '$DURATION')"
for n in CONNECTIONS THREADS POOL ROUNDS; do
    [[ "${!n}" =~ ^[1-9][0-9]*$ ]] || die "$n must be a positive number (got '${!n}')"
done
[[ "$QUIET_WAIT" =~ ^[0-9]+$ ]] || die "QUIET_WAIT must be a number of seconds (got '$QUIET_WAIT')"

# ---------------------------------------------------------------------------------------------
# Tools, services, build
# ---------------------------------------------------------------------------------------------
command -v wrk >/dev/null || apt_install wrk
command -v nginx >/dev/null || [[ -x /usr/sbin/nginx ]] || apt_install nginx
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
require_tools wrk psql curl python3 sha256sum "$NGINX"

if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
    log "starting PostgreSQL"
    scripts/services.sh >&2
fi

build_release "shardgate-api shardgate-bench" shardgate blob_fetch

# Other compilations on the machine skew every figure (the cores are shared): counted around
# each measurement and reported under the tables.
# With QUIET_WAIT=N, each run first waits up to N seconds for no compiler or linker to be running.
wait_for_quiet() {
    local waited=0
    while [[ "$waited" -lt "$QUIET_WAIT" && "$(busy_builds)" != 0 ]]; do
        sleep 5
        waited=$((waited + 5))
    done
}

# ---------------------------------------------------------------------------------------------
# State and cleanup
# ---------------------------------------------------------------------------------------------
WORK="$(mktemp -d -t sgvalet.XXXXXX)"
NGINX_PID=""
SAMPLER_PID=""

release() {
    stop_pid "$SAMPLER_PID"
    stop_pid "$GW_PID"
    stop_pid "$NGINX_PID"
    drop_dbs
    rm -rf "$WORK/www"   # the blobs themselves (65 MiB) are not worth keeping
}
cleanup_on_exit

# ---------------------------------------------------------------------------------------------
# CPU use during a measurement (approximate, from /proc; 100 % = one core)
# ---------------------------------------------------------------------------------------------
# Every 0.5 s the sampler reads the user + system ticks of the gateway or nginx ("server"), the
# PostgreSQL backends of this harness's databases ("postgres") and the load generator ("client"),
# writing "sample pid class ticks", then the whole machine's busy and steal ticks
# ("M sample busy steal", from /proc/stat) and, once the sweep is complete, "T sample time". A
# process that appears after the first sample counts from zero; one that exits loses at most its
# last half second. "other" is the machine's busy time minus these three: whatever else ran
# (builds, tests, the sampler itself) and kernel work charged to no process (part of the loopback
# network's softirq time).
cpu_sampler() {
    local i=0 f line comm pid cls title sep=') ' _cpu user nice system idle iowait irq softirq steal
    local -a fields
    while :; do
        for f in /proc/[0-9]*/stat; do
            read -r line 2>/dev/null <"$f" || continue
            comm="${line#*(}"
            comm="${comm%"$sep"*}"
            pid="${f#/proc/}"
            pid="${pid%/stat}"
            case "$comm" in
                shardgate) [[ "$pid" == "$GW_PID" ]] || continue; cls=server ;;
                nginx) cls=server ;;
                wrk | blob_fetch) cls=client ;;
                postgres)
                    title=""
                    read -r -d '' title 2>/dev/null <"/proc/$pid/cmdline" || true
                    [[ "$title" == *"$DB_PREFIX"* ]] || continue
                    cls=postgres
                    ;;
                *) continue ;;
            esac
            read -r -a fields <<<"${line##*"$sep"}"
            printf '%d %s %s %d\n' "$i" "$pid" "$cls" "$((fields[11] + fields[12]))"
        done
        read -r _cpu user nice system idle iowait irq softirq steal _ </proc/stat
        printf 'M %d %d %d\n' "$i" "$((user + nice + system + irq + softirq))" "$steal"
        printf 'T %d %s\n' "$i" "$EPOCHREALTIME"
        i=$((i + 1))
        sleep 0.5
    done
}
HZ="$(getconf CLK_TCK)"
start_sampler() { # name
    cpu_sampler >"$WORK/cpu-$1.txt" &
    SAMPLER_PID=$!
    sleep 0.6   # the first sample is taken before the load starts
}
stop_sampler() { # name -> CPU[name] = "server / postgres / client / other", STEAL[name]
    local out
    sleep 0.6   # one more sample after the load
    stop_pid "$SAMPLER_PID"
    SAMPLER_PID=""
    out="$(awk -v hz="$HZ" '
        { row[NR] = $0 }
        $1 == "T" { t[$2] = $3; if (lo == "") lo = $2; hi = $2 }
        END {
            wall = t[hi] - t[lo]
            if (lo == "" || wall <= 0) { print "n/a n/a"; exit }
            for (r = 1; r <= NR; r++) {
                split(row[r], f, " ")
                if (f[1] == "T") continue
                if (f[1] == "M") {
                    if (f[2] == lo) { busy0 = f[3]; steal0 = f[4] }
                    if (f[2] == hi) { busy1 = f[3]; steal1 = f[4] }
                    continue
                }
                if (f[1] > hi) continue
                if (!(f[2] in base)) { base[f[2]] = (f[1] == lo) ? f[4] : 0; cls[f[2]] = f[3] }
                last[f[2]] = f[4]
            }
            for (p in last) use[cls[p]] += last[p] - base[p]
            k = 100 / hz / wall
            other = (busy1 - busy0) - use["server"] - use["postgres"] - use["client"]
            if (other < 0) other = 0
            printf "%.0f / %.0f / %.0f / %.0f|%.0f\n", use["server"] * k, use["postgres"] * k, use["client"] * k,
                other * k, (steal1 - steal0) * k
        }' "$WORK/cpu-$1.txt")"
    CPU[$1]="${out%|*}"
    STEAL[$1]="${out#*|}"
}

# ---------------------------------------------------------------------------------------------
# Blobs (the same bytes for nginx, the gateway and blob_fetch)
# ---------------------------------------------------------------------------------------------
mkdir -p "$WORK/www" "$WORK/nginx/tmp" "$WORK/data"
declare -A SHA
for s in "${SIZES[@]}"; do
    head -c "${BYTES[$s]}" /dev/urandom >"$WORK/www/$s.bin"
    SHA[$s]="$(sha256sum "$WORK/www/$s.bin" | cut -d' ' -f1)"
done

# ---------------------------------------------------------------------------------------------
# Databases, gateway
# ---------------------------------------------------------------------------------------------
create_fresh_dbs

gateway_at "127.0.0.1:$(free_port)"
export SHARDGATE_STORAGE__CATALOG_URL="postgres://postgres@127.0.0.1:5432/${DB_PREFIX}_cat"
export SHARDGATE_STORAGE__SHARDS="[{id=\"s0\",url=\"postgres://postgres@127.0.0.1:5432/${DB_PREFIX}_s0\"},{id=\"s1\",url=\"postgres://postgres@127.0.0.1:5432/${DB_PREFIX}_s1\"}]"
export SHARDGATE_STORAGE__POOL__MAX_CONNECTIONS="$POOL"
# Valet URLs carry no token: they are throttled per client IP. The limit is far above what this
# machine can send, so the limiter runs on every request (its cost is measured) but never refuses.
export SHARDGATE_RATE_LIMITS__ANONYMOUS__PER_SECOND=1000000000
export SHARDGATE_RATE_LIMITS__ANONYMOUS__BURST=1000000000

log "starting the gateway on $GW_ADDR (chunk cache at its default)"
start_gateway || die "the gateway does not start: $GW_FAILURE"

ADMIN_TOKEN="$("$BIN/shardgate" token --admin --data-dir "$SHARDGATE_DATA_DIR")"
TOKEN="$("$BIN/shardgate" token --tenant "$TENANT" --scopes read,write --ttl 2h --data-dir "$SHARDGATE_DATA_DIR")"
printf 'header = "Authorization: Bearer %s"\n' "$ADMIN_TOKEN" >"$WORK/admin.curl"
printf 'header = "Authorization: Bearer %s"\n' "$TOKEN" >"$WORK/tenant.curl"
chmod 600 "$WORK/admin.curl" "$WORK/tenant.curl"

log "creating tenant $TENANT"
code="$(curl -s -o "$WORK/out.json" -w '%{http_code}' -K "$WORK/admin.curl" -H 'Content-Type: application/json' \
    -d "{\"id\":\"$TENANT\",\"tier\":\"standard\",\"rate_limit\":{\"per_second\":1000000000,\"burst\":1000000000}}" \
    "$GW_URL/v1/admin/tenants")"
[[ "$code" == 201 || "$code" == 200 ]] || die "creating the tenant answered $code: $(cat "$WORK/out.json")"

declare -A VALET_URL BLOB_DB
for s in "${SIZES[@]}"; do
    path="${BLOB_PATH[$s]}"
    log "uploading ${SIZE_LABEL[$s]} to $path"
    code="$(curl -s -o "$WORK/out.json" -w '%{http_code}' -K "$WORK/tenant.curl" -T "$WORK/www/$s.bin" \
        -H 'Content-Type: application/octet-stream' -H 'Expect:' "$GW_URL/v1/tenants/$TENANT/blobs/$path")"
    [[ "$code" == 201 || "$code" == 200 ]] || die "uploading $path answered $code: $(cat "$WORK/out.json")"

    for db in "${DBS[@]:1}"; do
        n="$(psql "${PG[@]}" -tAq -c "SELECT count(*) FROM blobs WHERE tenant = '$TENANT' AND path = '$path' AND deleted = 0" "$db")"
        if [[ "$n" == 1 ]]; then BLOB_DB[$s]="$db"; fi
    done
    [[ -n "${BLOB_DB[$s]:-}" ]] || die "no shard database holds $path"

    code="$(curl -s -o "$WORK/out.json" -w '%{http_code}' -K "$WORK/tenant.curl" -H 'Content-Type: application/json' \
        -d "{\"path\":\"$path\",\"permission\":\"read\",\"expires_in\":3600}" "$GW_URL/v1/tenants/$TENANT/valet-keys")"
    [[ "$code" == 201 ]] || die "issuing a valet key for $path answered $code: $(cat "$WORK/out.json")"
    url="$(sed -n 's/.*"url":"\([^"]*\)".*/\1/p' "$WORK/out.json")"
    [[ -n "$url" ]] || die "no url in the valet key: $(cat "$WORK/out.json")"
    # The URL's own host may be a public name; the bench talks to the listener directly.
    VALET_URL[$s]="$GW_URL/${url#http*://*/}"
    if [[ "$url" == /* ]]; then VALET_URL[$s]="$GW_URL$url"; fi
    log "  on ${BLOB_DB[$s]}; valet URL issued"
done

# check_valet SIZE: one download through the valet URL, compared with the file (also warms the
# chunk cache when it is on).
check_valet() {
    local s="$1" got
    got="$(curl -sf "${VALET_URL[$s]}" | sha256sum | cut -d' ' -f1)" || die "valet GET of ${BLOB_PATH[$s]} failed"
    [[ "$got" == "${SHA[$s]}" ]] || die "valet GET of ${BLOB_PATH[$s]} returned other bytes (sha256 $got)"
}

# ---------------------------------------------------------------------------------------------
# Measurements
# ---------------------------------------------------------------------------------------------
# Per run (key "name#round"): MB/s, downloads/s, p50/p99 ms, CPU, steal, compilers at start/end.
declare -A MBPS RPS P50 P99 CPU STEAL BUILDS NOTE
ms() { awk -v us="$1" 'BEGIN { printf "%.2f", us / 1000 }'; }
note() { NOTE[$1]="${NOTE[$1]:+${NOTE[$1]}; }$2"; }

# run_wrk NAME ROUND URL: wrk at the common concurrency; MB/s from the bytes wrk read.
run_wrk() {
    local name="$1" round="$2" url="$3" key="$1#$2" out line b0 non2xx errors
    log "round $round, wrk: $name ($DURATION, $CONNECTIONS connections, $THREADS threads)"
    wait_for_quiet
    b0="$(busy_builds)"
    start_sampler "$key"
    out="$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --timeout 60s --latency -s bench/wrk/download.lua "$url")"
    stop_sampler "$key"
    BUILDS[$key]="$b0/$(busy_builds)"
    printf '%s\n' "$out" >"$WORK/wrk-$name-$round.txt"
    line="$(grep '^SGBENCH ' <<<"$out" || true)"
    [[ -n "$line" ]] || die "wrk printed no summary for $name: $out"
    MBPS[$key]="$(awk -v b="$(field bytes "$line")" -v s="$(field secs "$line")" 'BEGIN { printf "%.0f", b / s / 1e6 }')"
    RPS[$key]="$(field rps "$line")"
    P50[$key]="$(ms "$(field p50_us "$line")")"
    P99[$key]="$(ms "$(field p99_us "$line")")"
    non2xx="$(field non2xx "$line")"
    errors="$(field socket_errors "$line")"
    [[ "$non2xx" == 0 && "$errors" == 0 ]] || note "$name" "round $round: $non2xx non-2xx answers, $errors socket errors"
}

# run_fetch NAME ROUND SIZE MODE DRIVER: blob_fetch with as many tasks as wrk has connections.
run_fetch() {
    local name="$1" round="$2" s="$3" mode="$4" driver="$5" key="$1#$2" out line b0
    log "round $round, blob_fetch: $name ($SECS s, $CONNECTIONS tasks, pool $POOL, $mode, $driver driver)"
    wait_for_quiet
    b0="$(busy_builds)"
    start_sampler "$key"
    out="$(TASKS="$CONNECTIONS" POOL="$POOL" SECONDS="$SECS" "$BIN/blob_fetch" \
        "postgres://postgres@127.0.0.1:5432/${BLOB_DB[$s]}" "$TENANT" "${BLOB_PATH[$s]}" "$mode" "$driver" 2>&1)" \
        || die "blob_fetch $name failed: $out"
    stop_sampler "$key"
    BUILDS[$key]="$b0/$(busy_builds)"
    printf '%s\n' "$out" >"$WORK/fetch-$name-$round.txt"
    line="$(grep '^SGFETCH ' <<<"$out" || true)"
    [[ -n "$line" ]] || die "blob_fetch printed no summary for $name: $out"
    MBPS[$key]="$(awk -v v="$(field mb_per_s "$line")" 'BEGIN { printf "%.0f", v }')"
    RPS[$key]="$(awk -v f="$(field fetches "$line")" -v s="$(field secs "$line")" 'BEGIN { printf "%.2f", f / s }')"
    P50[$key]="$(ms "$(field p50_us "$line")")"
    P99[$key]="$(ms "$(field p99_us "$line")")"
}

# nginx serving the same files (sendfile), unprivileged configuration in the work directory; it
# idles while the other rows run.
NGINX_ADDR="127.0.0.1:$(free_port)"
user_line=""
[[ "$(id -u)" -ne 0 ]] || user_line="user $(id -un) $(id -gn);"   # workers must read the 0700 work dir
cat >"$WORK/nginx/nginx.conf" <<NGINX_CONF
daemon off;
$user_line
worker_processes $(nproc);
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    client_body_temp_path $WORK/nginx/tmp/body;
    proxy_temp_path $WORK/nginx/tmp/proxy;
    fastcgi_temp_path $WORK/nginx/tmp/fastcgi;
    uwsgi_temp_path $WORK/nginx/tmp/uwsgi;
    scgi_temp_path $WORK/nginx/tmp/scgi;
    default_type application/octet-stream;
    server {
        listen $NGINX_ADDR;
        root $WORK/www;
    }
}
NGINX_CONF
log "starting nginx on $NGINX_ADDR"
"$NGINX" -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" -e "$WORK/nginx/error.log" >"$WORK/nginx/stdout.log" 2>&1 &
NGINX_PID=$!
for _ in $(seq 1 100); do
    [[ "$(curl -s -o /dev/null -w '%{http_code}' "http://$NGINX_ADDR/1m.bin")" == 200 ]] && break
    kill -0 "$NGINX_PID" 2>/dev/null || die "nginx exited: $(cat "$WORK/nginx/error.log" "$WORK/nginx/stdout.log" 2>/dev/null)"
    sleep 0.1
done
for s in "${SIZES[@]}"; do
    got="$(curl -sf "http://$NGINX_ADDR/$s.bin" | sha256sum | cut -d' ' -f1)"
    [[ "$got" == "${SHA[$s]}" ]] || die "nginx returned other bytes for $s.bin"
done

# Each round measures every row once, in the same order, so that a slow spell of the machine
# lands on all of them; the tables show each row's median round.
COLD_SKIPPED=""
for round in $(seq 1 "$ROUNDS"); do
    # Hot: the chunk cache (default size) holds both blobs after the check downloads.
    if [[ "$round" -gt 1 ]]; then
        log "round $round: restarting the gateway (chunk cache at its default)"
        start_gateway || die "the gateway does not start: $GW_FAILURE"
    fi
    for s in "${SIZES[@]}"; do
        check_valet "$s"
        check_valet "$s"
    done
    for s in "${SIZES[@]}"; do
        run_wrk "hot_$s" "$round" "${VALET_URL[$s]}"
    done

    # Cold: a gateway without chunk cache, so every download reads the shard.
    if [[ -z "$COLD_SKIPPED" ]]; then
        log "round $round: restarting the gateway with SHARDGATE_BLOBS__CHUNK_CACHE_BYTES=0"
        if start_gateway SHARDGATE_BLOBS__CHUNK_CACHE_BYTES=0; then
            for s in "${SIZES[@]}"; do
                check_valet "$s"
                run_wrk "cold_$s" "$round" "${VALET_URL[$s]}"
            done
        else
            grep -qiE 'invalid configuration|unknown (field|key)' <<<"$GW_FAILURE" \
                || die "the gateway does not start without chunk cache: $GW_FAILURE"
            COLD_SKIPPED="this build rejects SHARDGATE_BLOBS__CHUNK_CACHE_BYTES: $(tr '`' "'" <<<"$GW_FAILURE")"
        fi
    fi
    stop_gateway

    # The database's own limit: the same chunks, straight from the shard with sqlx.
    for s in "${SIZES[@]}"; do
        run_fetch "sqlx_chunks_$s" "$round" "$s" chunks pg
        run_fetch "sqlx_ordered_$s" "$round" "$s" ordered pg
        run_fetch "sqlx_any_$s" "$round" "$s" chunks any
    done

    for s in "${SIZES[@]}"; do
        run_wrk "nginx_$s" "$round" "http://$NGINX_ADDR/$s.bin"
    done
done
stop_pid "$NGINX_PID"
NGINX_PID=""

# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------
# Each row's median round by MB/s (with an even number of rounds, the lower middle one), and the
# spread of MB/s over the rounds.
declare -A MED SPREAD
for key in "${!MBPS[@]}"; do
    name="${key%#*}"
    [[ -z "${MED[$name]:-}" ]] || continue
    mapfile -t sorted < <(for r in $(seq 1 "$ROUNDS"); do
        [[ -z "${MBPS[$name#$r]:-}" ]] || echo "${MBPS[$name#$r]} $r"
    done | sort -n)
    mid=$(((${#sorted[@]} - 1) / 2))
    MED[$name]="${sorted[$mid]#* }"
    SPREAD[$name]="${sorted[0]% *}–${sorted[-1]% *}"
done
get() { # ARRAY NAME: the figure of NAME's median round, or n/a
    local -n figures="$1"
    local r="${MED[$2]:-}"
    if [[ -n "$r" ]]; then echo "${figures[$2#$r]:-n/a}"; else echo "n/a"; fi
}
declare -A LABEL=(
    [nginx]="nginx, file (sendfile)"
    [hot]="valet GET, hot (chunk cache)"
    [cold]="valet GET, cold (no chunk cache)"
    [sqlx_chunks]="sqlx, one SELECT per chunk (pg driver)"
    [sqlx_ordered]="sqlx, one SELECT ... ORDER BY seq (pg driver)"
    [sqlx_any]="sqlx, one SELECT per chunk (Any driver, as the gateway)"
)
ROWS=(nginx hot cold sqlx_chunks sqlx_ordered sqlx_any)

echo
echo "## shardgate valet downloads"
echo
echo "$ROUNDS rounds of $DURATION per row, $CONNECTIONS connections (wrk, $THREADS threads) or $CONNECTIONS tasks (blob_fetch); pool of $POOL connections per database for the gateway and blob_fetch; $(nproc) CPUs shared by load generator, server and PostgreSQL. MB = 10^6 bytes."
echo
echo "| scenario | blob | MB/s (median round) | MB/s over the rounds | downloads/s | p50 ms | p99 ms | CPU % server / postgres / client / other |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for s in "${SIZES[@]}"; do
    for r in "${ROWS[@]}"; do
        n="${r}_$s"
        echo "| ${LABEL[$r]} | ${SIZE_LABEL[$s]} | $(get MBPS "$n") | ${SPREAD[$n]:-n/a} | $(get RPS "$n") | $(get P50 "$n") | $(get P99 "$n") | $(get CPU "$n") |"
    done
done
echo
echo "| ratio (of the median MB/s) | 1 MiB | 64 MiB | target | meets (1 MiB / 64 MiB) |"
echo "| --- | ---: | ---: | ---: | --- |"
ratio_row() { # label a b target
    local r1 r64 t="$4"
    r1="$(ratio "$(get MBPS "${2}_1m")" "$(get MBPS "${3}_1m")")"
    r64="$(ratio "$(get MBPS "${2}_64m")" "$(get MBPS "${3}_64m")")"
    if [[ -n "$t" ]]; then
        echo "| $1 | $r1 | $r64 | ≥ $t | $(meets "$r1" ">=" "$t") / $(meets "$r64" ">=" "$t") |"
    else
        echo "| $1 | $r1 | $r64 | | |"
    fi
}
ratio_row "valet cold ÷ sqlx per chunk (pg)" cold sqlx_chunks 0.8
ratio_row "valet cold ÷ sqlx ORDER BY seq (pg)" cold sqlx_ordered 0.8
ratio_row "valet cold ÷ sqlx per chunk (Any)" cold sqlx_any ""
hot_1m="$(ratio "$(get MBPS hot_1m)" "$(get MBPS nginx_1m)")"
hot_64m="$(ratio "$(get MBPS hot_64m)" "$(get MBPS nginx_64m)")"
echo "| valet hot ÷ nginx | $hot_1m | $hot_64m | ≥ 0.5 (1 MiB) | $(meets "$hot_1m" ">=" 0.5) / (no target) |"
echo
echo "MB/s from the bytes read (wrk: response bytes incl. headers; blob_fetch: chunk bytes) over the run's duration; downloads/s and p50/p99 are per whole blob (wrk requests, blob_fetch fetches) in the median round. CPU (median round): from /proc, sampled every 0.5 s, 100 % = one core; server = the gateway or nginx, postgres = the backends of the harness's databases, client = wrk or blob_fetch, other = the rest of the machine's busy time."
[[ -z "$COLD_SKIPPED" ]] || echo "- valet cold rows not run: $COLD_SKIPPED"
for s in "${SIZES[@]}"; do
    for r in "${ROWS[@]}"; do
        n="${r}_$s"
        [[ -z "${NOTE[$n]:-}" ]] || echo "- ${LABEL[$r]}, ${SIZE_LABEL[$s]}: ${NOTE[$n]}"
    done
done
busy=""
steal=""
loaded=""
for key in $(printf '%s\n' "${!BUILDS[@]}" | sort); do
    [[ "${BUILDS[$key]}" == "0/0" ]] || busy+=" ${key%#*} round ${key#*#} (${BUILDS[$key]});"
    other="${CPU[$key]##*/ }"
    if [[ "$other" =~ ^[0-9]+$ && "$other" -ge 25 ]]; then
        loaded+=" ${key%#*} round ${key#*#} ($other %);"
    fi
    if awk -v v="${STEAL[$key]:-0}" 'BEGIN { exit !(v >= 5) }'; then
        steal+=" ${key%#*} round ${key#*#} (${STEAL[$key]} %);"
    fi
done
if [[ -n "$busy" ]]; then
    echo "- compiler/linker processes running at the start/end of a run (figures skewed):$busy"
else
    echo "- no compiler or linker was running at the start or end of any run."
fi
[[ -z "$loaded" ]] || echo "- runs during which other processes used ≥ 25 % of a core (the *other* CPU; figures skewed):$loaded"
[[ -z "$steal" ]] || echo "- CPU time stolen by the hypervisor (≥ 5 % of one core):$steal"
