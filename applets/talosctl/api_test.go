package talosctl_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/applets/talosctl"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/api/resource"
	"github.com/talosbox/talosbox/internal/applet"
	"github.com/talosbox/talosbox/internal/client/clienttest"
)

const machineStatusType = "MachineStatuses.runtime.talosbox.dev"

var testDefinitions = []*resource.ResourceDefinition{
	{Type: "MachineConfigs.config.talosbox.dev", DefaultNamespace: "config", Aliases: []string{"mc", "machineconfig"}, Sensitive: true},
	{Type: machineStatusType, DefaultNamespace: "runtime", Aliases: []string{"machinestatus"},
		PrintColumns: []*resource.PrintColumn{{Name: "STAGE", JsonPath: "{.stage}"}, {Name: "READY", JsonPath: "{.status.ready}"}}},
	{Type: "Manifests.kubernetes.talosbox.dev", DefaultNamespace: "controlplane", Aliases: []string{"manifest", "manifests"}},
}

const testConfig = "version: v1alpha1\nmachine:\n    type: controlplane\n    kubelet:\n        image: ghcr.io/talos-systems/kubelet:v1.20.4\n"

func statusResource(version uint64, stage string) *resource.Resource {
	return &resource.Resource{
		Metadata: &resource.ResourceMetadata{Namespace: "runtime", Type: machineStatusType, Id: "machine", Version: version, Phase: "running",
			Created: timestamppb.New(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC))},
		SpecYaml: []byte("stage: " + stage + "\nstatus:\n    ready: true\n"),
	}
}

func newTestNode(name string) *clienttest.Node {
	now := time.Now()

	return &clienttest.Node{
		Name:        name,
		Version:     &machine.VersionInfo{Tag: "v0.1.0", Sha: "abc123", Built: "2024-01-01", GoVersion: "go1.26", Os: "linux", Arch: "amd64"},
		Definitions: testDefinitions,
		Resources: []*resource.Resource{
			statusResource(4, "running"),
			{Metadata: &resource.ResourceMetadata{Namespace: "config", Type: testDefinitions[0].Type, Id: "v1alpha1", Version: 1, Phase: "running"}, SpecYaml: []byte(testConfig)},
			{Metadata: &resource.ResourceMetadata{Namespace: "controlplane", Type: testDefinitions[2].Type, Id: "00-kubelet-bootstrapping-token", Version: 1, Phase: "running", Labels: map[string]string{"kind": "bootstrap"}}, SpecYaml: []byte("{}\n")},
			{Metadata: &resource.ResourceMetadata{Namespace: "controlplane", Type: testDefinitions[2].Type, Id: "10-kube-proxy", Version: 2, Phase: "running"}, SpecYaml: []byte("{}\n")},
		},
		Services: []*machine.ServiceInfo{
			{Id: "apid", State: "Running", Health: &machine.ServiceHealth{Healthy: true},
				Events: &machine.ServiceEvents{Events: []*machine.ServiceEvent{{State: "Running", Msg: "Health check successful", Ts: timestamppb.New(now)}}}},
			{Id: "machined", State: "Running", Health: &machine.ServiceHealth{Unknown: true},
				Events: &machine.ServiceEvents{Events: []*machine.ServiceEvent{{State: "Running", Msg: "Service started as goroutine", Ts: timestamppb.New(now)}}}},
		},
		Logs:  map[string][]string{"machined": {"line one", "line two", "line three"}},
		Files: map[string]string{"/etc/kubernetes/manifests/talos-kube-apiserver.yaml": "kind: Pod\n", "/etc/kubernetes/manifests/talos-kube-scheduler.yaml": "kind: Pod\n"},
	}
}

// fixture is a fake apid reached through a talosconfig, serving the
// given nodes; the first is the endpoint itself.
type fixture struct {
	t      *testing.T
	srv    *clienttest.Server
	config string
	env    map[string]string
}

