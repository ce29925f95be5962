# Sourced by the scripts that run a list of steps (scripts/test.sh, .ci/run): every step runs,
# whatever the steps before it did, and the end names each one that failed.
#
#   step "<name>" <command> [args...]   runs the command under a heading; a failure is noted
#   finish                              names the failed steps; exits 1 if any failed, else 0

steps_run=0
steps_failed=()
steps_started=$(date +%s)

step() {
    local name=$1
    shift
    steps_run=$((steps_run + 1))
    printf '\n==> %s (%ss)\n' "$name" "$(($(date +%s) - steps_started))"
    "$@"
    local status=$?
    if [ "$status" -ne 0 ]; then
        printf '==> %s: failed (exit status %s)\n' "$name" "$status"
        steps_failed+=("$name")
    fi
}

finish() {
    local elapsed=$(($(date +%s) - steps_started))
    if [ "${#steps_failed[@]}" -eq 0 ]; then
        printf '\n==> all %s steps passed (%ss)\n' "$steps_run" "$elapsed"
        exit 0
    fi
    printf '\n==> %s of %s steps failed:\n' "${#steps_failed[@]}" "$steps_run"
    printf '  %s\n' "${steps_failed[@]}"
    exit 1
}
