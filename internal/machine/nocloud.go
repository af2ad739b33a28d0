package machine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/talosbox/talosbox/internal/disk"
	"github.com/talosbox/talosbox/internal/network"
	"github.com/talosbox/talosbox/internal/platform"
	"github.com/talosbox/talosbox/internal/platform/nocloud"
	networkres "github.com/talosbox/talosbox/internal/resources/network"
)

// platformNoCloud is talos.platform=nocloud: the config, hostname and
// network come from a NoCloud seed (internal/platform/nocloud).
const platformNoCloud = "nocloud"

// seed is the NoCloud seed, read once per boot: both the config and the
// network come from it. A seed named by the SMBIOS serial number (ds) is
// fetched over the network instead, once it is up.
type seed struct {
	once sync.Once
	data *nocloud.Data
	ds   *nocloud.DS
	err  error
}

// smbiosSerial is where the kernel shows the SMBIOS system serial number.
const smbiosSerial = "class/dmi/id/product_serial"

// isNoCloud says the kernel command line names the nocloud platform.
func (n *Node) isNoCloud() bool {
	p, _ := n.cmdline.Get(platform.ParamPlatform)
	return p == platformNoCloud
}

// nocloudSeed reads the seed from the machine's disks and CD drives, or
// else finds one the SMBIOS serial number names (ds=nocloud-net;s=URL),
// whose files are fetched later (data is then nil).
func (n *Node) nocloudSeed() (*nocloud.Data, *nocloud.DS, error) {
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

			return
		}

		if !errors.Is(n.seed.err, nocloud.ErrNoSeed) {
			return
		}

		serial, rerr := os.ReadFile(filepath.Join(n.sysRoot, smbiosSerial))
		if rerr != nil {
			return
		}

		ds, ok, derr := nocloud.ParseDS(string(serial))

		switch {
		case !ok:
		case derr != nil:
			n.seed.err = derr
		default:
			n.seed.ds, n.seed.err = &ds, nil
			n.logf("nocloud: the SMBIOS serial number names the seed %s: its files are fetched once the network is up", ds.SeedFrom)
		}
	})

	return n.seed.data, n.seed.ds, n.seed.err
}

// nocloudUserData is the seed's user-data: the disk seed's, or fetched
// from a network seed (retried until the network answers). nil means the
// seed has none.
func (n *Node) nocloudUserData(ctx context.Context) ([]byte, error) {
	data, ds, err := n.nocloudSeed()
	if err != nil {
		return nil, err
	}

	if ds != nil {
		ctx, cancel := context.WithTimeout(ctx, nocloudFetchTimeout)
		defer cancel()

		return ds.Fetch(ctx, "user-data")
	}

	return data.UserData, nil
}

// nocloudFetchTimeout bounds how long the config waits for a network
// seed's user-data before the node goes on to maintenance mode.
const nocloudFetchTimeout = 5 * time.Minute

// nocloudNetwork sets networkd's platform layer from the seed: a disk
// seed's network-config and meta-data's hostname at once; a network
// seed's hostname (h=) at once and its files once the network is up.
// Nothing, after saying why, when there is no seed.
func (n *Node) nocloudNetwork(opts *network.Options) {
	data, ds, err := n.nocloudSeed()
	if err != nil {
		n.logf("nocloud: no network config from the seed: %v", err)
		return
	}

	if ds != nil {
		if ds.Hostname != "" {
			opts.Platform = &networkres.PlatformConfigSpec{Hostnames: []networkres.HostnameSpecSpec{{Hostname: ds.Hostname, Layer: networkres.LayerPlatform}}}
		}

		opts.PlatformFetch = func(ctx context.Context) (*networkres.PlatformConfigSpec, error) {
			fetched := &nocloud.Data{Device: ds.SeedFrom}

			for _, f := range []struct {
				name string
				dst  *[]byte
			}{{"meta-data", &fetched.MetaData}, {"network-config", &fetched.NetworkConfig}} {
				if *f.dst, err = ds.Fetch(ctx, f.name); err != nil {
					n.logf("nocloud: %v", err)
					return nil, err
				}
			}

			n.logf("nocloud: fetched the seed %s: meta-data %d bytes, network-config %d", ds.SeedFrom, len(fetched.MetaData), len(fetched.NetworkConfig))

			spec := n.nocloudSpec(fetched, ds.Hostname)
			if spec == nil {
				return nil, errors.New("nocloud: nothing to configure")
			}

			return spec, nil
		}

		return
	}

	opts.Platform = n.nocloudSpec(data, "")
}

// nocloudSpec is a seed's network-config and meta-data's hostname (else
// fallback) as networkd's platform layer; nil, after saying why, when
// there is nothing to configure.
func (n *Node) nocloudSpec(data *nocloud.Data, fallback string) *networkres.PlatformConfigSpec {
	var (
		md  nocloud.MetaData
		err error
	)

	if data.MetaData != nil {
		if md, err = nocloud.ParseMetaData(data.MetaData); err != nil {
			n.logf("nocloud: meta-data refused: %v", err)
		}
	}

	if md.Hostname == "" {
		md.Hostname = fallback
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
