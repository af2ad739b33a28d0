package bootmedia

import (
	"bytes"
	"os"
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
