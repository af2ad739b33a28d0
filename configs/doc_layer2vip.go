package configs

import (
	"net/netip"
)

// Layer2VIPConfig is Talos's Layer2VIPConfig: a shared IP on a link,
// announced by ARP, that control-plane nodes elect an owner for. It is
// not folded into machine.network.interfaces[link].vip: that would make
// the link one the config configures, which ends default DHCP on it, and
// in Talos it does not. networkd reads it from the document, and
// SharedIPs lists it.
type Layer2VIPConfig struct {
	// Name is the shared IP.
	Name string `yaml:"name"`
	Link string `yaml:"link"`
}

// Kind implements Document.
func (*Layer2VIPConfig) Kind() string { return "Layer2VIPConfig" }

// DocumentName implements NamedDocument.
func (l *Layer2VIPConfig) DocumentName() string { return l.Name }

// IP is the shared IP; the zero Addr when the name is not one.
func (l *Layer2VIPConfig) IP() netip.Addr {
	a, _ := netip.ParseAddr(l.Name) //nolint:errcheck // refused by check

	return a
}

func (l *Layer2VIPConfig) check(v *validator, path string) {
	switch ip, err := netip.ParseAddr(l.Name); {
	case l.Name == "":
		v.errorf(path+".name", "name must be specified: the shared IP (10.5.0.100)")
	case err != nil:
		v.errorf(path+".name", "name must be a valid IP address: the shared IP, got %q", l.Name)
	case ip.IsUnspecified() || ip.IsMulticast() || ip.IsLoopback():
		v.errorf(path+".name", "%s cannot be a shared IP: want a unicast address of the link's subnet", l.Name)
	}

	if l.Link == "" {
		v.errorf(path+".link", "link must be specified: the link the shared IP is announced on (eth0)")
	}

	// talosbox's shared IP operator campaigns through the node's etcd
	// member: a worker has none, so the IP would never be taken.
	if !v.controlPlane() {
		v.errorf(path, "virtual (shared) IP is not allowed on non-controlplane nodes")
	}

	if l.Link == "" {
		return
	}

	for _, other := range DocumentsOf[*Layer2VIPConfig](v.cfg) {
		if other == l {
			break
		}

		if other.Link == l.Link {
			v.errorf(path+".link", "link %q already has the shared IP %s (%s): a link has one", l.Link, other.Name, documentID(other.Kind(), other.Name, true))

			return
		}
	}

	if w := v.cfg.V1Alpha1(); w != nil && w.Machine != nil && w.Machine.Network != nil {
		for i, d := range w.Machine.Network.Interfaces {
			if d.VIP != nil && d.Interface == l.Link {
				v.errorf(path+".link", "link %q already has the shared IP %s in the v1alpha1 document (machine.network.interfaces[%d].vip): a link has one",
					l.Link, d.VIP.IP, i)
			}

			for j, vl := range d.VLANs {
				if vl.VIP != nil && d.Interface != "" && VLANLinkName(v.cfg, d.Interface, vl.ID) == l.Link {
					v.errorf(path+".link", "link %q already has the shared IP %s in the v1alpha1 document (machine.network.interfaces[%d].vlans[%d].vip): a link has one",
						l.Link, vl.VIP.IP, i, j)
				}
			}
		}
	}
}

// fold: nothing; see the type.
func (*Layer2VIPConfig) fold(*folding) {}
