package hardware_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/hardware"
	"github.com/talosbox/talosbox/internal/meta"
	hw "github.com/talosbox/talosbox/internal/resources/hardware"
	"github.com/talosbox/talosbox/internal/resources/runtime"
	"github.com/talosbox/talosbox/internal/smbios/smbiostest"
)

const owner = "hardware.SystemInfoController"

// logs records what the bus and the controller log, so a test can wait
// for a step that leaves no resource behind.
type logs struct {
	mu     sync.Mutex
	lines  []string
	notify chan struct{}
}

func newLogs() *logs { return &logs{notify: make(chan struct{}, 1)} }

func (l *logs) Enabled(context.Context, slog.Level) bool { return true }
func (l *logs) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logs) WithGroup(string) slog.Handler            { return l }

func (l *logs) Handle(_ context.Context, r slog.Record) error {
	line := r.Message
	r.Attrs(func(a slog.Attr) bool {
		line += " " + a.String()
		return true
	})

	l.mu.Lock()
	l.lines = append(l.lines, line)
	l.mu.Unlock()

	select {
	case l.notify <- struct{}{}:
	default:
	}

	return nil
}

// wait returns the first line holding s, failing the test after 10 s.
func (l *logs) wait(t *testing.T, s string) string {
	t.Helper()

	deadline := time.After(10 * time.Second)

	for {
		l.mu.Lock()
		for _, line := range l.lines {
			if strings.Contains(line, s) {
				l.mu.Unlock()
				return line
			}
		}
		l.mu.Unlock()

		select {
		case <-l.notify:
		case <-deadline:
			t.Fatalf("no log line with %q within 10s; logged: %q", s, l.lines)
		}
	}
}

// start runs the controller on a real bus until the test ends.
func start(t *testing.T, c *hardware.SystemInfoController) (*bus.Store, *bus.Runtime, *logs) {
	t.Helper()

	store := bus.NewStore(bus.StoreOptions{})
	l := newLogs()
	rt := bus.NewRuntime(store, bus.RuntimeOptions{Logger: slog.New(l), BackoffMin: time.Millisecond, BackoffMax: time.Millisecond})

	if err := rt.Register(c); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)

	go func() { done <- rt.Run(ctx) }()

	t.Cleanup(func() {
		cancel()

		if err := <-done; err != nil {
			t.Error(err)
		}
	})

	return store, rt, l
}

// specs is a kind's resources as ID -> spec, checking the controller owns
// them.
func specs[S any](t *testing.T, store *bus.Store, typ string) map[string]S {
	t.Helper()

	rs, err := bus.ListAs[*bus.Typed[S]](context.Background(), store, bus.Kind{Namespace: hw.Namespace, Type: typ})
	if err != nil {
		t.Fatal(err)
	}

	out := map[string]S{}

	for _, r := range rs {
		if r.Metadata().Owner != owner {
			t.Errorf("%s %s owned by %q", typ, r.Metadata().ID, r.Metadata().Owner)
		}

		out[r.Metadata().ID] = *r.TypedSpec()
	}

	return out
}

// waitSpecs waits until a kind holds exactly want, watching it.
func waitSpecs[S any](t *testing.T, store *bus.Store, typ string, want map[string]S) {
	t.Helper()

	w, err := store.WatchKind(context.Background(), bus.Kind{Namespace: hw.Namespace, Type: typ})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	deadline := time.After(10 * time.Second)

	for {
		got := specs[S](t, store, typ)
		if reflect.DeepEqual(got, want) {
			return
		}

		select {
		case <-w.Events():
		case <-deadline:
			t.Fatalf("%s: have\n%+v\nwant\n%+v", typ, got, want)
		}
	}
}

func cpu(handle uint16, socket string, status uint8, cores, threads uint8) *smbiostest.Struct {
	return smbiostest.New(4, handle, 0x30).Str(0x04, socket).Byte(0x05, 3).Str(0x07, "Intel(R) Corporation").
		Str(0x10, "Xeon/"+socket).Word(0x14, 3500).Word(0x16, 2100).Byte(0x18, status).Str(0x20, "S-"+socket).
		Str(0x21, "A-"+socket).Str(0x22, "P-"+socket).Byte(0x23, cores).Byte(0x24, cores).Byte(0x25, threads)
}

