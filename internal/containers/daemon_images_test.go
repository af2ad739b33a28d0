package containers

import (
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/pkg/namespaces"

	"github.com/talosbox/talosbox/internal/containers/containerdtest"
)

// TestPullThroughMirror pulls an image of a registry that does not exist
// (example.test) from the mirror its hosts.toml names, then lists it.
func TestPullThroughMirror(t *testing.T) {
	sock := containerdtest.Start(t, containerdtest.Options{})
	mirrorHost := containerdtest.Registry(t, "test/hello:v1")
	hosts := t.TempDir()
	containerdtest.MirrorOnly(t, hosts, "example.test", "http://"+mirrorHost)

	img, err := Pull(t.Context(), sock, K8sNamespace, "example.test/test/hello:v1", hosts)
	if err != nil {
		t.Fatal(err)
	}

	if img.Name != "example.test/test/hello:v1" || !strings.HasPrefix(img.Digest, "sha256:") || img.Size <= 0 {
		t.Errorf("pulled %+v", img)
	}

	list, err := Images(t.Context(), sock, K8sNamespace)
	if err != nil {
		t.Fatal(err)
	}

	// The tag and the CRI's aliases: name@digest and the image ID.
	var names []string
	for _, i := range list {
		names = append(names, i.Name)

		if i.Digest != img.Digest || i.Size != img.Size {
			t.Errorf("listed %+v, pulled %+v", i, img)
		}
	}

	if len(names) != 3 || names[0] != "example.test/test/hello:v1" || names[1] != "example.test/test/hello@"+img.Digest || !isDigestName(names[2]) {
		t.Errorf("images %q: want the tag, name@digest and the ID", names)
	}

	// Unpacked: the CRI can run it without pulling.
	c := containerdtest.Connect(t, sock)
	ctx := namespaces.WithNamespace(t.Context(), K8sNamespace)

	i, err := c.GetImage(ctx, img.Name)
	if err != nil {
		t.Fatal(err)
	}

	if ok, err := i.IsUnpacked(ctx, "overlayfs"); !ok || err != nil {
		t.Errorf("IsUnpacked = %t, %v", ok, err)
	}

	// The system namespace is another store.
	if list, err := Images(t.Context(), sock, SystemNamespace); err != nil || len(list) != 0 {
		t.Errorf("Images(system) = %+v, %v; want none", list, err)
	}

	// Pulling again is a no-op that succeeds.
	if _, err := Pull(t.Context(), sock, K8sNamespace, "example.test/test/hello:v1", hosts); err != nil {
		t.Errorf("second pull: %v", err)
	}
}

// TestPullErrorsNameTheMirror: whatever goes wrong, the error says which
// endpoint was asked, so a wrong mirror config can be told from a
// missing image.
func TestPullErrorsNameTheMirror(t *testing.T) {
	sock := containerdtest.Start(t, containerdtest.Options{})
	mirrorHost := containerdtest.Registry(t, "test/hello:v1")
	down := closedPort(t)

	tests := []struct {
		name     string
		endpoint string
		ref      string
		notFound bool
	}{
		{name: "not on the mirror", endpoint: "http://" + mirrorHost, ref: "example.test/test/absent:v1", notFound: true},
		{name: "mirror down", endpoint: "http://" + down, ref: "example.test/test/hello:v1"},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hosts := t.TempDir()
			containerdtest.MirrorOnly(t, hosts, "example.test", tt.endpoint)

			_, err := Pull(t.Context(), sock, SystemNamespace, tt.ref, hosts)
			if err == nil {
				t.Fatal("pulled")
			}

			if !strings.Contains(err.Error(), tt.endpoint) {
				t.Errorf("error %q does not name %s", err, tt.endpoint)
			}

			if got := errors.Is(err, ErrNotFound); got != tt.notFound {
				t.Errorf("error %q: not found = %t, want %t", err, got, tt.notFound)
			}
		})
	}

	if _, err := Pull(t.Context(), sock, SystemNamespace, "Not A Ref", ""); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad reference: %v, want ErrInvalid", err)
	}
}

// closedPort is an address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}

	addr := l.Addr().String()
	l.Close()

	return addr
}
