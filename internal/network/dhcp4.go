package network

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/netip"
	"sync"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/dhcp"
	"github.com/talosbox/talosbox/internal/resources/network"
)

// DHCP4Operators is the OperatorFactory for dhcp4 specs: a DHCPv4 lease
// held on the link, published at the operator layer. Other operators are
// not built yet (nil, nil: reported pending).
func DHCP4Operators(spec network.OperatorSpecSpec, env OperatorEnv) (Operator, error) {
	if spec.Operator != network.OperatorDHCP4 {
		return nil, nil
	}

	return &dhcp4Operator{spec: spec, env: env}, nil
}

// dhcp4Operator turns lease events into specs.
type dhcp4Operator struct {
	spec network.OperatorSpecSpec
	env  OperatorEnv

	mu    sync.Mutex
	lease *dhcp.Lease
}

func (o *dhcp4Operator) Run(ctx context.Context, notify func()) {
	opts := dhcp.Options{
		Interface:   o.spec.LinkName,
		RouteMetric: int(o.spec.RouteMetric),
		Logf: func(format string, args ...any) {
			if o.env.Logger != nil {
				o.env.Logger.Debug(fmt.Sprintf(format, args...), "link", o.spec.LinkName)
			}
		},
	}

	switch o.spec.ClientIdentifier {
	case configs.ClientIdentifierMAC:
		opts.ClientIDFromMAC = true
	case configs.ClientIdentifierDUID:
		id, err := hex.DecodeString(o.spec.DUIDRaw)
		if err != nil {
			o.logError(fmt.Errorf("client identifier: DUID %q: %w", o.spec.DUIDRaw, err))
			return
		}

		opts.ClientID = id
	}

	client, err := dhcp.New(opts)
	if err != nil {
		o.logError(err)
		return
	}

	events := make(chan dhcp.Event)
	done := make(chan struct{})

	go func() {
		defer close(done)

		// The client's sockets must open inside the managed namespace, on
		// the thread InNetNS locks there.
		run := func() error { return client.Run(ctx, events) }

		var err error
		if o.env.InNetNS != nil {
			err = o.env.InNetNS(run)
		} else {
			err = run()
		}

		if err != nil {
			o.logError(err)
		}
	}()

	for {
		select {
		case <-done:
			return
		case ev := <-events:
			o.mu.Lock()

			switch ev.Kind {
			case dhcp.Acquired, dhcp.Renewed, dhcp.Rebound:
				o.lease = ev.Lease
			case dhcp.Expired, dhcp.Released:
				o.lease = nil
			case dhcp.Failed:
			}

			o.mu.Unlock()
			notify()
		}
	}
}

func (o *dhcp4Operator) logError(err error) {
	if o.env.Logger != nil {
		o.env.Logger.Error("dhcp4", "link", o.spec.LinkName, "error", err)
	}
}

func (o *dhcp4Operator) current() *dhcp.Lease {
	o.mu.Lock()
	defer o.mu.Unlock()

	return o.lease
}

// LinkSpecs carries the lease's MTU (option 26) to the link; a configured
// MTU still wins (see mergeLinks).
func (o *dhcp4Operator) LinkSpecs() []network.LinkSpecSpec {
	l := o.current()
	if l == nil || l.MTU <= 0 {
		return nil
	}

	return []network.LinkSpecSpec{{Name: o.spec.LinkName, Up: true, MTU: uint32(l.MTU)}}
}

func (o *dhcp4Operator) AddressSpecs() []network.AddressSpecSpec {
	l := o.current()
	if l == nil {
		return nil
	}

	return []network.AddressSpecSpec{{Address: l.Address, LinkName: o.spec.LinkName, Family: network.FamilyInet4}}
}

func (o *dhcp4Operator) RouteSpecs() []network.RouteSpecSpec {
	l := o.current()
	if l == nil || o.spec.SkipRoutes {
		return nil
	}

	var out []network.RouteSpecSpec

	for _, r := range l.InstallRoutes() {
		spec := network.RouteSpecSpec{
			Family: network.FamilyInet4, Gateway: r.Gateway, OutLinkName: o.spec.LinkName,
			Table: network.TableMain, Priority: o.spec.RouteMetric, Scope: ScopeGlobal, Source: l.Address.Addr(),
			Type: network.RouteTypeUnicast, Protocol: network.ProtoBoot, // as Talos's DHCP routes
		}

		if r.Dst.Bits() > 0 {
			spec.Destination = r.Dst
		}

		if !r.Gateway.IsValid() {
			spec.Scope = ScopeLink
		}

		out = append(out, spec)
	}

	return out
}

func (o *dhcp4Operator) HostnameSpecs() []network.HostnameSpecSpec {
	l := o.current()
	if l == nil || l.Hostname == "" || o.spec.SkipHostnameRequest {
		return nil
	}

	return []network.HostnameSpecSpec{{Hostname: l.Hostname, Domainname: l.Domain}}
}

func (o *dhcp4Operator) ResolverSpecs() []network.ResolverSpecSpec {
	l := o.current()
	if l == nil || len(l.DNS) == 0 {
		return nil
	}

	spec := network.ResolverSpecSpec{DNSServers: append([]netip.Addr(nil), l.DNS...)}
	if l.Domain != "" {
		spec.SearchDomains = []string{l.Domain}
	}

	return []network.ResolverSpecSpec{spec}
}

func (o *dhcp4Operator) TimeServerSpecs() []network.TimeServerSpecSpec {
	l := o.current()
	if l == nil || len(l.NTP) == 0 {
		return nil
	}

	servers := make([]string, len(l.NTP))
	for i, a := range l.NTP {
		servers[i] = a.String()
	}

	return []network.TimeServerSpecSpec{{NTPServers: servers}}
}
