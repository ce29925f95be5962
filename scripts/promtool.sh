#!/usr/bin/env bash
# Makes sure promtool (Debian's `prometheus` package) is installed: the /metrics story in
# tests/tests/http/operations.rs pipes the exposition through `promtool check metrics` when it is
# there. Safe to run repeatedly.
set -euo pipefail

if command -v promtool >/dev/null; then
    exit 0
fi
echo "installing prometheus (Debian package) for promtool"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
promtool --version
