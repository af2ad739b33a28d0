package machine_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/machine"
	"github.com/talosbox/talosbox/internal/meta"
	"github.com/talosbox/talosbox/internal/meta/metatest"
	"github.com/talosbox/talosbox/internal/resources/runtime"
)

func metaKeys(t *testing.T, n *testNode) map[string]string {
	t.Helper()

	keys, err := bus.ListAs[*runtime.MetaKey](context.Background(), n.Store(), bus.Kind{Namespace: runtime.NamespaceRuntime, Type: runtime.MetaKeyType})
	if err != nil {
		t.Fatal(err)
	}

	out := map[string]string{}
	for _, k := range keys {
		out[k.Metadata().ID] = k.TypedSpec().Value
	}

	return out
}

// A node with META mirrors its tags, repairs a bad copy at boot, and its
// writes and deletes reach both the partition and the resources.
func TestMetaOnTheNode(t *testing.T) {
	const encryption = `{"provider":"luks2","keys":[{"slot":0,"static":{"passphrase":"s3cret"}}]}`

	path, img := metatest.Image(t, map[uint8]string{meta.Upgrade: "A", meta.StateEncryptionConfig: encryption})

	// Copy 2 rots.
	img[meta.CopySize+20] ^= 0xff
	if err := os.WriteFile(path, img, 0o600); err != nil {
		t.Fatal(err)
	}

	n := startNodeWith(t, "", nil, func(o *machine.Options) { o.MetaPath = path })
	waitStage(t, n, runtime.StageMaintenance)

	for _, want := range []string{"META on " + path + ": repaired copy 2: checksum", "META on " + path + ": 2 key(s)"} {
		if !strings.Contains(n.console.String(), want) {
			t.Fatalf("console lacks %q:\n%s", want, n.console.String())
		}
	}

	if m, err := meta.Open(path); err != nil || len(m.Damaged()) != 0 {
		t.Fatalf("after boot: damaged %v, %v", m.Damaged(), err)
	}

	if got := metaKeys(t, n); len(got) != 2 || got["0x06"] != "A" || got["0x09"] != encryption {
		t.Fatalf("MetaKeys %q", got)
	}

	ctx := context.Background()

	if err := n.MetaWrite(ctx, meta.UserReserved1, []byte("hello")); err != nil {
		t.Fatal(err)
	}

	if found, err := n.MetaDelete(ctx, meta.Upgrade); err != nil || !found {
		t.Fatalf("delete 0x06: %v %v", found, err)
	}

	if found, err := n.MetaDelete(ctx, meta.Upgrade); err != nil || found {
		t.Fatalf("second delete 0x06: %v %v", found, err)
	}

	// The resources follow synchronously, and the partition holds the same.
	if got := metaKeys(t, n); len(got) != 2 || got["0x0c"] != "hello" || got["0x09"] != encryption {
		t.Fatalf("MetaKeys after write and delete %q", got)
	}

	m, err := meta.Open(path)
	if err != nil {
		t.Fatal(err)
	}

	if v, _ := m.ReadTag(meta.UserReserved1); string(v) != "hello" || len(m.List()) != 2 {
		t.Fatalf("partition holds %v", m.List())
	}

	if err := n.MetaWrite(ctx, 0, []byte("x")); !errors.Is(err, meta.ErrInvalidTag) {
		t.Fatalf("tag 0: %v", err)
	}

	if err := n.MetaWrite(ctx, meta.UserReserved2, make([]byte, meta.CopySize)); !errors.Is(err, meta.ErrOverflow) {
		t.Fatalf("overflow: %v", err)
	}

	if _, ok := metaKeys(t, n)["0x0d"]; ok {
		t.Fatal("a refused value was published")
	}
}

// The secret tags are masked for readers; the others read as they are.
func TestMetaKeyRedaction(t *testing.T) {
	path, _ := metatest.Image(t, map[uint8]string{meta.StateEncryptionConfig: "s3cret", meta.UniqueMachineToken: "token", meta.UserReserved3: "plain"})

	n := startNodeWith(t, "", nil, func(o *machine.Options) { o.MetaPath = path })
	waitStage(t, n, runtime.StageMaintenance)

	keys, err := bus.ListAs[*runtime.MetaKey](context.Background(), n.Store(), bus.Kind{Namespace: runtime.NamespaceRuntime, Type: runtime.MetaKeyType})
	if err != nil {
		t.Fatal(err)
	}

	def, ok := n.Registry().Get(runtime.MetaKeyType)
	if !ok || !def.Sensitive || def.DefaultNamespace != runtime.NamespaceRuntime || def.PrintColumns[0].Name != "VALUE" {
		t.Fatalf("definition %+v", def)
	}

	want := map[string]string{"0x09": "value: '******'\n", "0x10": "value: '******'\n", "0x0e": "value: plain\n"}

	for _, k := range keys {
		y, err := k.TypedSpec().RedactedYAML()
		if err != nil {
			t.Fatal(err)
		}

		if string(y) != want[k.Metadata().ID] {
			t.Errorf("%s redacted as %q, want %q", k.Metadata().ID, y, want[k.Metadata().ID])
		}
	}
}

// Two bad copies do not stop the boot; every META call then says why, and
// the partition is left as it is.
func TestMetaCorruptIsAnError(t *testing.T) {
	path, img := metatest.Image(t, map[uint8]string{meta.Upgrade: "A"})
	img[20] ^= 0xff
	img[meta.CopySize+20] ^= 0xff

	if err := os.WriteFile(path, img, 0o600); err != nil {
		t.Fatal(err)
	}

	n := startNodeWith(t, "", nil, func(o *machine.Options) { o.MetaPath = path })
	waitStage(t, n, runtime.StageMaintenance)

	if !strings.Contains(n.console.String(), "META on "+path+" cannot be used: META on "+path+": META is corrupt: no good copy") {
		t.Fatalf("console:\n%s", n.console.String())
	}

	if err := n.MetaWrite(context.Background(), meta.Upgrade, []byte("B")); !errors.Is(err, meta.ErrCorrupt) {
		t.Fatalf("write to a corrupt META: %v", err)
	}

	if got, _ := os.ReadFile(path); !bytes.Equal(got, img) {
		t.Fatal("a corrupt META was written to")
	}

	if len(metaKeys(t, n)) != 0 {
		t.Fatal("keys published from a corrupt META")
	}
}

// A container node has no META: the calls say so, naming why.
func TestNoMetaInContainer(t *testing.T) {
	n := startNode(t, "", nil)
	waitStage(t, n, runtime.StageMaintenance)

	err := n.MetaWrite(context.Background(), meta.UserReserved1, []byte("x"))
	if !errors.Is(err, machine.ErrNoMeta) || !strings.Contains(err.Error(), "this node has no META partition: it runs in a container") {
		t.Fatalf("MetaWrite: %v", err)
	}

	if _, err := n.MetaDelete(context.Background(), meta.UserReserved1); !errors.Is(err, machine.ErrNoMeta) {
		t.Fatalf("MetaDelete: %v", err)
	}
}
