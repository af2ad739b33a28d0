package initramfs

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/talosbox/talosbox/internal/version"
)

// DefaultModules are the kernel modules a node loads at boot on Debian's
// cloud kernel, where all of them are =m: virtio devices (the RNG keeps
// getrandom from blocking for minutes under TCG), dm-crypt for encrypted
// partitions with the xts and ecb templates its aes-xts-plain64 is built
// from (the kernel would ask modprobe for them, and a node has none: the
// table load fails with ENOENT), overlayfs, xfs, and the link types
// networkd creates.
func DefaultModules() []string {
	return append([]string{"virtio_pci", "virtio_net", "virtio_blk", "virtio_rng", "virtio_balloon", "dm_crypt", "xts", "ecb", "overlay", "xfs", "bonding", "8021q", "wireguard"},
		KubernetesModules...)
}

// KubernetesModules are what containers and Kubernetes need from a kernel
// that has them as modules (Debian's cloud kernel): pod networking
// (bridge, veth, vxlan for flannel, br_netfilter so bridged traffic sees
// iptables), kube-proxy's and flannel's netfilter (nf_tables with the
// iptables compatibility layer, the legacy tables, NAT, conntrack and the
// xt matches and targets they use) and IPVS for kube-proxy's ipvs mode.
var KubernetesModules = []string{
	"bridge", "br_netfilter", "veth", "vxlan",
	"nf_tables", "nft_chain_nat", "nft_compat", "nft_ct", "nft_masq", "nft_nat", "nft_reject_inet", "nft_fib_inet", "nft_limit",
	"ip_tables", "iptable_nat", "iptable_filter", "iptable_mangle", "ip6_tables", "ip6table_nat", "ip6table_filter", "ip6table_mangle",
	// nftables expressions are modules the kernel would load on demand
	// through modprobe, which the initramfs has not: kube-proxy's
	// nftables mode needs numgen (endpoint choice), reject and fib.
	"nft_numgen", "nft_reject_ipv4", "nft_reject_ipv6", "nft_fib_ipv4", "nft_fib_ipv6", "nft_objref", "nft_hash", "nft_redir", "nft_log",
	"nf_nat", "nf_conntrack", "nf_conntrack_netlink", "nf_reject_ipv4", "ipt_REJECT", "ip6t_REJECT",
	"xt_conntrack", "xt_MASQUERADE", "xt_comment", "xt_mark", "xt_connmark", "xt_multiport", "xt_addrtype", "xt_nat",
	"xt_tcpudp", "xt_statistic", "xt_physdev", "xt_set", "ip_set", "xt_limit", "xt_CT", "xt_NFLOG", "nfnetlink_log",
	"ip_vs", "ip_vs_rr", "ip_vs_wrr", "ip_vs_sh",
}

// DemandModules are carried but not loaded at boot: a node loads them
// when asked, by machine.kernel.modules or by the kernel itself through
// /sbin/modprobe (an nfs volume's mount asks for fs-nfs4, then nfs for
// nfsv4). They are the NFS client (v3 and v4) the kubelet mounts nfs
// volumes with, the Ceph clients Rook's CSI drivers use: rbd for
// block volumes, ceph for CephFS, both over libceph, and softdog, the
// software watchdog a WatchdogTimerConfig can drive where the machine
// has no hardware one (Debian's cloud kernel lacks i6300esb, iTCO_wdt
// and sp5100_tco).
var DemandModules = []string{"nfs", "nfsv3", "nfsv4", "rbd", "ceph", "softdog"}

// DefaultLinks are the applet symlinks to /init, at Talos's paths. The
// binary dispatches on its argv[0]'s base name, so each link runs its
// applet; /sbin/init is machined. Keep them in step with main.go's table.
func DefaultLinks() []string {
	return []string{"/sbin/init", "/sbin/machined", "/sbin/apid", "/sbin/trustd", "/sbin/networkd", "/sbin/etcd", "/sbin/modprobe", "/bin/talosctl",
		"/bin/containerd", "/bin/containerd-shim-runc-v2"}
}

// skeleton is the directory tree of the root filesystem: the mount points
// machined uses on metal (internal/platform) and the usual top level.
var skeleton = []struct {
	dir  string
	perm os.FileMode
}{
	{"bin", 0o755}, {"dev", 0o755}, {"etc", 0o755}, {"lib/modules", 0o755}, {"mnt", 0o755},
	{"proc", 0o555}, {"root", 0o700}, {"run", 0o755}, {"sbin", 0o755}, {"sys", 0o555},
	{"system", 0o755}, {"tmp", 0o777 | os.ModeSticky}, {"var", 0o755},
}

