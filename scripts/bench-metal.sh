#!/usr/bin/env bash
# Metal boot under QEMU (TCG, Debian's cloud kernel): talosbox as /init
# against boot/baseline, a minimal Go /init that mounts, loads the same
# virtio modules with the same loader, takes a DHCP lease with the same
# client and listens on the same port. RUNS boots of each, in turns, in one
# run (the machine's speed drifts between periods: compare within a run).
#
# Reported (medians, seconds; boot/metaltest BenchmarkMetalBoot):
#   baseline-s     QEMU start -> the baseline answers through the port forward
#   maintenance-s  QEMU start -> talosbox's maintenance API answers (Version)
#   ratio          maintenance-s / baseline-s (target: at most 1.3)
#   apply-s        apply-config -> every service up (partitions and formats the disk)
#   running-s      QEMU start -> every service up, first boot (maintenance, apply, install)
#   reboot-s       QEMU start -> every service up, rebooting with the config from STATE
# and `talosctl memory` on the running node. Needs qemu-system-x86_64 and
# the kernel of scripts/fetch-kernel.sh (_out/kernel).
set -euo pipefail
cd "$(dirname "$0")/.."
export GOFLAGS='-trimpath -tags=e2e' # boot/metaltest builds only with it

runs=${RUNS:-5}

scripts/fetch-kernel.sh _out/kernel >/dev/null

# The guests' console lines (node_test.go) are left out: -v is only
# there for the per-run lines and the memory table.
go test -count=1 -run '^$' -bench 'BenchmarkMetalBoot' -benchtime "${runs}x" -timeout 60m -v ./boot/metaltest/ |
  grep -v '^    node_test.go'
