package configs

import (
	"testing"

	"github.com/talosbox/talosbox/configs/kubeflags"
)

// TestRemovedKubeFlagsAreGone: no flag of the removed table is one that a
// version configs/kubeflags has data for accepts (a wrong minor in the
// table would call a working flag removed), and the note names the minor.
func TestRemovedKubeFlagsAreGone(t *testing.T) {
	t.Parallel()

	for _, version := range []string{"1.33.13", "1.34.12"} {
		ver, err := ParseKubeVersion(version)
		if err != nil {
			t.Fatal(err)
		}

		for component, flags := range removedKubeFlags {
			set, match := kubeflags.For(component, version)
			if match == kubeflags.None {
				t.Fatalf("no flag data for %s %s", component, version)
			}

			for flag, r := range flags {
				if _, ok := set.Lookup(flag); ok {
					t.Errorf("%s %s accepts --%s, which the table says 1.%d removed", component, version, flag, r.minor)
				}

				if note := removedFlagNote(component, ver, flag); note == "" {
					t.Errorf("%s %s: no note for --%s", component, version, flag)
				}
			}
		}
	}

	// Before its removal a flag is not called removed.
	if note := removedFlagNote(kubeflags.Kubelet, KubeVersion{Major: 1, Minor: 30}, "keep-terminated-pod-volumes"); note != "" {
		t.Errorf("kubelet 1.30 still had --keep-terminated-pod-volumes, got %q", note)
	}
}
