//go:build e2e

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestE2EMaintenance: a node started without a config waits in
// maintenance mode; an invalid config is refused with the reasons and the
// node keeps waiting; the cluster's control-plane config boots it.
func TestE2EMaintenance(t *testing.T) {
	c := newClusterOf(t, false)
	nd := c.nodes[0]

	nd.con.wait(t, "[talos] entering maintenance mode: waiting for a config", 10*time.Second)

	bad := filepath.Join(c.dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: v1alpha1\nmachine:\n    type: bogus\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	errOut := c.fails("apply-config", "--insecure", "-n", nd.addr, "-e", nd.addr, "-f", bad)
	for _, want := range []string{"error on node " + nd.addr + ": apply config: ", `machine.type: unknown machine type "bogus"`, "cluster: cluster instructions are required"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("invalid config: stderr lacks %q:\n%s", want, errOut)
		}
	}

	// A file that is not YAML at all is refused too, saying so.
	notYAML := filepath.Join(c.dir, "not.yaml")
	if err := os.WriteFile(notYAML, []byte("machine: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	if errOut := c.fails("apply-config", "--insecure", "-n", nd.addr, "-f", notYAML); !strings.HasPrefix(errOut, "error on node "+nd.addr+": apply config: ") {
		t.Errorf("not YAML: %q", errOut)
	}

	if nd.con.index("[talos] services: ") >= 0 {
		t.Fatalf("an invalid config booted the node:\n%s", nd.con)
	}

	// Still waiting, and only the maintenance API is served: no config
	// to read, no secrets.
	if errOut := c.fails("get", "mc", "-i", "-n", nd.addr); !strings.Contains(errOut, "maintenance mode: only apply-config, version and reading") {
		t.Errorf("get mc in maintenance: %q", errOut)
	}

	maintenanceRoundTrip(t, c, nd, filepath.Join(c.dir, "controlplane.yaml"))

	// The config given over the API was persisted: the node is a member
	// of the cluster the talosconfig trusts.
	if out := c.ok("-n", nd.addr, "version"); !strings.Contains(out, "\tEnabled:     RBAC\n") {
		t.Errorf("version after boot:\n%s", out)
	}

	if data, err := os.ReadFile(filepath.Join(c.dir, nd.name, "state", "config.yaml")); err != nil || !strings.Contains(string(data), "type: controlplane") {
		t.Errorf("persisted config: %v", err)
	}
}
