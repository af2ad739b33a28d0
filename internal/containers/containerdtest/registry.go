package containerdtest

import (
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Registry serves an in-memory registry holding one small image for this
// platform at each of repos ("test/hello:v1"), and returns its host:port.
// It is closed with the test.
func Registry(t testing.TB, repos ...string) string {
	t.Helper()

	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)

	img := Image(t, map[string][]byte{"hello.txt": []byte("hello\n")})

	host := strings.TrimPrefix(srv.URL, "http://")

	for _, repo := range repos {
		ref, err := name.ParseReference(host + "/" + repo)
		if err != nil {
			t.Fatal(err)
		}

		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
	}

	return host
}

// Image is a one-layer image for this platform holding files, which a
// containerd here unpacks (crane's images name no platform).
func Image(t testing.TB, files map[string][]byte) v1.Image {
	t.Helper()

	img, err := crane.Image(files)
	if err != nil {
		t.Fatal(err)
	}

	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}

	cfg.OS, cfg.Architecture = runtime.GOOS, runtime.GOARCH

	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		t.Fatal(err)
	}

	return img
}

// MirrorOnly writes <hostsDir>/<registry>/hosts.toml sending the
// registry's pulls to endpoint alone: how machined renders a mirror with
// skipFallback (the mirror is also the server, there is no upstream).
func MirrorOnly(t testing.TB, hostsDir, registry, endpoint string) {
	t.Helper()

	toml := fmt.Sprintf("server = %q\n\n[host.%q]\ncapabilities = [\"pull\", \"resolve\"]\n", endpoint, endpoint)

	if err := os.MkdirAll(filepath.Join(hostsDir, registry), 0o755); err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(filepath.Join(hostsDir, registry, "hosts.toml"), []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
}
