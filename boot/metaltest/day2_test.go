//go:build e2e

package metaltest

import (
	"archive/zip"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
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

	// apid listens on 50000, in machined (PID 1).
	if out := n.ok("netstat", "-l", "-t", "-p"); !regexp.MustCompile(`(?m)\s(0\.0\.0\.0|::):50000\s+\S+\s+LISTEN\s+1/`).MatchString(out) {
		n.t.Errorf("netstat -ltp lacks apid's listener held by PID 1:\n%s", out)
	}

	if out := n.ok("usage", "-d", "1", "/var"); !regexp.MustCompile(`(?m)^\d+\s+\.$`).MatchString(out) {
		n.t.Errorf("usage /var:\n%s", out)
	}

	if out := n.ok("inspect", "dependencies"); !strings.Contains(out, `"hardware.SystemInfoController" -> "SystemInformations.hardware.talos.dev"`) {
		n.t.Errorf("inspect dependencies lacks the hardware controller:\n%.3000s", out)
	}

	// A capture of eth0 for two seconds (the API's own traffic left out)
	// is a file tcpdump reads.
	filter, err := exec.Command("tcpdump", "-dd", "-y", "EN10MB", "not port 50000").Output()
	if err != nil {
		n.t.Fatalf("tcpdump -dd: %v", err)
	}

	capture := filepath.Join(n.dir, "eth0.pcap")
	n.ok("pcap", "-i", "eth0", "--bpf-filter", string(filter), "--duration", "2s", "-o", capture)

	if out, err := exec.Command("tcpdump", "-n", "-r", capture).CombinedOutput(); err != nil || !strings.Contains(string(out), "link-type EN10MB") {
		n.t.Errorf("tcpdump -r of the guest's capture: %v\n%s", err, out)
	}

	bundle := filepath.Join(n.dir, "support.zip")
	n.ok("support", "-O", bundle)

	zr, err := zip.OpenReader(bundle)
	if err != nil {
		n.t.Fatal(err)
	}
	defer zr.Close()

	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}

	for _, want := range []string{"/dmesg.log", "/service-logs/etcd.log", "/resources/systeminformations.hardware.talos.dev.yaml", "/etcd-members"} {
		if !slices.ContainsFunc(names, func(name string) bool { return strings.HasSuffix(name, want) }) {
			n.t.Errorf("the support bundle lacks *%s: %v", want, names)
		}
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
