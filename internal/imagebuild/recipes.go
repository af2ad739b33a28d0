package imagebuild

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/talosbox/talosbox/internal/images"
	"github.com/talosbox/talosbox/internal/imagestore"
)

// kubeComponents are the names the Kubernetes binary answers to; each is a
// symlink next to it in the shared layer.
var kubeComponents = []string{
	images.APIServerName, images.ControllerManagerName, images.SchedulerName,
	images.ProxyName, images.KubeletName, "kubectl",
}

const cniModule = "github.com/containernetworking/plugins"

// cniPlugins are the plugins a node needs for the default CNI: flannel
// delegates to bridge with host-local addresses; loopback is every pod's
// lo; portmap serves hostPort.
var cniPlugins = []string{
	cniModule + "/plugins/main/bridge",
	cniModule + "/plugins/ipam/host-local",
	cniModule + "/plugins/main/loopback",
	cniModule + "/plugins/meta/portmap",
}

func (b *builder) programs() map[string]program {
	v := func(s string) string { return "v" + s }

	return map[string]program{
		"coredns": {
			name: "coredns", version: v(images.CoreDNS),
			module: "github.com/coredns/coredns", pkgs: []string{"github.com/coredns/coredns"},
			ldflags: func(mi moduleInfo) []string {
				return []string{"-X", "github.com/coredns/coredns/coremain.GitCommit=" + short(mi.Commit)}
			},
		},
		"flannel": {
			name: "flannel", version: v(images.Flannel),
			module: "github.com/flannel-io/flannel", pkgs: []string{"github.com/flannel-io/flannel"}, cgo: true,
			ldflags: func(moduleInfo) []string {
				return []string{"-X", "github.com/flannel-io/flannel/pkg/version.Version=" + v(images.Flannel)}
			},
		},
		"cni": {
			name: "cni-plugins", version: v(images.CNIPlugins),
			module: cniModule, pkgs: cniPlugins,
			ldflags: func(moduleInfo) []string {
				return []string{"-X", cniModule + "/pkg/utils/buildversion.BuildVersion=" + v(images.CNIPlugins)}
			},
		},
		"runc": {
			name: "runc", version: v(images.Runc),
			module: "github.com/opencontainers/runc", pkgs: []string{"github.com/opencontainers/runc"}, cgo: true,
			tags: []string{"seccomp"},
			ldflags: func(mi moduleInfo) []string {
				return []string{"-X", "main.version=" + images.Runc, "-X", "main.gitCommit=" + mi.Commit}
			},
		},
		"pause": {
			name: "pause", version: images.Pause, local: []string{"images/pause"},
			ldflags: func(moduleInfo) []string { return []string{"-X", "main.version=" + images.Pause} },
		},
		"echo": {
			name: "echo", version: "v" + images.Echo, local: []string{"images/echo"},
			ldflags: func(moduleInfo) []string { return []string{"-X", "main.version=v" + images.Echo} },
		},
		"ginkgo": {
			name: "ginkgo", version: v(images.Ginkgo),
			module: "github.com/onsi/ginkgo/v2", pkgs: []string{"github.com/onsi/ginkgo/v2/ginkgo"},
			ldflags: func(moduleInfo) []string { return nil },
		},
		"flannel-cni": {
			name: "flannel-cni", version: v(images.Flannel), local: []string{"images/flannel-cni"},
			ldflags: func(moduleInfo) []string { return []string{"-X", "main.buildVersion=" + v(images.Flannel)} },
		},
	}
}

func short(commit string) string {
	if len(commit) > 7 {
		return commit[:7]
	}

	return commit
}

