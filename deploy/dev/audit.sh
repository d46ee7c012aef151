#!/usr/bin/env bash
# make audit: Lighthouse (npm lighthouse through npx, Debian's Chromium, its default mobile profile: a mid-range
# phone on a throttled 4G network) on the home page, the seat map and the waiting room, recorded in BENCHMARKS.md.
# It starts its own platform (deploy/dev/run.sh) on unusual ports, with its own database and Redis database, so it
# disturbs neither `make run` nor the tests, and stops it afterwards. Targets: performance >= 90, accessibility >= 95.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .run

export EDGE_ADDR=:18580 BOOKING_ADDR=:18581 PAYSIM_ADDR=:18582
export DATABASE_URL=postgres://postgres@127.0.0.1:5432/flashseat_audit?sslmode=disable
export REDIS_URL=redis://127.0.0.1:6379/14
export CHROME_PATH=${CHROME_PATH:-/usr/bin/chromium}
LIGHTHOUSE=${LIGHTHOUSE:-lighthouse@12}
B=http://127.0.0.1:18580

redis-cli -n 14 flushdb >/dev/null # the audit's own Redis database: a fresh queue every run
bash deploy/dev/run.sh >.run/audit-platform.log 2>&1 &
platform=$!
trap 'kill -TERM $platform 2>/dev/null; wait $platform 2>/dev/null || true' EXIT
for _ in $(seq 300); do curl -fsS "$B/readyz" >/dev/null 2>&1 && break; sleep 0.2; done
curl -fsS "$B/readyz" >/dev/null || { echo "the platform did not start; see .run/audit-platform.log" >&2; exit 1; }
. .run/secrets.env
show=$(curl -fsS "$B/api/v1/events?city=Bangalore" | sed -nE 's/.*"showId":"([^"]+)".*/\1/p' | head -1)

audit() { # name url
  npx --yes "$LIGHTHOUSE" "$2" --quiet --only-categories=performance,accessibility \
    --chrome-flags="--headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage --disable-background-networking --disable-component-update --disable-sync --no-first-run" \
    --output=json --output-path=".run/lighthouse-$1.json" >/dev/null
  node -e '
    const r = require(process.argv[1]);
    const s = (c) => Math.round(r.categories[c].score * 100);
    const m = (a) => r.audits[a].displayValue.replace(/\u00a0/g, " ");
    console.log(`| ${process.argv[2]} | ${s("performance")} | ${s("accessibility")} | ${m("first-contentful-paint")} | ${m("largest-contentful-paint")} | ${m("total-blocking-time")} | ${m("cumulative-layout-shift")} | ${Math.round(r.audits["total-byte-weight"].numericValue / 1024)} KiB |`);
  ' "$PWD/.run/lighthouse-$1.json" "$3"
}

rows=()
rows+=("$(audit home "$B/" 'home `/`')")
rows+=("$(audit seats "$B/shows/$show" 'show page and seat map `/shows/{id}`')")
# The waiting room with the queue on and three fans ahead admitted at a trickle: the audited page is waiting.
curl -fsS -XPUT "$B/admin/v1/shows/$show/queue" -H "Authorization: Bearer $ADMIN_TOKEN" \
  -d '{"enabled":true,"admitPerSecond":0.01,"maxActive":1,"tokenTtlSeconds":600}' >/dev/null
for _ in 1 2 3; do
  tok=$(curl -fsS -XPOST "$B/api/v1/auth/guest" | sed -nE 's/.*"token":"([^"]+)".*/\1/p')
  curl -fsS -XPOST "$B/queue/$show/join" -H "Authorization: Bearer $tok" >/dev/null
done
rows+=("$(audit queue "$B/queue/$show" 'waiting room `/queue/{id}`')")

table=$(printf '%s\n' \
  "<!-- audit:begin (written by make audit; do not edit by hand) -->" \
  "## Pages: Lighthouse, mobile profile" \
  "" \
  "\`make audit\` on $(date -u +%Y-%m-%d), $LIGHTHOUSE with $($CHROME_PATH --version 2>/dev/null | head -1), its default mobile" \
  "profile (emulated mid-range phone, simulated slow 4G, 4x CPU slowdown), against \`make run\`'s demo show on this" \
  "machine (load average $(cut -d' ' -f1-3 /proc/loadavg) when it ended: Lighthouse's simulated timings grow with" \
  "the machine's load, total blocking time most). Targets: performance >= 90, accessibility >= 95." \
  "" \
  "| page | performance | accessibility | FCP | LCP | TBT | CLS | bytes |" \
  "| --- | --- | --- | --- | --- | --- | --- | --- |" \
  "${rows[@]}" \
  "<!-- audit:end -->")
printf '%s\n' "$table"
if grep -q '<!-- audit:begin' BENCHMARKS.md; then
  TABLE="$table" perl -0pi -e 's/<!-- audit:begin.*?<!-- audit:end -->/$ENV{TABLE}/s' BENCHMARKS.md
else
  printf '\n%s\n' "$table" >>BENCHMARKS.md
fi
