package apid

import (
	"errors"
	"io"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/api/resource"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources"
	"github.com/talosbox/talosbox/internal/resources/cluster"
	"github.com/talosbox/talosbox/internal/resources/config"
	"github.com/talosbox/talosbox/internal/resources/cri"
	"github.com/talosbox/talosbox/internal/resources/k8s"
	"github.com/talosbox/talosbox/internal/resources/network"
	"github.com/talosbox/talosbox/internal/resources/runtime"
	"github.com/talosbox/talosbox/internal/resources/secrets"
	"github.com/talosbox/talosbox/internal/resources/v1alpha1"
	"github.com/talosbox/talosbox/internal/role"
)

// TestMaintenanceTypesAreNotSensitive walks every definition a node
// registers: a type in the maintenance list must exist and must not be
// sensitive, so that a type marked sensitive later cannot be served to
// anyone who reaches a node in maintenance mode.
func TestMaintenanceTypesAreNotSensitive(t *testing.T) {
	registered := map[string]bus.Definition{}

	for _, def := range resources.Definitions() {
		registered[def.Type] = def

		if def.Sensitive && maintenanceTypes[def.Type] {
			t.Errorf("%s is sensitive and in maintenanceTypes", def.Type)
		}

		if maintenanceReadable(def) != maintenanceTypes[def.Type] {
			t.Errorf("%s: readable in maintenance %t, listed %t", def.Type, maintenanceReadable(def), maintenanceTypes[def.Type])
		}

		// The mark wins over the list: the same type, marked sensitive.
		marked := def
		marked.Sensitive = true

		if maintenanceReadable(marked) {
			t.Errorf("%s marked sensitive is still readable in maintenance mode", def.Type)
		}
	}

	for typ := range maintenanceTypes {
		if _, ok := registered[typ]; !ok {
			t.Errorf("maintenanceTypes names %s, which is not a registered type", typ)
		}
	}

	// Whatever the marks say, these hold the config, secrets or what
	// derives from them.
	never := []string{
		config.MachineConfigType, runtime.ConfigLoadErrorType, runtime.MetaKeyType, network.LinkSpecType,
		network.OperatorSpecType, cri.RegistriesConfigType, k8s.ManifestType, k8s.KubeletConfigType, k8s.APIServerConfigType,
	}
	for _, def := range secrets.Definitions {
		never = append(never, def.Type)
	}

	for _, typ := range never {
		if maintenanceTypes[typ] {
			t.Errorf("%s is served in maintenance mode", typ)
		}
	}
}

// TestMaintenanceResources reads every registered type without a client
// certificate from a node in maintenance mode: Get, List and Watch serve
// the maintenance types, and refuse every other type naming it.
func TestMaintenanceResources(t *testing.T) {
	e := newEnv(t, nil, "127.0.0.1:0")
	e.waitServing(t, true)

	ctx := testCtx(t)
	rc := resourceClient(dialInsecure(t, e.addr))

	served := 0

	for _, def := range resources.Definitions() {
		t.Run(def.Type, func(t *testing.T) {
			readable := maintenanceTypes[def.Type]
			if readable {
				served++
			}

			for _, call := range []struct {
				name string
				do   func() error
			}{
				{"get", func() error {
					_, err := rc.Get(ctx, &resource.GetRequest{Type: def.Type, Id: "no-such-id"})
					return err
				}},
				{"list", func() error { return firstOf(rc.List(ctx, &resource.ListRequest{Type: def.Type})) }},
				{"watch", func() error { return firstOf(rc.Watch(ctx, &resource.WatchRequest{Type: def.Type})) }},
			} {
				err := call.do()

				switch {
				case readable && call.name == "get":
					wantCode(t, err, codes.NotFound, "")
				case readable && err != nil:
					t.Errorf("%s: %v", call.name, err)
				case !readable:
					wantCode(t, err, codes.PermissionDenied, maintenanceServed+", not "+def.Type)
				}
			}
		})
	}

	if served != len(maintenanceTypes) {
		t.Errorf("%d types served, %d listed", served, len(maintenanceTypes))
	}

	// Aliases resolve to the same refusals.
	for _, alias := range []string{"mc", "machineconfig", "configerror", "meta", "certs", "registries", "manifests"} {
		_, err := rc.Get(ctx, &resource.GetRequest{Type: alias, Id: "x"})
		wantCode(t, err, codes.PermissionDenied, maintenanceServed)
	}
}

