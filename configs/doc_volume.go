package configs

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/talosbox/talosbox/configs/diskexpr"
)

// VolumeConfig is Talos's VolumeConfig: how one system volume is made,
// encrypted and mounted, named after it. talosbox's system disk has two
// volumes, STATE and EPHEMERAL, both ext4, EPHEMERAL taking the rest of
// the system disk (internal/disk). Their encryption is
// machine.systemDiskEncryption (Talos refuses it set both ways, and so
// does talosbox); the storage reads the rest from the document: mount
// (nosuid and nodev, noatime), EPHEMERAL's minimum size and disk selector
// (checked at install: the install disk must match it) and trim
// (FilesystemTrimConfig). What the node cannot do is refused: other
// volumes, other disks, a maximum size, xfs options, scrubbing.
type VolumeConfig struct {
	Name         string              `yaml:"name"`
	Provisioning *VolumeProvisioning `yaml:"provisioning,omitempty"`
	Filesystem   Unstructured        `yaml:"filesystem,omitempty"`
	Encryption   *VolumeEncryption   `yaml:"encryption,omitempty"`
	Mount        *VolumeMountSpec    `yaml:"mount,omitempty"`
	Trim         *VolumeTrim         `yaml:"trim,omitempty"`
	Scrub        Unstructured        `yaml:"scrub,omitempty"`
}

// VolumeProvisioning is where and how big a volume is made.
type VolumeProvisioning struct {
	DiskSelector *DiskMatch `yaml:"diskSelector,omitempty"`
	Grow         *bool      `yaml:"grow,omitempty"`
	// MinSize and MaxSize are sizes as written: "10GiB", "2.5TB"; MaxSize
	// also "50%" or "-10GiB" (what to leave free).
	MinSize string `yaml:"minSize,omitempty"`
	MaxSize string `yaml:"maxSize,omitempty"`
}

// VolumeEncryption is Talos's encryption spec of a volume; it folds into
// machine.systemDiskEncryption.
type VolumeEncryption struct {
	Provider      string                `yaml:"provider,omitempty"`
	Keys          []VolumeEncryptionKey `yaml:"keys,omitempty"`
	Cipher        string                `yaml:"cipher,omitempty"`
	KeySize       uint                  `yaml:"keySize,omitempty"`
	BlockSize     uint64                `yaml:"blockSize,omitempty"`
	Options       []string              `yaml:"options,omitempty"`
	AllowDiscards *bool                 `yaml:"allowDiscards,omitempty"`
}

// VolumeEncryptionKey is one key slot.
type VolumeEncryptionKey struct {
	Slot        int                  `yaml:"slot"`
	Static      *VolumeKeyStatic     `yaml:"static,omitempty"`
	NodeID      *EncryptionKeyNodeID `yaml:"nodeID,omitempty"`
	KMS         *EncryptionKeyKMS    `yaml:"kms,omitempty"`
	TPM         *VolumeKeyTPM        `yaml:"tpm,omitempty"`
	LockToState *bool                `yaml:"lockToState,omitempty"`
}

// VolumeKeyStatic is a passphrase kept in the config.
type VolumeKeyStatic struct {
	Passphrase string `yaml:"passphrase,omitempty" secret:"true"`
}

// VolumeKeyTPM seals the key with the TPM.
type VolumeKeyTPM struct {
	Options                       Unstructured `yaml:"options,omitempty"`
	CheckSecurebootStatusOnEnroll *bool        `yaml:"checkSecurebootStatusOnEnroll,omitempty"`
}

// VolumeMountSpec is how a volume is mounted.
type VolumeMountSpec struct {
	// Secure mounts it nosuid and nodev; unset is true.
	Secure *bool `yaml:"secure,omitempty"`
	// DisableAccessTime mounts it noatime.
	DisableAccessTime *bool `yaml:"disableAccessTime,omitempty"`
}

// VolumeTrim overrides FilesystemTrimConfig for one volume.
type VolumeTrim struct {
	Enabled  *bool         `yaml:"enabled,omitempty"`
	Interval time.Duration `yaml:"interval,omitempty"`
}

// Talos's system volume names.
const (
	VolumeState     = "STATE"
	VolumeEphemeral = "EPHEMERAL"
)

// talosOnlyVolumes are the other system volumes Talos lets a VolumeConfig
// name: its image cache partition, and the directories it can move onto
// partitions of their own.
var talosOnlyVolumes = []string{"IMAGECACHE", "ETCD", "CRI", "KUBELET", "LOG"}

// Kind implements Document.
func (*VolumeConfig) Kind() string { return "VolumeConfig" }

