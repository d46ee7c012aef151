#!/usr/bin/env bash
# Installs what the test suite drives besides Go itself: stripe-mock (the official Stripe API mock, a Go program)
# for the Stripe adapter's tests, Debian's Chromium for the pages' browser tests, Debian's nginx for the CDN
# kit's test (deploy/cdn), workerd (Cloudflare's Workers runtime, from npm) for the kit's Worker, where
# Node.js is installed, and Debian's pgbouncer and pg_auto_failover for the tests behind a pooler and across a
# primary's failover (docs/SCALING.md), and Debian's poppler-utils, whose pdftotext reads the ticket PDFs back as a
# second, independent text extractor.
set -euo pipefail
GOBIN=$(go env GOPATH)/bin
STRIPE_MOCK_VERSION=v0.203.0
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if [ ! -x "$GOBIN/stripe-mock" ]; then
  echo "tools: installing stripe-mock $STRIPE_MOCK_VERSION" >&2
  GOFLAGS= go install "github.com/stripe/stripe-mock@$STRIPE_MOCK_VERSION"
fi
if ! command -v chromium >/dev/null; then
  echo "tools: installing chromium" >&2
  as_root apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq chromium >/dev/null
fi
if ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then
  echo "tools: installing nginx" >&2
  as_root apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq nginx-light >/dev/null
fi
if [ ! -x /usr/sbin/pgbouncer ]; then
  echo "tools: installing pgbouncer" >&2
  as_root apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq pgbouncer >/dev/null
fi
if ! command -v pdftotext >/dev/null; then
  echo "tools: installing poppler-utils" >&2
  as_root apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq poppler-utils >/dev/null
fi
bash "$(dirname "$0")/pgha.sh" install
if command -v npm >/dev/null && [ ! -x deploy/cdn/worker/node_modules/.bin/workerd ]; then
  echo "tools: installing workerd (npm ci in deploy/cdn/worker, exactly as package-lock.json pins it)" >&2
  (cd deploy/cdn/worker && npm ci --no-audit --no-fund --loglevel=error)
fi
