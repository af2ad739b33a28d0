//go:build e2e

package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/images"
)

// testHostPort runs a pod with a hostPort on the node named node and asks
// for it at the node's address from this machine, outside the cluster.
// The portmap CNI plugin behind hostPort runs iptables on the node
// itself and sets route_localnet on the pods' bridge: a node without
// iptables, or a Docker node with a read-only /proc/sys, never starts
// such a pod (the conformance suite's HostPort and SchedulerPredicates
// specs, and StatefulSet's "recreate evicted").
func testHostPort(t *testing.T, dc *dockerCluster, node, addr string) {
	t.Run("a hostPort serves the pod at its node's address", func(t *testing.T) {
		const port = 31080

		manifest := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"hostport"},"spec":{"nodeName":%q,
"tolerations":[{"operator":"Exists"}],"containers":[{"name":"c","image":%q,"ports":[{"containerPort":8080,"hostPort":%d}]}]}}`,
			node, images.EchoImage().String(), port)

		f := filepath.Join(dc.dir, "hostport.json")
		if err := os.WriteFile(f, []byte(manifest), 0o644); err != nil {
			t.Fatal(err)
		}

		// Pod security's baseline, the default namespace's, forbids
		// hostPort, as on Talos.
		dc.kube(t, "create", "namespace", "hostport")
		dc.kube(t, "label", "namespace", "hostport", "pod-security.kubernetes.io/enforce=privileged")
		dc.kube(t, "-n", "hostport", "apply", "-f", f)

		waitFor(t, 3*time.Minute, "the hostPort pod running", func() error {
			out, err := dc.kubectl("-n", "hostport", "get", "pod", "hostport", "-o", "jsonpath={.status.phase}")
			if err != nil || out != "Running" {
				// The sandbox's failure (portmap's) is in the events.
				ev, _ := dc.kubectl("-n", "hostport", "get", "events", "--field-selector", "involvedObject.name=hostport", "-o", "jsonpath={range .items[*]}{.reason}: {.message}{\"\\n\"}{end}")
				return fmt.Errorf("phase %q (%v); events:\n%s", out, err, ev)
			}

			return nil
		})

		client := &http.Client{Timeout: 5 * time.Second}
		url := fmt.Sprintf("http://%s:%d/", addr, port)

		waitFor(t, time.Minute, "an answer at "+url, func() error {
			resp, err := client.Get(url)
			if err != nil {
				return err
			}
			defer resp.Body.Close()

			body, err := io.ReadAll(resp.Body)
			if err != nil {
				return err
			}

			if got := strings.TrimSpace(string(body)); got != "hostport" {
				return fmt.Errorf("%s answered %q, want the pod's name", url, got)
			}

			return nil
		})

		dc.kube(t, "delete", "namespace", "hostport", "--wait=false")
	})
}