// DocumentName implements NamedDocument.
func (c *VolumeConfig) DocumentName() string { return c.Name }

// volumeCannot reports what the node cannot honour: an error, but in a
// container, whose volumes are directories, where it is only ignored.
func volumeCannot(v *validator) func(path, format string, args ...any) {
	if v.mode == ModeContainer {
		return func(path, format string, args ...any) {
			v.warnf(path, format+" (ignored in container mode)", args...)
		}
	}

	return v.errorf
}

//nolint:gocyclo // one rule after the other
func (c *VolumeConfig) check(v *validator, path string) {
	switch {
	case c.Name == VolumeState || c.Name == VolumeEphemeral:
	case slices.Contains(talosOnlyVolumes, c.Name):
		volumeCannot(v)(path+".name", "talosbox's system disk has the STATE and EPHEMERAL volumes only, everything else lives on EPHEMERAL: "+
			"it cannot honour a VolumeConfig for %s", c.Name)

		return
	default:
		v.errorf(path+".name", "unknown system volume %q: a VolumeConfig names STATE or EPHEMERAL (Talos also has %s, which talosbox does not)",
			c.Name, strings.Join(talosOnlyVolumes, ", "))

		return
	}

	c.checkProvisioning(v, path+".provisioning")

	if len(c.Filesystem) > 0 {
		volumeCannot(v)(path+".filesystem", "talosbox formats its system volumes ext4 (its kernel has ext4 built in), not xfs: "+
			"filesystem options cannot be honoured; remove filesystem")
	}

	if c.Name == VolumeState && c.Mount != nil && *c.Mount != (VolumeMountSpec{}) {
		v.errorf(path+".mount", `mount config is not allowed for the "STATE" volume`)
	}

	if c.Trim != nil && c.Trim.Interval < 0 {
		v.errorf(path+".trim.interval", "trim interval cannot be negative")
	}

	if c.Trim != nil && c.Name == VolumeState {
		v.warnf(path+".trim", "STATE is not trimmed (as in Talos, only EPHEMERAL of the system volumes is): trim has no effect here")
	}

	if enabled, ok := c.Scrub["enabled"].(bool); len(c.Scrub) > 0 && (!ok || enabled) {
		volumeCannot(v)(path+".scrub", "talosbox's system volumes are ext4, which has no online scrub (Talos scrubs xfs): "+
			"scrubbing cannot be honoured; remove scrub or set scrub.enabled: false")
	}

	if e := c.Encryption; e != nil {
		c.checkEncryption(v, path+".encryption", e)
	}
}

func (c *VolumeConfig) checkProvisioning(v *validator, p string) {
	pr := c.Provisioning
	if pr == nil || *pr == (VolumeProvisioning{}) {
		return
	}

	if c.Name == VolumeState {
		v.errorf(p, `provisioning config is not allowed for the "STATE" volume`)

		return
	}

	// What the selector says of the system disk is known now when it
	// does not depend on the disk (!system_disk); the rest is evaluated
	// against the install disk at install.
	if e := checkDiskMatch(volumeCannot(v), p+".diskSelector.match", pr.DiskSelector); e != nil {
		if matches, known := e.Decided(true); known && !matches {
			volumeCannot(v)(p+".diskSelector.match", "talosbox makes EPHEMERAL on the system disk, after STATE: it cannot place it on another disk; "+
				"remove diskSelector (or write system_disk)")
		}
	}

	if pr.Grow != nil && !*pr.Grow {
		volumeCannot(v)(p+".grow", "talosbox's EPHEMERAL always takes the rest of the system disk: it cannot keep it from growing; remove grow or set it to true")
	}

	if pr.MaxSize != "" {
		volumeCannot(v)(p+".maxSize", "talosbox's EPHEMERAL always takes the rest of the system disk: a maximum size cannot be honoured; remove maxSize")
	}

	if pr.MinSize != "" {
		if _, err := parseMinSize(pr.MinSize); err != nil {
			v.errorf(p+".minSize", "%v", err)
		}
	}
}

func parseMinSize(s string) (uint64, error) {
	if strings.HasPrefix(s, "-") {
		return 0, fmt.Errorf("min size %q cannot be negative", s)
	}

	n, err := humanize.ParseBytes(s)
	if err != nil {
		return 0, fmt.Errorf("invalid min size %q: want a size such as 10GiB", s)
	}

	return n, nil
}

