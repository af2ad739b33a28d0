// Package validator finds, in the images a node's containerd already
// holds, the Kubernetes binary that validates component configs: the
// multicall binary internal/imagebuild puts at BinaryPath in each of
// talosbox's Kubernetes images (kubelet, kube-apiserver, kube-scheduler,
// kube-controller-manager, kube-proxy: one layer, one binary per
// version), run in its kube-config-validate mode through
// configs/kubevalidate. internal/render runs it when the node validates a
// config (apply-config, boot), as talosctl validate runs the one in the
// image cache of a machine that built the images.
//
// The binary is read from the image's unpacked snapshot through a
// read-only view, never from its layers: the CRI discards an image's
// compressed layers once it has unpacked them (internal/cri's
// discard_unpacked_layers). It is kept, per image digest, in a cache on
// EPHEMERAL beside containerd's root, hard-linked to the snapshot's file
// when they share a file system (no copy, no space), and the cache holds
// only binaries of images the node still has. Nothing here pulls: an
// image the node does not have is ErrNotPresent, and the caller says the
// config was not validated by the component.
package validator

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/leases"
	"github.com/containerd/containerd/v2/defaults"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/identity"
)

// BinaryPath is where talosbox's Kubernetes images keep the multicall
// binary (internal/imagebuild); the components are links to it. Upstream
// images have the components themselves there, which must never be run
// here: a kubelet started without flags would try to be this node's.
const BinaryPath = "/usr/local/bin/kubernetes"

// marker is in every multicall binary that has the kube-config-validate
// mode (the name it dispatches on); one without it is not run.
const marker = "kube-config-validate"

// Namespaces holding the images: the kubelet's is pulled into system
// before the kubelet starts, the control plane's by the CRI into k8s.io.
var Namespaces = []string{"system", "k8s.io"}

// Timeout bounds one lookup, an extraction included.
const Timeout = time.Minute

// dialTimeout is short: a containerd that does not answer at once is not
// running (the node is booting), and the cache answers instead.
const dialTimeout = 2 * time.Second

// Errors the caller reports as "not validated by the component".
var (
	// ErrNotPresent: the node has no image by that name (yet).
	ErrNotPresent = errors.New("not on this node (nothing is pulled to validate a config)")
	// ErrNoValidator: the image holds no binary with kube-config-validate.
	ErrNoValidator = errors.New("no " + BinaryPath + " with kube-config-validate in it (not an image make images built)")
)

// Finder finds validator binaries in one containerd's images.
type Finder struct {
	// Socket is the CRI containerd's, which holds both namespaces.
	Socket string
	// CacheDir holds the extracted binaries; best on the file system of
	// containerd's root (hard links instead of copies).
	CacheDir string

	mu sync.Mutex // one extraction at a time
}

// Binary returns the path of the validator binary in image (a reference
// as a machine config names it). With containerd running it is the
// binary of the image containerd has under that name now; without (a
// node booting), the one that name resolved to last, if it is cached.
func (f *Finder) Binary(ctx context.Context, image string) (string, error) {
	named, err := reference.ParseDockerRef(image)
	if err != nil {
		return "", fmt.Errorf("image reference %q: %w", image, err)
	}

	ref := named.String()

	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()

	c, err := f.dial()
	if err != nil {
		if bin, ok := f.cachedRef(ref); ok {
			return bin, nil
		}

		return "", err
	}
	defer c.Close()

	for _, ns := range Namespaces {
		nctx := namespaces.WithNamespace(ctx, ns)

		rec, err := c.ImageService().Get(nctx, ref)
		if errdefs.IsNotFound(err) {
			continue
		}

		if err != nil {
			return "", fmt.Errorf("image %s: %w", ref, err)
		}

		bin, err := f.binaryOf(nctx, c, rec)
		if err != nil {
			return "", fmt.Errorf("image %s (%s): %w", ref, ns, err)
		}

		f.recordRef(ref, rec.Target.Digest)

		return bin, nil
	}

	return "", fmt.Errorf("image %s: %w", ref, ErrNotPresent)
}

func (f *Finder) dial() (*client.Client, error) {
	// A plain connection first: a socket nobody listens on (left from
	// before a restart) is refused at once, where the client retries
	// until its timeout.
	conn, err := net.DialTimeout("unix", f.Socket, dialTimeout)
	if err != nil {
		return nil, fmt.Errorf("containerd is not running (%w)", err)
	}

	conn.Close()

	c, err := client.New(f.Socket, client.WithTimeout(dialTimeout))
	if err != nil {
		return nil, fmt.Errorf("containerd at %s: %w", f.Socket, err)
	}

	return c, nil
}

// binaryOf is the cached binary of an image, extracted first if need be.
func (f *Finder) binaryOf(ctx context.Context, c *client.Client, rec images.Image) (string, error) {
	dst := f.binPath(rec.Target.Digest)
	if usable(dst) {
		return dst, nil
	}

	f.mu.Lock()
	defer f.mu.Unlock()

	if usable(dst) { // extracted while this one waited
		return dst, nil
	}

	src, release, err := view(ctx, c, rec)
	if err != nil {
		return "", err
	}
	defer release()

	if err := f.store(src, dst); err != nil {
		return "", err
	}

	f.evict(ctx, c)

	return dst, nil
}

