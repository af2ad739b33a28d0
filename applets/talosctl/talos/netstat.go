package talos

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/internal/api/common"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/client"
)

type netstatFlags struct {
	verbose, extend, pid, timers, listening, all, pods bool
	tcp, udp, udplite, raw, ipv4, ipv6                 bool
}

// NewNetstatCommand is `talosctl netstat` (ss), with Talos's flags and
// columns.
func NewNetstatCommand(g *global.Args) *cobra.Command {
	var f netstatFlags

	cmd := &cobra.Command{
		Use:     "netstat",
		Aliases: []string{"ss"},
		Short:   "Show network connections and sockets",
		Long: `Show network connections and sockets.

You can pass an optional argument to view a specific pod's connections.
To do this, format the argument as "namespace/pod".
Note that only pods with a pod network namespace are allowed.
If you don't pass an argument, the command will show host connections.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.pods && len(args) > 0 {
				return errors.New("cannot use --pods and specify a pod")
			}

			req := f.request()

			return g.WithSession(false, func(s *global.Session) error {
				ctx := cmd.Context()

				var podsByNetns map[string]map[string]string

				if f.pods || len(args) > 0 {
					var err error
					if podsByNetns, err = podNetns(ctx, s); err != nil {
						return err
					}
				}

				if len(args) > 0 {
					node, netns := findPodNetns(podsByNetns, args[0])
					if netns == "" {
						return fmt.Errorf("pod %s not found", args[0])
					}

					req.Netns = &machine.NetstatRequest_NetNS{Netns: []string{netns}}
					if node != "" {
						s = s.On([]string{node})
					}
				}

				results := global.FanOut(ctx, s, func(ctx context.Context, c *client.Client) (*machine.Netstat, error) {
					resp, err := c.Machine.Netstat(ctx, req)
					if err != nil {
						return nil, err
					}

					return client.FirstMessage(resp.GetMessages())
				})

				w := global.NewTable(cmd.OutOrStdout())
				header := false

				for _, r := range results {
					if r.Err != nil {
						continue
					}

					node := s.NodeName(r.Node, r.Value.GetMetadata())

					for _, rec := range r.Value.GetConnectrecord() {
						if !header {
							fmt.Fprintln(w, "NODE\t"+f.labels())

							header = true
						}

						fmt.Fprintln(w, strings.Join(f.row(node, rec, podsByNetns[r.Node]), "\t"))
					}
				}

				if err := w.Flush(); err != nil {
					return err
				}

				return global.ReportErrors(cmd, results)
			})
		},
	}

	fl := cmd.Flags()
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "display sockets of all supported transport protocols")
	// -e is --endpoints in talosctl, so extend is -x, as in Talos.
	fl.BoolVarP(&f.extend, "extend", "x", false, "show detailed socket information")
	fl.BoolVarP(&f.pid, "programs", "p", false, "show process using socket")
	fl.BoolVarP(&f.timers, "timers", "o", false, "display timers")
	fl.BoolVarP(&f.listening, "listening", "l", false, "display listening server sockets")
	fl.BoolVarP(&f.all, "all", "a", false, "display all sockets states (default: connected)")
	fl.BoolVarP(&f.pods, "pods", "k", false, "show sockets used by Kubernetes pods")
	fl.BoolVarP(&f.tcp, "tcp", "t", false, "display only TCP sockets")
	fl.BoolVarP(&f.udp, "udp", "u", false, "display only UDP sockets")
	fl.BoolVarP(&f.udplite, "udplite", "U", false, "display only UDPLite sockets")
	fl.BoolVarP(&f.raw, "raw", "w", false, "display only RAW sockets")
	fl.BoolVarP(&f.ipv4, "ipv4", "4", false, "display only ipv4 sockets")
	fl.BoolVarP(&f.ipv6, "ipv6", "6", false, "display only ipv6 sockets")

	return cmd
}

func (f *netstatFlags) request() *machine.NetstatRequest {
	p := &machine.NetstatRequest_L4Proto{
		Tcp: f.tcp, Tcp6: f.tcp, Udp: f.udp, Udp6: f.udp,
		Udplite: f.udplite, Udplite6: f.udplite, Raw: f.raw, Raw6: f.raw,
	}

	none := !f.tcp && !f.udp && !f.udplite && !f.raw

	switch {
	case f.verbose:
		p = &machine.NetstatRequest_L4Proto{Tcp: true, Tcp6: true, Udp: true, Udp6: true, Udplite: true, Udplite6: true, Raw: true, Raw6: true}
	case none:
		p.Tcp, p.Tcp6, p.Udp, p.Udp6 = true, true, true, true
	}

	if f.ipv4 && !f.ipv6 {
		p.Tcp6, p.Udp6, p.Udplite6, p.Raw6 = false, false, false, false
	}

	if f.ipv6 && !f.ipv4 {
		p.Tcp, p.Udp, p.Udplite, p.Raw = false, false, false, false
	}

	req := &machine.NetstatRequest{
		Feature: &machine.NetstatRequest_Feature{Pid: f.pid},
		L4Proto: p,
		Netns:   &machine.NetstatRequest_NetNS{Allnetns: f.pods, Hostnetwork: true},
		Filter:  machine.NetstatRequest_CONNECTED,
	}

	switch {
	case f.all:
		req.Filter = machine.NetstatRequest_ALL
	case f.listening:
		req.Filter = machine.NetstatRequest_LISTENING
	}

	return req
}

func (f *netstatFlags) labels() string {
	l := []string{"Proto", "Recv-Q", "Send-Q", "Local Address", "Foreign Address", "State"}

	if f.extend {
		l = append(l, "Uid", "Inode")
	}

	if f.pid {
		l = append(l, "PID/Program name")
	}

	if f.pods {
		l = append(l, "Pod")
	}

	if f.timers {
		l = append(l, "Timer")
	}

	return strings.Join(l, "\t")
}

func (f *netstatFlags) row(node string, r *machine.ConnectRecord, pods map[string]string) []string {
	state := ""
	if r.GetState() != machine.ConnectRecord_CLOSE {
		state = r.GetState().String()
	}

	remotePort := "*"
	if r.GetRemoteport() != 0 {
		remotePort = strconv.FormatUint(uint64(r.GetRemoteport()), 10)
	}

	row := []string{
		node, r.GetL4Proto(), strconv.FormatUint(r.GetRxqueue(), 10), strconv.FormatUint(r.GetTxqueue(), 10),
		fmt.Sprintf("%s:%d", r.GetLocalip(), r.GetLocalport()), fmt.Sprintf("%s:%s", r.GetRemoteip(), remotePort), state,
	}

	if f.extend {
		row = append(row, strconv.FormatUint(uint64(r.GetUid()), 10), strconv.FormatUint(r.GetInode(), 10))
	}

	if f.pid {
		p := "-"
		if r.GetProcess().GetPid() != 0 {
			p = fmt.Sprintf("%d/%s", r.GetProcess().GetPid(), r.GetProcess().GetName())
		}

		row = append(row, p)
	}

	if f.pods {
		pod := "-"
		if name, ok := pods[r.GetNetns()]; ok && r.GetNetns() != "" {
			pod = name
		}

		row = append(row, pod)
	}

	if f.timers {
		when := strconv.FormatFloat(float64(r.GetTimerwhen())/100, 'f', 2, 64)
		row = append(row, fmt.Sprintf("%s (%s/%d/%d)", strings.ToLower(r.GetTr().String()), when, r.GetRetrnsmt(), r.GetTimeout()))
	}

	return row
}

// podNetns maps, per node, each pod's network namespace name to the pod
// ("namespace/name"), from the CRI's sandboxes.
func podNetns(ctx context.Context, s *global.Session) (map[string]map[string]string, error) {
	results := global.FanOut(ctx, s, func(ctx context.Context, c *client.Client) (*machine.Container, error) {
		resp, err := c.Machine.Containers(ctx, &machine.ContainersRequest{Namespace: k8sNamespace, Driver: common.ContainerDriver_CRI})
		if err != nil {
			return nil, err
		}

		return client.FirstMessage(resp.GetMessages())
	})

	out := map[string]map[string]string{}

	var errs error

	for _, r := range results {
		if r.Err != nil {
			errs = errors.Join(errs, &client.NodeError{Node: r.Node, Err: r.Err})

			continue
		}

		for _, c := range r.Value.GetContainers() {
			if c.GetNetworkNamespace() == "" || c.GetPid() == 0 || c.GetId() != c.GetPodId() {
				continue
			}

			if out[r.Node] == nil {
				out[r.Node] = map[string]string{}
			}

			out[r.Node][c.GetNetworkNamespace()] = c.GetId()
		}
	}

	return out, errs
}

func findPodNetns(pods map[string]map[string]string, want string) (node, netns string) {
	for n, byNetns := range pods {
		for ns, pod := range byNetns {
			if pod == strings.ToLower(want) {
				return n, ns
			}
		}
	}

	return "", ""
}
