package apid

import (
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/api/resource"
	"github.com/talosbox/talosbox/internal/bus"
	imachine "github.com/talosbox/talosbox/internal/machine"
	"github.com/talosbox/talosbox/internal/meta"
	"github.com/talosbox/talosbox/internal/meta/metatest"
	"github.com/talosbox/talosbox/internal/resources/runtime"
	"github.com/talosbox/talosbox/internal/role"
)

// metaEnv runs a node whose META is an image file holding tags.
func metaEnv(t *testing.T, config []byte, tags map[uint8]string) (*env, string) {
	t.Helper()

	path, _ := metatest.Image(t, tags)

	e, err := startEnv(t.TempDir(), config, "127.0.0.1:0", func(o *imachine.Options) { o.MetaPath = path })
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() {
		if err := e.stop(); err != nil {
			t.Errorf("stop: %v", err)
		}

		if t.Failed() {
			t.Logf("console:\n%s", e.console.String())
		}
	})

	e.waitServing(t, config == nil)

	return e, path
}

func metaOnDisk(t *testing.T, path string, tag uint8) (string, bool) {
	t.Helper()

	m, err := meta.Open(path)
	if err != nil {
		t.Fatal(err)
	}

	v, ok := m.ReadTag(tag)

	return string(v), ok
}

// Writes and deletes reach the partition and the MetaKeys resource before
// the call answers; each failure has its own code.
func TestMetaWriteDelete(t *testing.T) {
	e, path := metaEnv(t, nodeConfig(t, false, hostname("node-m")), map[uint8]string{meta.Upgrade: "A"})
	ctx := testCtx(t)
	mc := machineClient(dial(t, e.addr, clientCert(t, string(role.Admin))))

	resp, err := mc.MetaWrite(ctx, &machine.MetaWriteRequest{Key: 0x0c, Value: []byte("hello")})
	if err != nil {
		t.Fatal(err)
	}

	if got := resp.GetMessages()[0].GetMetadata().GetHostname(); got != "node-m" {
		t.Fatalf("reply stamped %q", got)
	}

	if v, ok := metaOnDisk(t, path, 0x0c); !ok || v != "hello" {
		t.Fatalf("partition holds 0x0c = %q %v", v, ok)
	}

	key, err := bus.GetAs[*runtime.MetaKey](ctx, e.node.Store(), bus.Pointer{Namespace: runtime.NamespaceRuntime, Type: runtime.MetaKeyType, ID: "0x0c"})
	if err != nil || key.TypedSpec().Value != "hello" {
		t.Fatalf("MetaKeys 0x0c: %v %v", key, err)
	}

	if _, err := mc.MetaDelete(ctx, &machine.MetaDeleteRequest{Key: 0x06}); err != nil {
		t.Fatal(err)
	}

	if _, ok := metaOnDisk(t, path, 0x06); ok {
		t.Fatal("0x06 still on the partition")
	}

	_, err = mc.MetaDelete(ctx, &machine.MetaDeleteRequest{Key: 0x06})
	wantCode(t, err, codes.NotFound, "meta delete: key 0x06 not found")

	_, err = mc.MetaWrite(ctx, &machine.MetaWriteRequest{Key: 0x106, Value: []byte("x")})
	wantCode(t, err, codes.InvalidArgument, "key 0x106 must be a uint8")

	_, err = mc.MetaWrite(ctx, &machine.MetaWriteRequest{Key: 0, Value: []byte("x")})
	wantCode(t, err, codes.InvalidArgument, "0x00 is the end marker")

	_, err = mc.MetaWrite(ctx, &machine.MetaWriteRequest{Key: 0x0d, Value: make([]byte, meta.CopySize)})
	wantCode(t, err, codes.ResourceExhausted, "set tag 0x0d: META is full")

	// os:meta:writer writes META and nothing else.
	mw := machineClient(dial(t, e.addr, clientCert(t, string(role.MetaWriter))))
	if _, err := mw.MetaWrite(ctx, &machine.MetaWriteRequest{Key: 0x0e, Value: []byte("w")}); err != nil {
		t.Fatal(err)
	}

	_, err = mw.ServiceList(ctx, nil)
	wantCode(t, err, codes.PermissionDenied, "os:meta:writer")
}

// Readers and operators are refused both calls before any handler runs;
// the secret tags reach a reader masked.
func TestMetaRoles(t *testing.T) {
	e, path := metaEnv(t, nodeConfig(t, false), map[uint8]string{meta.StateEncryptionConfig: `{"passphrase":"s3cret"}`, meta.UserReserved1: "plain"})
	ctx := testCtx(t)

	for _, role := range []role.Role{role.Reader, role.Operator, role.EtcdBackup} {
		cc := dial(t, e.addr, clientCert(t, string(role)))
		mc := machineClient(cc)

		_, err := mc.MetaWrite(ctx, &machine.MetaWriteRequest{Key: 0x0c, Value: []byte("x")})
		wantCode(t, err, codes.PermissionDenied, "it needs one of [os:admin os:meta:writer], the caller has ["+string(role)+"]")

		_, err = mc.MetaDelete(ctx, &machine.MetaDeleteRequest{Key: 0x0c})
		wantCode(t, err, codes.PermissionDenied, string(role))
	}

	if v, _ := metaOnDisk(t, path, 0x0c); v != "plain" {
		t.Fatalf("0x0c = %q after refused calls", v)
	}

	rc := resourceClient(dial(t, e.addr, clientCert(t, string(role.Reader))))

	for id, want := range map[string]string{"0x09": "value: '******'\n", "0x0c": "value: plain\n"} {
		resp, err := rc.Get(ctx, &resource.GetRequest{Namespace: "runtime", Type: "meta", Id: id})
		if err != nil {
			t.Fatal(err)
		}

		if got := string(resp.GetResource().GetSpecYaml()); got != want {
			t.Errorf("reader sees %s as %q, want %q", id, got, want)
		}
	}
}

// Without a META partition the calls say why; maintenance mode does not
// serve them (Talos grants them there to SideroLink peers only).
func TestMetaUnavailable(t *testing.T) {
	ctx := testCtx(t)

	admin := machineClient(dial(t, shared.addr, clientCert(t, string(role.Admin))))
	_, err := admin.MetaWrite(ctx, &machine.MetaWriteRequest{Key: 0x0c, Value: []byte("x")})
	wantCode(t, err, codes.FailedPrecondition, "meta write: this node has no META partition: it runs in a container")

	_, err = admin.MetaDelete(ctx, &machine.MetaDeleteRequest{Key: 0x0c})
	wantCode(t, err, codes.FailedPrecondition, "meta delete: this node has no META partition")

	e, _ := metaEnv(t, nil, nil)
	_, err = machineClient(dialInsecure(t, e.addr)).MetaWrite(ctx, &machine.MetaWriteRequest{Key: 0x0c, Value: []byte("x")})
	wantCode(t, err, codes.PermissionDenied, "maintenance mode")
}
