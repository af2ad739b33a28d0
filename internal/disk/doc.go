// Package disk is the system disk on metal: Talos's GPT layout (EFI, BIOS,
// BOOT, META, STATE, EPHEMERAL) planned and written with go-diskfs, the
// partitions found again by their GPT names in sysfs, and STATE and
// EPHEMERAL formatted, mounted and wiped.
//
// The filesystem is ext4, made by go-diskfs's filesystem/ext4: Debian's
// cloud kernel has ext4 built in (xfs, Talos's choice, is a module that
// costs about 670 ms to load under emulation), nothing in the initramfs
// can run mkfs (there is only the static talosbox binary), and go-diskfs
// has no xfs writer. e2fsck accepts what it makes and the kernel mounts it
// read-write with a journal. META gets an empty Talos META (internal/meta)
// as Talos's installer writes it. EFI, BIOS and BOOT are laid out at
// Talos's sizes and left unformatted (their first and last MiB zeroed):
// machined writes BOOT (ext4, the A/B slots and grub.cfg), GRUB's core
// into BIOS and GRUB for UEFI onto EFI (a FAT, internal/fat) from the
// installer image (internal/storage, internal/bootloader).
//
// The package works on any io.ReaderAt/WriterAt region, so the layout and
// the filesystems are tested on a plain image file; only the sysfs scan,
// the partition table re-read and mounting need a real block device.
package disk
