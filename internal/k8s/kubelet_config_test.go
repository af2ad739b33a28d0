package k8s

import (
	"context"
	"slices"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/images"
	"github.com/talosbox/talosbox/internal/resources/k8s"
)

// get kubeletconfigs shows Talos's KubeletConfig "kubelet": the config's
// kubelet section with the cluster's defaults.
func TestKubeletConfigController(t *testing.T) {
	cp, worker := generated(t)

	for _, tc := range []struct {
		name string
		cfg  func()
		want k8s.KubeletConfigSpec
	}{
		{"control plane", func() {}, k8s.KubeletConfigSpec{Image: images.Kubelet("1.34.12").String(), ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local"}},
		{"worker, with its own DNS and args", func() {
			worker.Machine.Kubelet.ClusterDNS = []string{"10.0.0.53"}
			worker.Machine.Kubelet.ExtraArgs = configs.ArgsOf(map[string]string{"v": "2"})
			worker.Cluster.Network.DNSDomain = "example.internal"
			cp = worker
		}, k8s.KubeletConfigSpec{Image: images.Kubelet("1.34.12").String(), ClusterDNS: []string{"10.0.0.53"}, ClusterDomain: "example.internal",
			ExtraArgs: configs.ArgsOf(map[string]string{"v": "2"})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg()

			g := startGraphOf(t, t.TempDir(), KubeletConfigController{})
			g.setConfig(cp)

			var got k8s.KubeletConfigSpec

			g.wait("kubelet config", func() bool {
				kc, err := bus.GetAs[*k8s.KubeletConfig](context.Background(), g.store, bus.Pointer{Namespace: k8s.NamespaceK8s, Type: k8s.KubeletConfigType, ID: k8s.KubeletID})
				if err != nil {
					return false
				}

				got = *kc.TypedSpec()

				return true
			})

			if got.Image != tc.want.Image || !slices.Equal(got.ClusterDNS, tc.want.ClusterDNS) || got.ClusterDomain != tc.want.ClusterDomain ||
				len(got.ExtraArgs) != len(tc.want.ExtraArgs) || got.ExtraArgs["v"].String() != tc.want.ExtraArgs["v"].String() {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
