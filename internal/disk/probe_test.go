package disk_test

import (
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/internal/disk"
	"github.com/talosbox/talosbox/internal/luks2"
)

// blkidExport is `blkid -p -o export` of a region: util-linux's probe, the
// judge of what ProbeVolume reads.
func blkidExport(t *testing.T, img string, offset int64) map[string]string {
	t.Helper()

	out, err := exec.Command(tool(t, "blkid", "util-linux"), "-p", "-o", "export", "--offset", strconv.FormatInt(offset, 10), img).Output()
	if err != nil {
		t.Fatalf("blkid at %d: %v", offset, err)
	}

	kv := map[string]string{}

	for _, l := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			kv[k] = v
		}
	}

	return kv
}

// TestProbeVolumeAgainstBlkid probes what the project itself writes (a
// system disk's GPT, an ext4 STATE, META, a LUKS2 volume) and compares
// names, UUIDs and labels with blkid's.
func TestProbeVolumeAgainstBlkid(t *testing.T) {
	img := image(t, 6*GiB)

	plan, err := disk.Install(img, disk.SystemLayout, io.Discard)
	if err != nil {
		t.Fatal(err)
	}

	f, err := os.Open(img)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	probe := func(off, size int64) disk.Volume {
		t.Helper()

		v, err := disk.ProbeVolume(disk.Region{File: f, Offset: off, Size: size})
		if err != nil {
			t.Fatal(err)
		}

		return v
	}

	whole := probe(0, 6*GiB)
	if b := blkidExport(t, img, 0); whole.Name != disk.ProbeGPT || b["PTTYPE"] != "gpt" || !strings.EqualFold(whole.UUID, b["PTUUID"]) {
		t.Errorf("disk: %+v, blkid %v", whole, b)
	}

	for i, label := range map[int]string{4: "STATE", 5: "EPHEMERAL"} {
		p := plan[i]
		if v, b := probe(p.Offset(), p.Bytes()), blkidExport(t, img, p.Offset()); v.Name != disk.ProbeExt4 || b["TYPE"] != "ext4" || v.UUID != b["UUID"] || v.Label != b["LABEL"] || v.Label != label {
			t.Errorf("%s: %+v, blkid %v", label, v, b)
		}
	}

	if v := probe(plan[3].Offset(), plan[3].Bytes()); v.Name != disk.ProbeTalosMeta {
		t.Errorf("META: %+v", v)
	}

	// A LUKS2 volume as talosbox formats one.
	luks := image(t, 32<<20)

	dev, err := os.OpenFile(luks, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()

	vk, err := luks2.Format(dev, nil, []byte("passphrase"), luks2.FormatOptions{Label: "EPHEMERAL",
		PBKDF: luks2.PBKDF{Type: luks2.KDFPBKDF2, Iterations: 1000}, DigestIterations: 1000})
	if err != nil {
		t.Fatal(err)
	}

	clear(vk)

	v, err := disk.ProbeVolume(disk.Region{File: dev, Size: 32 << 20})
	if b := blkidExport(t, luks, 0); err != nil || v.Name != disk.ProbeLUKS || b["TYPE"] != "crypto_LUKS" || v.UUID != b["UUID"] || v.Label != "EPHEMERAL" || b["LABEL"] != "EPHEMERAL" {
		t.Errorf("LUKS2: %+v, %v; blkid %v", v, err, b)
	}
}

// A NoCloud seed as cloud-init's users make it (an ISO labelled cidata,
// by xorriso's mkisofs): ProbeVolume names it and its label as blkid does.
func TestProbeVolumeISO9660(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/meta-data", []byte("instance-id: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	iso := dir + "/seed.iso"
	if out, err := exec.Command(tool(t, "xorriso", "xorriso"), "-as", "mkisofs", "-o", iso, "-V", "cidata", "-J", "-r", dir+"/meta-data").CombinedOutput(); err != nil {
		t.Fatalf("xorriso -as mkisofs: %v\n%s", err, out)
	}

	f, err := os.Open(iso)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	v, err := disk.ProbeVolume(disk.Region{File: f})
	if b := blkidExport(t, iso, 0); err != nil || v.Name != disk.ProbeISO9660 || b["TYPE"] != "iso9660" || v.Label != "cidata" || b["LABEL"] != "cidata" {
		t.Errorf("the seed: %+v, %v; blkid %v", v, err, b)
	}

	if v, err := disk.ProbeVolume(disk.Region{File: f, Size: 4096}); err != nil || v.Name != "" {
		t.Errorf("a region too short for a volume descriptor: %+v, %v", v, err)
	}
}
