package cgroups

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
)

// Column is one column of a preset: its header and how a cgroup's row
// shows it.
type Column struct {
	Name  string
	Value func(n *Node, procs map[string]string) string
}

// Presets are Talos's: cpu, cpuset, io, memory, process, psi, swap.
var Presets = map[string][]Column{
	"cpu": {
		{"CpuWeight", file("cpu.weight")},
		{"CpuNice", file("cpu.weight.nice")},
		{"CpuMax", file("cpu.max")},
		{"CpuUser", usec("cpu.stat", "user_usec")},
		{"User/%", share("cpu.stat", "user_usec")},
		{"CpuSystem", usec("cpu.stat", "system_usec")},
		{"System/%", share("cpu.stat", "system_usec")},
		{"Throttled", usec("cpu.stat", "throttled_usec")},
	},
	"cpuset": {
		{"CpuSet", file("cpuset.cpus")},
		{"CpuSet(Eff)", file("cpuset.cpus.effective")},
		{"Mems", file("cpuset.mems")},
		{"Mems(Eff)", file("cpuset.mems.effective")},
	},
	"io": {
		{"Bytes Read/Written", ioStat("rbytes", "wbytes", true)},
		{"ios Read/Write", ioStat("rios", "wios", false)},
		{"PressAvg10", pressure("io.pressure", "some", "avg10")},
		{"PressAvg60", pressure("io.pressure", "some", "avg60")},
		{"PressTotal", pressureTotal("io.pressure", "some")},
	},
	"memory": {
		{"MemCurrent", bytesOf("memory.current")},
		{"MemPeak", bytesOf("memory.peak")},
		{"MemLow", bytesOf("memory.low")},
		{"Peak/Low", ratio("memory.peak", "memory.low")},
		{"MemHigh", bytesOf("memory.high")},
		{"MemMin", bytesOf("memory.min")},
		{"Current/Min", ratio("memory.current", "memory.min")},
		{"MemMax", bytesOf("memory.max")},
	},
	"process": {
		{"PidsCurrent", file("pids.current")},
		{"PidsPeak", file("pids.peak")},
		{"PidsMax", file("pids.max")},
		{"Procs", count("cgroup.procs")},
		{"Threads", count("cgroup.threads")},
		{"Processes", processes},
	},
	"psi": {
		{"MemCurrent", bytesOf("memory.current")},
		{"MemPsiSome10", pressure("memory.pressure", "some", "avg10")},
		{"MemPsi10", pressure("memory.pressure", "full", "avg10")},
		{"CpuPsi10", pressure("cpu.pressure", "full", "avg10")},
		{"IoPsi10", pressure("io.pressure", "full", "avg10")},
	},
	"swap": {
		{"SwapCurrent", bytesOf("memory.swap.current")},
		{"SwapPeak", bytesOf("memory.swap.peak")},
		{"SwapHigh", bytesOf("memory.swap.high")},
		{"SwapMax", bytesOf("memory.swap.max")},
		{"ZswapCurrent", bytesOf("memory.zswap.current")},
		{"ZswapMax", bytesOf("memory.zswap.max")},
		{"ZswapWriteback", file("memory.zswap.writeback")},
	},
}

// PresetNames lists the presets, sorted.
func PresetNames() []string {
	names := make([]string, 0, len(Presets))
	for n := range Presets {
		names = append(names, n)
	}

	sort.Strings(names)

	return names
}

// Print writes the tree as a table: NAME (indented by depth) and the
// columns. procs maps PIDs to process names for the process preset.
func Print(w io.Writer, root *Node, cols []Column, procs map[string]string) {
	header := []string{"NAME"}
	for _, c := range cols {
		header = append(header, c.Name)
	}

	fmt.Fprintln(w, strings.Join(header, "\t"))

	root.Walk(func(n *Node, depth int) {
		name := n.Name
		if depth > 0 {
			name = strings.Repeat("  ", depth-1) + "└─" + n.Name
		}

		row := []string{name}
		for _, c := range cols {
			row = append(row, c.Value(n, procs))
		}

		fmt.Fprintln(w, strings.Join(row, "\t"))
	})
}

