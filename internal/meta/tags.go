package meta

// Tags Talos defines (pkg/machinery/meta/constants.go). 0 ends the
// records and 1–5 are reserved by the ADV format (3–5 were syslinux's
// Reserved1..3), so Talos's own keys start at 6.
const (
	// Upgrade holds the boot label (A/B, or the previous UKI) to fall back
	// to: written by an upgrade, consumed by a rollback, deleted once the
	// upgraded node runs and is ready.
	Upgrade uint8 = iota + 6
	// StagedUpgradeImageRef is the installer image of a staged upgrade.
	StagedUpgradeImageRef
	// StagedUpgradeInstallOptions are the JSON install options of a staged
	// upgrade.
	StagedUpgradeInstallOptions
	// StateEncryptionConfig is the JSON encryption config of STATE, kept
	// here because STATE must be opened before the machine config on it
	// can be read.
	StateEncryptionConfig
	// MetalNetworkPlatformConfig is the network config of the metal
	// platform (what the dashboard or `meta write 0xa` sets).
	MetalNetworkPlatformConfig
	// DownloadURLCode is the value of ${code} in a talos.config= URL.
	DownloadURLCode
	// UserReserved1 is for users.
	UserReserved1
	// UserReserved2 is for users.
	UserReserved2
	// UserReserved3 is for users.
	UserReserved3
	// UUIDOverride replaces the machine UUID from the hardware.
	UUIDOverride
	// UniqueMachineToken is a random token unique to the machine, since
	// UUIDs may repeat or be all zeros.
	UniqueMachineToken
	// DiskImageBootloader is the boot loader a disk image was built with;
	// it is wiped on first boot.
	DiskImageBootloader
)

// tagNames are the constants' names, for messages.
var tagNames = map[uint8]string{
	Upgrade:                     "Upgrade",
	StagedUpgradeImageRef:       "StagedUpgradeImageRef",
	StagedUpgradeInstallOptions: "StagedUpgradeInstallOptions",
	StateEncryptionConfig:       "StateEncryptionConfig",
	MetalNetworkPlatformConfig:  "MetalNetworkPlatformConfig",
	DownloadURLCode:             "DownloadURLCode",
	UserReserved1:               "UserReserved1",
	UserReserved2:               "UserReserved2",
	UserReserved3:               "UserReserved3",
	UUIDOverride:                "UUIDOverride",
	UniqueMachineToken:          "UniqueMachineToken",
	DiskImageBootloader:         "DiskImageBootloader",
}

// TagName is the name of a tag Talos defines, "" for others.
func TagName(tag uint8) string { return tagNames[tag] }

// TagID is how a tag is written as a resource ID and on the command line:
// "0x06".
func TagID(tag uint8) string {
	const hex = "0123456789abcdef"

	return "0x" + string([]byte{hex[tag>>4], hex[tag&0xf]})
}
