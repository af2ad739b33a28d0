//go:build e2e

package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// testSystemShimGroup checks that the pods talosbox deploys on a node (the
// static control plane, kube-proxy, flannel, CoreDNS) run under one runc
// shim there, not one each: containerd's shim grouping, which the CRI
// config and the pods' annotation turn on. The CRI's shims are the ones
// in its namespace, k8s.io; the kubelet's shim is in the system
// containerd's.
func testSystemShimGroup(t *testing.T, dc *dockerCluster, names map[string]string, nodes ...string) {
	for _, node := range nodes {
		pods := strings.Fields(dc.kube(t, "get", "pods", "-n", "kube-system", "-o", "name",
			"--field-selector", "status.phase=Running,spec.nodeName="+names[node]))
		if len(pods) < 2 {
			t.Fatalf("%s runs %d kube-system pods, want at least kube-proxy and flannel: %v", node, len(pods), pods)
		}

		// A shim being started (its start command) or exiting is a
		// moment's extra process: wait for the steady count.
		var shims []string

		waitFor(t, time.Minute, fmt.Sprintf("one CRI shim for %d pods on %s", len(pods), node), func() error {
			shims = shims[:0]

			for line := range strings.SplitSeq(dc.ok("-n", node, "processes"), "\n") {
				if strings.Contains(line, "-namespace k8s.io") && strings.Contains(line, " -id ") {
					shims = append(shims, line)
				}
			}

			if len(shims) != 1 {
				return fmt.Errorf("%d shims in the CRI's namespace:\n%s", len(shims), strings.Join(shims, "\n"))
			}

			return nil
		})

		t.Logf("%s: %d kube-system pods, one shim: %s", node, len(pods), shims[0])
	}
}
