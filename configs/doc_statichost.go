package configs

import "net/netip"

// StaticHostConfig is Talos's StaticHostConfig: an /etc/hosts entry,
// named by its IP. It is one of machine.network.extraHostEntries (added
// to those the v1alpha1 document lists, as Talos does).
type StaticHostConfig struct {
	// Name is the IP address.
	Name      string   `yaml:"name"`
	Hostnames []string `yaml:"hostnames"`
}

// Kind implements Document.
func (*StaticHostConfig) Kind() string { return "StaticHostConfig" }

// DocumentName implements NamedDocument.
func (s *StaticHostConfig) DocumentName() string { return s.Name }

// check: the names are checked as machine.network.extraHostEntries'
// aliases, under this document's name.
func (s *StaticHostConfig) check(v *validator, path string) {
	switch _, err := netip.ParseAddr(s.Name); {
	case s.Name == "":
		v.errorf(path+".name", "name is required: the IP address the host names resolve to")
	case err != nil:
		v.errorf(path+".name", "name must be a valid IP address, got %q", s.Name)
	}

	if len(s.Hostnames) == 0 {
		v.errorf(path+".hostnames", "at least one hostname is required")
	}
}

// fold: only a valid entry (check refuses the others, and the v1alpha1
// rules would say the same again in other words).
func (s *StaticHostConfig) fold(f *folding) {
	if _, err := netip.ParseAddr(s.Name); err != nil || len(s.Hostnames) == 0 {
		return
	}

	n := f.network()
	n.ExtraHostEntries = append(n.ExtraHostEntries, ExtraHost{IP: s.Name, Aliases: s.Hostnames})

	p := indexPath("machine.network.extraHostEntries", len(n.ExtraHostEntries)-1)
	f.alias(p, "")
	f.alias(p+".ip", "name")
	f.alias(p+".aliases", "hostnames")
}
