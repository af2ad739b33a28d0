package configs_test

import (
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

const userVolumeDoc = `apiVersion: v1alpha1
kind: UserVolumeConfig
name: local-data
provisioning:
    diskSelector:
        match: disk.transport == "nvme" && !system_disk
    minSize: 1GiB
    maxSize: 50GiB
filesystem:
    type: ext4
mount:
    disableAccessTime: true
`

// uv is a UserVolumeConfig named a with the given body.
func uv(body string) string {
	return "apiVersion: v1alpha1\nkind: UserVolumeConfig\nname: a\n" + body
}

const uvSelector = "provisioning:\n    diskSelector:\n        match: '!system_disk'\n"

func TestUserVolumeConfig(t *testing.T) {
	t.Parallel()

	obsDecode(t, []obsDecodeCase{
		{name: "good", docs: userVolumeDoc},
		{
			name: "an unknown field",
			docs: uv("provisioning:\n    diskSelector:\n        expression: x\n"),
			want: `line +6: unknown field "expression" in UserVolumeConfig["a"].provisioning.diskSelector`,
		},
		{
			name: "grow of the wrong type",
			docs: uv("provisioning:\n    grow: [true]\n"),
			want: `line +5: UserVolumeConfig["a"].provisioning.grow: expected a single value, got a sequence`,
		},
	})

	ext4 := "filesystem:\n    type: ext4\n"

	obsCheck(t, []obsCheckCase{
		{name: "a partition", docs: userVolumeDoc},
		{name: "a share of the free space, or what to leave", docs: uv(uvSelector+"    maxSize: 50%\n"+ext4) + "---\n" + strings.Replace(uv(uvSelector+"    maxSize: -10GiB\n"+ext4), "name: a", "name: b", 1)},
		{name: "a disk", docs: uv("volumeType: disk\n" + uvSelector + ext4)},
		{name: "a directory", docs: uv("volumeType: directory\n")},
		{name: "not secure", docs: uv("volumeType: directory\nmount:\n    secure: false\n")},
		{
			name:  "ext4 by default, said",
			docs:  uv(uvSelector + "    minSize: 1GiB\n"),
			warns: []string{`line +2: UserVolumeConfig["a"].filesystem.type: talosbox formats user volumes ext4 (Talos's default is xfs): write filesystem.type: ext4 to say so`},
		},
		{
			name: "name rules",
			docs: "apiVersion: v1alpha1\nkind: UserVolumeConfig\nname: data_1\nvolumeType: directory\n---\n" +
				"apiVersion: v1alpha1\nkind: UserVolumeConfig\nname: " + strings.Repeat("a", 35) + "\nvolumeType: directory\n",
			want: []string{
				`line +3: UserVolumeConfig["data_1"].name: name "data_1" can only contain lowercase and uppercase ASCII letters, digits, and hyphens`,
				`line +8: UserVolumeConfig["` + strings.Repeat("a", 35) + `"].name: name must be between 1 and 34 characters long (it is 35)`,
			},
		},
		{
			name: "another type",
			docs: uv("volumeType: tmpfs\n"),
			want: []string{`line +4: UserVolumeConfig["a"].volumeType: unsupported volume type "tmpfs": want partition, disk or directory`},
		},
		{
			name: "a directory says nothing else",
			docs: uv("volumeType: directory\n" + uvSelector + ext4 + "mount:\n    disableAccessTime: true\n"),
			want: []string{
				`line +5: UserVolumeConfig["a"].provisioning: provisioning spec is invalid for volumeType directory`,
				`line +8: UserVolumeConfig["a"].filesystem: filesystem spec is invalid for volumeType directory`,
				`line +11: UserVolumeConfig["a"].mount.disableAccessTime: mount.disableAccessTime is invalid for volumeType directory`,
			},
		},
		{
			name: "no selector, no size",
			docs: uv(ext4),
			want: []string{
				`line +2: UserVolumeConfig["a"].provisioning.diskSelector.match: disk selector is required: a CEL expression choosing the disk (disk.transport == "nvme", !system_disk)`,
				`line +2: UserVolumeConfig["a"].provisioning: min size or max size is required`,
			},
		},
		{
			name: "a selector CEL refuses",
			docs: uv("provisioning:\n    diskSelector:\n        match: disk.size > 10 * GiB\n    maxSize: 1GiB\n" + ext4),
			want: []string{`line +6: UserVolumeConfig["a"].provisioning.diskSelector.match: disk selector is invalid: at 16: * multiplies numbers of one type, not int and uint (disk sizes and the size units are uint: write 100u, not 100, as in disk.size >= 100u * GiB)`},
		},
		{
			name: "sizes",
			docs: uv(uvSelector+"    minSize: 2GiB\n    maxSize: 1GiB\n"+ext4) + "---\n" +
				strings.Replace(uv(uvSelector+"    minSize: -1GiB\n    maxSize: lots\n"+ext4), "name: a", "name: b", 1) + "---\n" +
				strings.Replace(uv(uvSelector+"    minSize: 10%\n    maxSize: 120%\n"+ext4), "name: a", "name: c", 1),
			want: []string{
				`line +4: UserVolumeConfig["a"].provisioning: min size is greater than max size`,
				`line +18: UserVolumeConfig["b"].provisioning.minSize: min size cannot be negative`,
				`line +19: UserVolumeConfig["b"].provisioning.maxSize: invalid size "lots": want bytes with a unit (10GiB, 500MB) or a percentage (50%)`,
				`line +29: UserVolumeConfig["c"].provisioning.minSize: min size "10%" must be a size, not a percentage`,
				`line +30: UserVolumeConfig["c"].provisioning.maxSize: invalid percentage "120%": want 0% to 100%`,
			},
		},
		{
			name: "a disk has no size",
			docs: uv("volumeType: disk\n" + uvSelector + "    maxSize: 1GiB\n" + ext4),
			want: []string{`line +5: UserVolumeConfig["a"].provisioning: min size, max size and grow are not supported (a disk volume is the whole disk)`},
		},
		{
			name: "grow",
			docs: uv(uvSelector + "    maxSize: 1GiB\n    grow: true\n" + ext4),
			want: []string{`line +8: UserVolumeConfig["a"].provisioning.grow: talosbox does not grow user volumes (it cannot grow their ext4 filesystem): remove grow, and give the volume its size with maxSize`},
		},
		{
			name: "other filesystems",
			docs: uv(uvSelector+"    maxSize: 1GiB\nfilesystem:\n    type: xfs\n    projectQuotaSupport: true\n    xfs:\n        minAllocationGroupSize: 1GiB\n") + "---\n" +
				strings.Replace(uv(uvSelector+"    maxSize: 1GiB\nfilesystem:\n    type: zfs\n"), "name: a", "name: b", 1),
			want: []string{
				`line +9: UserVolumeConfig["a"].filesystem.type: talosbox formats user volumes ext4 only, it cannot make xfs: write type: ext4`,
				`line +10: UserVolumeConfig["a"].filesystem.projectQuotaSupport: project quota support is only available for xfs filesystem, which talosbox does not make`,
				`line +11: UserVolumeConfig["a"].filesystem.xfs: xfs options are only available for xfs filesystem, which talosbox does not make`,
				`line +22: UserVolumeConfig["b"].filesystem.type: unsupported filesystem type: zfs (want ext4, the one talosbox makes)`,
			},
		},
		{
			name: "encryption: Talos's rules, then refused",
			docs: uv(uvSelector + "    maxSize: 1GiB\n" + ext4 + "encryption:\n    provider: luks1\n    keys:\n        - slot: 0\n          static:\n            passphrase: s3cret\n" +
				"        - slot: 0\n          tpm:\n            options:\n                pcrs: [7, 24]\n        - slot: 1\n"),
			want: []string{
				`line +10: UserVolumeConfig["a"].encryption: talosbox does not encrypt user volumes yet: it cannot honour this encryption (remove it, or encrypt the system disk with machine.systemDiskEncryption)`,
				`line +11: UserVolumeConfig["a"].encryption.provider: unsupported encryption provider: "luks1" (want luks2)`,
				`line +16: UserVolumeConfig["a"].encryption.keys[1].slot: duplicate key slot 0`,
				`line +19: UserVolumeConfig["a"].encryption.keys[1].tpm.options.pcrs: TPM PCR 24 is out of range (0-23)`,
				`line +20: UserVolumeConfig["a"].encryption.keys[2]: at least one encryption key type must be specified for slot 1`,
			},
		},
		{
			name: "trim and scrub",
			docs: uv(uvSelector + "    maxSize: 1GiB\n" + ext4 + "trim:\n    enabled: true\nscrub:\n    interval: 5s\n"),
			want: []string{
				`line +10: UserVolumeConfig["a"].trim: talosbox does not trim user volumes: it cannot honour a trim setting (remove it)`,
				`line +12: UserVolumeConfig["a"].scrub: talosbox does not scrub user volumes: it cannot honour a scrub setting (remove it)`,
				`line +13: UserVolumeConfig["a"].scrub.interval: scrub interval: minimum value is 10s`,
			},
		},
		{
			name: "in a container",
			mode: configs.ModeContainer,
			docs: userVolumeDoc + "---\n" + uv("volumeType: directory\n"),
			want: []string{
				`line +2: UserVolumeConfig["local-data"]: a container node has no disks, and its EPHEMERAL is not /var: talosbox makes user volumes on metal only`,
				`line +15: UserVolumeConfig["a"]: a container node has no disks, and its EPHEMERAL is not /var: talosbox makes user volumes on metal only`,
			},
		},
	})

	t.Run("check/a mount point machine.disks has", func(t *testing.T) {
		t.Parallel()

		data := withDocs(t, "worker", uv("volumeType: directory\n"))
		data = []byte(strings.Replace(string(data), "machine:\n", "machine:\n    disks:\n        - device: /dev/vdb\n          partitions:\n            - mountpoint: /var/mnt/a\n", 1))

		cfg, err := configs.Decode(data)
		if err != nil {
			t.Fatal(err)
		}

		_, err = cfg.Validate(configs.ModeMetal)
		if want := `UserVolumeConfig["a"].name: /var/mnt/a is where machine.disks[0].partitions[0] is mounted too: give the volume another name`; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want %s", err, want)
		}
	})

	t.Run("sizes", func(t *testing.T) {
		t.Parallel()

		const gib = 1 << 30

		for _, tc := range []struct {
			min, max  string
			available uint64
			want      uint64
			err       string
		}{
			{available: 10 * gib, max: "1GiB", want: gib},
			{available: 10 * gib, min: "1GiB", want: 10 * gib},
			{available: 10 * gib, max: "20GiB", want: 10 * gib},
			{available: 10 * gib, max: "50%", want: 5 * gib},
			{available: 10 * gib, max: "-2GiB", want: 8 * gib},
			{available: 10 * gib, max: "-25%", want: 7.5 * gib},
			{available: 50 << 20, max: "1GiB", err: "not enough space: 50 MiB free, the volume needs 100 MiB"},
			{available: 10 * gib, min: "20GiB", err: "not enough space: 10 GiB free, the volume needs 20 GiB"},
			{available: 10 * gib, max: "-20GiB", err: "maxSize -20GiB leaves nothing of the 10 GiB free"},
		} {
			u := &configs.UserVolumeConfig{Provisioning: &configs.UserVolumeProvisioning{MinSize: tc.min, MaxSize: tc.max}}

			got, err := u.PartitionSize(tc.available)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Errorf("min %q max %q of %d: %v, want %s", tc.min, tc.max, tc.available, err, tc.err)
				}

				continue
			}

			if err != nil || got != tc.want {
				t.Errorf("min %q max %q of %d: %d, %v; want %d", tc.min, tc.max, tc.available, got, err, tc.want)
			}
		}
	})

	t.Run("fold", func(t *testing.T) {
		t.Parallel()

		cfg := obsDecoded(t, userVolumeDoc)

		docs := configs.DocumentsOf[*configs.UserVolumeConfig](cfg)
		if len(docs) != 1 || docs[0].MountPoint() != "/var/mnt/local-data" || docs[0].Type() != configs.UserVolumePartition ||
			!docs[0].Secure() || !docs[0].NoAccessTime() {
			t.Errorf("DocumentsOf: %+v", docs)
		}

		if changes, err := configs.Compare(obsDecoded(t, ""), configs.NewConfig(cfg.V1Alpha1())); err != nil || len(changes) != 0 {
			t.Errorf("the effective v1alpha1 fields changed: %v %v", changes, err)
		}

		// Made at boot: a change waits for the reboot.
		obsChange(t, userVolumeDoc, strings.Replace(userVolumeDoc, "50GiB", "60GiB", 1), `UserVolumeConfig["local-data"].provisioning.maxSize`, false)
	})

	t.Run("encode", func(t *testing.T) {
		t.Parallel()

		obsRoundTrip(t, userVolumeDoc, userVolumeDoc)

		// The passphrase is a secret (the document is refused, but it
		// decodes, and is shown redacted).
		encryption := "encryption:\n    provider: luks2\n    keys:\n        - slot: 0\n          static:\n            passphrase: s3cret\n"
		obsRoundTrip(t, userVolumeDoc+encryption, strings.Replace(userVolumeDoc, "mount:", encryption+"mount:", 1), "s3cret")
	})

	t.Run("patch", func(t *testing.T) {
		t.Parallel()

		cfg := obsPatched(t, userVolumeDoc, "apiVersion: v1alpha1\nkind: UserVolumeConfig\nname: local-data\nprovisioning:\n    maxSize: 10GiB\n")

		d := configs.DocumentOf[*configs.UserVolumeConfig](cfg)
		if d == nil || d.Provisioning.MaxSize != "10GiB" || d.Provisioning.MinSize != "1GiB" || d.Provisioning.DiskSelector == nil {
			t.Errorf("strategic merge: %+v", d)
		}

		cfg = obsPatched(t, userVolumeDoc, `[{"op": "replace", "path": "/UserVolumeConfig/local-data/filesystem/type", "value": "xfs"}]`)
		if d := configs.DocumentOf[*configs.UserVolumeConfig](cfg); d == nil || d.Filesystem.Type != "xfs" {
			t.Errorf("JSON patch: %+v", d)
		}
	})
}
