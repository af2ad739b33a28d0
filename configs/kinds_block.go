package configs

// blockKinds are the document kinds of Talos's block family
// (pkg/machinery/config/types/block) that talosbox implements; each kind's
// type, rules and folding live in a doc_<kind>.go file of its own.
var blockKinds = []kindInfo{
	// Mount options and sizes apply when the volume is next made or mounted.
	{kind: "VolumeConfig", new: func() Document { return &VolumeConfig{} }, named: true},
	// The TrimController follows the config.
	{kind: "FilesystemTrimConfig", new: func() Document { return &FilesystemTrimConfig{} }, live: true},
	// Made and mounted at boot, as machine.disks: a change applies at the
	// next reboot.
	{kind: "UserVolumeConfig", new: func() Document { return &UserVolumeConfig{} }, named: true},
}
