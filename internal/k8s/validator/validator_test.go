package validator_test

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"log"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/remotes/docker"
	"github.com/containerd/containerd/v2/core/remotes/docker/config"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/platforms"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/configs/kubevalidate"
	"github.com/talosbox/talosbox/internal/containers"
	"github.com/talosbox/talosbox/internal/containers/containerdtest"
	"github.com/talosbox/talosbox/internal/k8s/validator"
)

// TestMain lets the test binary be the containerd (and shim) the tests
// start.
func TestMain(m *testing.M) {
	containerdtest.Main()
	os.Exit(m.Run())
}

// validatorScript stands in for the multicall binary (a real one is
// 135 MB; the e2e suites run those): it has the marker, and answers as
// kube-config-validate does, naming its version.
func validatorScript(version string) string {
	return "#!/bin/sh\n# kube-config-validate\ncat >/dev/null\necho '{\"version\":\"" + version + "\"}'\n"
}

// file is a layer entry: a regular file, a symbolic link (link), a
// directory (dir) or an overlay whiteout written as OCI layers spell it.
type file struct {
	path, data, link string
	dir              bool
}

func layer(t *testing.T, files ...file) v1.Layer {
	t.Helper()

	var buf bytes.Buffer

	tw := tar.NewWriter(&buf)

	for _, f := range files {
		h := &tar.Header{Name: f.path, Mode: 0o755, Typeflag: tar.TypeReg, Size: int64(len(f.data))}

		switch {
		case f.dir:
			h.Typeflag, h.Size = tar.TypeDir, 0
		case f.link != "":
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, f.link, 0
		}

		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}

		if _, err := io.WriteString(tw, f.data); err != nil {
			t.Fatal(err)
		}
	}

	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}

	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}

	return l
}

// image is an image of layers (bottom first) for this platform.
func image(t *testing.T, layers ...v1.Layer) v1.Image {
	t.Helper()

	img, err := mutate.AppendLayers(empty.Image, layers...)
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

// env is a containerd and a registry its pulls reach as example.test.
type env struct {
	sock, registry, hosts string
	c                     *client.Client
}

func newEnv(t *testing.T) *env {
	t.Helper()

	e := &env{sock: containerdtest.Start(t, containerdtest.Options{}), hosts: t.TempDir()}

	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)

	e.registry = strings.TrimPrefix(srv.URL, "http://")
	containerdtest.MirrorOnly(t, e.hosts, "example.test", srv.URL)
	e.c = containerdtest.Connect(t, e.sock)

	return e
}

// push puts img in the registry as example.test/<repo>.
func (e *env) push(t *testing.T, repo string, img v1.Image) string {
	t.Helper()

	ref, err := name.ParseReference(e.registry + "/" + repo)
	if err != nil {
		t.Fatal(err)
	}

	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}

	return "example.test/" + repo
}

// pull pulls ref into ns as the node does (containers.Pull: unpacked).
func (e *env) pull(t *testing.T, ns, ref string) {
	t.Helper()

	if _, err := containers.Pull(t.Context(), e.sock, ns, ref, e.hosts); err != nil {
		t.Fatal(err)
	}
}

// The image shapes internal/imagebuild makes and others.
func kubeLayer(t *testing.T, version string) v1.Layer {
	return layer(t,
		file{path: "usr/local/bin/", dir: true},
		file{path: "usr/local/bin/kubernetes", data: validatorScript(version)},
		file{path: "usr/local/bin/kubelet", link: "kubernetes"},
		file{path: "usr/local/bin/kube-scheduler", link: "kubernetes"})
}

func answer(t *testing.T, bin string) string {
	t.Helper()

	ans, err := kubevalidate.Run(t.Context(), bin, &kubevalidate.Request{})
	if err != nil {
		t.Fatal(err)
	}

	return ans.Version
}

