#!/usr/bin/env bash
# Generates a Python client from openapi/openapi.json with an independent generator
# (openapi-python-client, from PyPI, pinned below, in a virtualenv under ~/.cache/shardgate) and
# runs the README's tour with it (scripts/client_tour.py) against a freshly started embedded
# gateway. Fails when the generator reports a warning (a part of the document it could not turn
# into code) or when any step of the tour fails. Run by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=0.29.1
VENV="${XDG_CACHE_HOME:-$HOME/.cache}/shardgate/openapi-python-client-$VERSION"
if [ ! -x "$VENV/bin/openapi-python-client" ]; then
    echo "installing openapi-python-client $VERSION into $VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check "openapi-python-client==$VERSION"
fi

source scripts/embedded-server.sh

# The generator's formatting hook (ruff) is left out: the code is generated to be run, not read.
# It knows no OpenMetrics media type (GET /metrics): that text is text to it.
cat >"$work/generator.yaml" <<'YAML'
post_hooks: []
content_type_overrides:
  application/openmetrics-text: text/plain
YAML
if ! "$VENV/bin/openapi-python-client" generate --path openapi/openapi.json --meta none \
    --config "$work/generator.yaml" --output-path "$work/client/shardgate_client" >"$work/generate.out" 2>&1; then
    cat "$work/generate.out" >&2
    echo "openapi-python-client could not generate a client from openapi/openapi.json" >&2
    exit 1
fi
if grep -q -i "warning" "$work/generate.out"; then
    cat "$work/generate.out" >&2
    echo "openapi-python-client generated a client with warnings: part of the document is missing from it" >&2
    exit 1
fi

start_embedded_server SHARDGATE_RATE_LIMITS__ENABLED=false
admin=$("$shardgate" token --admin --data-dir "$work/data")
if ! PYTHONPATH="$work/client" "$VENV/bin/python" scripts/client_tour.py "$base" "$admin" "$shardgate" "$work/data"; then
    tail -n 30 "$work/server.log" >&2
    exit 1
fi
