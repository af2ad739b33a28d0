//go:build e2e

package metaltest

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Encryption configs the test applies (machine.systemDiskEncryption).
const (
	encryptState = `{"machine":{"systemDiskEncryption":{"state":{"provider":"luks2","keys":[{"nodeID":{},"slot":0}]}}}}`
	// Talos 0.9's encryption guide, second step: EPHEMERAL too, nodeID and a static key.
	encryptBoth = `{"machine":{"systemDiskEncryption":{"state":{"provider":"luks2","keys":[{"nodeID":{},"slot":0}]},
"ephemeral":{"provider":"luks2","keys":[{"nodeID":{},"slot":0},{"static":{"passphrase":"old-secret"},"slot":1}]}}}}`
	// Rotation: the static key replaced by another in another slot.
	encryptRotated = `{"machine":{"systemDiskEncryption":{"state":{"provider":"luks2","keys":[{"nodeID":{},"slot":0}]},
"ephemeral":{"provider":"luks2","keys":[{"nodeID":{},"slot":0},{"static":{"passphrase":"new-secret"},"slot":2}]}}}}`
)

// TestMetalEncryption is Talos 0.9's disk encryption guide on one node: install
// with STATE encrypted (nodeID), encrypt EPHEMERAL the guide's way
// (apply-config --on-reboot, then reset --system-labels-to-wipe
// EPHEMERAL), rotate EPHEMERAL's static key by config and reboot, then
// boot with a wrong STATE key: the node stays reachable in maintenance
// mode and refuses to install over STATE. Debian's cryptsetup judges the
// volumes on the disk image afterwards.
func TestMetalEncryption(t *testing.T) {
	n := newNode(t, nodeOptions{disk: true})
	cp := n.genConfig("crypt")

	t.Log("boot 1: maintenance, then install with STATE encrypted")
	n.boot()
	n.wait(markMaintenance, bootTimeout)
	n.maintenanceAnswers(bootTimeout)

	cfgState := n.patchConfig(cp, "state.yaml", encryptState)
	n.ok("apply-config", "--insecure", "-f", cfgState)

	n.wait("[talos] STATE (/dev/vda5) was empty: encrypted it with luks2 (key slots 0)", servicesTimeout)
	n.wait("[talos] mounted STATE (/dev/mapper/vda5-encrypted) at /system/state", servicesTimeout)
	n.wait("[talos] mounted EPHEMERAL (/dev/vda6) at /var", servicesTimeout)
	n.wait(markServices, servicesTimeout)

	vs := n.ok("get", "volumestatus")
	for _, want := range []string{`STATE\s+\d+\s+partition\s+ready\s+/dev/vda5`, `EPHEMERAL\s+\d+\s+partition\s+ready\s+/dev/vda6`} {
		if !regexp.MustCompile(want).MatchString(vs) {
			t.Errorf("get volumestatus lacks %s:\n%s", want, vs)
		}
	}

	if out := n.ok("get", "volumestatus", "STATE", "-o", "yaml"); !strings.Contains(out, "encryptionProvider: luks2") ||
		!strings.Contains(out, "mountLocation: /dev/mapper/vda5-encrypted") {
		t.Errorf("STATE's volume status:\n%s", out)
	}

	if out := n.ok("get", "metakeys", "0x09"); !strings.Contains(out, "EncryptionProvider") {
		t.Errorf("META has no STATE encryption config:\n%s", out)
	}

	t.Log("EPHEMERAL, unencrypted to encrypted: apply-config --on-reboot, then reset --system-labels-to-wipe EPHEMERAL")
	cfgBoth := n.patchConfig(cp, "both.yaml", encryptBoth)
	n.ok("apply-config", "-f", cfgBoth, "--on-reboot")
	n.ok("reset", "--system-labels-to-wipe", "EPHEMERAL", "--reboot=true")
	n.wait("[talos] wiped EPHEMERAL (/dev/vda6)", exitTimeout)
	n.waitExit(markRebooting)

	n.boot()
	n.wait("[talos] unlocked STATE (/dev/vda5) with key slot 0 (nodeID)", bootTimeout)
	n.wait("[talos] EPHEMERAL (/dev/vda6) was empty: encrypted it with luks2 (key slots 0,1)", servicesTimeout)
	n.wait("[talos] mounted EPHEMERAL (/dev/mapper/vda6-encrypted) at /var", servicesTimeout)
	n.wait(markServices, servicesTimeout)

	n.ok("bootstrap")
	n.etcdHealthy()

	t.Log("rotate EPHEMERAL's static key: a config with the new key in slot 2 and without slot 1, then a reboot")
	cfgRotated := n.patchConfig(cp, "rotated.yaml", encryptRotated)
	n.ok("apply-config", "-f", cfgRotated, "--mode", "reboot")
	n.waitExit(markRebooting)

	n.boot()
	n.wait("[talos] unlocked EPHEMERAL (/dev/vda6) with key slot 0 (nodeID)", bootTimeout)
	n.wait("[talos] EPHEMERAL key sync: added key slot(s) 2; removed key slot(s) 1", bootTimeout)
	n.wait(markServices, servicesTimeout)
	n.etcdHealthy()

	if out := n.ok("etcd", "members"); !strings.Contains(out, "10.0.2.15") {
		t.Errorf("etcd members after the rotation (its data is on the encrypted EPHEMERAL):\n%s", out)
	}

	t.Log("a wrong STATE key in META: the node boots into maintenance mode and will not install over STATE")
	n.ok("meta", "write", "0x09", `{"EncryptionProvider":"luks2","EncryptionKeys":[{"KeyStatic":{"KeyData":"wrong"},"KeySlot":0}]}`)
	n.ok("reboot")
	n.waitExit(markRebooting)

	n.boot()
	n.wait("[talos] STATE (/dev/vda5) cannot be used: ", bootTimeout)
	n.wait(markMaintenance, bootTimeout)
	n.maintenanceAnswers(bootTimeout)

	// Without credentials an operator sees why (STATE's volume status),
	// not the key that failed (META).
	if out := n.ok("get", "volumestatus", "STATE", "--insecure"); !regexp.MustCompile(`\sSTATE\s+\d+\s+partition\s+failed\s+/dev/vda5\s`).MatchString(out) {
		t.Errorf("get volumestatus STATE --insecure:\n%s", out)
	}

	if _, errOut, err := n.talosctl("get", "metakeys", "0x09", "--insecure"); err == nil || !strings.Contains(errOut, maintenanceRefusal) || strings.Contains(errOut, "wrong") {
		t.Errorf("get metakeys 0x09 --insecure: %v, %q", err, errOut)
	}

	if _, errOut, err := n.talosctl("apply-config", "--insecure", "-f", cfgRotated); err == nil || !strings.Contains(errOut, "STATE cannot be opened") {
		t.Errorf("apply-config over a STATE that cannot be opened: %v\n%s", err, errOut)
	}

	if strings.Contains(n.console(), "installing the system partitions") {
		t.Errorf("the disk was partitioned again")
	}

	n.vm.Kill()
	judgeVolumes(t, n)
}

