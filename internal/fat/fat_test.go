package fat

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// judge writes img as a volume of size bytes and has Debian's fsck.fat
// (dosfstools) check it read-only; mtools then reads it back.
func judge(t *testing.T, img []byte, size int64) string {
	t.Helper()

	for _, tool := range []string{"fsck.fat", "mcopy", "minfo"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s (dosfstools, mtools: scripts/install-deps.sh): %v", tool, err)
		}
	}

	path := filepath.Join(t.TempDir(), "fat.img")
	if err := os.WriteFile(path, img, 0o644); err != nil {
		t.Fatal(err)
	}

	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}

	if out, err := exec.Command("fsck.fat", "-n", "-v", path).CombinedOutput(); err != nil {
		t.Fatalf("fsck.fat -n: %v\n%s", err, out)
	}

	return path
}

func mtools(t *testing.T, args ...string) string {
	t.Helper()

	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "MTOOLS_SKIP_CHECK=1")

	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}

	return string(out)
}

func TestRenderReadsBack(t *testing.T) {
	big := bytes.Repeat([]byte("grub core image "), 150000) // 2.4 MB: many clusters
	many := make([]File, 0, 40)

	for i := range 40 { // more entries than one cluster of a directory holds at 512-byte clusters
		many = append(many, File{Path: fmt.Sprintf("EFI/MANY/F%02d.TXT", i), Data: fmt.Appendf(nil, "file %d\n", i)})
	}

	for _, tc := range []struct {
		name  string
		size  int64
		files []File
	}{
		{"an ESP of 100 MiB", 100 << 20, []File{{Path: "EFI/BOOT/BOOTX64.EFI", Data: big}}},
		{"an El Torito image", 4 << 20, []File{{Path: "EFI/BOOT/BOOTX64.EFI", Data: big[:1<<20]}}},
		{"the smallest FAT16", 2200 << 10, []File{{Path: "A.TXT", Data: []byte("a")}}},
		{"a large volume", 1 << 30, []File{{Path: "X/Y/Z/DEEP.BIN", Data: big[:70000]}}},
		{"empty files and a full directory", 8 << 20, append([]File{{Path: "EMPTY"}, {Path: "EFI/BOOT/EMPTY.EFI"}}, many...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stamp := time.Date(2026, 11, 29, 1, 2, 4, 0, time.UTC)

			img, err := Render(tc.size, tc.files, Options{Label: "EFI", Serial: 0x1234abcd, ModTime: stamp})
			if err != nil {
				t.Fatal(err)
			}

			path := judge(t, img, tc.size)

			if info := mtools(t, "minfo", "-i", path, "::"); !strings.Contains(info, "serial number: 1234ABCD") ||
				!strings.Contains(info, `disk label="EFI        "`) {
				t.Errorf("minfo: want serial 1234ABCD and label EFI:\n%s", info)
			}

			if l := mtools(t, "mlabel", "-i", path, "-s", "::"); !strings.Contains(l, "Volume label is EFI") {
				t.Errorf("mlabel -s: the root directory's label entry: %q", l)
			}

			for _, f := range tc.files {
				if got := mtools(t, "mtype", "-i", path, "::"+f.Path); got != string(f.Data) {
					t.Errorf("%s: mtype read %d bytes, want %d", f.Path, len(got), len(f.Data))
				}
			}

			dir := filepath.Dir(tc.files[len(tc.files)-1].Path)
			if ls := mtools(t, "mdir", "-i", path, "::"+dir); !strings.Contains(ls, "2026-11-29") {
				t.Errorf("mdir ::%s: the entries' date is not the one given:\n%s", dir, ls)
			}
		})
	}
}

func TestRenderIsAFunctionOfItsInputs(t *testing.T) {
	files := []File{{Path: "EFI/BOOT/BOOTX64.EFI", Data: []byte("one")}, {Path: "EFI/BOOT/GRUB.CFG", Data: []byte("two")}}
	o := Options{Label: "EFI", Serial: 7}

	sum := func(files []File, o Options) [32]byte {
		img, err := Render(4<<20, files, o)
		if err != nil {
			t.Fatal(err)
		}

		return sha256.Sum256(img)
	}

	first := sum(files, o)
	if sum([]File{files[1], files[0]}, o) != first {
		t.Error("the order the files are given in changed the image")
	}

	o2 := o
	o2.Serial = 8

	if sum(files, o2) == first {
		t.Error("another serial gave the same image")
	}

	o3 := o
	o3.ModTime = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

	if sum(files, o3) == first {
		t.Error("another time gave the same image")
	}
}

func TestRenderRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		size  int64
		files []File
		o     Options
		want  string
	}{
		{"too small", 1 << 20, nil, Options{}, "fewer than FAT16's 4085"},
		{"too large", 8 << 30, nil, Options{}, "too large for FAT16"},
		{"not sectors", 4<<20 + 1, nil, Options{}, "not a multiple of 512"},
		{"a long name", 4 << 20, []File{{Path: "EFI/BOOT/bootx64.efi"}}, Options{}, "only upper-case 8.3 names"},
		{"a name too long", 4 << 20, []File{{Path: "VERYLONGNAME.EFI"}}, Options{}, "not an 8.3 name"},
		{"twice", 4 << 20, []File{{Path: "A/B"}, {Path: "A/B"}}, Options{}, "given twice"},
		{"a file as a directory", 4 << 20, []File{{Path: "A"}, {Path: "A/B"}}, Options{}, "given twice, or a file where a directory is needed"},
		{"files larger than the volume", 4 << 20, []File{{Path: "A", Data: make([]byte, 5<<20)}}, Options{}, "need more than the volume's"},
		{"a bad label", 4 << 20, nil, Options{Label: "lower"}, `label "lower"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Render(tc.size, tc.files, tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Render: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func BenchmarkRenderESP(b *testing.B) {
	files := []File{{Path: "EFI/BOOT/BOOTX64.EFI", Data: make([]byte, 2<<20)}}

	for b.Loop() {
		if _, err := Render(100<<20, files, Options{Label: "EFI"}); err != nil {
			b.Fatal(err)
		}
	}
}
