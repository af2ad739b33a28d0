package server

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/disk"
)

// procRoot is where /proc is read from.
const procRoot = "/proc"

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100

func readProc(name string) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(procRoot, name))
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "%v", err)
	}

	return data, nil
}

// Mounts lists the mount table with each filesystem's size and free space.
func (m *machineServer) Mounts(ctx context.Context, _ *emptypb.Empty) (*machine.MountsResponse, error) {
	data, err := readProc("self/mountinfo")
	if err != nil {
		return nil, err
	}

	mounts, err := disk.ReadMountInfo(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}

	stats := make([]*machine.MountStat, 0, len(mounts))

	for _, mt := range mounts {
		if ctx.Err() != nil {
			return nil, status.FromContextError(ctx.Err()).Err()
		}

		ms := &machine.MountStat{Filesystem: mt.Source, MountedOn: mt.MountPoint}

		var st unix.Statfs_t
		if unix.Statfs(ms.MountedOn, &st) == nil {
			ms.Size = st.Blocks * uint64(st.Bsize)
			ms.Available = st.Bavail * uint64(st.Bsize)
		}

		stats = append(stats, ms)
	}

	return &machine.MountsResponse{Messages: []*machine.Mounts{{Stats: stats}}}, nil
}

// Memory is /proc/meminfo, in kB as the kernel reports it.
func (m *machineServer) Memory(context.Context, *emptypb.Empty) (*machine.MemoryResponse, error) {
	data, err := readProc("meminfo")
	if err != nil {
		return nil, err
	}

	v := map[string]uint64{}

	for line := range strings.SplitSeq(string(data), "\n") {
		k, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}

		if f := strings.Fields(rest); len(f) > 0 {
			v[k], _ = strconv.ParseUint(f[0], 10, 64)
		}
	}

	return &machine.MemoryResponse{Messages: []*machine.Memory{{Meminfo: &machine.MemInfo{
		Memtotal: v["MemTotal"], Memfree: v["MemFree"], Memavailable: v["MemAvailable"],
		Buffers: v["Buffers"], Cached: v["Cached"], Swapcached: v["SwapCached"],
		Active: v["Active"], Inactive: v["Inactive"], Swaptotal: v["SwapTotal"],
		Swapfree: v["SwapFree"], Shmem: v["Shmem"],
	}}}}, nil
}

// Processes lists every process from /proc/<pid>/{stat,cmdline,exe}.
// Processes that exit while being read are left out.
func (m *machineServer) Processes(ctx context.Context, _ *emptypb.Empty) (*machine.ProcessesResponse, error) {
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "%v", err)
	}

	page := uint64(os.Getpagesize())

	var procs []*machine.ProcessInfo

	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}

		if ctx.Err() != nil {
			return nil, status.FromContextError(ctx.Err()).Err()
		}

		if p, ok := readProcess(pid, page); ok {
			procs = append(procs, p)
		}
	}

	return &machine.ProcessesResponse{Messages: []*machine.Process{{Processes: procs}}}, nil
}

func readProcess(pid int, page uint64) (*machine.ProcessInfo, bool) {
	dir := filepath.Join(procRoot, strconv.Itoa(pid))

	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return nil, false
	}

	// The command is in parentheses and may itself contain ") ".
	open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if open < 0 || end < open {
		return nil, false
	}

	f := strings.Fields(string(stat[end+1:])) // f[0] is field 3 (state)
	if len(f) < 22 {
		return nil, false
	}

	num := func(i int) uint64 { v, _ := strconv.ParseUint(f[i], 10, 64); return v }

	p := &machine.ProcessInfo{
		Pid:            int32(pid),
		Ppid:           int32(num(1)),
		State:          f[0],
		Command:        string(stat[open+1 : end]),
		CpuTime:        float64(num(11)+num(12)) / clockTicks,
		Threads:        int32(num(17)),
		VirtualMemory:  num(20),
		ResidentMemory: num(21) * page,
	}

	if cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline")); err == nil {
		p.Args = strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))
	}

	if exe, err := os.Readlink(filepath.Join(dir, "exe")); err == nil {
		p.Executable = exe
	}

	return p, true
}

// LoadAvg is /proc/loadavg.
func (m *machineServer) LoadAvg(context.Context, *emptypb.Empty) (*machine.LoadAvgResponse, error) {
	data, err := readProc("loadavg")
	if err != nil {
		return nil, err
	}

	f := strings.Fields(string(data))
	if len(f) < 3 {
		return nil, status.Errorf(codes.Internal, "loadavg: unexpected %q", data)
	}

	var l [3]float64
	for i := range l {
		if l[i], err = strconv.ParseFloat(f[i], 64); err != nil {
			return nil, status.Errorf(codes.Internal, "loadavg: %v", err)
		}
	}

	return &machine.LoadAvgResponse{Messages: []*machine.LoadAvg{{Load1: l[0], Load5: l[1], Load15: l[2]}}}, nil
}

// SystemStat is /proc/stat; CPU times are in seconds.
func (m *machineServer) SystemStat(context.Context, *emptypb.Empty) (*machine.SystemStatResponse, error) {
	data, err := readProc("stat")
	if err != nil {
		return nil, err
	}

	out := &machine.SystemStat{}

	for line := range strings.SplitSeq(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}

		num := func(i int) uint64 { v, _ := strconv.ParseUint(f[i], 10, 64); return v }

		switch {
		case f[0] == "cpu":
			out.CpuTotal = cpuStat(f[1:])
		case strings.HasPrefix(f[0], "cpu"):
			out.Cpu = append(out.Cpu, cpuStat(f[1:]))
		case f[0] == "btime":
			out.BootTime = num(1)
		case f[0] == "ctxt":
			out.ContextSwitches = num(1)
		case f[0] == "processes":
			out.ProcessCreated = num(1)
		case f[0] == "procs_running":
			out.ProcessRunning = num(1)
		case f[0] == "procs_blocked":
			out.ProcessBlocked = num(1)
		}
	}

	return &machine.SystemStatResponse{Messages: []*machine.SystemStat{out}}, nil
}

func cpuStat(f []string) *machine.CPUStat {
	v := make([]float64, 8)

	for i := range min(len(f), len(v)) {
		n, _ := strconv.ParseUint(f[i], 10, 64)
		v[i] = float64(n) / clockTicks
	}

	return &machine.CPUStat{User: v[0], Nice: v[1], System: v[2], Idle: v[3], Iowait: v[4], Irq: v[5], SoftIrq: v[6], Steal: v[7]}
}
