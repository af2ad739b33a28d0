package provision

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBuildContext(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "talosbox")
	if err := os.WriteFile(bin, []byte("\x7fELF"), 0o644); err != nil {
		t.Fatal(err)
	}
	buf, err := buildContext(BuildRequest{
		Tag:     "t:1",
		Binary:  bin,
		Applets: []string{"talosctl", "/sbin/init", "/opt/bin/x", "talosctl"},
		Env:     []string{`TALOSBOX_PLATFORM=container`, `ODD=a "b" $c \d`},
		Cmd:     []string{"--state-dir", StateDir},
		// The kubelet's OS image.
		OSRelease: []byte("PRETTY_NAME=\"talosbox (v1.2.3)\"\n"),
		Files:     map[string]string{"/usr/sbin/xtables-nft-multi": bin},
		// Kept as links: a multicall program dispatches on its name.
		Links: map[string]string{"/usr/sbin/iptables": "xtables-nft-multi", "/lib/x86_64-linux-gnu/ld.so": "/lib64/ld.so"},
	})
	if err != nil {
		t.Fatal(err)
	}

	entries := map[string]*tar.Header{}
	var dockerfile string
	tr := tar.NewReader(buf)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, dup := entries[h.Name]; dup {
			t.Errorf("duplicate entry %s", h.Name)
		}
		entries[h.Name] = h
		if h.Name == "Dockerfile" {
			b, _ := io.ReadAll(tr)
			dockerfile = string(b)
		}
		if h.Name == "rootfs/etc/os-release" {
			if b, _ := io.ReadAll(tr); string(b) != "PRETTY_NAME=\"talosbox (v1.2.3)\"\n" || h.Mode != 0o644 {
				t.Errorf("os-release %q, mode %o", b, h.Mode)
			}
		}
	}

	for _, want := range []string{
		"FROM scratch\n", "COPY rootfs/ /\n", `ENV TALOSBOX_PLATFORM="container"`,
		`ENV ODD="a \"b\" \$c \\d"`, `ENTRYPOINT ["/talosbox","machined"]`, `CMD ["--state-dir","/var/lib/talosbox"]`,
	} {
		if !strings.Contains(dockerfile, want) {
			t.Errorf("Dockerfile lacks %q:\n%s", want, dockerfile)
		}
	}
	if h := entries["rootfs/talosbox"]; h == nil || h.Mode != 0o755 || h.Size != 4 {
		t.Errorf("binary entry %+v", h)
	}
	if h := entries["rootfs/tmp/"]; h == nil || h.Mode != 0o1777 {
		t.Errorf("/tmp entry %+v", h)
	}
	for _, l := range []string{"rootfs/usr/local/bin/talosctl", "rootfs/sbin/init", "rootfs/opt/bin/x"} {
		if h := entries[l]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "/talosbox" {
			t.Errorf("applet %s: %+v", l, h)
		}
	}
	for l, target := range map[string]string{"rootfs/usr/sbin/iptables": "xtables-nft-multi", "rootfs/lib/x86_64-linux-gnu/ld.so": "/lib64/ld.so"} {
		if h := entries[l]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != target {
			t.Errorf("link %s: %+v, want one to %s", l, h, target)
		}
	}
	if h := entries["rootfs/lib/x86_64-linux-gnu/"]; h == nil || h.Typeflag != tar.TypeDir {
		t.Errorf("a link's directory: %+v", h)
	}
	if entries["rootfs/etc/os-release"] == nil {
		t.Error("no /etc/os-release")
	}
	for _, d := range []string{"rootfs/opt/", "rootfs/opt/bin/", "rootfs/var/lib/talosbox/", "rootfs/proc/"} {
		if h := entries[d]; h == nil || h.Typeflag != tar.TypeDir {
			t.Errorf("directory %s: %+v", d, h)
		}
	}
}

func TestBuildContextRejects(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "talosbox")
	if err := os.WriteFile(bin, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, req := range map[string]BuildRequest{
		"missing binary":  {Binary: bin + ".missing"},
		"directory":       {Binary: filepath.Dir(bin)},
		"applet slash":    {Binary: bin, Applets: []string{"a/b"}},
		"applet root":     {Binary: bin, Applets: []string{"/talosbox"}},
		"env key":         {Binary: bin, Env: []string{"1X=y"}},
		"env newline":     {Binary: bin, Env: []string{"X=a\nRUN x"}},
		"relative link":   {Binary: bin, Links: map[string]string{"usr/sbin/iptables": "x"}},
		"link over file":  {Binary: bin, Files: map[string]string{"/bin/x": bin}, Links: map[string]string{"/bin/x": "y"}},
		"link to nothing": {Binary: bin, Links: map[string]string{"/bin/x": ""}},
		"link over init":  {Binary: bin, Applets: []string{"/sbin/init"}, Links: map[string]string{"/sbin/init": "y"}},
	} {
		if _, err := buildContext(req); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
