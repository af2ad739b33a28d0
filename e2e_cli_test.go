//go:build e2e

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// TestE2ECLI drives every talosctl API command, as a subprocess, against
// one real node. The subtests run in order and share the node: the reads
// first, then config changes, then reboot, and reset last.
func TestE2ECLI(t *testing.T) {
	c := newCluster(t, 1)
	a := c.nodes[0]
	n := []string{"-n", a.addr}

	// run is c.ok for the subtest, against node A.
	run := func(t *testing.T, args ...string) string {
		t.Helper()
		return c.as(t).ok(append(n, args...)...)
	}

	fail := func(t *testing.T, args ...string) string {
		t.Helper()
		return c.as(t).fails(append(n, args...)...)
	}

	hostname := func(t *testing.T) string {
		t.Helper()
		return strings.TrimSpace(run(t, "get", "mc", "-o", "jsonpath={.spec.machine.network.hostname}"))
	}

	t.Run("version", func(t *testing.T) {
		out := run(t, "version")
		matches(t, "version", out, `^Client:\n\tTag:         v9\.8\.7-test\n\tSHA:         abc123\n\tBuilt:       2026-01-02T03:04:05Z\n\tGo version:  go\S+\n\tOS/Arch:     linux/\w+\n`+
			`Server:\n\tNODE:        10\.5\.0\.2\n\tTag:         v9\.8\.7-test\n\tSHA:         abc123\n\tBuilt:       2026-01-02T03:04:05Z\n\tGo version:  go\S+\n\tOS/Arch:     linux/\w+\n\tEnabled:     RBAC\n$`)

		if out := run(t, "version", "--short"); out != "Client:\n\tv9.8.7-test\nServer:\n\tNODE:        10.5.0.2\n\tTag:         v9.8.7-test\n" {
			t.Errorf("version --short:\n%s", out)
		}

		// No -n: the endpoint answers and names itself by hostname.
		if out := c.as(t).ok("version"); !strings.Contains(out, "Server:\n\tNODE:        node-a\n") {
			t.Errorf("version through the talosconfig endpoint:\n%s", out)
		}
	})

	t.Run("get", func(t *testing.T) {
		tb := parseTable(t, run(t, "get", "machinestatus"), "NODE", "NAMESPACE", "TYPE", "ID", "VERSION", "STAGE", "READY")
		if len(tb.rows) != 1 {
			t.Fatalf("machinestatus rows: %v", tb.rows)
		}

		row := tb.rows[0]
		if row["NODE"] != a.addr || row["NAMESPACE"] != "runtime" || row["TYPE"] != "MachineStatus" || row["ID"] != "machine" || row["STAGE"] != "running" || row["READY"] != "true" {
			t.Errorf("machinestatus row %v", row)
		}

		if v, err := strconv.Atoi(row["VERSION"]); err != nil || v < 1 {
			t.Errorf("VERSION %q", row["VERSION"])
		}

		tb = parseTable(t, run(t, "get", "services"), "NODE", "NAMESPACE", "TYPE", "ID", "VERSION", "RUNNING", "HEALTHY", "HEALTH UNKNOWN")
		if ids := tb.column("ID"); !slices.Equal(ids, []string{"apid", "containerd", "cri", "machined", "timed", "trustd"}) {
			t.Errorf("service IDs %v", ids)
		}

		if r := tb.one(t, "ID", "containerd"); r["TYPE"] != "Service" || r["RUNNING"] != "true" || r["HEALTHY"] != "true" || r["HEALTH UNKNOWN"] != "false" {
			t.Errorf("containerd row %v", r)
		}

		// -o yaml: one document per resource, node first, then metadata, spec.
		out := run(t, "get", "machinestatus", "machine", "-o", "yaml")
		if !strings.HasPrefix(out, "node: 10.5.0.2\nmetadata:\n    namespace: runtime\n    type: MachineStatuses.runtime.talos.dev\n    id: machine\n    version: ") {
			t.Errorf("yaml layout:\n%s", out)
		}

		docs := yamlDocs(t, out)
		if len(docs) != 1 || docs[0].Node != a.addr || docs[0].Metadata.Phase != "running" || dig(docs[0].Spec, "stage") != "running" || dig(docs[0].Spec, "status", "ready") != true {
			t.Errorf("yaml: %+v", docs)
		}

		if docs := yamlDocs(t, run(t, "get", "services", "-o", "yaml")); len(docs) != 6 || docs[4].Metadata.ID != "timed" || dig(docs[4].Spec, "state") != "Skipped" {
			t.Errorf("yaml stream: %+v", docs)
		}

		jdocs := jsonDocs(t, run(t, "get", "services", "-o", "json"))
		if len(jdocs) != 6 || jdocs[1].Metadata.ID != "containerd" || jdocs[1].Metadata.Type != "Services.v1alpha1.talos.dev" || dig(jdocs[1].Spec, "healthy") != true || jdocs[1].Node != a.addr {
			t.Errorf("json: %+v", jdocs)
		}

		if out := run(t, "get", "machinestatus", "-o", "jsonpath={.spec.stage}"); out != "running\n" {
			t.Errorf("jsonpath: %q", out)
		}

		if out := run(t, "get", "services", "-o", "jsonpath={.metadata.id}={.spec.state}"); out != "apid=Running\ncontainerd=Running\ncri=Running\nmachined=Running\ntimed=Skipped\ntrustd=Running\n" {
			t.Errorf("jsonpath over a list: %q", out)
		}

		// --namespace: the machine config lives in config; nothing of
		// MachineStatus's type lives there.
		tb = parseTable(t, run(t, "get", "mc", "--namespace", "config"), "NODE", "NAMESPACE", "TYPE", "ID", "VERSION")
		if r := tb.one(t, "ID", "v1alpha1"); r["NAMESPACE"] != "config" || r["TYPE"] != "MachineConfig" {
			t.Errorf("mc row %v", r)
		}

		if out := run(t, "get", "machinestatus", "--namespace", "config"); out != "NODE   NAMESPACE   TYPE   ID   VERSION   STAGE   READY\n" {
			t.Errorf("empty namespace: %q", out)
		}

		// Resource definitions and namespaces.
		tb = parseTable(t, run(t, "get", "rd"), "NODE", "NAMESPACE", "TYPE", "ID", "VERSION")
		for _, id := range []string{"machineconfigs.config.talos.dev", "machinestatuses.runtime.talos.dev", "services.v1alpha1.talos.dev"} {
			if r := tb.one(t, "ID", id); r["NAMESPACE"] != "meta" || r["TYPE"] != "ResourceDefinition" {
				t.Errorf("rd row %v", r)
			}
		}

		var rd struct {
			Spec struct {
				Type             string   `yaml:"type"`
				DefaultNamespace string   `yaml:"defaultNamespace"`
				Aliases          []string `yaml:"aliases"`
				Sensitivity      string   `yaml:"sensitivity"`
			} `yaml:"spec"`
		}

		if err := yaml.Unmarshal([]byte(run(t, "get", "rd", "mc", "-o", "yaml")), &rd); err != nil || rd.Spec.Type != "MachineConfigs.config.talos.dev" ||
			rd.Spec.DefaultNamespace != "config" || rd.Spec.Sensitivity != "sensitive" || !slices.Contains(rd.Spec.Aliases, "mc") {
			t.Errorf("get rd mc -o yaml: %+v, %v", rd, err)
		}

		tb = parseTable(t, run(t, "get", "namespaces"), "NODE", "NAMESPACE", "TYPE", "ID", "VERSION")
		if ids := tb.column("ID"); !slices.Contains(ids, "config") || !slices.Contains(ids, "runtime") || tb.rows[0]["TYPE"] != "Namespace" {
			t.Errorf("namespaces %v", tb.rows)
		}

		// Label selectors reach the node: no resource of a node carries
		// labels yet, so a selector matches nothing, and a malformed one
		// is the node's error.
		if out := run(t, "get", "services", "-l", "tier=control-plane"); out != "NODE   NAMESPACE   TYPE   ID   VERSION   RUNNING   HEALTHY   HEALTH UNKNOWN\n" {
			t.Errorf("get -l: %q", out)
		}

		if errOut := fail(t, "get", "services", "-l", "tier in (a"); !strings.Contains(errOut, `label selector "tier in (a"`) {
			t.Errorf("get -l malformed: %q", errOut)
		}

		// Errors name the type as typed, and an ambiguous alias lists
		// the types it could be: Talos's two for ms (talosbox's own
		// MachineStages takes no initials).
		if errOut := fail(t, "get", "foo"); errOut != "error on node 10.5.0.2: resource type \"foo\" not found\n" {
			t.Errorf("get foo: %q", errOut)
		}

		if errOut := fail(t, "get", "ms"); errOut != "error on node 10.5.0.2: resource type \"ms\" is ambiguous: it could be MachineStatuses.runtime.talos.dev, ManifestStatuses.kubernetes.talos.dev\n" {
			t.Errorf("get ms: %q", errOut)
		}

		if errOut := c.as(t).fails("get", "services", "-o", "xml"); !strings.Contains(errOut, `output format "xml" is not supported`) {
			t.Errorf("get -o xml: %q", errOut)
		}
	})

	t.Run("services", func(t *testing.T) {
		tb := parseTable(t, run(t, "services"), "NODE", "SERVICE", "STATE", "HEALTH", "LAST CHANGE", "LAST EVENT")

		want := map[string][2]string{"apid": {"Running", "OK"}, "containerd": {"Running", "OK"}, "cri": {"Running", "OK"}, "machined": {"Running", "?"}, "timed": {"Skipped", "?"}, "trustd": {"Running", "OK"}}
		if len(tb.rows) != len(want) {
			t.Fatalf("services: %v", tb.rows)
		}

		for _, r := range tb.rows {
			if w := want[r["SERVICE"]]; r["NODE"] != a.addr || r["STATE"] != w[0] || r["HEALTH"] != w[1] || !strings.HasSuffix(r["LAST CHANGE"], "s ago") || r["LAST EVENT"] == "" {
				t.Errorf("service row %v", r)
			}
		}

		// The troubleshooting guide's layout: NODE, ID, STATE, HEALTH,
		// then EVENTS, newest first, each with its age.
		matches(t, "service machined", run(t, "service", "machined"),
			`^NODE     10\.5\.0\.2\nID       machined\nSTATE    Running\nHEALTH   \?\nEVENTS   \[Running\]: Service started as goroutine \(\S+ ago\)\n(         \[\w+\]: .+ \(\S+ ago\)\n)+$`)

		matches(t, "service containerd", run(t, "service", "containerd"),
			`^NODE     10\.5\.0\.2\nID       containerd\nSTATE    Running\nHEALTH   OK\n(LAST HEALTH MESSAGE   .*\n)?EVENTS   \[Running\]: Health check successful \(\S+ ago\)\n(         \[\w+\]: .+ \(\S+ ago\)\n)+$`)

		if errOut := fail(t, "service", "nope"); errOut != "error on node 10.5.0.2: service \"nope\" is not registered\n" {
			t.Errorf("service nope: %q", errOut)
		}

		if errOut := fail(t, "service", "containerd", "bounce"); !strings.Contains(errOut, `unsupported service action "bounce"`) {
			t.Errorf("bad action: %q", errOut)
		}
	})

	t.Run("logs", func(t *testing.T) {
		out := run(t, "logs", "machined", "--tail", "5")

		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != 5 {
			t.Fatalf("logs --tail 5 gave %d lines:\n%s", len(lines), out)
		}

		for _, l := range lines {
			text, ok := strings.CutPrefix(l, "10.5.0.2: ")
			if !ok || a.con.index(text) < 0 {
				t.Errorf("log line %q: no node prefix, or not a line machined printed", l)
			}
		}

		if errOut := fail(t, "logs", "kubelet"); !strings.HasPrefix(errOut, "error on node 10.5.0.2: ") || !strings.Contains(errOut, "kubelet") {
			t.Errorf("logs kubelet: %q", errOut)
		}
	})

	// The streaming commands, killed as Ctrl-C would end them, and what
	// they show of a service restart while they run.
	t.Run("streams and service restart", func(t *testing.T) {
		cc := c.as(t)

		// Interrupted as soon as it printed its header, with no event to
		// show yet (the stream opens with the first), it ends cleanly.
		early := cc.stream(append(n, "events")...)
		early.out.wait(t, "NODE", 10*time.Second)

		if errOut, code := early.stop(); code != 0 || errOut != "" {
			t.Errorf("events interrupted at once: exit %d, stderr %q", code, errOut)
		}

		watch := cc.stream(append(n, "get", "services", "-w")...)
		logs := cc.stream(append(n, "logs", "containerd", "-f")...)
		events := cc.stream(append(n, "events", "--tail", "5")...)

		// get -w: the initial rows, marked + and aligned under a header
		// with the event column.
		watch.out.wait(t, "timed", 10*time.Second)

		initial := parseTable(t, strings.Join(strings.Split(watch.out.String(), "\n")[:5], "\n")+"\n", "NODE", "*", "NAMESPACE", "TYPE", "ID", "VERSION", "RUNNING", "HEALTHY", "HEALTH UNKNOWN")
		if len(initial.rows) != 4 || initial.one(t, "ID", "containerd")["*"] != "+" {
			t.Fatalf("get -w initial rows: %v", initial.rows)
		}

		logs.out.wait(t, "10.5.0.2: ", 10*time.Second)

		// events --tail 5: a header, then five past events.
		events.out.wait(t, "NODE", 10*time.Second)

		events.out.waitCount(t, a.addr+"  ", 5, 10*time.Second)

		watchMark, logsMark, eventsMark := watch.out.mark(), logs.out.mark(), events.out.mark()

		if out := run(t, "service", "containerd", "restart"); out != "NODE       RESPONSE\n10.5.0.2   Service \"containerd\" restarted\n" {
			t.Errorf("restart: %q", out)
		}

		// Running again, and healthy.
		eventually(t, 20*time.Second, func() error {
			out := run(t, "service", "containerd")
			if !strings.Contains(out, "STATE    Running\nHEALTH   OK\n") {
				return fmt.Errorf("containerd not back:\n%s", out)
			}

			return nil
		})

		watch.out.waitAfter(t, watchMark, "~   runtime     Service   containerd", 10*time.Second)
		logs.out.waitAfter(t, logsMark, "containerd successfully booted", 10*time.Second)
		events.out.waitAfter(t, eventsMark, "containerd", 10*time.Second)

		// Interrupted, each ends cleanly.
		for _, r := range []*running{watch, logs, events} {
			if errOut, code := r.stop(); code != 0 || errOut != "" {
				t.Errorf("%v interrupted: exit %d, stderr %q", r.cmd.Args, code, errOut)
			}
		}

		// Events stream, so their columns are fixed widths: still aligned.
		tb := parseTable(t, events.out.String()+"\n", "NODE", "ID", "EVENT", "ACTOR", "SOURCE", "MESSAGE")
		for i, r := range tb.rows {
			if r["NODE"] != a.addr || len(r["ID"]) != 22 || !strings.HasPrefix(r["EVENT"], "machine.") || (i > 0 && r["ID"] <= tb.rows[i-1]["ID"]) {
				t.Errorf("event row %d: %v", i, r)
			}
		}

		if !slices.ContainsFunc(tb.rows[5:], func(r map[string]string) bool {
			return r["EVENT"] == "machine.ServiceStateEvent" && strings.Contains(r["MESSAGE"], "containerd")
		}) {
			t.Errorf("no service event for the restart:\n%s", events.out)
		}
	})

	t.Run("dmesg", func(t *testing.T) {
		// The node reads the host's /dev/kmsg (container mode mounts no
		// /dev of its own): what talosctl shows follows from whether this
		// process can read it.
		r, err := os.Open("/dev/kmsg")
		if err != nil {
			errOut := fail(t, "dmesg", "--tail")
			if !strings.Contains(errOut, "/dev/kmsg cannot be read here") {
				t.Fatalf("dmesg without a readable /dev/kmsg: %q", errOut)
			}

			return
		}

		r.Close()

		// --tail without --follow: only what is new, and the call ends.
		if _, errOut, code := c.as(t).talosctl(append(n, "dmesg", "--tail")...); code != 0 || errOut != "" {
			t.Errorf("dmesg --tail: exit %d, %q", code, errOut)
		}

		f, err := os.OpenFile("/dev/kmsg", os.O_WRONLY, 0)
		if err != nil {
			// Nothing of ours to follow: the whole log, each line prefixed.
			out := run(t, "dmesg")
			matches(t, "dmesg", out, `^(10\.5\.0\.2: \[ *\d+\.\d{6}\] .*\n)+$`)

			return
		}
		defer f.Close()

		d := c.as(t).stream(append(n, "dmesg", "-f", "--tail")...)

		// A line written to the kernel log now is the only one the
		// follower can be sure to see, whatever the kernel logged before.
		marker := fmt.Sprintf("talosbox-e2e-%d", time.Now().UnixNano())

		eventually(t, 10*time.Second, func() error {
			if _, err := fmt.Fprintf(f, "%s\n", marker); err != nil {
				return err
			}

			if d.out.index(marker) < 0 {
				return fmt.Errorf("%s not shown yet", marker)
			}

			return nil
		})

		matches(t, "dmesg line", d.out.wait(t, marker, time.Second), `^10\.5\.0\.2: \[ *\d+\.\d{6}\] .*`+marker+`$`)

		if errOut, code := d.stop(); code != 0 || errOut != "" {
			t.Errorf("dmesg -f interrupted: exit %d, stderr %q", code, errOut)
		}
	})

	t.Run("files", func(t *testing.T) {
		tb := parseTable(t, run(t, "list", "/"), "NODE", "NAME")
		if tb.rows[0]["NAME"] != "." || len(tb.find("NAME", "etc")) != 1 || tb.rows[0]["NODE"] != a.addr {
			t.Errorf("ls /: %v", tb.rows)
		}

		tb = parseTable(t, run(t, "ls", "-l", "/etc"), "NODE", "MODE", "UID", "GID", "SIZE(B)", "LASTMOD", "NAME")
		if r := tb.one(t, "NAME", "."); !strings.HasPrefix(r["MODE"], "d") || r["UID"] != "0" {
			t.Errorf("ls -l: %v", r)
		}

		if r := tb.find("NAME", "hostname"); len(r) != 1 || !strings.HasPrefix(r[0]["MODE"], "-") {
			t.Errorf("ls -l /etc: no regular file hostname: %v", r)
		}

		want, err := os.ReadFile("/etc/os-release")
		if err != nil {
			t.Fatal(err)
		}

		if out := run(t, "read", "/etc/os-release"); out != string(want) {
			t.Errorf("read /etc/os-release:\n%s\nwant:\n%s", out, want)
		}

		if errOut := fail(t, "read", "/nonexistent"); !strings.HasPrefix(errOut, "error on node 10.5.0.2: ") || !strings.Contains(errOut, "/nonexistent") {
			t.Errorf("read /nonexistent: %q", errOut)
		}

		if errOut := c.as(t).fails("-n", a.addr+","+a.addr, "cat", "/etc/os-release"); !strings.Contains(errOut, "one node at a time") {
			t.Errorf("read on two nodes: %q", errOut)
		}

		// copy: a small tree made here, which the node sees (its mount
		// namespace is a copy of ours), comes back as a tree.
		src := filepath.Join(c.dir, "copysrc")
		if err := os.MkdirAll(filepath.Join(src, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}

		files := map[string]string{"a.txt": "alpha\n", "sub/b.txt": "beta\n"}
		for name, text := range files {
			if err := os.WriteFile(filepath.Join(src, name), []byte(text), 0o640); err != nil {
				t.Fatal(err)
			}
		}

		dst := filepath.Join(t.TempDir(), "out")
		if out := run(t, "copy", src, dst); out != "" {
			t.Errorf("copy printed %q", out)
		}

		for name, text := range files {
			got, err := os.ReadFile(filepath.Join(dst, "copysrc", name))
			if err != nil || string(got) != text {
				t.Errorf("copied %s: %q, %v", name, got, err)
			}
		}

		if fi, err := os.Stat(filepath.Join(dst, "copysrc", "a.txt")); err != nil || fi.Mode().Perm() != 0o640 {
			t.Errorf("copied a.txt mode: %v, %v", fi, err)
		}
	})

	t.Run("system info", func(t *testing.T) {
		tb := parseTable(t, run(t, "mounts"), "NODE", "FILESYSTEM", "SIZE(GB)", "USED(GB)", "AVAILABLE(GB)", "PERCENT USED", "MOUNTED ON")
		if r := tb.find("MOUNTED ON", "/"); len(r) == 0 || !strings.HasSuffix(r[0]["PERCENT USED"], "%") {
			t.Errorf("mounts: no / row: %v", tb.rows)
		}

		tb = parseTable(t, run(t, "memory"), "NODE", "TOTAL", "USED", "FREE", "SHARED", "BUFFERS", "CACHE", "AVAILABLE")
		if len(tb.rows) != 1 {
			t.Fatalf("memory rows %v", tb.rows)
		}

		for _, col := range tb.header[1:] {
			if v, err := strconv.Atoi(tb.rows[0][col]); err != nil || (col == "TOTAL" && v <= 0) {
				t.Errorf("memory %s = %q", col, tb.rows[0][col])
			}
		}

		tb = parseTable(t, run(t, "processes"), "NODE", "PID", "STATE", "THREADS", "CPU-TIME", "VIRTMEM", "RESMEM", "COMMAND")
		if r := tb.one(t, "PID", "1"); !strings.Contains(r["COMMAND"], "init --platform container") {
			t.Errorf("PID 1 is %v", r)
		}
	})

	t.Run("health", func(t *testing.T) {
		if out := run(t, "health"); out != `discovered nodes: ["10.5.0.2"]
skipping etcd checks: no control plane node runs etcd
waiting for apid to be ready: OK
waiting for all nodes to finish boot sequence: OK
waiting for all services to be up: OK
skipping Kubernetes checks: no control plane node known
` {
			t.Errorf("health:\n%s", out)
		}
	})

	t.Run("apply-config", func(t *testing.T) {
		live := filepath.Join(c.dir, "live.yaml")
		runBinary(t, c.bin, 0, "talosctl", "machineconfig", "patch", filepath.Join(c.dir, "node-a.yaml"),
			"-p", `{"machine":{"network":{"hostname":"node-live"}}}`, "-o", live)

		// --dry-run: the diff on stdout, nothing changed.
		out := run(t, "apply-config", "-f", live, "--dry-run")
		for _, want := range []string{"Dry run summary:\n", "\nConfig diff:\n", "\n~ machine.network.hostname: \"node-a\" -> \"node-live\"\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("dry run lacks %q:\n%s", want, out)
			}
		}

		if h := hostname(t); h != "node-a" {
			t.Fatalf("a dry run changed the hostname to %q", h)
		}

		// A live change without a reboot.
		if _, errOut, code := c.as(t).talosctl(append(n, "apply-config", "-f", live, "-m", "no-reboot")...); code != 0 || errOut != "Applied configuration without a reboot\n" {
			t.Fatalf("apply no-reboot: exit %d, %q", code, errOut)
		}

		docs := yamlDocs(t, run(t, "get", "mc", "-o", "yaml"))
		if len(docs) != 1 || dig(docs[0].Spec, "machine", "network", "hostname") != "node-live" || dig(docs[0].Spec, "machine", "type") != "controlplane" {
			t.Errorf("get mc after apply: %+v", docs)
		}

		// A change that needs a reboot is refused, naming the field.
		errOut := fail(t, "apply-config", "-f", live, "--immediate", "-p", `{"machine":{"env":{"E2E":"1"}}}`)
		if errOut != "error on node 10.5.0.2: apply config: changes cannot be applied without a reboot: machine.env.E2E\n" {
			t.Errorf("non-live change: %q", errOut)
		}

		if out := run(t, "get", "mc", "-o", "jsonpath={.spec.machine.env}"); strings.Contains(out, "E2E") {
			t.Errorf("the refused change was applied: %q", out)
		}

		// Talos 0.9's spelling, `apply machineconfig -f`; the node runs
		// that config already.
		if out := run(t, "apply", "machineconfig", "-f", live, "--dry-run"); out != "Dry run summary:\nNo changes: the node already runs this configuration.\n" {
			t.Errorf("apply machineconfig --dry-run:\n%s", out)
		}

		if errOut := c.as(t).fails("apply-config", "-f", live, "--immediate", "-m", "staged"); !strings.Contains(errOut, "--immediate conflicts with --mode=staged") {
			t.Errorf("conflicting modes: %q", errOut)
		}
	})

	t.Run("patch", func(t *testing.T) {
		out, errOut, code := c.as(t).talosctl(append(n, "patch", "mc", "-p", `[{"op":"replace","path":"/machine/network/hostname","value":"x"}]`)...)
		if code != 0 || out != "patched mc at the node 10.5.0.2\n" || errOut != "" {
			t.Fatalf("patch: exit %d, stdout %q, stderr %q", code, out, errOut)
		}

		if h := hostname(t); h != "x" {
			t.Errorf("hostname after patch: %q", h)
		}

		errOut = fail(t, "patch", "mc", "-p", `[{"op":"replace","path":"/machine/nope/x","value":1}]`)
		if !strings.Contains(errOut, "/machine/nope/x") || !strings.Contains(errOut, "path not found") {
			t.Errorf("bad path: %q", errOut)
		}
	})

	t.Run("edit", func(t *testing.T) {
		dir := t.TempDir()
		editor := func(name, script string) string {
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, []byte("#!/bin/sh\nset -e\n"+script), 0o700); err != nil {
				t.Fatal(err)
			}

			return "EDITOR=" + path
		}

		edit := func(env string) (string, string, int) {
			return c.as(t).talosctlEnv([]string{env, "TALOS_EDITOR="}, append(n, "edit", "mc")...)
		}

		if _, errOut, code := edit(editor("same.sh", "true\n")); code != 0 || errOut != "Apply was skipped: no changes detected.\n" {
			t.Errorf("unchanged: exit %d, %q", code, errOut)
		}

		if _, errOut, code := edit(editor("empty.sh", `: > "$1"`+"\n")); code != 0 || errOut != "Apply was skipped: empty file.\n" {
			t.Errorf("emptied: exit %d, %q", code, errOut)
		}

		// The editor opens the node's config under a comment header.
		seen := filepath.Join(dir, "seen.yaml")
		if _, errOut, code := edit(editor("ok.sh", `cp "$1" `+seen+`
sed -i -E 's/hostname: x(\}|$)/hostname: node-edited\1/' "$1"
`)); code != 0 || errOut != "Applied configuration without a reboot\n" {
			t.Fatalf("edit: exit %d, %q", code, errOut)
		}

		if text, err := os.ReadFile(seen); err != nil || !strings.HasPrefix(string(text), "# Editing MachineConfigs.config.talos.dev/v1alpha1 at \"10.5.0.2\" node\n") {
			t.Errorf("editor saw:\n%s (%v)", text, err)
		}

		if h := hostname(t); h != "node-edited" {
			t.Fatalf("hostname after edit: %q", h)
		}

		// An invalid config: the editor reopens with the node's error on
		// top of the user's text; saving it unchanged gives up and keeps
		// the text in a file; the node's config is untouched.
		reopened := filepath.Join(dir, "reopened.yaml")
		_, errOut, code := edit(editor("bad.sh", `if grep -q 'could not be applied' "$1"; then
  cp "$1" `+reopened+`
else
  sed -i 's/type: controlplane/type: bogus/' "$1"
fi
`))
		if code != 1 {
			t.Fatalf("invalid edit: exit %d, %q", code, errOut)
		}

		text, err := os.ReadFile(reopened)
		if err != nil {
			t.Fatalf("the editor was not reopened: %v; stderr %q", err, errOut)
		}

		if !strings.Contains(string(text), "# The config could not be applied:\n# apply config: ") || !strings.Contains(string(text), `unknown machine type "bogus"`) ||
			!strings.Contains(string(text), "\n    type: bogus\n") {
			t.Errorf("reopened file:\n%s", text)
		}

		kept, ok := strings.CutPrefix(errOut, "A copy of your changes has been stored to \"")
		kept, _, _ = strings.Cut(kept, "\"")

		if !ok || !strings.Contains(errOut, "edit cancelled, no valid changes were saved") || !strings.Contains(errOut, `unknown machine type "bogus"`) {
			t.Errorf("invalid edit stderr: %q", errOut)
		}

		if data, err := os.ReadFile(kept); err != nil || !strings.Contains(string(data), "\n    type: bogus\n") || !strings.Contains(string(data), "hostname: node-edited") {
			t.Errorf("kept file %s: %v\n%s", kept, err, data)
		}

		os.Remove(kept)

		if out := run(t, "get", "mc", "-o", "jsonpath={.spec.machine.type} {.spec.machine.network.hostname}"); out != "controlplane node-edited\n" {
			t.Errorf("node config after a refused edit: %q", out)
		}

		// Refused, then fixed in the reopened editor: the fix applies.
		_, errOut, code = edit(editor("fix.sh", `if grep -q 'could not be applied' "$1"; then
  sed -i -e 's/type: bogus/type: controlplane/' -e 's/hostname: node-edited/hostname: node-fixed/' "$1"
else
  sed -i 's/type: controlplane/type: bogus/' "$1"
fi
`))
		if code != 0 || errOut != "Applied configuration without a reboot\n" {
			t.Fatalf("fixed edit: exit %d, %q", code, errOut)
		}

		if out := run(t, "get", "mc", "-o", "jsonpath={.spec.machine.type} {.spec.machine.network.hostname}"); out != "controlplane node-fixed\n" {
			t.Errorf("node config after a fixed edit: %q", out)
		}
	})

	t.Run("config new", func(t *testing.T) {
		reader := filepath.Join(t.TempDir(), "reader-talosconfig")
		run(t, "config", "new", reader, "--roles", "os:reader")

		if fi, err := os.Stat(reader); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("talosconfig: %v, %v", fi, err)
		}

		// Its own endpoints reach the node.
		if out := c.as(t).ok("--talosconfig", reader, "version"); !strings.Contains(out, "\tEnabled:     RBAC\n") {
			t.Errorf("version as reader:\n%s", out)
		}

		errOut := c.as(t).fails("--talosconfig", reader, "-n", a.addr, "reboot")
		if !strings.Contains(errOut, "denied") || !strings.Contains(errOut, "/machine.MachineService/Reboot") || !strings.Contains(errOut, "os:reader") {
			t.Errorf("reboot as reader: %q", errOut)
		}

		if errOut := c.as(t).fails("--talosconfig", reader, "-n", a.addr, "edit", "mc"); !strings.Contains(errOut, "os:admin role is required") {
			t.Errorf("edit as reader: %q", errOut)
		}

		if errOut := fail(t, "config", "new", reader); !strings.Contains(errOut, "already exists") {
			t.Errorf("overwrite: %q", errOut)
		}

		if st := run(t, "get", "machinestatus", "-o", "jsonpath={.spec.stage}"); st != "running\n" {
			t.Errorf("after a refused reboot the node is %q", st)
		}
	})

	t.Run("reboot", func(t *testing.T) {
		mark := a.con.mark()

		_, errOut, code := c.as(t).talosctl(append(n, "reboot", "--wait")...)
		if code != 0 || !strings.HasSuffix(errOut, "10.5.0.2: back: running\n") {
			t.Fatalf("reboot --wait: exit %d, %q", code, errOut)
		}

		// It did boot again, with the config it had.
		a.con.waitAfter(t, mark, "[talos] services: ", time.Second)

		if h := hostname(t); h != "node-fixed" {
			t.Errorf("hostname after reboot: %q", h)
		}
	})

	t.Run("reset", func(t *testing.T) {
		if errOut := fail(t, "reset", "--system-labels-to-wipe", "BOOT"); !strings.Contains(errOut, `unknown system partition label "BOOT"`) {
			t.Errorf("reset BOOT: %q", errOut)
		}

		mark := a.con.mark()

		_, errOut, code := c.as(t).talosctl(append(n, "reset", "--graceful", "--reboot", "--system-labels-to-wipe", "STATE", "--wait", "--timeout", "1m")...)
		if code != 0 || !strings.HasSuffix(errOut, "10.5.0.2: back: maintenance mode, waiting for a config (apply-config --insecure)\n") {
			t.Fatalf("reset --wait: exit %d, %q", code, errOut)
		}

		a.con.waitAfter(t, mark, "[talos] wiped STATE", time.Second)
		a.con.waitAfter(t, mark, "[talos] entering maintenance mode", time.Second)

		if _, err := os.Stat(filepath.Join(c.dir, a.name, "state", "config.yaml")); !os.IsNotExist(err) {
			t.Errorf("STATE still holds a config: %v", err)
		}

		maintenanceRoundTrip(t, c, a, filepath.Join(c.dir, "node-a.yaml"))
	})
}

