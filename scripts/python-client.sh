# Sourced by the scripts that run the README's tour through a client generated from
# openapi/openapi.json (scripts/client-tour.sh against the embedded server, scripts/image-check.sh
# through the container image). Needs `work` (a directory removed on exit) to be set.
#
# Generates the client with an independent generator (openapi-python-client, from PyPI, pinned
# below, in a virtualenv under ~/.cache/shardgate) into "$work/client" (the package
# `shardgate_client`), and sets `VENV` (its Python is "$VENV/bin/python"). Fails when the generator
# reports a warning: a part of the document it could not turn into code.

GENERATOR_VERSION=0.29.1
VENV="${XDG_CACHE_HOME:-$HOME/.cache}/shardgate/openapi-python-client-$GENERATOR_VERSION"
if [ ! -x "$VENV/bin/openapi-python-client" ]; then
    echo "installing openapi-python-client $GENERATOR_VERSION into $VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check "openapi-python-client==$GENERATOR_VERSION"
fi

# The generator's formatting hook (ruff) is left out: the code is generated to be run, not read.
# It knows no OpenMetrics media type (GET /metrics) nor JSON lines (GET /v1/admin/usage): that
# text is text to it. Nor any media type (`*/*`, a blob's upload): those are bytes to it.
cat >"$work/generator.yaml" <<'YAML'
post_hooks: []
content_type_overrides:
  application/openmetrics-text: text/plain
  application/x-ndjson: text/plain
  "*/*": application/octet-stream
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
