// Package imager is the imager applet: `talosbox imager` builds every
// container image a node runs from source (Kubernetes, CoreDNS, flannel,
// pause) into an OCI image layout, the air-gapped image cache that
// `talosctl image cache-serve` serves. It is a build tool: it needs the
// talosbox source tree and Go.
package imager

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/talosbox/talosbox/internal/applet"
	"github.com/talosbox/talosbox/internal/imagebuild"
	"github.com/talosbox/talosbox/internal/images"
	"github.com/talosbox/talosbox/internal/imagestore"
)

// Applet is the image builder's entry in the multicall table.
var Applet = applet.Applet{
	Name:    "imager",
	Summary: "build the node's container images from source into an OCI layout (make images)",
	Main:    Main,
}

const usage = `Usage: talosbox imager [--out DIR] [--kubernetes VERSION[,VERSION]|default|all] [--src DIR] [--kubectl DIR] [--kubeflags DIR]

Build every image a talosbox node runs, from source through the Go module
proxy, and write them to the OCI image layout DIR/oci:

  registry.k8s.io/kube-apiserver, kube-controller-manager, kube-scheduler,
  kube-proxy and ghcr.io/siderolabs/kubelet   one binary for all components
  registry.k8s.io/coredns/coredns, ghcr.io/siderolabs/flannel,
  registry.k8s.io/pause                       (talosctl image default lists them)

Versions are pinned in internal/images. Every output is cached under the
--cache DIR (make images: ~/.cache/talosbox/images, or $TALOSBOX_CACHE) by
the hash of its inputs: a second run with nothing changed, from this
checkout or a fresh clone, builds nothing and says so. The first build of Kubernetes takes about 15 minutes on 2 cores.
The CNI plugins the node needs are left in DIR/cni/bin. --kubeflags writes
each version's component flags, as their --help lists them, to
v<VERSION>.json in its directory, for config validation (configs/kubeflags).

talosbox imager installer builds the installer image instead, and
talosbox imager iso, metal and pxe the boot media (see their --help);
talosbox imager customize runs inside docker build FROM an installer image.

Flags:
`

// Main runs the applet with args (without the program name).
func Main(ctx context.Context, args []string, env applet.Env) int {
	if len(args) > 0 {
		switch args[0] {
		case "installer":
			return installerMain(ctx, args[1:], env)
		case "customize":
			return customizeMain(args[1:], env)
		case "iso", "metal", "pxe":
			return mediaMain(ctx, args[0], args[1:], env)
		}
	}

	fs := applet.NewFlags("imager", usage, env)

	var opts imagebuild.Options

	var kube, kubectl string

	fs.StringVar(&opts.Out, "out", filepath.Join("_out", "images"), "the output `DIR`: the OCI layout DIR/oci, DIR/cni/bin, DIR/runtime")
	fs.StringVar(&opts.Cache, "cache", "", "keep the builds and layers, keyed by their inputs, in `DIR` (default: --out); one outside the clone lets every checkout reuse them")
	fs.StringVar(&opts.Src, "src", ".", "talosbox's source tree")
	fs.StringVar(&kube, "kubernetes", images.Kubernetes, "Kubernetes versions to build, comma-separated; default; or all ("+strings.Join(images.KubernetesVersions(), ", ")+")")
	fs.StringVar(&kubectl, "kubectl", "", "also link kubectl (the default version's), e2e.test and ginkgo into `DIR`")
	fs.StringVar(&opts.KubeFlags, "kubeflags", "", "write each Kubernetes version's component flags to `DIR`/v<VERSION>.json (configs/kubeflags/data)")
	fs.StringVar(&opts.KubeSchema, "kubeschema", "", "write each Kubernetes version's kubelet and scheduler config types to `DIR`/v<VERSION>.json (configs/kubeschema/data)")

	if code, done := fs.Parse(args); done {
		return code
	}

	if fs.NArg() > 0 {
		fmt.Fprintf(env.Stderr, "imager: unexpected argument %q (see --help)\n", fs.Arg(0))
		return 2
	}

	switch kube {
	case "all":
		opts.Kubernetes = images.KubernetesVersions()
	case "default":
		opts.Kubernetes = []string{images.Kubernetes}
	default:
		for v := range strings.SplitSeq(kube, ",") {
			if v = strings.TrimSpace(v); v != "" {
				opts.Kubernetes = append(opts.Kubernetes, v)
			}
		}
	}

	opts.Log = env.Stdout

	res, err := imagebuild.Build(ctx, opts)
	if err != nil {
		fmt.Fprintf(env.Stderr, "imager: %v\n", err)
		return 1
	}

	if kubectl != "" {
		if err := linkKubectl(res, kubectl); err != nil {
			fmt.Fprintf(env.Stderr, "imager: --kubectl: %v\n", err)
			return 1
		}
	}

	return 0
}

// linkKubectl puts kubectl in dir as a hard link to (or a copy of) the
// Kubernetes binary, which dispatches on its name.
func linkKubectl(res *imagebuild.Result, dir string) error {
	bin := res.KubernetesBins[images.Kubernetes]
	if bin == "" {
		for _, b := range res.KubernetesBins {
			bin = b
		}
	}

	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}

	if err := imagestore.LinkOrCopy(bin, filepath.Join(dir, "kubectl")); err != nil {
		return err
	}

	// The conformance suite, which talosctl finds beside itself.
	for name, src := range map[string]string{"e2e.test": res.E2E, "ginkgo": res.Ginkgo} {
		if src == "" {
			continue
		}

		if err := imagestore.LinkOrCopy(src, filepath.Join(dir, name)); err != nil {
			return err
		}
	}

	return nil
}
