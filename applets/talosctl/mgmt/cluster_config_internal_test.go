package mgmt

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/provision"
	"github.com/talosbox/talosbox/internal/render"
)

func TestCheckWireguardCIDR(t *testing.T) {
	t.Parallel()

	subnet := netip.MustParsePrefix(defaultSubnet)

	for _, tc := range []struct {
		cidr    string
		nodes   int
		wantErr string
	}{
		{cidr: "10.1.0.0/24", nodes: 4},
		{cidr: "fd00:10::/64", nodes: 4},
		{cidr: "10.1.0.0/30", nodes: 1}, // .2 for the node, .3 the broadcast
		{cidr: "10.1.0.0/29", nodes: 5}, // .2 to .6
		{cidr: "10.1.0.0/29", nodes: 6, wantErr: "--wireguard-cidr 10.1.0.0/29 is too small for 6 nodes"},
		{cidr: "10.1.0.0/30", nodes: 2, wantErr: "too small for 2 nodes"},
		{cidr: "10.1.0.0/32", nodes: 1, wantErr: "too small"},
		{cidr: "fd00::/127", nodes: 1, wantErr: "too small"},
		{cidr: "10.1.0.0", nodes: 1, wantErr: `--wireguard-cidr "10.1.0.0": netip.ParsePrefix("10.1.0.0"): no '/'`},
		{cidr: "banana/24", nodes: 1, wantErr: `--wireguard-cidr "banana/24"`},
		{cidr: "10.1.0.0/33", nodes: 1, wantErr: "prefix length out of range"},
		{cidr: "10.1.0.1/24", nodes: 1, wantErr: "--wireguard-cidr 10.1.0.1/24: want a network address such as 10.1.0.0/24"},
		{cidr: "10.5.0.0/16", nodes: 1, wantErr: "--wireguard-cidr 10.5.0.0/16 overlaps --subnet 10.5.0.0/24"},
		{cidr: "10.5.0.128/25", nodes: 1, wantErr: "overlaps --subnet"},
		{cidr: "10.244.3.0/24", nodes: 1, wantErr: "overlaps the pod network 10.244.0.0/16"},
		{cidr: "10.96.0.0/24", nodes: 1, wantErr: "overlaps the service network 10.96.0.0/12"},
		{cidr: "::ffff:10.1.0.0/120", nodes: 1, wantErr: "IPv4-mapped"},
		{cidr: "127.0.0.0/8", nodes: 1, wantErr: "want a unicast network"},
		{cidr: "224.0.0.0/24", nodes: 1, wantErr: "want a unicast network"},
		{cidr: "fe80::/64", nodes: 1, wantErr: "want a unicast network"},
	} {
		got, err := checkWireguardCIDR(tc.cidr, subnet, tc.nodes)

		switch {
		case tc.wantErr == "" && (err != nil || got.String() != tc.cidr):
			t.Errorf("%s, %d nodes: got %v, %v", tc.cidr, tc.nodes, got, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s, %d nodes: got %v, %v; want an error with %q", tc.cidr, tc.nodes, got, err, tc.wantErr)
		}
	}
}

// wantPeer is a peer as a node's wg0 should list it.
type wantPeer struct {
	node      int // the peer's index in the plan
	endpoint  string
	allowedIP string
}

// TestClusterWireGuardConfigs: plan and generate give each node its own
// config with its wg0: its address, its own key, the port on control
// planes, and the peers of the mesh with their keys, endpoints and allowed
// IPs.
func TestClusterWireGuardConfigs(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name, cidr string
		addrs      []string // by node: 2 control planes, then 2 workers
		allowed    []string
	}{
		{
			name: "IPv4", cidr: "10.1.0.0/24",
			addrs:   []string{"10.1.0.2/24", "10.1.0.3/24", "10.1.0.4/24", "10.1.0.5/24"},
			allowed: []string{"10.1.0.2/32", "10.1.0.3/32", "10.1.0.4/32", "10.1.0.5/32"},
		},
		{
			name: "IPv6", cidr: "fd00:10::/64",
			addrs:   []string{"fd00:10::2/64", "fd00:10::3/64", "fd00:10::4/64", "fd00:10::5/64"},
			allowed: []string{"fd00:10::2/128", "fd00:10::3/128", "fd00:10::4/128", "fd00:10::5/128"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()

			nodes := generateNodes(t, &clusterCreateFlags{wireguardCIDR: tc.cidr})

			// The mesh, by node: 0 and 1 are control planes at
			// 10.5.0.2 and .3; 2 and 3 are workers.
			want := [][]wantPeer{
				{{1, "10.5.0.3:51111", tc.allowed[1]}, {2, "", tc.allowed[2]}, {3, "", tc.allowed[3]}},
				{{0, "10.5.0.2:51111", tc.allowed[0]}, {2, "", tc.allowed[2]}, {3, "", tc.allowed[3]}},
				{{0, "10.5.0.2:51111", tc.allowed[0]}, {1, "10.5.0.3:51111", tc.allowed[1]}},
				{{0, "10.5.0.2:51111", tc.allowed[0]}, {1, "10.5.0.3:51111", tc.allowed[1]}},
			}

			devs := make([]*configs.Device, len(nodes))
			pub := make([]string, len(nodes))

			for i, n := range nodes {
				cfg, err := configs.Decode(n.config)
				if err != nil {
					t.Fatalf("%s: %v", n.name, err)
				}

				if cfg.Machine.Type != n.typ {
					t.Errorf("%s: machine.type %q, want %q", n.name, cfg.Machine.Type, n.typ)
				}

				devs[i] = wg0(t, cfg)
				pub[i] = publicKey(t, devs[i].WireGuard.PrivateKey)
			}

			if len(slices.Compact(slices.Sorted(slices.Values(pub)))) != len(pub) {
				t.Fatalf("nodes share WireGuard keys: %v", pub)
			}

			for i, n := range nodes {
				d := devs[i]
				if !slices.Equal(d.Addresses, []string{tc.addrs[i]}) {
					t.Errorf("%s: wg0 addresses %v, want %s", n.name, d.Addresses, tc.addrs[i])
				}

				wantPort := 0
				if n.typ == provision.TypeControlPlane {
					wantPort = wireguardPort
				}

				if d.WireGuard.ListenPort != wantPort {
					t.Errorf("%s: listenPort %d, want %d", n.name, d.WireGuard.ListenPort, wantPort)
				}

				var got, exp []string
				for _, p := range d.WireGuard.Peers {
					got = append(got, fmt.Sprintf("%s endpoint=%q allowed=%v keepalive=%s", p.PublicKey, p.Endpoint, p.AllowedIPs, p.PersistentKeepaliveInterval))
				}

				for _, p := range want[i] {
					exp = append(exp, fmt.Sprintf("%s endpoint=%q allowed=%v keepalive=%s", pub[p.node], p.endpoint, []string{p.allowedIP}, 5*time.Second))
				}

				if !slices.Equal(got, exp) {
					t.Errorf("%s: peers\n%s\nwant\n%s", n.name, strings.Join(got, "\n"), strings.Join(exp, "\n"))
				}
			}
		})
	}
}

