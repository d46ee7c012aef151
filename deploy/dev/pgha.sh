#!/usr/bin/env bash
# A local pg_auto_failover formation: a monitor, a primary and a synchronous standby, each a PostgreSQL of the
# machine's own under PGHA_DIR, on loopback ports PGHA_PORT (the monitor), PGHA_PORT1 and PGHA_PORT2 (the two data
# nodes; default the two ports after PGHA_PORT). It uses Debian's pg-auto-failover-cli and postgresql-NN-auto-failover, installed when missing.
#
#   deploy/dev/pgha.sh start    # starts it (or finds it running) and prints its DATABASE_URL
#   deploy/dev/pgha.sh url      # prints the DATABASE_URL of the running formation
#   deploy/dev/pgha.sh state    # pg_autoctl show state: which node is primary, which is secondary
#   deploy/dev/pgha.sh kill     # kills the primary's keeper and its Postgres with SIGKILL (a chaos test's fault)
#   deploy/dev/pgha.sh stop     # stops every process of it and deletes PGHA_DIR
#   deploy/dev/pgha.sh install  # installs the packages when missing, and nothing else
#
# The DATABASE_URL names both data nodes with target_session_attrs=read-write: pgx tries them in turn and keeps
# the one that accepts writes, so the services follow a failover with no change of configuration.
#
# The monitor is tuned for a sale (docs/SCALING.md, "Failover"): it notices a dead primary within about 2 s and
# promotes the standby after PGHA_DEMOTE_TIMEOUT (default 3s) instead of pg_auto_failover's 30 s, during which
# nothing could be written. PGHA_TUNING=defaults keeps pg_auto_failover's own settings, to compare.
set -euo pipefail
cd "$(dirname "$0")/../.."

PGHA_DIR=${PGHA_DIR:-$PWD/.run/pgha}
PGHA_PORT=${PGHA_PORT:-6500}
PGHA_PORT1=${PGHA_PORT1:-$((PGHA_PORT + 1))} # node1's, the first primary
PGHA_PORT2=${PGHA_PORT2:-$((PGHA_PORT + 2))} # node2's, the first standby
PGHA_DB=${PGHA_DB:-flashseat}
PGHA_TUNING=${PGHA_TUNING:-sale}
PGHA_DEMOTE_TIMEOUT=${PGHA_DEMOTE_TIMEOUT:-3s}
# PGHA_FAST=1 runs the nodes without fsync, as the tests' private servers do: a formation in a test only needs
# to survive its processes' deaths, not the machine's.
PGHA_FAST=${PGHA_FAST:-0}
HOST=127.0.0.1

log() { echo "pgha: $*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

pgbin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1; }

install() {
  local ver
  ver=$(basename "$(dirname "$(pgbin)")")
  if ! command -v pg_autoctl >/dev/null || [ ! -f "/usr/lib/postgresql/$ver/lib/pgautofailover.so" ]; then
    log "installing pg-auto-failover-cli and postgresql-$ver-auto-failover"
    as_root apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq pg-auto-failover-cli \
      "postgresql-$ver-auto-failover" >/dev/null
  fi
}

# PostgreSQL and pg_autoctl refuse to run as root: as root (a container, CI) the formation runs as postgres.
# Its configuration, state and pid files live under PGHA_DIR (the XDG variables), so nothing of it is left
# anywhere else and two formations in two directories never meet.
autoctl() {
  local envs=(PG_CONFIG="$(pgbin)/pg_config" PATH="$(pgbin):$PATH" XDG_CONFIG_HOME="$PGHA_DIR/xdg/config"
    XDG_DATA_HOME="$PGHA_DIR/xdg/data" XDG_RUNTIME_DIR="$PGHA_DIR/xdg/run" HOME="$PGHA_DIR")
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- env "${envs[@]}" pg_autoctl "$@"
  else
    env "${envs[@]}" pg_autoctl "$@"
  fi
}

# run_bg NAME ARGS...: pg_autoctl ARGS in the background, in a session of its own so that a test's or a
# terminal's end does not take it along; its pid goes to PGHA_DIR/NAME.pid and its log to PGHA_DIR/NAME.log.
run_bg() {
  local name=$1; shift
  setsid bash -c "$(declare -f autoctl pgbin); PGHA_DIR='$PGHA_DIR'; autoctl \"\$@\"" _ "$@" \
    >"$PGHA_DIR/$name.log" 2>&1 </dev/null &
  echo $! >"$PGHA_DIR/$name.pid"
}

