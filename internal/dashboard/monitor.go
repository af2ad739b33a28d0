package dashboard

import (
	"fmt"
	"strconv"

	"github.com/dustin/go-humanize"
	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"
)

// monitorView is F2: the node's load in numbers and graphs, over its
// processes, busiest first.
type monitorView struct {
	*tview.Grid

	cpu, load, procs, mem *tview.TextView
	cpuGraph, memGraph    *Graph
	loadGraph             *Graph
	rxGraph, txGraph      *Graph
	table                 *tview.Table
}

// The graphs' titles.
const (
	cpuTitle  = "[::b]CPU USER/SYSTEM"
	memTitle  = "[::b]MEM USED"
	loadTitle = "[::b]LOAD AVG 1 min"
	rxTitle   = "[::b]NET RX"
	txTitle   = "[::b]NET TX"
)

// netGraphFloor is the network graphs' least full scale, bytes per
// second: an idle link's trickle stays near the bottom.
const netGraphFloor = 10 << 10

// processColumns are the process table's columns, as Talos's (and top's).
var processColumns = []struct {
	name  string
	align int
}{
	{"PID", tview.AlignRight}, {"S", tview.AlignCenter}, {"CPU%", tview.AlignRight}, {"MEM%", tview.AlignRight},
	{"VIRT", tview.AlignRight}, {"RES", tview.AlignRight}, {"TIME+", tview.AlignRight}, {"THR", tview.AlignRight},
	{"COMMAND", tview.AlignLeft},
}

func newMonitorView() *monitorView {
	text := func() *tview.TextView {
		tv := tview.NewTextView().SetDynamicColors(true).SetWrap(false).SetText(noData)
		tv.SetBorderPadding(1, 0, 1, 0)

		return tv
	}

	v := &monitorView{
		Grid: tview.NewGrid(),
		cpu:  text(), load: text(), procs: text(), mem: text(),
		cpuGraph:  NewGraph(100, false, tcell.ColorGreen, tcell.ColorRed),
		memGraph:  NewGraph(100, false, tcell.ColorYellow),
		loadGraph: NewGraph(1, true, tcell.ColorBlue),
		rxGraph:   NewGraph(netGraphFloor, true, tcell.ColorGreen),
		txGraph:   NewGraph(netGraphFloor, true, tcell.ColorRed),
		table:     tview.NewTable().SetFixed(1, 0).SetSelectable(true, false),
	}

	v.table.SetBorderPadding(0, 0, 1, 0)

	for g, title := range map[*Graph]string{
		v.cpuGraph: cpuTitle, v.memGraph: memTitle, v.loadGraph: loadTitle, v.rxGraph: rxTitle, v.txGraph: txTitle,
	} {
		g.SetBorderPadding(0, 0, 1, 1)
		g.Set(title, "")
	}

	info := tview.NewGrid().SetColumns(-2, -1, -1, -2).
		AddItem(v.cpu, 0, 0, 1, 1, 0, 0, false).
		AddItem(v.load, 0, 1, 1, 1, 0, 0, false).
		AddItem(v.procs, 0, 2, 1, 1, 0, 0, false).
		AddItem(v.mem, 0, 3, 1, 1, 0, 0, false)

	graphs := tview.NewGrid().SetColumns(0, 0, 0).
		AddItem(v.cpuGraph, 0, 0, 1, 1, 0, 0, false).
		AddItem(v.memGraph, 0, 1, 1, 1, 0, 0, false).
		AddItem(v.loadGraph, 0, 2, 1, 1, 0, 0, false)

	bottom := tview.NewGrid().SetRows(0, 0).SetColumns(-1, -3).
		AddItem(v.rxGraph, 0, 0, 1, 1, 0, 0, false).
		AddItem(v.txGraph, 1, 0, 1, 1, 0, 0, false).
		AddItem(v.table, 0, 1, 2, 1, 0, 0, true)

	v.SetRows(6, -1, -2).SetColumns(0).
		AddItem(info, 0, 0, 1, 1, 0, 0, false).
		AddItem(graphs, 1, 0, 1, 1, 0, 0, false).
		AddItem(bottom, 2, 0, 1, 1, 0, 0, true)

	v.fillTable(nil)

	return v
}

func (v *monitorView) focused() tview.Primitive { return v.table }

func (v *monitorView) scroll(lines int, half bool) {
	if half {
		_, _, _, h := v.table.GetInnerRect()
		lines *= max(h/2, 1)
	}

	row, _ := v.table.GetSelection()
	v.table.Select(max(1, min(row+lines, v.table.GetRowCount()-1)), 0)
}

