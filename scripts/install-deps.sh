#!/usr/bin/env bash
# Installs what the build and the test suite need on a fresh Debian machine:
# Debian packages (only the missing ones, so a warm machine needs no
# network) and the Go modules. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

# Grows as issues land: iproute2 and dnsmasq (networkd), qemu and a kernel
# (boot), cryptsetup (LUKS2), ...
packages=(make git ca-certificates)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "installing Debian packages: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

command -v go >/dev/null || { echo "go is not on PATH (expected Go 1.26 at /usr/local/go/bin)" >&2; exit 1; }
go mod download
echo "dependencies ready: $(go version)"
