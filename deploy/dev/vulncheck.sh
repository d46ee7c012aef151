#!/usr/bin/env bash
# `make lint`'s vulnerability check: govulncheck (installed at the pinned version if missing) against the Go
# vulnerability database, reporting only vulnerabilities the code can reach.
#
#   VULNDB=https://vuln.go.dev   the database (default); a mirror in the same layout (index/db.json,
#                                index/modules.json, ID/GO-....json) by URL or as file:///path works too
#   VULNDB=off                   skip the check, saying so: for a machine that reaches no database at all
#
# A database that cannot be reached fails the check with the reason: a lint that could not look for known
# vulnerabilities must not pass as if it had found none.
set -euo pipefail
cd "$(dirname "$0")/../.."

version=v1.9.0
db=${VULNDB:-https://vuln.go.dev}
db=${db%/}
gobin=$(go env GOPATH)/bin
say() { echo "vulncheck: $*" >&2; }

if [ "$db" = off ]; then
  say "SKIPPED (VULNDB=off): the dependencies were NOT checked for known vulnerabilities"
  exit 0
fi

unreachable() {
  say "FAILED: the Go vulnerability database $db cannot be reached from this machine ($1)."
  say "Run make lint where it is reachable, point VULNDB at a mirror (VULNDB=file:///path/to/vulndb, the same"
  say "layout as vuln.go.dev: index/db.json, index/modules.json, ID/*.json), or skip knowingly with VULNDB=off."
  exit 1
}
case "$db" in
  file://*)
    [ -f "${db#file://}/index/modules.json" ] || unreachable "no index/modules.json under ${db#file://}"
    ;;
  http://* | https://*)
    if command -v curl >/dev/null; then
      err=$(curl -fsS --max-time 15 -o /dev/null "$db/index/db.json" 2>&1) || unreachable "${err:-no answer}"
    fi
    ;;
  *)
    unreachable "VULNDB must be an http(s):// or file:// URL, or off"
    ;;
esac

if [ ! -x "$gobin/govulncheck" ] || ! "$gobin/govulncheck" -version 2>/dev/null | grep -q "govulncheck@$version"; then
  say "installing govulncheck $version"
  GOFLAGS= go install "golang.org/x/vuln/cmd/govulncheck@$version"
fi
say "govulncheck $version against $db"
"$gobin/govulncheck" -db "$db" ./...
