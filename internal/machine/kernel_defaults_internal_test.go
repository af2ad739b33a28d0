package machine

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/internal/sysctl"
)

// The defaults go under the config's sysctls, and a key this kernel lacks
// is told, not fatal.
func TestApplyKernelDefaults(t *testing.T) {
	procSys := t.TempDir()

	for k := range KernelDefaults {
		if strings.HasPrefix(k, "net.bridge.") {
			continue // br_netfilter not loaded
		}

		p, err := sysctl.Path(k, procSys)
		if err != nil {
			t.Fatal(err)
		}

		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}

		if err := os.WriteFile(p, []byte("0\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	var log bytes.Buffer
	if err := applyKernelDefaults(map[string]string{"kernel.panic": "30"}, procSys, &log); err != nil {
		t.Fatal(err)
	}

	for k, want := range map[string]string{"vm.overcommit_memory": "1", "kernel.panic_on_oops": "1", "net.ipv4.ip_forward": "1", "kernel.panic": "30"} {
		if got, err := sysctl.Read(k, procSys); err != nil || got != want {
			t.Errorf("%s = %q (%v), want %q", k, got, err, want)
		}
	}

	if !strings.Contains(log.String(), "net.bridge.bridge-nf-call-iptables: no such key") {
		t.Errorf("the missing key is not reported:\n%s", log.String())
	}
}