// judgeVolumes has cryptsetup read the volumes talosbox made on the
// node's disk image: the key slots the configs ended with, and the
// passphrases Talos derives (nodeID: the machine UUID and the label).
func judgeVolumes(t *testing.T, n *node) {
	t.Helper()

	for _, c := range []struct {
		label string
		slots []string
		pass  map[string]string // slot -> passphrase
	}{
		{"STATE", []string{"0"}, map[string]string{"0": n.uuid + "STATE"}},
		{"EPHEMERAL", []string{"0", "2"}, map[string]string{"0": n.uuid + "EPHEMERAL", "2": "new-secret"}},
	} {
		// The header and key slots, and a MiB of data: cryptsetup wants
		// the device to reach past the data offset.
		hdr := extractPartitionHead(t, n.disk, c.label, 17<<20)

		dump, err := exec.Command("cryptsetup", "luksDump", hdr).CombinedOutput()
		if err != nil {
			t.Fatalf("cryptsetup luksDump %s: %v\n%s", c.label, err, dump)
		}

		var slots []string
		for _, m := range regexp.MustCompile(`(?m)^\s+(\d+): luks2`).FindAllStringSubmatch(string(dump), -1) {
			slots = append(slots, m[1])
		}

		if strings.Join(slots, ",") != strings.Join(c.slots, ",") || !strings.Contains(string(dump), "argon2id") ||
			!strings.Contains(string(dump), "aes-xts-plain64") {
			t.Errorf("%s: cryptsetup sees key slots %v, want %v:\n%s", c.label, slots, c.slots, dump)
		}

		for slot, pass := range c.pass {
			cmd := exec.Command("cryptsetup", "open", "--test-passphrase", "--key-slot", slot, "--key-file=-", hdr)
			cmd.Stdin = strings.NewReader(pass)

			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s: cryptsetup rejects slot %s's key: %v\n%s", c.label, slot, err, out)
			}
		}
	}
}

// extractPartitionHead copies the first size bytes of the GPT partition
// named label out of a disk image (cryptsetup reads a header from a plain
// file; a loop device would need privileges the sandbox may lack).
func extractPartitionHead(t *testing.T, image, label string, size int64) string {
	t.Helper()

	out, err := exec.Command("sfdisk", "--json", image).Output()
	if err != nil {
		t.Fatalf("sfdisk --json %s: %v", image, err)
	}

	var pt struct {
		PartitionTable struct {
			SectorSize int64 `json:"sectorsize"`
			Partitions []struct {
				Start int64  `json:"start"`
				Name  string `json:"name"`
			} `json:"partitions"`
		} `json:"partitiontable"`
	}

	if err := json.Unmarshal(out, &pt); err != nil {
		t.Fatalf("sfdisk --json: %v\n%s", err, out)
	}

	ss := max(pt.PartitionTable.SectorSize, 512)

	for _, p := range pt.PartitionTable.Partitions {
		if p.Name != label {
			continue
		}

		src, err := os.Open(image)
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()

		dst := filepath.Join(t.TempDir(), label+".hdr")

		f, err := os.Create(dst)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()

		if _, err := io.Copy(f, io.NewSectionReader(src, p.Start*ss, size)); err != nil {
			t.Fatal(err)
		}

		return dst
	}

	t.Fatalf("no partition %s in %s:\n%s", label, image, out)

	return ""
}
