package render

import (
	"fmt"
	"maps"
	"path"
	"slices"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/render/etcdargs"
	"github.com/talosbox/talosbox/internal/render/layout"
)

// etcd renders the embedded member's configuration as etcd's command line
// (what internal/controlplane and internal/etcd give embed.Config), with
// cluster.etcd.extraArgs checked as the member applies and validates them.
func (b *builder) etcd() {
	if !b.cfg.IsControlPlane() || b.cfg.Cluster == nil {
		return
	}

	e := b.cfg.Cluster.Etcd
	if e == nil {
		e = &configs.EtcdConfig{}
	}

	ok := true

	settings, errs := etcdargs.Apply(e.ExtraArgs)
	for _, k := range slices.Sorted(maps.Keys(errs)) {
		b.fail(keyPath("cluster.etcd.extraArgs", k), "%v", errs[k])
		ok = false
	}

	if ok {
		for _, err := range settings.Validate() {
			b.fail("cluster.etcd.extraArgs", "%v", err)
			ok = false
		}
	}

	for _, f := range []struct {
		name    string
		subnets []string
	}{{"advertisedSubnets", e.AdvertisedSubnets}, {"listenSubnets", e.ListenSubnets}} {
		for i, s := range f.subnets {
			if err := etcdargs.CheckSubnet(s); err != nil {
				b.fail(fmt.Sprintf("cluster.etcd.%s[%d]", f.name, i), "%v", err)
				ok = false
			}
		}
	}

	if !ok {
		return
	}

	addrs, notes := etcdargs.Select(b.node.ips, e.AdvertisedSubnets, e.ListenSubnets)
	for _, n := range notes {
		b.note("etcd (--node-ip): %s", n)
	}

	dir := path.Join(layout.EphemeralDir(b.opts.Mode == configs.ModeContainer), "lib")
	pki := path.Join(dir, "etcd-pki")

	args := []string{
		"--name=" + b.node.hostname,
		"--data-dir=" + path.Join(dir, "etcd"),
		"--listen-peer-urls=" + etcdargs.URLs(addrs.ListenPeer, etcdargs.PeerPort),
		"--listen-client-urls=" + etcdargs.URLs(addrs.ListenClient, etcdargs.ClientPort),
		"--initial-advertise-peer-urls=" + etcdargs.URLs(addrs.Advertised, etcdargs.PeerPort),
		"--advertise-client-urls=" + etcdargs.URLs(addrs.Advertised, etcdargs.ClientPort),
		"--cert-file=" + path.Join(pki, "server.crt"),
		"--key-file=" + path.Join(pki, "server.key"),
		"--trusted-ca-file=" + path.Join(pki, "ca.crt"),
		"--client-cert-auth=true",
		"--peer-cert-file=" + path.Join(pki, "peer.crt"),
		"--peer-key-file=" + path.Join(pki, "peer.key"),
		"--peer-trusted-ca-file=" + path.Join(pki, "ca.crt"),
		"--peer-client-cert-auth=true",
	}

	b.add(Artifact{Path: "services/etcd.args", NodePath: "etcd embedded in machined: the command line equivalent of its configuration",
		Data: argsFile("etcd", append(args, settings.Flags...))})
}