// A wg0 from the user's patches is merged with the mesh's, as Talos's
// strategic merge does: its MTU stays, the mesh's keys and peers come in.
func TestClusterWireGuardMergesPatch(t *testing.T) {
	t.Parallel()

	nodes := generateNodes(t, &clusterCreateFlags{wireguardCIDR: "10.1.0.0/24",
		patches: []string{`{"machine":{"network":{"interfaces":[{"interface":"wg0","mtu":1380}]}}}`}})

	for _, n := range nodes {
		cfg, err := configs.Decode(n.config)
		if err != nil {
			t.Fatal(err)
		}

		d := wg0(t, cfg)
		if d.MTU != 1380 || len(d.WireGuard.Peers) == 0 {
			t.Errorf("%s: wg0 %+v, want the patch's MTU and the mesh's peers", n.name, d)
		}
	}
}

// Without --wireguard-cidr nodes of a type share their type's config.
func TestClusterConfigsPerType(t *testing.T) {
	t.Parallel()

	nodes := generateNodes(t, &clusterCreateFlags{})

	if string(nodes[0].config) != string(nodes[1].config) || string(nodes[2].config) != string(nodes[3].config) {
		t.Fatal("nodes of one type got different configs")
	}

	if strings.Contains(string(nodes[0].config), "wireguard") {
		t.Fatalf("a config without --wireguard-cidr has WireGuard:\n%s", nodes[0].config)
	}
}

// generateNodes plans and generates a docker cluster of 2 control planes
// and 2 workers on the default subnet, with f's other flags.
func generateNodes(t *testing.T, f *clusterCreateFlags) []nodePlan {
	t.Helper()

	f.name, f.provisioner, f.subnet, f.controlPlanes, f.workers = "wg", "docker", defaultSubnet, 2, 2

	cidr, nodes, err := f.plan()
	if err != nil {
		t.Fatal(err)
	}

	if _, err := f.generate(cidr, nodes); err != nil {
		t.Fatal(err)
	}

	return nodes
}

