#!/usr/bin/env bash
# test.sh runs go test with the arguments given and, when it fails, ends with the failures alone: each failing
# test's lines, build errors and panics. The whole output of a failing run is long (later tests' servers keep
# logging), and a reader of only its end, a CI log's tail, would otherwise not see what failed.
set -uo pipefail
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"${GO:-go}" test "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
  echo
  echo "==== what failed (the whole output is above) ===="
  # A failing test's report is its --- FAIL line and the indented lines under it; a build error is a file:line
  # line; a panic (a test's, or the -timeout's) its first lines.
  awk '
    /^[[:space:]]*--- FAIL/ { under = 1; print; next }
    under && /^[[:space:]]/ { print; next }
    { under = 0 }
    /^panic: / { p = 12 }
    p > 0 { print; p--; next }
    /^FAIL|^# |^[^[:space:]]+\.go:[0-9]+:[0-9]+: / { print }
  ' "$log" | head -400
fi
exit "$status"
