package dashboard

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/talosbox/talosbox/internal/api/machine"
)

// maxHistory is how many points a series keeps: wider than any graph.
const maxHistory = 512

// Snapshot is what the screens draw for one node: its latest sample and
// what is derived from it and the samples before. A snapshot is never
// changed once published, so the UI reads it without locks.
type Snapshot struct {
	Node string
	Time time.Time
	Err  error

	Stat *machine.SystemStat
	Mem  *machine.MemInfo
	Load *machine.LoadAvg

	// Hostname, Version, Services, Resources and Procs come from the last
	// full sample, which may be older than Time.
	Hostname  string
	Version   *machine.Version
	Services  []*machine.ServiceInfo
	Resources *Resources
	Procs     []ProcRow

	// CPU is the share of each CPU state over the last interval; HaveCPU
	// is false until two samples were taken.
	CPU     CPUUsage
	HaveCPU bool
	// CtxSwitches and ProcsCreated are per second over the last interval.
	CtxSwitches, ProcsCreated float64

	// Net are bytes per second over the last interval, all links but
	// loopback; Links the same per link. HaveNet is false when the node
	// gives no counters to this caller.
	Net     Rate
	Links   map[string]Rate
	HaveNet bool

	History History
}

// Rate is receive and transmit bytes per second.
type Rate struct{ Rx, Tx float64 }

// CPUUsage is the share (0..1) of the CPU time spent in each state.
type CPUUsage struct {
	User, Nice, System, Idle, Iowait, Irq, SoftIrq, Steal float64
}

// Busy is the share of time not idle.
func (u CPUUsage) Busy() float64 { return max(0, 1-u.Idle-u.Iowait) }

// History are the series the graphs draw, oldest first: CPU in percent,
// memory used in percent, load, network bytes per second.
type History struct {
	CPUUser, CPUSystem, Mem, Load, NetRx, NetTx []float64
}

// ProcRow is a process with its share of a CPU (percent, over the last
// interval) and of the memory.
type ProcRow struct {
	*machine.ProcessInfo

	CPU, Mem float64
}

// MemUsed is used memory in bytes, as Talos and free(1) count it: neither
// free, nor page cache, nor buffers.
func MemUsed(m *machine.MemInfo) uint64 {
	used := m.GetMemtotal() - m.GetMemfree() - m.GetCached() - m.GetBuffers()
	if used > m.GetMemtotal() {
		return 0 // the counters come from one read, but guard the wrap
	}

	return used << 10
}

// poller polls one Source and derives its snapshots. Only its goroutine
// touches the fields below the atomics.
type poller struct {
	src      Source
	interval time.Duration

	active atomic.Bool
	kick   chan struct{}

	// The last answer of each call, and when it came: a failed call
	// leaves its last answer on screen, and the next rate is taken over
	// the whole time since.
	stat     *machine.SystemStat
	statTime time.Time
	netDev   map[string]NetCounters
	netTime  time.Time
	mem      *machine.MemInfo
	load     *machine.LoadAvg
	lastFull *Sample
	procs    []ProcRow // of lastFull
	hist     History
}

func newPoller(src Source, interval time.Duration) *poller {
	return &poller{src: src, interval: interval, kick: make(chan struct{}, 1)}
}

// setActive says whether the node is on screen; becoming active polls at
// once, so the screen fills without waiting for the next tick.
func (p *poller) setActive(active bool) {
	if p.active.Swap(active) == active || !active {
		return
	}

	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// pollTimeout bounds one poll: an unreachable node must not stall the
// poller for longer than it takes the client to give up dialling.
func (p *poller) pollTimeout() time.Duration { return max(2*p.interval, 5*time.Second) }

// run polls every interval until ctx ends, publishing each snapshot.
func (p *poller) run(ctx context.Context, publish func(*Snapshot)) {
	tick := time.NewTicker(p.interval)
	defer tick.Stop()

	for {
		pctx, cancel := context.WithTimeout(ctx, p.pollTimeout())
		s := p.src.Poll(pctx, p.active.Load())

		cancel()

		if ctx.Err() != nil {
			return
		}

		publish(p.derive(s))

		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-p.kick:
		}
	}
}

