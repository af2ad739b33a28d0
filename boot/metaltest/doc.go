// Package metaltest boots the real talosbox binary as PID 1 under QEMU
// (Debian's cloud kernel, TCG, virtio disk, NIC and RNG, boot/qemu) and
// drives it from the host with the real talosctl through a slirp port
// forward (127.0.0.1:PORT to the guest's 50000), as an operator would:
//
//   - TestMetalLifecycle: boot to maintenance mode (get disks, links,
//     addresses, routes and systeminformation --insecure), apply-config --insecure
//     (the node partitions /dev/vda with Talos's layout and mounts STATE
//     and EPHEMERAL), services up, bootstrap, etcd healthy, the read
//     commands, CRI parts containerd refuses (each refused in every apply
//     mode), a reboot into a staged config whose boot fails after writing
//     a machine file (the node reboots into its last good config, whose
//     boot removes the file), then into /etc/motd written to STATE from
//     the host, back with the last good config from the disk, a CRI part
//     that stops the CRI plugin at load (the boot's check fails, the node
//     falls back and reboots into its last good config and files), a
//     try with another cluster's machine.ca that reverts by itself, a reset
//     that wipes STATE and EPHEMERAL back into maintenance mode, and a
//     shutdown that ends QEMU.
//   - TestMetalBrokenCmdlineConfig: talos.config= names a config that does
//     not parse: a clear console error, and maintenance mode answers.
//   - TestMetalFatal: a fatal boot error (a STATE partition with
//     a foreign filesystem) is printed; talosbox.fatal=poweroff powers off,
//     the default waits; the kernel never panics.
//   - TestMetalISO: the ISO (talosbox imager iso) on SeaBIOS: maintenance
//     mode, apply-config --insecure installs to the disk, the disk boots.
//   - TestMetalPXE: iPXE from slirp's DHCP and TFTP, the kernel and the
//     initramfs over HTTP, the config embedded in the initramfs.
//   - TestMetalNoCloud: talos.platform=nocloud with a cidata ISO: config,
//     static address, gateway, resolver and hostname from the seed.
//   - TestMetalUpgrade: the ISO on UEFI (OVMF), install, boot from disk,
//     upgrades, rollback and the automatic revert of a failed boot.
//   - BenchmarkMetalBoot (scripts/bench-metal.sh): boot times against a
//     minimal Go init (boot/baseline) on the same kernel.
//
// QEMU runs with -no-reboot: a guest reboot ends the QEMU process, and the
// test starts a new one on the same disk image after checking the
// console's last word was "[talos] rebooting". That keeps every boot
// observable from its first console line, and a kernel panic loop
// (panic=-1) impossible.
//
// Tests run in the order of their files. Those that boot an initramfs
// directly come first, while TestMain builds the installer images in the
// background (installers_test.go); TestMetalUpgrade, TestQEMUCluster and
// TestQEMUKubernetes, which pull them, come last (metal_upgrade_test.go,
// qemu_*_test.go). Every test that boots a guest holds the host-wide guest
// lock (qemu.Exclusive) meanwhile, so the suite's length is the sum of
// what the guests do: a build made while holding it, or before it in a
// test that runs alone, makes the whole of make test that much longer.
//
// The binary is built with `make build` once per test process, the
// initramfs with the initramfs package (the binary as /init, the virtio
// modules). The tests need qemu-system-x86_64 and the kernel unpacked by
// scripts/fetch-kernel.sh; they fail, not skip, without them.
package metaltest
