package client_test

import (
	"testing"

	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/client"
)

func TestServiceHealthy(t *testing.T) {
	svc := func(state string, healthy bool, msg string) *machine.ServiceList {
		return &machine.ServiceList{Services: []*machine.ServiceInfo{
			{Id: "etcd", State: "Running", Health: &machine.ServiceHealth{Healthy: true}},
			{Id: "kubelet", State: state, Health: &machine.ServiceHealth{Healthy: healthy, LastMessage: msg}},
		}}
	}

	for _, tc := range []struct {
		name string
		list *machine.ServiceList
		want string // "" for healthy
	}{
		{"running and healthy", svc("Running", true, ""), ""},
		{"running, failing its check", svc("Running", false, "connection refused"), "kubelet is Running: connection refused"},
		{"waiting", svc("Waiting", false, "waiting for the CRI"), "kubelet is Waiting: waiting for the CRI"},
		{"absent", &machine.ServiceList{}, "no kubelet service"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := client.ServiceHealthy(tc.list, "kubelet")

			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unhealthy: %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}
