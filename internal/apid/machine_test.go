package apid

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/talosbox/talosbox/internal/api/common"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/api/resource"
	"github.com/talosbox/talosbox/internal/pki"
	"github.com/talosbox/talosbox/internal/role"
	"github.com/talosbox/talosbox/internal/talosconfig"
)

// readAll drains a data stream.
func readAll(t *testing.T, s grpc.ServerStreamingClient[common.Data]) ([]byte, error) {
	t.Helper()

	var buf bytes.Buffer

	for {
		d, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return buf.Bytes(), nil
		}

		if err != nil {
			return buf.Bytes(), err
		}

		buf.Write(d.GetBytes())
	}
}

func TestSystemInformation(t *testing.T) {
	ctx := testCtx(t)
	mc := machineClient(dial(t, shared.addr, clientCert(t, string(role.Reader))))

	v, err := mc.Version(ctx, &emptypb.Empty{})
	if err != nil || v.GetMessages()[0].GetVersion().GetTag() == "" || v.GetMessages()[0].GetMaintenance() {
		t.Fatalf("version %v %v", v, err)
	}

	if h, err := mc.Hostname(ctx, &emptypb.Empty{}); err != nil || h.GetMessages()[0].GetHostname() == "" {
		t.Fatalf("hostname %v %v", h, err)
	}

	sl, err := mc.ServiceList(ctx, &emptypb.Empty{})
	if err != nil {
		t.Fatal(err)
	}

	if !slices.ContainsFunc(sl.GetMessages()[0].GetServices(), func(s *machine.ServiceInfo) bool { return s.GetId() == "machined" && s.GetState() == "Running" }) {
		t.Fatalf("services %v", sl)
	}

	mounts, err := mc.Mounts(ctx, &emptypb.Empty{})
	if err != nil || !slices.ContainsFunc(mounts.GetMessages()[0].GetStats(), func(m *machine.MountStat) bool { return m.GetMountedOn() == "/" && m.GetSize() > 0 }) {
		t.Fatalf("mounts %v", err)
	}

	mem, err := mc.Memory(ctx, &emptypb.Empty{})
	if err != nil || mem.GetMessages()[0].GetMeminfo().GetMemtotal() == 0 {
		t.Fatalf("memory %v %v", mem, err)
	}

	ps, err := mc.Processes(ctx, &emptypb.Empty{})
	if err != nil || !slices.ContainsFunc(ps.GetMessages()[0].GetProcesses(), func(p *machine.ProcessInfo) bool { return int(p.GetPid()) == os.Getpid() && p.GetThreads() > 0 }) {
		t.Fatalf("processes: %v", err)
	}

	if _, err := mc.LoadAvg(ctx, &emptypb.Empty{}); err != nil {
		t.Fatal(err)
	}

	st, err := mc.SystemStat(ctx, &emptypb.Empty{})
	if err != nil || st.GetMessages()[0].GetBootTime() == 0 || len(st.GetMessages()[0].GetCpu()) == 0 {
		t.Fatalf("stat %v %v", st, err)
	}

	// Dmesg works where /dev/kmsg is readable, and says why not elsewhere.
	dm, err := mc.Dmesg(ctx, &machine.DmesgRequest{})
	if err == nil {
		var out []byte

		out, err = readAll(t, dm)
		if err == nil && !bytes.HasPrefix(out, []byte("[")) {
			t.Fatalf("dmesg %q", out[:min(len(out), 100)])
		}
	}

	if err != nil {
		wantCode(t, err, codes.Unavailable, "/dev/kmsg")
	}
}

