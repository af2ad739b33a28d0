package block

// BlockDeviceType is the type's name, as Talos has it.
const BlockDeviceType = "BlockDevices.block.talos.dev"

// BlockDeviceSpec is any block device, disk or partition.
type BlockDeviceSpec struct {
	Type            string `yaml:"type"` // disk or partition
	Major           int    `yaml:"major"`
	Minor           int    `yaml:"minor"`
	PartitionName   string `yaml:"partitionName,omitempty"`
	PartitionNumber int    `yaml:"partitionNumber,omitempty"`
	DevicePath      string `yaml:"devicePath"`
	Parent          string `yaml:"parent,omitempty"`
}
