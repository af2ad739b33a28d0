package bootmedia

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestPXE(t *testing.T) {
	o := inputs(t)
	o.Cmdline = append(DefaultCmdline, "talos.config=http://10.0.2.2:8080/c.yaml")

	for _, tc := range []struct{ base, kernelLine string }{
		{"", "kernel vmlinuz-amd64 talos.platform=metal console=ttyS0 console=tty0 talos.config=http://10.0.2.2:8080/c.yaml\n"},
		{"http://10.0.2.2:8081/", "kernel http://10.0.2.2:8081/vmlinuz-amd64 talos.platform"},
	} {
		dir := t.TempDir()
		if err := PXE(o, dir, tc.base); err != nil {
			t.Fatal(err)
		}

		script, err := os.ReadFile(filepath.Join(dir, PXEScript))
		if err != nil {
			t.Fatal(err)
		}

		if !strings.HasPrefix(string(script), "#!ipxe\n") || !strings.Contains(string(script), tc.kernelLine) ||
			!strings.Contains(string(script), "initrd "+tc.base+PXEInitramfs+"\nboot\n") {
			t.Errorf("boot.ipxe (base %q):\n%s", tc.base, script)
		}

		for name, src := range map[string]string{PXEKernel: o.Kernel, PXEInitramfs: o.Initramfs} {
			got, _ := os.ReadFile(filepath.Join(dir, name))
			want, _ := os.ReadFile(src)

			if !bytes.Equal(got, want) {
				t.Errorf("%s: %d bytes, want %d", name, len(got), len(want))
			}
		}

		if st, err := os.Stat(filepath.Join(dir, PXEScript)); err != nil || !st.ModTime().Equal(o.Epoch) {
			t.Errorf("boot.ipxe's time: %v, want the epoch %v", st.ModTime(), o.Epoch)
		}
	}

	if err := PXE(o, t.TempDir(), "http://x/ $y"); err == nil {
		t.Error("a base URL with a space and $ was written")
	}
}

// An embedded config is a second archive after the initramfs, which stays
// as it was; GNU cpio reads the config back, private to root, from where
// the node looks for it.
func TestEmbeddedConfig(t *testing.T) {
	o := inputs(t)
	o.EmbeddedConfig = []byte("version: v1alpha1\nmachine:\n  type: worker\n")
	dir := t.TempDir()

	if err := PXE(o, dir, ""); err != nil {
		t.Fatal(err)
	}

	got, err := os.ReadFile(filepath.Join(dir, PXEInitramfs))
	if err != nil {
		t.Fatal(err)
	}

	orig, _ := os.ReadFile(o.Initramfs)
	if !bytes.HasPrefix(got, orig) {
		t.Fatal("the initramfs changed under the embedded config")
	}

	rest := bytes.TrimLeft(got[len(orig):], "\x00")
	if pad := len(got) - len(orig) - len(rest); (len(orig)+pad)%4 != 0 {
		t.Errorf("the config archive starts at %d, not on a 4-byte boundary", len(orig)+pad)
	}

	cpio := func(args ...string) string {
		t.Helper()

		cmd := exec.Command("cpio", args...)
		cmd.Stdin = bytes.NewReader(rest)

		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("cpio %s (apt-get install cpio): %v", strings.Join(args, " "), err)
		}

		return string(out)
	}

	if list := cpio("-t", "-v", "--quiet"); !strings.Contains(list, "-rw-------") || !strings.Contains(list, "usr/local/etc/talos/config.yaml") {
		t.Errorf("cpio -tv:\n%s", list)
	}

	if cfg := cpio("-i", "--to-stdout", "--quiet", "usr/local/etc/talos/config.yaml"); cfg != string(o.EmbeddedConfig) {
		t.Errorf("the embedded config read back: %q", cfg)
	}

	// Reproducible: the same inputs give the same files.
	again := t.TempDir()
	if err := PXE(o, again, ""); err != nil {
		t.Fatal(err)
	}

	for _, name := range []string{PXEKernel, PXEInitramfs, PXEScript} {
		a, _ := os.ReadFile(filepath.Join(dir, name))
		b, _ := os.ReadFile(filepath.Join(again, name))

		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two builds of the same inputs", name)
		}
	}
}
