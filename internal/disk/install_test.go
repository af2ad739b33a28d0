package disk_test

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/internal/disk"
	"github.com/talosbox/talosbox/internal/meta"
)

// image makes a sparse image file of size bytes, as `truncate -s` does.
func image(t *testing.T, size int64) string {
	t.Helper()

	p := filepath.Join(t.TempDir(), "disk.img")

	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}

	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}

	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	return p
}

// tool finds a Debian tool the test checks against; it fails (not skips)
// without it, as the guest tests do without QEMU.
func tool(t *testing.T, name, pkg string) string {
	t.Helper()

	for _, dir := range []string{"", "/usr/sbin/", "/sbin/"} {
		if p, err := exec.LookPath(dir + name); err == nil {
			return p
		}
	}

	t.Fatalf("%s is required (Debian: apt-get install %s)", name, pkg)

	return ""
}

// sfdiskTable is the part of `sfdisk --json` the tests read.
type sfdiskTable struct {
	PartitionTable struct {
		Label      string `json:"label"`
		SectorSize int    `json:"sectorsize"`
		Partitions []struct {
			Node  string `json:"node"`
			Start uint64 `json:"start"`
			Size  uint64 `json:"size"`
			Type  string `json:"type"`
			Name  string `json:"name"`
		} `json:"partitions"`
	} `json:"partitiontable"`
}

func TestInstallSystemLayout(t *testing.T) {
	sfdisk := tool(t, "sfdisk", "fdisk")
	e2fsck := tool(t, "e2fsck", "e2fsprogs")

	img := image(t, 6*GiB)

	// Leave an old filesystem where META will be: the install must not
	// let it survive.
	plan0, err := disk.Plan(disk.SystemLayout, 6*GiB)
	if err != nil {
		t.Fatal(err)
	}

	writeAt(t, img, plan0[3].Offset(), []byte("XFSB"))

	var log strings.Builder

	plan, err := disk.Install(img, disk.SystemLayout, &log)
	if err != nil {
		t.Fatal(err)
	}

	if !strings.Contains(log.String(), "[talos] partition 5 STATE: 100 MiB, ext4") || !strings.Contains(log.String(), "[talos] partition 4 META: 1.0 MiB, empty META") {
		t.Errorf("install log:\n%s", log.String())
	}

	// The kernel's view of the table is sfdisk's: check it against the plan.
	out, err := exec.Command(sfdisk, "--json", img).Output()
	if err != nil {
		t.Fatalf("sfdisk --json: %v", err)
	}

	var tbl sfdiskTable
	if err := json.Unmarshal(out, &tbl); err != nil {
		t.Fatalf("sfdisk --json: %v\n%s", err, out)
	}

	pt := tbl.PartitionTable
	if pt.Label != "gpt" || pt.SectorSize != 512 || len(pt.Partitions) != len(disk.SystemLayout) {
		t.Fatalf("sfdisk sees %s, sector %d, %d partitions:\n%s", pt.Label, pt.SectorSize, len(pt.Partitions), out)
	}

	for i, p := range pt.Partitions {
		e := plan[i]
		want := fmt.Sprintf("%s%d %s %s start %d size %d", img, e.Index, e.Label, e.Type, e.Start, e.End-e.Start+1)
		got := fmt.Sprintf("%s %s %s start %d size %d", p.Node, p.Name, p.Type, p.Start, p.Size)

		if got != want {
			t.Errorf("partition %d: sfdisk %q, want %q", i+1, got, want)
		}
	}

	if out, err := exec.Command(sfdisk, "--verify", img).CombinedOutput(); err != nil || !strings.Contains(string(out), "No errors detected") {
		t.Errorf("sfdisk --verify: %v\n%s", err, out)
	}

	// go-diskfs reads back what it wrote, indexes included.
	f, err := os.Open(img)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	parts, err := disk.ReadTable(f)
	if err != nil {
		t.Fatal(err)
	}

	for i, p := range parts {
		if p.Index != i+1 || p.Label != plan[i].Label || p.Type != plan[i].Type {
			t.Errorf("read back %+v, want %d %s %s", p, i+1, plan[i].Label, plan[i].Type)
		}
	}

	// META is written, not only partitioned: both copies sealed, no tags,
	// nothing of the old filesystem left.
	metaImg := make([]byte, plan[3].Bytes())
	if _, err := f.ReadAt(metaImg, plan[3].Offset()); err != nil {
		t.Fatal(err)
	}

	m, err := meta.Decode(metaImg)
	if err != nil {
		t.Fatal(err)
	}

	if m.Blank() || len(m.Damaged()) != 0 || len(m.List()) != 0 {
		t.Errorf("META after install: blank %v, damaged %v, tags %v", m.Blank(), m.Damaged(), m.List())
	}

	// STATE and EPHEMERAL are clean ext4 with their labels, META is
	// META; the rest carry no signature at all.
	for _, e := range plan {
		got, err := disk.Probe(disk.Region{File: f, Offset: e.Offset(), Size: e.Bytes()})
		if err != nil {
			t.Fatal(err)
		}

		want := e.FS
		if e.Label == disk.LabelMeta {
			want = disk.ProbeTalosMeta
		}

		if got != want {
			t.Errorf("%s holds %q, want %q", e.Label, got, want)
		}

		if e.FS != disk.FSExt4 {
			continue
		}

		// e2fsprogs' unix I/O manager takes an offset into the image.
		out, err := exec.Command(e2fsck, "-fn", fmt.Sprintf("%s?offset=%d", img, e.Offset())).CombinedOutput()
		if err != nil {
			t.Errorf("e2fsck %s: %v\n%s", e.Label, err, out)
		}

		if !strings.Contains(string(out), e.Label+": ") {
			t.Errorf("e2fsck does not name the filesystem %s:\n%s", e.Label, out)
		}
	}
}

