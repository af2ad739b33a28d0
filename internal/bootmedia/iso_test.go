package bootmedia

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// inputs are a stand-in kernel and initramfs: the tests here judge the
// ISO's structure with xorriso; boot/metaltest boots real ones.
func inputs(t *testing.T) Options {
	t.Helper()

	dir := t.TempDir()
	o := Options{Kernel: filepath.Join(dir, "vmlinuz"), Initramfs: filepath.Join(dir, "initramfs"), Version: "v1.2.3-test",
		Epoch: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}

	if err := os.WriteFile(o.Kernel, bytes.Repeat([]byte("bzImage "), 100000), 0o644); err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(o.Initramfs, bytes.Repeat([]byte("070701"), 200000), 0o644); err != nil {
		t.Fatal(err)
	}

	return o
}

func xorriso(t *testing.T, args ...string) string {
	t.Helper()

	out, err := exec.Command("xorriso", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("xorriso %s: %v\n%s", strings.Join(args, " "), err, out)
	}

	return string(out)
}

func TestISO(t *testing.T) {
	o := inputs(t)
	o.Cmdline = append(DefaultCmdline, "talos.config=http://10.0.2.2:8080/config.yaml")
	iso := filepath.Join(t.TempDir(), "talosbox-amd64.iso")

	if err := ISO(context.Background(), o, iso); err != nil {
		t.Fatal(err)
	}

	// Two El Torito entries: BIOS (no emulation, 4 sectors loaded) and
	// UEFI; the EFI image is also an MBR partition of type 0xef.
	report := xorriso(t, "-indev", iso, "-report_el_torito", "plain", "-report_system_area", "plain")
	for _, want := range []string{
		"El Torito boot img :   1  BIOS  y   none  0x0000  0x00      4",
		"El Torito boot img :   2  UEFI  y   none  0x0000  0x00",
		"/boot/grub/bios.img",
		"/boot/grub/efi.img",
		"Volume id    : 'TALOSBOX_V1_2_3_TEST'",
		"System area summary: MBR protective-msdos-label grub2-mbr cyl-align-off GPT",
		"GPT type GUID      :   2  28732ac11ff8d211ba4b00a0c93ec93b", // the ESP type, for a USB stick on UEFI
		"GPT partition path :   2  /boot/grub/efi.img",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("xorriso's report lacks %q:\n%s", want, report)
		}
	}

	dir := t.TempDir()
	xorriso(t, "-osirrox", "on", "-indev", iso, "-extract", "/boot", dir)

	for name, src := range map[string]string{"vmlinuz": o.Kernel, "initramfs.xz": o.Initramfs} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		want, _ := os.ReadFile(src)

		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("/boot/%s in the ISO: %v, %d bytes, want %d", name, err, len(got), len(want))
		}
	}

	cfg, err := os.ReadFile(filepath.Join(dir, "grub", "grub.cfg"))
	if err != nil {
		t.Fatal(err)
	}

	if want := "linux /boot/vmlinuz talos.platform=metal console=ttyS0 console=tty0 talos.config=http://10.0.2.2:8080/config.yaml\n"; !strings.Contains(string(cfg), want) {
		t.Errorf("grub.cfg lacks %q:\n%s", want, cfg)
	}

	// GRUB for UEFI finds the ISO by its label (the BIOS image's config
	// is compressed in it; booting it is boot/metaltest's to judge).
	b, _ := os.ReadFile(filepath.Join(dir, "grub", "efi.img"))
	if !bytes.Contains(b, []byte("search --no-floppy --label TALOSBOX_V1_2_3_TEST --set root")) {
		t.Error("/boot/grub/efi.img does not embed the search for the ISO's label")
	}
}

// The same inputs give the same bytes, built at another moment; another
// epoch or command line gives others.
func TestISOIsReproducible(t *testing.T) {
	o := inputs(t)
	dir := t.TempDir()

	build := func(name string, o Options) []byte {
		t.Helper()

		p := filepath.Join(dir, name)
		if err := ISO(context.Background(), o, p); err != nil {
			t.Fatal(err)
		}

		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}

		return b
	}

	first := build("1.iso", o)
	began := time.Now().Unix()

	// A second later at least, so that a date taken from the clock would
	// show: wait for the clock's second to change (not a fixed sleep).
	for deadline := time.Now().Add(3 * time.Second); time.Now().Unix() == began; {
		if time.Now().After(deadline) {
			t.Fatal("the clock did not move")
		}

		time.Sleep(10 * time.Millisecond)
	}

	if !bytes.Equal(build("2.iso", o), first) {
		t.Error("two builds of the same inputs differ")
	}

	later := o
	later.Epoch = o.Epoch.Add(time.Hour)

	if bytes.Equal(build("3.iso", later), first) {
		t.Error("another epoch gave the same ISO")
	}
}

func TestISORefuses(t *testing.T) {
	o := inputs(t)
	o.Cmdline = []string{"talos.config=http://x/$(reboot)"}

	if err := ISO(context.Background(), o, filepath.Join(t.TempDir(), "x.iso")); err == nil || !strings.Contains(err.Error(), `cannot hold "$"`) {
		t.Errorf("a command line with $: %v", err)
	}

	o = inputs(t)
	o.Kernel = filepath.Join(t.TempDir(), "missing")

	if err := ISO(context.Background(), o, filepath.Join(t.TempDir(), "x.iso")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("a missing kernel: %v", err)
	}
}

func TestVolumeID(t *testing.T) {
	for in, want := range map[string]string{
		"v1.11.0":                        "TALOSBOX_V1_11_0",
		"v0.0.0-8141a34-dirty":           "TALOSBOX_V0_0_0_8141A34_DIRTY",
		"v1.0.0+build.with/odd*chars!!x": "TALOSBOX_V1_0_0_BUILD_WITHODDCHA",
	} {
		if got := VolumeID(in); got != want {
			t.Errorf("VolumeID(%q) = %q, want %q", in, got, want)
		}
	}
}
