package block

// DiscoveredVolumeType is the type's name, as Talos has it.
const DiscoveredVolumeType = "DiscoveredVolumes.block.talos.dev"

// DiscoveredVolumeSpec is what a probe found on a disk or partition.
type DiscoveredVolumeSpec struct {
	DevPath        string `yaml:"dev_path"`
	Type           string `yaml:"type"` // disk or partition
	Parent         string `yaml:"parent,omitempty"`
	Size           int64  `yaml:"size"`
	PrettySize     string `yaml:"pretty_size"`
	SectorSize     int64  `yaml:"sector_size,omitempty"`
	Name           string `yaml:"name,omitempty"` // ext4, xfs, vfat, luks, gpt, talosmeta, ...
	UUID           string `yaml:"uuid,omitempty"`
	Label          string `yaml:"label,omitempty"`
	PartitionLabel string `yaml:"partition_label,omitempty"`
	PartitionIndex int    `yaml:"partition_index,omitempty"`
}
