package global

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/talosbox/talosbox/internal/client"
)

type WaitGoal int

const (
	GoalBack        WaitGoal = iota // rebooted: down, then running again
	GoalGone                        // shut down: the API stops answering
	GoalMaintenance                 // reset with STATE wiped: back without a config, in maintenance mode
)

// pollInterval paces the probes of a waiting node: often enough that a
// quick reboot is noticed, rare enough to be no load.
const pollInterval = time.Second

// NodeState is what a probe of the node's MachineStatus saw.
type NodeState struct {
	stage   string
	version uint64
	created time.Time
	err     error
}

// MachineState probes the node's MachineStatus resource.
func MachineState(ctx context.Context, c *client.Client) NodeState {
	st, err := c.MachineStatus(ctx)

	return NodeState{stage: st.Stage, version: st.Version, created: st.Created, err: err}
}

// unreachable says the probe failed because the node's API is gone, as
// opposed to answering with an error.
func unreachable(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
		return true
	}

	return errors.Is(err, context.DeadlineExceeded)
}

// cameBack says a node that answers "running" has been through a reboot
// since before: a new bus (created changed) or at least two stage changes.
func cameBack(before, now NodeState) bool {
	if before.err != nil {
		return false
	}

	return !now.created.Equal(before.created) || now.version >= before.version+2
}

func WaitForNodes(cmd *cobra.Command, s *Session, nodes []client.Result[NodeState], goal WaitGoal, wf WaitFlags) error {
	ctx, cancel := context.WithTimeout(cmd.Context(), wf.timeout)
	defer cancel()

	names := make([]string, len(nodes))
	before := map[string]NodeState{}

	for i, n := range nodes {
		names[i] = s.NodeName(n.Node, nil)
		before[n.Node] = n.Value
	}

	prog := newProgress(cmd.ErrOrStderr(), names)
	defer prog.stop()

	targets := make([]string, len(nodes))
	for i, n := range nodes {
		targets[i] = n.Node
	}

	results := client.FanOut(ctx, targets, func(ctx context.Context, node string) (struct{}, error) {
		name := s.NodeName(node, nil)
		sawDown := false
		last := ""

		var probeMaintenance func(context.Context) (bool, error)

		if goal == GoalMaintenance {
			probe, closeProbe, err := maintenanceProbe(s, node)
			if err != nil {
				return struct{}{}, err
			}
			defer closeProbe()

			probeMaintenance = probe
		}

		tick := time.NewTicker(pollInterval)
		defer tick.Stop()

		for {
			st := MachineState(ctx, s.Client(node))

			var inMaintenance bool
			if probeMaintenance != nil && st.err != nil {
				// The node's certificates went with STATE: the client's
				// credentials no longer reach it, the maintenance API does.
				inMaintenance, _ = probeMaintenance(ctx)
			}

			switch {
			case inMaintenance:
				prog.done(name, "back: maintenance mode, waiting for a config (apply-config --insecure)")
				return struct{}{}, nil
			case goal == GoalGone && st.err != nil && unreachable(st.err):
				prog.done(name, "shut down")
				return struct{}{}, nil
			case st.err != nil:
				sawDown = sawDown || unreachable(st.err)
				last = "unreachable: " + client.Message(st.err)
			case goal == GoalBack && st.stage == "running" && (sawDown || cameBack(before[node], st)):
				if wf.QuietBack {
					prog.drop(name)
				} else {
					prog.done(name, "back: running")
				}

				return struct{}{}, nil
			case goal == GoalBack && st.stage == "running":
				last = "waiting for the reboot to start"
			default:
				sawDown = true
				last = st.stage
			}

			prog.set(name, last)

			select {
			case <-ctx.Done():
				return struct{}{}, fmt.Errorf("timed out waiting (last state: %s)", last)
			case <-tick.C:
			}
		}
	})

	prog.stop()

	return ReportErrors(cmd, results)
}

