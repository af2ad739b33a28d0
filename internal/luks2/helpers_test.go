package luks2

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// Costs small enough for a 2-core machine; the shapes (types, hashes,
// lanes) are what matter for interoperability.
var (
	fastPBKDF2 = PBKDF{Type: KDFPBKDF2, Iterations: 1000}
	fastArgon  = PBKDF{Type: KDFArgon2id, Iterations: 4, Memory: 32 << 10, Parallel: 1}
)

// newImage returns an open sparse image file of size bytes.
func newImage(t *testing.T, size int64) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "disk.img"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	return f
}

// formatted returns a 20 MiB image formatted with pass in slot 0.
func formatted(t *testing.T, pass string, opts FormatOptions) (*os.File, []byte) {
	t.Helper()
	f := newImage(t, 20<<20)
	if opts.PBKDF == (PBKDF{}) {
		opts.PBKDF = fastPBKDF2
	}
	if opts.DigestIterations == 0 {
		opts.DigestIterations = 1000
	}
	vk, err := Format(f, nil, []byte(pass), opts)
	if err != nil {
		t.Fatalf("Format: %v", err)
	}
	return f, vk
}

func mustRead(t *testing.T, dev *os.File) *Header {
	t.Helper()
	h, err := ReadHeader(dev)
	if err != nil {
		t.Fatalf("ReadHeader: %v", err)
	}
	return h
}

func writeAt(t *testing.T, f *os.File, off int64, b []byte) {
	t.Helper()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func readAt(t *testing.T, f *os.File, off int64, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	return b
}

// jsonEqual compares two JSON documents by value.
func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%v in %s", err, a)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	return reflect.DeepEqual(x, y)
}

func isZero(b []byte) bool { return len(bytes.Trim(b, "\x00")) == 0 }
