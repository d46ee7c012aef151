#!/usr/bin/env bash
# `make bench`: runs the Go micro-benchmarks of every service and the load-test scenarios against a platform it
# starts itself (fresh database, its own ports), then rewrites the generated part of BENCHMARKS.md — between the
# markers below — with each figure's command, the machine, and the baseline measured beside it in the same run.
# Text outside the markers is left as written.
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
  rm -f "$out"/go-bench.* "$out"/slo.* && mkdir -p "$out"
else
  rm -rf "$out" && mkdir -p "$out"
fi
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
gob() { # runs one benchmark command (its words as given) and records it with its result lines
  log "$*"
  # stderr (the services' logs, build errors) goes to its own file: a line written there while a benchmark runs
  # would otherwise split its result line, which go test starts with the name before the run and ends after it.
  # The whole of stdout (with a failure's reason) is kept in go-bench.raw.
  echo "\$ $*" | tee -a "$out/go-bench.raw" >>"$out/go-bench.txt"
  "$@" 2>>"$out/go-bench.stderr" >"$out/go-bench.last" || failed+=("$*")
  cat "$out/go-bench.last" >>"$out/go-bench.raw"
  { grep -E '^(Benchmark|ok|FAIL|---|goos|cpu)' "$out/go-bench.last" || true; echo; } >>"$out/go-bench.txt"
}
gob go test -run '^$' -bench EdgeOverhead -benchtime "$(n 2000x 20000x)" ./edge/e2e/
gob go test -run '^$' -bench 'Join|AdmitTick|AdmitScript' -benchtime "$(n 500x 5000x)" ./waitroom/redis/
gob env EDGE_BENCH_STREAMS="$(n 2000 50000)" go test -run '^$' -bench Streams -benchtime 1x -timeout 30m ./edge/app/
gob go test -run '^$' -bench HotShow -benchtime 1x ./booking/app/
gob env BENCH_DURATION="$(n 3s 6s)" go test -run '^$' -bench HoldInFlight -benchtime 1x ./booking/app/
# The open-loop search writes every rate it tried into $out/slo.md (the table below) and $out/slo.html (the curves).
# An absolute path: go test runs the benchmark in the package's directory.
# Three whole searches, reported by their medians: one search's ratio moves by a step or two between runs here.
gob env BENCH_SLO_OUT="$PWD/$out" BENCH_SLO_STEP="$(n 1s 3s)" BENCH_SLO_SEARCHES="$(n 1 3)" go test -run '^$' -bench HoldSLO -benchtime 1x -timeout 30m ./booking/app/
gob go test -run '^$' -bench Checkout -benchtime "$(n 50x 500x)" ./booking/

