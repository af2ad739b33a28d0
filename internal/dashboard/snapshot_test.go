package dashboard

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/api/machine"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestCPUUsage(t *testing.T) {
	prev := &machine.CPUStat{User: 10, System: 5, Idle: 80, Iowait: 5}

	for _, tc := range []struct {
		name string
		cur  *machine.CPUStat
		ok   bool
		want CPUUsage
	}{
		{
			name: "busy quarter",
			cur:  &machine.CPUStat{User: 13, System: 6, Idle: 95, Iowait: 6},
			ok:   true,
			want: CPUUsage{User: 0.15, System: 0.05, Idle: 0.75, Iowait: 0.05},
		},
		{name: "no time passed", cur: prev},
		{name: "rebooted", cur: &machine.CPUStat{User: 1, System: 1, Idle: 2}},
		{name: "no reading", cur: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := cpuUsage(prev, tc.cur)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}

			if !near(got.User, tc.want.User) || !near(got.System, tc.want.System) || !near(got.Idle, tc.want.Idle) || !near(got.Iowait, tc.want.Iowait) {
				t.Errorf("usage = %+v, want %+v", got, tc.want)
			}

			if tc.ok && !near(got.Busy(), 0.2) {
				t.Errorf("busy = %v, want 0.2", got.Busy())
			}
		})
	}
}

func TestNetRates(t *testing.T) {
	prev := map[string]NetCounters{"lo": {100, 100}, "eth0": {1000, 500}, "eth1": {5000, 5000}}
	cur := map[string]NetCounters{"lo": {300, 300}, "eth0": {3000, 700}, "eth1": {100, 50}, "eth2": {9, 9}}

	total, links := netRates(prev, cur, 2)

	// eth1 went back (its counters reset): its new value is what it did.
	want := map[string]Rate{"lo": {100, 100}, "eth0": {1000, 100}, "eth1": {50, 25}}
	if len(links) != len(want) {
		t.Fatalf("links = %v, want %v (a link seen once has no rate)", links, want)
	}

	for name, r := range want {
		if links[name] != r {
			t.Errorf("%s = %+v, want %+v", name, links[name], r)
		}
	}

	// Loopback is not the node's traffic.
	if total != (Rate{Rx: 1050, Tx: 125}) {
		t.Errorf("total = %+v", total)
	}

	if total, links := netRates(prev, cur, 0); total != (Rate{}) || len(links) != 0 {
		t.Errorf("no time passed: %+v %v", total, links)
	}
}

func TestProcRows(t *testing.T) {
	t0 := time.Unix(1000, 0)
	mem := &machine.MemInfo{Memtotal: 1000} // kB

	prev := &Sample{Time: t0, Mem: mem, Procs: []*machine.ProcessInfo{
		{Pid: 1, CpuTime: 10}, {Pid: 2, CpuTime: 5}, {Pid: 3, CpuTime: 1},
	}}
	cur := &Sample{Time: t0.Add(2 * time.Second), Mem: mem, Procs: []*machine.ProcessInfo{
		{Pid: 1, CpuTime: 10.5, ResidentMemory: 512000},
		{Pid: 2, CpuTime: 7},
		{Pid: 4, CpuTime: 50, ResidentMemory: 1024}, // new: no share yet
		{Pid: 3, CpuTime: 1, ResidentMemory: 2048},
	}}

	rows := procRows(prev, cur)

	want := []struct {
		pid      int32
		cpu, mem float64
	}{
		{2, 100, 0}, // 2 s of CPU in 2 s: one CPU
		{1, 25, 50}, // 0.5 s in 2 s; 500 kB of 1000 kB
		{3, 0, 0.2}, // idle, ties broken by memory
		{4, 0, 0.1}, // new
	}

	if len(rows) != len(want) {
		t.Fatalf("%d rows", len(rows))
	}

	for i, w := range want {
		if rows[i].GetPid() != w.pid || !near(rows[i].CPU, w.cpu) || !near(rows[i].Mem, w.mem) {
			t.Errorf("row %d = pid %d cpu %v mem %v, want %+v", i, rows[i].GetPid(), rows[i].CPU, rows[i].Mem, w)
		}
	}

	// Without a sample before, every share is zero.
	for _, r := range procRows(nil, cur) {
		if r.CPU != 0 {
			t.Errorf("pid %d has %v%% CPU without a previous sample", r.GetPid(), r.CPU)
		}
	}
}

func TestCommandLine(t *testing.T) {
	for _, tc := range []struct {
		p    *machine.ProcessInfo
		want string
	}{
		{&machine.ProcessInfo{Command: "kworker/0:1"}, "kworker/0:1"},
		{&machine.ProcessInfo{Command: "sh", Args: "sh -c true", Executable: "/bin/busybox"}, "sh -c true"},
		{&machine.ProcessInfo{Command: "etcd", Args: "etcd --name x", Executable: "/usr/local/bin/etcd"}, "/usr/local/bin/etcd --name x"},
		{&machine.ProcessInfo{Command: "x", Args: "./x", Executable: "/opt/x"}, "/opt/x"},
		{&machine.ProcessInfo{Command: "evil", Args: "evil \x1b[2Jboom\ttab"}, "evil  [2Jboom tab"},
	} {
		if got := commandLine(tc.p); got != tc.want {
			t.Errorf("commandLine(%v) = %q, want %q", tc.p, got, tc.want)
		}
	}
}

