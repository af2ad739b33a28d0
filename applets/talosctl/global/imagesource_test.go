package global

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestOpenImageArchive: how each kind of argument becomes an archive,
// and the paths a user meant that are not there are not sent to Docker.
func TestOpenImageArchive(t *testing.T) {
	dir := t.TempDir()

	file := filepath.Join(dir, "saved.tar")
	if err := os.WriteFile(file, []byte("archive bytes"), 0o600); err != nil {
		t.Fatal(err)
	}

	layout := filepath.Join(dir, "layout")
	for name, data := range map[string]string{"index.json": "{}", "oci-layout": "{}", "blobs/sha256/aa": "blob"} {
		p := filepath.Join(layout, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}

		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	notLayout := filepath.Join(dir, "plain")
	if err := os.Mkdir(notLayout, 0o755); err != nil {
		t.Fatal(err)
	}

	// A file is used where it is, and not removed.
	a, err := OpenImageArchive(t.Context(), file, nil)
	if err != nil || a.Path != file || a.Size != 13 {
		t.Fatalf("file: %+v, %v", a, err)
	}

	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	if _, err := os.Stat(file); err != nil {
		t.Fatalf("closing removed the user's file: %v", err)
	}

	// An OCI layout is tarred with its files at the archive's root.
	a, err = OpenImageArchive(t.Context(), layout, nil)
	if err != nil {
		t.Fatal(err)
	}

	f, err := os.Open(a.Path)
	if err != nil {
		t.Fatal(err)
	}

	var names []string

	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}

		if err != nil {
			t.Fatal(err)
		}

		if h.Typeflag == tar.TypeReg {
			names = append(names, h.Name)
		}
	}

	f.Close()
	slices.Sort(names)

	if strings.Join(names, " ") != "blobs/sha256/aa index.json oci-layout" {
		t.Errorf("layout tar holds %q", names)
	}

	tmp := a.Path
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("the temporary archive outlived Close: %v", err)
	}

	// stdin is spooled.
	a, err = OpenImageArchive(t.Context(), "-", strings.NewReader("from stdin"))
	if err != nil || a.Size != 10 || a.From != "stdin" {
		t.Fatalf("stdin: %+v, %v", a, err)
	}

	a.Close()

	for _, tc := range []struct{ src, want string }{
		{notLayout, "not an OCI image layout: no index.json"},
		{filepath.Join(dir, "missing.tar"), "no such file or directory"},
		{"./missing", "no such file or directory"},
	} {
		if _, err := OpenImageArchive(t.Context(), tc.src, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.src, err, tc.want)
		}
	}
}
