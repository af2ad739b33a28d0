package apid

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/api/resource"
	"github.com/talosbox/talosbox/internal/role"
)

// rawCodec sends bytes as they are, under the proto name, so the server
// decodes them as a request: how a broken or hostile client looks.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	b, ok := v.([]byte)
	if !ok {
		return nil, fmt.Errorf("rawCodec: %T", v)
	}

	return b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	p, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("rawCodec: %T", v)
	}

	*p = append((*p)[:0], data...)

	return nil
}

func (rawCodec) Name() string { return "proto" }

func TestOversizedRequests(t *testing.T) {
	ctx := testCtx(t)
	mc := machineClient(dial(t, shared.addr, clientCert(t, string(role.Admin))))

	big := strings.Repeat("x", MaxRequestSize+1)

	_, err := mc.ServiceStart(ctx, &machine.ServiceStartRequest{Id: big})
	wantCode(t, err, codes.ResourceExhausted, "larger than")

	// A stream's request is held to the same cap.
	rs, err := mc.Read(ctx, &machine.ReadRequest{Path: "/" + big})
	if err == nil {
		_, err = rs.Recv()
	}

	wantCode(t, err, codes.ResourceExhausted, "larger than")

	// ApplyConfiguration may be larger, up to the transport's limit...
	_, err = mc.ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{Data: []byte("# " + big + "\n"), DryRun: true})
	wantCode(t, err, codes.InvalidArgument, "")

	// ...beyond which the transport refuses it unread.
	_, err = mc.ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{Data: make([]byte, MaxApplyConfigSize+1)},
		grpc.MaxCallSendMsgSize(2*MaxApplyConfigSize))
	wantCode(t, err, codes.ResourceExhausted, "larger than max")

	// The connection survives all of it.
	if _, err := mc.Version(ctx, &emptypb.Empty{}); err != nil {
		t.Fatal(err)
	}
}

func TestGarbageRequests(t *testing.T) {
	ctx := testCtx(t)
	cc := dial(t, shared.addr, clientCert(t, string(role.Admin)))

	garbage := map[string][]byte{
		"truncated length":   {0x0a, 0x10, 'a'},
		"truncated varint":   {0x0a, 0xff, 0xff},
		"invalid wire type":  {0x0f},
		"field number zero":  {0x00, 0x01},
		"bad utf-8 in field": {0x0a, 0x02, 0xff, 0xfe},
	}

	for name, body := range garbage {
		t.Run(name, func(t *testing.T) {
			var out []byte

			err := cc.Invoke(ctx, machine.MachineService_ServiceStart_FullMethodName, body, &out, grpc.ForceCodec(rawCodec{}))

			// gRPC reports undecodable requests as Internal; what matters
			// is a clean status, no handler run, and a live connection.
			if st, _ := status.FromError(err); st.Code() != codes.Internal || !strings.Contains(st.Message(), "unmarshal") {
				t.Fatalf("got %v", err)
			}
		})
	}

	if _, err := machineClient(cc).Version(ctx, &emptypb.Empty{}); err != nil {
		t.Fatal(err)
	}
}

func TestUnknownResourceType(t *testing.T) {
	ctx := testCtx(t)
	rc := resourceClient(dial(t, shared.addr, clientCert(t, string(role.Reader))))

	_, err := rc.Get(ctx, &resource.GetRequest{Type: "foo", Id: "x"})
	wantCode(t, err, codes.NotFound, `resource type "foo" not found`)

	_, err = rc.Get(ctx, &resource.GetRequest{Type: "servics", Id: "x"})
	wantCode(t, err, codes.NotFound, `did you mean "Services.v1alpha1.talos.dev"`)

	ls, err := rc.List(ctx, &resource.ListRequest{Type: "machinestatu"})
	if err == nil {
		_, err = ls.Recv()
	}

	// The closest name comes first.
	wantCode(t, err, codes.NotFound, `did you mean "MachineStatuses.runtime.talos.dev" or "MachineStages.runtime.talos.dev"?`)

	_, err = rc.Get(ctx, &resource.GetRequest{Type: "svc", Id: "nope"})
	wantCode(t, err, codes.NotFound, "nope")

	ls, err = rc.List(ctx, &resource.ListRequest{Type: "svc", LabelSelector: "a in (b"})
	if err == nil {
		_, err = ls.Recv()
	}

	wantCode(t, err, codes.InvalidArgument, "label selector")
}