func (c *VolumeConfig) checkEncryption(v *validator, p string, e *VolumeEncryption) {
	// The rest of Talos's rules are machine.systemDiskEncryption's,
	// applied to the folded config.
	if e.Provider == "" {
		v.errorf(p+".provider", "provider is required: luks2")
	}

	for i, k := range e.Keys {
		kp := indexPath(p+".keys", i)

		if k.LockToState != nil && *k.LockToState && c.Name == VolumeState {
			v.errorf(kp+".lockToState", `state-locked key is not allowed for the "STATE" volume`)
		}

		if k.TPM != nil && len(k.TPM.Options) > 0 {
			volumeCannot(v)(kp+".tpm.options", "talosbox cannot honour TPM options (PCRs to seal to): machine.systemDiskEncryption, "+
				"which it folds into, has none; remove options")
		}
	}
}

func (c *VolumeConfig) fold(f *folding) {
	e := c.Encryption
	if e == nil || (c.Name != VolumeState && c.Name != VolumeEphemeral) {
		return
	}

	key := strings.ToLower(c.Name)

	if w := f.written.Machine; w != nil && w.SystemDiskEncryption != nil &&
		((c.Name == VolumeState && w.SystemDiskEncryption.State != nil) || (c.Name == VolumeEphemeral && w.SystemDiskEncryption.Ephemeral != nil)) {
		f.conflict("encryption", "machine.systemDiskEncryption."+key, fmt.Sprintf("system disk encryption for %q", c.Name))

		return
	}

	ec := &EncryptionConfig{Provider: e.Provider, Cipher: e.Cipher, KeySize: e.KeySize, BlockSize: e.BlockSize, Options: slices.Clone(e.Options)}

	for _, k := range e.Keys {
		key := EncryptionKey{Slot: k.Slot, NodeID: k.NodeID, LockToState: k.LockToState != nil && *k.LockToState}

		if k.Static != nil {
			key.Static = &EncryptionKeyStatic{Passphrase: k.Static.Passphrase}
		}

		if k.KMS != nil {
			key.KMS = &EncryptionKeyKMS{Endpoint: k.KMS.Endpoint}
		}

		if k.TPM != nil {
			key.TPM = &EncryptionKeyTPM{CheckSecurebootStatusOnEnroll: k.TPM.CheckSecurebootStatusOnEnroll}
		}

		ec.Keys = append(ec.Keys, key)
	}

	m := f.machine()
	if m.SystemDiskEncryption == nil {
		m.SystemDiskEncryption = &SystemDiskEncryption{}
	}

	if c.Name == VolumeState {
		m.SystemDiskEncryption.State = ec
	} else {
		m.SystemDiskEncryption.Ephemeral = ec
	}

	effective := "machine.systemDiskEncryption." + key
	f.alias(effective, "encryption")

	if e.AllowDiscards != nil && *e.AllowDiscards && !slices.Contains(ec.Options, "allow_discards") {
		ec.Options = append(ec.Options, "allow_discards")
		f.alias(indexPath(effective+".options", len(ec.Options)-1), "encryption.allowDiscards")
	}
}

// SystemVolumeConfig is the config's VolumeConfig for the system volume
// name (STATE, EPHEMERAL), nil when it has none.
func SystemVolumeConfig(c *Config, name string) *VolumeConfig {
	for _, d := range DocumentsOf[*VolumeConfig](c) {
		if d.Name == name {
			return d
		}
	}

	return nil
}

// MountSecure says whether the volume is mounted nosuid and nodev: unless
// a VolumeConfig says mount.secure: false, as in Talos.
func (c *VolumeConfig) MountSecure() bool {
	return c == nil || c.Mount == nil || c.Mount.Secure == nil || *c.Mount.Secure
}

// MountNoAccessTime says whether the volume is mounted noatime: def
// unless a VolumeConfig says mount.disableAccessTime.
func (c *VolumeConfig) MountNoAccessTime(def bool) bool {
	if c == nil || c.Mount == nil || c.Mount.DisableAccessTime == nil {
		return def
	}

	return *c.Mount.DisableAccessTime
}

// Selector is the volume's parsed provisioning.diskSelector, nil when
// there is none.
func (c *VolumeConfig) Selector() (*diskexpr.Expr, error) {
	if c == nil || c.Provisioning == nil {
		return nil, nil
	}

	return c.Provisioning.DiskSelector.Expr()
}

// MinSize is the volume's provisioning.minSize in bytes, 0 when unset.
func (c *VolumeConfig) MinSize() uint64 {
	if c == nil || c.Provisioning == nil || c.Provisioning.MinSize == "" {
		return 0
	}

	n, _ := parseMinSize(c.Provisioning.MinSize) //nolint:errcheck // refused by check

	return n
}
