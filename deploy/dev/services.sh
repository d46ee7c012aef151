#!/usr/bin/env bash
# Makes sure the stores the platform and its tests need are reachable on this machine: Redis 7+ at
# REDIS_HOST:REDIS_PORT (default 127.0.0.1:6379) and PostgreSQL 15+ at PG_HOST:PG_PORT (default 127.0.0.1:5432),
# the addresses the services' default REDIS_URL and DATABASE_URL name; it does not read those two URLs. A store
# that does not answer is started, and installed from the distribution's packages first when it is missing. Used
# by `make run` and `make test`.
set -euo pipefail

REDIS_HOST=${REDIS_HOST:-127.0.0.1}
REDIS_PORT=${REDIS_PORT:-6379}
PG_HOST=${PG_HOST:-127.0.0.1}
PG_PORT=${PG_PORT:-5432}

log() { echo "services: $*" >&2; }

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_updated=""
apt_install() {
  if [ -z "$apt_updated" ]; then as_root apt-get update -qq >/dev/null; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "$@" >/dev/null
}

redis_up() { redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG; }
pg_up() { pg_isready -q -h "$PG_HOST" -p "$PG_PORT" 2>/dev/null; }

if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  log "installing redis"; apt_install redis-server redis-tools
fi
if ! redis_up; then
  log "starting redis on $REDIS_HOST:$REDIS_PORT"
  redis-server --daemonize yes --bind "$REDIS_HOST" --port "$REDIS_PORT" --save "" --appendonly no >/dev/null
  for _ in $(seq 50); do redis_up && break; sleep 0.1; done
fi
redis_up || { log "redis did not come up"; exit 1; }
# Keyspace expiry events let booking mark lapsed holds EXPIRED at once instead of at the next sweep.
redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT" config set notify-keyspace-events Ex >/dev/null || true

if ! command -v pg_ctlcluster >/dev/null || [ -z "$(ls /etc/postgresql 2>/dev/null)" ]; then
  log "installing postgresql"; apt_install postgresql postgresql-client
fi
if ! pg_up; then
  log "starting postgresql"
  as_root pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -1)" main start || true
  for _ in $(seq 100); do pg_up && break; sleep 0.1; done
fi
pg_up || { log "postgresql did not come up"; exit 1; }

# Trust auth for local TCP is the machine's default; a fresh install uses peer/md5, so make sure the postgres role
# can connect over TCP as the services do, without a password.
if ! psql -h "$PG_HOST" -p "$PG_PORT" -U postgres -d postgres -Atc 'select 1' >/dev/null 2>&1; then
  hba=$(as_root su postgres -c "psql -Atc 'show hba_file'")
  log "allowing local trust auth in $hba"
  as_root sed -i '1i host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust' "$hba"
  as_root pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -1)" main reload
fi

# The suite runs two packages at once, each with several tests at once, and each test has its own database and
# pools (booking's and the edge's processes, the test's own): some 70 connections at its peak, more than the
# default's 100 leaves once another suite or a developer's session shares the server. A local server gets 300.
want_conns=300
have_conns=$(psql -h "$PG_HOST" -p "$PG_PORT" -U postgres -d postgres -Atc 'show max_connections')
if [ "$have_conns" -lt "$want_conns" ] && command -v pg_ctlcluster >/dev/null && [ -n "$(ls /etc/postgresql 2>/dev/null)" ]; then
  log "raising postgresql's max_connections from $have_conns to $want_conns (a restart)"
  psql -h "$PG_HOST" -p "$PG_PORT" -U postgres -d postgres -qc "alter system set max_connections = $want_conns"
  as_root pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -1)" main restart
  for _ in $(seq 100); do pg_up && break; sleep 0.1; done
  pg_up || { log "postgresql did not come back up"; exit 1; }
fi

log "redis and postgresql are up"
