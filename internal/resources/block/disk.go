package block

// DiskType is the type's name, as Talos has it.
const DiskType = "Disks.block.talos.dev"

// DiskSpec is a whole disk, with Talos's keys.
type DiskSpec struct {
	DevPath    string `yaml:"dev_path"`
	Size       int64  `yaml:"size"`
	PrettySize string `yaml:"pretty_size"`
	IOSize     int64  `yaml:"io_size"`
	SectorSize int64  `yaml:"sector_size"`
	Readonly   bool   `yaml:"readonly"`
	CDROM      bool   `yaml:"cdrom"`
	Model      string `yaml:"model,omitempty"`
	Serial     string `yaml:"serial,omitempty"`
	Modalias   string `yaml:"modalias,omitempty"`
	WWID       string `yaml:"wwid,omitempty"`
	UUID       string `yaml:"uuid,omitempty"`
	BusPath    string `yaml:"bus_path,omitempty"`
	Transport  string `yaml:"transport,omitempty"`
	Rotational bool   `yaml:"rotational"`
}
