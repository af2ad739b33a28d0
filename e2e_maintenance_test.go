//go:build e2e

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
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

	// Still waiting, and only the maintenance API is served: what the
	// config is written from, no config to read, no secrets.
	maintenanceReads(t, c, nd)

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

// maintenanceReads reads what Talos's install guide reads from a node in
// maintenance mode (talosctl get disks/links/addresses/routes --insecure)
// in Talos's columns, and is refused the config, its load errors and the
// secrets, each refusal saying what is served. The network statuses come
// once networkd has seen the links: they are waited for.
func maintenanceReads(t *testing.T, c *cluster, nd *node) {
	t.Helper()

	for _, r := range []struct {
		typ  string
		want string
	}{
		// The host's disks, as the node sees them through sysfs.
		{"disks", `(?m)^NODE\s+NAMESPACE\s+TYPE\s+ID\s+VERSION\s+SIZE\s+READ ONLY\s+TRANSPORT\s+ROTATIONAL\s+WWID\s+MODEL\s+SERIAL\n` +
			regexp.QuoteMeta(nd.addr) + `\s+runtime\s+Disk\s+\S+\s+\d+\s+\d`},
		{"links", `(?m)^NODE\s+NAMESPACE\s+TYPE\s+ID\s+VERSION\s+TYPE\s+KIND\s+HW ADDR\s+OPER STATE\s+LINK STATE\n(.*\n)*.*\s+LinkStatus\s+eth0\s+\d+\s+ether\s+veth\s+\S+\s+up\s+true`},
		{"addresses", `\sAddressStatus\s+eth0/` + regexp.QuoteMeta(nd.addr) + `/24\s`},
		{"routes", `\sRouteStatus\s+\S+\s+\d+\s+10\.5\.0\.1\s+eth0\s`},
		{"hostname", `\sHostnameStatus\s+hostname\s+\d+\s+talos-`},
	} {
		re := regexp.MustCompile(r.want)

		eventually(t, 30*time.Second, func() error {
			out, errOut, code := c.talosctl("get", r.typ, "--insecure", "-n", nd.addr)
			if code != 0 || !re.MatchString(out) {
				return fmt.Errorf("get %s --insecure: exit %d, want %s:\n%s%s", r.typ, code, r.want, out, errOut)
			}

			return nil
		})
	}

	for _, typ := range []string{"mc", "configerror", "metakeys", "osrootsecrets", "certs", "linkspecs", "manifests"} {
		errOut := c.fails("get", typ, "--insecure", "-n", nd.addr)
		if !strings.HasPrefix(errOut, "error on node "+nd.addr+": maintenance mode: only apply-config, version and reading the machine's hardware, disks, network and status are served, not ") {
			t.Errorf("get %s --insecure in maintenance: %q", typ, errOut)
		}
	}
}
