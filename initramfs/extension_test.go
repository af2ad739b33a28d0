package initramfs

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// extension lays out a Talos-style extension: manifest.yaml and rootfs/.
func extension(t *testing.T, manifest string, files map[string]string) string {
	t.Helper()

	dir := t.TempDir()
	for name, data := range map[string]string{"manifest.yaml": manifest} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	if err := os.Mkdir(filepath.Join(dir, "rootfs"), 0o755); err != nil {
		t.Fatal(err)
	}

	for name, data := range files {
		p := filepath.Join(dir, "rootfs", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}

		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	return dir
}

const helloManifest = "version: v1alpha1\nmetadata:\n  name: hello\n  version: 1.0.0\n  author: talosbox\n"

func TestExtensions(t *testing.T) {
	dir := extension(t, helloManifest, map[string]string{"usr/local/share/hello/hello.txt": "hello from an extension\n"})

	e, err := ReadExtension(dir)
	if err != nil {
		t.Fatal(err)
	}

	if e.Name != "hello" || e.Version != "1.0.0" {
		t.Errorf("ReadExtension: %+v", e)
	}

	a := New()
	if err := a.File("init", os.Args[0], 0o755); err != nil {
		t.Fatal(err)
	}

	if err := a.addExtensions([]Extension{e}); err != nil {
		t.Fatal(err)
	}

	for _, name := range []string{"usr/local/share/hello/hello.txt", ExtensionsDir + "/hello.yaml"} {
		if !a.Has(name) {
			t.Errorf("the archive lacks /%s: %v", name, a.Names())
		}
	}

	var out bytes.Buffer
	if _, err := a.WriteTo(&out); err != nil {
		t.Fatal(err)
	}

	if !bytes.Contains(out.Bytes(), []byte("hello from an extension\n")) || !bytes.Contains(out.Bytes(), []byte(helloManifest)) {
		t.Error("the file or the manifest is not in the written archive")
	}
}

func TestExtensionsRefuse(t *testing.T) {
	for _, tc := range []struct {
		name, manifest string
		files          map[string]string
		want           string
	}{
		{"a bad manifest version", "version: v2\nmetadata: {name: x, version: '1'}\n", nil, `version "v2", want v1alpha1`},
		{"a name that is a path", "version: v1alpha1\nmetadata: {name: ../x, version: '1'}\n", nil, `metadata.name "../x"`},
		{"no version", "version: v1alpha1\nmetadata: {name: x}\n", nil, "no metadata.version"},
		{"malformed YAML", "version: [\n", nil, "manifest.yaml: yaml:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ReadExtension(extension(t, tc.manifest, tc.files)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ReadExtension: %v, want %q", err, tc.want)
			}
		})
	}

	if _, err := ReadExtension(t.TempDir()); err == nil || !strings.Contains(err.Error(), "manifest.yaml") {
		t.Errorf("a directory without a manifest: %v", err)
	}

	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"replacing /init", map[string]string{"init": "x"}, "/init is in the archive already"},
		{"a kernel module", map[string]string{"lib/modules/6.1/extra/x.ko": "x"}, "kernel modules come from the kernel's tree"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := ReadExtension(extension(t, helloManifest, tc.files))
			if err != nil {
				t.Fatal(err)
			}

			a := New()
			if err := a.File("init", os.Args[0], 0o755); err != nil {
				t.Fatal(err)
			}

			if err := a.addExtensions([]Extension{e}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("addExtensions: %v, want %q", err, tc.want)
			}
		})
	}

	e, _ := ReadExtension(extension(t, helloManifest, nil))
	if err := New().addExtensions([]Extension{e, e}); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("the same extension twice: %v", err)
	}
}