func TestInstallRefusesSmallDisk(t *testing.T) {
	img := image(t, 2*GiB)

	_, err := disk.Install(img, disk.SystemLayout, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "install to "+img+": plan partitions: the disk (2.0 GiB) is too small") {
		t.Fatalf("err = %v", err)
	}

	// Nothing was written.
	f, err := os.Open(img)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	if _, err := disk.ReadTable(f); err == nil {
		t.Fatal("a partition table was written on a refused disk")
	}
}

// TestInstallSmallLayout partitions a 2 GiB image (a small test VM's disk)
// with a layout that fits it, the way a test or a small VM would.
func TestInstallSmallLayout(t *testing.T) {
	e2fsck := tool(t, "e2fsck", "e2fsprogs")
	img := image(t, 2*GiB)

	layout := []disk.PartitionSpec{
		{Label: disk.LabelMeta, Type: disk.TypeLinuxData, Size: disk.MiB},
		{Label: disk.LabelState, Type: disk.TypeLinuxData, Size: 100 * disk.MiB, FS: disk.FSExt4},
		{Label: disk.LabelEphemeral, Type: disk.TypeLinuxData, FS: disk.FSExt4},
	}

	plan, err := disk.Install(img, layout, io.Discard)
	if err != nil {
		t.Fatal(err)
	}

	eph := plan[2]
	if eph.Bytes() < 1900*disk.MiB {
		t.Fatalf("EPHEMERAL is %d bytes", eph.Bytes())
	}

	if out, err := exec.Command(e2fsck, "-fn", fmt.Sprintf("%s?offset=%d", img, eph.Offset())).CombinedOutput(); err != nil {
		t.Fatalf("e2fsck EPHEMERAL: %v\n%s", err, out)
	}
}

// sfdiskDump is `sfdisk --json` with the GUIDs GrowLast must keep.
type sfdiskDump struct {
	PartitionTable struct {
		ID         string `json:"id"`
		LastLBA    uint64 `json:"lastlba"`
		Partitions []struct {
			Start uint64 `json:"start"`
			Size  uint64 `json:"size"`
			Name  string `json:"name"`
			UUID  string `json:"uuid"`
		} `json:"partitions"`
	} `json:"partitiontable"`
}

