package kubernetes_test

import (
	"testing"

	"github.com/talosbox/talosbox/internal/cluster/kubernetes"
)

func TestRolloutDone(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    kubernetes.Rollout
		want string // "" for done
	}{
		{"all updated and available", kubernetes.Rollout{DaemonSet: true, Generation: 3, ObservedGeneration: 3, Desired: 4, Updated: 4, Available: 4}, ""},
		{"3 of 4 updated", kubernetes.Rollout{DaemonSet: true, Generation: 3, ObservedGeneration: 3, Desired: 4, Updated: 3, Available: 4}, "3 of 4 updated, 4 available"},
		{"an unobserved generation", kubernetes.Rollout{Generation: 3, ObservedGeneration: 2, Desired: 4, Updated: 4, Available: 4}, "the controller has not seen the new spec yet"},
		{"1 of 2 available", kubernetes.Rollout{Desired: 2, Updated: 2, Available: 1}, "2 of 2 updated, 1 available"},
		{"scaled to zero", kubernetes.Rollout{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.r.Done()

			switch {
			case tc.want == "" && err != nil:
				t.Errorf("not done: %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}
