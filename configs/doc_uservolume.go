package configs

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/talosbox/talosbox/configs/diskexpr"
)

// UserVolumeConfig is Talos's UserVolumeConfig: a volume of the user's,
// mounted at /var/mnt/<name>. A partition volume (the default) is a
// partition labelled u-<name>, made on the first disk its diskSelector
// matches that has room; a disk volume is a whole disk; a directory
// volume a directory on EPHEMERAL. talosbox makes them at boot, as it
// does machine.disks: what a node finds it keeps, so a reboot never
// makes a volume again. It formats them ext4 (Talos: xfs), and refuses
// what it cannot do: other filesystems, growing, encryption, trim and
// scrub settings, and user volumes in a container.
type UserVolumeConfig struct {
	Name string `yaml:"name"`
	// VolumeType is partition (unset), disk or directory.
	VolumeType   string                  `yaml:"volumeType,omitempty"`
	Provisioning *UserVolumeProvisioning `yaml:"provisioning,omitempty"`
	Filesystem   *UserVolumeFilesystem   `yaml:"filesystem,omitempty"`
	Encryption   *UserVolumeEncryption   `yaml:"encryption,omitempty"`
	Mount        *UserVolumeMount        `yaml:"mount,omitempty"`
	Trim         *UserVolumeSchedule     `yaml:"trim,omitempty"`
	Scrub        *UserVolumeSchedule     `yaml:"scrub,omitempty"`
}

// UserVolumeProvisioning is where a volume is made, and how big.
type UserVolumeProvisioning struct {
	DiskSelector *DiskMatch `yaml:"diskSelector,omitempty"`
	Grow         *bool      `yaml:"grow,omitempty"`
	// MinSize is a size ("10GiB"); MaxSize a size, a share of the free
	// space ("50%"), or either negative (what to leave free).
	MinSize string `yaml:"minSize,omitempty"`
	MaxSize string `yaml:"maxSize,omitempty"`
}

// UserVolumeFilesystem is the volume's filesystem.
type UserVolumeFilesystem struct {
	Type                string       `yaml:"type,omitempty"`
	ProjectQuotaSupport *bool        `yaml:"projectQuotaSupport,omitempty"`
	XFS                 Unstructured `yaml:"xfs,omitempty"`
}

// UserVolumeEncryption is Talos's encryption spec of a volume.
type UserVolumeEncryption struct {
	Provider      string                    `yaml:"provider,omitempty"`
	Keys          []UserVolumeEncryptionKey `yaml:"keys,omitempty"`
	Cipher        string                    `yaml:"cipher,omitempty"`
	KeySize       uint                      `yaml:"keySize,omitempty"`
	BlockSize     uint64                    `yaml:"blockSize,omitempty"`
	Options       []string                  `yaml:"options,omitempty"`
	AllowDiscards *bool                     `yaml:"allowDiscards,omitempty"`
}

// UserVolumeEncryptionKey is one key slot.
type UserVolumeEncryptionKey struct {
	Slot        int                  `yaml:"slot"`
	Static      *UserVolumeKeyStatic `yaml:"static,omitempty"`
	NodeID      *EncryptionKeyNodeID `yaml:"nodeID,omitempty"`
	KMS         *EncryptionKeyKMS    `yaml:"kms,omitempty"`
	TPM         *UserVolumeKeyTPM    `yaml:"tpm,omitempty"`
	LockToState *bool                `yaml:"lockToState,omitempty"`
}

// UserVolumeKeyStatic is a passphrase kept in the config.
type UserVolumeKeyStatic struct {
	Passphrase string `yaml:"passphrase,omitempty" secret:"true"`
}

// UserVolumeKeyTPM seals the key with the TPM.
type UserVolumeKeyTPM struct {
	Options                       *UserVolumeTPMOptions `yaml:"options,omitempty"`
	CheckSecurebootStatusOnEnroll *bool                 `yaml:"checkSecurebootStatusOnEnroll,omitempty"`
}

// UserVolumeTPMOptions are the PCRs a TPM key is sealed to.
type UserVolumeTPMOptions struct {
	PCRs []int `yaml:"pcrs,omitempty"`
}

