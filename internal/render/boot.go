package render

import (
	"fmt"
	"strings"

	"github.com/dustin/go-humanize"
	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bootloader"
	"github.com/talosbox/talosbox/internal/disk"
	"github.com/talosbox/talosbox/internal/version"
)

// boot renders what a metal install writes: grub.cfg on BOOT and the
// install disk's partitions. A Docker node has neither.
func (b *builder) boot() {
	if b.opts.Mode == configs.ModeContainer {
		return
	}

	in := b.cfg.Machine.Install
	if in == nil {
		b.note("no machine.install: the node installs nothing, so no grub.cfg or disk layout")

		return
	}

	b.grub(in)
	b.disk(in)
}

// grub renders grub.cfg as a fresh install leaves it: slot A, booting the
// running kernel's command line with machine.install.extraKernelArgs.
func (b *builder) grub(in *configs.InstallConfig) {
	if in.Bootloader != nil && !*in.Bootloader {
		b.note("machine.install.bootloader is false: the install leaves BOOT empty")

		return
	}

	var args []string

	for _, f := range strings.Fields(b.node.cmdline) {
		if !strings.HasPrefix(f, "BOOT_IMAGE=") && !strings.HasPrefix(f, "initrd=") {
			args = append(args, f)
		}
	}

	cmdline := strings.Join(append(args, in.ExtraKernelArgs...), " ")

	conf := &bootloader.Config{Timeout: bootloader.DefaultTimeout}
	conf.Put(bootloader.Entry{Label: bootloader.LabelA, Version: installVersion(in.Image), Cmdline: cmdline})
	conf.Serial = strings.Contains(" "+cmdline, " console=ttyS")

	data, err := conf.Render()
	if err != nil {
		b.failErr("machine.install.extraKernelArgs", err)

		return
	}

	b.add(Artifact{Path: "boot/" + bootloader.ConfigPath, NodePath: "BOOT partition: " + bootloader.ConfigPath, Mode: 0o644, Data: data})
}

// installVersion is the version an installer image holds, from its tag
// (the node reads it from the image): this talosctl's when untagged.
func installVersion(image string) string {
	image, _, _ = strings.Cut(image, "@")

	if i := strings.LastIndexAny(image, ":/"); i >= 0 && image[i] == ':' {
		return image[i+1:]
	}

	return version.Tag
}

type layoutPartition struct {
	Index      int    `yaml:"index"`
	Label      string `yaml:"label"`
	Type       string `yaml:"type"`
	Start      uint64 `yaml:"startSector"`
	End        uint64 `yaml:"endSector"`
	Size       string `yaml:"size"`
	Bytes      int64  `yaml:"bytes"`
	Filesystem string `yaml:"filesystem,omitempty"`
}

type userDisk struct {
	Device     string                  `yaml:"device"`
	Partitions []configs.DiskPartition `yaml:"partitions"`
}

// disk renders the system disk's partitions as the install plans them on a
// disk of the placeholder size, and lists machine.disks.
func (b *builder) disk(in *configs.InstallConfig) {
	if b.check {
		return
	}

	target := in.Disk

	switch u := configs.DocumentOf[*configs.UnattendedInstallConfig](b.cfg); {
	case in.DiskSelector != nil:
		target = "the disk machine.install.diskSelector matches"
	case target == "" && u != nil:
		// machine.install.disk holds only an expression naming a path.
		if e, err := u.Selector(); err == nil && e != nil {
			target = "the first disk UnattendedInstallConfig's " + e.String() + " matches"
		}
	}

	out := struct {
		Disk       string            `yaml:"disk"`
		Size       string            `yaml:"size"`
		Note       string            `yaml:"note,omitempty"`
		Partitions []layoutPartition `yaml:"partitions"`
		UserDisks  []userDisk        `yaml:"userDisks,omitempty"`
	}{Disk: target, Size: fmt.Sprintf("%s (%d bytes)", humanize.IBytes(uint64(b.node.diskSize)), b.node.diskSize)}

	enc := b.cfg.Machine.SystemDiskEncryption

	extents, err := disk.Plan(disk.SystemLayout, b.node.diskSize)
	if err != nil {
		b.note("disk layout: %v (--disk-size)", err)
		out.Note = err.Error()
	}

	for _, e := range extents {
		p := layoutPartition{Index: e.Index, Label: e.Label, Type: e.Type, Start: e.Start, End: e.End,
			Size: humanize.IBytes(uint64(e.Bytes())), Bytes: e.Bytes(), Filesystem: e.FS}

		if enc != nil && ((e.Label == disk.LabelState && enc.State != nil) || (e.Label == disk.LabelEphemeral && enc.Ephemeral != nil)) {
			p.Filesystem = "luks2, ext4 inside (machine.systemDiskEncryption)"
		}

		out.Partitions = append(out.Partitions, p)
	}

	for _, d := range b.cfg.Machine.Disks {
		out.UserDisks = append(out.UserDisks, userDisk{Device: d.Device, Partitions: d.Partitions})
	}

	data, err := yaml.Marshal(out)
	if err != nil {
		b.fail("machine.install", "disk layout: %v", err)

		return
	}

	b.add(Artifact{Path: "boot/disk.yaml", NodePath: "the install disk's GPT", Data: data})
}
