package meta_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/talosbox/talosbox/internal/meta"
)

// reference is a partition image written by Talos's own ADV code
// (testdata/README.md).
func reference(t testing.TB, name string) []byte {
	t.Helper()

	f, err := os.Open(filepath.Join("testdata", name+".img.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}

	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}

	if len(b) != partLen {
		t.Fatalf("%s: %d bytes", name, len(b))
	}

	return b
}

const encryptionJSON = `{"provider":"luks2","keys":[{"slot":0,"static":{"passphrase":"s3cret"}}]}`

// Talos's images read as Talos wrote them, and this package writes the
// same bytes for the same tags (one tag or none: with more, Talos's order
// is its map's).
func TestTalosReferenceImages(t *testing.T) {
	tests := []struct {
		name   string
		tags   map[uint8]string // Talos ADV
		legacy map[uint8]string // syslinux ADV only
		same   bool             // our encoding is byte-identical
	}{
		{"talos-empty", map[uint8]string{}, nil, true},
		{"talos-upgrade", map[uint8]string{meta.Upgrade: "A"}, nil, true},
		{"talos-encryption", map[uint8]string{meta.StateEncryptionConfig: encryptionJSON}, nil, true},
		{"talos-multi", map[uint8]string{meta.Upgrade: "A", meta.StagedUpgradeImageRef: "ghcr.io/siderolabs/installer:v1.11.0", meta.UUIDOverride: "00000000-0000-0000-0000-000000000001"}, nil, false},
		{"talos-legacy", map[uint8]string{meta.UserReserved1: "user data"}, map[uint8]string{meta.Upgrade: "B"}, true},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := reference(t, tt.name)

			m, err := meta.Decode(ref)
			if err != nil {
				t.Fatal(err)
			}

			if got := values(m); !maps.Equal(got, tt.tags) {
				t.Fatalf("tags %q, want %q", got, tt.tags)
			}

			for tag, want := range tt.legacy {
				if v, ok := m.ReadTag(tag); !ok || string(v) != want {
					t.Fatalf("legacy %s = %q %v, want %q", meta.TagID(tag), v, ok, want)
				}
			}

			if len(m.Damaged()) != 0 || m.Blank() {
				t.Fatalf("damaged %v, blank %v", m.Damaged(), m.Blank())
			}

			// Read and written back unchanged.
			out, err := m.Encode()
			if err != nil {
				t.Fatal(err)
			}

			if tt.same && !bytes.Equal(out, ref) {
				t.Fatalf("re-encoded image differs from Talos's at byte %d", firstDiff(out, ref))
			}

			if !tt.same {
				back, err := meta.Decode(out)
				if err != nil || !maps.Equal(values(back), tt.tags) {
					t.Fatalf("re-encoded image reads back as %v (%v)", values(back), err)
				}
			}

			// The same content written from scratch, on a blank partition.
			if tt.legacy != nil {
				return
			}

			fresh, _ := meta.New(partLen)
			for tag, v := range tt.tags {
				if _, err := fresh.SetTag(tag, []byte(v)); err != nil {
					t.Fatal(err)
				}
			}

			if out, _ = fresh.Encode(); tt.same && !bytes.Equal(out, ref) {
				t.Fatalf("a fresh META differs from Talos's at byte %d", firstDiff(out, ref))
			}
		})
	}
}

// Talos's copies are what the hand-built ones in these tests are.
func TestTalosReferenceMatchesSpec(t *testing.T) {
	b := block(rec(0x06, "A"))
	if ref := reference(t, "talos-upgrade"); !bytes.Equal(ref, image(b, b, nil)) {
		t.Fatalf("Talos's image differs from the spec-built one at byte %d", firstDiff(ref, image(b, b, nil)))
	}

	l := reference(t, "talos-legacy")[partLen-2*legacyLen:]
	if !bytes.Equal(l, twice(legacyCopy("\x06B"))) {
		t.Fatalf("Talos's syslinux area differs from the spec-built one at byte %d", firstDiff(l, twice(legacyCopy("\x06B"))))
	}
}
