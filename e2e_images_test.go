//go:build e2e

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/images"
	"github.com/talosbox/talosbox/internal/imagestore"
	"github.com/talosbox/talosbox/internal/installer"
)

// imageBuild is the OCI layout `make images` writes (make test runs it
// before the tests); TALOSBOX_IMAGES points elsewhere.
func imageBuild(t *testing.T) string {
	t.Helper()

	dir := os.Getenv("TALOSBOX_IMAGES")
	if dir == "" {
		dir = filepath.Join("_out", "images", "oci")
	}

	if _, err := imagestore.Open(dir); err != nil {
		t.Fatalf("no image build: %v (run make images)", err)
	}

	abs, _ := filepath.Abs(dir)

	return abs
}

// cacheServer is `talosctl image cache-serve` running as a process.
type cacheServer struct {
	addr   string
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	mu     *sync.Mutex
}

var servingLine = regexp.MustCompile(`serving \d+ images read-only on http://(\S+)`)

func startCacheServe(t *testing.T, bin, dir, addr string) *cacheServer {
	t.Helper()

	cmd := exec.Command(bin, "talosctl", "image", "cache-serve", "--image-cache-path", dir, "--address", addr)

	pr, pw := io.Pipe()
	cmd.Stderr = pw

	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		pw.Close()
	})

	cs := &cacheServer{cmd: cmd, stderr: &bytes.Buffer{}, mu: &sync.Mutex{}}
	found := make(chan string, 1)

	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			cs.mu.Lock()
			cs.stderr.WriteString(sc.Text() + "\n")
			cs.mu.Unlock()

			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()

	select {
	case cs.addr = <-found:
	case <-time.After(30 * time.Second):
		t.Fatalf("cache-serve did not say it was serving:\n%s", cs.log())
	}

	return cs
}

func (cs *cacheServer) log() string {
	cs.mu.Lock()
	defer cs.mu.Unlock()

	return cs.stderr.String()
}

func docker(t *testing.T, args ...string) (string, error) {
	t.Helper()

	out, err := exec.Command("docker", args...).CombinedOutput()

	return string(out), err
}

// localName is how a client names a cached image on the cache's address:
// the reference with its registry replaced, as the air-gap guide does.
func localName(addr, ref string) string {
	_, rest, _ := strings.Cut(ref, "/")
	return addr + "/" + rest
}

