package qemu

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestArgsShape(t *testing.T) {
	t.Setenv(AccelEnv, "")

	cfg := Config{
		Kernel: "/k/vmlinuz", Initrd: "/i.cpio", Append: []string{"quiet"},
		NICs: []NIC{{ID: "n0", MAC: MAC(1, 0), Backend: "vde,sock=/d/sw/ctl"}, {ID: "n1", Backend: "user,restrict=on"}},
	}

	args := cfg.Args("/d/qmp.sock")
	line := strings.Join(args, " ")

	for _, want := range []string{
		"-accel tcg", "-m 512", "-smp 1", "-no-reboot", "-display none", "-monitor none",
		"-append console=ttyS0 panic=-1 quiet", "-device virtio-rng-pci", "-kernel /k/vmlinuz", "-initrd /i.cpio",
		"-netdev vde,sock=/d/sw/ctl,id=n0",
		"-device virtio-net-pci,romfile=,netdev=n0,mac=52:54:00:00:01:00",
		"-netdev user,restrict=on,id=n1", "-device virtio-net-pci,romfile=,netdev=n1",
		"-qmp unix:/d/qmp.sock,server=on,wait=off",
	} {
		if !strings.Contains(line, want) {
			t.Errorf("command line lacks %q:\n%s", want, line)
		}
	}

	// eth0 must be the first NIC on the bus.
	if slices.Index(args, "virtio-net-pci,romfile=,netdev=n0,mac=52:54:00:00:01:00") > slices.Index(args, "virtio-net-pci,romfile=,netdev=n1") {
		t.Error("NICs out of order")
	}
}

func TestFindKernel(t *testing.T) {
	dir := t.TempDir()

	if _, err := FindKernel(dir); err == nil || !strings.Contains(err.Error(), "fetch-kernel.sh") {
		t.Fatalf("empty dir: %v, want a hint to fetch-kernel.sh", err)
	}

	for _, rel := range []string{"6.1.0-9-cloud-amd64", "6.1.0-56-cloud-amd64", "6.1.0-100-cloud-amd64"} {
		if err := os.MkdirAll(filepath.Join(dir, "lib", "modules", rel, "kernel"), 0o755); err != nil {
			t.Fatal(err)
		}

		if err := os.MkdirAll(filepath.Join(dir, "boot"), 0o755); err != nil {
			t.Fatal(err)
		}

		if err := os.WriteFile(filepath.Join(dir, "boot", "vmlinuz-"+rel), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// An image without modules does not count.
	if err := os.WriteFile(filepath.Join(dir, "boot", "vmlinuz-6.1.0-999-cloud-amd64"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}

	k, err := FindKernel(dir)
	if err != nil {
		t.Fatal(err)
	}

	if k.Release != "6.1.0-100-cloud-amd64" || k.ModulesDir != filepath.Join(dir, "lib", "modules", k.Release) {
		t.Errorf("got %+v, want release 6.1.0-100-cloud-amd64", k)
	}
}