// derive makes the snapshot of s, against the answers before it.
func (p *poller) derive(s *Sample) *Snapshot {
	snap := &Snapshot{Node: p.src.Node(), Time: s.Time, Err: s.Err}

	if s.Stat != nil {
		if p.stat != nil {
			snap.CPU, snap.HaveCPU = cpuUsage(p.stat.GetCpuTotal(), s.Stat.GetCpuTotal())

			if secs := s.Time.Sub(p.statTime).Seconds(); secs > 0 {
				snap.CtxSwitches = counterRate(p.stat.GetContextSwitches(), s.Stat.GetContextSwitches(), secs)
				snap.ProcsCreated = counterRate(p.stat.GetProcessCreated(), s.Stat.GetProcessCreated(), secs)
			}
		}

		p.stat, p.statTime = s.Stat, s.Time
	}

	if s.NetDev != nil {
		if p.netDev != nil {
			snap.Net, snap.Links = netRates(p.netDev, s.NetDev, s.Time.Sub(p.netTime).Seconds())
			snap.HaveNet = true
		}

		p.netDev, p.netTime = s.NetDev, s.Time
	}

	p.mem = cmp.Or(s.Mem, p.mem)
	p.load = cmp.Or(s.Load, p.load)
	snap.Stat, snap.Mem, snap.Load = p.stat, p.mem, p.load

	if s.Full {
		// Rows are shared by the snapshots until the next full sample:
		// nothing changes them once made.
		p.procs = procRows(p.lastFull, s)
		p.lastFull = s
	}

	if f := p.lastFull; f != nil {
		snap.Hostname, snap.Version, snap.Services, snap.Resources = f.Hostname, f.Version, f.Services, f.Res
		snap.Procs = p.procs
	}

	p.record(snap, s)
	snap.History = p.hist.clone()

	return snap
}

// record appends what the sample measured to the history; a failed call
// adds no point rather than repeating the last one.
func (p *poller) record(snap *Snapshot, s *Sample) {
	h := &p.hist

	if snap.HaveCPU {
		h.CPUUser = appendPoint(h.CPUUser, (snap.CPU.User+snap.CPU.Nice)*100)
		h.CPUSystem = appendPoint(h.CPUSystem, (snap.CPU.System+snap.CPU.Irq+snap.CPU.SoftIrq)*100)
	}

	if s.Mem.GetMemtotal() > 0 {
		h.Mem = appendPoint(h.Mem, float64(MemUsed(s.Mem))/float64(s.Mem.GetMemtotal()<<10)*100)
	}

	if s.Load != nil {
		h.Load = appendPoint(h.Load, s.Load.GetLoad1())
	}

	if snap.HaveNet {
		h.NetRx = appendPoint(h.NetRx, snap.Net.Rx)
		h.NetTx = appendPoint(h.NetTx, snap.Net.Tx)
	}
}

func appendPoint(series []float64, v float64) []float64 {
	if len(series) >= maxHistory {
		series = append(series[:0], series[len(series)-maxHistory+1:]...)
	}

	return append(series, v)
}

func (h History) clone() History {
	return History{
		CPUUser: slices.Clone(h.CPUUser), CPUSystem: slices.Clone(h.CPUSystem), Mem: slices.Clone(h.Mem),
		Load: slices.Clone(h.Load), NetRx: slices.Clone(h.NetRx), NetTx: slices.Clone(h.NetTx),
	}
}