func dimm(handle uint16, locator, bank string, size uint16, extSize uint32) *smbiostest.Struct {
	return smbiostest.New(17, handle, 0x28).Word(0x0C, size).Str(0x10, locator).Str(0x11, bank).Word(0x15, 3200).
		Str(0x17, "Samsung").Str(0x18, fmt.Sprintf("SN%04x", handle)).Str(0x19, "AT").Str(0x1A, "M393A").DWord(0x1C, extSize)
}

var sysinfo = smbiostest.New(1, 0x0001, 0x1B).Str(0x04, "Acme").Str(0x05, "RoadRunner").Str(0x06, "Rev A").Str(0x07, "SN-1").
	Bytes(0x08, []byte{0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF}).
	Byte(0x18, 6).Str(0x19, "SKU-7").Str(0x1A, "Servers")

var wantSystem = hw.SystemInformationSpec{
	Manufacturer: "Acme", ProductName: "RoadRunner", Version: "Rev A", BIOSVersion: "1.2.3", SerialNumber: "SN-1",
	UUID: "33221100-5544-7766-8899-aabbccddeeff", WakeUpType: "Power Switch", SKUNumber: "SKU-7",
}

// TestSystemInfoController publishes a fake sysfs's table: every populated
// socket and slot under Talos's IDs, and the system's UUID following the
// META override.
func TestSystemInfoController(t *testing.T) {
	table := smbiostest.Table(
		smbiostest.New(0, 0x0000, 0x18).Str(0x04, "Acme BIOS").Str(0x05, "1.2.3"),
		sysinfo,
		cpu(0x0400, "CPU 0", 0x41, 32, 64),
		cpu(0x0401, "CPU 1", 0x00, 0, 0), // an empty socket
		cpu(0x0402, "", 0x41, 4, 8),      // a socket without a name
		// "DIMM 0" twice, on two channels: the bank tells them apart.
		dimm(0x1100, "DIMM 0", "P0 CHANNEL A", 0x4000, 0),
		dimm(0x1101, "DIMM 0", "P0 CHANNEL B", 0x7FFF, 0x10000),
		dimm(0x1102, "DIMM 1", "P0 CHANNEL A", 0, 0), // an empty slot
		dimm(0x1103, "SLOT 3", "", 0x8000|2048, 0),
	)

	sys := smbiostest.Sysfs(t, smbiostest.EntryPoint3(3, 3, 0, uint32(len(table)), 0x7A3E9000), table)
	store, _, _ := start(t, &hardware.SystemInfoController{SysRoot: sys, ProcRoot: t.TempDir()})

	waitSpecs(t, store, hw.SystemInformationType, map[string]hw.SystemInformationSpec{"systeminformation": wantSystem})

	cpuSpec := func(socket string, cores, threads uint32) hw.ProcessorSpec {
		return hw.ProcessorSpec{Socket: socket, Manufacturer: "Intel(R) Corporation", ProductName: "Xeon/" + socket, MaxSpeed: 3500, BootSpeed: 2100,
			Status: 0x41, SerialNumber: "S-" + socket, AssetTag: "A-" + socket, PartNumber: "P-" + socket, CoreCount: cores, CoreEnabled: cores, ThreadCount: threads}
	}

	waitSpecs(t, store, hw.ProcessorType, map[string]hw.ProcessorSpec{
		"CPU-0":         cpuSpec("CPU 0", 32, 64),
		"handle-0x0402": cpuSpec("", 4, 8),
	})

	mem := func(handle uint16, locator, bank string, mib uint32) hw.MemoryModuleSpec {
		return hw.MemoryModuleSpec{Size: mib, DeviceLocator: locator, BankLocator: bank, Speed: 3200, Manufacturer: "Samsung",
			SerialNumber: fmt.Sprintf("SN%04x", handle), AssetTag: "AT", ProductName: "M393A"}
	}

	waitSpecs(t, store, hw.MemoryModuleType, map[string]hw.MemoryModuleSpec{
		"DIMM-0-P0-CHANNEL-A": mem(0x1100, "DIMM 0", "P0 CHANNEL A", 16384),
		"DIMM-0-P0-CHANNEL-B": mem(0x1101, "DIMM 0", "P0 CHANNEL B", 65536),
		"SLOT-3":              mem(0x1103, "SLOT 3", "", 2),
	})

	// META's UUIDOverride replaces the UUID while it is set.
	override := bus.NewTyped(runtime.NamespaceRuntime, runtime.MetaKeyType, meta.TagID(meta.UUIDOverride), runtime.MetaKeySpec{Value: "00000000-0000-0000-0000-000000000001"})
	if err := store.Create(context.Background(), override, bus.WithOwner("storage")); err != nil {
		t.Fatal(err)
	}

	overridden := wantSystem
	overridden.UUID = "00000000-0000-0000-0000-000000000001"
	waitSpecs(t, store, hw.SystemInformationType, map[string]hw.SystemInformationSpec{"systeminformation": overridden})

	if err := store.Destroy(context.Background(), override.Metadata().Pointer(), bus.WithOwner("storage")); err != nil {
		t.Fatal(err)
	}

	waitSpecs(t, store, hw.SystemInformationType, map[string]hw.SystemInformationSpec{"systeminformation": wantSystem})
}