func (v *monitorView) update(s *Snapshot) {
	if s == nil {
		for _, tv := range []*tview.TextView{v.cpu, v.load, v.procs, v.mem} {
			tv.SetText(noData)
		}

		for _, g := range []*Graph{v.cpuGraph, v.memGraph, v.loadGraph, v.rxGraph, v.txGraph} {
			g.Set(g.title, "")
		}

		v.fillTable(nil)

		return
	}

	v.cpu.SetText(cpuText(s))
	v.load.SetText(fmt.Sprintf("[::b]LOAD[::-]\n1 min  [::b]%6.2f[::-]\n5 min  [::b]%6.2f[::-]\n15 min [::b]%6.2f[::-]",
		s.Load.GetLoad1(), s.Load.GetLoad5(), s.Load.GetLoad15()))
	v.procs.SetText(fmt.Sprintf("[::b]PROCS[::-]\nCreated [::b]%6s/s[::-]\nRunning [::b]%8d[::-]\nBlocked [::b]%8d[::-]",
		formatSI(s.ProcsCreated), s.Stat.GetProcessRunning(), s.Stat.GetProcessBlocked()))
	v.mem.SetText(memText(s))

	h := s.History

	v.cpuGraph.Set(cpuTitle, percentLabel(s.HaveCPU, (s.CPU.User+s.CPU.Nice)*100, (s.CPU.System+s.CPU.Irq+s.CPU.SoftIrq)*100), h.CPUUser, h.CPUSystem)
	v.memGraph.Set(memTitle, percentLabel(len(h.Mem) > 0, lastOf(h.Mem)), h.Mem)
	// A load of one per CPU is a busy node: the graph is full there.
	v.loadGraph.max = float64(max(len(s.Stat.GetCpu()), 1))
	v.loadGraph.Set(loadTitle, fmt.Sprintf("%.2f", s.Load.GetLoad1()), h.Load)

	rx, tx := notAvailable, notAvailable
	if s.HaveNet {
		rx, tx = formatRate(s.Net.Rx), formatRate(s.Net.Tx)
	}

	v.rxGraph.Set(rxTitle, rx, h.NetRx)
	v.txGraph.Set(txTitle, tx, h.NetTx)

	v.fillTable(s.Procs)
}

func lastOf(series []float64) float64 {
	if len(series) == 0 {
		return 0
	}

	return series[len(series)-1]
}

// percentLabel is "12.3%" or "12.3% / 4.5%", or n/a before there is data.
func percentLabel(ok bool, values ...float64) string {
	if !ok {
		return notAvailable
	}

	out := ""

	for i, v := range values {
		if i > 0 {
			out += " / "
		}

		out += fmt.Sprintf("%.1f%%", v)
	}

	return out
}

func cpuText(s *Snapshot) string {
	if !s.HaveCPU {
		return "[::b]CPU[::-]\n" + noData
	}

	u := s.CPU

	return fmt.Sprintf("[::b]CPU[::-]\n"+
		"User   [::b]%5.1f%%[::-]  Nice   [::b]%5.1f%%[::-]\n"+
		"System [::b]%5.1f%%[::-]  IRQ    [::b]%5.1f%%[::-]\n"+
		"Idle   [::b]%5.1f%%[::-]  Iowait [::b]%5.1f%%[::-]\n"+
		"Steal  [::b]%5.1f%%[::-]  CtxSw  [::b]%6s/s[::-]",
		u.User*100, u.Nice*100, u.System*100, (u.Irq+u.SoftIrq)*100,
		u.Idle*100, u.Iowait*100, u.Steal*100, formatSI(s.CtxSwitches))
}

func memText(s *Snapshot) string {
	m := s.Mem
	if m == nil {
		return "[::b]MEMORY[::-]\n" + notAvailable
	}

	b := func(kb uint64) string { return humanize.IBytes(kb << 10) }

	return fmt.Sprintf("[::b]MEMORY[::-]\n"+
		"Total  [::b]%9s[::-]  Buffers [::b]%9s[::-]\n"+
		"Used   [::b]%9s[::-]  Cache   [::b]%9s[::-]\n"+
		"Free   [::b]%9s[::-]  Avail   [::b]%9s[::-]\n"+
		"Shared [::b]%9s[::-]  Swapped [::b]%9s[::-]",
		b(m.GetMemtotal()), b(m.GetBuffers()),
		humanize.IBytes(MemUsed(m)), b(m.GetCached()),
		b(m.GetMemfree()), b(m.GetMemavailable()),
		b(m.GetShmem()), b(m.GetSwaptotal()-min(m.GetSwapfree(), m.GetSwaptotal())))
}

// fillTable shows rows, keeping the selected line where it was.
func (v *monitorView) fillTable(rows []ProcRow) {
	t := v.table
	t.Clear()

	for col, c := range processColumns {
		t.SetCell(0, col, tview.NewTableCell("[::b]"+c.name).SetAlign(c.align).SetSelectable(false).SetExpansion(expansion(col)))
	}

	if rows == nil {
		t.SetCell(1, 0, tview.NewTableCell(noData).SetSelectable(false))

		return
	}

	for i, p := range rows {
		cells := []string{
			strconv.Itoa(int(p.GetPid())), p.GetState(), fmt.Sprintf("%.1f", p.CPU), fmt.Sprintf("%.1f", p.Mem),
			humanize.Bytes(p.GetVirtualMemory()), humanize.Bytes(p.GetResidentMemory()),
			formatCPUTime(p.GetCpuTime()), strconv.Itoa(int(p.GetThreads())), commandLine(p.ProcessInfo),
		}

		for col, text := range cells {
			t.SetCell(i+1, col, tview.NewTableCell(tview.Escape(text)).SetAlign(processColumns[col].align).SetExpansion(expansion(col)))
		}
	}

	if row, _ := t.GetSelection(); row < 1 || row > len(rows) {
		t.Select(1, 0)
	}
}

// expansion gives the command column the table's spare width.
func expansion(col int) int {
	if col == len(processColumns)-1 {
		return 1
	}

	return 0
}
