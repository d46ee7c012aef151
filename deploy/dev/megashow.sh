#!/usr/bin/env bash
# `make megashow`: a million fans in one show's queue (loadtest -scenario megashow, loadtest/megashow) against a
# platform it starts itself on a Redis Cluster of its own: MEGASHOW_MASTERS masters (default 3, one per
# partition by default) with no persistence, so that Redis's memory and CPU figures are this run's alone.
# MEGASHOW_EDGES edge replicas (default 8) share the streams, each well under the machine's open-file limit;
# the generator plays the streaming fans in child processes, one per 12,500 streams. Arguments go to the load
# test (-fans 200000 -streams 20000 for a smaller show). Report in .run/megashow/.
#
#   MEGASHOW_PORT=18380        first of the platform's ports (edge, booking, payment simulator, the other edges)
#   MEGASHOW_REDIS_PORT=17400  first of the cluster's ports (each node's bus is 10000 above it)
#   MEGASHOW_DB=flashseat_megashow  the database it creates afresh
set -euo pipefail
cd "$(dirname "$0")/../.."

out=.run/megashow
rm -rf "$out" && mkdir -p "$out"
masters=${MEGASHOW_MASTERS:-3} rport=${MEGASHOW_REDIS_PORT:-17400}
redis_pids=() addrs=()
for ((i = 0; i < masters; i++)); do
  p=$((rport + i))
  mkdir -p "$out/redis-$p"
  redis-server --port "$p" --bind 127.0.0.1 --dir "$out/redis-$p" --save '' --appendonly no \
    --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 30000 \
    --maxclients 20000 >"$out/redis-$p.log" 2>&1 &
  redis_pids+=($!) addrs+=("127.0.0.1:$p")
done
stop_redis() { kill "${redis_pids[@]}" 2>/dev/null || true; wait "${redis_pids[@]}" 2>/dev/null || true; }
trap stop_redis INT TERM EXIT
for a in "${addrs[@]}"; do
  for _ in $(seq 50); do redis-cli -h 127.0.0.1 -p "${a#*:}" ping >/dev/null 2>&1 && break; sleep 0.1; done
done
redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes >"$out/cluster.log" 2>&1
for _ in $(seq 100); do
  redis-cli -p "$rport" cluster info | grep -q 'cluster_state:ok' && break; sleep 0.1
done
export REDIS_CLUSTER_ADDRS=$(IFS=,; echo "${addrs[*]}")

. deploy/dev/platform.sh
platform_start "$out" "${MEGASHOW_PORT:-18380}" "${MEGASHOW_DB:-flashseat_megashow}"
trap 'platform_stop; stop_redis' INT TERM EXIT
platform_edges "${MEGASHOW_EDGES:-8}"
pids=$(IFS=,; echo "${edge_pids[*]}")
echo "megashow: $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs" | tee "$out/megashow.txt"
rc=0
# At equal priority (MEGASHOW_NICE=0), unlike the stadium's generator: nothing here books, and at nice 10 on a
# machine busy with other work the fans' joins and streams starved (18 joins/s at a load of 80, 500/s at 0).
nice -n "${MEGASHOW_NICE:-0}" bin/loadtest -scenario megashow -out "$out" -base "$EDGE_URLS" -edge-pids "$pids" -v "$@" \
  2>"$out/megashow.log" | tee -a "$out/megashow.txt" || rc=$?
{
  rss=()
  for pid in "${edge_pids[@]}"; do rss+=("$(awk '/^VmHWM/{printf "%.0f", $2/1024}' "/proc/$pid/status" 2>/dev/null || echo '?')"); done
  echo "edge peak RSS (MB): ${rss[*]}; CPU seconds: edges $(cpu_seconds "${edge_pids[@]}"), Redis $(cpu_seconds "${redis_pids[@]}")"
  echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee -a "$out/megashow.txt"
exit $rc
