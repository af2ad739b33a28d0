package provision

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func validRequest() ClusterRequest {
	return ClusterRequest{
		Name:    "demo",
		Image:   "talosbox:dev",
		Network: NetworkRequest{CIDR: netip.MustParsePrefix("10.5.0.0/24")},
		Nodes: []NodeRequest{
			{Name: "demo-controlplane-1", Type: TypeControlPlane, IP: netip.MustParseAddr("10.5.0.2"),
				Ports: []PortMapping{{ContainerPort: 50000}}},
			{Name: "demo-worker-1", Type: TypeWorker, IP: netip.MustParseAddr("10.5.0.3")},
		},
	}
}

func TestNormalizeDefaults(t *testing.T) {
	req := validRequest()
	got, err := normalize(req)
	if err != nil {
		t.Fatal(err)
	}
	if got.Network.Gateway != netip.MustParseAddr("10.5.0.1") {
		t.Errorf("gateway %s, want the first host", got.Network.Gateway)
	}
	p := got.Nodes[0].Ports[0]
	if p.Proto != "tcp" || p.HostIP != netip.MustParseAddr("127.0.0.1") || p.HostPort != 0 {
		t.Errorf("port defaults %+v", p)
	}
	// The caller's request is not modified.
	if req.Network.Gateway.IsValid() || req.Nodes[0].Ports[0].Proto != "" {
		t.Errorf("normalize modified its input: %+v", req)
	}
}

func TestValidateRejects(t *testing.T) {
	for name, tc := range map[string]struct {
		mutate func(*ClusterRequest)
		want   string
	}{
		"cluster name":       {func(r *ClusterRequest) { r.Name = "-bad" }, "cluster name"},
		"cluster name space": {func(r *ClusterRequest) { r.Name = "a b" }, "cluster name"},
		"no image":           {func(r *ClusterRequest) { r.Image = "" }, "image is empty"},
		"reserved label":     {func(r *ClusterRequest) { r.Labels = map[string]string{LabelCluster: "x"} }, "set by the provisioner"},
		"no cidr":            {func(r *ClusterRequest) { r.Network.CIDR = netip.Prefix{} }, "CIDR is missing"},
		"ipv6":               {func(r *ClusterRequest) { r.Network.CIDR = netip.MustParsePrefix("fd00::/64") }, "only IPv4"},
		"host bits":          {func(r *ClusterRequest) { r.Network.CIDR = netip.MustParsePrefix("10.5.0.1/24") }, "host bits"},
		"too small":          {func(r *ClusterRequest) { r.Network.CIDR = netip.MustParsePrefix("10.5.0.0/30") }, "too small"},
		"gateway outside":    {func(r *ClusterRequest) { r.Network.Gateway = netip.MustParseAddr("10.6.0.1") }, "gateway"},
		"gateway broadcast":  {func(r *ClusterRequest) { r.Network.Gateway = netip.MustParseAddr("10.5.0.255") }, "gateway"},
		"mtu":                {func(r *ClusterRequest) { r.Network.MTU = 10 }, "MTU"},
		"no nodes":           {func(r *ClusterRequest) { r.Nodes = nil }, "no nodes"},
		"node name upper":    {func(r *ClusterRequest) { r.Nodes[0].Name = "Demo-1" }, "lowercase"},
		"node name dup":      {func(r *ClusterRequest) { r.Nodes[1].Name = r.Nodes[0].Name }, "duplicate name"},
		"node type":          {func(r *ClusterRequest) { r.Nodes[0].Type = "master" }, `type "master"`},
		"ip missing":         {func(r *ClusterRequest) { r.Nodes[0].IP = netip.Addr{} }, "IP is missing"},
		"ip outside":         {func(r *ClusterRequest) { r.Nodes[0].IP = netip.MustParseAddr("10.5.1.2") }, "not a host address"},
		"ip network":         {func(r *ClusterRequest) { r.Nodes[0].IP = netip.MustParseAddr("10.5.0.0") }, "not a host address"},
		"ip gateway":         {func(r *ClusterRequest) { r.Nodes[0].IP = netip.MustParseAddr("10.5.0.1") }, "is the gateway"},
		"ip duplicate":       {func(r *ClusterRequest) { r.Nodes[1].IP = r.Nodes[0].IP }, "already"},
		"env":                {func(r *ClusterRequest) { r.Nodes[0].Env = []string{"NOEQUALS"} }, "KEY=VALUE"},
		"memory":             {func(r *ClusterRequest) { r.Nodes[0].Memory = 1 << 20 }, "6MiB"},
		"cpus":               {func(r *ClusterRequest) { r.Nodes[0].NanoCPUs = 1000 }, "0.01"},
		"port zero":          {func(r *ClusterRequest) { r.Nodes[0].Ports[0].ContainerPort = 0 }, "container port is 0"},
		"port proto":         {func(r *ClusterRequest) { r.Nodes[0].Ports[0].Proto = "icmp" }, "protocol"},
		"host port dup": {func(r *ClusterRequest) {
			r.Nodes[0].Ports[0].HostPort = 50000
			r.Nodes[1].Ports = []PortMapping{{ContainerPort: 50000, HostPort: 50000}}
		}, "also published"},
		"file path": {func(r *ClusterRequest) { r.Nodes[0].Files = []File{{Path: "relative"}} }, "file path"},
		"device":    {func(r *ClusterRequest) { r.Nodes[0].Privileges.Devices = []string{"/dev/net/tun:/x:q"} }, "permissions"},
	} {
		t.Run(name, func(t *testing.T) {
			req := validRequest()
			req.Nodes = slices.Clone(req.Nodes)
			req.Nodes[0].Ports = slices.Clone(req.Nodes[0].Ports)
			tc.mutate(&req)
			err := req.Validate()
			if !errors.Is(err, ErrInvalidRequest) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want ErrInvalidRequest mentioning %q", err, tc.want)
			}
		})
	}
}

