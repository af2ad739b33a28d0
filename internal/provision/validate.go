package provision

import (
	"fmt"
	"net/netip"
	"path"
	"regexp"
	"strings"
)

// Docker's own object name syntax (daemon/names), which the cluster name must follow because
// it becomes the network's name and prefixes the volumes' names.
var dockerName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

// nodeName is an RFC 1123 subdomain in lowercase: the node name becomes the hostname and,
// later, the Kubernetes node name, which must be one.
var nodeName = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$`)

// minMemory is the engine's own lower bound, checked here so the error comes before anything
// is created rather than from a half-created cluster.
const minMemory = 6 << 20

// minNanoCPUs is the engine's lower bound (0.01 CPU).
const minNanoCPUs = 10_000_000

// maxNameLen keeps the derived names (volumes, bridge options) readable and well within limits.
const maxNameLen = 63

// Validate checks the request without contacting Docker: names, addresses, ports, limits. The
// error wraps ErrInvalidRequest and lists every problem found.
func (r ClusterRequest) Validate() error {
	_, err := normalize(r)
	return err
}

// normalize validates req and returns a copy with defaults filled in (gateway, port protocol
// and host IP, file modes), leaving the caller's slices untouched.
func normalize(req ClusterRequest) (ClusterRequest, error) {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	if !dockerName.MatchString(req.Name) || len(req.Name) > maxNameLen {
		bad("cluster name %q: want [a-zA-Z0-9][a-zA-Z0-9_.-]*, at most %d characters", req.Name, maxNameLen)
	}
	if req.Image == "" {
		bad("image is empty")
	}
	for k := range req.Labels {
		switch k {
		case LabelCluster, LabelNodeName, LabelNodeType, LabelOwned, LabelCreateID:
			bad("label %q is set by the provisioner", k)
		}
	}

	cidr := req.Network.CIDR
	gw := req.Network.Gateway
	switch {
	case !cidr.IsValid():
		bad("network CIDR is missing")
	case !cidr.Addr().Is4():
		bad("network CIDR %s: only IPv4 is supported", cidr)
	case cidr != cidr.Masked():
		bad("network CIDR %s has host bits set (did you mean %s?)", cidr, cidr.Masked())
	case cidr.Bits() > 29:
		bad("network CIDR %s is too small: want /29 or larger", cidr)
	default:
		if !gw.IsValid() {
			gw = cidr.Addr().Next()
		} else if !usableHost(cidr, gw) {
			bad("gateway %s is not a host address in %s", gw, cidr)
		}
	}
	if m := req.Network.MTU; m != 0 && (m < 68 || m > 65535) {
		bad("network MTU %d: want 68..65535", m)
	}
	if len(req.Nodes) == 0 {
		bad("no nodes")
	}

	out := req
	out.Network.Gateway = gw
	out.Nodes = make([]NodeRequest, len(req.Nodes))
	names := map[string]bool{}
	ips := map[netip.Addr]string{}
	hostPorts := map[string]string{}
	for i, n := range req.Nodes {
		what := fmt.Sprintf("node %d (%q)", i+1, n.Name)
		if !nodeName.MatchString(n.Name) || len(n.Name) > maxNameLen {
			bad("%s: name must be lowercase letters, digits, '-' and '.', at most %d characters", what, maxNameLen)
		}
		if names[n.Name] {
			bad("%s: duplicate name", what)
		}
		names[n.Name] = true
		if n.Type != TypeControlPlane && n.Type != TypeWorker {
			bad("%s: type %q: want %s or %s", what, n.Type, TypeControlPlane, TypeWorker)
		}
		switch {
		case !n.IP.IsValid():
			bad("%s: IP is missing", what)
		case cidr.IsValid() && !usableHost(cidr, n.IP):
			bad("%s: IP %s is not a host address in %s", what, n.IP, cidr)
		case n.IP == gw:
			bad("%s: IP %s is the gateway", what, n.IP)
		case ips[n.IP] != "":
			bad("%s: IP %s is already %s's", what, n.IP, ips[n.IP])
		}
		ips[n.IP] = n.Name
		for _, kv := range n.Env {
			if k, _, ok := strings.Cut(kv, "="); !ok || k == "" || strings.ContainsRune(kv, 0) {
				bad("%s: env %q: want KEY=VALUE", what, kv)
			}
		}
		if n.Memory != 0 && n.Memory < minMemory {
			bad("%s: memory %d bytes: want 0 (unlimited) or at least 6MiB", what, n.Memory)
		}
		if n.NanoCPUs != 0 && n.NanoCPUs < minNanoCPUs {
			bad("%s: CPUs %.3f: want 0 (unlimited) or at least 0.01", what, float64(n.NanoCPUs)/1e9)
		}

		nn := n
		nn.Ports = make([]PortMapping, len(n.Ports))
		for j, p := range n.Ports {
			p.Proto = protoOrTCP(p.Proto)
			if !p.HostIP.IsValid() {
				p.HostIP = netip.AddrFrom4([4]byte{127, 0, 0, 1})
			}
			if p.ContainerPort == 0 {
				bad("%s: port %d: container port is 0", what, j+1)
			}
			if p.Proto != "tcp" && p.Proto != "udp" && p.Proto != "sctp" {
				bad("%s: port %d: protocol %q: want tcp, udp or sctp", what, j+1, p.Proto)
			}
			if p.HostPort != 0 {
				key := fmt.Sprintf("%s:%d/%s", p.HostIP, p.HostPort, p.Proto)
				if other, dup := hostPorts[key]; dup {
					bad("%s: host port %s is also published by %s", what, key, other)
				}
				hostPorts[key] = n.Name
			}
			nn.Ports[j] = p
		}
		nn.Files = make([]File, len(n.Files))
		for j, f := range n.Files {
			if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path || f.Path == "/" {
				bad("%s: file path %q: want a clean absolute path", what, f.Path)
			}
			if f.Mode == 0 {
				f.Mode = 0o600
			}
			nn.Files[j] = f
		}
		for _, d := range n.Privileges.Devices {
			if _, err := parseDevice(d); err != nil {
				bad("%s: %v", what, err)
			}
		}
		out.Nodes[i] = nn
	}

	if len(problems) > 0 {
		return ClusterRequest{}, fmt.Errorf("%w: cluster %q: %s", ErrInvalidRequest, req.Name, strings.Join(problems, "; "))
	}
	return out, nil
}

// usableHost reports whether a is inside p and is neither its network nor its broadcast address.
func usableHost(p netip.Prefix, a netip.Addr) bool {
	if !a.Is4() || !p.Contains(a) || a == p.Masked().Addr() {
		return false
	}
	return a != lastAddr(p)
}

// lastAddr is the broadcast address of an IPv4 prefix.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As4()
	hostBits := 32 - p.Bits()
	for i := 3; i >= 0 && hostBits > 0; i-- {
		n := min(hostBits, 8)
		b[i] |= byte(1<<n - 1)
		hostBits -= n
	}
	return netip.AddrFrom4(b)
}

// device is a parsed Privileges.Devices entry.
type device struct{ host, container, perms string }

// parseDevice parses "host[:container[:permissions]]" like `docker run --device`.
func parseDevice(s string) (device, error) {
	parts := strings.Split(s, ":")
	if len(parts) > 3 || parts[0] == "" {
		return device{}, fmt.Errorf("device %q: want host[:container[:permissions]]", s)
	}
	d := device{host: parts[0], container: parts[0], perms: "rwm"}
	if len(parts) > 1 && parts[1] != "" {
		d.container = parts[1]
	}
	if len(parts) > 2 {
		d.perms = parts[2]
	}
	if !path.IsAbs(d.host) || !path.IsAbs(d.container) {
		return device{}, fmt.Errorf("device %q: paths must be absolute", s)
	}
	if d.perms == "" || strings.Trim(d.perms, "rwm") != "" {
		return device{}, fmt.Errorf("device %q: permissions %q: want a combination of r, w and m", s, d.perms)
	}
	return d, nil
}
