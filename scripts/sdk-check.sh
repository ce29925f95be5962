#!/usr/bin/env bash
# Checks the SDKs in clients/ (Python and TypeScript) against openapi/openapi.json and a running
# gateway. Run by CI; fails when any of these fails:
#
# 1. Drift: both generated parts, made again from the document by scripts/sdk-generate.sh into a
#    temporary directory, equal the committed ones, and both packages carry the document's
#    `info.version`. A difference names the files; scripts/sdk-generate.sh rewrites them.
# 2. Install: the Python package with pip into a virtualenv under ~/.cache/shardgate, as a user
#    installs it (`pip install ./clients/python`); the TypeScript package with `npm ci` (npm's
#    cache under ~/.cache/shardgate) and compiled with `tsc`.
# 3. Tours: a freshly started embedded gateway, and the README's tour through each SDK
#    (clients/python/tests/tour.py, clients/typescript/test/tour.test.ts), each step checking
#    what it got.
#
# The gateway is the debug binary scripts/embedded-server.sh builds, or, when `SHARDGATE_BIN` is
# set, that binary (scripts/embedded-server.sh then builds nothing).
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/embedded-server.sh

# 1. Drift.
scripts/sdk-generate.sh "$work/generated"
generated="$work/generated/python/shardgate/generated"
committed=clients/python/shardgate/generated
drifted=$(diff -rq -x __pycache__ "$generated" "$committed" | sed \
    -e "s|^Files $generated/.* and \(.*\) differ$|\1 differs|" \
    -e "s|^Only in $generated\(.*\): \(.*\)|$committed\1/\2 is missing|" \
    -e "s|^Only in $committed\(.*\): \(.*\)|$committed\1/\2 is not generated|" || true)
if ! cmp -s "$work/generated/typescript/src/schema.ts" clients/typescript/src/schema.ts; then
    drifted+=$'\n'"clients/typescript/src/schema.ts differs"
fi
version=$(python3 -c 'import json; print(json.load(open("openapi/openapi.json"))["info"]["version"])')
python_version=$(sed -n 's/^version = "\(.*\)"$/\1/p' clients/python/pyproject.toml)
typescript_version=$(node -p 'require("./clients/typescript/package.json").version')
lock_version=$(node -p 'require("./clients/typescript/package-lock.json").version')
for packaged in "clients/python/pyproject.toml:$python_version" "clients/typescript/package.json:$typescript_version" \
    "clients/typescript/package-lock.json:$lock_version"; do
    if [ "${packaged##*:}" != "$version" ]; then
        drifted+=$'\n'"${packaged%%:*} has version ${packaged##*:}, the document $version"
    fi
done
if [ -n "$drifted" ]; then
    echo "$drifted" | sed '/^$/d' >&2
    echo "the committed SDK code differs from what openapi/openapi.json generates: run scripts/sdk-generate.sh and commit the result" >&2
    exit 1
fi
echo "ok  the generated SDK code and versions match openapi/openapi.json ($version)"

# 2. Install.
venv="${XDG_CACHE_HOME:-$HOME/.cache}/shardgate/sdk-python-$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
[ -x "$venv/bin/pip" ] || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "setuptools>=77"
# Built from a copy: setuptools leaves build/ beside the source, and files there outlive their
# source (a generated module removed would still be installed).
mkdir "$work/python"
tar -C clients/python --exclude=build --exclude='*.egg-info' --exclude=__pycache__ -cf - . | tar -C "$work/python" -xf -
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-build-isolation "$work/python"
# Compiled afresh: tsc leaves in dist/ what a removed source compiled to.
rm -rf clients/typescript/dist
(cd clients/typescript && node_modules/.bin/tsc -p .)
echo "ok  installed the Python package and compiled the TypeScript one"

# 3. Tours.
start_embedded_server SHARDGATE_RATE_LIMITS__ENABLED=false
export TOUR_BASE_URL="$base" TOUR_SHARDGATE="$shardgate" TOUR_DATA_DIR="$work/data"
TOUR_ADMIN_TOKEN=$("$shardgate" token --admin --data-dir "$work/data")
export TOUR_ADMIN_TOKEN
failed=()
# From the work directory, so that Python imports the installed package, not the source.
root=$PWD
(cd "$work" && "$venv/bin/python" "$root/clients/python/tests/tour.py") || failed+=("the Python tour")
(cd clients/typescript && node --test --test-reporter=spec dist/test/) || failed+=("the TypeScript tour")
if [ ${#failed[@]} -gt 0 ]; then
    tail -n 30 "$work/server.log" >&2
    echo "failed: ${failed[*]}" >&2
    exit 1
fi
echo "ok  both SDK tours ran green"
