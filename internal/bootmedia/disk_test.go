package bootmedia

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/internal/bootloader"
	"github.com/talosbox/talosbox/internal/disk"
	"github.com/talosbox/talosbox/internal/meta"
)

// run runs a Debian tool the test judges the image with.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()

	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}

	return string(out)
}

// TestDiskImage judges the raw image with the tools a user's machine
// would: sfdisk reads the GPT, e2fsck and debugfs BOOT, fsck.fat the EFI
// partition; META decodes as an empty store, STATE and EPHEMERAL are
// empty, and the MBR holds GRUB's boot code pointing at the BIOS boot
// partition.
func TestDiskImage(t *testing.T) {
	o := inputs(t)
	o.Cmdline = append(DefaultCmdline, "talos.platform=nocloud")
	img := filepath.Join(t.TempDir(), DiskImageName)

	if err := DiskImage(context.Background(), o, img); err != nil {
		t.Fatal(err)
	}

	f, err := os.Open(img)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	if st, _ := f.Stat(); st.Size() != disk.MinDiskSize(ImageLayout()) {
		t.Errorf("image of %d bytes, want %d", st.Size(), disk.MinDiskSize(ImageLayout()))
	}

	if out := run(t, "sfdisk", "--verify", img); !strings.Contains(out, "No errors detected") {
		t.Errorf("sfdisk --verify:\n%s", out)
	}

	var table struct {
		PartitionTable struct {
			ID         string `json:"id"`
			Partitions []struct {
				Start, Size uint64
				Type, Name  string
				UUID        string
			} `json:"partitions"`
		} `json:"partitiontable"`
	}

	if err := json.Unmarshal([]byte(run(t, "sfdisk", "--json", img)), &table); err != nil {
		t.Fatal(err)
	}

	if got := table.PartitionTable.ID; got != o.guid("disk") {
		t.Errorf("disk GUID %s, want %s (from the version and the epoch)", got, o.guid("disk"))
	}

	part := map[string]disk.Region{}

	var names []string

	for _, p := range table.PartitionTable.Partitions {
		names = append(names, fmt.Sprintf("%s:%dMiB", p.Name, p.Size*disk.SectorSize/disk.MiB))
		part[p.Name] = disk.Region{File: f, Offset: int64(p.Start * disk.SectorSize), Size: int64(p.Size * disk.SectorSize)}
	}

	if got, want := strings.Join(names, " "), "EFI:100MiB BIOS:1MiB BOOT:2000MiB META:1MiB STATE:100MiB EPHEMERAL:1MiB"; got != want {
		t.Errorf("partitions %s, want %s", got, want)
	}

	boot := fmt.Sprintf("%s?offset=%d", img, part[disk.LabelBoot].Offset)
	run(t, "e2fsck", "-fn", boot)

	if out := run(t, "debugfs", "-R", "stat /A/vmlinuz", boot); !strings.Contains(out, "User:     0   Group:     0") {
		t.Errorf("A/vmlinuz is not root's:\n%s", out)
	}

	cfgText := run(t, "debugfs", "-R", "cat /grub/grub.cfg", boot)

	conf, err := bootloader.Parse([]byte(cfgText[strings.Index(cfgText, "\n")+1:]))
	if err != nil {
		t.Fatalf("grub.cfg: %v\n%s", err, cfgText)
	}

	if e, ok := conf.Entry(bootloader.LabelA); conf.Default != bootloader.LabelA || !ok || e.Version != o.Version ||
		e.Cmdline != strings.Join(o.Cmdline, " ") || !conf.Serial {
		t.Errorf("grub.cfg: %+v, want slot A, %s, %q, serial", conf, o.Version, strings.Join(o.Cmdline, " "))
	}

	dump := filepath.Join(t.TempDir(), "vmlinuz")
	run(t, "debugfs", "-R", "dump /A/vmlinuz "+dump, boot)

	if got, want := readFile(t, dump), readFile(t, o.Kernel); !bytes.Equal(got, want) {
		t.Errorf("A/vmlinuz: %d bytes, want the kernel's %d", len(got), len(want))
	}

	esp := filepath.Join(t.TempDir(), "esp.img")
	if err := os.WriteFile(esp, regionBytes(t, part[disk.LabelEFI]), 0o644); err != nil {
		t.Fatal(err)
	}

	run(t, "fsck.fat", "-n", esp)

	if out := run(t, "mdir", "-i", esp, "::/EFI/BOOT"); !strings.Contains(out, "BOOTX64  EFI") {
		t.Errorf("the EFI partition has no EFI/BOOT/BOOTX64.EFI:\n%s", out)
	}

	m, err := meta.Decode(regionBytes(t, part[disk.LabelMeta]))
	if err != nil || len(m.List()) != 0 || m.Blank() || len(m.Damaged()) != 0 {
		t.Errorf("META: %v, %+v, want an empty, written store", err, m)
	}

	for _, l := range []string{disk.LabelState, disk.LabelEphemeral} {
		if !bytes.Equal(regionBytes(t, part[l]), make([]byte, part[l].Size)) {
			t.Errorf("%s is not empty: the node makes it", l)
		}
	}

	mbr := make([]byte, 512)
	if _, err := f.ReadAt(mbr, 0); err != nil {
		t.Fatal(err)
	}

	// boot.img's kernel sector points at core.img, the BIOS partition.
	if got, want := binary.LittleEndian.Uint64(mbr[0x5c:]), uint64(part[disk.LabelBIOS].Offset/disk.SectorSize); got != want || mbr[510] != 0x55 || mbr[511] != 0xaa {
		t.Errorf("MBR: kernel sector %d, want %d (the BIOS partition); signature % x", got, want, mbr[510:])
	}

	if core := regionBytes(t, part[disk.LabelBIOS]); bytes.Equal(core[:512], make([]byte, 512)) {
		t.Errorf("the BIOS boot partition holds no core.img")
	}
}

