package vm

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/boot/qemu"
)

func validRequest(t *testing.T) Request {
	t.Helper()

	k := filepath.Join(t.TempDir(), "vmlinuz")
	if err := os.WriteFile(k, []byte("not a kernel"), 0o644); err != nil {
		t.Fatal(err)
	}

	return Request{
		Name: "lab", CIDR: netip.MustParsePrefix("10.77.0.0/24"), Kernel: k, Initrd: k,
		Nodes: []NodeRequest{
			{Name: "lab-controlplane-1", Type: "controlplane", IP: netip.MustParseAddr("10.77.0.2"), CPUs: 1, MemoryMiB: 512, DiskMiB: 6144},
			{Name: "lab-worker-1", Type: "worker", IP: netip.MustParseAddr("10.77.0.3"), CPUs: 1, MemoryMiB: 512, DiskMiB: 6144},
		},
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(r *Request)
		want   string
	}{
		{"ok", func(*Request) {}, ""},
		{"bad name", func(r *Request) { r.Name = "Lab!" }, "cluster name"},
		{"not a network address", func(r *Request) { r.CIDR = netip.MustParsePrefix("10.77.0.1/24") }, "network address"},
		{"ipv6", func(r *Request) { r.CIDR = netip.MustParsePrefix("fd00::/64") }, "IPv4"},
		{"too small", func(r *Request) { r.CIDR = netip.MustParsePrefix("10.77.0.0/30") }, "at most /29"},
		{"no kernel", func(r *Request) { r.Kernel = "/nonexistent/vmlinuz" }, "kernel"},
		{"no initramfs", func(r *Request) { r.Initrd = "" }, "no initramfs"},
		{"builder instead", func(r *Request) { r.Initrd, r.BuildInitrd = "", func(string) error { return nil } }, ""},
		{"no nodes", func(r *Request) { r.Nodes = nil }, "no nodes"},
		{"gateway taken", func(r *Request) { r.Nodes[0].IP = netip.MustParseAddr("10.77.0.1") }, "other than the gateway"},
		{"outside", func(r *Request) { r.Nodes[0].IP = netip.MustParseAddr("10.78.0.2") }, "not a host address"},
		{"same address", func(r *Request) { r.Nodes[1].IP = r.Nodes[0].IP }, "used twice"},
		{"same name", func(r *Request) { r.Nodes[1].Name = r.Nodes[0].Name }, "used twice"},
		{"small disk", func(r *Request) { r.Nodes[1].DiskMiB = 2048 }, "too small"},
		{"no memory", func(r *Request) { r.Nodes[1].MemoryMiB = 64 }, "at least 1 CPU and 256 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := validRequest(t)
			tc.change(&r)

			err := r.validate()
			if tc.want == "" && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}

			if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("error %v, want one with %q", err, tc.want)
			}
		})
	}
}

func TestNames(t *testing.T) {
	if g := Gateway(netip.MustParsePrefix("10.5.0.0/24")); g.String() != "10.5.0.1" {
		t.Errorf("gateway %s", g)
	}

	a, b := TapName("talos-default"), TapName("talos-default-with-a-very-long-name-indeed")
	if len(a) > 15 || len(b) > 15 || a == b || a != TapName("talos-default") {
		t.Errorf("tap names %q %q: want stable, distinct, at most 15 bytes", a, b)
	}

	if m := MAC(netip.MustParseAddr("10.5.0.2")); m != "52:54:00:05:00:02" {
		t.Errorf("MAC %s", m)
	}
}

// TestCreateRefusesBeforeMaking: a bad request or an existing cluster
// leaves the state directory as it was.
func TestCreateRefusesBeforeMaking(t *testing.T) {
	o := Options{StateDir: t.TempDir()}

	r := validRequest(t)
	r.Nodes[0].DiskMiB = 1

	if _, err := Create(context.Background(), o, r, func(string) {}); err == nil {
		t.Fatal("a 1 MiB disk was accepted")
	}

	if ents, _ := os.ReadDir(o.StateDir); len(ents) != 0 {
		t.Fatalf("a refused request left %d entries", len(ents))
	}

	if err := os.MkdirAll(filepath.Join(o.StateDir, "lab"), 0o755); err != nil {
		t.Fatal(err)
	}

	r = validRequest(t)
	if _, err := Create(context.Background(), o, r, func(string) {}); !errors.Is(err, ErrExists) {
		t.Fatalf("an existing cluster directory: %v", err)
	}
}

// TestDestroyCopesWithPartialState: what a create that died midway
// leaves (a state with nodes that never started or are gone, or no
// state.json at all) is still removed.
func TestDestroyCopesWithPartialState(t *testing.T) {
	o := Options{StateDir: t.TempDir()}

	st := &State{Provisioner: Provisioner, Name: "half", dir: filepath.Join(o.StateDir, "half"),
		Nodes: []Node{{Name: "half-controlplane-1"}, {Name: "half-worker-1", PID: 1 << 22}}}

	if err := os.MkdirAll(st.dir, 0o755); err != nil {
		t.Fatal(err)
	}

	if err := st.save(); err != nil {
		t.Fatal(err)
	}

	loaded, err := Load(o, "half")
	if err != nil || len(loaded.Nodes) != 2 || loaded.Running(&loaded.Nodes[1]) {
		t.Fatalf("load: %+v, %v", loaded, err)
	}

	if err := Destroy(o, "half", func(string) {}); err != nil {
		t.Fatal(err)
	}

	if _, err := os.Stat(st.dir); !os.IsNotExist(err) {
		t.Fatalf("state dir after destroy: %v", err)
	}

	if err := os.MkdirAll(filepath.Join(o.StateDir, "bare"), 0o755); err != nil {
		t.Fatal(err)
	}

	if err := Destroy(o, "bare", func(string) {}); err != nil {
		t.Fatalf("a directory without state.json: %v", err)
	}

	if err := Destroy(o, "never", func(string) {}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an unknown cluster: %v", err)
	}
}

func TestLoadRefusesGarbage(t *testing.T) {
	o := Options{StateDir: t.TempDir()}
	dir := filepath.Join(o.StateDir, "bad")

	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}

	for _, body := range []string{"{not json", `{"provisioner": "docker", "name": "bad"}`} {
		if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}

		if _, err := Load(o, "bad"); err == nil {
			t.Errorf("state %q loaded", body)
		}
	}
}

// TestAddressTap: the host's port on a real segment gets its address and
// comes up.
func TestAddressTap(t *testing.T) {
	dir := t.TempDir()
	tap := TapName(t.Name())

	if _, err := qemu.StartSwitch(qemu.SwitchOptions{Dir: dir, Tap: tap}); err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { _ = qemu.StopSwitch(dir) })

	if err := addressTap(tap, netip.MustParsePrefix("10.231.9.1/24")); err != nil {
		t.Fatal(err)
	}

	ifc, err := net.InterfaceByName(tap)
	if err != nil {
		t.Fatal(err)
	}

	addrs, _ := ifc.Addrs()
	if ifc.Flags&net.FlagUp == 0 || len(addrs) == 0 || addrs[0].String() != "10.231.9.1/24" {
		t.Fatalf("tap %s: flags %v, addresses %v", tap, ifc.Flags, addrs)
	}

	if err := addressTap("tbxnonexistent", netip.MustParsePrefix("10.231.10.1/24")); err == nil {
		t.Fatal("a missing tap was addressed")
	}
}
