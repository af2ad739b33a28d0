package initramfs_test

import (
	"bytes"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/boot/qemu"
	"github.com/talosbox/talosbox/initramfs"
)

// The module resolver runs against the real kernel tree the guest tests
// boot (scripts/fetch-kernel.sh): a .deb has no modules.dep, so this is
// the file the guest's kmod reads.
func TestModulesFromDebianTree(t *testing.T) {
	k, err := qemu.DefaultKernel()
	if err != nil {
		t.Fatal(err)
	}

	m, err := initramfs.OpenModules(k.ModulesDir)
	if err != nil {
		t.Fatal(err)
	}

	if m.Release != k.Release {
		t.Errorf("release %q, want %q", m.Release, k.Release)
	}

	rels, err := m.Resolve("wireguard", "virtio-net", "8021q", "af_packet")
	if err != nil {
		t.Fatal(err)
	}

	names := make([]string, len(rels))
	for i, r := range rels {
		names[i] = strings.ReplaceAll(strings.TrimSuffix(path.Base(r), ".ko"), "-", "_")
	}

	idx := func(n string) int { return slices.Index(names, n) }

	// Every module after its dependencies; wireguard needs eight.
	for _, dep := range [][2]string{
		{"libchacha20poly1305", "wireguard"}, {"udp_tunnel", "wireguard"}, {"ip6_udp_tunnel", "wireguard"},
		{"libcurve25519_generic", "curve25519_x86_64"}, {"virtio", "virtio_net"}, {"virtio_ring", "virtio"},
		{"garp", "8021q"}, {"stp", "garp"}, {"llc", "stp"},
	} {
		if idx(dep[0]) < 0 || idx(dep[1]) < 0 || idx(dep[0]) > idx(dep[1]) {
			t.Errorf("%s must come before %s: %v", dep[0], dep[1], names)
		}
	}

	if !m.Builtin("af_packet") || idx("af_packet") >= 0 {
		t.Errorf("af_packet is built in and must not be in %v", names)
	}

	if _, err := m.Resolve("no_such_module"); err == nil {
		t.Error("an unknown module resolved")
	}

	dep, err := m.DepFile(rels)
	if err != nil {
		t.Fatal(err)
	}

	for _, line := range strings.Split(strings.TrimSpace(string(dep)), "\n") {
		mod, deps, ok := strings.Cut(line, ":")
		if !ok || strings.HasPrefix(deps, " ") || !slices.Contains(rels, mod) {
			t.Errorf("bad modules.dep line %q", line)
		}

		if strings.HasSuffix(mod, "/wireguard.ko") && len(strings.Fields(deps)) != 8 {
			t.Errorf("wireguard depends on %d modules, want 8: %q", len(strings.Fields(deps)), line)
		}
	}

	a := initramfs.New()
	if _, err := a.Modules(m, "bonding"); err != nil {
		t.Fatal(err)
	}

	if _, err := a.Modules(m, "8021q"); err != nil {
		t.Fatal(err)
	}

	base := "lib/modules/" + k.Release + "/"
	for _, p := range []string{"modules.dep", "modules.builtin", "kernel/drivers/net/bonding/bonding.ko", "kernel/net/8021q/8021q.ko"} {
		if !a.Has(base + p) {
			t.Errorf("archive lacks %s", base+p)
		}
	}

	var buf bytes.Buffer
	if _, err := a.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}

	// The second call's modules.dep still lists the first call's modules.
	for _, want := range []string{"kernel/drivers/net/bonding/bonding.ko:", "kernel/net/8021q/8021q.ko:"} {
		if !bytes.Contains(buf.Bytes(), []byte("\n"+want)) && !bytes.Contains(buf.Bytes(), []byte("\x00"+want)) {
			t.Errorf("modules.dep lacks %q", want)
		}
	}
}