func TestLogsAndEvents(t *testing.T) {
	ctx := testCtx(t)
	mc := machineClient(dial(t, shared.addr, clientCert(t, string(role.Reader))))

	logs, err := mc.Logs(ctx, &machine.LogsRequest{Id: "machined", TailLines: 3})
	if err != nil {
		t.Fatal(err)
	}

	out, err := readAll(t, logs)
	if err != nil || bytes.Count(out, []byte("\n")) != 3 {
		t.Fatalf("3 lines of machined's log: %q %v", out, err)
	}

	logs, err = mc.Logs(ctx, &machine.LogsRequest{Id: "nope"})
	if err == nil {
		_, err = logs.Recv()
	}

	wantCode(t, err, codes.NotFound, `"nope"`)

	// Events: the boot is in the tail, and new ones follow.
	ev, err := mc.Events(ctx, &machine.EventsRequest{TailEvents: -1})
	if err != nil {
		t.Fatal(err)
	}

	types := map[string]bool{}

	for !types["machine.ServiceStateEvent"] || !types["machine.TaskEvent"] {
		e, err := ev.Recv()
		if err != nil {
			t.Fatal(err)
		}

		if e.GetMetadata().GetHostname() != "node-a" || e.GetId() == "" {
			t.Fatalf("event %v", e)
		}

		types[e.GetType()] = true
	}

	shared.ring.Publish("test.Event", "hello", nil)

	for {
		e, err := ev.Recv()
		if err != nil {
			t.Fatal(err)
		}

		if e.GetType() == "test.Event" && e.GetMessage() == "hello" {
			break
		}
	}
}

func TestFiles(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()

	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}

	for name, body := range map[string]string{"top.txt": "top", "a/mid.txt": "middle", "a/b/deep.txt": "deep"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	if err := os.Symlink("top.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}

	admin := machineClient(dial(t, shared.addr, clientCert(t, string(role.Admin))))
	reader := machineClient(dial(t, shared.addr, clientCert(t, string(role.Reader))))

	list := func(req *machine.ListRequest) []string {
		s, err := reader.List(ctx, req)
		if err != nil {
			t.Fatal(err)
		}

		var names []string

		for {
			fi, err := s.Recv()
			if errors.Is(err, io.EOF) {
				return names
			}

			if err != nil {
				t.Fatal(err)
			}

			n := fi.GetRelativeName()
			if fi.GetLink() != "" {
				n += "->" + fi.GetLink()
			}

			names = append(names, n)
		}
	}

	if got := strings.Join(list(&machine.ListRequest{Root: dir}), " "); got != ". a link->top.txt top.txt" {
		t.Fatalf("ls: %s", got)
	}

	if got := strings.Join(list(&machine.ListRequest{Root: dir, Recurse: true, RecursionDepth: 2}), " "); got != ". a a/b a/mid.txt link->top.txt top.txt" {
		t.Fatalf("ls -d 2: %s", got)
	}

	if got := len(list(&machine.ListRequest{Root: dir, Recurse: true})); got != 7 {
		t.Fatalf("ls -r: %d entries", got)
	}

	rs, err := admin.Read(ctx, &machine.ReadRequest{Path: filepath.Join(dir, "a/b/deep.txt")})
	if err != nil {
		t.Fatal(err)
	}

	if out, err := readAll(t, rs); err != nil || string(out) != "deep" {
		t.Fatalf("read %q %v", out, err)
	}

	// The docs' path of the config reads it in container mode too, where
	// STATE is a directory of the state volume.
	rs, err = admin.Read(ctx, &machine.ReadRequest{Path: "/system/state/config.yaml"})
	if err != nil {
		t.Fatal(err)
	}

	if out, err := readAll(t, rs); err != nil || !strings.Contains(string(out), "machine:") {
		t.Fatalf("read /system/state/config.yaml: %v\n%.200s", err, out)
	}

	for path, code := range map[string]codes.Code{dir: codes.InvalidArgument, "/dev/null": codes.InvalidArgument, "relative": codes.InvalidArgument, filepath.Join(dir, "missing"): codes.NotFound} {
		rs, err := admin.Read(ctx, &machine.ReadRequest{Path: path})
		if err == nil {
			_, err = readAll(t, rs)
		}

		wantCode(t, err, code, "")
	}

	cs, err := admin.Copy(ctx, &machine.CopyRequest{RootPath: filepath.Join(dir, "a")})
	if err != nil {
		t.Fatal(err)
	}

	archive, err := readAll(t, cs)
	if err != nil {
		t.Fatal(err)
	}

	tr := tar.NewReader(bytes.NewReader(archive))
	got := map[string]string{}

	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}

		if err != nil {
			t.Fatal(err)
		}

		body, _ := io.ReadAll(tr)
		got[h.Name] = string(body)
	}

	if got["a/mid.txt"] != "middle" || got["a/b/deep.txt"] != "deep" || len(got) != 4 {
		t.Fatalf("tar: %v", got)
	}
}