// UserVolumeMount is how the volume is mounted.
type UserVolumeMount struct {
	// DisableAccessTime mounts it noatime.
	DisableAccessTime *bool `yaml:"disableAccessTime,omitempty"`
	// Secure mounts it nosuid and nodev; unset is true.
	Secure *bool `yaml:"secure,omitempty"`
}

// UserVolumeSchedule is Talos's trim or scrub setting of a volume.
type UserVolumeSchedule struct {
	Enabled  *bool         `yaml:"enabled,omitempty"`
	Interval time.Duration `yaml:"interval,omitempty"`
}

// The volume types.
const (
	UserVolumePartition = "partition"
	UserVolumeDisk      = "disk"
	UserVolumeDirectory = "directory"
)

// UserVolumeMountRoot is where user volumes are mounted, each at its name;
// UserVolumePrefix starts their partition labels.
const (
	UserVolumeMountRoot = "/var/mnt"
	UserVolumePrefix    = "u-"
	// MinUserVolumeSize is the least room a partition volume needs when
	// its minSize is unset.
	MinUserVolumeSize = 100 << 20
)

// maxUserVolumeName is what a GPT label (36 characters) leaves after the
// prefix.
const maxUserVolumeName = 36 - len(UserVolumePrefix)

// Kind implements Document.
func (*UserVolumeConfig) Kind() string { return "UserVolumeConfig" }

// DocumentName implements NamedDocument.
func (u *UserVolumeConfig) DocumentName() string { return u.Name }

// Type is the volume's type, partition when unset.
func (u *UserVolumeConfig) Type() string {
	if u.VolumeType == "" {
		return UserVolumePartition
	}

	return u.VolumeType
}

// MountPoint is where the volume is mounted.
func (u *UserVolumeConfig) MountPoint() string { return path.Join(UserVolumeMountRoot, u.Name) }

// Selector is the parsed disk selector, nil when there is none.
func (u *UserVolumeConfig) Selector() (*diskexpr.Expr, error) {
	if u.Provisioning == nil {
		return nil, nil
	}

	return u.Provisioning.DiskSelector.Expr()
}

// Secure says whether the volume is mounted nosuid and nodev.
func (u *UserVolumeConfig) Secure() bool {
	return u.Mount == nil || u.Mount.Secure == nil || *u.Mount.Secure
}

// NoAccessTime says whether the volume is mounted noatime.
func (u *UserVolumeConfig) NoAccessTime() bool {
	return u.Mount != nil && u.Mount.DisableAccessTime != nil && *u.Mount.DisableAccessTime
}

// Size is a provisioning size as written: bytes, or a percentage of the
// free space; Negative sizes say what to leave free.
type Size struct {
	Bytes    uint64
	Percent  uint64
	Relative bool
	Negative bool
}

// ParseVolumeSize reads a minSize or maxSize: "10GiB", "1.5 TB", "50%",
// "-10GiB". The empty string is the zero Size.
func ParseVolumeSize(s string) (Size, error) {
	var out Size

	if s == "" {
		return out, nil
	}

	t := s
	if v, ok := strings.CutPrefix(t, "-"); ok {
		out.Negative, t = true, v
	}

	if v, ok := strings.CutSuffix(t, "%"); ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f > 100 {
			return Size{}, fmt.Errorf("invalid percentage %q: want 0%% to 100%%", s)
		}

		out.Percent, out.Relative = uint64(f), true

		return out, nil
	}

	n, err := humanize.ParseBytes(t)
	if err != nil {
		return Size{}, fmt.Errorf("invalid size %q: want bytes with a unit (10GiB, 500MB) or a percentage (50%%)", s)
	}

	out.Bytes = n

	return out, nil
}

// IsZero says the size is unset (or zero).
func (s Size) IsZero() bool { return s.Bytes == 0 && s.Percent == 0 }