// cpuUsage is the share of each state between two readings of the
// cumulative CPU times.
func cpuUsage(prev, cur *machine.CPUStat) (CPUUsage, bool) {
	d := CPUUsage{
		User: cur.GetUser() - prev.GetUser(), Nice: cur.GetNice() - prev.GetNice(),
		System: cur.GetSystem() - prev.GetSystem(), Idle: cur.GetIdle() - prev.GetIdle(),
		Iowait: cur.GetIowait() - prev.GetIowait(), Irq: cur.GetIrq() - prev.GetIrq(),
		SoftIrq: cur.GetSoftIrq() - prev.GetSoftIrq(), Steal: cur.GetSteal() - prev.GetSteal(),
	}

	total := d.User + d.Nice + d.System + d.Idle + d.Iowait + d.Irq + d.SoftIrq + d.Steal
	if total <= 0 || d.User < 0 || d.System < 0 || d.Idle < 0 {
		// No time passed, or the node rebooted between the readings.
		return CPUUsage{}, false
	}

	return CPUUsage{
		User: d.User / total, Nice: d.Nice / total, System: d.System / total, Idle: d.Idle / total,
		Iowait: d.Iowait / total, Irq: d.Irq / total, SoftIrq: d.SoftIrq / total, Steal: d.Steal / total,
	}, true
}

// counterRate is how fast a cumulative counter grew; a counter that went
// back (a reboot) grew by its new value.
func counterRate(prev, cur uint64, secs float64) float64 {
	if cur < prev {
		prev = 0
	}

	return float64(cur-prev) / secs
}

// netRates are each link's rates and their total without loopback, which
// only carries the node's talk with itself.
func netRates(prev, cur map[string]NetCounters, secs float64) (Rate, map[string]Rate) {
	links := make(map[string]Rate, len(cur))

	var total Rate

	if secs <= 0 {
		return total, links
	}

	for name, c := range cur {
		p, ok := prev[name]
		if !ok {
			continue // a new link: no rate until its second reading
		}

		r := Rate{Rx: counterRate(p.RxBytes, c.RxBytes, secs), Tx: counterRate(p.TxBytes, c.TxBytes, secs)}
		links[name] = r

		if name != "lo" {
			total.Rx += r.Rx
			total.Tx += r.Tx
		}
	}

	return total, links
}

// procRows are cur's processes, busiest first: the CPU share is the CPU
// time each used since prev (a percent of one CPU, as top shows it).
func procRows(prev, cur *Sample) []ProcRow {
	before := map[int32]float64{}

	var secs float64

	if prev != nil {
		secs = cur.Time.Sub(prev.Time).Seconds()

		for _, p := range prev.Procs {
			before[p.GetPid()] = p.GetCpuTime()
		}
	}

	memTotal := float64(cur.Mem.GetMemtotal() << 10)
	rows := make([]ProcRow, 0, len(cur.Procs))

	for _, p := range cur.Procs {
		r := ProcRow{ProcessInfo: p}

		if was, ok := before[p.GetPid()]; ok && secs > 0 && p.GetCpuTime() >= was {
			r.CPU = (p.GetCpuTime() - was) / secs * 100
		}

		if memTotal > 0 {
			r.Mem = float64(p.GetResidentMemory()) / memTotal * 100
		}

		rows = append(rows, r)
	}

	slices.SortStableFunc(rows, func(a, b ProcRow) int {
		return cmp.Or(cmp.Compare(b.CPU, a.CPU), cmp.Compare(b.GetResidentMemory(), a.GetResidentMemory()), cmp.Compare(a.GetPid(), b.GetPid()))
	})

	return rows
}

// commandLine is what the process table shows for p: its arguments, with
// the first one made the executable's full path when it names the same
// program (as Talos shows it), else the kernel's command name.
func commandLine(p *machine.ProcessInfo) string {
	args := p.GetArgs()

	switch {
	case args == "":
		args = p.GetCommand()
	case p.GetExecutable() != "":
		first, rest, _ := strings.Cut(args, " ")
		if base := first[strings.LastIndexByte(first, '/')+1:]; base == p.GetExecutable()[strings.LastIndexByte(p.GetExecutable(), '/')+1:] {
			args = strings.TrimSpace(p.GetExecutable() + " " + rest)
		}
	}

	// Arguments may hold anything; a control character would wreck the
	// terminal's line.
	return strings.Map(func(r rune) rune {
		if r < 32 || r == 127 {
			return ' '
		}

		return r
	}, args)
}