func wg0(t *testing.T, cfg *configs.Config) *configs.Device {
	t.Helper()

	for i := range cfg.Machine.Network.Interfaces {
		if d := &cfg.Machine.Network.Interfaces[i]; d.Interface == "wg0" {
			if d.WireGuard == nil {
				t.Fatalf("wg0 is not a WireGuard link: %+v", d)
			}

			return d
		}
	}

	t.Fatalf("no wg0 in %+v", cfg.Machine.Network.Interfaces)

	return nil
}

// publicKey checks that a private key is base64 of 32 bytes and derives
// its public key.
func publicKey(t *testing.T, private string) string {
	t.Helper()

	raw, err := base64.StdEncoding.DecodeString(private)
	if err != nil || len(raw) != wgtypes.KeyLen {
		t.Fatalf("private key %q: %d bytes, %v; want base64 of %d bytes", private, len(raw), err, wgtypes.KeyLen)
	}

	key, err := wgtypes.NewKey(raw)
	if err != nil {
		t.Fatal(err)
	}

	return key.PublicKey().String()
}

// cluster create --talos-version writes that version's contract into
// every node's config, and refuses what gen config refuses.
func TestClusterTalosVersion(t *testing.T) {
	t.Parallel()

	nodes := generateNodes(t, &clusterCreateFlags{talosVersion: "v1.6", wireguardCIDR: "10.1.0.0/24"})
	for _, n := range nodes {
		cfg := string(n.config)
		if strings.Contains(cfg, "hostDNS") || !strings.Contains(cfg, "kubePrism") || !strings.Contains(cfg, "wg0") {
			t.Errorf("%s: not the v1.6 contract with wg0:\n%s", n.name, cfg)
		}
	}

	// v1.14: the Kubernetes settings as documents, on nodes the node's
	// own validation accepts, with --use-vip's and the cache mirrors'
	// patches in place.
	for _, n := range generateNodes(t, &clusterCreateFlags{talosVersion: "v1.14", useVIP: true, imageCacheOn: true, cacheDir: t.TempDir()}) {
		cfg, _, err := render.Load(n.config, configs.ModeContainer)
		if err != nil {
			t.Fatalf("%s: %v", n.name, err)
		}

		cp := n.typ == provision.TypeControlPlane
		if (configs.DocumentOf[*configs.KubeAPIServerConfig](cfg) != nil) != cp || configs.DocumentOf[*configs.KubeletConfigDoc](cfg) == nil {
			t.Errorf("%s: not the v1.14 shape:\n%s", n.name, n.config)
		}

		if cfg.V1Alpha1().Cluster.ControlPlane != nil || cfg.Cluster.ControlPlane.Endpoint != "https://10.5.0.50:6443" {
			t.Errorf("%s: the endpoint is not the KubeClusterConfig's shared IP", n.name)
		}

		if cp && !slices.Contains(cfg.Cluster.APIServer.CertSANs, "10.5.0.50") {
			t.Errorf("%s: the API server's SANs %v lack the shared IP", n.name, cfg.Cluster.APIServer.CertSANs)
		}
	}

	for v, want := range map[string]string{
		"banana": "--talos-version banana: malformed Talos version",
		"v0.8":   "--talos-version v0.8: not supported: the oldest contract this generator writes is v1.0",
	} {
		f := &clusterCreateFlags{name: "tv", provisioner: "docker", subnet: defaultSubnet, controlPlanes: 1, talosVersion: v}
		if _, _, err := f.plan(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--talos-version %s: got %v, want %q", v, err, want)
		}
	}
}

// genlFamily finds the controller's own family, which every kernel with
// generic netlink has, and not a made-up one.
func TestGenlFamily(t *testing.T) {
	t.Parallel()

	if err := genlFamily("nlctrl"); err != nil {
		t.Fatalf("nlctrl: %v", err)
	}

	if err := genlFamily("talosbox-none"); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("a missing family: got %v, want ENOENT", err)
	}
}

// cluster create --wireguard-cidr writes wg0 in block style, as the rest
// of the config, not on one flow-style line.
func TestClusterWireGuardBlockStyle(t *testing.T) {
	t.Parallel()

	for _, n := range generateNodes(t, &clusterCreateFlags{wireguardCIDR: "10.1.0.0/24"}) {
		if !strings.Contains(string(n.config), "    network:\n        interfaces:\n            - interface: wg0\n") {
			t.Fatalf("wg0 not in block style:\n%s", n.config)
		}
	}
}

