#!/usr/bin/env bash
# Writes the generated part of both SDKs from openapi/openapi.json; run it after changing the
# API, and commit what it changed. scripts/sdk-check.sh runs it into a temporary directory and
# fails when the committed code differs.
#
#     scripts/sdk-generate.sh         rewrites clients/ in place, versions included
#     scripts/sdk-generate.sh OUT     writes OUT/python/shardgate/generated and
#                                     OUT/typescript/src/schema.ts, and nothing else
#
# Python: openapi-python-client, with the pin, configuration and warning check of
# scripts/python-client.sh, into clients/python/shardgate/generated. TypeScript: openapi-typescript
# (pinned in clients/typescript/package.json, installed with `npm ci` from its lock file) into
# clients/typescript/src/schema.ts. Either generator reporting a warning (a part of the document
# it could not turn into code) fails the script. In place, the packages' versions are set to the
# document's `info.version`.
set -euo pipefail
cd "$(dirname "$0")/.."

out="${1:-clients}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Installs clients/typescript's pinned packages when its lock file changed since the last install
# (npm's cache under ~/.cache/shardgate/npm).
npm_cache="${XDG_CACHE_HOME:-$HOME/.cache}/shardgate/npm"
lock_sum=$(sha256sum clients/typescript/package-lock.json | cut -d' ' -f1)
if [ "$(cat clients/typescript/node_modules/.lock-sha256 2>/dev/null)" != "$lock_sum" ]; then
    echo "installing clients/typescript's packages (npm ci)"
    (cd clients/typescript && npm ci --cache "$npm_cache" --prefer-offline --no-audit --no-fund --loglevel=error >/dev/null)
    echo "$lock_sum" >clients/typescript/node_modules/.lock-sha256
fi

# Python: scripts/python-client.sh generates the package into "$work/client/shardgate_client".
source scripts/python-client.sh
mkdir -p "$out/python/shardgate"
rm -rf "$out/python/shardgate/generated"
cp -R "$work/client/shardgate_client" "$out/python/shardgate/generated"

# TypeScript.
mkdir -p "$out/typescript/src"
if ! clients/typescript/node_modules/.bin/openapi-typescript openapi/openapi.json \
    --output "$out/typescript/src/schema.ts" >"$work/typescript.out" 2>&1; then
    cat "$work/typescript.out" >&2
    echo "openapi-typescript could not generate types from openapi/openapi.json" >&2
    exit 1
fi
if grep -q -i -e "warn" -e "⚠" -e "✘" "$work/typescript.out"; then
    cat "$work/typescript.out" >&2
    echo "openapi-typescript generated types with warnings: part of the document is missing from them" >&2
    exit 1
fi

if [ -z "${1:-}" ]; then
    version=$(python3 -c 'import json; print(json.load(open("openapi/openapi.json"))["info"]["version"])')
    sed -i "s/^version = \".*\"$/version = \"$version\"/" clients/python/pyproject.toml
    (cd clients/typescript && npm version "$version" --no-git-tag-version --allow-same-version >/dev/null)
    echo "generated clients/python/shardgate/generated and clients/typescript/src/schema.ts (version $version)"
fi