# The monitor's URI as pg_autoctl makes it (pg_autoctl show uri takes most of a second to say so).
monitor_uri() { echo "postgres://autoctl_node@$HOST:$PGHA_PORT/pg_auto_failover?sslmode=prefer"; }

# wait_for WHAT SECONDS CMD...: retries CMD every 200 ms.
wait_for() {
  local what=$1 secs=$2; shift 2
  for _ in $(seq $((secs * 5))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  log "$what did not happen within ${secs}s; logs in $PGHA_DIR/*.log"; tail -n 20 "$PGHA_DIR"/*.log >&2 || true
  return 1
}

node_state() { # node_state NAME: the node's reported state on the monitor
  psql -X -Atq "$(monitor_uri)" -c "SELECT reportedstate FROM pgautofailover.node WHERE nodename = '$1'"
}
is_state() { [ "$(node_state "$1")" = "$2" ]; }

url() {
  echo "postgres://postgres@$HOST:$PGHA_PORT1,$HOST:$PGHA_PORT2/$PGHA_DB?target_session_attrs=read-write&sslmode=disable"
}

tune_monitor() {
  [ "$PGHA_TUNING" = defaults ] && return 0
  # Failure detection: a health check every second, given up after one retry 500 ms later; a node that has
  # neither answered nor reported for 2 s is unhealthy. The demote timeout is how long the monitor waits for a
  # primary it cannot reach to have stopped before promoting the standby: the standby is synchronous, so a
  # primary cut off but alive cannot confirm a write in that time either (its commits wait for the standby).
  psql -X -Atq "postgres://postgres@$HOST:$PGHA_PORT/pg_auto_failover?sslmode=disable" <<SQL >/dev/null
ALTER SYSTEM SET pgautofailover.health_check_period = '1s';
ALTER SYSTEM SET pgautofailover.health_check_timeout = '1s';
ALTER SYSTEM SET pgautofailover.health_check_max_retries = 1;
ALTER SYSTEM SET pgautofailover.health_check_retry_delay = '500ms';
ALTER SYSTEM SET pgautofailover.node_considered_unhealthy_timeout = '2s';
ALTER SYSTEM SET pgautofailover.primary_demote_timeout = '$PGHA_DEMOTE_TIMEOUT';
SELECT pg_reload_conf();
SQL
}

tune_keeper() { # tune_keeper NAME
  [ "$PGHA_TUNING" = defaults ] && return 0
  # A primary's keeper that reaches neither the monitor nor the standby demotes itself after this long; below
  # the monitor's demote timeout, so a primary cut off is read-only before the standby is promoted. The standby
  # waits at most 2 s (not 5) for its WAL receiver to stop when it is told to take over.
  autoctl config set --pgdata "$PGHA_DIR/$1" timeout.network_partition_timeout 2 >/dev/null
  autoctl config set --pgdata "$PGHA_DIR/$1" timeout.prepare_promotion_walreceiver 2 >/dev/null
}

start_node() { # start_node NAME PORT
  run_bg "$1" create postgres --pgdata "$PGHA_DIR/$1" --pgport "$2" --hostname "$HOST" --listen "$HOST" \
    --name "$1" --dbname "$PGHA_DB" --username postgres --monitor "$(monitor_uri)" --auth trust --no-ssl \
    --replication-quorum true --candidate-priority 50 --run
}

start() {
  if [ -f "$PGHA_DIR/monitor.pid" ] && kill -0 "$(cat "$PGHA_DIR/monitor.pid")" 2>/dev/null; then
    log "already running in $PGHA_DIR"; url; return 0
  fi
  install
  rm -rf "$PGHA_DIR"; mkdir -p "$PGHA_DIR/xdg/run"
  chmod 700 "$PGHA_DIR/xdg/run"
  [ "$(id -u)" = 0 ] && chown -R postgres: "$PGHA_DIR"

  log "starting the monitor on $HOST:$PGHA_PORT"
  run_bg monitor create monitor --pgdata "$PGHA_DIR/monitor" --pgport "$PGHA_PORT" --hostname "$HOST" \
    --auth trust --no-ssl --run
  wait_for "the monitor" 60 psql -X -Atq "$(monitor_uri)" -c 'SELECT 1 FROM pgautofailover.formation'
  tune_monitor

  log "starting node1 (the first primary) on $HOST:$PGHA_PORT1"
  start_node node1 $PGHA_PORT1
  wait_for "node1 as primary" 90 is_state node1 single
  # Tests create a database of their own each; the services' connections come from loopback.
  local pg="postgres://postgres@$HOST:$PGHA_PORT1/postgres?sslmode=disable"
  echo "host all all $HOST/32 trust" >>"$PGHA_DIR/node1/pg_hba.conf"
  if [ "$PGHA_FAST" = 1 ]; then
    psql -X -Atq "$pg" -c "ALTER SYSTEM SET fsync = off" -c "ALTER SYSTEM SET full_page_writes = off" >/dev/null
  fi
  psql -X -Atq "$pg" -c 'SELECT pg_reload_conf()' >/dev/null
  tune_keeper node1

  log "starting node2 (the synchronous standby) on $HOST:$PGHA_PORT2"
  start_node node2 $PGHA_PORT2
  # The standby starts from pg_basebackup, which waits for a spread checkpoint on the primary (a minute and
  # more); an immediate one asked for meanwhile hurries it.
  for _ in $(seq 60); do
    case $(node_state node2) in catchingup | secondary) break ;; esac
    psql -X -Atq "$pg" -c CHECKPOINT >/dev/null 2>&1 || true
    sleep 1
  done
  wait_for "node2 as secondary" 120 is_state node2 secondary
  wait_for "node1 as primary" 30 is_state node1 primary
  tune_keeper node2
  log "formation up: $(state | tr '\n' ' ')"
  url
}

start_keeper() { # start_keeper NAME: runs an existing node's keeper again
  run_bg "$1" run --pgdata "$PGHA_DIR/$1"
  wait_for "$1's keeper" 60 autoctl status --pgdata "$PGHA_DIR/$1"
}

state() {
  psql -X -Atq "$(monitor_uri)" -c "SELECT nodename || ' ' || reportedstate || ' ' || nodehost || ':' ||
    nodeport FROM pgautofailover.node ORDER BY nodeid"
}

# kill_primary kills the current primary's keeper and Postgres (its postmaster and every backend: the node's
# whole session, run_bg) with SIGKILL, as a machine's sudden death looks, and prints the node's name.
kill_primary() {
  local n
  n=$(psql -X -Atq "$(monitor_uri)" -c "SELECT nodename FROM pgautofailover.node WHERE reportedstate IN
    ('primary', 'wait_primary', 'single') ORDER BY nodeid LIMIT 1")
  [ -n "$n" ] || { log "no primary"; return 1; }
  local pm=""
  [ -f "$PGHA_DIR/$n/postmaster.pid" ] && pm=$(head -1 "$PGHA_DIR/$n/postmaster.pid")
  pkill -KILL -s "$(cat "$PGHA_DIR/$n.pid")" || true
  [ -n "$pm" ] && kill -KILL "$pm" 2>/dev/null || true
  echo "$n"
}

stop() {
  [ -d "$PGHA_DIR" ] || return 0
  # Every process of the formation runs in a session of its own (run_bg): end each session whole, keepers and
  # their Postgres alike, nodes first, the monitor last.
  for n in node2 node1 monitor; do
    local f="$PGHA_DIR/$n.pid"
    [ -f "$f" ] || continue
    local sid; sid=$(cat "$f")
    pkill -TERM -s "$sid" 2>/dev/null || true
  done
  for _ in $(seq 50); do
    local alive=0
    for n in node2 node1 monitor; do
      [ -f "$PGHA_DIR/$n.pid" ] && pgrep -s "$(cat "$PGHA_DIR/$n.pid")" >/dev/null && alive=1
    done
    [ "$alive" = 0 ] && break
    sleep 0.2
  done
  for n in node2 node1 monitor; do
    [ -f "$PGHA_DIR/$n.pid" ] && pkill -KILL -s "$(cat "$PGHA_DIR/$n.pid")" 2>/dev/null || true
  done
  # A postmaster killed with its keeper may have left its shared memory's processes; postmaster.pid names them.
  for d in "$PGHA_DIR"/node1 "$PGHA_DIR"/node2 "$PGHA_DIR"/monitor; do
    [ -f "$d/postmaster.pid" ] && kill -KILL "$(head -1 "$d/postmaster.pid")" 2>/dev/null || true
  done
  rm -rf "$PGHA_DIR"
  log "stopped"
}

case "${1:-}" in
  start) start ;;
  url) url ;;
  state) state ;;
  kill) kill_primary ;;
  install) install ;;
  keeper) start_keeper "$2" ;;
  stop) stop ;;
  *) echo "usage: $0 start|url|state|kill|keeper NAME|stop|install" >&2; exit 2 ;;
esac
