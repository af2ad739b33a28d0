package render

import (
	"cmp"
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"strings"

	"github.com/talosbox/talosbox/configs"
)

// Defaults of the node's inputs, when Options leave them empty.
const (
	// DefaultKernelCmdline is a QEMU node's: the serial console, which
	// also sends GRUB's menu there.
	DefaultKernelCmdline = "talos.platform=metal console=ttyS0"
	// DefaultDiskSize is the disk scripts/qemu-node.sh gives a node.
	DefaultDiskSize = 8 << 30
)

// Documentation addresses (RFC 5737) stand for a node without a static
// address the config names.
var (
	defaultControlPlaneIP = netip.MustParseAddr("192.0.2.10")
	defaultWorkerIP       = netip.MustParseAddr("192.0.2.20")
)

// Placeholders of values only a running node has, as they appear in the
// artifacts.
const (
	// StaticPodURL stands for the static pod server's address: machined
	// listens on a random loopback port.
	StaticPodURL = "http://127.0.0.1:STATIC-POD-SERVER-PORT"
	// SecretsVersion stands for the digest of the certificates and keys
	// the node generates for the control plane.
	SecretsVersion = "SECRETS-VERSION"
	// ConfigVersion is the version the node's first rendering of a
	// component config has; every change of it adds one.
	ConfigVersion = "1"
)

// Placeholder is one input Render took in place of the node's.
type Placeholder struct {
	Name  string `yaml:"name"`
	Value string `yaml:"value"`
	// Flag is talosctl validate's flag that sets it, if any.
	Flag string `yaml:"flag,omitempty"`
	Doc  string `yaml:"doc"`
}

// node is the inputs Render uses for the node's own.
type node struct {
	hostname string
	ips      []netip.Addr
	cmdline  string
	diskSize int64
}

// placeholders settles the node's inputs and records them.
func (b *builder) placeholders() node {
	n := node{
		hostname: cmp.Or(b.opts.Hostname, DefaultHostname(b.cfg)),
		ips:      b.opts.NodeIPs,
		cmdline:  cmp.Or(b.opts.KernelCmdline, DefaultKernelCmdline),
		diskSize: cmp.Or(b.opts.DiskSize, DefaultDiskSize),
	}

	if len(n.ips) == 0 {
		n.ips = DefaultNodeIPs(b.cfg)
	}

	ips := make([]string, len(n.ips))
	for i, ip := range n.ips {
		ips[i] = ip.String()
	}

	b.arts.Placeholders = []Placeholder{
		{Name: "hostname", Value: n.hostname, Flag: "--hostname",
			Doc: "the node's hostname: etcd's member name and, lower-cased, the kubelet's node name; machine.network.hostname, else <clusterName>-controlplane-1 or -worker-1"},
		{Name: "node IPs", Value: strings.Join(ips, ","), Flag: "--node-ip",
			Doc: "the node's addresses, which etcd and the kubelet pick theirs from; the endpoint's host for a control plane when it is an IP, else the config's static addresses, else 192.0.2.10 (control plane) or 192.0.2.20 (worker)"},
		{Name: "kernel command line", Value: n.cmdline, Flag: "--kernel-cmdline",
			Doc: "the command line the node booted with, which an install copies into grub.cfg before machine.install.extraKernelArgs"},
		{Name: "disk size", Value: fmt.Sprint(n.diskSize), Flag: "--disk-size",
			Doc: "the install disk's size in bytes, which EPHEMERAL takes the rest of"},
		{Name: "static pod URL", Value: StaticPodURL,
			Doc: "the kubelet's staticPodURL: machined serves the static pods on a random loopback port"},
		{Name: "secrets version", Value: SecretsVersion,
			Doc: "the static pods' talos.dev/secrets-version: a digest of the certificates the node generates"},
		{Name: "config version", Value: ConfigVersion,
			Doc: "the static pods' talos.dev/config-version: 1 at the node's first rendering, one more at each change"},
	}

	return n
}

// DefaultHostname is the hostname Render gives a node of cfg:
// machine.network.hostname, else the name `talosctl cluster create` gives
// the first node of its type.
func DefaultHostname(cfg *configs.Config) string {
	if cfg == nil || cfg.Machine == nil {
		return "talos-node-1"
	}

	if n := cfg.Machine.Network; n != nil && n.Hostname != "" {
		return n.Hostname
	}

	name := "talos"
	if cfg.Cluster != nil && hostnameLabel.MatchString(cfg.Cluster.ClusterName) {
		name = cfg.Cluster.ClusterName
	}

	if cfg.IsControlPlane() {
		return name + "-controlplane-1"
	}

	return name + "-worker-1"
}

// hostnameLabel is what a cluster name must look like to prefix a
// hostname.
var hostnameLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,40}[a-z0-9])?$`)

// DefaultNodeIPs are the addresses Render gives a node of cfg: a control
// plane's endpoint host when it is an IP (the usual single control plane),
// else the static addresses of machine.network.interfaces, else a
// documentation address.
func DefaultNodeIPs(cfg *configs.Config) []netip.Addr {
	if cfg == nil || cfg.Machine == nil {
		return []netip.Addr{defaultWorkerIP}
	}

	if cfg.IsControlPlane() && cfg.Cluster != nil && cfg.Cluster.ControlPlane != nil {
		if u, err := url.Parse(cfg.Cluster.ControlPlane.Endpoint); err == nil {
			if a, err := netip.ParseAddr(u.Hostname()); err == nil && a.IsGlobalUnicast() {
				return []netip.Addr{a.Unmap()}
			}
		}
	}

	var out []netip.Addr

	if n := cfg.Machine.Network; n != nil {
		for _, d := range n.Interfaces {
			addrs := d.Addresses
			if d.CIDR != "" {
				addrs = append([]string{d.CIDR}, addrs...)
			}

			for _, s := range addrs {
				if p, err := configs.ParseAddressPrefix(s); err == nil && p.Addr().IsGlobalUnicast() {
					out = append(out, p.Addr().Unmap())
				}
			}
		}
	}

	if len(out) > 0 {
		return out
	}

	if cfg.IsControlPlane() {
		return []netip.Addr{defaultControlPlaneIP}
	}

	return []netip.Addr{defaultWorkerIP}
}

// pathPrefix is a config path at the start of a renderer's message:
// "cluster.apiServer.extraArgs: ...", "machine.files[2].content ...".
var pathPrefix = regexp.MustCompile(`^((?:machine|cluster)(?:\.[A-Za-z][-A-Za-z0-9_]*|\[[0-9]+\])*)(?:: | )`)

// splitPath takes the config path off the start of a message, written as
// configs writes paths: a map's key quoted ("machine.kubelet.extraConfig.port"
// is machine.kubelet.extraConfig["port"]), so that configs.Positions finds
// its line.
func splitPath(msg string) (path, rest string) {
	m := pathPrefix.FindStringSubmatchIndex(msg)
	if m == nil {
		return "", msg
	}

	path, rest = msg[m[2]:m[3]], strings.TrimPrefix(msg[m[1]:], ": ")

	for _, field := range mapFields {
		if key, ok := strings.CutPrefix(path, field+"."); ok && key != "" {
			return keyPath(field, key), rest
		}
	}

	return path, rest
}

// mapFields are the config's free-form maps whose keys renderers name
// after a dot.
var mapFields = []string{"machine.kubelet.extraConfig", "machine.sysctls"}

// keyPath is configs' path of a map's key: path["key"].
func keyPath(path, key string) string { return fmt.Sprintf("%s[%q]", path, key) }

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
