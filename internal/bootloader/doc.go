// Package bootloader is how an installed node boots from its own disk:
// GRUB for BIOS machines (QEMU's SeaBIOS), with Talos's A/B layout on the
// BOOT partition.
//
//	BOOT/A/vmlinuz, BOOT/A/initramfs.xz   one installed version
//	BOOT/B/...                            the other
//	BOOT/grub/grub.cfg                    default, fallback, one entry each
//
// GRUB's own images come from Debian's grub-pc-bin at build time (boot.img
// and a core.img made by grub-mkimage, carried by the installer image);
// the node writes them itself (InstallBIOS does what grub-bios-setup does
// for a GPT disk with a BIOS boot partition) and renders grub.cfg, which
// Parse reads back for a flip or a revert. The core image finds BOOT by
// its filesystem label, so neither the partition number nor the disk name
// is baked into it.
package bootloader
