// Package nocloud is Talos's nocloud platform (talos.platform=nocloud):
// the machine config, the hostname and the network come from a NoCloud
// seed, a filesystem labelled cidata holding cloud-init's user-data,
// meta-data and network-config, as Proxmox, libvirt's virt-install
// --cloud-init and most clouds without a metadata server hand them over.
// user-data is the machine config as it is (Talos takes no #cloud-config).
//
// The seed is read as an ISO 9660 filesystem from Go (iso9660.go), so the
// node needs no isofs module: `genisoimage -V cidata
// -J -r` and `xorriso -as mkisofs -V cidata -J -r` make one. A vfat seed
// (mkfs.vfat -n CIDATA) is found and refused with the reason.
package nocloud

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/talosbox/talosbox/internal/disk"
)

// Label is the seed's volume label; cloud-init matches it in any case.
const Label = "cidata"

// Data is a seed's files, each nil when absent: a seed without user-data
// gives the network and the hostname, and the node waits for
// apply-config --insecure at the address its network-config gives.
type Data struct {
	// Device is where the seed was found, e.g. /dev/vdb.
	Device                            string
	UserData, MetaData, NetworkConfig []byte
}

// ErrNoSeed is Find's answer when no device holds a seed.
var ErrNoSeed = errors.New("no NoCloud seed (a volume labelled cidata)")

// maxFile bounds each file read: a config is small, a seed is not a disk.
const maxFile = 4 << 20

// Find looks for the seed among devs (disks and partitions, disk.Scan's)
// by volume label.
func Find(devs []disk.BlockDevice) (disk.BlockDevice, disk.Volume, error) {
	for _, d := range devs {
		f, err := os.Open(d.Path)
		if err != nil {
			continue // a CD drive without a disc, a device that went away
		}

		v, err := disk.ProbeVolume(disk.Region{File: f, Size: d.Size})
		f.Close()

		if err == nil && strings.EqualFold(v.Label, Label) {
			return d, v, nil
		}
	}

	return disk.BlockDevice{}, disk.Volume{}, ErrNoSeed
}

// Read finds the seed among devs and reads its files.
func Read(devs []disk.BlockDevice) (*Data, error) {
	d, v, err := Find(devs)
	if err != nil {
		return nil, err
	}

	if v.Name != disk.ProbeISO9660 {
		return nil, fmt.Errorf("nocloud: %s is a %s seed: only ISO 9660 seeds are read (genisoimage -V cidata -J -r)", d.Path, v.Name)
	}

	return ReadISO(d.Path)
}

// ReadISO reads the seed's files from the ISO 9660 filesystem at path.
func ReadISO(path string) (*Data, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("nocloud: %w", err)
	}
	defer f.Close()

	files, err := readRoot(f)
	if err != nil {
		return nil, fmt.Errorf("nocloud: %s: %w", path, err)
	}

	data := &Data{Device: path}

	for name, dst := range map[string]*[]byte{"user-data": &data.UserData, "meta-data": &data.MetaData, "network-config": &data.NetworkConfig} {
		b, err := readISOFile(f, files, name)
		if err != nil {
			return nil, fmt.Errorf("nocloud: %s: %s: %w", path, name, err)
		}

		*dst = b
	}

	if data.UserData == nil && data.MetaData == nil && data.NetworkConfig == nil {
		return nil, fmt.Errorf("nocloud: %s: the seed has none of user-data, meta-data and network-config (a seed made without Rock Ridge names? genisoimage -r)", path)
	}

	return data, nil
}
