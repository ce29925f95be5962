#!/usr/bin/env bash
# Streamed blob transfer with bounded memory: uploads a 1 GiB blob of random bytes to the
# embedded gateway (SQLite shards, no services needed), downloads it again, checks the SHA-256,
# and reports the gateway's peak resident memory (VmHWM from /proc/<pid>/status) and the time of
# each transfer. Target: the upload keeps the gateway under 150 MiB. Prints one markdown table.
# It reports; it never fails on a figure: the exit status is non-zero only when a step broke
# (a transfer failed or the bytes came back different).
#
#   bench/blob_memory.sh                  # 1 GiB
#   SIZE_MIB=256 bench/blob_memory.sh     # a smaller blob
#   KEEP_WORK=1 bench/blob_memory.sh      # keep the gateway logs (never the blob or the database)
#   NO_BUILD=1 bench/blob_memory.sh       # run target/release/shardgate as it is
#
# Each transfer runs in a gateway process of its own (stopped and started again in between), so
# each peak belongs to one transfer:
#   1. upload, chunk cache at its default (256 MiB);
#   2. download, chunk cache at its default: the cache may legitimately keep up to 256 MiB of
#      chunks, so this peak is expected near start-up RSS + 256 MiB;
#   3. download with SHARDGATE_BLOBS__CHUNK_CACHE_BYTES=0: the streaming path alone.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" # sets ROOT, the workspace, and works there

SIZE_MIB="${SIZE_MIB:-1024}"
[[ "$SIZE_MIB" =~ ^[1-9][0-9]*$ ]] || { echo "error: SIZE_MIB must be a positive number" >&2; exit 1; }
TARGET_MIB=150
TENANT=bench
BLOB=memory-bench/big.bin
BIN="$ROOT/target/release"


require_tools curl python3 sha256sum
build_release shardgate-api shardgate

# ---------------------------------------------------------------------------------------------
# State and cleanup (the work directory holds the blob and the SQLite shards: ~2x SIZE_MIB)
# ---------------------------------------------------------------------------------------------
WORK="$(mktemp -d -t sgmem.XXXXXX)"
KEPT="logs (never the blob or the database)"
release() {
    stop_pid "$GW_PID"
    rm -rf "$WORK/blob.bin" "$WORK/data"
}
cleanup_on_exit

avail_mib="$(df -Pm "$WORK" | awk 'NR == 2 { print $4 }')"
[[ "$avail_mib" -gt $((SIZE_MIB * 3 + 512)) ]] || die "$WORK has $avail_mib MiB free; about $((SIZE_MIB * 3)) MiB are needed"

log "writing $SIZE_MIB MiB of random bytes"
head -c "$((SIZE_MIB * 1024 * 1024))" /dev/urandom >"$WORK/blob.bin"
SHA="$(sha256sum "$WORK/blob.bin" | cut -d' ' -f1)"

# ---------------------------------------------------------------------------------------------
# Gateway (embedded default: SQLite shards in a fresh data directory)
# ---------------------------------------------------------------------------------------------
gateway_at "127.0.0.1:$(free_port)"

# transfer_gateway NAME [VAR=value ...]: a gateway of its own for one transfer (log: gateway-NAME.log).
transfer_gateway() {
    local name="$1"
    shift
    GW_LOG="$WORK/gateway-$name.log" start_gateway "$@" || die "the gateway does not start: $GW_FAILURE"
}
# status_mib FIELD: VmHWM / VmRSS of the gateway in MiB (the file gives kB).
status_mib() { awk -v f="$1:" '$1 == f { printf "%.1f", $2 / 1024 }' "/proc/$GW_PID/status"; }

declare -A SECS MBPS START_HWM HWM RSS CHECK BUILDS
now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
rate() { awk -v s="$1" -v n="$((SIZE_MIB * 1024 * 1024))" 'BEGIN { printf "%.0f", n / s / 1e6 }'; }

# download NAME: GET of the blob (bytes hashed on the fly, never written to disk).
download() {
    local name="$1" t0 t1 got b0
    START_HWM[$name]="$(status_mib VmHWM)"
    b0="$(busy_builds)"
    log "$name: downloading"
    t0="$(now)"
    got="$(curl -sSf -K "$WORK/tenant.curl" "$GW_URL/v1/tenants/$TENANT/blobs/$BLOB" | sha256sum | cut -d' ' -f1)" \
        || die "$name: the download failed"
    t1="$(now)"
    BUILDS[$name]="$b0/$(busy_builds)"
    SECS[$name]="$(elapsed "$t0" "$t1")"
    MBPS[$name]="$(rate "${SECS[$name]}")"
    HWM[$name]="$(status_mib VmHWM)"
    RSS[$name]="$(status_mib VmRSS)"
    [[ "$got" == "$SHA" ]] || die "$name: the download's SHA-256 is $got, the upload's $SHA"
    CHECK[$name]="matches"
}

