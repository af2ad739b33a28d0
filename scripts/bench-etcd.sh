#!/usr/bin/env bash
# Embedded etcd (internal/etcd) against an upstream etcd binary on the same
# machine with the same settings: one member each, loopback mutual TLS with
# certificates from the same CA, 100/1000 ms raft timers, snapshot-count
# 10000, data on the same disk, the same Go client. Prints p50/p99 of 1,000
# sequential puts from one client, puts/s from 16 clients, and the ratios.
# Debian's etcd-server is installed when no etcd is on PATH (ETCD_BIN
# overrides). Run on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOFLAGS=-trimpath

ETCD_BIN=${ETCD_BIN:-$(command -v etcd || true)}
if [ -z "$ETCD_BIN" ]; then
	echo "== installing Debian's etcd-server"
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y etcd-server >/dev/null ||
		{ apt-get update >/dev/null && apt-get install -y etcd-server >/dev/null; }
	ETCD_BIN=$(command -v etcd)
fi

SEQ=${SEQ:-1000x}      # sequential puts (the p50/p99 sample)
THRU=${THRU:-20000x}   # puts spread over 16 clients

echo "== upstream: $ETCD_BIN ($("$ETCD_BIN" --version | head -1))"
echo "== embedded: go.etcd.io/etcd/server/v3 $(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)"

out=$(mktemp)
trap 'rm -f "$out"' EXIT

export TALOSBOX_BENCH_ETCD=$ETCD_BIN
go test -run '^$' -bench 'Put/.*/(sequential|in-process)$' -benchtime "$SEQ" ./internal/etcd | tee -a "$out"
go test -run '^$' -bench 'Put/.*/16-clients$' -benchtime "$THRU" ./internal/etcd | tee -a "$out"

echo
awk '
/^BenchmarkPut\// {
	name = $1
	sub(/-[0-9]+$/, "", name)
	sub(/^BenchmarkPut\//, "", name)
	split(name, part, "/")
	target = part[1]
	if (name ~ /in-process/) target = "embedded, in-process client"
	for (i = 2; i < NF; i++) {
		if ($(i+1) == "p50-ms") p50[target] = $i
		if ($(i+1) == "p99-ms") p99[target] = $i
		if ($(i+1) == "puts/s") tput[target] = $i
	}
	seen[target] = 1
}
END {
	printf "%-28s %10s %10s %14s\n", "", "p50 ms", "p99 ms", "16 clients/s"
	n = split("embedded|upstream|embedded, in-process client", order, "|")
	for (k = 1; k <= n; k++) {
		t = order[k]
		if (!(t in seen)) continue
		printf "%-28s %10s %10s %14s\n", t, (t in p50 ? p50[t] : "-"), (t in p99 ? p99[t] : "-"), (t in tput ? tput[t] : "-")
	}
	if (("embedded" in seen) && ("upstream" in seen) && p50["upstream"] > 0 && p99["upstream"] > 0 && tput["upstream"] > 0) {
		printf "%-28s %10.2f %10.2f %14.2f\n", "embedded / upstream", p50["embedded"] / p50["upstream"], p99["embedded"] / p99["upstream"], tput["embedded"] / tput["upstream"]
		print "(latency ratios below 1 and a throughput ratio above 1 favour the embedded member)"
	}
}' "$out"
