package dashboard

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/rivo/tview"

	"github.com/talosbox/talosbox/internal/resources/network"
)

// networkView is F3: the node's network as networkd reports it, with each
// link's traffic. Talos's F3 on the node's console edits the network
// config; through the API the dashboard only shows it, and so lets the
// node be switched here too.
type networkView struct {
	*tview.TextView
}

func newNetworkView() *networkView {
	tv := tview.NewTextView().SetWrap(false).SetText(noData)
	tv.SetBorderPadding(1, 0, 1, 1)

	return &networkView{TextView: tv}
}

func (v *networkView) focused() tview.Primitive { return v.TextView }

func (v *networkView) scroll(lines int, half bool) { scrollText(v.TextView, lines, half) }

func (v *networkView) update(s *Snapshot) {
	if s == nil {
		v.SetText(noData)

		return
	}

	row, col := v.GetScrollOffset()
	v.SetText(networkText(s))
	v.ScrollTo(row, col)
}

// networkText is the screen's text, plain: its tables are aligned by
// tabwriter, which color tags would throw off.
func networkText(s *Snapshot) string {
	r := s.Resources
	if r == nil {
		r = &Resources{}
	}

	var b strings.Builder

	host := hostname("", s)
	if r.Hostname != nil && r.Hostname.Domainname != "" {
		host += "." + r.Hostname.Domainname
	}

	dns, ntp := notAvailable, notAvailable
	if r.Resolvers != nil {
		dns = joinPlain(mapStrings(r.Resolvers.DNSServers), none)
	}

	if r.TimeServers != nil {
		ntp = joinPlain(r.TimeServers.NTPServers, none)
	}

	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "HOSTNAME\t%s\n", host)
	fmt.Fprintf(w, "GATEWAY\t%s\n", joinPlain(r.Gateways(), notAvailable))
	fmt.Fprintf(w, "DNS\t%s\n", dns)
	fmt.Fprintf(w, "NTP\t%s\n", ntp)
	w.Flush() //nolint:errcheck // a strings.Builder does not fail

	b.WriteString("\nLINKS\n")
	linksTable(&b, s, r)

	b.WriteString("\nROUTES\n")
	routesTable(&b, r)

	return b.String()
}

// linksTable lists the links networkd reports and those the counters
// name: a node without networkd (a container) still has its interfaces.
func linksTable(b *strings.Builder, s *Snapshot, r *Resources) {
	links := map[string]Link{}
	for _, l := range r.Links {
		links[l.Name] = l
	}

	for name := range s.Links {
		if _, ok := links[name]; !ok {
			links[name] = Link{Name: name}
		}
	}

	if len(links) == 0 {
		b.WriteString(notAvailable + "\n")

		return
	}

	addrs := map[string][]string{}
	for _, a := range r.LinkAddrs {
		addrs[a.LinkName] = append(addrs[a.LinkName], a.Address.String())
	}

	w := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tKIND\tSTATE\tMTU\tHW ADDR\tRX\tTX\tADDRESSES")

	for _, name := range slices.Sorted(maps.Keys(links)) {
		l := links[name]

		rx, tx := notAvailable, notAvailable
		if rate, ok := s.Links[name]; ok {
			rx, tx = formatRate(rate.Rx), formatRate(rate.Tx)
		}

		kind, state, mtu := cmp.Or(l.Kind, l.Type), l.OperationalState, ""
		if l.MTU > 0 {
			mtu = fmt.Sprint(l.MTU)
		}

		slices.Sort(addrs[name])
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, dash(kind), dash(state), dash(mtu), dash(l.HardwareAddr),
			rx, tx, joinPlain(addrs[name], "-"))
	}

	w.Flush() //nolint:errcheck // a strings.Builder does not fail
}

// routesTable lists the routes but the kernel's local table, which only
// holds the node's own addresses.
func routesTable(b *strings.Builder, r *Resources) {
	routes := slices.DeleteFunc(slices.Clone(r.Routes), func(rt network.RouteStatusSpec) bool {
		return rt.Table == network.TableLocal
	})

	if len(routes) == 0 {
		b.WriteString(notAvailable + "\n")

		return
	}

	slices.SortStableFunc(routes, func(a, b network.RouteStatusSpec) int {
		return strings.Compare(a.Family+a.Destination.String(), b.Family+b.Destination.String())
	})

	w := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "DESTINATION\tGATEWAY\tLINK\tTABLE\tMETRIC")

	for _, rt := range routes {
		dst := "default"
		if rt.Destination.Bits() > 0 {
			dst = rt.Destination.String()
		}

		gw := "-"
		if rt.Gateway.IsValid() {
			gw = rt.Gateway.String()
		}

		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\n", dst, gw, dash(rt.OutLinkName), rt.Table, rt.Priority)
	}

	w.Flush() //nolint:errcheck // a strings.Builder does not fail
}

func mapStrings[T fmt.Stringer](values []T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = v.String()
	}

	return out
}

func joinPlain(values []string, def string) string {
	if len(values) == 0 {
		return def
	}

	return strings.Join(values, ", ")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}

	return s
}
