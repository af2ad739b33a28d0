package server

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/netstat"
)

// netnsDirs are where the CNI names pods' network namespaces.
var netnsDirs = []string{"/var/run/netns", "/run/netns"}

// Netstat is `talosctl netstat`: the node's sockets, and with -k those of
// its pods' network namespaces (tagged with the namespace's name, which
// `containers -k` reports for each pod).
func (m *machineServer) Netstat(ctx context.Context, req *machine.NetstatRequest) (*machine.NetstatResponse, error) {
	protos := wantedProtocols(req.GetL4Proto())
	holders, netnsPIDs := netstat.Processes("/proc")

	var records []*machine.ConnectRecord

	read := func(procNet, netns string) error {
		for _, proto := range protos {
			socks, err := netstat.ReadTable(procNet, proto)
			if err != nil {
				return status.Errorf(codes.Internal, "netstat: %v", err)
			}

			for _, s := range socks {
				if !filterSocket(req.GetFilter(), s) {
					continue
				}

				r := connectRecord(s, netns)
				if req.GetFeature().GetPid() {
					if p, ok := holders[s.Inode]; ok {
						r.Process = &machine.ConnectRecord_Process{Pid: uint32(p.PID), Name: p.Name}
					}
				}

				records = append(records, r)
			}
		}

		return nil
	}

	ns := req.GetNetns()
	if ns == nil || ns.GetHostnetwork() {
		if err := read("/proc/self/net", ""); err != nil {
			return nil, err
		}
	}

	for _, name := range podNamespaces(ns) {
		if err := ctx.Err(); err != nil {
			return nil, status.FromContextError(err).Err()
		}

		ino, ok := netstat.NamespaceInode(name.path)
		if !ok {
			continue
		}

		pid, ok := netnsPIDs[ino]
		if !ok {
			continue // no process left in it: a pod being torn down
		}

		if err := read(filepath.Join("/proc", strconv.Itoa(pid), "net"), name.name); err != nil {
			return nil, err
		}
	}

	return &machine.NetstatResponse{Messages: []*machine.Netstat{{Connectrecord: records}}}, nil
}

type namedNetns struct{ name, path string }

// podNamespaces are the named network namespaces asked for: all of them,
// or those listed.
func podNamespaces(ns *machine.NetstatRequest_NetNS) []namedNetns {
	var out []namedNetns

	seen := map[string]bool{}

	for _, dir := range netnsDirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}

		for _, e := range entries {
			if seen[e.Name()] {
				continue
			}

			seen[e.Name()] = true

			out = append(out, namedNetns{name: e.Name(), path: filepath.Join(dir, e.Name())})
		}
	}

	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })

	if ns.GetAllnetns() {
		return out
	}

	want := map[string]bool{}
	for _, n := range ns.GetNetns() {
		want[n] = true
	}

	var picked []namedNetns

	for _, n := range out {
		if want[n.name] {
			picked = append(picked, n)
		}
	}

	return picked
}

func wantedProtocols(p *machine.NetstatRequest_L4Proto) []string {
	flags := []bool{p.GetTcp(), p.GetTcp6(), p.GetUdp(), p.GetUdp6(), p.GetUdplite(), p.GetUdplite6(), p.GetRaw(), p.GetRaw6()}

	var out []string

	for i, on := range flags {
		if on {
			out = append(out, netstat.Protocols[i])
		}
	}

	if out == nil {
		out = netstat.Protocols[:4] // tcp, tcp6, udp, udp6: netstat's default
	}

	return out
}

func filterSocket(f machine.NetstatRequest_Filter, s netstat.Socket) bool {
	switch f {
	case machine.NetstatRequest_LISTENING:
		return s.Listening()
	case machine.NetstatRequest_CONNECTED:
		return !s.Listening()
	default:
		return true
	}
}

func connectRecord(s netstat.Socket, netns string) *machine.ConnectRecord {
	return &machine.ConnectRecord{
		L4Proto:    s.Proto,
		Localip:    s.Local.Addr().String(),
		Localport:  uint32(s.Local.Port()),
		Remoteip:   s.Remote.Addr().String(),
		Remoteport: uint32(s.Remote.Port()),
		State:      machine.ConnectRecord_State(s.State),
		Txqueue:    s.TxQueue,
		Rxqueue:    s.RxQueue,
		Tr:         machine.ConnectRecord_TimerActive(s.Timer),
		Timerwhen:  s.TimerWhen,
		Retrnsmt:   s.Retransmit,
		Uid:        s.UID,
		Timeout:    s.Timeout,
		Inode:      s.Inode,
		Ref:        s.Ref,
		Pointer:    s.Pointer,
		Netns:      netns,
	}
}
