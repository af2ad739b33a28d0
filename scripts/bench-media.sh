#!/usr/bin/env bash
# Boot media under QEMU (TCG, Debian's cloud kernel): QEMU start to
# maintenance mode for the installer's kernel and initramfs booted with
# -kernel, from the ISO and from the disk image on SeaBIOS and on UEFI
# (OVMF), RUNS times each, in turns, in one run (boot/metaltest
# BenchmarkMetalMedia); then the sizes of make iso's, make disk-image's
# and make pxe's artifacts when they exist.
#
# Reported (medians, seconds): kernel-s, iso-bios-s, iso-uefi-s,
# disk-bios-s, disk-uefi-s; iso-MiB, image-zst-MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOFLAGS='-trimpath -tags=no_btrfs,no_devmapper,no_zfs,e2e' # boot/metaltest builds only with e2e

runs=${RUNS:-3}

scripts/fetch-kernel.sh _out/kernel >/dev/null

go test -count=1 -run '^$' -bench 'BenchmarkMetalMedia' -benchtime "${runs}x" -timeout 60m -v ./boot/metaltest/ |
  grep -v '^    node_test.go'

for f in _out/talosbox-amd64.iso _out/metal-amd64.raw.zst _out/pxe/vmlinuz-amd64 _out/pxe/initramfs-amd64.xz; do
  [ -f "$f" ] && stat -c '%n %s' "$f" | awk '{ printf "%-32s %6.1f MiB\n", $1, $2 / 1048576 }'
done
exit 0
