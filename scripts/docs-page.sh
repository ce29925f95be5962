#!/usr/bin/env bash
# Opens the API docs page (/docs, Swagger UI) of a freshly started embedded server in headless
# Chromium (Debian's package; installed with apt-get if missing) under a real-looking host name,
# and checks what a person would see: the page renders the shardgate document with its sections
# in a tenant developer's order, and the browser asks no host but the gateway for anything (the
# name resolver is told that every other host does not exist, so nothing leaves the machine; the
# browser's network log still shows each attempt). Prints the hosts the page asked (apart from
# the browser's own background requests) and the sections seen.
#
#   scripts/docs-page.sh
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v chromium >/dev/null; then
    echo "installing chromium (Debian package)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

source scripts/embedded-server.sh
start_embedded_server

# A host name that is not loopback (Swagger UI treats localhost specially), mapped to the server.
host="docs.shardgate.test"
chromium --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --disable-default-apps --disable-domain-reliability \
    --user-data-dir="$work/profile" \
    --host-resolver-rules="MAP $host 127.0.0.1, MAP * ~NOTFOUND" \
    --log-net-log="$work/net.json" --virtual-time-budget=15000 \
    --dump-dom "http://$host:$port/docs/" >"$work/dom.html" 2>"$work/chromium.log" || {
    cat "$work/chromium.log" >&2
    exit 1
}

python3 - "$work" "$host" <<'EOF'
import json, re, sys, pathlib
from urllib.parse import urlsplit
work, gateway = pathlib.Path(sys.argv[1]), sys.argv[2]
text = (work / "net.json").read_text()
try:
    log = json.loads(text)
except json.JSONDecodeError:  # the log of a browser that did not close it cleanly
    log = json.loads(text.rstrip().rstrip(",") + "]}")
# The page's own requests name it as their initiator (the navigation to it is the first); the
# rest are the browser's own background requests (updates, sign-in), kept apart.
page_origin = None
page_urls, browser_urls = set(), set()
for event in log.get("events", []):
    params = event.get("params", {})
    url = params.get("url")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        continue
    host = urlsplit(url).hostname
    initiator = params.get("initiator", "")
    if page_origin is None and host == gateway:
        page_origin = f"{urlsplit(url).scheme}://{urlsplit(url).netloc}"
    if host == gateway or (page_origin and initiator == page_origin):
        page_urls.add(url)
    else:
        browser_urls.add(url)
hosts = sorted({urlsplit(u).hostname for u in page_urls})
print("hosts the page asked:", ", ".join(hosts))
for url in sorted(page_urls):
    print("  ", url)
print("the browser's own background requests (not the page's; resolved to nothing):",
      ", ".join(sorted({urlsplit(u).hostname for u in browser_urls})) or "none")
urls = page_urls
dom = (work / "dom.html").read_text()
tags = re.findall(r'data-tag="([^"]+)"', dom) or re.findall(r'id="operations-tag-([^"]+)"', dom)
print("sections on the page, in order:", ", ".join(dict.fromkeys(tags)))
problems = []
if hosts != [gateway]:
    problems.append(f"the page asked hosts other than the gateway: {hosts}")
if "validator" in " ".join(urls):
    problems.append("the page asked an online validator")
if list(dict.fromkeys(tags))[:6] != ["records", "blobs", "indexes", "valet", "admin", "operations"]:
    problems.append(f"sections not in a tenant developer's order: {tags}")
if "shardgate token" not in dom:
    problems.append("the page does not say how to get a token")
for problem in problems:
    print("PROBLEM:", problem, file=sys.stderr)
sys.exit(1 if problems else 0)
EOF
