//go:build e2e

package metaltest

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// maintenanceRefusal starts what a node in maintenance mode answers for
// anything it does not serve (internal/apid/maintenance.go).
const maintenanceRefusal = "maintenance mode: only apply-config, version and reading the machine's hardware, disks, network and status are served, not "

// maintenanceReads is what Talos's install guide does with a machine
// booted into maintenance mode before it writes the machine's config:
// `talosctl get disks --insecure` (in Talos's columns), links, addresses,
// routes and the SMBIOS system information, all without credentials. The
// config, META and the secrets stay refused. disks are the rows `get
// disks` must have, as regular expressions from the disk's name on.
func (n *node) maintenanceReads(disks ...string) {
	n.t.Helper()

	start := time.Now()

	reads := []struct {
		typ   string
		wants []string
	}{
		{"disks", append([]string{`(?m)^NODE\s+NAMESPACE\s+TYPE\s+ID\s+VERSION\s+SIZE\s+READ ONLY\s+TRANSPORT\s+ROTATIONAL\s+WWID\s+MODEL\s+SERIAL$`}, disks...)},
		{"links", []string{`\sLinkStatus\s+eth0\s+\d+\s+ether\s+[0-9a-f:]{17}\s+up\s+true`}},
		// The default DHCP of a machine without a config: slirp's lease.
		{"addresses", []string{`\sAddressStatus\s+eth0/10\.0\.2\.15/24\s`}},
		// The lease's subnet (a restricted slirp offers no router).
		{"routes", []string{`\sRouteStatus\s+\S+\s+\d+\s+10\.0\.2\.0/24\s+eth0\s`}},
		{"systeminformation", []string{`\sSystemInformation\s+systeminformation\s+\d+\s+QEMU\s.*\s` + regexp.QuoteMeta(n.uuid) + `\s`}},
		{"cpus", []string{`\sCPU-0\s+\d+\s+QEMU\s`}},
	}

	for _, r := range reads {
		res := make([]*regexp.Regexp, len(r.wants))
		for i, w := range r.wants {
			res[i] = regexp.MustCompile(w)
		}

		// The lease and the statuses come on networkd's schedule.
		n.until("get "+r.typ+" --insecure", commandTimeout, func() error {
			out, errOut, err := n.talosctl("get", r.typ, "--insecure")
			if err != nil {
				return fmt.Errorf("%w: %s", err, errOut)
			}

			for _, re := range res {
				if !re.MatchString(out) {
					return fmt.Errorf("lacks %s:\n%s", re, out)
				}
			}

			return nil
		})
	}

	for _, typ := range []string{"mc", "metakeys", "osrootsecrets", "linkspecs", "operatorspecs"} {
		_, errOut, err := n.talosctl("get", typ, "--insecure")
		if err == nil || !strings.Contains(errOut, maintenanceRefusal) {
			n.t.Errorf("get %s --insecure in maintenance mode: %v, %q", typ, err, errOut)
		}
	}

	n.t.Logf("maintenance reads (disks, links, addresses, routes, systeminformation, cpus; 5 refusals): %.1fs", time.Since(start).Seconds())
}