// TestDiskImageIsReproducible builds the image twice, a second apart and
// in different directories, raw and then as .zst (one encoder goroutine,
// so the same frames anywhere): the .zst expands, as a sparse file, to
// the raw image's bytes.
func TestDiskImageIsReproducible(t *testing.T) {
	o := inputs(t)

	raw := filepath.Join(t.TempDir(), DiskImageName)
	if err := DiskImage(context.Background(), o, raw); err != nil {
		t.Fatal(err)
	}

	sum := digest(t, raw)

	// The second build is the compressed one, on a later wall clock: its
	// expansion matching the raw image's bytes shows both that a build
	// repeats exactly and that the .zst holds the same image.
	time.Sleep(time.Second) // a different wall clock for the second build, not a synchronisation

	zst := filepath.Join(t.TempDir(), DiskImageName+".zst")
	if err := DiskImage(context.Background(), o, zst); err != nil {
		t.Fatal(err)
	}

	if _, err := os.Stat(strings.TrimSuffix(zst, ".zst") + ".tmp"); err == nil {
		t.Errorf("the uncompressed image was left behind")
	}

	if st, err := os.Stat(zst); err != nil || st.Size() > 4<<20 {
		t.Errorf("compressed image: %v, %d bytes: the empty space should compress away", err, st.Size())
	}

	if err := ExpandImage(zst, filepath.Join(t.TempDir(), "small.img"), 1<<30); !errors.Is(err, ErrImageTooLarge) {
		t.Errorf("expand onto 1 GiB: %v, want ErrImageTooLarge", err)
	}

	expanded := filepath.Join(t.TempDir(), "disk.img")
	if err := ExpandImage(zst, expanded, disk.MinDiskSize(ImageLayout())); err != nil {
		t.Fatal(err)
	}

	if got := digest(t, expanded); got != sum {
		t.Errorf("two builds differ: the .zst expands to %s, the raw image is %s", got, sum)
	}

	var st unix.Stat_t
	if err := unix.Stat(expanded, &st); err != nil || st.Blocks*512 > 64<<20 {
		t.Errorf("the expanded image takes %d bytes on disk: not sparse", st.Blocks*512)
	}
}

// digest is sha256 over a file's size and its blocks that are not all
// zeros, each with its offset: the same for two files with the same
// bytes however their holes lie, and quick on images that are mostly
// holes (SEEK_DATA skips them).
func digest(t *testing.T, p string) string {
	t.Helper()

	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}

	h := sha256.New()
	fmt.Fprintf(h, "%d\n", st.Size())

	buf := make([]byte, sparseBlock)

	for off := int64(0); off < st.Size(); {
		data, err := unix.Seek(int(f.Fd()), off, unix.SEEK_DATA)
		if err != nil { // ENXIO: nothing but holes from off
			break
		}

		hole, err := unix.Seek(int(f.Fd()), data, unix.SEEK_HOLE)
		if err != nil {
			t.Fatal(err)
		}

		for b := data / sparseBlock * sparseBlock; b < hole; b += sparseBlock {
			n, err := f.ReadAt(buf, b)
			if err != nil && err != io.EOF {
				t.Fatal(err)
			}

			if !allZero(buf[:n]) {
				fmt.Fprintf(h, "%d\n", b)
				h.Write(buf[:n])
			}
		}

		off = (hole + sparseBlock - 1) / sparseBlock * sparseBlock
	}

	return hex.EncodeToString(h.Sum(nil))
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()

	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}

	return b
}

func regionBytes(t *testing.T, r disk.Region) []byte {
	t.Helper()

	b := make([]byte, r.Size)
	if _, err := r.File.ReadAt(b, r.Offset); err != nil {
		t.Fatal(err)
	}

	return b
}
