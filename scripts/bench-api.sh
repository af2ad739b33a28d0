#!/usr/bin/env bash
# The node API's numbers: Version and Get through apid over loopback mTLS
# with 1, 16 and 64 concurrent clients (p50/p99), the same call proxied
# through a second node, `logs -f` at 10 MB/s (lines lost, peak RSS) and
# talosctl's own start-up. Run on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOFLAGS=-trimpath

echo "== apid: Version/Get with 1, 16, 64 clients; local vs proxied"
go test -run '^$' -bench 'Version|Get|Proxied' -benchtime "${BENCHTIME:-5000x}" ./internal/apid

echo
echo "== apid: logs -f at 10 MB/s"
go test -run '^$' -bench LogsFollow -benchtime 1x ./internal/apid

echo
echo "== talosctl version --client"
scripts/bench-startup.sh | grep -E 'version --client|package inits'