// specs builds every program and layer and says what each image holds.
func (b *builder) specs(ctx context.Context) ([]spec, error) {
	bins := map[string]string{}

	progs := b.programs()
	for _, name := range []string{"pause", "echo", "flannel-cni", "cni", "runc", "flannel", "coredns"} {
		dir, err := b.build(ctx, progs[name])
		if err != nil {
			return nil, err
		}

		bins[name] = dir
	}

	netfilter, err := b.hostLayer("netfilter", netfilterFiles)
	if err != nil {
		return nil, err
	}

	mount, err := b.hostLayer("mount", mountFiles)
	if err != nil {
		return nil, err
	}

	nfs, err := b.nfsLayer(ctx)
	if err != nil {
		return nil, err
	}

	file := func(dst, src string) entry { return entry{path: dst, src: src, mode: 0o755} }

	// The kubelet looks its users up (user namespaces, static pods'
	// runAsUser): a root and a nobody, as a minimal image has them.
	etc, err := b.makeLayer("etc", []entry{
		{path: "/etc/passwd", mode: 0o644, data: "root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n"},
		{path: "/etc/group", mode: 0o644, data: "root:x:0:\nnogroup:x:65534:\n"},
	})
	if err != nil {
		return nil, err
	}

	pause, err := b.makeLayer("pause", []entry{file("/pause", filepath.Join(bins["pause"], "pause"))})
	if err != nil {
		return nil, err
	}

	echo, err := b.makeLayer("echo", []entry{file("/echo", filepath.Join(bins["echo"], "echo"))})
	if err != nil {
		return nil, err
	}

	coredns, err := b.makeLayer("coredns", []entry{file("/coredns", filepath.Join(bins["coredns"], "coredns"))})
	if err != nil {
		return nil, err
	}

	flannel, err := b.makeLayer("flannel", []entry{
		file("/opt/bin/flanneld", filepath.Join(bins["flannel"], "flannel")),
		file("/opt/cni/bin/flannel", filepath.Join(bins["flannel-cni"], "flannel-cni")),
	})
	if err != nil {
		return nil, err
	}

	if err := b.cniDir(bins); err != nil {
		return nil, err
	}

	out := []spec{
		{ref: images.PauseImage(), version: images.Pause, layers: []*layer{pause}, entrypoint: []string{"/pause"}},
		{ref: images.EchoImage(), version: "v" + images.Echo, layers: []*layer{echo}, entrypoint: []string{"/echo", "serve"}},
		{ref: images.CoreDNSImage(), version: "v" + images.CoreDNS, layers: []*layer{coredns}, entrypoint: []string{"/coredns"}},
		{ref: images.FlannelImage(), version: "v" + images.Flannel, layers: []*layer{netfilter, flannel}, entrypoint: []string{"/opt/bin/flanneld"}},
	}

	for _, kv := range b.opts.Kubernetes {
		dir, err := b.build(ctx, program{name: "kubernetes", version: "v" + kv, kube: true, ldflags: kubeLdflags("v" + kv)})
		if err != nil {
			return nil, err
		}

		bin := filepath.Join(dir, "kubernetes")
		b.res.KubernetesBins[kv] = bin

		// The keyed build directory holds the binary on a cached run too.
		if err := b.writeKubeData(ctx, kv, bin); err != nil {
			return nil, err
		}

		entries := []entry{file("/usr/local/bin/kubernetes", bin)}
		for _, c := range kubeComponents {
			entries = append(entries, entry{path: "/usr/local/bin/" + c, link: "kubernetes", mode: 0o777})
		}

		kube, err := b.makeLayer("kubernetes-v"+kv, entries)
		if err != nil {
			return nil, err
		}

		for _, r := range []struct {
			ref    images.Ref
			layers []*layer
		}{
			{images.APIServer(kv), []*layer{kube}},
			{images.ControllerManager(kv), []*layer{kube}},
			{images.Scheduler(kv), []*layer{kube}},
			{images.Proxy(kv), []*layer{kube, netfilter}},
			{images.Kubelet(kv), []*layer{etc, kube, netfilter, mount, nfs}},
		} {
			out = append(out, spec{ref: r.ref, version: "v" + kv, layers: r.layers, entrypoint: []string{"/usr/local/bin/" + r.ref.Component}})
		}
	}

	if err := b.conformanceTools(ctx); err != nil {
		return nil, err
	}

	if slices.Contains(b.opts.Kubernetes, images.Kubernetes) {
		e2e, err := b.conformanceSpecs(ctx, pause, filepath.Join(bins["coredns"], "coredns"))
		if err != nil {
			return nil, fmt.Errorf("conformance images: %w", err)
		}

		out = append(out, e2e...)
	}

	return out, nil
}

// conformanceTools builds the upstream end-to-end suite (e2e.test) of the
// default Kubernetes version, and the ginkgo CLI that runs it in
// parallel: talosctl conformance kubernetes runs them from the host.
func (b *builder) conformanceTools(ctx context.Context) error {
	if !slices.Contains(b.opts.Kubernetes, images.Kubernetes) {
		return nil
	}

	kv := images.Kubernetes

	dir, err := b.build(ctx, program{
		name: "e2e", version: "v" + kv, kube: true, test: "k8s.io/kubernetes/test/e2e",
		tags: []string{"selinux", "notest", "grpcnotrace"}, ldflags: kubeLdflags("v" + kv),
	})
	if err != nil {
		return err
	}

	b.res.E2E = filepath.Join(dir, "e2e.test")

	dir, err = b.build(ctx, b.programs()["ginkgo"])
	if err != nil {
		return err
	}

	b.res.Ginkgo = filepath.Join(dir, "ginkgo")

	return nil
}