// PartitionSize is what a partition volume gets out of available
// contiguous free bytes, as Talos sizes it: its maxSize (resolved against
// the free space), or everything when maxSize is unset or more; an error
// when less than its minSize (MinUserVolumeSize when unset) is free.
func (u *UserVolumeConfig) PartitionSize(available uint64) (uint64, error) {
	var p UserVolumeProvisioning
	if u.Provisioning != nil {
		p = *u.Provisioning
	}

	minSize, err := ParseVolumeSize(p.MinSize)
	if err != nil {
		return 0, err
	}

	maxSize, err := ParseVolumeSize(p.MaxSize)
	if err != nil {
		return 0, err
	}

	least := minSize.Bytes
	if least == 0 {
		least = MinUserVolumeSize
	}

	if available < least {
		return 0, fmt.Errorf("not enough space: %s free, the volume needs %s", humanize.IBytes(available), humanize.IBytes(least))
	}

	want := maxSize.Bytes
	if maxSize.Relative {
		want = available * maxSize.Percent / 100
	}

	if maxSize.Negative {
		if want > available {
			return 0, fmt.Errorf("maxSize %s leaves nothing of the %s free", p.MaxSize, humanize.IBytes(available))
		}

		want = available - want
	}

	if want == 0 || want >= available {
		return available, nil
	}

	return want, nil
}

//nolint:gocyclo // Talos's rules, then talosbox's refusals, one after the other
func (u *UserVolumeConfig) check(v *validator, path string) {
	switch {
	case u.Name == "":
		v.errorf(path+".name", "name is required: the volume's name, mounted at %s/<name>", UserVolumeMountRoot)
	case len(u.Name) > maxUserVolumeName:
		v.errorf(path+".name", "name must be between 1 and %d characters long (it is %d)", maxUserVolumeName, len(u.Name))
	case strings.ContainsFunc(u.Name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-')
	}):
		v.errorf(path+".name", "name %q can only contain lowercase and uppercase ASCII letters, digits, and hyphens", u.Name)
	}

	switch u.Type() {
	case UserVolumeDirectory:
		if u.Provisioning != nil {
			v.errorf(path+".provisioning", "provisioning spec is invalid for volumeType directory")
		}

		if u.Encryption != nil {
			v.errorf(path+".encryption", "encryption spec is invalid for volumeType directory")
		}

		if u.Filesystem != nil {
			v.errorf(path+".filesystem", "filesystem spec is invalid for volumeType directory")
		}

		if u.Mount != nil && u.Mount.DisableAccessTime != nil {
			v.errorf(path+".mount.disableAccessTime", "mount.disableAccessTime is invalid for volumeType directory")
		}
	case UserVolumeDisk, UserVolumePartition:
		u.checkProvisioning(v, path, u.Type() == UserVolumePartition)
		u.checkFilesystem(v, path)
		u.checkEncryption(v, path)
	default:
		v.errorf(path+".volumeType", "unsupported volume type %q: want partition, disk or directory", u.VolumeType)
	}

	for _, s := range []struct {
		name  string
		sched *UserVolumeSchedule
	}{{"trim", u.Trim}, {"scrub", u.Scrub}} {
		if s.sched == nil {
			continue
		}

		if s.name == "scrub" && s.sched.Interval != 0 && s.sched.Interval < 10*time.Second {
			v.errorf(path+".scrub.interval", "scrub interval: minimum value is 10s")
		}

		v.errorf(path+"."+s.name, "talosbox does not %s user volumes: it cannot honour a %s setting (remove it)", s.name, s.name)
	}

	if v.mode == ModeContainer {
		v.errorf(path, "a container node has no disks, and its EPHEMERAL is not /var: talosbox makes user volumes on metal only")
	}

	u.checkMachineDisks(v, path)
}

func (u *UserVolumeConfig) checkProvisioning(v *validator, path string, sized bool) {
	p := u.Provisioning
	if p == nil {
		p = &UserVolumeProvisioning{}
	}

	pp := path + ".provisioning"

	if p.DiskSelector.empty() {
		v.errorf(pp+".diskSelector.match", `disk selector is required: a CEL expression choosing the disk (disk.transport == "nvme", !system_disk)`)
	} else {
		checkDiskMatch(v.errorf, pp+".diskSelector.match", p.DiskSelector)
	}

	minSize, minErr := ParseVolumeSize(p.MinSize)
	if minErr != nil {
		v.errorf(pp+".minSize", "%v", minErr)
	}

	maxSize, maxErr := ParseVolumeSize(p.MaxSize)
	if maxErr != nil {
		v.errorf(pp+".maxSize", "%v", maxErr)
	}

	if !sized {
		if p.MinSize != "" || p.MaxSize != "" || p.Grow != nil {
			v.errorf(pp, "min size, max size and grow are not supported (a disk volume is the whole disk)")
		}

		return
	}

	switch {
	case minErr != nil:
	case minSize.Relative:
		v.errorf(pp+".minSize", "min size %q must be a size, not a percentage", p.MinSize)
	case minSize.Negative:
		v.errorf(pp+".minSize", "min size cannot be negative")
	case maxErr != nil:
	case !minSize.IsZero() && !maxSize.IsZero() && !maxSize.Relative && !maxSize.Negative && minSize.Bytes > maxSize.Bytes:
		v.errorf(pp, "min size is greater than max size")
	case minSize.IsZero() && maxSize.IsZero():
		v.errorf(pp, "min size or max size is required")
	}

	if p.Grow != nil && *p.Grow {
		v.errorf(pp+".grow", "talosbox does not grow user volumes (it cannot grow their ext4 filesystem): remove grow, and give the volume its size with maxSize")
	}
}

