package storage

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bootloader"
	"github.com/talosbox/talosbox/internal/installer"
)

// smallBoot is a BOOT of size bytes: a tmpfs, so that a write past it
// fails with the kernel's own ENOSPC.
func smallBoot(t *testing.T, size string) string {
	t.Helper()

	dir := t.TempDir()
	if err := unix.Mount("none", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Fatalf("mount a tmpfs for BOOT (the tests run as root): %v", err)
	}

	t.Cleanup(func() { unix.Unmount(dir, 0) }) //nolint:errcheck // the test is over

	return dir
}

// An installation is written beside the running one and only then made
// the default; a BOOT too small for it is an error that leaves the slot
// GRUB boots, and grub.cfg, as they were.
func TestInstallSlotKeepsTheRunningOneWhole(t *testing.T) {
	mnt := smallBoot(t, "6m")
	dir := t.TempDir()

	build := func(kernelSize int, version string) string {
		k := filepath.Join(dir, version+".vmlinuz")
		b := make([]byte, kernelSize)
		rand.Read(b) //nolint:errcheck // crypto/rand.Read does not fail

		if err := os.WriteFile(k, b, 0o644); err != nil {
			t.Fatal(err)
		}

		i := filepath.Join(dir, version+".initramfs")
		if err := os.WriteFile(i, []byte("070701"), 0o644); err != nil {
			t.Fatal(err)
		}

		return k + "\x00" + i
	}

	cfg := &configs.Config{}

	install := func(paths, version string) (BootWrite, error) {
		k, i, _ := strings.Cut(paths, "\x00")

		img, err := installer.Build(context.Background(), installer.BuildOptions{Kernel: k, Initramfs: i, Version: version})
		if err != nil {
			t.Fatal(err)
		}

		res, _, err := installSlot(mnt, img, "ghcr.io/talosbox/installer:"+version, cfg, io.Discard, time.Now())

		return res, err
	}

	if res, err := install(build(1<<20, "v1"), "v1"); err != nil || res.Label != bootloader.LabelA || res.Previous != "" {
		t.Fatalf("first install: %+v %v", res, err)
	}

	before, err := os.ReadFile(filepath.Join(mnt, bootloader.ConfigPath))
	if err != nil {
		t.Fatal(err)
	}

	kernelA, _ := os.ReadFile(filepath.Join(mnt, "A", bootloader.KernelName))

	_, err = install(build(8<<20, "v2"), "v2")
	if err == nil || !strings.Contains(err.Error(), "BOOT is full") {
		t.Fatalf("an image larger than BOOT: %v", err)
	}

	after, _ := os.ReadFile(filepath.Join(mnt, bootloader.ConfigPath))
	kernelAfter, _ := os.ReadFile(filepath.Join(mnt, "A", bootloader.KernelName))

	if !bytes.Equal(before, after) || !bytes.Equal(kernelA, kernelAfter) || len(kernelA) != 1<<20 {
		t.Fatal("a failed install changed grub.cfg or the running slot")
	}

	if ents, _ := os.ReadDir(mnt); len(ents) != 2 { // A and grub
		t.Fatalf("BOOT holds %d entries after the failed install, want A and grub only", len(ents))
	}

	res, err := install(build(1<<20, "v3"), "v3")
	if err != nil || res.Label != bootloader.LabelB || res.Previous != bootloader.LabelA {
		t.Fatalf("an install that fits: %+v %v", res, err)
	}

	conf, err := readGrubConfig(mnt)
	if err != nil || conf.Default != bootloader.LabelB || conf.Fallback != bootloader.LabelA {
		t.Fatalf("grub.cfg after the upgrade: %+v %v", conf, err)
	}

	if e, _ := conf.Entry(bootloader.LabelB); e.Version != "v3" {
		t.Fatalf("entry B: %+v", e)
	}
}