func TestValidateListsAllProblems(t *testing.T) {
	req := validRequest()
	req.Image = ""
	req.Nodes[1].Type = "boss"
	err := req.Validate()
	if err == nil || !strings.Contains(err.Error(), "image is empty") || !strings.Contains(err.Error(), "boss") {
		t.Fatalf("Validate = %v, want both problems", err)
	}
}

func TestLastAddr(t *testing.T) {
	for in, want := range map[string]string{
		"10.5.0.0/24": "10.5.0.255", "10.0.0.0/8": "10.255.255.255", "10.5.0.0/29": "10.5.0.7", "10.5.0.128/25": "10.5.0.255",
	} {
		if got := lastAddr(netip.MustParsePrefix(in)); got.String() != want {
			t.Errorf("lastAddr(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestParseDevice(t *testing.T) {
	d, err := parseDevice("/dev/net/tun")
	if err != nil || d != (device{"/dev/net/tun", "/dev/net/tun", "rwm"}) {
		t.Errorf("parseDevice = %+v, %v", d, err)
	}
	d, err = parseDevice("/dev/kvm:/dev/kvm0:rw")
	if err != nil || d != (device{"/dev/kvm", "/dev/kvm0", "rw"}) {
		t.Errorf("parseDevice = %+v, %v", d, err)
	}
	if _, err := parseDevice("dev/kvm"); err == nil {
		t.Error("relative device path accepted")
	}
}

func TestCompareNodes(t *testing.T) {
	nodes := []Node{
		{Name: "c-worker-10", Type: TypeWorker},
		{Name: "c-worker-2", Type: TypeWorker},
		{Name: "c-controlplane-2", Type: TypeControlPlane},
		{Name: "c-controlplane-1", Type: TypeControlPlane},
	}
	slices.SortFunc(nodes, compareNodes)
	var got []string
	for _, n := range nodes {
		got = append(got, n.Name)
	}
	want := []string{"c-controlplane-1", "c-controlplane-2", "c-worker-2", "c-worker-10"}
	if !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

func TestVolumeName(t *testing.T) {
	if got := volumeName("demo", "demo-worker-1"); got != "demo-worker-1-state" {
		t.Errorf("volumeName = %s", got)
	}
	if got := volumeName("demo", "n1"); got != "demo-n1-state" {
		t.Errorf("volumeName = %s", got)
	}
}
