package k8s

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/k8s/render"
	"github.com/talosbox/talosbox/internal/resources/k8s"
)

func TestKubeletSpec(t *testing.T) {
	cp, worker := generated(t)

	in := render.KubeletInputs{Nodename: "cp-1", NodeIPs: []string{"10.5.0.2"}, StaticPodURL: "http://127.0.0.1:4567"}

	spec, err := render.KubeletSpecFor(cp, in)
	if err != nil {
		t.Fatal(err)
	}

	if spec.Image != "ghcr.io/siderolabs/kubelet:v1.34.12" || spec.ExpectedNodename != "cp-1" {
		t.Errorf("image %s, nodename %s", spec.Image, spec.ExpectedNodename)
	}

	want := []string{
		"--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubeconfig", "--cert-dir=/var/lib/kubelet/pki",
		"--config=/etc/kubernetes/kubelet.yaml", "--hostname-override=cp-1",
		"--kubeconfig=/etc/kubernetes/kubeconfig-kubelet", "--node-ip=10.5.0.2",
	}
	if !slices.Equal(spec.Args, want) {
		t.Errorf("args\n got %q\nwant %q", spec.Args, want)
	}

	c := spec.Config
	if c["staticPodURL"] != "http://127.0.0.1:4567" || c["httpCheckFrequency"] != "1s" || c["protectKernelDefaults"] != true || c["systemCgroups"] != "/system" {
		t.Errorf("config %v", c)
	}

	// gen config turns the manifests directory off, as Talos does.
	if _, ok := c["staticPodPath"]; ok {
		t.Error("staticPodPath with disableManifestsDirectory")
	}

	if dns := c["clusterDNS"].([]any); len(dns) != 1 || dns[0] != "10.96.0.10" {
		t.Errorf("clusterDNS %v", dns)
	}

	taints, _ := c["registerWithTaints"].([]any)
	if len(taints) != 1 || taints[0].(map[string]any)["key"] != constants.ControlPlaneTaint {
		t.Errorf("control planes are tainted: %v", taints)
	}

	wspec, err := render.KubeletSpecFor(worker, render.KubeletInputs{Nodename: "w-1", InContainer: true})
	if err != nil {
		t.Fatal(err)
	}

	if _, ok := wspec.Config["registerWithTaints"]; ok {
		t.Error("workers are not tainted")
	}

	if wspec.Config["protectKernelDefaults"] != false || wspec.Config["systemReserved"].(map[string]any)["memory"] != "384Mi" {
		t.Errorf("worker in a container: %v", wspec.Config)
	}

	if _, ok := wspec.Config["systemCgroups"]; ok {
		t.Error("a node in a container leaves the system cgroup alone")
	}
}

func TestKubeletSpecUserSettings(t *testing.T) {
	_, worker := generated(t)
	k := worker.Machine.Kubelet

	k.ExtraArgs = configs.ArgsOf(map[string]string{"node-ip": "192.168.1.5", "v": "4", "hostname-override": "custom"})
	k.ExtraMounts = []configs.ExtraMount{{Destination: "/var/local", Source: "/var/local", Options: []string{"rbind", "rw"}}}
	k.ExtraConfig = configs.Unstructured{"maxPods": 50, "serializeImagePulls": true, "httpCheckFrequency": "20s"}
	k.DisableManifestsDirectory = false

	spec, err := render.KubeletSpecFor(worker, render.KubeletInputs{Nodename: "w-1", NodeIPs: []string{"10.5.0.3"}, StaticPodURL: "http://127.0.0.1:4567"})
	if err != nil {
		t.Fatal(err)
	}

	for _, want := range []string{"--node-ip=192.168.1.5", "--v=4", "--hostname-override=custom"} {
		if !slices.Contains(spec.Args, want) {
			t.Errorf("missing %s in %q", want, spec.Args)
		}
	}

	if spec.ExpectedNodename != "" {
		t.Error("a user hostname-override clears the expected node name")
	}

	if spec.Config["maxPods"] != 50 || spec.Config["serializeImagePulls"] != true || spec.Config["staticPodPath"] != constants.ManifestsDir ||
		spec.Config["httpCheckFrequency"] != "20s" {
		t.Errorf("config %v", spec.Config)
	}

	if len(spec.ExtraMounts) != 1 || spec.ExtraMounts[0].Type != "bind" {
		t.Errorf("extra mounts %v", spec.ExtraMounts)
	}

	for _, tc := range []struct {
		set  func()
		want string
	}{
		{func() { k.ExtraArgs = configs.ArgsOf(map[string]string{"kubeconfig": "/x"}) }, `machine.kubelet.extraArgs: extra arg "kubeconfig" is not allowed`},
		{func() { k.ExtraArgs, k.ExtraConfig = nil, configs.Unstructured{"port": 1} }, "machine.kubelet.extraConfig.port"},
	} {
		tc.set()

		if _, err := render.KubeletSpecFor(worker, render.KubeletInputs{Nodename: "w-1"}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %s", err, tc.want)
		}
	}
}

func TestPickNodeIPs(t *testing.T) {
	addrs := []netip.Addr{
		netip.MustParseAddr("10.244.0.1"), // pod CIDR: excluded
		netip.MustParseAddr("172.20.0.5"),
		netip.MustParseAddr("10.5.0.2"),
		netip.MustParseAddr("fd00::5"),
		netip.MustParseAddr("fd00::6"),
	}

	cl := render.Cluster{PodSubnets: []string{"10.244.0.0/16"}, ServiceSubnets: []string{"10.96.0.0/12", "fd01::/108"}}

	for _, tc := range []struct {
		name        string
		valid       []string
		want, skips []string
	}{
		{"defaults", nil, []string{"172.20.0.5", "fd00::5"}, []string{"10.5.0.2", "fd00::6"}},
		{"subnet", []string{"10.5.0.0/24"}, []string{"10.5.0.2"}, nil},
		{"negative", []string{"0.0.0.0/0", "!172.20.0.0/16"}, []string{"10.5.0.2"}, nil},
		{"nothing", []string{"192.168.0.0/16"}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			picked, skipped, err := render.PickNodeIPs(render.NodeIPConfigFor(tc.valid, cl), addrs)
			if err != nil {
				t.Fatal(err)
			}

			str := func(as []netip.Addr) []string {
				var out []string
				for _, a := range as {
					out = append(out, a.String())
				}

				return out
			}

			if !slices.Equal(str(picked), tc.want) || !slices.Equal(str(skipped), tc.skips) {
				t.Errorf("picked %v skipped %v, want %v and %v", picked, skipped, tc.want, tc.skips)
			}
		})
	}

	if _, _, err := render.PickNodeIPs(k8s.NodeIPConfigSpec{ValidSubnets: []string{"10.0.0.0/33"}}, addrs); err == nil || !strings.Contains(err.Error(), "validSubnets") {
		t.Errorf("bad subnet: %v", err)
	}
}

func TestServiceIPs(t *testing.T) {
	dns, err := render.DNSServiceIPs([]string{"10.96.0.0/12", "fd00:10:96::/112"})
	if err != nil {
		t.Fatal(err)
	}

	if dns[0].String() != "10.96.0.10" || dns[1].String() != "fd00:10:96::a" {
		t.Errorf("dns %v", dns)
	}

	if _, err := render.DNSServiceIPs([]string{"10.0.0.0/30"}); err == nil {
		t.Error("a /30 has no 10th address")
	}
}
