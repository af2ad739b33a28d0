package registry_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/talosbox/talosbox/internal/imagestore"
	"github.com/talosbox/talosbox/internal/registry"
)

// fixture is a layout of random images under the names the server must
// resolve, served over real HTTP.
type fixture struct {
	dir    string
	store  *imagestore.Store
	images map[string]v1.Image
	srv    *httptest.Server
	host   string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()

	f := &fixture{dir: t.TempDir(), images: map[string]v1.Image{}}

	var named []imagestore.Named

	for i, ref := range []string{
		"registry.k8s.io/pause:3.10",
		"ghcr.io/siderolabs/kubelet:v1.34.12",
		"docker.io/library/busybox:1",
		"a.example/dup:1",
		"b.example/dup:1",
	} {
		img, err := random.Image(int64(1024*(i+1)), 2)
		if err != nil {
			t.Fatal(err)
		}

		f.images[ref] = img
		named = append(named, imagestore.Named{Ref: ref, Image: img})
	}

	var err error
	if f.store, err = imagestore.Write(f.dir, named); err != nil {
		t.Fatal(err)
	}

	srv, err := registry.New(f.dir, nil)
	if err != nil {
		t.Fatal(err)
	}

	f.srv = httptest.NewServer(srv)
	t.Cleanup(f.srv.Close)
	f.host = strings.TrimPrefix(f.srv.URL, "http://")

	return f
}

// pull fetches ref from the server with go-containerregistry's client, as
// crane does, and reads every layer.
func (f *fixture) pull(t *testing.T, ref string) (v1.Hash, error) {
	t.Helper()

	r, err := name.ParseReference(f.host+"/"+ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}

	img, err := remote.Image(r)
	if err != nil {
		return v1.Hash{}, err
	}

	ls, err := img.Layers()
	if err != nil {
		return v1.Hash{}, err
	}

	for _, l := range ls {
		rc, err := l.Compressed()
		if err != nil {
			return v1.Hash{}, err
		}

		_, err = io.Copy(io.Discard, rc)
		rc.Close()

		if err != nil {
			return v1.Hash{}, err
		}
	}

	return img.Digest()
}

func digestOf(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()

	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}

	return d
}

func TestPullByEveryName(t *testing.T) {
	f := newFixture(t)

	for _, tc := range []struct{ ask, want string }{
		{"pause:3.10", "registry.k8s.io/pause:3.10"},
		{"registry.k8s.io/pause:3.10", "registry.k8s.io/pause:3.10"},
		{"siderolabs/kubelet:v1.34.12", "ghcr.io/siderolabs/kubelet:v1.34.12"},
		{"library/busybox:1", "docker.io/library/busybox:1"},
		{"a.example/dup:1", "a.example/dup:1"},
	} {
		got, err := f.pull(t, tc.ask)
		if err != nil {
			t.Errorf("pull %s: %v", tc.ask, err)
			continue
		}

		if want := digestOf(t, f.images[tc.want]); got != want {
			t.Errorf("pull %s: digest %s, want %s (%s)", tc.ask, got, want, tc.want)
		}
	}

	// By digest, as clients do after resolving a tag.
	d := digestOf(t, f.images["registry.k8s.io/pause:3.10"])
	if got, err := f.pull(t, "pause@"+d.String()); err != nil || got != d {
		t.Errorf("pull by digest: %s, %v", got, err)
	}
}

// get does a raw request and decodes an error body when there is one.
func get(t *testing.T, method, url string, hdr map[string]string) (*http.Response, []byte, string) {
	t.Helper()

	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}

	for k, v := range hdr {
		req.Header.Set(k, v)
	}

	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()

	body, _ := io.ReadAll(resp.Body)

	var e struct {
		Errors []struct{ Code, Message string }
	}

	code := ""
	if json.Unmarshal(body, &e) == nil && len(e.Errors) > 0 {
		code = e.Errors[0].Code + ": " + e.Errors[0].Message
	}

	return resp, body, code
}

func TestMirrorNamespaceAndListings(t *testing.T) {
	f := newFixture(t)
	pause := digestOf(t, f.images["registry.k8s.io/pause:3.10"])

	// containerd as a mirror of registry.k8s.io.
	resp, _, _ := get(t, http.MethodHead, f.srv.URL+"/v2/pause/manifests/3.10?ns=registry.k8s.io", nil)
	if resp.StatusCode != 200 || resp.Header.Get("Docker-Content-Digest") != pause.String() {
		t.Errorf("HEAD with ns: %d %q", resp.StatusCode, resp.Header.Get("Docker-Content-Digest"))
	}

	// Docker Hub's names map to library/.
	resp, _, _ = get(t, http.MethodGet, f.srv.URL+"/v2/busybox/manifests/1?ns=docker.io", nil)
	if resp.StatusCode != 200 {
		t.Errorf("docker.io ns: %d", resp.StatusCode)
	}

	// The wrong upstream does not match.
	if resp, _, code := get(t, http.MethodGet, f.srv.URL+"/v2/pause/manifests/3.10?ns=ghcr.io", nil); resp.StatusCode != 404 || !strings.HasPrefix(code, "NAME_UNKNOWN") {
		t.Errorf("pause with ns=ghcr.io: %d %s", resp.StatusCode, code)
	}

	_, body, _ := get(t, http.MethodGet, f.srv.URL+"/v2/_catalog", nil)
	if !strings.Contains(string(body), `"registry.k8s.io/pause"`) || !strings.Contains(string(body), `"ghcr.io/siderolabs/kubelet"`) {
		t.Errorf("catalog: %s", body)
	}

	_, body, _ = get(t, http.MethodGet, f.srv.URL+"/v2/siderolabs/kubelet/tags/list", nil)
	if string(body) != `{"name":"siderolabs/kubelet","tags":["v1.34.12"]}` {
		t.Errorf("tags/list: %s", body)
	}

	resp, _, _ = get(t, http.MethodGet, f.srv.URL+"/v2/", nil)
	if resp.StatusCode != 200 || resp.Header.Get("Docker-Distribution-API-Version") != "registry/2.0" {
		t.Errorf("/v2/: %d %v", resp.StatusCode, resp.Header)
	}
}