// maintenanceRoundTrip checks a node waiting in maintenance mode: the
// insecure API answers, the cluster's credentials do not, and an applied
// config boots it.
func maintenanceRoundTrip(t *testing.T, c *cluster, nd *node, config string) {
	t.Helper()

	cc := c.as(t)

	if out := cc.ok("version", "-i", "-n", nd.addr, "-e", nd.addr); !strings.Contains(out, "Server:\n\tNODE:        "+nd.addr+"\n") || !strings.HasSuffix(out, "\tMode:        maintenance\n") {
		t.Errorf("version -i:\n%s", out)
	}

	if out := cc.ok("get", "machinestatus", "-i", "-n", nd.addr, "-o", "jsonpath={.spec.stage}"); out != "maintenance\n" {
		t.Errorf("stage in maintenance: %q", out)
	}

	if _, errOut, code := cc.talosctl("-n", nd.addr, "-e", nd.addr, "version"); code != 1 || !strings.Contains(errOut, "error on node "+nd.addr+": ") {
		t.Errorf("mutual TLS against a node without a config: exit %d, %q", code, errOut)
	}

	mark := nd.con.mark()

	if _, errOut, code := cc.talosctl("apply-config", "-i", "-n", nd.addr, "-e", nd.addr, "-f", config); code != 0 {
		t.Fatalf("apply-config -i: exit %d, %q", code, errOut)
	}

	nd.con.waitAfter(t, mark, "[talos] services: ", 30*time.Second)

	if out := cc.ok("-n", nd.addr, "-e", nd.addr, "get", "machinestatus", "-o", "jsonpath={.spec.stage}"); out != "running\n" {
		t.Errorf("after apply-config -i the node is %q", out)
	}
}
