// Package initramfs is the initramfs applet: `talosbox initramfs` packs
// the static talosbox binary, its applet links and the kernel modules a
// node needs into the initramfs a machine boots from.
package initramfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/talosbox/talosbox/initramfs"
	"github.com/talosbox/talosbox/internal/applet"
	"github.com/talosbox/talosbox/internal/version"
)

// Applet is the initramfs builder's entry in the multicall table.
var Applet = applet.Applet{
	Name:    "initramfs",
	Summary: "build the node's initramfs (cpio) from this binary and a Debian kernel",
	Main:    Main,
}

// KernelDirEnv names the unpacked kernel directory when --kernel-dir is
// not given (the same variable as the QEMU tests').
const KernelDirEnv = "TALOSBOX_KERNEL_DIR"

// defaultKernelDir is where scripts/fetch-kernel.sh unpacks the kernel
// in `make initramfs`.
const defaultKernelDir = "_out/kernel"

const usage = `Usage: talosbox initramfs [-o FILE] [--compress none|gzip|zstd] [--kernel-dir DIR] [flags]
       talosbox initramfs --write-modules-dep DIR

Write the node's initramfs, a newc cpio archive: the static talosbox binary
as /init, the applet links (/sbin/init, /sbin/machined, /sbin/apid, ...,
/bin/talosctl), dev/console, the root directories, /etc/os-release, and the
kernel modules the node loads at boot (--modules) and those it loads
when asked (--demand-modules) with their dependencies, and modules.dep,
modules.boot and modules.alias under /lib/modules/<release>/, and the container runtime
that "make images" builds: runc at /bin/runc and the CNI plugins in
/opt/cni/bin (containerd and its shim are applets). There is no shell unless
--with-tools adds u-root's core commands (built with go install) for
debugging.

The kernel comes from an unpacked Debian package: DIR/boot/vmlinuz-<release>
and DIR/lib/modules/<release>/, as scripts/fetch-kernel.sh leaves it. The
output is reproducible: the same inputs give the same bytes, with every
member stamped with $SOURCE_DATE_EPOCH (0 when unset).

--extension DIR adds a system extension, laid out as Talos's extension
images are: DIR/manifest.yaml (version v1alpha1, metadata.name and
metadata.version) and DIR/rootfs/, whose files join the root filesystem;
an extension adds files and replaces none, and its manifest is kept in
/usr/local/etc/talosbox/extensions/<name>.yaml. Kernel modules come from
the kernel's tree (--kernel-dir, --modules), so a custom kernel is a
--kernel-dir of its own.

--write-modules-dep writes DIR/modules.dep for a whole lib/modules/<release>
tree (a .deb ships none) and exits.

Flags:
`

// options is the parsed command line.
type options struct {
	output, binary, kernelDir, kernelVersion, modules, compress, depDir string
	demand                                                              string
	runc, cniBin, runtimeRoot                                           string
	withTools, noRuntime                                                bool
	extensions                                                          []string
}

