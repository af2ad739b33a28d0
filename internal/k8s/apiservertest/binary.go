package apiservertest

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/internal/images"
	"github.com/talosbox/talosbox/internal/imagestore"
)

// kubeBinary is where the kube-apiserver image keeps the Kubernetes
// multi-call binary (internal/imagebuild/recipes.go); kube-apiserver is a
// symlink to it there.
const kubeBinary = "usr/local/bin/kubernetes"

// Binary returns a kube-apiserver of Kubernetes version v (images.Kubernetes
// when empty) to run: $TALOSBOX_KUBE_APISERVER if set, otherwise the binary
// in the kube-apiserver image of the build `make images` leaves in
// _out/images/oci ($TALOSBOX_IMAGES elsewhere), extracted once beside that
// layout and reused while the layer is unchanged. Without either the test
// fails, telling to run make images, as the project's other image tests do.
func Binary(t testing.TB, v string) string {
	t.Helper()

	if p := os.Getenv("TALOSBOX_KUBE_APISERVER"); p != "" {
		return p
	}

	if v == "" {
		v = images.Kubernetes
	}

	p, err := extract(v)
	if err != nil {
		t.Fatalf("no kube-apiserver %s: %v (run make images)", v, err)
	}

	return p
}

// layoutDir is the OCI layout of the image build.
func layoutDir() (string, error) {
	if d := os.Getenv("TALOSBOX_IMAGES"); d != "" {
		return filepath.Abs(d)
	}

	root, err := moduleRoot()
	if err != nil {
		return "", err
	}

	return filepath.Join(root, "_out", "images", "oci"), nil
}

// moduleRoot is the directory of talosbox's go.mod above the working
// directory (a test runs in its package's directory).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("module root: %w", err)
	}

	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}

		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("module root: no go.mod above the working directory")
		}

		dir = parent
	}
}

// extract copies the multi-call binary out of the kube-apiserver image's
// layer into <layout>/../apiservertest/<layer digest>/kube-apiserver (the
// name it dispatches on), unless an earlier run already did.
func extract(v string) (string, error) {
	dir, err := layoutDir()
	if err != nil {
		return "", err
	}

	st, err := imagestore.Open(dir)
	if err != nil {
		return "", err
	}

	ref := images.APIServer(v).String()

	im, ok := st.Lookup(ref)
	if !ok {
		return "", fmt.Errorf("%s is not in %s", ref, dir)
	}

	img, err := st.Image(im)
	if err != nil {
		return "", fmt.Errorf("%s: %w", ref, err)
	}

	layers, err := img.Layers()
	if err != nil {
		return "", fmt.Errorf("%s: layers: %w", ref, err)
	}

	// The binary's layer is the last one holding it; search from the top.
	for i := len(layers) - 1; i >= 0; i-- {
		digest, err := layers[i].Digest()
		if err != nil {
			return "", fmt.Errorf("%s: layer %d: %w", ref, i, err)
		}

		dst := filepath.Join(filepath.Dir(dir), "apiservertest", digest.Hex[:16], "kube-apiserver")
		if _, err := os.Stat(dst); err == nil {
			return dst, nil
		}

		rc, err := layers[i].Uncompressed()
		if err != nil {
			return "", fmt.Errorf("%s: layer %s: %w", ref, digest, err)
		}

		found, err := extractFile(rc, kubeBinary, dst)
		rc.Close()

		if err != nil {
			return "", fmt.Errorf("%s: layer %s: %w", ref, digest, err)
		}

		if found {
			return dst, nil
		}
	}

	return "", fmt.Errorf("%s has no /%s", ref, kubeBinary)
}

// extractFile writes the regular file name of the tar stream r to dst,
// through a temporary file renamed into place, so tests of several
// packages extracting at once never run a half-written binary.
func extractFile(r io.Reader, name, dst string) (bool, error) {
	tr := tar.NewReader(r)

	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return false, nil
		}

		if err != nil {
			return false, fmt.Errorf("read layer: %w", err)
		}

		// Names may be written "usr/…", "./usr/…" or "/usr/…".
		if strings.TrimPrefix(filepath.Clean("/"+h.Name), "/") != name || h.Typeflag != tar.TypeReg {
			continue
		}

		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return false, fmt.Errorf("extract: %w", err)
		}

		f, err := os.CreateTemp(filepath.Dir(dst), ".kube-apiserver-*")
		if err != nil {
			return false, fmt.Errorf("extract: %w", err)
		}

		_, err = io.Copy(f, tr)
		if cerr := f.Close(); err == nil {
			err = cerr
		}

		if err == nil {
			err = os.Chmod(f.Name(), 0o755)
		}

		if err == nil {
			err = os.Rename(f.Name(), dst)
		}

		if err != nil {
			os.Remove(f.Name())

			return false, fmt.Errorf("extract %s: %w", name, err)
		}

		return true, nil
	}
}