func TestApplyConfigurationModes(t *testing.T) {
	ctx := testCtx(t)
	mc := machineClient(dial(t, shared.addr, clientCert(t, string(role.Admin))))
	cur := shared.node.ActiveConfig()

	// A dry run returns the diff and changes nothing.
	next := nodeConfig(t, false, hostname("node-a"), "machine: {certSANs: [dry.example]}")

	res, err := mc.ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{Data: next, Mode: machine.ApplyConfigurationRequest_NO_REBOOT, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}

	if d := res.GetMessages()[0].GetModeDetails(); !strings.HasPrefix(d, "Dry run summary:\n") || !strings.HasSuffix(d, "\n\nConfig diff:\n\n+ machine.certSANs: [dry.example]\n") {
		t.Fatalf("dry run: %s", d)
	}

	// The running config with a comment on top: no changes, no diff.
	res, err = mc.ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{Data: append([]byte("# the same config\n"), cur...), Mode: machine.ApplyConfigurationRequest_REBOOT, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}

	if d := res.GetMessages()[0].GetModeDetails(); d != "Dry run summary:\nNo changes: the node already runs this configuration." || res.GetMessages()[0].GetMode() != machine.ApplyConfigurationRequest_NO_REBOOT {
		t.Fatalf("dry run of the running config: %v %s", res.GetMessages()[0].GetMode(), d)
	}

	if !bytes.Equal(shared.node.ActiveConfig(), cur) {
		t.Fatal("a dry run changed the config")
	}

	// A field that needs a reboot is refused in no-reboot mode.
	_, err = mc.ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{
		Data: nodeConfig(t, false, hostname("node-a"), "machine: {env: {A: b}}"),
		Mode: machine.ApplyConfigurationRequest_NO_REBOOT,
	})
	wantCode(t, err, codes.FailedPrecondition, "machine.env")

	_, err = mc.ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{Data: []byte("not: [yaml"), Mode: machine.ApplyConfigurationRequest_TRY, TryModeTimeout: durationpb.New(0)})
	wantCode(t, err, codes.InvalidArgument, "")
}

func TestGenerateClientConfiguration(t *testing.T) {
	ctx := testCtx(t)
	mc := machineClient(dial(t, shared.addr, clientCert(t, string(role.Admin))))

	res, err := mc.GenerateClientConfiguration(ctx, &machine.GenerateClientConfigurationRequest{Roles: []string{string(role.Reader)}})
	if err != nil {
		t.Fatal(err)
	}

	msg := res.GetMessages()[0]

	crt, err := pki.ParseCertificatePEM(msg.GetCrt())
	if err != nil {
		t.Fatal(err)
	}

	if !slices.Equal(crt.Subject.Organization, []string{string(role.Reader)}) || !slices.Equal(crt.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) {
		t.Fatalf("certificate %v %v", crt.Subject, crt.ExtKeyUsage)
	}

	if life := crt.NotAfter.Sub(crt.NotBefore); life < pki.ClientCertValidity {
		t.Fatalf("lifetime %s", life)
	}

	tc, err := talosconfig.Parse(msg.GetTalosconfig())
	if err != nil || tc.Context != "test" {
		t.Fatalf("talosconfig %v %v", tc, err)
	}

	// The certificate works, as a reader.
	rc := resourceClient(dial(t, shared.addr, &pki.CertAndKey{Crt: msg.GetCrt(), Key: msg.GetKey()}))

	got, err := rc.Get(ctx, &resource.GetRequest{Type: "mc", Id: "v1alpha1"})
	if err != nil || !got.GetResource().GetRedacted() {
		t.Fatalf("as the new reader: %v %v", got, err)
	}

	for _, roles := range [][]string{{"os:impersonator"}, {"os:root"}} {
		_, err = mc.GenerateClientConfiguration(ctx, &machine.GenerateClientConfigurationRequest{Roles: roles})
		wantCode(t, err, codes.InvalidArgument, roles[0])
	}

	// This apid has no control plane wired in: no etcd to bootstrap.
	_, err = mc.Bootstrap(ctx, &machine.BootstrapRequest{})
	wantCode(t, err, codes.FailedPrecondition, "control plane")

	_, err = mc.EtcdMemberList(ctx, &machine.EtcdMemberListRequest{})
	wantCode(t, err, codes.FailedPrecondition, "worker")
}

