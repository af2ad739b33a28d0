package dashboard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/client"
)

// Source is where one node's data comes from. The dashboard runs one
// poller per Source; tests and the CLI use APISource, the node API.
type Source interface {
	// Node is the node as given with -n; "" is the endpoint itself.
	Node() string
	// Poll gathers one Sample. full adds what only the node on screen
	// needs (processes, services, resources): the others are kept to the
	// cheap calls their graphs need. A failed call is recorded in the
	// Sample, never returned, so one broken part does not hide the rest.
	Poll(ctx context.Context, full bool) *Sample
	// FollowLogs sends the node's log, from its last tail lines on, a line
	// at a time, until ctx ends (nil) or the stream fails.
	FollowLogs(ctx context.Context, tail int, line func(string)) error
}

// Sample is one poll of one node, as the API answered it.
type Sample struct {
	Time time.Time
	Full bool

	Hostname string
	Version  *machine.Version
	Stat     *machine.SystemStat
	Mem      *machine.MemInfo
	Load     *machine.LoadAvg
	Procs    []*machine.ProcessInfo // only in full samples
	Services []*machine.ServiceInfo // only in full samples
	Res      *Resources             // only in full samples

	// NetDev are the per-interface counters; nil when the node does not
	// let this caller read them (see APISource).
	NetDev map[string]NetCounters

	// Err joins the failures of this poll's calls.
	Err error
}

// NetCounters are one interface's cumulative byte counters.
type NetCounters struct {
	RxBytes, TxBytes uint64
}

// ReachFunc is the connection to a node and the context that routes calls
// there: global.Session.Reach, after client.WithNode.
type ReachFunc func(ctx context.Context, node string) (context.Context, *client.Client)

// APISource reads a node through its API, the way every talosctl command
// does: through the endpoint, routed by the node metadata.
type APISource struct {
	node  string
	reach ReachFunc

	// netDevDenied is set once the node refused Read: the node API has no
	// call a reader may make for interface counters, so /proc/net/dev is
	// read, which is admin-only; asking again every interval would only
	// cost the node a refusal.
	netDevDenied atomic.Bool
}

// NewAPISource reads node through reach.
func NewAPISource(node string, reach ReachFunc) *APISource {
	return &APISource{node: node, reach: reach}
}

// APISources is one APISource per node; no nodes is the endpoint itself.
func APISources(nodes []string, reach ReachFunc) []Source {
	if len(nodes) == 0 {
		nodes = []string{""}
	}

	out := make([]Source, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, NewAPISource(n, reach))
	}

	return out
}

// SortNodes orders nodes as Talos's dashboard does: addresses first, in
// address order (an address with a port sorts by address, then port),
// then names; a node given twice is listed once.
func SortNodes(nodes []string) []string {
	addr := func(n string) (netip.AddrPort, bool) {
		if ap, err := netip.ParseAddrPort(n); err == nil {
			return ap, true
		}

		a, err := netip.ParseAddr(n)

		return netip.AddrPortFrom(a, 0), err == nil
	}

	out := slices.Clone(nodes)
	slices.SortStableFunc(out, func(a, b string) int {
		aa, aok := addr(a)
		ba, bok := addr(b)

		switch {
		case aok && bok:
			return aa.Compare(ba)
		case aok != bok:
			if aok {
				return -1
			}

			return 1
		}

		return strings.Compare(a, b)
	})

	return slices.Compact(out)
}

// Node implements Source.
func (s *APISource) Node() string { return s.node }

func (s *APISource) conn(ctx context.Context) (context.Context, *client.Client) {
	return s.reach(client.WithNode(ctx, s.node), s.node)
}