// TestSystemInfoControllerNoMemoryDevices: a table without memory devices
// (some virtual machines) gets Talos's UNKNOWN module of the kernel's
// memory total.
func TestSystemInfoControllerNoMemoryDevices(t *testing.T) {
	table := smbiostest.Table(sysinfo, cpu(0x0400, "CPU0", 0x41, 2, 2))
	sys := smbiostest.Sysfs(t, smbiostest.EntryPoint2(2, 8, uint16(len(table)), 3, 0xF0000), table)

	proc := t.TempDir()
	if err := os.WriteFile(filepath.Join(proc, "meminfo"), []byte("MemTotal:        8142680 kB\nMemFree:         1000 kB\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	store, _, _ := start(t, &hardware.SystemInfoController{SysRoot: sys, ProcRoot: proc})

	waitSpecs(t, store, hw.MemoryModuleType, map[string]hw.MemoryModuleSpec{"UNKNOWN": {Size: 7951, Manufacturer: "UNKNOWN"}})

	want := wantSystem
	want.BIOSVersion = ""
	waitSpecs(t, store, hw.SystemInformationType, map[string]hw.SystemInformationSpec{"systeminformation": want})
}

// TestSystemInfoControllerWithoutSMBIOS: a machine without a table (a
// container) gets no hardware resources, and the controller neither fails
// nor finishes: it idles until the node stops.
func TestSystemInfoControllerWithoutSMBIOS(t *testing.T) {
	store, rt, l := start(t, &hardware.SystemInfoController{SysRoot: t.TempDir()})

	l.wait(t, "no SMBIOS table")

	for _, typ := range []string{hw.SystemInformationType, hw.ProcessorType, hw.MemoryModuleType} {
		if got := specs[any](t, store, typ); len(got) != 0 {
			t.Errorf("%s published: %v", typ, got)
		}
	}

	if st := rt.Status()[0]; !st.Running || st.Restarts != 0 || st.LastError != "" {
		t.Errorf("status %+v, want running without errors", st)
	}
}

// TestSystemInfoControllerBrokenTable: a table that does not parse is an
// error, named in the controller's status, not an empty machine.
func TestSystemInfoControllerBrokenTable(t *testing.T) {
	table := smbiostest.Table(sysinfo)
	sys := smbiostest.Sysfs(t, smbiostest.EntryPoint3(3, 3, 0, uint32(len(table)), 0), table[:0x10])

	store, _, l := start(t, &hardware.SystemInfoController{SysRoot: sys})

	if line := l.wait(t, "controller failed"); !strings.Contains(line, "formatted area of 27 bytes") {
		t.Errorf("failure %q does not say what is wrong", line)
	}

	if got := specs[hw.SystemInformationSpec](t, store, hw.SystemInformationType); len(got) != 0 {
		t.Errorf("published %v", got)
	}
}