// Options describe a node initramfs. Zero fields take their defaults.
type Options struct {
	// Binary is the static talosbox binary; it becomes /init. Required.
	Binary string
	// ModulesDir is the kernel's lib/modules/<release> (Kernel.ModulesDir);
	// its base name is the release. Required unless Modules is empty.
	ModulesDir string
	// Modules are the kernel modules to include with their dependencies;
	// nil means DefaultModules, an empty slice none.
	Modules []string
	// Demand are modules carried but loaded only on request (see
	// DemandModules, the default when nil, where those the kernel has
	// not are left out; an empty slice means none). /lib/modules/
	// <release>/modules.boot names the boot ones, and modules.alias maps
	// the names the kernel asks for to them.
	Demand []string
	// Links are absolute paths of symlinks to /init; nil means
	// DefaultLinks, an empty slice none.
	Links []string
	// Tools are extra static executables (BuildTools makes u-root's) put
	// into /bin under their base names; a "gosh" also becomes /bin/sh.
	// For debugging only: a node has no shell.
	Tools []string
	// Compression is None when empty.
	Compression Compression
	// ModTime stamps every member, in seconds since the epoch (a
	// SOURCE_DATE_EPOCH); 0 by default.
	ModTime uint32
	// Version goes into /etc/os-release as VERSION_ID when not empty.
	Version string
	// Runtime is runc and the CNI plugins (/bin/runc, /opt/cni/bin);
	// without it the node runs no containers.
	Runtime Runtime
	// Extensions add their files to the root filesystem (ReadExtension).
	Extensions []Extension
}

// Result describes a built initramfs.
type Result struct {
	// Release is the kernel release of the modules ("" without modules).
	Release string
	// Modules are the module files added (the requested ones and their
	// dependencies), relative to ModulesDir, in load order.
	Modules []string
	// Demand are the files added for Options.Demand beyond Modules.
	Demand []string
	// Entries counts the archive's members (without the trailer).
	Entries int
	// CPIOSize is the archive's size before compression.
	CPIOSize int64
	// Size is the number of bytes written (after compression).
	Size int64
}

// ErrNotStatic means a binary needs a dynamic loader, which an initramfs
// does not have: the kernel would fail to run /init.
var ErrNotStatic = errors.New("dynamically linked")

// CheckStatic reports whether the ELF executable at p runs without a
// dynamic loader (no PT_INTERP program header).
func CheckStatic(p string) error {
	f, err := elf.Open(p)
	if err != nil {
		return fmt.Errorf("check %s: %w", p, err)
	}
	defer f.Close()

	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return fmt.Errorf("check %s: ELF type %v is not an executable", p, f.Type)
	}

	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is %w (it has a PT_INTERP program header): build it with CGO_ENABLED=0, as make build does", p, ErrNotStatic)
		}
	}

	return nil
}

// Assemble plans the initramfs o describes without writing it, for a
// caller that adds members of its own (a machine config for a test, say)
// before WriteTo. The Result's sizes are left zero.
func Assemble(o Options) (*Archive, *Result, error) {
	if o.Binary == "" {
		return nil, nil, errors.New("initramfs: no binary for /init")
	}

	if err := CheckStatic(o.Binary); err != nil {
		return nil, nil, err
	}

	a := New()
	a.SetModTime(o.ModTime)

	for _, d := range skeleton {
		a.Dir(d.dir, d.perm)
	}

	if err := a.File("init", o.Binary, 0o755); err != nil {
		return nil, nil, err
	}

	a.Bytes("etc/os-release", version.OSRelease(o.Version), 0o644)

	links := o.Links
	if links == nil {
		links = DefaultLinks()
	}

	for _, l := range links {
		if !path.IsAbs(l) || a.Has(l) {
			return nil, nil, fmt.Errorf("initramfs: link %q must be an absolute path not yet in the archive", l)
		}

		a.Symlink(l, "/init")
	}

	for _, t := range o.Tools {
		name := filepath.Base(t)
		if a.Has("bin/" + name) {
			return nil, nil, fmt.Errorf("initramfs: tool %s: /bin/%s is in the archive already", t, name)
		}

		if err := CheckStatic(t); err != nil {
			return nil, nil, fmt.Errorf("initramfs: tool: %w", err)
		}

		if err := a.File("bin/"+name, t, 0o755); err != nil {
			return nil, nil, err
		}

		if name == "gosh" && !a.Has("bin/sh") {
			a.Symlink("bin/sh", "gosh")
		}
	}

	rtFiles, err := o.Runtime.Files()
	if err != nil {
		return nil, nil, fmt.Errorf("initramfs: %w", err)
	}

	for _, name := range slices.Sorted(maps.Keys(rtFiles)) {
		if err := a.File(name, rtFiles[name], 0o755); err != nil {
			return nil, nil, err
		}
	}

	treeFiles, treeLinks, err := o.Runtime.Tree()
	if err != nil {
		return nil, nil, fmt.Errorf("initramfs: %w", err)
	}

	for _, name := range slices.Sorted(maps.Keys(treeFiles)) {
		if a.Has(name) {
			return nil, nil, fmt.Errorf("initramfs: runtime root: /%s is in the archive already", name)
		}

		if err := a.File(name, treeFiles[name], 0); err != nil {
			return nil, nil, err
		}
	}

	for _, name := range slices.Sorted(maps.Keys(treeLinks)) {
		if a.Has(name) {
			return nil, nil, fmt.Errorf("initramfs: runtime root: /%s is in the archive already", name)
		}

		a.Symlink(name, treeLinks[name])
	}

	if err := a.addExtensions(o.Extensions); err != nil {
		return nil, nil, err
	}

	res := &Result{}

	mods := o.Modules
	if mods == nil {
		mods = DefaultModules()
	}

	if len(mods) > 0 {
		if o.ModulesDir == "" {
			return nil, nil, errors.New("initramfs: modules requested and no modules directory")
		}

		m, err := OpenModules(o.ModulesDir)
		if err != nil {
			return nil, nil, fmt.Errorf("initramfs: %w", err)
		}

		if res.Modules, err = a.Modules(m, mods...); err != nil {
			return nil, nil, fmt.Errorf("initramfs: %w", err)
		}

		demand := o.Demand
		if demand == nil {
			demand = slices.DeleteFunc(slices.Clone(DemandModules), func(n string) bool {
				_, ok := m.Path(n)
				return !ok
			})
		}

		if res.Demand, err = a.Modules(m, demand...); err != nil {
			return nil, nil, fmt.Errorf("initramfs: on demand: %w", err)
		}

		res.Demand = slices.DeleteFunc(res.Demand, func(rel string) bool { return slices.Contains(res.Modules, rel) })

		if err := a.moduleIndexes(m, res.Modules); err != nil {
			return nil, nil, fmt.Errorf("initramfs: %w", err)
		}

		res.Release = m.Release
	}

	res.Entries = len(a.entries)

	return a, res, nil
}

