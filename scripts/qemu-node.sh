#!/usr/bin/env bash
# qemu-node.sh: boot one talosbox node on the metal platform under QEMU
# (TCG: this host offers no usable KVM), with
# Debian's cloud kernel, the initramfs of `make initramfs` and a sparse disk
# the node partitions itself on the first apply-config. The console is this
# terminal (Ctrl-A X quits QEMU); the node's API is on 127.0.0.1:$API_PORT.
#
#   API_PORT (50000)  host port forwarded to the node's apid
#   DIR (_out/qemu)   where disk.img and the node's configs live
#   DISK_SIZE (8G)    the disk; at least 4.2 GiB for Talos's layout
#   MEMORY (1024)     MiB of guest memory
#   FRESH=1           start over with a blank disk and new configs
#
# A reboot from the API reboots the guest in place; shutdown ends QEMU.
set -euo pipefail
cd "$(dirname "$0")/.."

port=${API_PORT:-50000}
dir=${DIR:-_out/qemu}
disk=$dir/disk.img

command -v qemu-system-x86_64 >/dev/null || { echo "qemu-system-x86_64 is missing: run scripts/install-deps.sh" >&2; exit 1; }

make -s initramfs >/dev/null
kernel=$(scripts/fetch-kernel.sh _out/kernel)

[ "${FRESH:-}" != 1 ] || rm -rf "$dir"
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
disk=$dir/disk.img
[ -f "$disk" ] || truncate -s "${DISK_SIZE:-8G}" "$disk"

if [ ! -f "$dir/controlplane.yaml" ]; then
  # The node's only disk is its first virtio disk.
  _out/talosbox talosctl gen config qemu https://10.0.2.15:6443 --install-disk /dev/vda -o "$dir" >/dev/null
fi

cat >&2 <<HINT
talosbox node booting under QEMU (TCG); its console follows. From another terminal:
  export TALOSCONFIG=$dir/talosconfig
  _out/bin/talosctl config endpoint 127.0.0.1:$port; _out/bin/talosctl config node 127.0.0.1
  _out/bin/talosctl -e 127.0.0.1:$port version --insecure        # maintenance mode
  _out/bin/talosctl -e 127.0.0.1:$port apply-config --insecure -f $dir/controlplane.yaml
  _out/bin/talosctl bootstrap; _out/bin/talosctl services; _out/bin/talosctl dmesg
  _out/bin/talosctl reboot | reset --graceful=false --reboot | shutdown
(_out/bin holds the applet links: make install-links.)
HINT

exec qemu-system-x86_64 -accel "${TALOSBOX_QEMU_ACCEL:-tcg}" -m "${MEMORY:-1024}" -display none -serial mon:stdio \
  -kernel "$kernel" -initrd _out/initramfs.cpio -append "console=ttyS0 panic=-1" \
  -netdev "user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:$port-:50000" -device virtio-net-pci,netdev=n0,romfile= \
  -device virtio-rng-pci -device virtio-balloon-pci,free-page-reporting=on -drive "file=$disk,if=virtio,format=raw"
