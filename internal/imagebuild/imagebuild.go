// Package imagebuild builds every image a talosbox node runs from source:
// the Kubernetes components (one binary for all of them, per version),
// CoreDNS, flannel, the CNI plugins and pause, then assembles OCI images
// FROM scratch with go-containerregistry into an OCI image layout. No
// registry and no Docker daemon is involved, and every output is cached
// under its inputs' hash, so a second build with nothing changed does no
// work.
package imagebuild

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/talosbox/talosbox/internal/images"
	"github.com/talosbox/talosbox/internal/imagestore"
)

// Options say what to build and where.
type Options struct {
	// Out holds the results: oci/ (the images), cni/bin and runtime/.
	Out string
	// Cache holds what is keyed by its inputs and so outlives a checkout:
	// build/ (binaries by key), src/ (generated modules) and layers/
	// (compressed layers by key). Out when empty; a directory outside the
	// clone (make images uses ~/.cache/talosbox/images) lets a fresh clone
	// reuse an earlier build, as Go reuses its build cache.
	Cache string
	// Src is talosbox's source tree (images/, go.mod); "." by default.
	Src string
	// Go is the go tool; "go" from PATH by default.
	Go string
	// Kubernetes lists the versions to build; images.Kubernetes by default.
	Kubernetes []string
	// HostRoot is prepended to host paths when Debian's files are copied
	// into images; "" is the real root.
	HostRoot string
	// KubeFlags, when set, is the directory (configs/kubeflags/data) that
	// receives v<VERSION>.json for each Kubernetes version built: the flags
	// every component's --help lists, for config validation.
	KubeFlags string
	// KubeSchema, when set, is the directory (configs/kubeschema/data)
	// that receives v<VERSION>.json for each Kubernetes version built: the
	// shapes of the kubelet's and scheduler's config types.
	KubeSchema string
	// Log receives progress lines; nothing is logged when nil.
	Log io.Writer
}

// Result says what a build did.
type Result struct {
	Store          *imagestore.Store
	Built, Cached  int  // programs compiled, and found from earlier builds
	ImagesChanged  bool // whether the layout had to be written
	KubernetesBins map[string]string
	CNIDir         string // the CNI plugins: bridge, host-local, loopback, portmap, flannel
	Runc           string // runc, static with seccomp, for the node image and initramfs
	RuntimeRoot    string // iptables and nft with their libraries, merged into the node's root
	E2E, Ginkgo    string // the default version's e2e.test, and the ginkgo CLI (conformance)
}

// LayoutDir is where Build leaves the OCI layout under Out.
func LayoutDir(out string) string { return filepath.Join(out, "oci") }

type builder struct {
	opts      Options
	goVersion string
	res       Result
}

// Build builds everything Options name and writes the images.
func Build(ctx context.Context, opts Options) (*Result, error) {
	if opts.Out == "" {
		return nil, errors.New("imagebuild: no output directory")
	}

	if opts.Src == "" {
		opts.Src = "."
	}

	if opts.Go == "" {
		opts.Go = "go"
	}

	// go runs in other directories (and GOBIN must be absolute).
	var err error
	if opts.Out, err = filepath.Abs(opts.Out); err != nil {
		return nil, err
	}

	if opts.Cache == "" {
		opts.Cache = opts.Out
	}

	if opts.Cache, err = filepath.Abs(opts.Cache); err != nil {
		return nil, err
	}

	if opts.Src, err = filepath.Abs(opts.Src); err != nil {
		return nil, err
	}

	if len(opts.Kubernetes) == 0 {
		opts.Kubernetes = []string{images.Kubernetes}
	}

	for i, v := range opts.Kubernetes {
		c, err := images.CanonicalKubernetes(v)
		if err != nil {
			return nil, err
		}

		if !known(c) {
			return nil, fmt.Errorf("kubernetes %s is not pinned in internal/images (known: %s)", c, strings.Join(images.KubernetesVersions(), ", "))
		}

		opts.Kubernetes[i] = c
	}

	if _, err := os.Stat(filepath.Join(opts.Src, "images", "kubernetes", "main.go")); err != nil {
		return nil, fmt.Errorf("imagebuild needs talosbox's source tree (--src): %w", err)
	}

	b := &builder{opts: opts, res: Result{KubernetesBins: map[string]string{}}}

	out, err := exec.CommandContext(ctx, opts.Go, "env", "GOVERSION").Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOVERSION: %w (is Go installed?)", err)
	}

	b.goVersion = strings.TrimSpace(string(out))

	if err := os.MkdirAll(filepath.Join(opts.Cache, "build"), 0o755); err != nil {
		return nil, err
	}

	start := time.Now()

	specs, err := b.specs(ctx)
	if err != nil {
		return nil, err
	}

	if err := b.write(specs); err != nil {
		return nil, err
	}

	b.logf("done in %s: %d programs built, %d up to date; %d images in %s", time.Since(start).Round(time.Second),
		b.res.Built, b.res.Cached, len(b.res.Store.Images), LayoutDir(opts.Out))

	return &b.res, nil
}

func known(v string) bool {
	for _, k := range images.KubernetesVersions() {
		if k == v {
			return true
		}
	}

	return false
}

func (b *builder) logf(format string, args ...any) {
	if b.opts.Log != nil {
		fmt.Fprintf(b.opts.Log, "imager: "+format+"\n", args...)
	}
}