# --- BENCHMARKS.md ------------------------------------------------------------------------------------------
# Figures for the headline, read from the outputs above ("-" when a run did not produce one).
metric() { # benchmark name, unit: the value printed before the unit on that benchmark's line
  grep -E "^Benchmark$1(-[0-9]+)?[[:space:]]" "$out/go-bench.txt" | head -1 |
    awk -v u="$2" '{ for (i = 2; i <= NF; i++) if ($i == u) { print $(i - 1); exit } }' | grep . || echo -
}
storm() { # line prefix, file: "N/s, p99 X" from a hold-storm's text report
  sed -nE "/$1/{s/.*decisions, ([0-9]+)\/s, p50 [^,]+, p99 ([^,]+),.*/\1\/s, p99 \2/p;q}" "$2" | grep . || echo -
}
cmdline() { sed -nE 's/^Command: `(.*)`.*/\1/p' "$1"/*/report.md | head -1; }

begin='<!-- bench:begin (generated by `make bench`; edit outside these markers) -->'
end='<!-- bench:end -->'
{
  echo "$begin"
  echo "## Measured by \`make bench\`"
  echo
  echo "Run $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) CPUs, $(free -m | awk '/^Mem:/{print $2}') MB, $(uname -sr), $(go version | cut -d' ' -f3)."
  echo "Load generator, platform, Postgres and Redis share the machine. Raw reports: \`$out/\`."
  echo
  echo "### Headline"
  echo
  echo "| figure | flashseat | measured beside it | command |"
  echo "| --- | ---: | ---: | --- |"
  for s in hold-storm hold-storm-direct; do
    f=$out/$s.txt
    [ -f "$f" ] || continue
    where="through the edge"; [ $s = hold-storm-direct ] && where="direct to booking"
    echo "| holds decided/s, p99 ($where) | $(storm '^hold-storm at' "$f") | row-lock $(storm '^row-lock' "$f") | \`$(cmdline "$out/$s")\` |"
  done
  echo "| holds/s at p99 ≤ 50 ms, < 0.1% errors (open loop, direct) | $(metric HoldSLO slo-rate-booking)/s | row-lock $(metric HoldSLO slo-rate-rowlock)/s ($(metric HoldSLO x-slo)×); floor, a server doing no work, $(metric HoldSLO slo-rate-floor)/s (the most this run allowed: $(metric HoldSLO x-slo-floor)×) | \`go test -bench HoldSLO ./booking/app/\` |"
  echo "| holds decided/s with 2,000 in flight over 250 in flight (closed loop, direct) | $(metric HoldInFlight booking-x-2000/250)× | floor $(metric HoldInFlight floor-x-2000/250)× | \`go test -bench HoldInFlight ./booking/app/\` |"
  for k in seatmap hold; do
    echo "| $k through the edge vs direct (edge/direct $(metric EdgeOverhead/$k edge/direct); a bare proxy hop keeps $(metric EdgeOverhead/$k hop/direct), the edge $(metric EdgeOverhead/$k edge/hop) of the hop) | $(metric EdgeOverhead/$k edge-req/s) req/s | direct $(metric EdgeOverhead/$k direct-req/s) req/s | \`go test -bench EdgeOverhead ./edge/e2e/\` |"
  done
  echo "| holds decided/s on one hot show, p99 (in-process, same rig) | $(metric HotShow booking-decisions/s)/s, p99 $(metric HotShow booking-p99-ms) ms | row-lock $(metric HotShow rowlock-decisions/s)/s, p99 $(metric HotShow rowlock-p99-ms) ms ($(metric HotShow x-throughput)× the rate, p99 $(metric HotShow x-p99)× lower) | \`go test -bench HotShow ./booking/app/\` |"
  echo "| checkouts/s, hold → pay (authorize, confirm, capture), 16 fans at once per CPU | $(metric Checkout/gateway=0s checkouts/s)/s with an instant gateway | $(metric Checkout/gateway=200ms checkouts/s)/s with a 200 ms gateway ($(metric Checkout/gateway=200ms x-zero-latency-rate)×) | \`go test -bench Checkout ./booking/\` |"
  echo "| queue joins/s, 1,000,000 queued (join/zadd $(metric Join join/zadd)) | $(metric Join joins/s) | raw Redis ZADD $(metric Join zadd/s)/s | \`go test -bench Join ./waitroom/redis/\` |"
  echo "| SSE streams held by one edge: each one's RSS, goroutines, I/O buffers; a position change reaching them all | $(metric Streams streams) held: $(metric Streams rss-B/stream) B RSS, $(metric Streams goroutines/stream) goroutines, $(metric Streams buffers-B/stream) B buffers; p99 $(metric Streams update-p99-ms) ms; CPU per position event $(metric Streams edge-us/event) µs edge + $(metric Streams fan-us/event) µs fans: $(metric Streams cores-100k) cores for 100,000 streams | — | \`go test -bench Streams ./edge/app/\` |"
  for s in stadium premiere smoke; do
    f=$out/$s.txt
    [ -f "$f" ] || continue
    echo "| $s: after opening, no seat free / every seat sold | $(sed -nE 's/^sold out \(no seat AVAILABLE\) after ([^ ]+) from opening; all seats booked after ([^ ]+)$/\1 \/ \2/p' "$f") | run $(sed -nE 's/.*elapsed ([^,]+),.*/\1/p' "$f"), $(sed -nE 's/^violations: //p' "$f") violations | \`$(cmdline "$out/$s")\` |"
  done
  if [ -f "$out/stadium.txt" ]; then
    f=$out/stadium.txt
    echo "| stadium: fans following the queue over SSE / polling; place in line vs admission order | $(sed -nE 's/^queue followed over SSE by ([0-9]+) fans; ([0-9]+) polled.*/\1 \/ \2/p' "$f"); $(sed -nE 's/^fairness: Spearman ([^ ]+) .*; ([0-9]+) fans checked by ticket and token time, ([0-9]+) admitted after.*/Spearman \1, \3 of \2 admitted out of order/p' "$f") | ${STADIUM_EDGES:-10} edges, peak RSS $(sed -nE 's/^edge peak RSS \(MB, [0-9]+ replicas\): //p' "$f" | tr ' ' '/') MB; $(sed -nE 's/^load average.*: peak ([^;]+);.*/\1/p' "$f") peak load | the same run |"
  fi
  echo
  echo "### Holds: flashseat vs the row-lock baseline (hold-storm, same run)"
  echo
  echo "Through the edge (what fans reach), then straight to booking (the designs alone, no proxy hop on either side):"
  echo
  sed -n '/^| design/,/^$/p;/^Ratio/p' "$out"/hold-storm/*/report.md
  echo
  sed -n '/^| design/,/^$/p;/^Ratio/p' "$out"/hold-storm-direct/*/report.md
  echo
  if [ -f "$out/slo.md" ]; then
    echo "### Holds at a latency SLO: every rate tried (BenchmarkHoldSLO, same run; curves in \`$out/slo.html\`)"
    echo
    cat "$out/slo.md"
    echo
  fi
  for s in smoke premiere stadium; do
    [ -d "$out/$s" ] && sed 's/^### /### Scenario: /' "$out"/$s/*/report.md && echo
  done
  echo "### Go benchmarks"
  echo
  echo '```'
  cat "$out/go-bench.txt"
  echo '```'
  echo "$end"
} >"$out/generated.md"

if [ -f "$file" ] && grep -q '^<!-- bench:begin' "$file"; then
  awk -v gen="$out/generated.md" '
    /^<!-- bench:begin/ { while ((getline line < gen) > 0) print line; skip = 1; next }
    /^<!-- bench:end -->/ { skip = 0; next }
    !skip { print }' "$file" >"$out/refreshed.md"
elif [ -f "$file" ]; then
  { cat "$file"; echo; cat "$out/generated.md"; } >"$out/refreshed.md"
else
  { printf '# Benchmarks\n\n'; cat "$out/generated.md"; } >"$out/refreshed.md"
fi
mv "$out/refreshed.md" "$file"
log "$file refreshed"
if [ ${#failed[@]} -gt 0 ]; then
  log "failed (scenarios: $out/<name>.txt; benchmarks: $out/go-bench.raw, $out/go-bench.stderr):"
  printf '  %s\n' "${failed[@]}" >&2
  exit 1
fi
