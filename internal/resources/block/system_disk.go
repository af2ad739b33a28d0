package block

// The type's name and IDs, as Talos has them.
const (
	SystemDiskType = "SystemDisks.block.talos.dev"
	// SystemDiskID is the one SystemDisk.
	SystemDiskID = "system-disk"
)

// SystemDiskSpec names the disk holding STATE.
type SystemDiskSpec struct {
	DiskID  string `yaml:"diskID"`
	DevPath string `yaml:"devPath"`
}