func newFixture(t *testing.T, names ...string) *fixture {
	t.Helper()

	p := clienttest.NewPKI(t)
	srv := &clienttest.Server{Self: names[0], Nodes: map[string]*clienttest.Node{}}

	for _, n := range names {
		srv.Nodes[n] = newTestNode(n)
	}

	addr := clienttest.Start(t, p, srv, false)

	return &fixture{t: t, srv: srv, config: p.Talosconfig(t, []string{addr}, nil), env: map[string]string{}}
}

func (f *fixture) run(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer

	code := talosctl.Main(context.Background(), append([]string{"--talosconfig", f.config}, args...), applet.Env{
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return f.env[k] },
	})

	return code, out.String(), errOut.String()
}

func (f *fixture) mustRun(args ...string) string {
	f.t.Helper()

	code, out, errOut := f.run(args...)
	if code != 0 {
		f.t.Fatalf("talosctl %v: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, out, errOut)
	}

	return out
}

func TestVersionFanOut(t *testing.T) {
	f := newFixture(t, "10.0.0.2", "10.0.0.3")

	code, out, errOut := f.run("version", "-n", "10.0.0.3,10.0.0.9,10.0.0.2")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (one node failed)", code)
	}

	server := "Server:\n\tNODE:        10.0.0.3\n\tTag:         v0.1.0\n\tSHA:         abc123\n\tBuilt:       2024-01-01\n\tGo version:  go1.26\n\tOS/Arch:     linux/amd64\n\tEnabled:     RBAC\nServer:\n\tNODE:        10.0.0.2\n"
	if !strings.Contains(out, server) {
		t.Errorf("stdout:\n%s\nwant the servers in node order:\n%s", out, server)
	}

	if !strings.HasPrefix(errOut, "error on node 10.0.0.9: connection error:") || strings.Contains(errOut, "rpc error") {
		t.Errorf("stderr %q", errOut)
	}
}

func TestGetTable(t *testing.T) {
	f := newFixture(t, "172.20.0.2")

	out := f.mustRun("-n", "172.20.0.2", "get", "manifests", "--namespace", "controlplane")
	want := `NODE         NAMESPACE      TYPE       ID                               VERSION
172.20.0.2   controlplane   Manifest   00-kubelet-bootstrapping-token   1
172.20.0.2   controlplane   Manifest   10-kube-proxy                    2
`
	if out != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out, want)
	}

	out = f.mustRun("-n", "172.20.0.2", "get", "machinestatus")
	if want := "NODE         NAMESPACE   TYPE            ID        VERSION   STAGE     READY\n172.20.0.2   runtime     MachineStatus   machine   4         running   true\n"; out != want {
		t.Fatalf("print columns: got:\n%s\nwant:\n%s", out, want)
	}

	out = f.mustRun("get", "manifests", "-l", "kind=bootstrap")
	if strings.Contains(out, "10-kube-proxy") || !strings.Contains(out, "00-kubelet-bootstrapping-token") {
		t.Fatalf("label selector not applied:\n%s", out)
	}
}

func TestGetFormats(t *testing.T) {
	f := newFixture(t, "172.20.0.2")

	out := f.mustRun("-n", "172.20.0.2", "get", "machinestatus", "machine", "-o", "yaml")
	if !strings.HasPrefix(out, "node: 172.20.0.2\nmetadata:\n    namespace: runtime\n    type: "+machineStatusType+"\n    id: machine\n    version: 4\n") {
		t.Fatalf("yaml layout:\n%s", out)
	}

	var doc struct {
		Node string
		Spec struct{ Stage string }
	}

	if err := yaml.Unmarshal([]byte(out), &doc); err != nil || doc.Node != "172.20.0.2" || doc.Spec.Stage != "running" {
		t.Fatalf("yaml output does not parse back: %+v, %v", doc, err)
	}

	out = f.mustRun("get", "manifests", "-o", "yaml")
	if strings.Count(out, "\n---\n") != 1 {
		t.Fatalf("two documents need one separator:\n%s", out)
	}

	out = f.mustRun("-n", "172.20.0.2", "get", "machinestatus", "-o", "json")

	var j map[string]any

	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&j); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}

	if spec, _ := j["spec"].(map[string]any); spec["stage"] != "running" || j["node"] != "172.20.0.2" {
		t.Fatalf("json content %v", j)
	}

	out = f.mustRun("get", "machinestatus", "-o", "jsonpath={.spec.stage}")
	if out != "running\n" {
		t.Fatalf("jsonpath: %q", out)
	}
}

