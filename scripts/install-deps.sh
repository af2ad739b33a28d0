#!/usr/bin/env bash
# Installs what the build and the test suite need on a fresh Debian machine:
# Debian packages (only the missing ones, so a warm machine needs no
# network) and the Go modules. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

# Grows as issues land: iproute2 and dnsmasq (networkd), qemu and a kernel
# (boot), cryptsetup (LUKS2), ...
#   chrony      a real NTP server peer for timed's tests
#   util-linux  unshare, to run machined as PID 1 in fresh namespaces
#   protobuf-compiler, libprotobuf-dev   make generate (the API's .pb.go files)
#   iproute2    network namespaces, veth and bridges for multi-node tests
#   dnsmasq-base   a real DHCP server peer for networkd's DHCP tests
#   qemu-system-x86   guests on the Debian cloud kernel (networkd's bond/VLAN/WireGuard tests, metal boots)
#   fdisk, e2fsprogs  sfdisk and e2fsck check the GPT and ext4 that internal/disk writes
#   iptables    the Docker tests' network partitions (DOCKER-USER rules)
#   vde-switch  the private Ethernet segments between QEMU guests (guest tests, cluster create qemu)
#   nftables, mount   make images copies iptables, nft and mount(8), with their libraries, into the
#               kube-proxy, flannel and kubelet images
#   gcc, libc6-dev    flanneld's UDP backend is C, linked statically as upstream builds it
#   libseccomp-dev    runc's seccomp support, linked statically (libseccomp.a)
#   cryptsetup-bin    the judge of internal/luks2's LUKS2 headers (luksDump, test-passphrase,
#               add/kill slots, tokens, repair, offline reencrypt on image files)
#   grub-pc-bin, grub-common   GRUB's BIOS images and grub-mkimage for the installer image
#               (make installer): installed nodes boot from disk through SeaBIOS and GRUB
#   nfs-ganesha, nfs-ganesha-vfs   a userspace NFSv4 server (this kernel has no nfsd) that a QEMU
#               node's pods mount nfs volumes from
#   grub-efi-amd64-bin   GRUB's UEFI modules: grub-mkimage makes BOOTX64.EFI for the installer and the ISO
#   xorriso     assembles the hybrid ISO (talosbox imager iso) and reads it back in tests
#   mtools, dosfstools   judges of internal/fat's FAT images (mdir, mtype, fsck.fat)
#   ovmf        UEFI firmware for the QEMU guests that boot the ISO and installed disks under UEFI
#   tcpdump     compiles the filters and reads the captures of talosctl pcap's tests (-dd, -r)
#   dmidecode   the judge of internal/smbios's SMBIOS parser (--from-dump)
#   graphviz    dot, the judge of talosctl inspect dependencies' graph
#   cpio        the judge of the config archive talosbox imager --embedded-config appends to an initramfs
#   xfsprogs    mkfs.xfs, for internal/disk's trim test on an xfs loop device (Talos's filesystem)
packages=(make git ca-certificates chrony util-linux procps iproute2 dnsmasq-base protobuf-compiler libprotobuf-dev qemu-system-x86 fdisk e2fsprogs iptables vde-switch nftables mount gcc libc6-dev libseccomp-dev cryptsetup-bin grub-pc-bin grub-common nfs-ganesha nfs-ganesha-vfs grub-efi-amd64-bin xorriso mtools dosfstools ovmf cpio tcpdump graphviz dmidecode xfsprogs)

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

# The kernel the QEMU guests boot: Debian's cloud flavour, resolved at run
# time (its ABI version changes with security updates), kept in _out/kernel.
scripts/fetch-kernel.sh _out/kernel >/dev/null

command -v go >/dev/null || { echo "go is not on PATH (expected Go 1.26 at /usr/local/go/bin)" >&2; exit 1; }
go mod download
echo "dependencies ready: $(go version)"