func TestResourceListWatchDefinitions(t *testing.T) {
	ctx := testCtx(t)
	admin := dial(t, shared.addr, clientCert(t, string(role.Admin)))
	rc := resourceClient(admin)

	defs, err := rc.Definitions(ctx, &emptypb.Empty{})
	if err != nil || len(defs.GetDefinitions()) < 4 {
		t.Fatalf("definitions %v %v", defs, err)
	}

	ls, err := rc.List(ctx, &resource.ListRequest{Type: "svc"})
	if err != nil {
		t.Fatal(err)
	}

	first, err := ls.Recv()
	if err != nil || first.GetDefinition().GetType() != "Services.v1alpha1.talos.dev" || !bytes.Contains(first.GetResource().GetSpecYaml(), []byte("state:")) {
		t.Fatalf("list %v %v", first, err)
	}

	ws, err := rc.Watch(ctx, &resource.WatchRequest{Type: "svc", Id: "timed"})
	if err != nil {
		t.Fatal(err)
	}

	for _, want := range []resource.WatchResponse_EventType{resource.WatchResponse_CREATED, resource.WatchResponse_BOOTSTRAPPED} {
		ev, err := ws.Recv()
		if err != nil || ev.GetEventType() != want {
			t.Fatalf("watch: %v %v, want %v", ev, err, want)
		}
	}

	// A restart of the service shows up as updates (timed is Skipped in
	// container mode; a restart runs it through Starting to Skipped again).
	if _, err := machineClient(admin).ServiceRestart(ctx, &machine.ServiceRestartRequest{Id: "timed"}); err != nil {
		t.Fatal(err)
	}

	ev, err := ws.Recv()
	if err != nil || ev.GetEventType() != resource.WatchResponse_UPDATED || ev.GetResource().GetMetadata().GetId() != "timed" {
		t.Fatalf("watch update: %v %v", ev, err)
	}
}

// TestCoreServicesCannotBeStoppedOverTheAPI: stopping or restarting the
// services the API runs on would cut every later call off for good.
func TestCoreServicesCannotBeStoppedOverTheAPI(t *testing.T) {
	mc := machineClient(dial(t, shared.addr, clientCert(t, "os:admin")))
	ctx := testCtx(t)

	for _, id := range []string{"apid", "machined"} {
		_, err := mc.ServiceStop(ctx, &machine.ServiceStopRequest{Id: id})
		wantCode(t, err, codes.FailedPrecondition, fmt.Sprintf("service %q doesn't support stop via API", id))

		_, err = mc.ServiceRestart(ctx, &machine.ServiceRestartRequest{Id: id})
		wantCode(t, err, codes.FailedPrecondition, fmt.Sprintf("service %q doesn't support restart via API", id))
	}

	// The API still answers.
	if _, err := mc.Version(ctx, &emptypb.Empty{}); err != nil {
		t.Fatal(err)
	}
}

// TestControllerRuntimeLog: the docs' first debugging step, talosctl logs
// controller-runtime, reads the controllers' own log.
func TestControllerRuntimeLog(t *testing.T) {
	ctx := testCtx(t)
	reader := machineClient(dial(t, shared.addr, clientCert(t, string(role.Reader))))

	rs, err := reader.Logs(ctx, &machine.LogsRequest{Id: "controller-runtime", TailLines: -1})
	if err != nil {
		t.Fatal(err)
	}

	out, err := readAll(t, rs)
	if err != nil || !strings.Contains(string(out), "controller starting") || !strings.Contains(string(out), "runtime.MachineStatusController") {
		t.Fatalf("logs controller-runtime: %v\n%.500s", err, out)
	}
}
