package configs

import "github.com/talosbox/talosbox/configs/diskexpr"

// UnattendedInstallConfig is Talos's UnattendedInstallConfig (written by
// gen config since Talos 1.14 in place of machine.install): the installer
// image and the disk to install to, chosen by a CEL expression. It folds
// into machine.install (the image, wipe, and the disk when the expression
// only names its path, disk.dev_path == "/dev/sda", as gen config writes
// it); the install evaluates the expression against the machine's disks
// (internal/storage), so any expression configs/diskexpr reads chooses
// the disk. Talos refuses it alongside a v1alpha1 machine.install, and
// so does talosbox.
type UnattendedInstallConfig struct {
	// Reboot after the install: unset reboots when an installer image is
	// given. talosbox installs in place and runs on.
	Reboot       *bool                   `yaml:"reboot,omitempty"`
	Installer    *UnattendedInstaller    `yaml:"installer,omitempty"`
	Provisioning *UnattendedProvisioning `yaml:"provisioning,omitempty"`
}

// UnattendedInstaller names the installer image.
type UnattendedInstaller struct {
	Image string `yaml:"image,omitempty"`
}

// UnattendedProvisioning chooses the install disk.
type UnattendedProvisioning struct {
	DiskSelector *DiskMatch `yaml:"diskSelector,omitempty"`
	// Wipe zeroes the disk first; unset is true, as in Talos.
	Wipe *bool `yaml:"wipe,omitempty"`
}

// Kind implements Document.
func (*UnattendedInstallConfig) Kind() string { return "UnattendedInstallConfig" }

func (u *UnattendedInstallConfig) diskMatch() *DiskMatch {
	if u.Provisioning == nil {
		return nil
	}

	return u.Provisioning.DiskSelector
}

// Selector is the parsed disk expression, nil when there is none.
func (u *UnattendedInstallConfig) Selector() (*diskexpr.Expr, error) {
	return u.diskMatch().Expr()
}

// installDevPath is the disk's path when the expression names the disk by
// it and nothing else: machine.install.disk says as much.
func (u *UnattendedInstallConfig) installDevPath() string {
	e, err := u.Selector()
	if err != nil || e == nil {
		return ""
	}

	if field, path, ok := e.Equality(); ok && field == "dev_path" {
		return path
	}

	return ""
}

func (u *UnattendedInstallConfig) image() string {
	if u.Installer == nil {
		return ""
	}

	return u.Installer.Image
}

func (u *UnattendedInstallConfig) check(v *validator, path string) {
	const matchPath = ".provisioning.diskSelector.match"

	// Where the node does not install (a container, a cloud image), what
	// talosbox cannot install to is only worth a warning.
	report := v.warnf
	if v.mode.RequiresInstall() {
		report = v.errorf
	}

	if d := u.diskMatch(); d.empty() {
		v.errorf(path+matchPath, `provisioning.diskSelector.match is required: a CEL expression choosing the install disk, such as disk.dev_path == "/dev/sda"`)
	} else if e := checkDiskMatch(report, path+matchPath, d); e != nil {
		if matches, known := e.Decided(false); known && !matches {
			report(path+matchPath, "%s matches no disk: the install chooses among disks none of which is the system disk yet", e)
		}
	}

	if u.Reboot != nil && *u.Reboot && v.mode.RequiresInstall() {
		v.errorf(path+".reboot", "talosbox installs onto the disk in place and runs on from it without rebooting: "+
			"it does not implement reboot after the install; remove reboot or set it to false")
	}

	if u.image() == "" && v.mode.RequiresInstall() {
		v.warnf(path+".installer.image", "installer.image is not set: the node partitions the disk but cannot write BOOT, "+
			"so the disk will not boot by itself")
	}
}

func (u *UnattendedInstallConfig) fold(f *folding) {
	if w := f.written.Machine; w != nil && w.Install != nil {
		f.conflict("", "machine.install", "the install")

		return
	}

	in := &InstallConfig{Image: u.image(), Wipe: true}
	f.machine().Install = in
	f.alias("machine.install", "")

	if in.Image != "" {
		f.alias("machine.install.image", "installer.image")
	}

	if u.Provisioning != nil && u.Provisioning.Wipe != nil {
		in.Wipe = *u.Provisioning.Wipe
		f.alias("machine.install.wipe", "provisioning.wipe")
	}

	if p := u.installDevPath(); p != "" {
		in.Disk = p
		f.alias("machine.install.disk", "provisioning.diskSelector.match")
	}
}

// residue is what the node reads from the document itself: the disk
// expression, unless machine.install.disk says all of it.
func (u *UnattendedInstallConfig) residue() Document {
	if d := u.diskMatch(); !d.empty() && u.installDevPath() == "" {
		return &UnattendedInstallConfig{Provisioning: &UnattendedProvisioning{DiskSelector: &DiskMatch{Match: d.Match}}}
	}

	return nil
}
