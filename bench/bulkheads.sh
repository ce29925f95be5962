#!/usr/bin/env bash
# Bulkheads under stalled uploads (issue 12): one tenant starts STALLS blob uploads that stop
# sending after 1 KiB (the original failure: 1,100 of them made every other tenant and the probes
# get 503 `overloaded`). Runs the embedded gateway (SQLite, no services) with DEFAULT limits and
# measures, alone (phase A) and while the stalled uploads are open (phase B), another tenant's
# paced GETs and paced `/healthz` and `/readyz` probes; it also reports how the stalled uploads
# were answered (429 `tenant_concurrency_limit` at once beyond the tenant's cap, 408
# `transfer_stalled` after `limits.transfer_idle_timeout`) and whether the greedy tenant is
# served again afterwards. It reports; it never fails on a figure: the exit status is non-zero
# only when a step itself broke.
#
#   bench/bulkheads.sh                        # 1,100 stalled uploads, 20 s measured per phase
#   STALLS=2000 DURATION=10 bench/bulkheads.sh
#   KEEP_WORK=1 bench/bulkheads.sh            # keep the clients' raw output and the gateway log
#   NO_BUILD=1 bench/bulkheads.sh             # use target/release/shardgate as it is
#   NO_BUILD=1 BIN=/elsewhere/target/release bench/bulkheads.sh   # the same against another build
#
# See bench/README.md ("Bulkheads under stalled uploads") for what is measured.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" # sets ROOT, the workspace, and works there

SECS="$(duration_secs "${DURATION:-20s}")"
STALLS="${STALLS:-1100}"
OTHER_RATE="${OTHER_RATE:-200}"    # the other tenant's GETs per second
PROBE_RATE="${PROBE_RATE:-10}"     # /healthz and /readyz, each, per second
for v in SECS STALLS OTHER_RATE PROBE_RATE; do
    [[ "${!v}" =~ ^[0-9]+$ && "${!v}" -gt 0 ]] || die "$v must be a positive number (got '${!v}')"
done
IDLE=30           # limits.transfer_idle_timeout, the default (the gateway gets no setting for it)
LEAD=3            # seconds between opening the stalled uploads and the start of the measured window
(( LEAD + SECS < IDLE )) || die "DURATION must be under $(( IDLE - LEAD )) s, so phase B ends before the idle limit"
HOLD=$(( IDLE + 15 ))   # the stalled client keeps its connections this long (past the idle limit)
BIN="${BIN:-$ROOT/target/release}"   # BIN=dir NO_BUILD=1: another build (e.g. one without bulkheads)

command -v python3 >/dev/null || apt_install python3
require_tools curl python3
build_release shardgate-api shardgate

# Every stalled upload is a socket in the client and one in the gateway.
ulimit -n "$(ulimit -Hn)"
(( $(ulimit -n) > 2 * STALLS + 256 )) || die "the file limit ($(ulimit -n)) is too low for $STALLS stalled uploads"

WORK="$(mktemp -d -t sgbulk.XXXXXX)"
STALL_PID=""
release() {
    stop_pid "$STALL_PID"
    stop_pid "$GW_PID"
}
cleanup_on_exit

# ---------------------------------------------------------------------------------------------
# The clients (Python 3, standard library only)
# ---------------------------------------------------------------------------------------------
# stall.py HOST PORT TENANT N HOLD: N uploads to /v1/tenants/TENANT/blobs/stall/<i> that declare
# 100 MB and send 1 KiB, opened as fast as the gateway accepts them; each waits for an answer
# until HOLD seconds after the first was opened. Prints SGSTALL opened=... opened_secs=...
# answered=... statuses=... codes=... refused_p50_ms=... refused_p99_ms=... refused_max_ms=...
# stalled_first_s=... stalled_last_s=... unanswered=... (refused: time from the end of the
# upload's 1 KiB to its 429; stalled: seconds from the end of its 1 KiB to its 408).
cat >"$WORK/stall.py" <<'PY'
import asyncio, json, os, re, sys
from collections import Counter


