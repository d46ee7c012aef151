# Sourced by bench.sh and stadium.sh (not run): the platform of a measured run, on its own ports and database,
# from the binaries in bin/, and the stadium step both of them play.
#
#   platform_start OUT PORT DB   payment simulator, booking and one edge on PORT (booking PORT+1, simulator PORT+2),
#                                over a fresh database DB; logs in OUT
#   platform_edges N             N edge replicas in all: the others on PORT+3..., the same keys, Redis and booking
#   platform_stop                stops everything platform_start and platform_edges started
#   stadium_step OUT [ARGS]      the stadium preset at full size over the replicas (see below), in OUT/stadium

platform_pids=()
edge_pids=()
EDGE_URLS=

platform_log() { echo "platform: $*" >&2; }

platform_start() { # out, port, database name
  local out=$1 port=$2 db=$3
  rnd() { head -c "$1" /dev/urandom | base64 -w0 | tr '+/' '-_' | tr -d '='; }
  export ADMIN_TOKEN=adm_$(rnd 24) AUTH_SECRET=$(rnd 48) ADMISSION_SIGNING_KEY=$(rnd 32) TICKET_SIGNING_KEY=$(rnd 32)
  export PAYMENT_WEBHOOK_SECRET=whsec_$(rnd 24) LOG_LEVEL=warn
  # The hold-storm's 500 clients each send far more than a fan's 10 requests a second: with the edge's per-user
  # limit on, the storm would measure the limiter's 429s, not hold decisions. The bench platform turns it off;
  # every other policy (per-address limits exempt loopback anyway, the gate, the proxy) stays as deployed.
  export RATE_PER_USER=0
  export EDGE_ADDR=127.0.0.1:$port BOOKING_ADDR=127.0.0.1:$((port + 1)) PAYSIM_ADDR=127.0.0.1:$((port + 2))
  export BOOKING_URL=http://$BOOKING_ADDR PAYMENT_GATEWAY_URL=http://$PAYSIM_ADDR
  export PAYMENT_WEBHOOK_URL=http://$BOOKING_ADDR/webhooks/payments
  # Every replica signs with the same key, so booking may fetch the public key from any of them.
  export ADMISSION_JWKS_URL=http://$EDGE_ADDR/.well-known/jwks.json
  local base_db=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/flashseat?sslmode=disable}
  export DATABASE_URL=$(sed -E "s|/[^/?]+(\?.*)?$|/$db\1|" <<<"$base_db")
  export REDIS_URL=${REDIS_URL:-redis://127.0.0.1:6379/0}
  local admin_db=$(sed -E 's|/[^/?]+(\?.*)?$|/postgres\1|' <<<"$base_db")
  psql "$admin_db" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db"
  PLATFORM_OUT=$out PLATFORM_PORT=$port
  EDGE_URLS=http://$EDGE_ADDR

  trap platform_stop INT TERM EXIT
  bin/paysim >>"$out/paysim.log" 2>&1 & platform_pids+=($!)
  bin/booking >>"$out/booking.log" 2>&1 & platform_pids+=($!)
  platform_wait "http://$BOOKING_ADDR" || { platform_log "booking did not start; see $out/booking.log"; return 1; }
  bin/edge >>"$out/edge.log" 2>&1 & platform_pids+=($!) edge_pids+=($!)
  platform_wait "http://$EDGE_ADDR" || { platform_log "the platform did not start; see $out/*.log"; return 1; }
}

platform_wait() { # base URL: up to 10 s for its /readyz
  for _ in $(seq 100); do curl -fsS "$1/readyz" >/dev/null 2>&1 && return 0; sleep 0.1; done
  return 1
}