func TestGetErrors(t *testing.T) {
	f := newFixture(t, "10.0.0.2")

	code, out, errOut := f.run("-n", "10.0.0.2", "get", "foo")
	if code != 1 || out != "" || errOut != "error on node 10.0.0.2: resource type \"foo\" not found\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	if code, _, errOut := f.run("get", "manifests", "-o", "xml"); code != 1 || !strings.Contains(errOut, `output format "xml" is not supported`) {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

func TestGetDefinitionsAndNamespaces(t *testing.T) {
	f := newFixture(t, "10.0.0.2")

	out := f.mustRun("get", "rd")
	for _, want := range []string{"NODE       NAMESPACE   TYPE                 ID", "10.0.0.2   meta        ResourceDefinition   machinestatuses.runtime.talosbox.dev"} {
		if !strings.Contains(out, want) {
			t.Errorf("get rd: missing %q in\n%s", want, out)
		}
	}

	out = f.mustRun("get", "rd", "mc", "-o", "yaml")
	if !strings.Contains(out, "sensitivity: sensitive") || !strings.Contains(out, "defaultNamespace: config") {
		t.Errorf("get rd mc -o yaml:\n%s", out)
	}

	out = f.mustRun("get", "namespaces")
	for _, ns := range []string{"config", "controlplane", "runtime"} {
		if !strings.Contains(out, "   "+ns+"   ") {
			t.Errorf("namespace %s missing:\n%s", ns, out)
		}
	}
}

func TestGetWatch(t *testing.T) {
	f := newFixture(t, "10.0.0.2")
	f.srv.Nodes["10.0.0.2"].WatchEvents = []*resource.WatchResponse{
		{EventType: resource.WatchResponse_UPDATED, Resource: statusResource(5, "rebooting")},
		{EventType: resource.WatchResponse_DESTROYED, Resource: statusResource(5, "rebooting")},
	}

	out := f.mustRun("get", "machinestatus", "-w")
	want := `NODE       *   NAMESPACE   TYPE            ID        VERSION   STAGE     READY
10.0.0.2   +   runtime     MachineStatus   machine   4         running   true
10.0.0.2   ~   runtime     MachineStatus   machine   5         rebooting   true
10.0.0.2   -   runtime     MachineStatus   machine   5         rebooting   true
`
	if out != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out, want)
	}
}

func TestServices(t *testing.T) {
	f := newFixture(t, "10.0.0.2")

	out := f.mustRun("-n", "10.0.0.2", "services")
	if !strings.HasPrefix(out, "NODE       SERVICE    STATE     HEALTH   LAST CHANGE   LAST EVENT\n10.0.0.2   apid       Running   OK       0s ago        Health check successful\n10.0.0.2   machined   Running   ?  ") {
		t.Fatalf("services:\n%s", out)
	}

	out = f.mustRun("-n", "10.0.0.2", "service", "apid")
	if !strings.HasPrefix(out, "NODE     10.0.0.2\nID       apid\nSTATE    Running\nHEALTH   OK\nEVENTS   [Running]: Health check successful (0s ago)\n") {
		t.Fatalf("service apid:\n%s", out)
	}

	out = f.mustRun("-n", "10.0.0.2", "service", "apid", "restart")
	if out != "NODE       RESPONSE\n10.0.0.2   Service \"apid\" restarted\n" {
		t.Fatalf("restart: %q", out)
	}

	if code, _, errOut := f.run("-n", "10.0.0.2", "service", "nope"); code != 1 || errOut != "error on node 10.0.0.2: service \"nope\" is not registered\n" {
		t.Fatalf("unknown service: exit %d, %q", code, errOut)
	}
}

