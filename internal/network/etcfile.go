package network

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/config"
	"github.com/talosbox/talosbox/internal/resources/network"
)

// Rendered files, by EtcFileStatus ID.
const (
	HostsFile    = "hosts"
	ResolvFile   = "resolv.conf"
	maxResolvers = 3 // what the libc resolver reads
)

// EtcFileController renders resolv.conf and hosts into Options.EtcDir from
// the resolvers, the hostname, the node address and
// machine.network.extraHostEntries. It never writes anywhere else: in
// container mode EtcDir is the node's own etc, never the host's /etc.
type EtcFileController struct {
	opts    *Options
	written map[string]string // path -> contents last written
}

// NewEtcFileController makes the controller.
func NewEtcFileController(opts *Options) *EtcFileController {
	return &EtcFileController{opts: opts, written: map[string]string{}}
}

func (c *EtcFileController) Name() string { return "network.EtcFileController" }

func (c *EtcFileController) Inputs() []bus.Input {
	return []bus.Input{
		{Namespace: network.Namespace, Type: network.ResolverStatusType},
		{Namespace: network.Namespace, Type: network.HostnameStatusType},
		{Namespace: network.Namespace, Type: network.NodeAddressType, ID: network.NodeAddressesDef},
		{Namespace: config.NamespaceConfig, Type: config.MachineConfigType, ID: config.ActiveConfigID},
	}
}

func (c *EtcFileController) Outputs() []bus.Output {
	return []bus.Output{{Type: network.EtcFileStatusType}, issueOutput}
}

func (c *EtcFileController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	return loop(ctx, r, nil, func() error { return c.reconcile(ctx, r) })
}

func (c *EtcFileController) reconcile(ctx context.Context, r bus.ControllerRuntime) error {
	res, err := bus.GetAs[*network.ResolverStatus](ctx, r, bus.Pointer{Namespace: network.Namespace, Type: network.ResolverStatusType, ID: network.ResolverID})
	if bus.IsNotFound(err) {
		return nil
	}

	if err != nil {
		return err
	}

	host, err := bus.GetAs[*network.HostnameStatus](ctx, r, bus.Pointer{Namespace: network.Namespace, Type: network.HostnameStatusType, ID: network.HostnameID})
	if bus.IsNotFound(err) {
		return nil // hosts names the node: wait for its name
	}

	if err != nil {
		return err
	}

	var node *network.NodeAddress
	if node, err = bus.GetAs[*network.NodeAddress](ctx, r, bus.Pointer{Namespace: network.Namespace, Type: network.NodeAddressType, ID: network.NodeAddressesDef}); err != nil && !bus.IsNotFound(err) {
		return err
	}

	var netCfg *configs.NetworkConfig

	mc, err := bus.GetAs[*config.MachineConfig](ctx, r, bus.Pointer{Namespace: config.NamespaceConfig, Type: config.MachineConfigType, ID: config.ActiveConfigID})
	if err != nil && !bus.IsNotFound(err) {
		return err
	}

	if cfg := mcConfig(mc); cfg != nil && cfg.Machine != nil {
		netCfg = cfg.Machine.Network
	}

	files := map[string]string{
		ResolvFile: renderResolvConf(res.TypedSpec(), host.TypedSpec(), netCfg),
		HostsFile:  renderHosts(host.TypedSpec(), node, netCfg),
	}

	is, want := issues{}, map[string]network.EtcFileStatusSpec{}

	for id, contents := range files {
		path := filepath.Join(c.opts.EtcDir, id)

		if c.written[path] != contents {
			if err := writeFileAtomic(path, []byte(contents)); err != nil {
				is.fail("etcfile/"+id, err)
				continue
			}

			c.written[path] = contents
		}

		want[id] = network.EtcFileStatusSpec{Path: path, Contents: contents}
	}

	if err := syncOutputs(ctx, r, c.Name(), network.Namespace, network.EtcFileStatusType, want); err != nil {
		return err
	}

	return is.sync(ctx, r, c.Name())
}

func renderResolvConf(res *network.ResolverStatusSpec, host *network.HostnameStatusSpec, n *configs.NetworkConfig) string {
	var b strings.Builder

	for _, s := range res.DNSServers[:min(len(res.DNSServers), maxResolvers)] {
		fmt.Fprintf(&b, "nameserver %s\n", s)
	}

	search := slices.Clone(res.SearchDomains)
	if host.Domainname != "" && (n == nil || !n.DisableSearchDomain) && !slices.Contains(search, host.Domainname) {
		search = append([]string{host.Domainname}, search...)
	}

	if len(search) > 0 {
		fmt.Fprintf(&b, "\nsearch %s\n", strings.Join(search, " "))
	}

	return b.String()
}

func renderHosts(host *network.HostnameStatusSpec, node *network.NodeAddress, n *configs.NetworkConfig) string {
	var b strings.Builder

	b.WriteString("127.0.0.1\tlocalhost\n")

	names := host.Hostname
	if fqdn := host.FQDN(); fqdn != host.Hostname {
		names = fqdn + " " + host.Hostname
	}

	ip := "127.0.1.1" // Debian's stand-in while the node has no address
	if node != nil && len(node.TypedSpec().Addresses) > 0 {
		ip = node.TypedSpec().Addresses[0].Addr().String()
	}

	fmt.Fprintf(&b, "%s\t%s\n", ip, names)
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\nff02::1\tip6-allnodes\nff02::2\tip6-allrouters\n")

	if n != nil {
		for _, e := range n.ExtraHostEntries {
			fmt.Fprintf(&b, "%s\t%s\n", e.IP, strings.Join(e.Aliases, " "))
		}
	}

	return b.String()
}
