#!/usr/bin/env bash
# `make stadium`: the stadium preset alone (100,000 fans, 5,000 seats) against a platform it starts itself, as
# `make bench` plays it: STADIUM_EDGES edge replicas (default 10) and STADIUM_PROCS generator processes (default 10),
# so that no process holds more event streams than its open-file limit allows. Arguments go to the load test
# (-fans 20000 -seats 1000 for a smaller crowd in the same layout). Report in .run/stadium/.
#
#   STADIUM_PORT=18280  first of the ports used (edge, booking, payment simulator, the other edges)
#   STADIUM_DB=flashseat_stadium  the database it creates afresh
set -euo pipefail
cd "$(dirname "$0")/../.."

out=.run/stadium
rm -rf "$out" && mkdir -p "$out"
. deploy/dev/platform.sh
platform_start "$out" "${STADIUM_PORT:-18280}" "${STADIUM_DB:-flashseat_stadium}"
stadium_step "$out" "$@"