const unset = "-"

func file(name string) func(*Node, map[string]string) string {
	return func(n *Node, _ map[string]string) string {
		if v := n.Value(name); v != "" {
			return v
		}

		return unset
	}
}

func bytesOf(name string) func(*Node, map[string]string) string {
	return func(n *Node, _ map[string]string) string {
		v := n.Value(name)

		b, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			if v == "" {
				return unset
			}

			return v // "max"
		}

		return humanize.IBytes(b)
	}
}

func usec(file, key string) func(*Node, map[string]string) string {
	return func(n *Node, _ map[string]string) string {
		v, err := strconv.ParseUint(n.Keyed(file)[key], 10, 64)
		if err != nil {
			return unset
		}

		return (time.Duration(v) * time.Microsecond).Round(time.Millisecond).String()
	}
}

// share is a cgroup's part of its parent's value, in percent.
func share(file, key string) func(*Node, map[string]string) string {
	return func(n *Node, _ map[string]string) string {
		if n.Parent == nil {
			return unset
		}

		v, err1 := strconv.ParseFloat(n.Keyed(file)[key], 64)
		p, err2 := strconv.ParseFloat(n.Parent.Keyed(file)[key], 64)

		if err1 != nil || err2 != nil || p == 0 {
			return unset
		}

		return fmt.Sprintf("%.2f%%", v/p*100)
	}
}

func ratio(a, b string) func(*Node, map[string]string) string {
	return func(n *Node, _ map[string]string) string {
		x, err1 := strconv.ParseFloat(n.Value(a), 64)
		y, err2 := strconv.ParseFloat(n.Value(b), 64)

		if err1 != nil || err2 != nil || y == 0 {
			return unset
		}

		return fmt.Sprintf("%.2f%%", x/y*100)
	}
}

func pressure(file, kind, key string) func(*Node, map[string]string) string {
	return func(n *Node, _ map[string]string) string {
		if v := n.Pressure(file)[kind][key]; v != "" {
			return v
		}

		return unset
	}
}

func pressureTotal(file, kind string) func(*Node, map[string]string) string {
	return func(n *Node, _ map[string]string) string {
		v, err := strconv.ParseUint(n.Pressure(file)[kind]["total"], 10, 64)
		if err != nil {
			return unset
		}

		return (time.Duration(v) * time.Microsecond).Round(time.Millisecond).String()
	}
}

func ioStat(read, write string, asBytes bool) func(*Node, map[string]string) string {
	return func(n *Node, _ map[string]string) string {
		st := n.IOStat()

		devs := make([]string, 0, len(st))
		for d := range st {
			devs = append(devs, d)
		}

		sort.Strings(devs)

		var parts []string

		for _, d := range devs {
			r, w := st[d][read], st[d][write]

			if asBytes {
				rb, _ := strconv.ParseUint(r, 10, 64)
				wb, _ := strconv.ParseUint(w, 10, 64)
				r, w = humanize.IBytes(rb), humanize.IBytes(wb)
			}

			parts = append(parts, fmt.Sprintf("%s: %s/%s", d, r, w))
		}

		return strings.Join(parts, " ")
	}
}

func count(file string) func(*Node, map[string]string) string {
	return func(n *Node, _ map[string]string) string { return strconv.Itoa(len(n.Lines(file))) }
}

// processes names a cgroup's processes (the root's are left out: they
// are everything not in a child).
func processes(n *Node, procs map[string]string) string {
	if n.Parent == nil {
		return ""
	}

	var names []string

	for _, pid := range n.Lines("cgroup.procs") {
		name := procs[pid]
		if name == "" {
			name = pid
		}

		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}

	s := strings.Join(names, ",")
	if len(s) > 50 {
		s = s[:50]
	}

	return s
}
