package configs_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/configs"
)

func rtVolume(name, body string) string {
	return "apiVersion: v1alpha1\nkind: VolumeConfig\nname: " + name + "\n" + body
}

const rtVolumeEncryption = `encryption:
  provider: luks2
  keys:
    - slot: 0
      nodeID: {}
    - slot: 1
      static:
        passphrase: topsecret
  cipher: aes-xts-plain64
  options: [no_read_workqueue]
  allowDiscards: true
`

func TestVolumeConfig(t *testing.T) {
	t.Parallel()

	metalInstall := "machine:\n  install:\n    disk: /dev/vda\n"

	rtRun(t, []rtCase{
		{name: "EPHEMERAL, as gen config writes it", docs: rtVolume("EPHEMERAL", "mount:\n  secure: true\n"), check: func(t *testing.T, cfg *configs.Config) {
			vc := configs.SystemVolumeConfig(cfg, "EPHEMERAL")
			if vc == nil || !vc.MountSecure() || !vc.MountNoAccessTime(true) || configs.SystemVolumeConfig(cfg, "STATE") != nil {
				t.Errorf("VolumeConfig %+v", vc)
			}
		}},
		{name: "EPHEMERAL mounted without nosuid and nodev, with access times", docs: rtVolume("EPHEMERAL", "mount:\n  secure: false\n  disableAccessTime: false\n"),
			check: func(t *testing.T, cfg *configs.Config) {
				if vc := configs.SystemVolumeConfig(cfg, "EPHEMERAL"); vc.MountSecure() || vc.MountNoAccessTime(true) {
					t.Errorf("mount %+v", vc.Mount)
				}
			}},
		{name: "EPHEMERAL's minimum size; growing, on the system disk", mode: configs.ModeMetal, v1: metalInstall,
			docs: rtVolume("EPHEMERAL", "provisioning:\n  diskSelector:\n    match: system_disk\n  grow: true\n  minSize: 10GiB\n"),
			check: func(t *testing.T, cfg *configs.Config) {
				if n := configs.SystemVolumeConfig(cfg, "EPHEMERAL").MinSize(); n != 10<<30 {
					t.Errorf("min size %d", n)
				}
			}},
		{name: "encryption folded into machine.systemDiskEncryption", mode: configs.ModeMetal, v1: metalInstall,
			docs:  rtVolume("STATE", rtVolumeEncryption) + "---\n" + rtVolume("EPHEMERAL", strings.Replace(rtVolumeEncryption, "allowDiscards: true", "blockSize: 4096", 1)),
			warns: []string{`VolumeConfig["STATE"].encryption.keys[1].static: a static key for the STATE partition is stored unencrypted in META`},
			check: func(t *testing.T, cfg *configs.Config) {
				keys := []configs.EncryptionKey{{Slot: 0, NodeID: &configs.EncryptionKeyNodeID{}}, {Slot: 1, Static: &configs.EncryptionKeyStatic{Passphrase: "topsecret"}}}
				want := &configs.SystemDiskEncryption{
					State:     &configs.EncryptionConfig{Provider: "luks2", Keys: keys, Cipher: "aes-xts-plain64", Options: []string{"no_read_workqueue", "allow_discards"}},
					Ephemeral: &configs.EncryptionConfig{Provider: "luks2", Keys: keys, Cipher: "aes-xts-plain64", BlockSize: 4096, Options: []string{"no_read_workqueue"}},
				}

				if got := cfg.Machine.SystemDiskEncryption; !reflect.DeepEqual(got, want) {
					t.Errorf("machine.systemDiskEncryption = %+v / %+v, want %+v / %+v", got.State, got.Ephemeral, want.State, want.Ephemeral)
				}
			}},
		{name: "encryption in a container, as machine.systemDiskEncryption", docs: rtVolume("EPHEMERAL", "encryption:\n  provider: luks2\n  keys: [{slot: 0, nodeID: {}}]\n"),
			warns: []string{"machine.systemDiskEncryption: system disk encryption is ignored in container mode"}},
		{name: "encryption also in the v1alpha1 document", v1: "machine:\n  systemDiskEncryption:\n    ephemeral:\n      keys: [{slot: 0, nodeID: {}}]\n",
			docs:  rtVolume("EPHEMERAL", "encryption:\n  provider: luks2\n  keys: [{slot: 0, nodeID: {}}]\n"),
			errs:  []string{`VolumeConfig["EPHEMERAL"].encryption: system disk encryption for "EPHEMERAL" is already set in the v1alpha1 document (machine.systemDiskEncryption.ephemeral)`},
			warns: []string{"system disk encryption is ignored in container mode"}},
		{name: "machine.systemDiskEncryption's rules, located in the document",
			docs: rtVolume("EPHEMERAL", "encryption:\n  provider: luks2\n  keys: [{slot: 0, nodeID: {}}, {slot: 0, kms: {endpoint: 'ftp://kms'}}, {slot: 2}]\n  keySize: 128\n"),
			errs: []string{`VolumeConfig["EPHEMERAL"].encryption.keySize: unsupported key size 128`, `VolumeConfig["EPHEMERAL"].encryption.keys[1].slot: encryption key slot 0 is already in use`,
				`VolumeConfig["EPHEMERAL"].encryption.keys[1].kms.endpoint: `, `VolumeConfig["EPHEMERAL"].encryption.keys[2]: encryption key at slot 2 doesn't have any settings`},
			warns: []string{"system disk encryption is ignored in container mode"}},
		{name: "no provider", docs: rtVolume("EPHEMERAL", "encryption:\n  keys: [{slot: 0, nodeID: {}}]\n"),
			errs: []string{`VolumeConfig["EPHEMERAL"].encryption.provider: provider is required: luks2`}, warns: []string{"ignored in container mode"}},
		{name: "a STATE-locked key for STATE", docs: rtVolume("STATE", "encryption:\n  provider: luks2\n  keys: [{slot: 0, nodeID: {}, lockToState: true}]\n"),
			errs: []string{`VolumeConfig["STATE"].encryption.keys[0].lockToState: state-locked key is not allowed for the "STATE" volume`}, warns: []string{"ignored in container mode"}},
		{name: "TPM options", mode: configs.ModeMetal, v1: metalInstall, docs: rtVolume("STATE", "encryption:\n  provider: luks2\n  keys: [{slot: 0, tpm: {options: {pcrs: [0, 7]}}}]\n"),
			errs: []string{`VolumeConfig["STATE"].encryption.keys[0].tpm.options: talosbox cannot honour TPM options`}},
		{name: "STATE's provisioning and mount", docs: rtVolume("STATE", "provisioning:\n  minSize: 1GiB\nmount:\n  secure: false\n"),
			errs: []string{`VolumeConfig["STATE"].provisioning: provisioning config is not allowed for the "STATE" volume`, `VolumeConfig["STATE"].mount: mount config is not allowed for the "STATE" volume`}},
		{name: "EPHEMERAL on another disk", mode: configs.ModeMetal, v1: metalInstall, docs: rtVolume("EPHEMERAL", "provisioning:\n  diskSelector:\n    match: disk.transport == \"nvme\" && !system_disk\n"),
			errs: []string{`VolumeConfig["EPHEMERAL"].provisioning.diskSelector.match: talosbox makes EPHEMERAL on the system disk, after STATE: it cannot place it on another disk`}},
		{name: "EPHEMERAL on a disk chosen by its properties: the install disk must match them", mode: configs.ModeMetal, v1: metalInstall,
			docs: rtVolume("EPHEMERAL", "provisioning:\n  diskSelector:\n    match: disk.transport == \"nvme\" || (system_disk && disk.size > 10u * GiB)\n"),
			check: func(t *testing.T, cfg *configs.Config) {
				if e, err := configs.SystemVolumeConfig(cfg, "EPHEMERAL").Selector(); err != nil || e == nil {
					t.Errorf("Selector = %v, %v", e, err)
				}
			}},
		{name: "EPHEMERAL on any disk but the system disk", mode: configs.ModeMetal, v1: metalInstall, docs: rtVolume("EPHEMERAL", "provisioning:\n  diskSelector:\n    match: '!system_disk || false'\n"),
			errs: []string{`VolumeConfig["EPHEMERAL"].provisioning.diskSelector.match: talosbox makes EPHEMERAL on the system disk, after STATE: it cannot place it on another disk`}},
		{name: "EPHEMERAL's disk selector talosbox cannot evaluate", mode: configs.ModeMetal, v1: metalInstall,
			docs: rtVolume("EPHEMERAL", "provisioning:\n  diskSelector:\n    match: disk.size > 10 * GiB\n"),
			errs: []string{`VolumeConfig["EPHEMERAL"].provisioning.diskSelector.match: disk selector is invalid: at 16: * multiplies numbers of one type, not int and uint`}},
		{name: "in a container, EPHEMERAL's disk selector is not evaluated", docs: rtVolume("EPHEMERAL", "provisioning:\n  diskSelector:\n    match: disk.size / 2u > 1u\n"),
			warns: []string{`VolumeConfig["EPHEMERAL"].provisioning.diskSelector.match: disk selector is invalid: at 11: talosbox does not evaluate / (division) in a disk selector; it reads disk.<field>`}},
		{name: "EPHEMERAL that does not grow, with a maximum size", mode: configs.ModeMetal, v1: metalInstall, docs: rtVolume("EPHEMERAL", "provisioning:\n  grow: false\n  maxSize: 50%\n"),
			errs: []string{`VolumeConfig["EPHEMERAL"].provisioning.grow: talosbox's EPHEMERAL always takes the rest of the system disk: it cannot keep it from growing`,
				`VolumeConfig["EPHEMERAL"].provisioning.maxSize: talosbox's EPHEMERAL always takes the rest of the system disk: a maximum size cannot be honoured`}},
		{name: "a negative or unreadable minimum size", mode: configs.ModeMetal, v1: metalInstall, docs: rtVolume("EPHEMERAL", "provisioning:\n  minSize: -10GiB\n") + "---\n" + rtVolume("STATE", "") + "---\n" +
			rtVolume("IMAGECACHE", "") + "---\n" + rtVolume("LOGS", ""),
			errs: []string{`VolumeConfig["EPHEMERAL"].provisioning.minSize: min size "-10GiB" cannot be negative`,
				`VolumeConfig["IMAGECACHE"].name: talosbox's system disk has the STATE and EPHEMERAL volumes only`,
				`VolumeConfig["LOGS"].name: unknown system volume "LOGS": a VolumeConfig names STATE or EPHEMERAL (Talos also has IMAGECACHE, ETCD, CRI, KUBELET, LOG`}},
		{name: "xfs options", mode: configs.ModeMetal, v1: metalInstall, docs: rtVolume("EPHEMERAL", "filesystem:\n  xfs:\n    minAllocationGroupSize: 1GiB\n"),
			errs: []string{`VolumeConfig["EPHEMERAL"].filesystem: talosbox formats its system volumes ext4`}},
		{name: "scrubbing", mode: configs.ModeMetal, v1: metalInstall, docs: rtVolume("EPHEMERAL", "scrub:\n  interval: 24h\n") + "---\n" + rtVolume("STATE", "scrub:\n  enabled: false\n"),
			errs: []string{`VolumeConfig["EPHEMERAL"].scrub: talosbox's system volumes are ext4, which has no online scrub`}},
		{name: "in a container, whose volumes are directories, what the node cannot do is ignored",
			docs: rtVolume("EPHEMERAL", "provisioning:\n  maxSize: 50%\nfilesystem:\n  xfs: {}\n") + "---\n" + rtVolume("IMAGECACHE", ""),
			warns: []string{`VolumeConfig["EPHEMERAL"].provisioning.maxSize: talosbox's EPHEMERAL always takes the rest of the system disk: a maximum size cannot be honoured; remove maxSize (ignored in container mode)`,
				`VolumeConfig["EPHEMERAL"].filesystem: talosbox formats its system volumes ext4`, `VolumeConfig["IMAGECACHE"].name: talosbox's system disk has the STATE and EPHEMERAL volumes only`}},
		{name: "STATE with empty sections", docs: rtVolume("STATE", "provisioning: {}\nmount: {}\n")},
		{name: "trim", docs: rtVolume("EPHEMERAL", "trim:\n  interval: 24h\n") + "---\n" + rtVolume("STATE", "trim:\n  enabled: true\n"),
			warns: []string{`VolumeConfig["STATE"].trim: STATE is not trimmed (as in Talos, only EPHEMERAL of the system volumes is): trim has no effect here`}},
		{name: "a negative trim interval", docs: rtVolume("EPHEMERAL", "trim:\n  interval: -1h\n"),
			errs: []string{`VolumeConfig["EPHEMERAL"].trim.interval: trim interval cannot be negative`}},
		{name: "an unknown field", docs: rtVolume("EPHEMERAL", "mount:\n  readOnly: true\n"), decodeErr: `unknown field "readOnly" in VolumeConfig["EPHEMERAL"].mount`},
		{name: "a wrong type", docs: rtVolume("EPHEMERAL", "trim:\n  interval: weekly\n"), decodeErr: `VolumeConfig["EPHEMERAL"].trim.interval: `},
		{name: "one document per volume", docs: rtVolume("EPHEMERAL", "") + "---\n" + rtVolume("EPHEMERAL", ""), decodeErr: `duplicate document VolumeConfig "EPHEMERAL"`},
	})

	t.Run("encodes to itself", func(t *testing.T) {
		t.Parallel()
		rtRoundTrip(t, rtVolume("EPHEMERAL", "provisioning:\n  minSize: 10GiB\nmount:\n  secure: true\ntrim:\n  interval: 24h0m0s\n")+"---\n"+rtVolume("STATE", rtVolumeEncryption))
	})

	t.Run("redacted", func(t *testing.T) {
		t.Parallel()

		out, err := rtDecode(t, rtText(t, "", rtVolume("STATE", rtVolumeEncryption))).EncodeRedacted()
		if err != nil {
			t.Fatal(err)
		}

		if strings.Contains(string(out), "topsecret") || !strings.Contains(string(out), `passphrase: "`+configs.Redacted+`"`) {
			t.Errorf("redacted:\n%s", out)
		}
	})

	t.Run("patches", func(t *testing.T) {
		t.Parallel()

		for _, p := range []struct{ name, patch string }{
			{"strategic merge", rtVolume("EPHEMERAL", "mount:\n  secure: false\n")},
			{"json", `[{"op": "replace", "path": "/VolumeConfig/EPHEMERAL/mount/secure", "value": false}]`},
		} {
			if vc := configs.SystemVolumeConfig(rtPatched(t, rtVolume("EPHEMERAL", "mount:\n  secure: true\n"), p.patch), "EPHEMERAL"); vc.MountSecure() {
				t.Errorf("%s: mount %+v", p.name, vc.Mount)
			}
		}
	})
}