// view finds BinaryPath in a read-only view of the image's snapshot, and
// returns it with the function that removes the view.
func view(ctx context.Context, c *client.Client, rec images.Image) (string, func(), error) {
	// The view lives as long as the lease: a node that dies mid-way
	// leaves nothing the garbage collector keeps.
	ctx, done, err := c.WithLease(ctx, leases.WithRandomID(), leases.WithExpiration(Timeout))
	if err != nil {
		return "", nil, fmt.Errorf("lease: %w", err)
	}

	fail := func(err error) (string, func(), error) {
		done(context.WithoutCancel(ctx)) //nolint:errcheck // the lease expires anyway

		return "", nil, err
	}

	img := client.NewImage(c, rec)

	sn, err := c.GetLabel(ctx, defaults.DefaultSnapshotterNSLabel)
	if err != nil {
		return fail(fmt.Errorf("the namespace's snapshotter: %w", err))
	}

	if sn == "" {
		sn = defaults.DefaultSnapshotter
	}

	if ok, err := img.IsUnpacked(ctx, sn); err != nil || !ok {
		return fail(fmt.Errorf("not unpacked into %s (%v)", sn, err))
	}

	diffIDs, err := img.RootFS(ctx)
	if err != nil {
		return fail(fmt.Errorf("its layers: %w", err))
	}

	key := "kube-config-validate-" + rand.Text()
	snaps := c.SnapshotService(sn)

	mounts, err := snaps.View(ctx, key, identity.ChainID(diffIDs).String())
	if err != nil {
		return fail(fmt.Errorf("a view of its snapshot: %w", err))
	}

	release := func() {
		bg := context.WithoutCancel(ctx)
		snaps.Remove(bg, key) //nolint:errcheck // the lease's end removes it too
		done(bg)              //nolint:errcheck // it expires anyway
	}

	src, err := lookup(mounts, BinaryPath)
	if err != nil {
		release()

		return "", nil, err
	}

	return src, release, nil
}

// store puts the binary at src into the cache at dst: a hard link when
// they share a file system, else a copy; atomically either way.
func (f *Finder) store(src, dst string) error {
	if err := checkMarker(src); err != nil {
		return err
	}

	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return fmt.Errorf("validator cache: %w", err)
	}

	tmp := dst + ".tmp-" + rand.Text()
	defer os.Remove(tmp)

	if err := os.Link(src, tmp); err != nil {
		if err := copyFile(src, tmp); err != nil {
			return fmt.Errorf("validator cache: %w", err)
		}
	}

	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("validator cache: %w", err)
	}

	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()

	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}

	if _, err := io.Copy(out, in); err != nil {
		out.Close()

		return err
	}

	// Renamed into place next: a crash must not leave a short binary
	// under a digest's name.
	if err := out.Sync(); err != nil {
		out.Close()

		return err
	}

	return out.Close()
}

// checkMarker refuses a file that is not a multicall binary with the
// validation mode: run as kube-config-validate, anything else might
// start a component on the node.
func checkMarker(p string) error {
	fh, err := os.Open(p)
	if err != nil {
		return err
	}
	defer fh.Close()

	buf := make([]byte, 1<<20)
	keep := len(marker) - 1
	n := 0

	for {
		m, err := fh.Read(buf[n:])
		n += m

		if bytes.Contains(buf[:n], []byte(marker)) {
			return nil
		}

		if err == io.EOF {
			return ErrNoValidator
		}

		if err != nil {
			return fmt.Errorf("read %s: %w", BinaryPath, err)
		}

		// The marker may straddle two reads.
		if n > keep {
			n = copy(buf, buf[n-keep:n])
		}
	}
}

func usable(p string) bool {
	st, err := os.Stat(p)

	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

func (f *Finder) binPath(d digest.Digest) string {
	return filepath.Join(f.CacheDir, d.Algorithm().String()+"-"+d.Encoded())
}

// refPath records which digest a name resolved to last, for a node whose
// containerd is not running yet.
func (f *Finder) refPath(ref string) string {
	sum := sha256.Sum256([]byte(ref))

	return filepath.Join(f.CacheDir, "refs", hex.EncodeToString(sum[:16]))
}

func (f *Finder) recordRef(ref string, d digest.Digest) {
	p := f.refPath(ref)

	if old, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(old)) == d.String() {
		return
	}

	// Best effort: without it a booting node validates with configs'
	// own checks only.
	if os.MkdirAll(filepath.Dir(p), 0o700) != nil {
		return
	}

	tmp := p + ".tmp-" + rand.Text()
	if os.WriteFile(tmp, []byte(d.String()+"\n"), 0o600) == nil {
		os.Rename(tmp, p) //nolint:errcheck // best effort, see above
	}

	os.Remove(tmp)
}

func (f *Finder) cachedRef(ref string) (string, bool) {
	data, err := os.ReadFile(f.refPath(ref))
	if err != nil {
		return "", false
	}

	d, err := digest.Parse(strings.TrimSpace(string(data)))
	if err != nil {
		return "", false
	}

	bin := f.binPath(d)

	return bin, usable(bin)
}

// evict removes the binaries of images the node no longer has, and
// leftovers of extractions that did not finish. Best effort: a binary
// kept too long only takes space.
func (f *Finder) evict(ctx context.Context, c *client.Client) {
	keep := map[string]bool{}

	for _, ns := range Namespaces {
		imgs, err := c.ImageService().List(namespaces.WithNamespace(ctx, ns))
		if err != nil {
			return
		}

		for _, img := range imgs {
			keep[filepath.Base(f.binPath(img.Target.Digest))] = true
		}
	}

	entries, err := os.ReadDir(f.CacheDir)
	if err != nil {
		return
	}

	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || keep[name] {
			continue
		}

		if strings.Contains(name, ".tmp-") {
			// Another extraction's, unless it is old.
			if info, err := e.Info(); err != nil || time.Since(info.ModTime()) < Timeout {
				continue
			}
		}

		os.Remove(filepath.Join(f.CacheDir, name))
	}
}