func TestAppendPoint(t *testing.T) {
	var s []float64
	for i := range maxHistory + 10 {
		s = appendPoint(s, float64(i))
	}

	if len(s) != maxHistory || s[0] != 10 || s[len(s)-1] != maxHistory+9 {
		t.Errorf("history holds %d points from %v to %v", len(s), s[0], s[len(s)-1])
	}
}

func TestMemUsed(t *testing.T) {
	if got := MemUsed(&machine.MemInfo{Memtotal: 1000, Memfree: 100, Cached: 200, Buffers: 50}); got != 650<<10 {
		t.Errorf("MemUsed = %d", got)
	}

	if got := MemUsed(&machine.MemInfo{Memtotal: 100, Memfree: 80, Cached: 80}); got != 0 {
		t.Errorf("MemUsed of inconsistent counters = %d, want 0", got)
	}

	if got := MemUsed(nil); got != 0 {
		t.Errorf("MemUsed(nil) = %d", got)
	}
}

// samples is a Source that answers with the samples it is given, in order:
// the poller's derivations are tested here on exact numbers, and against a
// real node in dashboard_test.go.
type samples struct {
	node string
	next []*Sample
}

func (s *samples) Node() string { return s.node }

func (s *samples) Poll(context.Context, bool) *Sample {
	out := s.next[0]
	s.next = s.next[1:]

	return out
}

func (s *samples) FollowLogs(ctx context.Context, _ int, _ func(string)) error {
	<-ctx.Done()

	return nil
}

func TestDerive(t *testing.T) {
	t0 := time.Unix(1000, 0)
	stat := func(user, idle float64, ctxt uint64) *machine.SystemStat {
		return &machine.SystemStat{CpuTotal: &machine.CPUStat{User: user, Idle: idle}, ContextSwitches: ctxt}
	}

	p := newPoller(&samples{node: "n"}, time.Second)

	first := p.derive(&Sample{Time: t0, Full: true, Hostname: "h", Stat: stat(10, 90, 100),
		Mem: &machine.MemInfo{Memtotal: 100, Memfree: 50}, NetDev: map[string]NetCounters{"eth0": {0, 0}},
		Procs: []*machine.ProcessInfo{{Pid: 1, CpuTime: 1}}})

	if first.HaveCPU || first.HaveNet || first.Hostname != "h" || len(first.Procs) != 1 {
		t.Errorf("first snapshot: %+v", first)
	}

	if len(first.History.Mem) != 1 || first.History.Mem[0] != 50 || len(first.History.CPUUser) != 0 {
		t.Errorf("first history: %+v", first.History)
	}

	// A cheap sample: the memory call failed, the rest answered.
	second := p.derive(&Sample{Time: t0.Add(time.Second), Stat: stat(15, 95, 300),
		NetDev: map[string]NetCounters{"eth0": {1000, 10}}, Err: errors.New("memory: boom")})

	if !second.HaveCPU || !near(second.CPU.User, 0.5) || second.CtxSwitches != 200 {
		t.Errorf("second CPU: %+v %v", second.CPU, second.CtxSwitches)
	}

	if !second.HaveNet || second.Net != (Rate{Rx: 1000, Tx: 10}) {
		t.Errorf("second net: %+v", second.Net)
	}

	// The full sample's parts and the last memory reading stay on screen;
	// the failed reading adds no point.
	if second.Hostname != "h" || len(second.Procs) != 1 || second.Mem.GetMemtotal() != 100 || second.Err == nil {
		t.Errorf("second snapshot: %+v", second)
	}

	if len(second.History.Mem) != 1 || len(second.History.CPUUser) != 1 || second.History.CPUUser[0] != 50 {
		t.Errorf("second history: %+v", second.History)
	}

	// Every call failed: the last answers stay, with no rates.
	third := p.derive(&Sample{Time: t0.Add(2 * time.Second), Err: errors.New("unreachable")})
	if third.HaveCPU || third.HaveNet || third.Stat.GetContextSwitches() != 300 || third.Mem.GetMemtotal() != 100 {
		t.Errorf("third snapshot: %+v", third)
	}

	// The next rates span the gap, from the last answer two seconds ago.
	fourth := p.derive(&Sample{Time: t0.Add(3 * time.Second), Stat: stat(25, 105, 700)})
	if !fourth.HaveCPU || !near(fourth.CPU.User, 0.5) || fourth.CtxSwitches != 200 {
		t.Errorf("fourth CPU: %+v %v", fourth.CPU, fourth.CtxSwitches)
	}

	// Published history is a copy: later points do not show in it.
	if len(second.History.CPUUser) != 1 || len(fourth.History.CPUUser) != 2 {
		t.Errorf("CPU history: second %v, fourth %v", second.History.CPUUser, fourth.History.CPUUser)
	}
}

func TestPollerRun(t *testing.T) {
	t0 := time.Unix(1000, 0)
	src := &samples{node: "n", next: []*Sample{
		{Time: t0, Hostname: "a"},
		{Time: t0.Add(time.Second), Hostname: "b"},
	}}

	// An hour's interval: only the kick of setActive polls again.
	p := newPoller(src, time.Hour)

	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan *Snapshot)
	done := make(chan struct{})

	go func() {
		defer close(done)

		p.run(ctx, func(s *Snapshot) { got <- s })
	}()

	if s := <-got; s.Time != t0 {
		t.Errorf("first poll at %v", s.Time)
	}

	p.setActive(true)

	if s := <-got; s.Time != t0.Add(time.Second) {
		t.Errorf("second poll at %v", s.Time)
	}

	cancel()
	<-done
}
