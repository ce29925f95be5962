#!/usr/bin/env bash
# Builds the container image (scripts/image.sh) and runs it as production runs it, then checks
# it from outside. Run by .ci/run; warm (the dist target directory and podman's layers cached,
# see scripts/image.sh) it takes well under a minute.
#
# The container: podman with host networking on a free loopback port (SHARDGATE_LISTEN), the
# limits these machines allow (`--ulimit`), a read-only root file system with nothing writable
# but two volumes (the data directory and /tmp, directories of the work directory owned by
# 65532), the image's own user and command (`serve`, the embedded default). The checks:
#
#   - /readyz answers 200 through the container's port;
#   - the gateway's process runs as 65532, not 0 (/proc/<pid>/status on the host: podman runs
#     it in no user namespace, so the host sees the container's ids);
#   - its root file system is mounted read-only (podman's HostConfig.ReadonlyRootfs, and the
#     mount of / in /proc/<pid>/mountinfo), and even root inside the container cannot write to
#     it: `shardgate migrate --data-dir /...` run as user 0 fails with "Read-only file system";
#   - the image's HEALTHCHECK is `shardgate probe` on /readyz, and the probe passes
#     (`podman healthcheck run`, with the check's port instead of 8080);
#   - the README's tour, through a client generated from openapi/openapi.json
#     (scripts/client_tour.py, as scripts/client-tour.sh runs it against the embedded server),
#     with the tokens signed by the binary inside the container (`podman exec ... shardgate
#     token`: no shell is needed, nor present);
#   - SIGTERM (`podman stop`) drains and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE="${SHARDGATE_IMAGE:-localhost/shardgate:dev}"
export SHARDGATE_IMAGE="$IMAGE"
USER_ID=65532

scripts/image.sh
source scripts/podman.sh

work=$(mktemp -d)
container="shardgate-image-check-$$"
stop_container() {
    local status=$?
    if [ "$status" -ne 0 ] && run_podman container exists "$container" 2>/dev/null; then
        echo "the container's last log lines:" >&2
        run_podman logs --tail 30 "$container" >&2 || true
    fi
    run_podman rm --force --time 0 "$container" >/dev/null 2>&1 || true
    rm -rf "$work"
    exit "$status"
}
trap stop_container EXIT

source scripts/python-client.sh

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"
probe="[\"/usr/local/bin/shardgate\", \"probe\", \"--url\", \"$base/readyz\", \"--timeout\", \"2s\"]"
install -d -m 0700 -o "$USER_ID" -g "$USER_ID" "$work/data" "$work/tmp"

# --read-only-tmpfs=false: no tmpfs of podman's on /tmp, /run and /var/tmp; only the volumes
# below are writable. --health-interval disable: no timer (there is no systemd to run one); the
# check runs the probe itself below.
run_podman run --detach --name "$container" \
    --network host --ulimit nofile=20000:20000 --ulimit nproc=4096:4096 \
    --read-only --read-only-tmpfs=false \
    --volume "$work/data:/var/lib/shardgate" --volume "$work/tmp:/tmp" \
    --env SHARDGATE_LISTEN="127.0.0.1:$port" --env SHARDGATE_RATE_LIMITS__ENABLED=false \
    --health-cmd "$probe" --health-interval disable \
    "$IMAGE" >/dev/null

ready=""
for _ in $(seq 1 150); do
    if curl -fsS "$base/readyz" >/dev/null 2>&1; then
        ready=yes
        break
    fi
    if [ "$(run_podman container inspect --format '{{.State.Running}}' "$container")" != true ]; then
        echo "the container stopped before /readyz answered" >&2
        exit 1
    fi
    sleep 0.2
done
[ -n "$ready" ] || { echo "/readyz did not answer 200 within 30 s" >&2; exit 1; }
echo "ok  /readyz 200 through the container's port $port"

pid=$(run_podman container inspect --format '{{.State.Pid}}' "$container")
read -r _ real effective saved filesystem < <(grep '^Uid:' "/proc/$pid/status")
if [ "$real $effective $saved $filesystem" != "$USER_ID $USER_ID $USER_ID $USER_ID" ]; then
    echo "the gateway runs with uids $real $effective $saved $filesystem, not $USER_ID" >&2
    exit 1
fi
echo "ok  the gateway's process (host pid $pid) runs as uid $USER_ID: $(run_podman top "$container" user huser | tail -n 1 | tr -s ' ')"

if [ "$(run_podman container inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$container")" != true ]; then
    echo "podman did not make the root file system read-only" >&2
    exit 1
fi
# mountinfo: field 5 is the mount point, field 6 the mount's options.
root_options=$(awk '$5 == "/" { print $6 }' "/proc/$pid/mountinfo")
case ",$root_options," in
*,ro,*) ;;
*)
    echo "the container's / is mounted with options $root_options, not read-only" >&2
    exit 1
    ;;
esac
if out=$(run_podman exec --user 0 "$container" /usr/local/bin/shardgate migrate --data-dir /read-only-check 2>&1); then
    echo "root inside the container created /read-only-check: the root file system is writable" >&2
    exit 1
fi
if ! grep -q "Read-only file system" <<<"$out"; then
    echo "$out" >&2
    echo "writing to / failed, but not because it is read-only" >&2
    exit 1
fi
echo "ok  / is read-only ($root_options); even root in the container gets: ${out##*: }"

healthcheck=$(run_podman image inspect --format '{{json .HealthCheck.Test}}' "$IMAGE")
expected='["CMD","/usr/local/bin/shardgate","probe","--url","http://127.0.0.1:8080/readyz","--timeout","2s"]'
if [ "$healthcheck" != "$expected" ]; then
    echo "the image's HEALTHCHECK is $healthcheck, not $expected" >&2
    exit 1
fi
run_podman healthcheck run "$container" >/dev/null
echo "ok  the image's HEALTHCHECK is shardgate probe, and it passes"

# The tour signs the tenant's token after creating the tenant, with the binary and data directory
# it is given: here the binary inside the container, on the container's data directory.
cat >"$work/shardgate" <<SHIM
#!/usr/bin/env bash
source "$PWD/scripts/podman.sh"
run_podman exec "$container" /usr/local/bin/shardgate "\$@"
SHIM
chmod +x "$work/shardgate"
admin=$("$work/shardgate" token --admin)
PYTHONPATH="$work/client" "$VENV/bin/python" scripts/client_tour.py "$base" "$admin" "$work/shardgate" /var/lib/shardgate

run_podman stop --time 45 "$container" >/dev/null
exit_code=$(run_podman container inspect --format '{{.State.ExitCode}}' "$container")
if [ "$exit_code" != 0 ]; then
    echo "the gateway exited with status $exit_code on SIGTERM" >&2
    exit 1
fi
echo "ok  SIGTERM: the gateway drained and exited 0"
echo "the image $IMAGE passed: $(run_podman image inspect --format '{{.Size}}' "$IMAGE") bytes"
