#!/usr/bin/env bash
# Makes sure Debian's Chromium and its WebDriver (chromium, chromium-driver) are installed: the
# console's browser tests (tests/tests/http/console.rs) drive them. Safe to run repeatedly.
set -euo pipefail

if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
    exit 0
fi
echo "installing chromium and chromium-driver (Debian packages)"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
chromium --version
chromedriver --version