func dumpTable(t *testing.T, img string) sfdiskDump {
	t.Helper()

	out, err := exec.Command(tool(t, "sfdisk", "fdisk"), "--json", img).Output()
	if err != nil {
		t.Fatalf("sfdisk --json: %v", err)
	}

	var d sfdiskDump
	if err := json.Unmarshal(out, &d); err != nil {
		t.Fatal(err)
	}

	return d
}

// TestGrowLast is a disk image put on a bigger disk: the backup GPT moves
// to the new end, the last partition takes the space, and sfdisk (which
// checks both headers and their CRCs) agrees; nothing else changes.
func TestGrowLast(t *testing.T) {
	sfdisk := tool(t, "sfdisk", "fdisk")

	layout := []disk.PartitionSpec{
		{Label: disk.LabelMeta, Type: disk.TypeLinuxData, Size: disk.MiB},
		{Label: disk.LabelState, Type: disk.TypeLinuxData, Size: 8 * disk.MiB},
		{Label: disk.LabelEphemeral, Type: disk.TypeLinuxData},
	}

	for _, tc := range []struct {
		name       string
		label      string // what GrowLast may grow
		grownMiB   int64  // the disk's size after the image is made
		wantGrown  bool
		wantMoved  bool
		wantEndMiB uint64 // the last MiB of the last partition (the disk's last MiB holds the backup GPT)
	}{
		{name: "bigger disk", label: disk.LabelEphemeral, grownMiB: 200, wantGrown: true, wantMoved: true, wantEndMiB: 198},
		{name: "another last partition", label: disk.LabelState, grownMiB: 200, wantMoved: true, wantEndMiB: 30},
		{name: "same size", label: disk.LabelEphemeral, grownMiB: 32, wantEndMiB: 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := image(t, 32*disk.MiB)

			if _, err := disk.Install(img, layout, io.Discard); err != nil {
				t.Fatal(err)
			}

			before := dumpTable(t, img)

			if err := os.Truncate(img, tc.grownMiB*disk.MiB); err != nil {
				t.Fatal(err)
			}

			g, err := disk.GrowLast(img, tc.label)
			if err != nil {
				t.Fatal(err)
			}

			if g.Grown() != tc.wantGrown || g.Moved != tc.wantMoved {
				t.Fatalf("growth %+v: want grown %v, moved %v", g, tc.wantGrown, tc.wantMoved)
			}

			if out, err := exec.Command(sfdisk, "--verify", img).CombinedOutput(); err != nil || !strings.Contains(string(out), "No errors detected") {
				t.Fatalf("sfdisk --verify: %v\n%s", err, out)
			}

			after := dumpTable(t, img)
			if want := uint64(tc.grownMiB*disk.MiB/disk.SectorSize) - 34; after.PartitionTable.LastLBA != want {
				t.Errorf("last usable LBA %d, want %d (the backup GPT at the disk's end)", after.PartitionTable.LastLBA, want)
			}

			if after.PartitionTable.ID != before.PartitionTable.ID || len(after.PartitionTable.Partitions) != 3 {
				t.Fatalf("table changed: %+v, was %+v", after.PartitionTable, before.PartitionTable)
			}

			for i, p := range after.PartitionTable.Partitions {
				b := before.PartitionTable.Partitions[i]
				if p.UUID != b.UUID || p.Name != b.Name || p.Start != b.Start {
					t.Errorf("partition %d: %+v, was %+v", i+1, p, b)
				}

				if i < 2 && p.Size != b.Size {
					t.Errorf("partition %s resized: %+v, was %+v", p.Name, p, b)
				}
			}

			last := after.PartitionTable.Partitions[2]
			if end := (last.Start + last.Size) * disk.SectorSize / disk.MiB; end != tc.wantEndMiB+1 {
				t.Errorf("EPHEMERAL ends at MiB %d, want %d", end-1, tc.wantEndMiB)
			}
		})
	}
}
