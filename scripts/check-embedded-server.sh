#!/usr/bin/env bash
# Checks that scripts/embedded-server.sh stops the server it starts: a script that sources it
# starts the embedded server and ends, and afterwards no `shardgate serve` of its work directory
# may be left running (`pgrep -f`). Not run by .ci/run (the scripts that source it fail by
# themselves if a server is left); run it after changing embedded-server.sh.
#
#   scripts/check-embedded-server.sh [path/to/embedded-server.sh]
set -euo pipefail
cd "$(dirname "$0")/.."
script="${1:-scripts/embedded-server.sh}"

record=$(mktemp)
trap 'rm -f "$record"' EXIT
# The child script prints its work directory and the pid it started, then ends normally.
status=0
bash -c "set -euo pipefail; source '$script'; start_embedded_server; echo \"\$work \$server_pid\" >'$record'" || status=$?
read -r work pid <"$record"
echo "the script ended with status $status; its server was pid $pid, its work directory $work"
sleep 0.5
left=$(pgrep -f -- "serve --data-dir $work/data" || true)
if [ -n "$left" ]; then
    echo "FAIL: a shardgate server is still running after the script ended: pids $(echo $left)" >&2
    kill $left 2>/dev/null || true
    exit 1
fi
if [ -e "$work" ]; then
    echo "FAIL: the work directory $work was not removed" >&2
    exit 1
fi
echo "ok: no server left running, work directory removed"
exit "$status"