platform_edges() { # replicas in all
  local n=$1 i addr sep='?'
  [[ $DATABASE_URL == *\?* ]] && sep='&'
  for ((i = ${#edge_pids[@]}; i < n; i++)); do
    addr=127.0.0.1:$((PLATFORM_PORT + 2 + i))
    # A replica's hot paths never touch PostgreSQL (a write per admission tick, the operators): a small pool
    # each keeps a dozen replicas and booking well under the server's 100 connections.
    EDGE_ADDR=$addr DATABASE_URL="$DATABASE_URL$sep"pool_max_conns=4 bin/edge >>"$PLATFORM_OUT/edge-$((i + 1)).log" 2>&1 &
    platform_pids+=($!) edge_pids+=($!)
    EDGE_URLS=$EDGE_URLS,http://$addr
  done
  for u in ${EDGE_URLS//,/ }; do
    platform_wait "$u" || { platform_log "edge $u did not start; see $PLATFORM_OUT/edge-*.log"; return 1; }
  done
}

cpu_seconds() { # pids: user+system CPU seconds they spent so far, summed
  local t=0 pid
  for pid in "$@"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0))); done
  echo $((t / $(getconf CLK_TCK)))
}

platform_stop() {
  trap - INT TERM EXIT
  [ ${#platform_pids[@]} -gt 0 ] || return 0
  kill -TERM "${platform_pids[@]}" 2>/dev/null || true
  wait "${platform_pids[@]}" 2>/dev/null || true
  platform_pids=() edge_pids=()
}

# stadium_step: 100,000 fans, 5,000 seats, most of them holding an event stream until the sell-out. Neither a
# generator process nor an edge can hold that many streams under an open-file limit of 20,000 (soft and hard,
# not raisable here), so STADIUM_EDGES replicas share the crowd, which STADIUM_PROCS generator processes play,
# one replica each, from their own loopback source addresses. While it runs, the load average and every edge's
# peak RSS are recorded into OUT/stadium.txt beside the report, with the CPU seconds of booking, the edges and
# the generator processes (whose own log is OUT/stadium.log). The generator runs at nice STADIUM_NICE (10): it
# stands for 100,000 phones elsewhere, and at equal priority its processes take the CPU booking needs.
stadium_step() { # out, extra loadtest args
  local out=$1; shift
  local edges=${STADIUM_EDGES:-10} procs=${STADIUM_PROCS:-10}
  # Called on the left of || (bench.sh), where set -e does not reach: a replica that did not start stops the step.
  platform_edges "$edges" || return 1
  platform_log "loadtest stadium over $edges edges, $procs processes: $*"
  local load=$out/stadium-load.txt
  local mem=$out/stadium-mem.txt
  (while sleep 5; do
    cut -d' ' -f1 /proc/loadavg >>"$load"
    awk '/^MemAvailable/{printf "%.0f\n", $2/1024}' /proc/meminfo >>"$mem"
  done) & local sampler=$!
  local rc=0
  # A waiting fan costs the generator about 100 KB (its goroutines, the SSE client's and the connection's
  # buffers); the memory limit keeps each process's garbage from doubling that.
  GOMEMLIMIT=${STADIUM_GOMEMLIMIT:-1800MiB} nice -n "${STADIUM_NICE:-10}" bin/loadtest -out "$out/stadium" -scenario stadium -procs "$procs" -source-ips 2 -base "$EDGE_URLS" -v "$@" \
    2>"$out/stadium.log" | tee "$out/stadium.txt" || rc=$?
  kill "$sampler" 2>/dev/null || true
  {
    echo "load average (1 min, sampled every 5 s): peak $(sort -g "$load" | tail -1); memory available: lowest $(sort -g "$mem" | head -1) MB"
    local rss=()
    for pid in "${edge_pids[@]}"; do
      rss+=("$(awk '/^VmHWM/{printf "%.0f", $2/1024}' "/proc/$pid/status" 2>/dev/null || echo '?')")
    done
    echo "edge peak RSS (MB, $edges replicas): ${rss[*]}"
    echo "CPU seconds: booking $(cpu_seconds "${platform_pids[1]}"), edges $(cpu_seconds "${edge_pids[@]}"), generator processes $(sed -nE 's/.*msg="child done".* cpuSeconds=([0-9]+).*/\1/p' "$out/stadium.log" | awk '{t += $1} END {print t + 0}')"
    echo "generator peak RSS (MB, $procs processes): $(sed -nE 's/.*msg="child done".* peakRSSMB=([0-9]+).*/\1/p' "$out/stadium.log" | tr '\n' ' ')"
  } | tee -a "$out/stadium.txt"
  return $rc
}