// TestBinary: the validator binary is found in the image the node has
// under a name, in either namespace, through its unpacked snapshot as
// overlayfs shows it (an upper layer's file, whiteouts, opaque
// directories), also when the CRI discarded the compressed layers; an
// image without one, or not on the node, or not unpacked, says so; the
// binary is cached per image digest, a hard link into the snapshot, and a
// tag that moves gets the new image's binary while the old one leaves the
// cache.
func TestBinary(t *testing.T) {
	e := newEnv(t)
	etc := layer(t, file{path: "etc/passwd", data: "root:x:0:0::/:/sbin/nologin\n"})
	netfilter := layer(t, file{path: "usr/sbin/iptables", data: "#!/bin/sh\n"})

	kubelet := e.push(t, "kubelet:v1.34.12", image(t, etc, kubeLayer(t, "1.34.12"), netfilter))
	e.pull(t, "system", kubelet)

	scheduler := e.push(t, "kube-scheduler:v1.34.12", image(t, kubeLayer(t, "1.34.12")))
	e.pull(t, containers.K8sNamespace, scheduler)
	discardLayers(t, e, containers.K8sNamespace, scheduler)

	upgraded := e.push(t, "kubelet:v1.35.0", image(t, etc, kubeLayer(t, "1.34.12"),
		layer(t, file{path: "usr/local/bin/kubernetes", data: validatorScript("1.35.0")})))
	e.pull(t, "system", upgraded)

	refused := map[string]v1.Image{
		// Upstream's: the component itself, which must not be run.
		"upstream:v1": image(t, layer(t, file{path: "usr/local/bin/kubelet", data: "#!/bin/sh\n# kube-config-validate\n"})),
		// A multicall binary from before kube-config-validate.
		"old:v1": image(t, layer(t, file{path: "usr/local/bin/kubernetes", data: "#!/bin/sh\necho usage >&2; exit 2\n"})),
		// Removed by an upper layer.
		"whiteout:v1": image(t, kubeLayer(t, "1.34.12"), layer(t, file{path: "usr/local/bin/.wh.kubernetes"})),
		// Its directory replaced by an upper layer's.
		"opaque:v1": image(t, kubeLayer(t, "1.34.12"), layer(t,
			file{path: "usr/local/bin/", dir: true}, file{path: "usr/local/bin/.wh..wh..opq"}, file{path: "usr/local/bin/other", data: "x"})),
		// A directory on the way replaced by a file.
		"shadowed:v1": image(t, kubeLayer(t, "1.34.12"), layer(t, file{path: "usr/local/.wh.bin"}, file{path: "usr/local/bin", data: "x"})),
	}

	for repo, img := range refused {
		e.pull(t, "system", e.push(t, repo, img))
	}

	// In the registry, not on the node: nothing is pulled to validate.
	absent := e.push(t, "kubelet:v1.33.13", image(t, kubeLayer(t, "1.33.13")))

	// On the node, not unpacked (pulled without, as an import may leave it).
	// Its one layer is its own: a layer another image has is unpacked.
	packed := e.push(t, "packed:v1", image(t, layer(t, file{path: "usr/local/bin/kubernetes", data: validatorScript("1.34.99")})))
	pullPacked(t, e, packed)

	cache := t.TempDir()
	f := &validator.Finder{Socket: e.sock, CacheDir: cache}

	for _, tc := range []struct {
		ref, version string
		err          error
		msg          string
	}{
		{ref: kubelet, version: "1.34.12"},
		{ref: scheduler, version: "1.34.12"},
		{ref: upgraded, version: "1.35.0"},
		{ref: "example.test/upstream:v1", err: validator.ErrNoValidator},
		{ref: "example.test/old:v1", err: validator.ErrNoValidator},
		{ref: "example.test/whiteout:v1", err: validator.ErrNoValidator},
		{ref: "example.test/opaque:v1", err: validator.ErrNoValidator},
		{ref: "example.test/shadowed:v1", err: validator.ErrNoValidator},
		{ref: absent, err: validator.ErrNotPresent},
		{ref: packed, msg: "not unpacked"},
		{ref: "Not A Reference", msg: "image reference"},
	} {
		bin, err := f.Binary(t.Context(), tc.ref)

		switch {
		case tc.err != nil || tc.msg != "":
			if err == nil || (tc.err != nil && !errors.Is(err, tc.err)) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("%s: %q, %v; want %v %q", tc.ref, bin, err, tc.err, tc.msg)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.ref, err)
		default:
			if v := answer(t, bin); v != tc.version {
				t.Errorf("%s: the binary answers %s, want %s", tc.ref, v, tc.version)
			}
		}
	}

	// Cached per image digest, as a hard link: the cache and containerd's
	// root share the file system here, as on a node.
	bin, err := f.Binary(t.Context(), kubelet)
	if err != nil {
		t.Fatal(err)
	}

	if got := digestOf(t, e, "system", kubelet); filepath.Base(bin) != strings.Replace(got, ":", "-", 1) || filepath.Dir(bin) != cache {
		t.Errorf("cached at %s, want %s/<digest %s>", bin, cache, got)
	}

	if st, err := os.Stat(bin); err != nil || st.Sys().(*syscall.Stat_t).Nlink != 2 { //nolint:forcetypeassert // Linux
		t.Errorf("the cached binary is not a hard link into the snapshot: %v", err)
	}

	// The tag moves: the node re-pulls, and gets the new image's
	// binary; the old image is gone from the node, and from the cache.
	e.push(t, "kubelet:v1.34.12", image(t, etc, kubeLayer(t, "1.34.12"), layer(t, file{path: "usr/local/bin/kubernetes", data: validatorScript("1.34.13")})))
	e.pull(t, "system", kubelet)

	moved, err := f.Binary(t.Context(), kubelet)
	if err != nil || moved == bin || answer(t, moved) != "1.34.13" {
		t.Errorf("after the tag moved: %s, %v (was %s)", moved, err, bin)
	}

	if _, err := os.Stat(bin); !os.IsNotExist(err) {
		t.Errorf("the old image's binary stayed in the cache: %v", err)
	}

	// A node booting (no containerd yet: no socket, or one left behind
	// that nobody listens on) has the binary its names resolved to last,
	// and nothing for a name it never resolved.
	for _, sock := range []string{filepath.Join(t.TempDir(), "none.sock"), staleSocket(t)} {
		offline := &validator.Finder{Socket: sock, CacheDir: cache}

		if got, err := offline.Binary(t.Context(), kubelet); err != nil || got != moved {
			t.Errorf("without containerd (%s): %s, %v; want %s", sock, got, err, moved)
		}

		if _, err := offline.Binary(t.Context(), absent); err == nil || !strings.Contains(err.Error(), "containerd is not running") {
			t.Errorf("without containerd (%s), a name never resolved: %v", sock, err)
		}
	}
}

