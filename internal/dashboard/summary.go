package dashboard

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rivo/tview"

	"github.com/talosbox/talosbox/internal/api/machine"
)

// summaryView is F1: what the node is and how it is doing, over its log.
type summaryView struct {
	*tview.Grid

	talos, kubernetes, network *tview.TextView
	logs                       *tview.TextView
}

func newSummaryView() *summaryView {
	text := func() *tview.TextView {
		tv := tview.NewTextView().SetDynamicColors(true).SetWrap(false).SetText(noData)
		tv.SetBorderPadding(1, 0, 1, 0)

		return tv
	}

	v := &summaryView{
		Grid:       tview.NewGrid(),
		talos:      text(),
		kubernetes: text(),
		network:    text(),
		logs:       tview.NewTextView().SetDynamicColors(true).SetMaxLines(maxLogLines),
	}

	// The log follows its end until scrolled up; G or End follow again.
	v.logs.ScrollToEnd()

	v.SetRows(8, 0).SetColumns(-3, -2, -3).
		AddItem(v.talos, 0, 0, 1, 1, 0, 0, false).
		AddItem(v.kubernetes, 0, 1, 1, 1, 0, 0, false).
		AddItem(v.network, 0, 2, 1, 1, 0, 0, false).
		AddItem(v.logs, 1, 0, 1, 3, 0, 0, true)

	return v
}

func (v *summaryView) focused() tview.Primitive { return v.logs }

func (v *summaryView) scroll(lines int, half bool) { scrollText(v.logs, lines, half) }

func (v *summaryView) update(s *Snapshot) {
	if s == nil {
		for _, tv := range []*tview.TextView{v.talos, v.kubernetes, v.network} {
			tv.SetText(noData)
		}

		return
	}

	r := s.Resources
	if r == nil {
		r = &Resources{}
	}

	v.talos.SetText(fieldList(talosFields(s, r)))
	v.kubernetes.SetText(fieldList(kubernetesFields(s, r)))
	v.network.SetText(fieldList(networkFields(s, r)))
}

// talosFields are the node's identity and boot state: Talos's first
// column, with the node's type and platform where Talos has SideroLink.
func talosFields(s *Snapshot, r *Resources) []field {
	stage, ready := notAvailable, notAvailable

	if ms := r.MachineStatus; ms != nil {
		stage = stateText(string(ms.Stage))
		ready = boolStatus(ms.Status.Ready, "True", "False")

		if !ms.Status.Ready && len(ms.Status.UnmetConditions) > 0 {
			names := make([]string, len(ms.Status.UnmetConditions))
			for i, c := range ms.Status.UnmetConditions {
				names[i] = c.Name
			}

			ready += " (" + tview.Escape(strings.Join(names, ", ")) + ")"
		}
	}

	cluster := notAvailable
	if r.Members != nil {
		cluster = fmt.Sprintf("%d machine%s", len(r.Members), plural(len(r.Members)))
	}

	platform := notAvailable
	if p := s.Version.GetPlatform(); p != nil {
		platform = tview.Escape(p.GetName())
		if p.GetMode() != "" && p.GetMode() != p.GetName() {
			platform += " (" + tview.Escape(p.GetMode()) + ")"
		}
	}

	secureBoot := notAvailable
	if r.SecureBoot != nil {
		secureBoot = boolStatus(*r.SecureBoot, "True", "False")
	}

	return []field{
		{"UUID", orNA(r.UUID)},
		{"CLUSTER", cluster},
		{"TYPE", orNA(r.MachineType)},
		{"PLATFORM", platform},
		{"STAGE", stage},
		{"READY", ready},
		{"SECUREBOOT", secureBoot},
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}

	return "s"
}

// kubernetesFields are the node's Kubernetes parts; the control plane's
// static pods only on a control plane.
func kubernetesFields(s *Snapshot, r *Resources) []field {
	fields := []field{
		{"KUBERNETES", orNA(r.KubernetesVersion())},
		{"KUBELET", serviceState(s.Services, "kubelet")},
		{"ETCD", serviceState(s.Services, "etcd")},
	}

	if r.MachineType == "worker" {
		return fields
	}

	return append(fields,
		field{"APISERVER", podReady(r, "kube-apiserver")},
		field{"CONTROLLER-MANAGER", podReady(r, "kube-controller-manager")},
		field{"SCHEDULER", podReady(r, "kube-scheduler")},
	)
}

func podReady(r *Resources, name string) string {
	switch r.StaticPodReady(name) {
	case "":
		return notAvailable
	case "True":
		return stateText("Healthy")
	default:
		return stateText("Unhealthy")
	}
}

// serviceState is a service's health when it runs and has a check, else
// its state.
func serviceState(services []*machine.ServiceInfo, id string) string {
	i := slices.IndexFunc(services, func(s *machine.ServiceInfo) bool { return s.GetId() == id })
	if i < 0 {
		return notAvailable
	}

	svc := services[i]
	if svc.GetState() == "Running" && !svc.GetHealth().GetUnknown() {
		return boolStatus(svc.GetHealth().GetHealthy(), "Healthy", "Unhealthy")
	}

	return stateText(svc.GetState())
}

// networkFields are the node's name and where it is on the network.
func networkFields(s *Snapshot, r *Resources) []field {
	host := notAvailable
	if r.Hostname != nil || s.Hostname != "" {
		host = tview.Escape(hostname("", s))
	}

	addrs := mapStrings(r.Addresses)
	slices.Sort(addrs)

	connectivity := notAvailable
	if st := r.NetStatus; st != nil {
		connectivity = boolStatus(st.ConnectivityReady, "OK", "Failed")
	}

	ntp := notAvailable
	if r.TimeServers != nil {
		ntp = joinOr(r.TimeServers.NTPServers, none)
	}

	dns := notAvailable
	if r.Resolvers != nil {
		dns = joinOr(mapStrings(r.Resolvers.DNSServers), none)
	}

	return []field{
		{"HOST", host},
		{"IP", joinOr(addrs, notAvailable)},
		{"GW", joinOr(r.Gateways(), notAvailable)},
		{"CONNECTIVITY", connectivity},
		{"DNS", dns},
		{"NTP", ntp},
	}
}

// scrollText moves a text view by lines, or by half its height.
func scrollText(tv *tview.TextView, lines int, half bool) {
	if half {
		_, _, _, h := tv.GetInnerRect()
		lines *= max(h/2, 1)
	}

	row, col := tv.GetScrollOffset()
	tv.ScrollTo(max(row+lines, 0), col)
}
