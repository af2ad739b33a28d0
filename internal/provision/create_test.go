package provision

import (
	"slices"
	"testing"
)

// A node that must write its network sysctls (portmap's route_localnet)
// gets /proc/sys writable and nothing else: the Engine's other read-only
// paths stay, and its masked paths are left to its defaults.
func TestWritableProcSys(t *testing.T) {
	for _, tt := range []struct {
		name string
		pv   Privileges
		want []string
	}{
		{"default", Privileges{}, nil},
		{"writable /proc/sys", Privileges{WritableProcSys: true}, []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sysrq-trigger"}},
		{"privileged has it anyway", Privileges{WritableProcSys: true, Privileged: true}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := validRequest()
			n := req.Nodes[0]
			n.Privileges, n.Ports = tt.pv, nil

			opts, err := containerOptions(req, &n, nil)
			if err != nil {
				t.Fatal(err)
			}

			hc := opts.HostConfig
			if !slices.Equal(hc.ReadonlyPaths, tt.want) || (tt.want == nil) != (hc.ReadonlyPaths == nil) {
				t.Errorf("ReadonlyPaths %q, want %q", hc.ReadonlyPaths, tt.want)
			}

			if hc.MaskedPaths != nil {
				t.Errorf("MaskedPaths %q, want the Engine's defaults", hc.MaskedPaths)
			}
		})
	}
}