// TestTrimInterval: how often EPHEMERAL is trimmed, as Talos resolves it
// from FilesystemTrimConfig and EPHEMERAL's VolumeConfig.
func TestTrimInterval(t *testing.T) {
	t.Parallel()

	const every = "apiVersion: v1alpha1\nkind: FilesystemTrimConfig\ninterval: 168h\n---\n"

	for _, tt := range []struct {
		name, docs string
		want       time.Duration
	}{
		{"no document", "", 0},
		{"every week", every, 168 * time.Hour},
		{"a volume's own interval", every + rtVolume("EPHEMERAL", "trim:\n  interval: 24h\n"), 24 * time.Hour},
		{"a volume's trim off", every + rtVolume("EPHEMERAL", "trim:\n  enabled: false\n"), 0},
		{"a volume's trim on without a global schedule", rtVolume("EPHEMERAL", "trim:\n  interval: 12h\n"), 12 * time.Hour},
		{"a volume's trim on without any interval", rtVolume("EPHEMERAL", "trim: {enabled: true}\n"), 0},
		{"another volume's", every + rtVolume("STATE", "trim:\n  enabled: false\n"), 168 * time.Hour},
		{"trimming off", "apiVersion: v1alpha1\nkind: FilesystemTrimConfig\ninterval: 0s\n", 0},
	} {
		cfg := &configs.Config{}
		if tt.docs != "" {
			cfg = rtDecode(t, strings.TrimSuffix(tt.docs, "---\n"))
		}

		if got := configs.TrimInterval(cfg, "EPHEMERAL"); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}