func TestHeadAndRanges(t *testing.T) {
	f := newFixture(t)

	ls, err := f.images["registry.k8s.io/pause:3.10"].Layers()
	if err != nil {
		t.Fatal(err)
	}

	d, _ := ls[0].Digest()
	size, _ := ls[0].Size()
	whole, err := os.ReadFile(f.store.BlobPath(d))
	if err != nil {
		t.Fatal(err)
	}

	url := f.srv.URL + "/v2/pause/blobs/" + d.String()

	resp, body, _ := get(t, http.MethodHead, url, nil)
	if resp.StatusCode != 200 || resp.ContentLength != size || len(body) != 0 || resp.Header.Get("Docker-Content-Digest") != d.String() {
		t.Errorf("HEAD blob: %d, length %d (want %d), %d body bytes", resp.StatusCode, resp.ContentLength, size, len(body))
	}

	resp, body, _ = get(t, http.MethodGet, url, map[string]string{"Range": "bytes=10-19"})
	if resp.StatusCode != http.StatusPartialContent || string(body) != string(whole[10:20]) {
		t.Errorf("range 10-19: %d, %q", resp.StatusCode, body)
	}

	resp, body, _ = get(t, http.MethodGet, url, map[string]string{"Range": "bytes=-5"})
	if resp.StatusCode != http.StatusPartialContent || string(body) != string(whole[len(whole)-5:]) {
		t.Errorf("suffix range: %d, %q", resp.StatusCode, body)
	}

	if resp, _, _ := get(t, http.MethodGet, url, map[string]string{"Range": "bytes=99999999-"}); resp.StatusCode != http.StatusRequestedRangeNotSatisfiable {
		t.Errorf("range past the end: %d", resp.StatusCode)
	}
}

func TestErrorsUseProtocolCodes(t *testing.T) {
	f := newFixture(t)
	other := digestOf(t, f.images["ghcr.io/siderolabs/kubelet:v1.34.12"])

	for _, tc := range []struct {
		method, path string
		status       int
		code         string
	}{
		{"GET", "/v2/pause/manifests/3.9", 404, "MANIFEST_UNKNOWN"},
		{"GET", "/v2/nothere/manifests/1", 404, "NAME_UNKNOWN"},
		{"GET", "/v2/dup/manifests/1", 404, "NAME_UNKNOWN: repository dup is ambiguous"},
		{"GET", "/v2/pause/blobs/sha256:" + strings.Repeat("0", 64), 404, "BLOB_UNKNOWN"},
		// A blob of another repository is not this one's.
		{"GET", "/v2/pause/manifests/" + other.String(), 404, "MANIFEST_UNKNOWN"},
		{"GET", "/v2/pause/blobs/sha256:xyz", 400, "DIGEST_INVALID"},
		{"PUT", "/v2/pause/manifests/3.11", 405, "UNSUPPORTED"},
		{"POST", "/v2/pause/blobs/uploads/", 405, "UNSUPPORTED"},
		{"DELETE", "/v2/pause/manifests/3.10", 405, "UNSUPPORTED"},
		{"GET", "/nope", 404, "NOT_FOUND"},
	} {
		resp, _, code := get(t, tc.method, f.srv.URL+tc.path, nil)
		if resp.StatusCode != tc.status || !strings.HasPrefix(code, tc.code) {
			t.Errorf("%s %s: %d %q, want %d %s", tc.method, tc.path, resp.StatusCode, code, tc.status, tc.code)
		}
	}

	// The read-only registry still has what it had.
	if _, err := f.pull(t, "pause:3.10"); err != nil {
		t.Errorf("pull after refused writes: %v", err)
	}
}

func TestCorruptBlobIsRefused(t *testing.T) {
	f := newFixture(t)

	ls, err := f.images["registry.k8s.io/pause:3.10"].Layers()
	if err != nil {
		t.Fatal(err)
	}

	d, _ := ls[1].Digest()
	path := f.store.BlobPath(d)

	// Served (and verified) once while it is sound.
	if _, err := f.pull(t, "pause:3.10"); err != nil {
		t.Fatal(err)
	}

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}

	resp, body, code := get(t, http.MethodGet, f.srv.URL+"/v2/pause/blobs/"+d.String(), nil)
	if resp.StatusCode != 500 || !strings.HasPrefix(code, "DIGEST_INVALID") || !strings.Contains(code, "corrupt") {
		t.Errorf("corrupt blob: %d %q", resp.StatusCode, code)
	}

	if strings.Contains(string(body), string(data[:16])) {
		t.Error("corrupt content was served")
	}

	if _, err := f.pull(t, "pause:3.10"); err == nil {
		t.Error("a client pulled an image with a corrupt layer")
	}
}

func TestNewRefusesBrokenLayouts(t *testing.T) {
	f := newFixture(t)

	ls, _ := f.images["docker.io/library/busybox:1"].Layers()
	d, _ := ls[0].Digest()

	if err := os.Remove(f.store.BlobPath(d)); err != nil {
		t.Fatal(err)
	}

	if _, err := registry.New(f.dir, nil); err == nil || !strings.Contains(err.Error(), "blob "+d.String()+" is missing") {
		t.Errorf("missing blob: %v", err)
	}

	if _, err := registry.New(t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), "not an OCI image layout") {
		t.Errorf("empty directory: %v", err)
	}
}
