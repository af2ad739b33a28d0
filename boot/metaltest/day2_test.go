package metaltest

import (
	"regexp"
	"strconv"
	"strings"
)

// day2 runs the day-2 commands whose answers only a real machine has:
// the SMBIOS QEMU gives the guest (its -uuid, its CPU, its RAM), cgroup
// v2 as machined mounts it, and wipe disk refusing the system disk and a
// disk whose partitions are mounted.
func (n *node) day2() {
	n.t.Helper()

	si := n.ok("get", "systeminformation", "-o", "yaml")
	for _, want := range []string{"manufacturer: QEMU", "uuid: " + n.uuid} {
		if !strings.Contains(si, want) {
			n.t.Errorf("get systeminformation lacks %q:\n%s", want, si)
		}
	}

	if out := n.ok("get", "cpus"); !regexp.MustCompile(`(?m)\sCPU-0\s+\d+\s+QEMU\s`).MatchString(out) {
		n.t.Errorf("get cpus:\n%s", out)
	}

	// QEMU describes its RAM as one DIMM of the guest's size.
	mem := n.memoryMiB
	if mem == 0 {
		mem = 512
	}

	if out := n.ok("get", "memorymodules", "-o", "yaml"); !regexp.MustCompile(`sizeMiB: ` + strconv.Itoa(mem) + `\n`).MatchString(out) {
		n.t.Errorf("get memorymodules (want %d MiB):\n%s", mem, out)
	}

	if out := n.ok("get", "securitystate"); !regexp.MustCompile(`securitystate\s+\d+\s+false\s+disabled`).MatchString(out) {
		n.t.Errorf("get securitystate:\n%s", out)
	}

	// The root cgroup holds machined and its services' processes.
	if out := n.ok("cgroups", "--preset", "process"); !regexp.MustCompile(`(?m)^NAME\s+PidsCurrent\s+PidsPeak\s+PidsMax\s+Procs\s+Threads\s+Processes\n\.\s+-\s+-\s+-\s+[1-9]\d*\s+[1-9]\d*`).MatchString(out) {
		n.t.Errorf("cgroups --preset process:\n%s", out)
	}

	for dev, want := range map[string]string{
		"vda":  "is the system disk",
		"vda6": "is the system disk",
		"vdb":  "in use: mounted",
		"vdb1": "in use: mounted",
		"vdz":  `no block device "vdz"`,
	} {
		if _, errOut, err := n.talosctl("wipe", "disk", dev); err == nil || !strings.Contains(errOut, want) {
			n.t.Errorf("wipe disk %s: %v, want %q:\n%s", dev, err, want, errOut)
		}
	}
}