func TestLogs(t *testing.T) {
	f := newFixture(t, "10.0.0.2", "10.0.0.3")

	out := f.mustRun("-n", "10.0.0.3", "logs", "machined", "--tail", "2")
	if out != "10.0.0.3: line two\n10.0.0.3: line three\n" {
		t.Fatalf("logs: %q", out)
	}

	code, _, errOut := f.run("-n", "10.0.0.2", "logs", "kubelet")
	if code != 1 || errOut != "error on node 10.0.0.2: log \"kubelet\" not found\n" {
		t.Fatalf("missing log: exit %d %q", code, errOut)
	}
}

func TestListReadCopy(t *testing.T) {
	f := newFixture(t, "172.20.0.2")

	out := f.mustRun("-n", "172.20.0.2", "ls", "/etc/kubernetes/manifests")
	want := "NODE         NAME\n172.20.0.2   .\n172.20.0.2   talos-kube-apiserver.yaml\n172.20.0.2   talos-kube-scheduler.yaml\n"
	if out != want {
		t.Fatalf("ls:\n%s\nwant:\n%s", out, want)
	}

	if out := f.mustRun("cat", "/etc/kubernetes/manifests/talos-kube-apiserver.yaml"); out != "kind: Pod\n" {
		t.Fatalf("cat: %q", out)
	}

	dir := t.TempDir()
	f.mustRun("cp", "/etc/kubernetes", dir)

	data, err := os.ReadFile(filepath.Join(dir, "kubernetes", "manifests", "talos-kube-scheduler.yaml"))
	if err != nil || string(data) != "kind: Pod\n" {
		t.Fatalf("copied file: %q, %v", data, err)
	}

	if code, _, errOut := f.run("-n", "a,b", "cat", "/x"); code != 1 || !strings.Contains(errOut, "one node at a time") {
		t.Fatalf("cat on two nodes: exit %d %q", code, errOut)
	}
}

func TestApplyConfig(t *testing.T) {
	f := newFixture(t, "10.0.0.2")
	node := f.srv.Nodes["10.0.0.2"]

	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte(testConfig), 0o600); err != nil {
		t.Fatal(err)
	}

	_, _, errOut := f.run("-n", "10.0.0.2", "apply-config", "-f", file, "--immediate", "-p", `[{"op":"add","path":"/machine/network","value":{"hostname":"cp1"}}]`)

	f.srv.Locked(func() {
		if len(node.Applied) != 1 {
			t.Fatalf("applied %d times; stderr %q", len(node.Applied), errOut)
		}

		req := node.Applied[0]
		if req.GetMode() != machine.ApplyConfigurationRequest_NO_REBOOT || !strings.Contains(string(req.GetData()), "hostname: cp1") {
			t.Fatalf("request mode %v data:\n%s", req.GetMode(), req.GetData())
		}
	})

	if errOut != "Applied configuration without a reboot\n" {
		t.Fatalf("stderr %q", errOut)
	}

	if code, _, errOut := f.run("apply", "-f", file, "--immediate", "-m", "staged"); code != 1 || !strings.Contains(errOut, "--immediate conflicts with --mode=staged") {
		t.Fatalf("conflicting modes: exit %d %q", code, errOut)
	}

	node.ApplyHook = func(req *machine.ApplyConfigurationRequest) (*machine.ApplyConfiguration, error) {
		return &machine.ApplyConfiguration{Mode: req.GetMode(), ModeDetails: "Dry run summary:\n--- a\n+++ b\n"}, nil
	}

	if out := f.mustRun("apply", "machineconfig", "-f", file, "--dry-run", "--mode", "try"); out != "Dry run summary:\n--- a\n+++ b\n" {
		t.Fatalf("dry run: %q", out)
	}
}

func TestPatchMachineConfig(t *testing.T) {
	f := newFixture(t, "172.20.0.2", "172.20.0.3")

	out := f.mustRun("-n", "172.20.0.2,172.20.0.3", "patch", "mc", "--immediate", "-p",
		`[{"op": "replace", "path": "/machine/kubelet/image", "value": "ghcr.io/talos-systems/kubelet:v1.20.5"}]`)
	if out != "patched mc at the node 172.20.0.2\npatched mc at the node 172.20.0.3\n" {
		t.Fatalf("stdout %q", out)
	}

	f.srv.Locked(func() {
		for _, n := range f.srv.Nodes {
			if len(n.Applied) != 1 || !strings.Contains(string(n.Applied[0].GetData()), "kubelet:v1.20.5") {
				t.Fatalf("%s: applied %v", n.Name, n.Applied)
			}
		}
	})

	code, _, errOut := f.run("-n", "172.20.0.2", "patch", "machineconfig", "-p", `[{"op": "replace", "path": "/machine/nope/x", "value": 1}]`)
	if code != 1 || !strings.Contains(errOut, "/machine/nope/x") {
		t.Fatalf("invalid path: exit %d %q", code, errOut)
	}
}

