// Package render renders, without a node, everything a node would make of
// a machine config: the control plane's static pods and the files they
// read, the kubelet's configuration and flags, the bootstrap manifests,
// etcd's flags, the containerd and CRI configs with the registry hosts
// tree, grub.cfg and the install disk's layout, machine.files as they
// would land, and the sysctls. Render gives them as files for operators to
// review and diff (talosctl validate --render); Check runs the same
// renderers and returns what fails, which is the other half of
// validation: a config the node cannot render is not valid.
//
// What only a running node knows (its hostname, addresses, kernel command
// line, disk, generated certificates) is replaced by documented
// placeholders (Options, Placeholder). The renderers are the node's own
// (internal/k8s/render, internal/k8s/manifests/templates, internal/cri,
// internal/bootloader, internal/disk), or for etcd a pure rendering of
// what internal/etcd configures, kept in step by tests. Nothing here does
// I/O except Artifacts.Write and running the components' own validators
// (kubeValidate).
package render

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/talosbox/talosbox/configs"
)

// Options are what a node would know and a config does not, and how to
// treat secrets. Zero values take the defaults documented on each field;
// Render records the values it used in Artifacts.Placeholders.
type Options struct {
	// Mode is the platform rendered for: metal (the default) renders the
	// boot disk too; container is a Docker node (no disk, the host's
	// kernel defaults); cloud renders as metal.
	Mode configs.Mode
	// Hostname is the node's; DefaultHostname when empty.
	Hostname string
	// NodeIPs are the node's addresses; DefaultNodeIPs when empty.
	NodeIPs []netip.Addr
	// KernelCmdline is the command line the node was booted with, which
	// an install copies into grub.cfg; DefaultKernelCmdline when empty.
	KernelCmdline string
	// DiskSize is the install disk's size in bytes; DefaultDiskSize
	// when 0.
	DiskSize int64
	// WithSecrets keeps the config's secrets in clear; without it every
	// secret (configs' list, as redacted for os:reader) is replaced by
	// configs.Redacted wherever it appears.
	WithSecrets bool
	// KubeBinaries finds the Kubernetes binary that validates the
	// components' configs (kube-config-validate) in a component's image;
	// nil looks in the image cache of a machine that built the images
	// (configs/kubevalidate.Find). A node passes its own
	// (internal/k8s/validator), and a config it could not validate so
	// gets a warning.
	KubeBinaries KubeBinaries

	// warn receives the warnings of the renderers (LoadOn).
	warn func(string)
}

// KubeBinaries returns the path of the Kubernetes binary in image (a
// component's image as the config names it) that runs as
// kube-config-validate, or why there is none.
type KubeBinaries func(ctx context.Context, image string) (string, error)

// Option changes the Options Check renders with.
type Option func(*Options)

// WithHostname is Options.Hostname.
func WithHostname(h string) Option { return func(o *Options) { o.Hostname = h } }

// WithNodeIPs is Options.NodeIPs.
func WithNodeIPs(ips ...netip.Addr) Option { return func(o *Options) { o.NodeIPs = ips } }

// WithKernelCmdline is Options.KernelCmdline.
func WithKernelCmdline(c string) Option { return func(o *Options) { o.KernelCmdline = c } }

// WithDiskSize is Options.DiskSize.
func WithDiskSize(n int64) Option { return func(o *Options) { o.DiskSize = n } }

// WithKubeBinaries is Options.KubeBinaries.
func WithKubeBinaries(f KubeBinaries) Option { return func(o *Options) { o.KubeBinaries = f } }

func withWarnings(f func(string)) Option { return func(o *Options) { o.warn = f } }

