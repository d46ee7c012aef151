#!/bin/sh
# One member of docker-compose.ha.yml's formation: `pgaf-node monitor` or `pgaf-node postgres`. It creates the
# node on its first start (its volume is empty), applies the failure-detection tuning for a sale that
# deploy/dev/pgha.sh applies (docs/SCALING.md), then runs pg_autoctl in the foreground.
set -eu
role=$1
host=$(hostname)
if [ ! -f "$PGDATA/PG_VERSION" ]; then
  if [ "$role" = monitor ]; then
    pg_autoctl create monitor --pgdata "$PGDATA" --hostname "$host" --auth trust --no-ssl
    cat >>"$PGDATA/postgresql.conf" <<CONF
pgautofailover.health_check_period = '1s'
pgautofailover.health_check_timeout = '1s'
pgautofailover.health_check_max_retries = 1
pgautofailover.health_check_retry_delay = '500ms'
pgautofailover.node_considered_unhealthy_timeout = '2s'
pgautofailover.primary_demote_timeout = '3s'
CONF
  else
    pg_autoctl create postgres --pgdata "$PGDATA" --hostname "$host" --name "$host" --dbname flashseat \
      --username postgres --monitor "$PGHA_MONITOR" --auth trust --no-ssl --pg-hba-lan \
      --replication-quorum true --candidate-priority 50
    pg_autoctl config set --pgdata "$PGDATA" timeout.network_partition_timeout 2
    pg_autoctl config set --pgdata "$PGDATA" timeout.prepare_promotion_walreceiver 2
  fi
fi
exec pg_autoctl run --pgdata "$PGDATA"
