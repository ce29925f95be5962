#!/usr/bin/env bash
# Checks the deployment files offline: the systemd unit with `systemd-analyze verify` (Debian's
# systemd package, installed if missing) against the binary this checkout builds, and its
# exposure with `systemd-analyze security`.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v systemd-analyze >/dev/null; then
    echo "installing systemd (Debian package) for systemd-analyze"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq systemd >/dev/null
fi
target="${CARGO_TARGET_DIR:-target}"
cargo build -q -p shardgate-api --bin shardgate
binary="$(cd "$target/debug" && pwd)/shardgate"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The unit names the installed binary; verify checks that it exists, so point it at this build.
sed "s|/usr/local/bin/shardgate|$binary|" deploy/systemd/shardgate.service >"$work/shardgate.service"
# verify exits 0 on settings it ignores (a misspelt value is only a warning): any output fails.
if ! out="$(systemd-analyze verify "$work/shardgate.service" 2>&1)" || [ -n "$out" ]; then
    echo "$out" >&2
    echo "deploy/systemd/shardgate.service: systemd-analyze verify complained" >&2
    exit 1
fi
systemd-analyze security --offline=yes --threshold=20 "$work/shardgate.service" | tail -n 1
echo "deploy/systemd/shardgate.service: verified"
