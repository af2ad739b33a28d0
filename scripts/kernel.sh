#!/usr/bin/env bash
# kernel.sh DIR: the kernel a talosbox node boots, from Debian's archive only.
# Resolves the current linux-image-cloud-amd64 package through apt, downloads
# and unpacks it into DIR (scripts/fetch-kernel.sh: DIR/boot/vmlinuz-<ver>,
# DIR/lib/modules/<ver>/), then writes DIR/lib/modules/<ver>/modules.dep for
# the whole tree (a .deb ships none; no depmod needed) with
# `$TALOSBOX initramfs --write-modules-dep` when $TALOSBOX names a built
# talosbox, else `go run . initramfs --write-modules-dep`.
# Cached like fetch-kernel.sh. Prints the kernel image's path.
set -euo pipefail

dir=${1:?usage: kernel.sh DIR}
root=$(cd "$(dirname "$0")/.." && pwd)

image=$("$root/scripts/fetch-kernel.sh" "$dir")
ver=${image##*/vmlinuz-}
mods=$(cd "$dir/lib/modules/$ver" && pwd)

if [ ! -s "$mods/modules.dep" ]; then
  if [ -n "${TALOSBOX:-}" ]; then
    "$TALOSBOX" initramfs --write-modules-dep "$mods" >&2
  else
    (cd "$root" && go run . initramfs --write-modules-dep "$mods") >&2
  fi
fi

echo "$image"
