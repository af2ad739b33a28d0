package machine

import (
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/talosbox/talosbox/internal/disk"
	"github.com/talosbox/talosbox/internal/platform"
	"github.com/talosbox/talosbox/internal/platform/nocloud"
	networkres "github.com/talosbox/talosbox/internal/resources/network"
)

// platformNoCloud is talos.platform=nocloud: the config, hostname and
// network come from a NoCloud seed (internal/platform/nocloud).
const platformNoCloud = "nocloud"

// seed is the NoCloud seed, read once per boot: both the config and the
// network come from it.
type seed struct {
	once sync.Once
	data *nocloud.Data
	err  error
}

// isNoCloud says the kernel command line names the nocloud platform.
func (n *Node) isNoCloud() bool {
	p, _ := n.cmdline.Get(platform.ParamPlatform)
	return p == platformNoCloud
}

// nocloudSeed reads the seed from the machine's disks and CD drives.
func (n *Node) nocloudSeed() (*nocloud.Data, error) {
	n.seed.once.Do(func() {
		devs, err := disk.Scan(n.sysRoot)
		if err != nil {
			n.seed.err = err
			return
		}

		n.seed.data, n.seed.err = nocloud.Read(devs)
		if n.seed.err == nil {
			n.logf("nocloud: the seed on %s: user-data %d bytes, meta-data %d, network-config %d",
				n.seed.data.Device, len(n.seed.data.UserData), len(n.seed.data.MetaData), len(n.seed.data.NetworkConfig))
		}
	})

	return n.seed.data, n.seed.err
}

// nocloudNetwork is the seed's network-config and meta-data's hostname as
// networkd's platform layer; nil, after saying why, when there is none.
func (n *Node) nocloudNetwork() *networkres.PlatformConfigSpec {
	data, err := n.nocloudSeed()
	if err != nil {
		n.logf("nocloud: no network config from the seed: %v", err)
		return nil
	}

	var md nocloud.MetaData

	if data.MetaData != nil {
		if md, err = nocloud.ParseMetaData(data.MetaData); err != nil {
			n.logf("nocloud: meta-data refused: %v", err)
		}
	}

	// Without network-config the platform still names the host.
	spec, err := nocloud.ParseNetworkConfig(data.NetworkConfig, md.Hostname, linkByMAC)
	if err != nil {
		n.logf("nocloud: %v", err)
		return nil
	}

	if spec.IsEmpty() {
		return nil
	}

	return spec
}

// linkByMAC finds the link with a MAC address in /sys/class/net.
func linkByMAC(mac string) (string, bool) {
	dirs, err := filepath.Glob("/sys/class/net/*/address")
	if err != nil {
		return "", false
	}

	for _, p := range dirs {
		if b, err := os.ReadFile(p); err == nil && strings.EqualFold(strings.TrimSpace(string(b)), mac) {
			return filepath.Base(filepath.Dir(p)), true
		}
	}

	return "", false
}
