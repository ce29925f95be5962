#!/usr/bin/env bash
# Makes sure the OTLP receiver the trace tests start (tests/otlp_receiver.py) can run: a Python
# virtual environment under ~/.cache/shardgate/otlp-venv with PyPI's opentelemetry-proto (which
# brings protobuf), to decode what the gateway exports. Prints the venv's python. Safe to run
# repeatedly: an environment that already imports the package is left as it is.
set -euo pipefail

venv="${SHARDGATE_OTLP_VENV:-$HOME/.cache/shardgate/otlp-venv}"
mkdir -p "$(dirname "$venv")"
# Tests start receivers in parallel: one installs while the others wait for it (a venv half
# made by two at once fails to import).
exec 9>"$venv.lock"
flock 9
if ! "$venv/bin/python" -c 'import opentelemetry.proto.collector.trace.v1.trace_service_pb2' 2>/dev/null; then
    echo "installing opentelemetry-proto (PyPI) into $venv" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check 'opentelemetry-proto>=1.20,<2' >&2
fi
echo "$venv/bin/python"
