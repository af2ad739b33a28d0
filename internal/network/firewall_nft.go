package network

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/config"
	"github.com/talosbox/talosbox/internal/resources/network"
)

// FirewallTable is the nftables table (family inet) the firewall lives
// in, Talos's name; networkd replaces it whole and owns nothing else.
const FirewallTable = "talos"

// NfTablesChainController applies the ingress firewall
// (firewallChains) to the managed namespace's nftables: the table is
// replaced in one transaction whenever what the config asks for changes,
// and removed when it asks for none.
type NfTablesChainController struct {
	opts *Options
	// applied is what the table holds now; nil when networkd has not
	// touched it yet.
	applied *[]fwChain
}

// NewNfTablesChainController makes the controller.
func NewNfTablesChainController(opts *Options) *NfTablesChainController {
	return &NfTablesChainController{opts: opts}
}

func (c *NfTablesChainController) Name() string { return "network.NfTablesChainController" }

func (c *NfTablesChainController) Inputs() []bus.Input {
	return []bus.Input{
		{Namespace: config.NamespaceConfig, Type: config.MachineConfigType, ID: config.ActiveConfigID},
		{Namespace: network.Namespace, Type: network.NodeAddressType, ID: network.NodeAddressesCur},
	}
}

func (c *NfTablesChainController) Outputs() []bus.Output { return []bus.Output{issueOutput} }

func (c *NfTablesChainController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	retry := time.AfterFunc(time.Hour, r.QueueReconcile)
	defer retry.Stop()

	return loop(ctx, r, nil, func() error {
		is := issues{}

		if err := c.reconcile(ctx, r); err != nil {
			is.fail("firewall", err)
			retry.Reset(retryInterval)
		}

		return is.sync(ctx, r, c.Name())
	})
}

func (c *NfTablesChainController) reconcile(ctx context.Context, r bus.ControllerRuntime) error {
	mc, err := bus.GetAs[*config.MachineConfig](ctx, r, bus.Pointer{Namespace: config.NamespaceConfig, Type: config.MachineConfigType, ID: config.ActiveConfigID})
	if err != nil && !bus.IsNotFound(err) {
		return fmt.Errorf("read machine config: %w", err)
	}

	var addrs []netip.Prefix

	na, err := bus.GetAs[*network.NodeAddress](ctx, r, bus.Pointer{Namespace: network.Namespace, Type: network.NodeAddressType, ID: network.NodeAddressesCur})

	switch {
	case bus.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("read node addresses: %w", err)
	default:
		addrs = na.TypedSpec().Addresses
	}

	want := firewallChains(mcConfig(mc), addrs)

	if c.applied != nil && reflect.DeepEqual(*c.applied, want) {
		return nil
	}

	if err := c.apply(want); err != nil {
		return err
	}

	c.applied = &want

	return nil
}

// apply replaces the firewall table with chains, or removes it.
func (c *NfTablesChainController) apply(chains []fwChain) error {
	var opts []nftables.ConnOption

	if c.opts.NetNSPath != "" {
		ns, err := netns.GetFromPath(c.opts.NetNSPath)
		if err != nil {
			return fmt.Errorf("open network namespace %s: %w", c.opts.NetNSPath, err)
		}
		defer ns.Close() //nolint:errcheck

		opts = append(opts, nftables.WithNetNSFd(int(ns)))
	}

	conn, err := nftables.New(opts...)
	if err != nil {
		return fmt.Errorf("open nftables: %w", err)
	}

	table := &nftables.Table{Family: nftables.TableFamilyINet, Name: FirewallTable}

	if chains == nil {
		// Nothing to remove on a kernel without nf_tables, or when the
		// table is not there: a node without a firewall never needs it.
		tables, err := conn.ListTablesOfFamily(nftables.TableFamilyINet)
		if err != nil || !hasTable(tables) {
			return nil //nolint:nilerr // see above
		}

		conn.DelTable(table)

		if err := conn.Flush(); err != nil {
			return fmt.Errorf("remove nftables table %s: %w", FirewallTable, err)
		}

		return nil
	}

	// Added, deleted and added again in one transaction: the table is
	// replaced atomically whether it was there or not.
	conn.AddTable(table)
	conn.DelTable(table)
	conn.AddTable(table)

	for _, ch := range chains {
		hook, policy := nftables.ChainHookPrerouting, nftables.ChainPolicyAccept
		if ch.input {
			hook = nftables.ChainHookInput
		}

		if ch.drop {
			policy = nftables.ChainPolicyDrop
		}

		chain := conn.AddChain(&nftables.Chain{
			Name: ch.name, Table: table, Type: nftables.ChainTypeFilter,
			Hooknum: hook, Priority: nftables.ChainPriorityRef(nftables.ChainPriority(ch.priority)), Policy: &policy,
		})

		for _, rule := range ch.rules {
			exprs, err := compileRule(conn, table, rule)
			if err != nil {
				return fmt.Errorf("chain %s: %w", ch.name, err)
			}

			conn.AddRule(&nftables.Rule{Table: table, Chain: chain, Exprs: exprs})
		}
	}

	if err := conn.Flush(); err != nil {
		return fmt.Errorf("apply the firewall (nftables table %s): %w", FirewallTable, err)
	}

	return nil
}

