#!/usr/bin/env bash
# LUKS2 unlock: talosbox's internal/luks2 against Debian's cryptsetup on the
# same header (made by cryptsetup) at the same argon2id cost (4 passes,
# 64 MiB, 2 lanes: what a 512 MiB node's volumes get), and the header write
# (format with one key slot). Prints ns/op per side and the ratio. Run on
# an otherwise idle machine; COUNT sets the runs per side (default 10x).
set -euo pipefail
cd "$(dirname "$0")/.."
export GOFLAGS="-trimpath -tags=no_btrfs,no_devmapper,no_zfs"

command -v cryptsetup >/dev/null || scripts/install-deps.sh
COUNT=${COUNT:-10x}

out=$(go test -run '^$' -bench 'BenchmarkUnlock|BenchmarkFormat' -benchtime "$COUNT" ./internal/luks2 | tee /dev/stderr)

awk '/BenchmarkUnlock\/talosbox/ {t=$3} /BenchmarkUnlock\/cryptsetup/ {c=$3}
	END { if (t && c) printf "unlock: talosbox %.0f ms, cryptsetup %.0f ms, ratio %.2f\n", t/1e6, c/1e6, t/c }' <<<"$out"