// Render renders every artifact of cfg. It fails, with every problem as
// Check reports them, when any renderer does; inputs a node supplies never
// make it fail (a placeholder address that matches no configured subnet is
// a note, not an error).
func Render(cfg *configs.Config, opts Options) (*Artifacts, error) {
	b := newBuilder(cfg, opts, false)
	b.build()

	if err := b.err(); err != nil {
		return nil, err
	}

	if !opts.WithSecrets {
		redact(cfg, b.arts)
	}

	b.arts.Redacted = !opts.WithSecrets

	if err := b.arts.addIndex(); err != nil {
		return nil, err
	}

	return b.arts, nil
}

// Check runs every renderer on cfg for mode and returns every failure as
// a *configs.Errors of *configs.ValidationError, each with the config path
// that caused it where one is known, so it composes with
// configs.Validate's. It writes nothing; its only I/O is running the
// components' own validators (kubeValidate).
func Check(cfg *configs.Config, mode configs.Mode, opts ...Option) error {
	o := Options{Mode: mode}
	for _, opt := range opts {
		opt(&o)
	}

	b := newBuilder(cfg, o, true)
	b.build()

	return b.err()
}

// builder runs the renderers, collecting artifacts and problems.
type builder struct {
	cfg   *configs.Config
	opts  Options
	node  node
	check bool // Check: artifacts are rendered but not kept

	arts *Artifacts
	errs []error
}

func newBuilder(cfg *configs.Config, opts Options, check bool) *builder {
	opts.Mode = cmp.Or(opts.Mode, configs.ModeMetal)

	b := &builder{cfg: cfg, opts: opts, check: check, arts: &Artifacts{Mode: opts.Mode}}
	b.node = b.placeholders()

	return b
}

func (b *builder) build() {
	if b.cfg == nil || b.cfg.Machine == nil {
		b.fail("machine", "the config has no machine section: a node renders nothing from it")

		return
	}

	b.kubernetes()
	b.etcd()
	b.runtime()
	b.boot()
	b.files()
	b.sysctls()

	slices.SortStableFunc(b.arts.List, func(x, y Artifact) int { return strings.Compare(x.Path, y.Path) })

	// Artifacts at one path (inline manifests whose names differ only in
	// characters a file name cannot hold) all stay.
	seen := map[string]bool{}

	for i, a := range b.arts.List {
		for n := 2; seen[b.arts.List[i].Path]; n++ {
			b.arts.List[i].Path = fmt.Sprintf("%s~%d", a.Path, n)
		}

		seen[b.arts.List[i].Path] = true
	}

	slices.SortStableFunc(b.arts.List, func(x, y Artifact) int { return strings.Compare(x.Path, y.Path) })
}

// add keeps an artifact (Render only: Check renders without keeping).
func (b *builder) add(a Artifact) {
	if b.check {
		return
	}

	b.arts.List = append(b.arts.List, a)
}

// warn records a warning at a config path, where the caller takes them
// (LoadOn); Check alone reports errors only.
func (b *builder) warn(path, format string, args ...any) {
	if b.opts.warn != nil {
		b.opts.warn(path + ": " + sprintf(format, args...))
	}
}

// note records something a reader of the artifacts should know.
func (b *builder) note(format string, args ...any) {
	if b.check {
		return
	}

	b.arts.Notes = append(b.arts.Notes, sprintf(format, args...))
}

// fail records a problem at a config path.
func (b *builder) fail(path, format string, args ...any) {
	b.errs = append(b.errs, &configs.ValidationError{Path: path, Msg: sprintf(format, args...)})
}

// failErr records a renderer's error. Renderers name the config path at
// the start of their messages ("cluster.apiServer.extraArgs: ..."), which
// becomes the problem's path; def is the path when the message names none.
func (b *builder) failErr(def string, err error) {
	path, msg := splitPath(err.Error())
	if path == "" {
		path = def
	}

	b.errs = append(b.errs, &configs.ValidationError{Path: path, Msg: msg})
}

func (b *builder) err() error {
	if len(b.errs) == 0 {
		return nil
	}

	return &configs.Errors{List: slices.Clone(b.errs)}
}