// Poll implements Source. The calls run in parallel: through a proxying
// endpoint each costs a round trip, and a sequence of them could outlast a
// one-second interval.
func (s *APISource) Poll(ctx context.Context, full bool) *Sample {
	ctx, c := s.conn(ctx)
	out := &Sample{Time: time.Now(), Full: full}

	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)

	// run runs one call; its failure is kept with the call's name.
	run := func(name string, call func() error) {
		wg.Go(func() {
			if err := call(); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
				mu.Unlock()
			}
		})
	}

	run("system stat", func() error {
		resp, err := c.Machine.SystemStat(ctx, &emptypb.Empty{})
		if err == nil {
			out.Stat, err = client.FirstMessage(resp.GetMessages())
		}

		return err
	})
	run("memory", func() error {
		resp, err := c.Machine.Memory(ctx, &emptypb.Empty{})
		if err != nil {
			return err
		}

		m, err := client.FirstMessage(resp.GetMessages())
		out.Mem = m.GetMeminfo()

		return err
	})
	run("load average", func() error {
		resp, err := c.Machine.LoadAvg(ctx, &emptypb.Empty{})
		if err == nil {
			out.Load, err = client.FirstMessage(resp.GetMessages())
		}

		return err
	})

	if !s.netDevDenied.Load() {
		run("network counters", func() (err error) {
			out.NetDev, err = s.netDev(ctx, c)
			return err
		})
	}

	if full {
		s.pollFull(ctx, c, out, run)
	}

	wg.Wait()

	out.Err = errors.Join(errs...)

	return out
}

// pollFull adds the calls only the node on screen needs.
func (s *APISource) pollFull(ctx context.Context, c *client.Client, out *Sample, run func(string, func() error)) {
	run("version", func() error {
		resp, err := c.Machine.Version(ctx, &emptypb.Empty{})
		if err == nil {
			out.Version, err = client.FirstMessage(resp.GetMessages())
		}

		return err
	})
	run("hostname", func() error {
		resp, err := c.Machine.Hostname(ctx, &emptypb.Empty{})
		if err != nil {
			return err
		}

		h, err := client.FirstMessage(resp.GetMessages())
		out.Hostname = h.GetHostname()

		return err
	})
	run("processes", func() error {
		resp, err := c.Machine.Processes(ctx, &emptypb.Empty{})
		if err != nil {
			return err
		}

		p, err := client.FirstMessage(resp.GetMessages())
		out.Procs = p.GetProcesses()

		return err
	})
	run("services", func() error {
		l, err := c.Services(ctx)
		out.Services = l.GetServices()

		return err
	})
	run("resources", func() (err error) {
		out.Res, err = fetchResources(ctx, c)
		return err
	})
}

// netDev reads the node's interface counters (NetworkDeviceStats, which
// readers may call). A node that does not have the call turns the counters
// off for good, without an error: the graphs say "n/a" instead.
func (s *APISource) netDev(ctx context.Context, c *client.Client) (map[string]NetCounters, error) {
	resp, err := c.Machine.NetworkDeviceStats(ctx, &emptypb.Empty{})
	if err != nil {
		return nil, s.netDevError(err)
	}

	st, err := client.FirstMessage(resp.GetMessages())
	if err != nil {
		return nil, err
	}

	out := map[string]NetCounters{}
	for _, d := range st.GetDevices() {
		out[d.GetName()] = NetCounters{RxBytes: d.GetRxBytes(), TxBytes: d.GetTxBytes()}
	}

	return out, nil
}

func (s *APISource) netDevError(err error) error {
	switch status.Code(err) {
	case codes.PermissionDenied, codes.Unimplemented:
		s.netDevDenied.Store(true)

		return nil
	}

	return err
}

// logService is the log the dashboard shows. Talos shows the kernel log,
// where its machined writes; talosbox's machined keeps its own log ring
// (talosctl logs machined), so that is where the node's story is.
const logService = "machined"

// FollowLogs implements Source.
func (s *APISource) FollowLogs(ctx context.Context, tail int, line func(string)) error {
	ctx, c := s.conn(ctx)

	stream, err := c.Machine.Logs(ctx, &machine.LogsRequest{Namespace: "system", Id: logService, Follow: true, TailLines: int32(tail)})
	if err != nil {
		return fmt.Errorf("logs: %w", err)
	}

	var lines lineSplitter

	for {
		msg, err := stream.Recv()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}

			if errors.Is(err, io.EOF) {
				return errors.New("logs: the node ended the stream")
			}

			return fmt.Errorf("logs: %w", err)
		}

		if err := client.MetadataError(msg.GetMetadata()); err != nil {
			return fmt.Errorf("logs: %w", err)
		}

		lines.write(msg.GetBytes(), line)
	}
}

// lineSplitter turns a stream of chunks into lines: a chunk may end in the
// middle of one.
type lineSplitter struct {
	partial []byte
}

func (l *lineSplitter) write(chunk []byte, line func(string)) {
	buf := append(l.partial, chunk...)

	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}

		line(strings.TrimRight(string(buf[:i]), "\r"))
		buf = buf[i+1:]
	}

	l.partial = append(l.partial[:0], buf...)
}