func hasTable(tables []*nftables.Table) bool {
	for _, t := range tables {
		if t.Name == FirewallTable {
			return true
		}
	}

	return false
}

// compileRule turns a rule into nftables expressions, adding the
// anonymous sets its lookups need to conn.
func compileRule(conn *nftables.Conn, table *nftables.Table, r fwRule) ([]expr.Any, error) {
	var out []expr.Any

	lookup := func(set *nftables.Set, elems []nftables.SetElement, invert bool) error {
		set.Table, set.Anonymous, set.Constant = table, true, true

		if err := conn.AddSet(set, elems); err != nil {
			return fmt.Errorf("add set: %w", err)
		}

		out = append(out, &expr.Lookup{SourceRegister: 1, SetName: set.Name, SetID: set.ID, Invert: invert})

		return nil
	}

	if r.iifname != "" {
		name := make([]byte, unix.IFNAMSIZ)
		copy(name, r.iifname)

		out = append(out, &expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1}, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: name})
	}

	if r.ctStates != 0 {
		out = append(out,
			&expr.Ct{Key: expr.CtKeySTATE, Register: 1},
			&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: binaryutil.NativeEndian.PutUint32(r.ctStates), Xor: make([]byte, 4)},
			&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: make([]byte, 4)},
		)
	}

	if r.family != 0 {
		proto := byte(unix.NFPROTO_IPV4)
		if r.family == 6 {
			proto = unix.NFPROTO_IPV6
		}

		out = append(out, &expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1}, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}})
	}

	for _, m := range []struct {
		addrs *fwAddrs
		dst   bool // the destination address follows the source's
	}{{r.saddr, false}, {r.daddr, true}} {
		if m.addrs == nil {
			continue
		}

		if r.family == 0 {
			return nil, errors.New("an address match needs an address family")
		}

		offset, size, keyType := uint32(12), uint32(4), nftables.TypeIPAddr
		if r.family == 6 {
			offset, size, keyType = 8, 16, nftables.TypeIP6Addr
		}

		if m.dst {
			offset += size
		}

		if len(m.addrs.ranges) == 0 {
			if !m.addrs.invert {
				return nil, errors.New("an address match with no addresses matches nothing")
			}

			continue // not in nothing: every address
		}

		out = append(out, &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: size})

		if err := lookup(&nftables.Set{Interval: true, KeyType: keyType}, addrElements(m.addrs.ranges), m.addrs.invert); err != nil {
			return nil, err
		}
	}

	if r.l4proto != 0 {
		out = append(out, &expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1}, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{r.l4proto}})
	}

	if len(r.icmpTypes) > 0 {
		out = append(out, &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 0, Len: 1})

		elems := make([]nftables.SetElement, len(r.icmpTypes))
		for i, t := range r.icmpTypes {
			elems[i] = nftables.SetElement{Key: []byte{t}}
		}

		if err := lookup(&nftables.Set{KeyType: nftables.TypeICMPType}, elems, false); err != nil {
			return nil, err
		}
	}

	if len(r.dports) > 0 {
		out = append(out, &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2})

		if err := lookup(&nftables.Set{Interval: true, KeyType: nftables.TypeInetService}, portElements(r.dports), false); err != nil {
			return nil, err
		}
	}

	if r.limit > 0 {
		out = append(out, &expr.Limit{Type: expr.LimitTypePkts, Rate: r.limit, Unit: expr.LimitTimeSecond, Burst: uint32(r.limit)})
	}

	verdict := expr.VerdictDrop
	if r.accept {
		verdict = expr.VerdictAccept
	}

	return append(out, &expr.Counter{}, &expr.Verdict{Kind: verdict}), nil
}

// addrElements are an interval set's elements for ranges: each range's
// first address, and the address after its last one as the end (none
// when it runs to the family's last address).
func addrElements(rs []ipRange) []nftables.SetElement {
	var out []nftables.SetElement

	for _, r := range rs {
		out = append(out, nftables.SetElement{Key: r.from.AsSlice()})

		if next := r.to.Next(); next.IsValid() {
			out = append(out, nftables.SetElement{Key: next.AsSlice(), IntervalEnd: true})
		}
	}

	return out
}

// portElements is addrElements for port ranges (validation keeps them
// disjoint).
func portElements(ps []configs.PortRange) []nftables.SetElement {
	var out []nftables.SetElement

	for _, p := range ps {
		out = append(out, nftables.SetElement{Key: binaryutil.BigEndian.PutUint16(p.Lo)})

		if p.Hi != 65535 {
			out = append(out, nftables.SetElement{Key: binaryutil.BigEndian.PutUint16(p.Hi + 1), IntervalEnd: true})
		}
	}

	return out
}