func (u *UserVolumeConfig) checkFilesystem(v *validator, path string) {
	f := u.Filesystem
	if f == nil {
		v.warnf(path+".filesystem.type", "talosbox formats user volumes ext4 (Talos's default is xfs): write filesystem.type: ext4 to say so")

		return
	}

	fp := path + ".filesystem"

	switch f.Type {
	case "ext4":
	case "":
		v.warnf(fp+".type", "talosbox formats user volumes ext4 (Talos's default is xfs): write type: ext4 to say so")
	case "xfs", "btrfs":
		v.errorf(fp+".type", "talosbox formats user volumes ext4 only, it cannot make %s: write type: ext4", f.Type)
	default:
		v.errorf(fp+".type", "unsupported filesystem type: %s (want ext4, the one talosbox makes)", f.Type)
	}

	if f.ProjectQuotaSupport != nil && *f.ProjectQuotaSupport {
		v.errorf(fp+".projectQuotaSupport", "project quota support is only available for xfs filesystem, which talosbox does not make")
	}

	if len(f.XFS) > 0 {
		v.errorf(fp+".xfs", "xfs options are only available for xfs filesystem, which talosbox does not make")
	}
}

func (u *UserVolumeConfig) checkEncryption(v *validator, path string) {
	e := u.Encryption
	if e == nil {
		return
	}

	ep := path + ".encryption"

	if e.Provider != "luks2" {
		v.errorf(ep+".provider", "unsupported encryption provider: %q (want luks2)", e.Provider)
	}

	if len(e.Keys) == 0 {
		v.errorf(ep+".keys", "encryption keys are required")
	}

	slots := map[int]bool{}

	for i, k := range e.Keys {
		kp := ep + ".keys[" + strconv.Itoa(i) + "]"

		if slots[k.Slot] {
			v.errorf(kp+".slot", "duplicate key slot %d", k.Slot)
		}

		slots[k.Slot] = true

		if k.Static == nil && k.NodeID == nil && k.KMS == nil && k.TPM == nil {
			v.errorf(kp, "at least one encryption key type must be specified for slot %d", k.Slot)
		}

		if k.TPM != nil && k.TPM.Options != nil {
			for _, pcr := range k.TPM.Options.PCRs {
				if pcr < 0 || pcr > 23 {
					v.errorf(kp+".tpm.options.pcrs", "TPM PCR %d is out of range (0-23)", pcr)
				}
			}
		}
	}

	v.errorf(ep, "talosbox does not encrypt user volumes yet: it cannot honour this encryption (remove it, or encrypt the system disk with machine.systemDiskEncryption)")
}

// checkMachineDisks refuses a mount point machine.disks mounts too.
func (u *UserVolumeConfig) checkMachineDisks(v *validator, path string) {
	if v.cfg.Machine == nil || u.Name == "" {
		return
	}

	for i, d := range v.cfg.Machine.Disks {
		for j, p := range d.Partitions {
			if pathClean(p.MountPoint) == u.MountPoint() {
				v.errorf(path+".name", "%s is where machine.disks[%d].partitions[%d] is mounted too: give the volume another name", u.MountPoint(), i, j)
			}
		}
	}
}

func pathClean(p string) string {
	if p == "" {
		return ""
	}

	return path.Clean(p)
}

// fold: nothing in v1alpha1 says it.
func (*UserVolumeConfig) fold(*folding) {}
