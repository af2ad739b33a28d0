#!/usr/bin/env bash
# fetch-kernel.sh DIR: unpack Debian's cloud kernel (linux-image-cloud-amd64's
# current versioned package) into DIR for the QEMU guest tests:
#   DIR/boot/vmlinuz-<ver>  and  DIR/lib/modules/<ver>/
# The package name carries the kernel ABI and changes with security updates,
# so it is resolved here at run time, never pinned. Nothing is installed on
# the host (apt-get download + dpkg-deb -x, no depmod, no root needed for the
# unpack). Cached: when DIR already holds the resolved version, it does
# nothing. Prints the kernel image's path.
set -euo pipefail

dir=${1:?usage: fetch-kernel.sh DIR}
meta=linux-image-cloud-amd64

resolve() {
  apt-cache depends "$meta" 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }'
}

pkg=$(resolve || true)
if [ -z "$pkg" ]; then
  # A fresh machine may have no package lists yet.
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  pkg=$(resolve || true)
fi
[ -n "$pkg" ] || { echo "fetch-kernel.sh: apt-cache knows no package that $meta depends on" >&2; exit 1; }

ver=${pkg#linux-image-}
image="$dir/boot/vmlinuz-$ver"

if [ -s "$image" ] && [ -d "$dir/lib/modules/$ver/kernel" ]; then
  echo "$image"
  exit 0
fi

mkdir -p "$dir"
tmp=$(mktemp -d "$dir/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# apt-get download writes into the current directory; as root, it would
# otherwise warn that the _apt sandbox user cannot write into $tmp.
sandbox=()
[ "$(id -u)" -ne 0 ] || sandbox=(-o APT::Sandbox::User=root)
(cd "$tmp" && apt-get download -qq "${sandbox[@]}" "$pkg" >&2)
deb=$(ls "$tmp"/*.deb)
mkdir -p "$tmp/root"
dpkg-deb -x "$deb" "$tmp/root"

[ -s "$tmp/root/boot/vmlinuz-$ver" ] || { echo "fetch-kernel.sh: $deb has no boot/vmlinuz-$ver" >&2; exit 1; }

# Move into place: older unpacked versions stay (harmless) unless removed.
mkdir -p "$dir/boot" "$dir/lib/modules"
rm -rf "$dir/lib/modules/$ver"
mv "$tmp/root/lib/modules/$ver" "$dir/lib/modules/$ver"
# The image last: its presence marks a complete unpack.
mv "$tmp/root/boot/"* "$dir/boot/"

echo "$image"