// countingWriter counts the bytes that reach w.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)

	return n, err
}

// Build writes the initramfs o describes to w: /init (the binary), the
// applet links, dev/console (5, 1), the directory skeleton,
// /etc/os-release and the kernel modules with a modules.dep and the
// kernel's modules.builtin under lib/modules/<release>/, for
// internal/kmod. The output depends only on the inputs' contents and o:
// members are sorted, owned by root, stamped with o.ModTime, and the
// compressors are deterministic, so the same inputs give the same bytes.
func Build(w io.Writer, o Options) (*Result, error) {
	c, a, res, err := prepare(o)
	if err != nil {
		return nil, err
	}

	return res, write(w, c, a, res)
}

// BuildFile is Build into the file p, created with its directory once
// the inputs have checked out. The file appears complete or not at all:
// it is written beside p and renamed.
func BuildFile(p string, o Options) (*Result, error) {
	c, a, res, err := prepare(o)
	if err != nil {
		return nil, err
	}

	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, fmt.Errorf("initramfs: %w", err)
	}

	err = writeFileAtomic(p, 0o644, func(f *os.File) error { return write(f, c, a, res) })
	if err != nil {
		return nil, err
	}

	return res, nil
}

func prepare(o Options) (Compression, *Archive, *Result, error) {
	c, err := ParseCompression(string(o.Compression))
	if err != nil {
		return "", nil, nil, fmt.Errorf("initramfs: %w", err)
	}

	a, res, err := Assemble(o)

	return c, a, res, err
}

// write writes a through compression c to w and fills in res's sizes.
func write(w io.Writer, c Compression, a *Archive, res *Result) error {
	out := &countingWriter{w: w}

	zw, err := c.writer(out)
	if err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}

	if res.CPIOSize, err = a.WriteTo(zw); err != nil {
		zw.Close()
		return fmt.Errorf("initramfs: write archive: %w", err)
	}

	if err := zw.Close(); err != nil {
		return fmt.Errorf("initramfs: %s: %w", c, err)
	}

	res.Size = out.n
	res.Entries = len(a.entries) // members added after Assemble count too

	return nil
}

// writeFileAtomic writes p through fill on a temporary file in the same
// directory, then renames it over p.
func writeFileAtomic(p string, perm os.FileMode, fill func(*os.File) error) error {
	f, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}

	tmp := f.Name()

	err = fill(f)
	if err == nil {
		err = f.Chmod(perm)
	}

	if cerr := f.Close(); err == nil {
		err = cerr
	}

	if err == nil {
		err = os.Rename(tmp, p)
	}

	if err != nil {
		os.Remove(tmp) //nolint:errcheck // the temporary file only

		return fmt.Errorf("write %s: %w", p, err)
	}

	return nil
}