// Main runs the applet with args (without the program name).
func Main(ctx context.Context, args []string, env applet.Env) int {
	fs := applet.NewFlags("initramfs", usage, env)

	var o options

	fs.StringVar(&o.output, "o", "", "shorthand for --output")
	fs.StringVar(&o.output, "output", "", "the file to write (default _out/initramfs.cpio, plus .gz or .zst)")
	fs.StringVar(&o.binary, "binary", "", "the static talosbox binary to put at /init (default: this program)")
	fs.StringVar(&o.kernelDir, "kernel-dir", "", "unpacked kernel package (default $"+KernelDirEnv+", then "+defaultKernelDir+")")
	fs.StringVar(&o.kernelVersion, "kernel-version", "", "kernel release to take the modules of (default: the only one in --kernel-dir)")
	fs.StringVar(&o.modules, "modules", strings.Join(initramfs.DefaultModules(), ","), "comma-separated kernel modules to include with their dependencies (empty: none)")
	fs.StringVar(&o.demand, "demand-modules", strings.Join(initramfs.DemandModules, ","),
		"comma-separated kernel modules carried but loaded only when asked for (machine.kernel.modules, or the kernel through /sbin/modprobe); those the kernel has not are left out of the default")
	fs.StringVar(&o.compress, "compress", string(initramfs.None), "none, gzip or zstd (none boots fastest under QEMU)")
	fs.StringVar(&o.runc, "runc", "", "static runc for /bin/runc (default: images/runtime/runc beside the binary, as make images leaves it)")
	fs.StringVar(&o.cniBin, "cni-bin", "", "directory of static CNI plugins for /opt/cni/bin (default: images/cni/bin beside the binary)")
	fs.StringVar(&o.runtimeRoot, "runtime-root", "", "tree merged into the root as it is: iptables and nft with their libraries, which the portmap CNI plugin runs (default: images/runtime/root beside the binary)")
	fs.BoolVar(&o.noRuntime, "no-runtime", false, "leave runc and the CNI plugins out: the node then runs no containers")
	fs.BoolVar(&o.withTools, "with-tools", false, "add u-root's core commands and a shell (gosh) in /bin, for debugging; needs go on PATH")
	fs.StringVar(&o.depDir, "write-modules-dep", "", "write `DIR`/modules.dep for a whole lib/modules/<release> tree and exit")
	fs.Func("extension", "add a system extension: `DIR` holds manifest.yaml and rootfs/, as Talos's extension images do (may be given again)", func(v string) error {
		o.extensions = append(o.extensions, v)
		return nil
	})

	if code, done := fs.Parse(args); done {
		return code
	}

	if fs.NArg() > 0 {
		fmt.Fprintf(env.Stderr, "initramfs: unexpected argument %q (see --help)\n", fs.Arg(0))
		return 2
	}

	if o.depDir != "" {
		return writeModulesDep(o.depDir, env)
	}

	if _, err := initramfs.ParseCompression(o.compress); err != nil {
		fmt.Fprintf(env.Stderr, "initramfs: --compress: %v\n", err)
		return 2
	}

	if err := run(ctx, o, env); err != nil {
		fmt.Fprintf(env.Stderr, "initramfs: %v\n", err)
		return 1
	}

	return 0
}

func writeModulesDep(dir string, env applet.Env) int {
	m, err := initramfs.OpenModules(dir)
	if err == nil {
		var n int
		if n, err = m.WriteDepFile(); err == nil {
			fmt.Fprintf(env.Stdout, "%s: %d modules\n", filepath.Join(dir, "modules.dep"), n)
			return 0
		}
	}

	fmt.Fprintf(env.Stderr, "initramfs: %v\n", err)

	return 1
}

