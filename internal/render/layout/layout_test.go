package layout_test

import (
	"testing"

	"github.com/talosbox/talosbox/internal/cri"
	"github.com/talosbox/talosbox/internal/platform"
	"github.com/talosbox/talosbox/internal/render/layout"
)

// TestRuntimeLayoutIsTheNodes: the paths here are the ones a node that
// owns its root uses, metal or Docker.
func TestRuntimeLayoutIsTheNodes(t *testing.T) {
	for _, name := range []string{platform.Metal, platform.Container} {
		p, err := platform.Detect(platform.Options{Flag: name, PID: 1, Getenv: func(k string) string {
			if k == platform.EnvOwnRoot {
				return "1"
			}

			return ""
		}})
		if err != nil {
			t.Fatal(err)
		}

		rt := cri.NewRuntime(p)

		for _, c := range []struct{ name, got, want string }{
			{"SystemSocket", layout.SystemSocket, rt.SystemSocket},
			{"SystemRoot", layout.SystemRoot, rt.SystemRoot},
			{"SystemState", layout.SystemState, rt.SystemState},
			{"SystemConfig", layout.SystemConfig, rt.SystemConfig},
			{"CRISocket", layout.CRISocket, rt.CRISocket},
			{"CRIRoot", layout.CRIRoot, rt.CRIRoot},
			{"CRIState", layout.CRIState, rt.CRIState},
			{"CRIConfig", layout.CRIConfig, rt.CRIConfig},
			{"CRIConfDir", layout.CRIConfDir, rt.CRIConfDir},
			{"HostsDir", layout.HostsDir, rt.HostsDir},
			{"CNIConfDir", layout.CNIConfDir, rt.CNIConfDir},
			{"EphemeralDir", layout.EphemeralDir(name == platform.Container), p.EphemeralDir},
		} {
			if c.got != c.want {
				t.Errorf("%s: %s is %q here, %q on the node", name, c.name, c.got, c.want)
			}
		}

		if dirs := rt.CNIBinDirs(); len(dirs) != 1 || dirs[0] != layout.CNIBinDir {
			t.Errorf("%s: CNI bin dirs %q, want %s alone", name, dirs, layout.CNIBinDir)
		}

		if rt.NoPivotRoot != (name == platform.Metal) {
			t.Errorf("%s: NoPivotRoot %v", name, rt.NoPivotRoot)
		}
	}
}