// cniDir gathers the node's CNI plugins in one directory (Out/cni/bin),
// and runc in Out/runtime: hard links to the keyed builds, for the node
// image and initramfs.
func (b *builder) cniDir(bins map[string]string) error {
	dir := filepath.Join(b.opts.Out, "cni", "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}

	srcs := map[string]string{"flannel": filepath.Join(bins["flannel-cni"], "flannel-cni")}

	// runc sits beside them (Out/runtime/runc): what a node's runtime
	// needs besides the talosbox binary, found in one place.
	runc := filepath.Join(b.opts.Out, "runtime", "runc")
	if err := os.MkdirAll(filepath.Dir(runc), 0o755); err != nil {
		return err
	}

	if err := imagestore.LinkOrCopy(filepath.Join(bins["runc"], "runc"), runc); err != nil {
		return err
	}

	b.res.Runc = runc

	for _, p := range cniPlugins {
		name := filepath.Base(p)
		srcs[name] = filepath.Join(bins["cni"], name)
	}

	for name, src := range srcs {
		if err := imagestore.LinkOrCopy(src, filepath.Join(dir, name)); err != nil {
			return err
		}
	}

	b.res.CNIDir = dir

	return b.runtimeRoot()
}

// runtimeRoot writes Out/runtime/root: the node's own netfilter userspace
// (Debian's iptables and nft, their xtables extensions, loader and
// libraries), merged into the node's root filesystem. The portmap CNI
// plugin runs iptables on the node itself, not in a container: without
// it a pod with a hostPort never starts.
func (b *builder) runtimeRoot() error {
	h := newHostFiles(b.opts.HostRoot)
	if err := netfilterFiles(h); err != nil {
		return fmt.Errorf("node runtime root: %w", err)
	}

	dir := filepath.Join(b.opts.Out, "runtime", "root")
	if err := writeTree(dir, h.entries()); err != nil {
		return fmt.Errorf("node runtime root: %w", err)
	}

	b.res.RuntimeRoot = dir

	return nil
}

// writeTree replaces dir with the entries, written beside it first so that
// a reader never sees half a tree. Symlinks are kept as they are: their
// absolute targets name paths in the node's root, not this machine's.
func writeTree(dir string, es []entry) error {
	tmp := dir + ".new"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}

	for _, e := range es {
		p := filepath.Join(tmp, e.path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}

		var err error

		switch {
		case e.dir:
			err = os.MkdirAll(p, e.mode)
		case e.link != "":
			err = os.Symlink(e.link, p)
		case e.src == "":
			err = os.WriteFile(p, []byte(e.data), e.mode)
		default:
			err = imagestore.LinkOrCopy(e.src, p)
		}

		if err != nil {
			return err
		}
	}

	if err := os.RemoveAll(dir); err != nil {
		return err
	}

	return os.Rename(tmp, dir)
}

// write assembles the images and writes those whose digest differs from
// the layout's, so an unchanged build leaves the layout untouched.
func (b *builder) write(specs []spec) error {
	dir := LayoutDir(b.opts.Out)
	old, _ := imagestore.Open(dir)

	var named []imagestore.Named

	for _, s := range specs {
		img, err := assemble(s)
		if err != nil {
			return err
		}

		if old != nil {
			d, err := img.Digest()
			if err != nil {
				return err
			}

			if im, ok := old.Lookup(s.ref.String()); ok && im.Descriptor.Digest == d {
				continue
			}
		}

		named = append(named, imagestore.Named{Ref: s.ref.String(), Image: img})
	}

	if len(named) == 0 {
		b.res.Store = old
		b.logf("images: nothing to do, all %d up to date", len(specs))

		return nil
	}

	for _, n := range named {
		d, _ := n.Image.Digest()
		b.logf("image %s: %s", n.Ref, d)
	}

	// The layout's layer blobs are hard links to the layer cache, so the
	// two do not hold the same hundreds of megabytes twice; the layout
	// writer then finds them present and skips them.
	blobs := filepath.Join(dir, "blobs", "sha256")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		return err
	}

	for _, s := range specs {
		for _, l := range s.layers {
			dst := filepath.Join(blobs, l.Digest.Hex)
			if _, err := os.Stat(dst); err == nil {
				continue
			}

			if err := os.Link(l.file, dst); err != nil {
				break // another file system: the writer copies it
			}
		}
	}

	s, err := imagestore.Write(dir, named)
	if err != nil {
		return err
	}

	b.res.Store, b.res.ImagesChanged = s, true

	return nil
}