// staleSocket is a unix socket file nobody listens on.
func staleSocket(t *testing.T) string {
	t.Helper()

	p := filepath.Join(t.TempDir(), "stale.sock")

	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: p, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}

	l.SetUnlinkOnClose(false)
	l.Close()

	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}

	return p
}

// TestBinaryCopied: where the cache is on another file system than
// containerd's root the binary is copied, whole and executable.
func TestBinaryCopied(t *testing.T) {
	e := newEnv(t)
	ref := e.push(t, "kubelet:v1.34.12", image(t, kubeLayer(t, "1.34.12")))
	e.pull(t, "system", ref)

	cache := t.TempDir()
	if err := unix.Mount("tmpfs", cache, "tmpfs", 0, "size=8m"); err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { unix.Unmount(cache, unix.MNT_DETACH) }) //nolint:errcheck // the directory goes next

	f := &validator.Finder{Socket: e.sock, CacheDir: filepath.Join(cache, "kube-config-validate")}

	bin, err := f.Binary(t.Context(), ref)
	if err != nil {
		t.Fatal(err)
	}

	data, err := os.ReadFile(bin)
	if err != nil || string(data) != validatorScript("1.34.12") {
		t.Errorf("copied %q, %v", data, err)
	}

	if st, err := os.Stat(bin); err != nil || st.Sys().(*syscall.Stat_t).Nlink != 1 || answer(t, bin) != "1.34.12" { //nolint:forcetypeassert // Linux
		t.Errorf("the copy: %v", err)
	}

	left, _ := filepath.Glob(filepath.Join(f.CacheDir, "*.tmp-*"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %q", left)
	}
}

// discardLayers deletes an image's compressed layers from the content
// store, as the CRI does once it unpacked them.
func discardLayers(t *testing.T, e *env, ns, ref string) {
	t.Helper()

	ctx := namespaces.WithNamespace(t.Context(), ns)

	img, err := e.c.GetImage(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}

	mf, err := images.Manifest(ctx, e.c.ContentStore(), img.Target(), platforms.Default())
	if err != nil {
		t.Fatal(err)
	}

	for _, l := range mf.Layers {
		if err := e.c.ContentStore().Delete(ctx, l.Digest); err != nil {
			t.Fatal(err)
		}
	}

	if _, err := e.c.ContentStore().Info(ctx, mf.Layers[0].Digest); err == nil {
		t.Fatal("the layer is still in the content store")
	}
}

// pullPacked pulls ref into system without unpacking it.
func pullPacked(t *testing.T, e *env, ref string) {
	t.Helper()

	ctx := namespaces.WithNamespace(t.Context(), "system")
	hosts := config.ConfigureHosts(ctx, config.HostOptions{HostDir: config.HostDirFromRoot(e.hosts)})

	if _, err := e.c.Pull(ctx, ref, client.WithResolver(docker.NewResolver(docker.ResolverOptions{Hosts: hosts}))); err != nil {
		t.Fatal(err)
	}
}

func digestOf(t *testing.T, e *env, ns, ref string) string {
	t.Helper()

	img, err := e.c.GetImage(namespaces.WithNamespace(t.Context(), ns), ref)
	if err != nil {
		t.Fatal(err)
	}

	return img.Target().Digest.String()
}
