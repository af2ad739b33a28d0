//go:build e2e

package metaltest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/talosbox/talosbox/internal/availability"
)

// vipHolder is the control plane (index) whose addresses list the shared IP.
func (c *vmCluster) vipHolder(vip string, controlPlanes int) (int, error) {
	for i := range controlPlanes {
		out, err := c.talosctl(commandTimeout, "-n", c.ip(i), "get", "addresses")
		if err != nil {
			continue // a node that is down holds nothing
		}

		if strings.Contains(out, "/"+vip+"/32") {
			return i, nil
		}
	}

	return -1, fmt.Errorf("no control plane lists %s among its addresses", vip)
}

// resetHolderAndRejoin resets the control plane that holds the shared IP
// (STATE and EPHEMERAL wiped, leaving etcd first), gives it its config back
// through the maintenance API, and waits until it is an etcd member again,
// while an outside client reads etcd's members through the shared IP every
// half second, since losing the node that holds the endpoint must not lose
// the cluster. It returns the longest outage the client saw.
func (c *vmCluster) resetHolderAndRejoin(vip string, controlPlanes int) time.Duration {
	t := c.t
	t.Helper()

	var holder int

	c.until("a control plane holding "+vip, time.Minute, func() (err error) {
		holder, err = c.vipHolder(vip, controlPlanes)
		return err
	})

	node := c.ip(holder)
	path := filepath.Join(t.TempDir(), "config.yaml")

	if err := os.WriteFile(path, []byte(c.ok(commandTimeout, "-n", node, "read", "/system/state/config.yaml")), 0o600); err != nil {
		t.Fatal(err)
	}

	sampler := availability.Start(500*time.Millisecond, func() (bool, string) {
		out, err := c.talosctl(5*time.Second, "-e", vip, "-n", vip, "etcd", "members")

		switch {
		case err != nil:
			return false, availability.LastLine(err.Error())
		case strings.Count(out, "https://") < 2:
			return false, availability.LastLine(out)
		}

		return true, ""
	})

	start := time.Now()
	c.ok(commandTimeout, "-n", node, "reset", "--graceful", "--reboot")

	// Back from its disk with nothing on STATE: maintenance mode.
	c.until(fmt.Sprintf("control plane %d in maintenance mode, taking its config back", holder+1), bootTimeout, func() error {
		_, err := c.talosctl(commandTimeout, "apply-config", "--insecure", "-e", node, "-n", node, "-f", path)
		return err
	})

	c.until(fmt.Sprintf("control plane %d back in etcd", holder+1), 2*servicesTimeout, func() error {
		out, err := c.talosctl(commandTimeout, "-n", node, "etcd", "members")
		if err != nil {
			return err
		}

		// A voting member again (not a learner), beside the other two.
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "https://"+node+":2380") && strings.HasSuffix(strings.TrimSpace(l), "false") && strings.Count(out, ":2380") == controlPlanes {
				return nil
			}
		}

		return fmt.Errorf("etcd members:\n%s", out)
	})

	rejoined := time.Since(start)

	c.until("the client served through the shared IP after the rejoin", time.Minute, func() error {
		_, err := c.talosctl(5*time.Second, "-e", vip, "-n", vip, "etcd", "members")
		return err
	})

	res := sampler.Report(start, t.Logf)

	t.Logf("control plane %d (held %s) reset and rejoined etcd in %s; %d samples of etcd members through the shared IP: outages (since the reset + length) %s, longest %s",
		holder+1, vip, rejoined.Round(time.Second), len(res.Samples), availability.Describe(res.Outages, start), res.Longest.Round(100*time.Millisecond))

	return res.Longest
}
