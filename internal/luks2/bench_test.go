package luks2

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The cost both sides run: argon2id, 4 passes over 64 MiB on 2 lanes
// (what nodePBKDF gives a 512 MiB node), fixed so that neither side
// benchmarks.
const (
	benchPasses = 4
	benchMemory = 64 << 10 // KiB
	benchLanes  = 2
)

// BenchmarkUnlock opens one header made by cryptsetup: talosbox's Unlock
// against `cryptsetup open --test-passphrase` on the same file, the KDF
// being nearly all of either. scripts/bench-luks.sh runs it.
func BenchmarkUnlock(b *testing.B) {
	if _, err := exec.LookPath("cryptsetup"); err != nil {
		b.Fatalf("cryptsetup is the peer (scripts/install-deps.sh installs it): %v", err)
	}

	img := filepath.Join(b.TempDir(), "vol.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		b.Fatal(err)
	}

	if err := os.Truncate(img, 20<<20); err != nil {
		b.Fatal(err)
	}

	cmd := exec.Command("cryptsetup", "luksFormat", "--type", "luks2", "--batch-mode", "--key-file=-",
		"--pbkdf", "argon2id", "--pbkdf-force-iterations", "4", "--pbkdf-memory", "65536", "--pbkdf-parallel", "2", img)
	cmd.Stdin = strings.NewReader("secret")

	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("cryptsetup luksFormat: %v\n%s", err, out)
	}

	f, err := os.Open(img)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()

	b.Run("talosbox", func(b *testing.B) {
		for b.Loop() {
			vk, _, err := Unlock(f, []byte("secret"))
			if err != nil {
				b.Fatal(err)
			}

			clear(vk)
		}
	})

	b.Run("cryptsetup", func(b *testing.B) {
		for b.Loop() {
			cmd := exec.Command("cryptsetup", "open", "--test-passphrase", "--key-file=-", img)
			cmd.Stdin = strings.NewReader("secret")

			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("cryptsetup open --test-passphrase: %v\n%s", err, out)
			}
		}
	})
}

// BenchmarkFormat is a header write with one key slot at the same cost:
// what an install adds per encrypted volume, KDF included.
func BenchmarkFormat(b *testing.B) {
	img := filepath.Join(b.TempDir(), "vol.img")

	f, err := os.Create(img)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()

	if err := f.Truncate(20 << 20); err != nil {
		b.Fatal(err)
	}

	opts := FormatOptions{PBKDF: PBKDF{Type: KDFArgon2id, Iterations: benchPasses, Memory: benchMemory, Parallel: benchLanes}, DigestIterations: 1000}

	for b.Loop() {
		vk, err := Format(f, nil, []byte("secret"), opts)
		if err != nil {
			b.Fatal(err)
		}

		clear(vk)
	}
}
