#!/usr/bin/env bash
# `make bench`: runs the Go micro-benchmarks of every service and the load-test scenarios against a platform it
# starts itself (fresh database, its own ports), then rewrites the headline of BENCHMARKS.md (deploy/dev/bench-report.sh,
# between its markers) with each figure's command, the machine, and the baseline measured beside it in the same run.
# Text outside the markers is left as written; every other table of the run goes to .run/bench/details.md.
#
#   BENCH_QUICK=1     fewer iterations, no premiere, 2,000 streams instead of 50,000 (19,000 here: the open-file limit) (a quick look, not the record)
#   BENCH_PORT=18180  first of the ports used (edge, booking, payment simulator, then the stadium's other edges)
#   STADIUM_EDGES=10 STADIUM_PROCS=10  edge replicas and generator processes of the stadium step
#   BENCH_FILE=…      the file to refresh instead of BENCHMARKS.md
#   BENCH_ONLY=go     only the Go benchmarks; the scenarios' reports of the last run in .run/bench are kept and
#                     written down again (the stadium alone takes up to 12 minutes)
#   BENCH_DB=…        the database to recreate (default flashseat_bench_<BENCH_PORT>: two runs on other ports
#                     never drop each other's)
set -euo pipefail
cd "$(dirname "$0")/../.."

quick=${BENCH_QUICK:-}
port=${BENCH_PORT:-18180}
out=.run/bench
file=${BENCH_FILE:-BENCHMARKS.md}
only=${BENCH_ONLY:-}
if [ "$only" = go ]; then
  rm -rf "$out"/go-bench.* "$out"/slo.* "$out/cmd" && mkdir -p "$out/cmd"
else
  rm -rf "$out" && mkdir -p "$out/cmd"
fi
# The run's date and machine, for the headline.
echo "\`make bench\` run $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) CPUs, $(free -m | awk '/^Mem:/{print $2}') MB, $(uname -sr), $(go version | cut -d' ' -f3)." >"$out/run.txt"
log() { echo "bench: $*" >&2; }

failed=() # the scenarios and benchmark commands that failed: the report is still written, then the bench fails
if [ "$only" != go ]; then
# --- the platform, on its own ports and database (deploy/dev/platform.sh) ----------------------------------------
db=${BENCH_DB:-flashseat_bench_$port}
[[ $db =~ ^[a-z_][a-z0-9_]*$ ]] || { log "BENCH_DB must be a plain lower-case name: $db"; exit 1; }
. deploy/dev/platform.sh
platform_start "$out" "$port" "$db"

# --- load-test scenarios --------------------------------------------------------------------------------------
# Each writes report.md (command, machine, tables) under $out/<scenario>; a run with violations fails the bench,
# once everything else has run and been written down.
lt() { # name, args...
  local name=$1; shift
  log "loadtest $name: $*"
  bin/loadtest -out "$out/$name" "$@" | tee "$out/$name.txt" || failed+=("loadtest $name")
}
lt smoke -scenario smoke -base "http://$EDGE_ADDR"
lt hold-storm -scenario hold-storm -base "http://$EDGE_ADDR"
lt hold-storm-direct -scenario hold-storm -base "http://$BOOKING_ADDR"
[ -n "$quick" ] || lt premiere -scenario premiere -base "http://$EDGE_ADDR"
# The stadium (100,000 fans) over STADIUM_EDGES replicas and STADIUM_PROCS generator processes: minutes of a
# loaded machine, so not in a quick look.
[ -n "$quick" ] || stadium_step "$out" || failed+=("loadtest stadium")
platform_stop
fi

# --- Go micro-benchmarks, each with the command that reproduces it --------------------------------------------
n() { if [ -n "$quick" ]; then echo "$1"; else echo "$2"; fi; }
shown() { # a command's words as one would type them (no word here holds a single quote): a word with shell
  # characters in single quotes; env, and BENCH_SLO_OUT (where to write, not what is measured), left out
  local w s=
  for w in "$@"; do
    [ -z "$s" ] && [ "$w" = env ] && continue
    case $w in BENCH_SLO_OUT=*) continue ;; esac
    [[ $w =~ ^[A-Za-z0-9_./=:,@%+-]+$ ]] || w="'$w'"
    s+="${s:+ }$w"
  done
  echo "$s"
}
gob() { # name, then one benchmark command (its words as given): runs it and records it with its result lines
  local name=$1; shift
  log "$*"
  shown "$@" >"$out/cmd/$name"
  # stderr (the services' logs, build errors) goes to its own file: a line written there while a benchmark runs
  # would otherwise split its result line, which go test starts with the name before the run and ends after it.
  # The whole of stdout (with a failure's reason) is kept in go-bench.raw.
  echo "\$ $(shown "$@")" | tee -a "$out/go-bench.raw" >>"$out/go-bench.txt"
  "$@" 2>>"$out/go-bench.stderr" >"$out/go-bench.last" || failed+=("$*")
  cat "$out/go-bench.last" >>"$out/go-bench.raw"
  { grep -E '^(Benchmark|ok|FAIL|---|goos|cpu)' "$out/go-bench.last" || true; echo; } >>"$out/go-bench.txt"
}
gob EdgeOverhead go test -run '^$' -bench EdgeOverhead -benchtime "$(n 2000x 20000x)" ./edge/e2e/
gob Join go test -run '^$' -bench 'Join|AdmitTick|AdmitScript' -benchtime "$(n 500x 5000x)" ./waitroom/redis/
gob Streams env EDGE_BENCH_STREAMS="$(n 2000 50000)" go test -run '^$' -bench Streams -benchtime 1x -timeout 30m ./edge/app/
gob HotShow go test -run '^$' -bench HotShow -benchtime 1x ./booking/app/
gob HoldInFlight env BENCH_DURATION="$(n 3s 6s)" go test -run '^$' -bench HoldInFlight -benchtime 1x ./booking/app/
# The open-loop search writes every rate it tried into $out/slo.md (into details.md) and $out/slo.html (the curves).
# An absolute path: go test runs the benchmark in the package's directory.
# Three whole searches, reported by their medians: one search's ratio moves by a step or two between runs here.
gob HoldSLO env BENCH_SLO_OUT="$PWD/$out" BENCH_SLO_STEP="$(n 1s 3s)" BENCH_SLO_SEARCHES="$(n 1 3)" go test -run '^$' -bench HoldSLO -benchtime 1x -timeout 30m ./booking/app/
gob Checkout go test -run '^$' -bench Checkout -benchtime "$(n 50x 500x)" ./booking/

# --- BENCHMARKS.md: the headline between the markers, every other table in $out/details.md ----------------------
BENCH_OUT=$out BENCH_FILE=$file bash deploy/dev/bench-report.sh
if [ ${#failed[@]} -gt 0 ]; then
  log "failed (scenarios: $out/<name>.txt; benchmarks: $out/go-bench.raw, $out/go-bench.stderr):"
  printf '  %s\n' "${failed[@]}" >&2
  exit 1
fi
