package machine_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/internal/machine"
	"github.com/talosbox/talosbox/internal/resources/runtime"
)

func TestReadExtensions(t *testing.T) {
	dir := t.TempDir()

	for name, text := range map[string]string{
		"zfs.yaml":   "version: v1alpha1\nmetadata:\n  name: zfs\n  version: 2.3.1\n  author: Sidero Labs\n  description: ZFS\n  compatibility:\n    talos:\n      version: '>= v1.9.0'\n",
		"hello.yaml": "version: v1alpha1\nmetadata:\n  name: hello\n  version: 1.0.0\n",
		"README":     "not a manifest",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	got, err := machine.ReadExtensions(dir)
	if err != nil {
		t.Fatal(err)
	}

	if len(got) != 2 || got[0].Metadata.Name != "hello" || got[1].Metadata.Name != "zfs" {
		t.Fatalf("extensions %+v, want hello then zfs", got)
	}

	zfs := got[1]
	if zfs.Image != "zfs.sqsh" || zfs.Metadata.Version != "2.3.1" || zfs.Metadata.Author != "Sidero Labs" || zfs.Metadata.Compatibility.Talos.Version != ">= v1.9.0" {
		t.Errorf("zfs: %+v", zfs)
	}

	if got, err := machine.ReadExtensions(filepath.Join(dir, "missing")); err != nil || got != nil {
		t.Errorf("no directory: %v %v, want no extensions", got, err)
	}

	if err := os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("metadata: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	if _, err := machine.ReadExtensions(dir); err == nil || !strings.Contains(err.Error(), "bad.yaml") {
		t.Errorf("a malformed manifest: %v, want an error naming it", err)
	}
}

// TestReadSecurityState reads fixture trees laid out as sysfs and procfs
// are. The Secure Boot variable is a fixture (named so): this machine has
// no UEFI firmware to enable it on; the QEMU tests read OVMF's real one.
func TestReadSecurityState(t *testing.T) {
	write := func(t *testing.T, root, path string, data []byte) {
		t.Helper()

		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(path)), 0o755); err != nil {
			t.Fatal(err)
		}

		if err := os.WriteFile(filepath.Join(root, path), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	sys, proc := t.TempDir(), t.TempDir()

	if got := machine.ReadSecurityState(sys, proc); got != (runtime.SecurityStateSpec{SELinuxState: "disabled", FIPSState: "disabled"}) {
		t.Errorf("an empty tree: %+v", got)
	}

	write(t, sys, "firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-e0cb4e1c2b8c", []byte{6, 0, 0, 0, 1})
	write(t, sys, "fs/selinux/enforce", []byte("0"))
	write(t, sys, "module/module/parameters/sig_enforce", []byte("Y\n"))
	write(t, proc, "sys/crypto/fips_enabled", []byte("1\n"))

	want := runtime.SecurityStateSpec{SecureBoot: true, SELinuxState: "permissive", FIPSState: "enabled", ModuleSignatureEnforced: true}
	if got := machine.ReadSecurityState(sys, proc); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}

	write(t, sys, "firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-e0cb4e1c2b8c", []byte{6, 0, 0, 0, 0})
	if got := machine.ReadSecurityState(sys, proc); got.SecureBoot {
		t.Error("SecureBoot variable 0 read as enabled")
	}
}