// TestImageCacheServesRealClients builds a cache of `image default` from
// the image build, serves it, and has the Docker Engine pull every image
// and run its program, which must report the pinned version.
func TestImageCacheServesRealClients(t *testing.T) {
	build := imageBuild(t)
	bin := buildBinary(t)

	// The installer is make installer's, not make images': served from
	// its own build (TestQEMUCluster), it is left out here.
	var refs []string

	for _, r := range strings.Fields(runBinary(t, bin, 0, "talosctl", "image", "default")) {
		if !strings.HasPrefix(r, installer.DefaultRepository+":") {
			refs = append(refs, r)
		}
	}

	if len(refs) != len(images.Default(images.Kubernetes)) {
		t.Fatalf("image default printed %q", refs)
	}

	list := strings.Join(refs, "\n") + "\n"

	cache := filepath.Join(t.TempDir(), "cache")

	create := exec.Command(bin, "talosctl", "image", "cache-create", "--images=-", "--image-cache-path", cache, "--from", build, "--no-registry")
	create.Stdin = strings.NewReader(list)

	if out, err := create.CombinedOutput(); err != nil {
		t.Fatalf("cache-create: %v\n%s", err, out)
	}

	cs := startCacheServe(t, bin, cache, "127.0.0.1:0")

	// What each program prints for its version, and how it is asked.
	versions := map[string]struct {
		args []string
		want string
	}{
		images.FlannelName:           {[]string{"--version"}, "v" + images.Flannel},
		images.CoreDNSName:           {[]string{"-version"}, "CoreDNS-" + images.CoreDNS},
		images.APIServerName:         {[]string{"--version"}, "Kubernetes v" + images.Kubernetes},
		images.ControllerManagerName: {[]string{"--version"}, "Kubernetes v" + images.Kubernetes},
		images.SchedulerName:         {[]string{"--version"}, "Kubernetes v" + images.Kubernetes},
		images.ProxyName:             {[]string{"--version"}, "Kubernetes v" + images.Kubernetes},
		images.KubeletName:           {[]string{"--version"}, "Kubernetes v" + images.Kubernetes},
		images.PauseName:             {[]string{"-v"}, "v" + images.Pause},
	}

	for _, r := range images.Default(images.Kubernetes) {
		img := localName(cs.addr, r.String())
		t.Cleanup(func() { _, _ = docker(t, "rmi", "-f", img) })

		if out, err := docker(t, "pull", img); err != nil {
			t.Fatalf("docker pull %s: %v\n%s\nserver:\n%s", img, err, out, cs.log())
		}

		v := versions[r.Component]

		out, err := docker(t, append([]string{"run", "--rm", "--network", "none", img}, v.args...)...)
		if err != nil || !strings.Contains(out, v.want) {
			t.Errorf("docker run %s %v: %v, printed %q, want %q", img, v.args, err, out, v.want)
		}
	}

	// The netfilter userspace kube-proxy and flannel exec runs in them,
	// and the kubelet's mount with the NFS helper it runs for nfs volumes.
	for _, c := range [][]string{
		{"--entrypoint", "/usr/sbin/iptables-restore", localName(cs.addr, images.Proxy(images.Kubernetes).String()), "--version"},
		{"--entrypoint", "/usr/sbin/nft", localName(cs.addr, images.FlannelImage().String()), "--version"},
		{"--entrypoint", "/usr/bin/mount", localName(cs.addr, images.Kubelet(images.Kubernetes).String()), "--version"},
		{"--entrypoint", "/sbin/mount.nfs4", localName(cs.addr, images.Kubelet(images.Kubernetes).String()), "-V"},
	} {
		if out, err := docker(t, append([]string{"run", "--rm", "--network", "none"}, c...)...); err != nil {
			t.Errorf("docker run %v: %v\n%s", c, err, out)
		}
	}

	t.Run("corrupt blob", func(t *testing.T) {
		// Remove the image by ID, with every tag it has, so the engine
		// has to fetch its layer again.
		pause := localName(cs.addr, images.PauseImage().String())

		id, err := docker(t, "image", "inspect", "-f", "{{.Id}}", pause)
		if err != nil {
			t.Fatalf("docker image inspect: %v\n%s", err, id)
		}

		if out, err := docker(t, "rmi", "-f", strings.TrimSpace(id)); err != nil {
			t.Fatalf("docker rmi: %v\n%s", err, out)
		}

		st, err := imagestore.Open(cache)
		if err != nil {
			t.Fatal(err)
		}

		im, _ := st.Lookup(images.PauseImage().String())

		blobs, err := st.Blobs(im)
		if err != nil {
			t.Fatal(err)
		}

		layer := blobs[len(blobs)-1]
		corruptByReplacing(t, st.BlobPath(layer))

		if out, err := docker(t, "pull", pause); err == nil {
			t.Errorf("docker pulled an image whose layer is corrupt:\n%s", out)
		}

		resp, err := http.Get("http://" + cs.addr + "/v2/pause/blobs/" + layer.String())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()

		var body struct {
			Errors []struct{ Code, Message string }
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)

		if resp.StatusCode != 500 || len(body.Errors) == 0 || body.Errors[0].Code != "DIGEST_INVALID" {
			t.Errorf("GET of a corrupt blob: %d %+v", resp.StatusCode, body)
		}

		if !strings.Contains(cs.log(), "refusing blob "+layer.String()) {
			t.Errorf("the server did not log the refusal:\n%s", cs.log())
		}
	})

	t.Run("bad input", func(t *testing.T) {
		out := runBinary(t, bin, 1, "talosctl", "image", "cache-serve", "--image-cache-path", cache, "--address", cs.addr)
		if !strings.Contains(out, "address "+cs.addr+" is already in use") {
			t.Errorf("address in use: %s", out)
		}

		out = runBinary(t, bin, 1, "talosctl", "image", "cache-create", "--images", "registry.k8s.io/nope:v1", "--image-cache-path", filepath.Join(t.TempDir(), "c"), "--from", build, "--no-registry")
		if !strings.Contains(out, "registry.k8s.io/nope:v1 is in none of") {
			t.Errorf("unknown image: %s", out)
		}

		out = runBinary(t, bin, 1, "talosctl", "image", "cache-create", "--images", "registry.k8s.io/pause:3.10", "--image-cache-path", cache, "--from", build)
		if !strings.Contains(out, "is not empty (use --force") {
			t.Errorf("existing cache: %s", out)
		}

		out = runBinary(t, bin, 1, "imager", "--kubernetes", "1.99.0", "--out", t.TempDir())
		if !strings.Contains(out, "kubernetes 1.99.0 is not pinned") {
			t.Errorf("unknown version: %s", out)
		}

		out = runBinary(t, bin, 1, "talosctl", "image", "cache-serve", "--image-cache-path", t.TempDir())
		if !strings.Contains(out, "not an OCI image layout") {
			t.Errorf("empty cache dir: %s", out)
		}
	})
}

// corruptByReplacing writes a changed copy over path by rename, so a
// hard-linked original (the image build) stays sound.
func corruptByReplacing(t *testing.T, path string) {
	t.Helper()

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	data[len(data)/2] ^= 0xff

	if err := os.WriteFile(path+".bad", data, 0o644); err != nil {
		t.Fatal(err)
	}

	if err := os.Rename(path+".bad", path); err != nil {
		t.Fatal(err)
	}
}

// TestImageBuildIsReproducible builds every image again into an empty
// output directory (Go's build cache makes that a relink of each program)
// and checks that every image has the digest of `make images`' build.
func TestImageBuildIsReproducible(t *testing.T) {
	build := imageBuild(t)
	bin := buildBinary(t)

	first, err := imagestore.Open(build)
	if err != nil {
		t.Fatal(err)
	}

	out := t.TempDir()
	runBinary(t, bin, 0, "imager", "--out", out)

	second, err := imagestore.Open(filepath.Join(out, "oci"))
	if err != nil {
		t.Fatal(err)
	}

	for _, r := range images.Default(images.Kubernetes) {
		a, ok1 := first.Lookup(r.String())
		b, ok2 := second.Lookup(r.String())

		if !ok1 || !ok2 || a.Descriptor.Digest != b.Descriptor.Digest {
			t.Errorf("%s: %s (make images) and %s (rebuild)", r, a.Descriptor.Digest, b.Descriptor.Digest)
		}
	}
}