# 1. Upload.
log "starting the embedded gateway on $GW_ADDR (chunk cache at its default)"
transfer_gateway upload
ADMIN_TOKEN="$("$BIN/shardgate" token --admin --data-dir "$SHARDGATE_DATA_DIR")"
TOKEN="$("$BIN/shardgate" token --tenant "$TENANT" --scopes read,write --ttl 2h --data-dir "$SHARDGATE_DATA_DIR")"
printf 'header = "Authorization: Bearer %s"\n' "$ADMIN_TOKEN" >"$WORK/admin.curl"
printf 'header = "Authorization: Bearer %s"\n' "$TOKEN" >"$WORK/tenant.curl"
chmod 600 "$WORK/admin.curl" "$WORK/tenant.curl"
tier=standard   # blobs up to 5 GiB
[[ "$SIZE_MIB" -le 5120 ]] || tier=premium
code="$(curl -s -o "$WORK/out.json" -w '%{http_code}' -K "$WORK/admin.curl" -H 'Content-Type: application/json' \
    -d "{\"id\":\"$TENANT\",\"tier\":\"$tier\"}" "$GW_URL/v1/admin/tenants")"
[[ "$code" == 201 || "$code" == 200 ]] || die "creating the tenant answered $code: $(cat "$WORK/out.json")"

START_HWM[upload]="$(status_mib VmHWM)"
b0="$(busy_builds)"
log "upload: $SIZE_MIB MiB"
t0="$(now)"
code="$(curl -sS -o "$WORK/out.json" -w '%{http_code}' -K "$WORK/tenant.curl" -T "$WORK/blob.bin" \
    -H 'Content-Type: application/octet-stream' -H 'Expect:' "$GW_URL/v1/tenants/$TENANT/blobs/$BLOB")"
t1="$(now)"
BUILDS[upload]="$b0/$(busy_builds)"
[[ "$code" == 201 || "$code" == 200 ]] || die "the upload answered $code: $(cat "$WORK/out.json")"
SECS[upload]="$(elapsed "$t0" "$t1")"
MBPS[upload]="$(rate "${SECS[upload]}")"
HWM[upload]="$(status_mib VmHWM)"
RSS[upload]="$(status_mib VmRSS)"
if grep -q "$SHA" "$WORK/out.json"; then CHECK[upload]="matches (answer)"; else CHECK[upload]="not in the answer"; fi
stop_gateway

# 2. Download, chunk cache at its default, in a fresh process.
log "restarting the gateway (chunk cache at its default)"
transfer_gateway cached
download cached
stop_gateway

# 3. Download without chunk cache, in a fresh process.
log "restarting the gateway with SHARDGATE_BLOBS__CHUNK_CACHE_BYTES=0"
transfer_gateway uncached SHARDGATE_BLOBS__CHUNK_CACHE_BYTES=0
download uncached
stop_gateway

# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------
under() { awk -v v="$1" -v t="$2" 'BEGIN { print (v < t) ? "yes" : "no" }'; }
echo
echo "## shardgate streamed blob transfer, $SIZE_MIB MiB"
echo
echo "Embedded gateway (SQLite shards, $(nproc) CPUs), curl on the same machine; each transfer in a fresh gateway process. MiB = 2^20 bytes, MB/s = 10^6 bytes/s."
echo
echo "| transfer | chunk cache | time s | MB/s | SHA-256 | VmHWM at start MiB | peak RSS (VmHWM) MiB | RSS after MiB | target | meets |"
echo "| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | --- | --- |"
echo "| upload | default (256 MiB) | ${SECS[upload]} | ${MBPS[upload]} | ${CHECK[upload]} | ${START_HWM[upload]} | ${HWM[upload]} | ${RSS[upload]} | < $TARGET_MIB MiB | $(under "${HWM[upload]}" "$TARGET_MIB") |"
echo "| download | default (256 MiB) | ${SECS[cached]} | ${MBPS[cached]} | ${CHECK[cached]} | ${START_HWM[cached]} | ${HWM[cached]} | ${RSS[cached]} | (cache may hold 256 MiB) | |"
echo "| download | off (0) | ${SECS[uncached]} | ${MBPS[uncached]} | ${CHECK[uncached]} | ${START_HWM[uncached]} | ${HWM[uncached]} | ${RSS[uncached]} | < $TARGET_MIB MiB (informative) | $(under "${HWM[uncached]}" "$TARGET_MIB") |"
echo
echo "SHA-256: the download's bytes hashed by the client and compared with the file's; for the upload, whether the gateway's answer names the file's SHA-256."
busy=""
for n in upload cached uncached; do
    [[ "${BUILDS[$n]}" == "0/0" ]] || busy+=" $n (${BUILDS[$n]});"
done
if [[ -n "$busy" ]]; then
    echo "- compiler/linker processes running (start/end of the transfer): times skewed, peaks not:$busy"
else
    echo "- no compiler or linker was running at the start or end of any transfer."
fi