// maintenanceProbe dials node directly without credentials, as
// `apply-config --insecure` does, and reports whether it serves the
// maintenance API. A node reset with its STATE wiped has no config, and so
// no certificates: neither this client nor another node's apid can reach
// it with mutual TLS any more.
func maintenanceProbe(s *Session, node string) (func(context.Context) (bool, error), func(), error) {
	addr := node
	if addr == "" && s.Shared != nil && len(s.Shared.Endpoints()) > 0 {
		addr = s.Shared.Endpoints()[0]
	}

	c, err := client.New(client.Options{Endpoints: []string{addr}, Insecure: true})
	if err != nil {
		return nil, nil, err
	}

	probe := func(ctx context.Context) (bool, error) {
		ctx, cancel := context.WithTimeout(client.WithoutNode(ctx), client.DefaultDialTimeout)
		defer cancel()

		resp, err := c.Machine.Version(ctx, &emptypb.Empty{})
		if err != nil {
			return false, err
		}

		v, err := client.FirstMessage(resp.GetMessages())
		if err != nil {
			return false, err
		}

		return v.GetMaintenance(), nil
	}

	return probe, func() { c.Close() }, nil
}

// progress shows each waiting node's state: a spinner line redrawn in
// place when stderr is a terminal, plain lines on change otherwise (logs,
// CI), so captured output stays readable.
type progress struct {
	mu      sync.Mutex
	w       io.Writer
	tty     bool
	order   []string
	state   map[string]string
	frame   int
	quit    chan struct{}
	stopped bool
	wg      sync.WaitGroup
}

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func newProgress(w io.Writer, nodes []string) *progress {
	p := &progress{w: w, tty: isTerminal(w), order: nodes, state: map[string]string{}, quit: make(chan struct{})}

	if p.tty {
		p.wg.Add(1)

		go p.spin()
	}

	return p
}

// isTerminal: golang.org/x/term is not a dependency; a character device
// is what a terminal looks like to Stat.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}

	fi, err := f.Stat()

	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func (p *progress) spin() {
	defer p.wg.Done()

	t := time.NewTicker(120 * time.Millisecond)
	defer t.Stop()

	for {
		select {
		case <-p.quit:
			return
		case <-t.C:
			p.mu.Lock()
			p.frame++
			p.redraw()
			p.mu.Unlock()
		}
	}
}

// redraw rewrites the spinner line; p.mu is held.
func (p *progress) redraw() {
	var parts []string

	for _, n := range p.order {
		if st, ok := p.state[n]; ok {
			parts = append(parts, n+": "+st)
		}
	}

	if len(parts) == 0 {
		return
	}

	fmt.Fprintf(p.w, "\r\033[K%s waiting for %s", spinnerFrames[p.frame%len(spinnerFrames)], strings.Join(parts, ", "))
}

func (p *progress) set(node, state string) {
	p.mu.Lock()
	defer p.mu.Unlock()

	if p.state[node] == state {
		return
	}

	p.state[node] = state

	if p.tty {
		p.redraw()
	} else {
		fmt.Fprintf(p.w, "%s: %s\n", node, state)
	}
}

// done prints a node's final state on its own line and stops tracking it.
func (p *progress) done(node, state string) {
	p.mu.Lock()
	defer p.mu.Unlock()

	delete(p.state, node)

	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s: %s\n", node, state)
		p.redraw()
	} else {
		fmt.Fprintf(p.w, "%s: %s\n", node, state)
	}
}

// drop stops tracking a node without a line: the caller reports it.
func (p *progress) drop(node string) {
	p.mu.Lock()
	defer p.mu.Unlock()

	delete(p.state, node)

	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
		p.redraw()
	}
}

func (p *progress) stop() {
	p.mu.Lock()

	if p.stopped {
		p.mu.Unlock()
		return
	}

	p.stopped = true
	close(p.quit)
	p.mu.Unlock()

	p.wg.Wait()

	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// WaitFlags are --wait and --timeout of reboot, shutdown and reset.
type WaitFlags struct {
	Wait    bool
	timeout time.Duration

	// QuietBack leaves "back: running" to the command, which reports the
	// node itself once it is back (upgrade: the version it now runs).
	QuietBack bool
}

func (w *WaitFlags) Register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&w.Wait, "wait", false, "wait for the operation to complete, tracking its progress")
	cmd.Flags().DurationVar(&w.timeout, "timeout", 30*time.Minute, "time to wait for the operation to complete when --wait is set")
}