def rank(values, q):
    if not values:
        return float("nan")
    return values[max(1, -(-len(values) * q // 100)) - 1]


async def main():
    host, port, tenant = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    n, hold = int(sys.argv[4]), float(sys.argv[5])
    token = os.environ["TOKEN"]
    loop = asyncio.get_running_loop()
    answers = []  # (status, code, seconds after the upload's bytes were sent)
    opened = 0

    async def upload(i):
        nonlocal opened
        try:
            reader, writer = await asyncio.open_connection(host, port)
        except OSError:
            answers.append((0, "connect_failed", 0.0))
            return
        head = (
            f"PUT /v1/tenants/{tenant}/blobs/stall/{i} HTTP/1.1\r\nHost: {host}:{port}\r\n"
            f"Authorization: Bearer {token}\r\nContent-Length: 100000000\r\n\r\n"
        ).encode()
        writer.write(head + b"x" * 1024)
        await writer.drain()
        sent = loop.time()
        opened += 1
        try:
            status = int((await reader.readline()).split()[1])
            length = 0
            while True:
                line = await reader.readline()
                if line in (b"\r\n", b""):
                    break
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            body = await reader.readexactly(length)
            code = json.loads(body).get("code", "?") if body.startswith(b"{") else "-"
            answers.append((status, code, loop.time() - sent))
        except (OSError, asyncio.IncompleteReadError, ValueError, IndexError):
            answers.append((0, "closed", loop.time() - sent))
        finally:
            writer.close()

    started = loop.time()
    tasks = [asyncio.create_task(upload(i)) for i in range(n)]
    while opened + len([a for a in answers if a[1] == "connect_failed"]) < n and loop.time() - started < 30:
        await asyncio.sleep(0.05)
    opened_secs = loop.time() - started
    print(f"SGOPENED {opened}", flush=True)
    done, pending = await asyncio.wait(tasks, timeout=max(0.0, hold - (loop.time() - started)))
    for task in pending:
        task.cancel()
    refused = sorted(s * 1000 for status, _, s in answers if status == 429)
    stalled = sorted(s for status, _, s in answers if status == 408)
    statuses = Counter(status for status, _, _ in answers)
    codes = Counter(code for _, code, _ in answers)
    print(
        f"SGSTALL opened={opened} opened_secs={opened_secs:.2f} answered={len(answers)} "
        f"statuses={','.join(f'{s}:{c}' for s, c in sorted(statuses.items()))} "
        f"codes={','.join(f'{s}:{c}' for s, c in sorted(codes.items()))} "
        f"refused_p50_ms={rank(refused, 50):.2f} refused_p99_ms={rank(refused, 99):.2f} "
        f"refused_max_ms={(refused[-1] if refused else float('nan')):.2f} "
        f"stalled_first_s={(stalled[0] if stalled else float('nan')):.2f} "
        f"stalled_last_s={(stalled[-1] if stalled else float('nan')):.2f} "
        f"unanswered={len(pending)}"
    )


asyncio.run(main())
PY

# ---------------------------------------------------------------------------------------------
# Gateway (embedded default, default limits) and tenants
# ---------------------------------------------------------------------------------------------
PORT="$(free_port)"
gateway_at "127.0.0.1:$PORT"
log "starting the embedded gateway on $GW_ADDR with default limits (data in $SHARDGATE_DATA_DIR)"
start_gateway || die "the gateway does not start: $GW_FAILURE"

ADMIN_TOKEN="$("$BIN/shardgate" token --admin --data-dir "$SHARDGATE_DATA_DIR")"
printf 'header = "Authorization: Bearer %s"\n' "$ADMIN_TOKEN" >"$WORK/admin.curl"
chmod 600 "$WORK/admin.curl"
declare -A TOKENS
for tenant in greedy other; do
    code="$(curl -s -o "$WORK/out.json" -w '%{http_code}' -K "$WORK/admin.curl" \
        -H 'Content-Type: application/json' -d "{\"id\":\"$tenant\"}" "$GW_URL/v1/admin/tenants")"
    [[ "$code" == 201 ]] || die "creating tenant $tenant answered $code: $(cat "$WORK/out.json")"
    TOKENS[$tenant]="$("$BIN/shardgate" token --tenant "$tenant" --scopes read,write --ttl 2h --data-dir "$SHARDGATE_DATA_DIR")"
    printf 'header = "Authorization: Bearer %s"\n' "${TOKENS[$tenant]}" >"$WORK/$tenant.curl"
    chmod 600 "$WORK/$tenant.curl"
    code="$(curl -s -o "$WORK/out.json" -w '%{http_code}' -K "$WORK/$tenant.curl" -X PUT \
        -H 'Content-Type: application/json' -d '{"n":0}' "$GW_URL/v1/tenants/$tenant/collections/items/records/k")"
    [[ "$code" == 201 ]] || die "seeding $tenant answered $code: $(cat "$WORK/out.json")"
done
RECORD=/v1/tenants/other/collections/items/records/k

# ---------------------------------------------------------------------------------------------
# Phases
# ---------------------------------------------------------------------------------------------
declare -A P   # P[phase.client] = the SGGETS line of bench/paced_get.py
measure() { # phase: the other tenant's GETs and the probes, in parallel, for SECS seconds
    local phase="$1" pids=() client
    TOKEN="${TOKENS[other]}" python3 "$ROOT/bench/paced_get.py" 127.0.0.1 "$PORT" "$RECORD" "$OTHER_RATE" "$SECS" \
        >"$WORK/$phase-other.txt" & pids+=($!)
    python3 "$ROOT/bench/paced_get.py" 127.0.0.1 "$PORT" /healthz "$PROBE_RATE" "$SECS" >"$WORK/$phase-healthz.txt" & pids+=($!)
    python3 "$ROOT/bench/paced_get.py" 127.0.0.1 "$PORT" /readyz "$PROBE_RATE" "$SECS" >"$WORK/$phase-readyz.txt" & pids+=($!)
    wait "${pids[@]}"
    for client in other healthz readyz; do
        P[$phase.$client]="$(grep '^SGGETS ' "$WORK/$phase-$client.txt" || true)"
        [[ -n "${P[$phase.$client]}" ]] || die "the $client client printed no summary in phase $phase"
    done
}

metric_value() { # name{labels}: its value at /metrics
    curl -s "$GW_URL/metrics" | awk -v name="$1" 'index($0, name " ") == 1 { print $2 }'
}

log "phase A: other tenant at $OTHER_RATE GET/s, /healthz and /readyz at $PROBE_RATE/s each, ${SECS} s"
BUILDS_A="$(busy_builds)"
measure A

log "phase B: $STALLS stalled uploads by tenant greedy, then the same measurement"
BUILDS_B="$(busy_builds)"
TOKEN="${TOKENS[greedy]}" python3 "$WORK/stall.py" 127.0.0.1 "$PORT" greedy "$STALLS" "$HOLD" >"$WORK/stall.txt" &
STALL_PID=$!
for _ in $(seq 1 600); do
    grep -q '^SGOPENED ' "$WORK/stall.txt" 2>/dev/null && break
    kill -0 "$STALL_PID" 2>/dev/null || die "the stalling client ended early: $(cat "$WORK/stall.txt")"
    sleep 0.1
done
sleep "$LEAD"
IN_PROGRESS_B="$(metric_value 'shardgate_bulkhead_requests_in_progress{limit="tenant"}')"
greedy_during="$(curl -s -o /dev/null -w '%{http_code}' -K "$WORK/greedy.curl" "$GW_URL/v1/tenants/greedy/collections/items/records/k")"
measure B

log "waiting for the stalled uploads to end (idle limit ${IDLE} s; the client holds them ${HOLD} s)"
wait "$STALL_PID" || die "the stalling client failed: $(cat "$WORK/stall.txt")"
STALL_PID=""
STALL="$(grep '^SGSTALL ' "$WORK/stall.txt" || true)"
[[ -n "$STALL" ]] || die "the stalling client printed no summary: $(cat "$WORK/stall.txt")"
greedy_after="$(curl -s -o /dev/null -w '%{http_code}' -K "$WORK/greedy.curl" "$GW_URL/v1/tenants/greedy/collections/items/records/k")"
REFUSED_TENANT="$(metric_value 'shardgate_bulkhead_refusals_total{limit="tenant"}')"
REFUSED_GLOBAL="$(metric_value 'shardgate_bulkhead_refusals_total{limit="global"}')"
STALLED_UPLOADS="$(metric_value 'shardgate_stalled_transfers_total{direction="upload"}')"
IN_PROGRESS_AFTER="$(metric_value 'shardgate_bulkhead_requests_in_progress{limit="tenant"}')"
STAGED="$(curl -s -K "$WORK/greedy.curl" "$GW_URL/v1/tenants/greedy/blobs" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))')"
RSS_KB="$(awk '/^VmHWM/ { print $2 }' "/proc/$GW_PID/status")"

# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------
row() { # label field
    printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$1" \
        "$(field "$2" "${P[A.other]}")" "$(field "$2" "${P[B.other]}")" \
        "$(field "$2" "${P[A.healthz]}")" "$(field "$2" "${P[B.healthz]}")" \
        "$(field "$2" "${P[A.readyz]}")" "$(field "$2" "${P[B.readyz]}")"
}
echo
echo "## shardgate bulkheads under $STALLS stalled uploads"
echo
echo "Embedded gateway (SQLite), release build, default limits (instance 1,024 requests in progress, standard tenant 256, idle limit ${IDLE} s). Tenant \`greedy\` opens $STALLS uploads that declare 100 MB and stop after 1 KiB; phase B starts ${LEAD} s after they are open. Measured for ${SECS} s per phase: tenant \`other\` GETs one record at $OTHER_RATE/s, \`/healthz\` and \`/readyz\` at $PROBE_RATE/s each (open loop, 5 s timeout). $(nproc) CPUs shared by the gateway and the clients."
echo
echo "| | other GET, A | other GET, B | /healthz, A | /healthz, B | /readyz, A | /readyz, B |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
row "sent" sent
row "2xx" ok
row "non-2xx" non2xx
row "no answer" failed
row "p50 ms" p50_ms
row "p99 ms" p99_ms
row "max ms" max_ms
row "statuses" statuses
echo
echo "| stalled uploads of \`greedy\` | value |"
echo "| --- | ---: |"
echo "| opened (seconds to open them all) | $(field opened "$STALL") ($(field opened_secs "$STALL") s) |"
echo "| answers by status | $(field statuses "$STALL") |"
echo "| answers by code | $(field codes "$STALL") |"
echo "| 429 refusals: p50 / p99 / max ms after the upload's bytes | $(field refused_p50_ms "$STALL") / $(field refused_p99_ms "$STALL") / $(field refused_max_ms "$STALL") |"
echo "| 408 \`transfer_stalled\`: first / last, s after the upload's bytes | $(field stalled_first_s "$STALL") / $(field stalled_last_s "$STALL") |"
echo "| unanswered after ${HOLD} s | $(field unanswered "$STALL") |"
echo "| tenant places held during B (\`bulkhead_requests_in_progress\`) | ${IN_PROGRESS_B:-n/a} |"
echo "| greedy's own GET during B / after the idle limit | $greedy_during / $greedy_after |"
echo "| \`bulkhead_refusals_total\` tenant / global | ${REFUSED_TENANT:-n/a} / ${REFUSED_GLOBAL:-n/a} |"
echo "| \`stalled_transfers_total{direction=\"upload\"}\` | ${STALLED_UPLOADS:-n/a} |"
echo "| places held at the end / blobs of greedy stored | ${IN_PROGRESS_AFTER:-n/a} / $STAGED |"
echo "| gateway peak RSS | $(( ${RSS_KB:-0} / 1024 )) MiB |"
echo
echo "- Compiler/cargo processes running at the start of phase A / B: $BUILDS_A / $BUILDS_B."
