#!/usr/bin/env bash
# Generates a Python client from openapi/openapi.json with an independent generator
# (openapi-python-client, from PyPI, pinned in scripts/python-client.sh) and runs the README's
# tour with it (scripts/client_tour.py) against a freshly started embedded gateway. Fails when the
# generator reports a warning (a part of the document it could not turn into code) or when any
# step of the tour fails. Run by .ci/run; scripts/image-check.sh runs the same tour through the
# container image.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/embedded-server.sh
source scripts/python-client.sh

start_embedded_server SHARDGATE_RATE_LIMITS__ENABLED=false
admin=$("$shardgate" token --admin --data-dir "$work/data")
if ! PYTHONPATH="$work/client" "$VENV/bin/python" scripts/client_tour.py "$base" "$admin" "$shardgate" "$work/data"; then
    tail -n 30 "$work/server.log" >&2
    exit 1
fi
