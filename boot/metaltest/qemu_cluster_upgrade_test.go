//go:build e2e

package metaltest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// installerRegistry serves the upgrade tests' installer images (v1 and
// v2 among them) on every host address, so that the nodes of a segment
// reach them at its gateway. It returns the cluster create flags that
// make the nodes install v1 from it, and v1.
func (c *vmCluster) installerRegistry(inst *installers) (flags []string, v1 string) {
	port := serveLayoutOn(c.t, c.bin, inst.layout, "0.0.0.0")

	return []string{"--install-image", installerRepo + ":v1",
		"--registry-mirror", fmt.Sprintf("ghcr.io=http://%s:%d", c.cidr.Addr().Next(), port)}, inst.v1
}

func (c *vmCluster) controlPlaneConsole(i int) string {
	b, _ := os.ReadFile(filepath.Join(c.state, c.name, fmt.Sprintf("%s-controlplane-%d", c.name, i+1), "console.log"))
	return string(b)
}

// rollingUpgrade upgrades the OS of the first n control planes one at a
// time, as a user does: each upgrade waits for its node to come back from
// its disk's other slot. A second upgrade while one runs is refused (the
// etcd lock, or the member's health), etcd keeps its quorum between
// nodes, and health passes at the end.
func (c *vmCluster) rollingUpgrade(n int, v1, v2 string) {
	t := c.t
	t.Helper()

	for i := range n {
		if !strings.Contains(c.controlPlaneConsole(i), "[talos] installed "+v1+" on vda: the disk boots by itself") {
			t.Fatalf("control plane %d did not install %s to its disk", i+1, v1)
		}
	}

	all := c.ip(0)
	for i := 1; i < n; i++ {
		all += "," + c.ip(i)
	}

	rolling := time.Now()

	for i := range n {
		node := c.ip(i)
		begin := time.Now()

		// A node just back may not be a healthy etcd member yet, and the
		// last one's lock lasts a lease: the upgrade is refused, saying
		// so, until both are over.
		var up string

		c.until("control plane "+node+" to accept the upgrade", 3*time.Minute, func() error {
			type result struct {
				out string
				err error
			}

			done := make(chan result, 1)

			go func() {
				o, err := c.talosctl(6*time.Minute, "-n", node, "upgrade", "--image", installerRepo+":v2", "--timeout", "5m")
				done <- result{o, err}
			}()

			if i == 0 && n > 1 {
				// While it upgrades, another control plane is refused.
				other := c.ip(1)
				if err := waitUntil(time.Minute, nil, func() error {
					if !strings.Contains(c.controlPlaneConsole(i), "[talos] pulling the installer image "+installerRepo+":v2") {
						return fmt.Errorf("node %s has not started pulling", node)
					}

					return nil
				}); err == nil {
					o, err := c.talosctl(time.Minute, "-n", other, "upgrade", "--image", installerRepo+":v2", "--wait=false")
					if err == nil || !(strings.Contains(o, "another control plane node is being upgraded") || strings.Contains(o, "is not healthy")) {
						t.Errorf("an upgrade of %s while %s upgrades: %v\n%s", other, node, err, o)
					} else {
						t.Logf("while %s upgrades, %s: %s", node, other, strings.TrimSpace(o))
					}
				}
			}

			r := <-done
			if r.err != nil && !strings.Contains(r.out, "--force skips the etcd checks") {
				t.Fatalf("upgrade %s: %v\n%s", node, r.err, r.out)
			}

			up = r.out

			return r.err
		})

		if !strings.Contains(up, "upgraded: runs "+v2) {
			t.Fatalf("upgrade of %s:\n%s", node, up)
		}

		t.Logf("upgrade of control plane %d (%s): %s", i+1, node, time.Since(begin).Round(100*time.Millisecond))

		// Quorum between the nodes: every member answers its status.
		c.until("etcd on every control plane", 2*time.Minute, func() error {
			_, err := c.talosctl(commandTimeout, "-n", all, "etcd", "status")
			return err
		})
	}

	t.Logf("rolling upgrade of %d control planes: %s", n, time.Since(rolling).Round(time.Second))

	for i := range n {
		if !strings.Contains(c.controlPlaneConsole(i), "Booting `B - talosbox ("+v2+")'") {
			t.Errorf("control plane %d did not boot %s from B", i+1, v2)
		}
	}

	c.ok(5*time.Minute, "health", "--wait-timeout", "4m")

	versions := c.ok(commandTimeout, "-n", all, "version", "--short")
	if strings.Count(versions, v2) != n {
		t.Errorf("not every control plane runs %s:\n%s", v2, versions)
	}
}