// buildOptions turns the command line into the library's options.
func buildOptions(o options, env applet.Env) (initramfs.Options, error) {
	var (
		bo  initramfs.Options
		err error
	)

	if bo.Compression, err = initramfs.ParseCompression(o.compress); err != nil {
		return bo, fmt.Errorf("--compress: %w", err)
	}

	if bo.ModTime, err = sourceDateEpoch(env.Getenv("SOURCE_DATE_EPOCH")); err != nil {
		return bo, err
	}

	bo.Modules = []string{}

	for m := range strings.SplitSeq(o.modules, ",") {
		if m = strings.TrimSpace(m); m != "" {
			bo.Modules = append(bo.Modules, m)
		}
	}

	if o.demand != strings.Join(initramfs.DemandModules, ",") {
		bo.Demand = []string{}

		for m := range strings.SplitSeq(o.demand, ",") {
			if m = strings.TrimSpace(m); m != "" {
				bo.Demand = append(bo.Demand, m)
			}
		}
	}

	if len(bo.Modules) > 0 {
		dir := o.kernelDir
		if dir == "" {
			dir = env.Getenv(KernelDirEnv)
		}

		if dir == "" {
			dir = defaultKernelDir
		}

		k, err := initramfs.FindKernel(dir, o.kernelVersion)

		switch {
		case errors.Is(err, initramfs.ErrSeveralKernels):
			return bo, fmt.Errorf("%w: choose one with --kernel-version", err)
		case errors.Is(err, initramfs.ErrNoKernel):
			return bo, fmt.Errorf("%w: run scripts/fetch-kernel.sh %s (or pass --kernel-dir)", err, dir)
		case err != nil:
			return bo, err
		}

		bo.ModulesDir = k.ModulesDir
	}

	self, err := os.Executable()
	if err != nil && o.binary == "" {
		return bo, fmt.Errorf("find this program for /init: %w (pass --binary)", err)
	}

	bo.Binary = o.binary
	if bo.Binary == "" {
		bo.Binary = self
	}

	// The version is only known for this very binary: another one's
	// os-release goes without.
	if same(bo.Binary, self) {
		bo.Version = version.Tag
	}

	for _, dir := range o.extensions {
		e, err := initramfs.ReadExtension(dir)
		if err != nil {
			return bo, fmt.Errorf("--extension: %w", err)
		}

		bo.Extensions = append(bo.Extensions, e)
	}

	if !o.noRuntime {
		beside, err := initramfs.RuntimeBeside(bo.Binary)
		if err != nil && (o.runc == "" || o.cniBin == "" || o.runtimeRoot == "") {
			return bo, fmt.Errorf("%w, or pass --runc, --cni-bin and --runtime-root, or --no-runtime", err)
		}

		bo.Runtime = beside
		if o.runc != "" {
			bo.Runtime.Runc = o.runc
		}

		if o.cniBin != "" {
			bo.Runtime.CNIBinDir = o.cniBin
		}

		if o.runtimeRoot != "" {
			bo.Runtime.Root = o.runtimeRoot
		}
	}

	return bo, nil
}

// same reports whether two paths name the same file.
func same(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}

	sb, err := os.Stat(b)

	return err == nil && os.SameFile(sa, sb)
}

func sourceDateEpoch(s string) (uint32, error) {
	if s == "" {
		return 0, nil
	}

	v, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want seconds since 1970 that fit a cpio header: %w", s, err)
	}

	return uint32(v), nil
}

func run(ctx context.Context, o options, env applet.Env) error {
	bo, err := buildOptions(o, env)
	if err != nil {
		return err
	}

	if o.withTools {
		dir, err := os.MkdirTemp("", "talosbox-tools-")
		if err != nil {
			return fmt.Errorf("--with-tools: %w", err)
		}
		defer os.RemoveAll(dir)

		fmt.Fprintf(env.Stderr, "initramfs: building u-root %s tools: %s\n", initramfs.URootVersion, strings.Join(initramfs.DefaultTools(), " "))

		if bo.Tools, err = initramfs.BuildTools(ctx, dir, initramfs.DefaultTools()); err != nil {
			return fmt.Errorf("--with-tools: %w", err)
		}
	}

	out := o.output
	if out == "" {
		out = filepath.Join("_out", "initramfs.cpio"+bo.Compression.Ext())
	}

	res, err := initramfs.BuildFile(out, bo)
	if err != nil {
		return err
	}

	kernel := "no kernel modules"
	if res.Release != "" {
		kernel = "kernel " + res.Release
	}

	demand := ""
	if len(res.Demand) > 0 {
		demand = fmt.Sprintf(" and %d on demand", len(res.Demand))
	}

	fmt.Fprintf(env.Stdout, "%s: %.1f MiB (%d bytes, %s; %d uncompressed), %d entries, %d modules%s (%s)\n",
		out, float64(res.Size)/(1<<20), res.Size, bo.Compression, res.CPIOSize, res.Entries, len(res.Modules), demand, kernel)

	return nil
}
