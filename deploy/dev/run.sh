#!/usr/bin/env bash
# Runs the platform on this machine: payment simulator (:8082), booking (:8081) and the public edge (:8080).
# Secrets are generated once into .run/secrets.env and kept, so tokens survive a restart. Ctrl-C stops everything
# gracefully.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .run

if [ ! -f .run/secrets.env ]; then
  rnd() { head -c "$1" /dev/urandom | base64 | tr -d '\n=' | tr '+/' '-_'; }
  cat > .run/secrets.env <<EOS
ADMIN_TOKEN=adm_$(rnd 24)
STAFF_TOKEN=stf_$(rnd 24)
AUTH_SECRET=$(rnd 48)
ADMISSION_SIGNING_KEY=$(rnd 32 | head -c 43)
TICKET_SIGNING_KEY=$(rnd 32 | head -c 43)
PAYMENT_WEBHOOK_SECRET=whsec_$(rnd 24)
EOS
  # A 32-byte seed is 43 base64url characters; regenerate the two seeds exactly rather than trusting head -c.
  seed() { head -c 32 /dev/urandom | base64 -w0 | tr '+/' '-_' | tr -d '='; }
  sed -i "s|^ADMISSION_SIGNING_KEY=.*|ADMISSION_SIGNING_KEY=$(seed)|; s|^TICKET_SIGNING_KEY=.*|TICKET_SIGNING_KEY=$(seed)|" .run/secrets.env
fi
# The generated secrets fill in only what the caller's environment does not set: an ADMIN_TOKEN (or any other
# secret) exported before `make run` wins.
while IFS='=' read -r key value; do
  [ -n "$key" ] && [ -z "${!key:-}" ] && export "$key=$value"
done < .run/secrets.env

# Booking and the edge share the database: the edge keeps the waiting room's record there (Redis is its cache).
export DATABASE_URL=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/flashseat?sslmode=disable}
export REDIS_URL=${REDIS_URL:-redis://127.0.0.1:6379/0}
export EDGE_ADDR=${EDGE_ADDR:-:8080} BOOKING_ADDR=${BOOKING_ADDR:-:8081} PAYSIM_ADDR=${PAYSIM_ADDR:-:8082}
# Metrics and pprof, away from the public ports (each binary reads OPS_ADDR; these set it per process below).
EDGE_OPS_ADDR=${EDGE_OPS_ADDR:-127.0.0.1:9080} BOOKING_OPS_ADDR=${BOOKING_OPS_ADDR:-127.0.0.1:9081}
export BOOKING_URL=${BOOKING_URL:-http://127.0.0.1${BOOKING_ADDR}}
export PAYMENT_GATEWAY_URL=${PAYMENT_GATEWAY_URL:-http://127.0.0.1${PAYSIM_ADDR}}
export PAYMENT_WEBHOOK_URL=${PAYMENT_WEBHOOK_URL:-${BOOKING_URL}/webhooks/payments}
export ADMISSION_JWKS_URL=${ADMISSION_JWKS_URL:-http://127.0.0.1${EDGE_ADDR}/.well-known/jwks.json}
export SEED_DEMO=${SEED_DEMO:-true}
# A developer's webhook receiver runs on this machine; production refuses private addresses (SSRF guard).
export WEBHOOK_ALLOW_PRIVATE=${WEBHOOK_ALLOW_PRIVATE:-true}

db=$(sed -E 's|.*/([^/?]+)(\?.*)?$|\1|' <<<"$DATABASE_URL")
psql "${DATABASE_URL/\/$db/\/postgres}" -Atc "select 1 from pg_database where datname='$db'" | grep -q 1 \
  || psql "${DATABASE_URL/\/$db/\/postgres}" -qc "create database \"$db\""

pids=()
stop() { trap - INT TERM EXIT; kill -TERM "${pids[@]}" 2>/dev/null || true; wait "${pids[@]}" 2>/dev/null || true; }
trap stop INT TERM EXIT

bin/paysim >>.run/paysim.log 2>&1 & pids+=($!)
OPS_ADDR=$BOOKING_OPS_ADDR bin/booking >>.run/booking.log 2>&1 & pids+=($!)
for _ in $(seq 100); do curl -fsS "http://127.0.0.1${BOOKING_ADDR}/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
OPS_ADDR=$EDGE_OPS_ADDR bin/edge >>.run/edge.log 2>&1 & pids+=($!)
for _ in $(seq 100); do curl -fsS "http://127.0.0.1${EDGE_ADDR}/readyz" >/dev/null 2>&1 && break; sleep 0.1; done

show=$(curl -fsS "http://127.0.0.1${EDGE_ADDR}/api/v1/events?city=Bangalore" | sed -nE 's/.*"showId":"([^"]+)".*/\1/p' | head -1)
cat <<MSG

  flashseat is running (logs in .run/*.log; Ctrl-C stops it)
    edge (public)   http://localhost${EDGE_ADDR}
    home page       http://localhost${EDGE_ADDR}/
    booking         http://localhost${BOOKING_ADDR}
    demo show       http://localhost${EDGE_ADDR}/api/v1/shows/${show}/seats
    show page       http://localhost${EDGE_ADDR}/shows/${show}
    waiting room    http://localhost${EDGE_ADDR}/queue/${show}
    my bookings     http://localhost${EDGE_ADDR}/bookings
    test cards      4242 4242 4242 4242 pays, 4000 0000 0000 0002 declines, 4000 0000 0000 3220 asks for
                    3-D Secure, 4000 0000 0000 0259 is slow (any future expiry, any 3 digits)
    operator console http://localhost${EDGE_ADDR}/admin (sign in with the admin token)
    admin token     ${ADMIN_TOKEN}
    metrics, pprof  http://${EDGE_OPS_ADDR}/metrics (edge), http://${BOOKING_OPS_ADDR}/metrics (booking)

MSG
wait -n "${pids[@]}"
