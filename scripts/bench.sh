#!/usr/bin/env bash
# The in-process measurements (bus, start-up, discovery, KubePrism, config
# validation). Run on an otherwise idle machine;
# the machine's speed drifts between periods, so compare within one run.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOFLAGS=-trimpath
benchtime=${BENCHTIME:-1s}

echo "== bus: update throughput, watch latency, and the gRPC unix-socket hop"
go test -run '^$' -bench 'Update|WatchLatency|GRPCUnix' -benchtime "$benchtime" ./internal/bus

echo
echo "== client start-up"
scripts/bench-startup.sh

echo
echo "== discovery: a node's change reaching another node's Members (watch, and polling for comparison), and a worker through trustd"
go test -run '^$' -bench 'PublishToMembers/(watch|poll/interval=1s)' -benchtime 10x ./internal/discovery
go test -run '^$' -bench 'WatchAffiliates' -benchtime "$benchtime" ./internal/trustd

echo
echo "== KubePrism: a new connection with one round trip, and 32 KiB echoed, through it and straight to the upstream"
go test -run '^$' -bench 'Prism' -benchtime 5000x -benchmem ./internal/k8s

echo
echo "== config validation: configs' rules alone, and the one validation every apply and boot runs (rules, then the renderers)"
go test -run '^$' -bench 'DecodeValidate' -benchtime 300x -benchmem ./configs
go test -run '^$' -bench 'Load|Check' -benchtime 100x -benchmem ./internal/render