// cluster create qemu finds the kernel beside the binary (_out/talosbox,
// _out/kernel) or in the project, wherever it runs from.
func TestKernelDirFor(t *testing.T) {
	t.Parallel()

	withKernel := func(dir string) string {
		if err := os.MkdirAll(filepath.Join(dir, "kernel", "boot"), 0o755); err != nil {
			t.Fatal(err)
		}

		if err := os.MkdirAll(filepath.Join(dir, "kernel", "lib", "modules", "6.1.0-1-cloud-amd64", "kernel"), 0o755); err != nil {
			t.Fatal(err)
		}

		if err := os.WriteFile(filepath.Join(dir, "kernel", "boot", "vmlinuz-6.1.0-1-cloud-amd64"), nil, 0o644); err != nil {
			t.Fatal(err)
		}

		return filepath.Join(dir, "kernel")
	}

	out := filepath.Join(t.TempDir(), "_out")
	binKernel := withKernel(out)

	project := t.TempDir()
	projectKernel := withKernel(filepath.Join(project, "_out"))

	for _, tc := range []struct {
		name, exe, root, want string
	}{
		{"beside the binary", filepath.Join(out, "talosbox"), project, binKernel},
		{"an installed binary in the project", "/usr/local/bin/talosbox", project, projectKernel},
		{"nowhere: the binary's, for the error", "/usr/local/bin/talosbox", "", "/usr/local/bin/kernel"},
	} {
		if got := kernelDirFor(tc.exe, tc.root); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// cluster create --use-vip: the endpoint is the subnet's 50th address,
// which the control planes share on eth0; every node joins through it and
// the API server's certificate names it.
func TestClusterUseVIP(t *testing.T) {
	t.Parallel()

	f := &clusterCreateFlags{useVIP: true}
	nodes := generateNodes(t, f)

	for _, n := range nodes {
		cfg, err := configs.Decode(n.config)
		if err != nil {
			t.Fatal(err)
		}

		if got := cfg.Cluster.ControlPlane.Endpoint; got != "https://10.5.0.50:6443" {
			t.Errorf("%s: endpoint %s, want the shared IP", n.name, got)
		}

		var vips []string

		var devices []configs.Device
		if cfg.Machine.Network != nil {
			devices = cfg.Machine.Network.Interfaces
		}

		for _, d := range devices {
			if d.VIP != nil {
				vips = append(vips, d.Interface+"="+d.VIP.IP)
			}
		}

		want := []string(nil)
		if n.typ == provision.TypeControlPlane {
			want = []string{"eth0=10.5.0.50"}

			if !slices.Contains(cfg.Cluster.APIServer.CertSANs, "10.5.0.50") {
				t.Errorf("%s: the API server's SANs %v lack the shared IP", n.name, cfg.Cluster.APIServer.CertSANs)
			}
		}

		if !slices.Equal(vips, want) {
			t.Errorf("%s: shared IPs %v, want %v", n.name, vips, want)
		}
	}

	// The shared IP must be above every node.
	big := &clusterCreateFlags{useVIP: true, name: "big", provisioner: "docker", subnet: defaultSubnet, controlPlanes: 3, workers: 47}
	if _, _, err := big.plan(); err == nil || !strings.Contains(err.Error(), "--use-vip: the shared IP 10.5.0.50") {
		t.Errorf("50 nodes with --use-vip: %v", err)
	}
}

// What a node boots is one choice: a kernel, an ISO or a disk image, and
// the qemu flags are the qemu provisioner's.
func TestClusterBootSourceFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    clusterCreateFlags
		want string
	}{
		{"disk image on docker", clusterCreateFlags{provisioner: "docker", diskImage: "metal.raw.zst"}, "are for the qemu provisioner"},
		{"uefi on docker", clusterCreateFlags{provisioner: "docker", withUEFI: true}, "--with-uefi are for the qemu provisioner"},
		{"disk image and ISO", clusterCreateFlags{provisioner: "qemu", diskImage: "metal.raw", iso: "a.iso"}, "without --vmlinuz-path, --initrd-path and --iso-path"},
		{"disk image and initrd", clusterCreateFlags{provisioner: "qemu", diskImage: "metal.raw", initrd: "initrd"}, "--disk-image-path boots the image's kernel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.f.controlPlanes, tc.f.subnet = 1, "10.5.0.0/24"

			if _, _, err := tc.f.plan(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("plan: %v, want %q", err, tc.want)
			}
		})
	}
}