// writeEditor makes an $EDITOR script from shell text run with the file as $1.
func writeEditor(t *testing.T, script string) string {
	t.Helper()

	path := filepath.Join(t.TempDir(), "editor.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\nset -e\n"+script), 0o700); err != nil {
		t.Fatal(err)
	}

	return path
}

func TestEditMachineConfig(t *testing.T) {
	f := newFixture(t, "10.0.0.2")
	node := f.srv.Nodes["10.0.0.2"]

	f.env["EDITOR"] = writeEditor(t, "true\n")
	if code, _, errOut := f.run("edit", "mc"); code != 0 || errOut != "Apply was skipped: no changes detected.\n" {
		t.Fatalf("unchanged: exit %d %q", code, errOut)
	}

	f.env["TALOS_EDITOR"] = writeEditor(t, ": > \"$1\"\n")
	if code, _, errOut := f.run("edit", "mc"); code != 0 || errOut != "Apply was skipped: empty file.\n" {
		t.Fatalf("empty: exit %d %q", code, errOut)
	}

	// First save is refused: the editor reopens with the error on top and
	// the user's change still there; the second save (fixed) applies.
	reopened := filepath.Join(t.TempDir(), "reopened.yaml")
	f.env["TALOS_EDITOR"] = writeEditor(t, `if grep -q 'could not be applied' "$1"; then
  cp "$1" `+reopened+`
  sed -i 's/v1.20.9/v1.20.5/' "$1"
else
  sed -i 's/v1.20.4/v1.20.9/' "$1"
fi
`)
	node.ApplyHook = func(req *machine.ApplyConfigurationRequest) (*machine.ApplyConfiguration, error) {
		if strings.Contains(string(req.GetData()), "v1.20.9") {
			return nil, errorf("machine.kubelet.image: v1.20.9 is not allowed")
		}

		return &machine.ApplyConfiguration{ModeDetails: "Applied configuration without a reboot"}, nil
	}

	code, _, errOut := f.run("edit", "mc", "--immediate")
	if code != 0 || errOut != "Applied configuration without a reboot\n" {
		t.Fatalf("edit: exit %d %q", code, errOut)
	}

	text, err := os.ReadFile(reopened)
	if err != nil {
		t.Fatal(err)
	}

	if !strings.Contains(string(text), "# machine.kubelet.image: v1.20.9 is not allowed\n") || !strings.Contains(string(text), "image: ghcr.io/talos-systems/kubelet:v1.20.9") {
		t.Fatalf("reopened file:\n%s", text)
	}

	// Saving the refused text again gives up, and says where it is kept.
	f.env["TALOS_EDITOR"] = writeEditor(t, `grep -q 'could not be applied' "$1" || sed -i 's/v1.20.4/v1.20.9/' "$1"`+"\n")
	node.Resources[1] = &resource.Resource{Metadata: node.Resources[1].GetMetadata(), SpecYaml: []byte(testConfig)}

	code, _, errOut = f.run("edit", "mc")
	if code != 1 || !strings.Contains(errOut, "A copy of your changes has been stored to") {
		t.Fatalf("give up: exit %d %q", code, errOut)
	}

	kept := errOut[strings.Index(errOut, `"`)+1:]
	kept = kept[:strings.Index(kept, `"`)]

	if data, err := os.ReadFile(kept); err != nil || !strings.Contains(string(data), "v1.20.9") {
		t.Fatalf("kept file %s: %v", kept, err)
	}

	os.Remove(kept)
}

type errorf string

func (e errorf) Error() string { return string(e) }