// TestMaintenancePublished: the types a node publishes before it has a
// config, whatever machine it runs on, are there to read in maintenance
// mode. (Network, hardware and disk resources depend on the machine:
// the e2e and QEMU tests read them from real ones.)
func TestMaintenancePublished(t *testing.T) {
	e := newEnv(t, nil, "127.0.0.1:0")
	e.waitServing(t, true)
	e.waitStatus(t, "in maintenance", func(s runtime.MachineStatusSpec) bool { return s.Stage == runtime.StageMaintenance })

	ctx := testCtx(t)
	rc := resourceClient(dialInsecure(t, e.addr))

	for _, tc := range []struct {
		typ, id, want string
	}{
		{runtime.MachineStatusType, runtime.MachineID, "stage: maintenance"},
		{runtime.MachineStageType, runtime.MachineID, "stage: maintenance"},
		{v1alpha1.ServiceType, "machined", "state: Running"},
		{runtime.SecurityStateType, runtime.SecurityStateID, "secureBoot: false"},
		{cluster.IdentityType, cluster.IdentityID, "nodeId: "},
	} {
		if !maintenanceTypes[tc.typ] {
			t.Errorf("%s is not in maintenanceTypes", tc.typ)
			continue
		}

		// Services come up on their own schedule: watch until the spec says so.
		ws, err := rc.Watch(ctx, &resource.WatchRequest{Type: tc.typ, Id: tc.id})
		if err != nil {
			t.Fatal(err)
		}

		for {
			ev, err := ws.Recv()
			if err != nil {
				t.Fatalf("%s %s never had %q: %v", tc.typ, tc.id, tc.want, err)
			}

			if strings.Contains(string(ev.GetResource().GetSpecYaml()), tc.want) {
				break
			}
		}
	}
}

// firstOf receives a stream's first message: where a server-streaming
// call's status shows.
func firstOf[T any](s grpc.ServerStreamingClient[T], err error) error {
	if err != nil {
		return err
	}

	if _, err := s.Recv(); err != nil && !errors.Is(err, io.EOF) {
		return err
	}

	return nil
}

func TestMaintenanceMode(t *testing.T) {
	e := newEnv(t, nil, "127.0.0.1:0")
	e.waitServing(t, true)

	ctx := testCtx(t)
	cc := dialInsecure(t, e.addr)
	mc, rc := machineClient(cc), resourceClient(cc)

	v, err := mc.Version(ctx, &emptypb.Empty{})
	if err != nil {
		t.Fatal(err)
	}

	if !v.GetMessages()[0].GetMaintenance() || v.GetMessages()[0].GetPlatform().GetName() != "container" {
		t.Fatalf("version %v", v)
	}

	if _, err := rc.Definitions(ctx, &emptypb.Empty{}); err != nil {
		t.Fatal(err)
	}

	// Every other method is refused, naming itself.
	for method := range methodRoles {
		if maintenanceMethods[method] {
			continue
		}

		wantCode(t, invoke(ctx, cc, method), codes.PermissionDenied, maintenanceServed+", not "+method)
	}

	// A client verifying against the OS CA cannot connect: there is no
	// CA yet, the certificate is self-signed.
	_, err = machineClient(dial(t, e.addr, clientCert(t, string(role.Admin)))).Version(ctx, &emptypb.Empty{})
	wantCode(t, err, codes.Unavailable, "")

	// An invalid config is the caller's error.
	_, err = mc.ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{Data: []byte("version: v1alpha1\nmachine:\n  type: boss\n")})
	wantCode(t, err, codes.InvalidArgument, `unknown machine type "boss"`)

	// A watch from maintenance mode does not hold the node back: it ends
	// when apid restarts with mutual TLS.
	ws, err := rc.Watch(ctx, &resource.WatchRequest{Type: "machinestatus"})
	if err != nil {
		t.Fatal(err)
	}

	// apply-config --insecure: no client certificate.
	resp, err := mc.ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{
		Data: nodeConfig(t, false, hostname("node-m")),
		Mode: machine.ApplyConfigurationRequest_AUTO,
	})
	if err != nil {
		t.Fatal(err)
	}

	if !strings.Contains(resp.GetMessages()[0].GetModeDetails(), "leaving maintenance mode") {
		t.Fatalf("apply: %v", resp)
	}

	// The node leaves maintenance mode and apid restarts with mTLS.
	e.waitServing(t, false)

	for {
		_, err := ws.Recv()
		if err == nil {
			continue
		}

		if status.Code(err) == codes.DeadlineExceeded {
			t.Fatalf("the maintenance watch did not end with the mode: %v", err)
		}

		break
	}

	v, err = machineClient(dial(t, e.addr, clientCert(t, string(role.Reader)))).Version(ctx, &emptypb.Empty{})
	if err != nil {
		t.Fatal(err)
	}

	if v.GetMessages()[0].GetMaintenance() || v.GetMessages()[0].GetMetadata().GetHostname() != "node-m" {
		t.Fatalf("version after apply: %v", v)
	}

	_, err = machineClient(dialInsecure(t, e.addr)).Version(ctx, &emptypb.Empty{})
	wantCode(t, err, codes.Unavailable, "")
}
