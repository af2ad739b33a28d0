package imagebuild

import (
	"context"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// libDirs are where Debian's loader looks without an ld.so.cache; an image
// keeps each library at the same path, so the loader finds it there too.
var libDirs = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib"}

// hostFiles adds dynamically linked programs from the build host's Debian
// packages to a layer, with their loader and the closure of the libraries
// they need (DT_NEEDED, read from the ELF headers rather than by running
// ldd). root is prepended to host paths, for tests.
type hostFiles struct {
	root  string
	files []entry
	seen  map[string]bool   // image paths added
	real  map[string]string // host file -> the image path it went to
}

func newHostFiles(root string) *hostFiles {
	return &hostFiles{root: root, seen: map[string]bool{}, real: map[string]string{}}
}

// program adds the host file at path, at the same path in the image, and
// what it needs to run.
func (h *hostFiles) program(path string) error {
	return h.elf(path, path)
}

// dir adds every shared object in a directory (plugins a program opens
// with dlopen, such as iptables' xtables extensions) and their libraries.
func (h *hostFiles) dir(path string) error {
	ents, err := os.ReadDir(filepath.Join(h.root, path))
	if err != nil {
		return err
	}

	for _, e := range ents {
		if e.Type().IsRegular() || e.Type()&os.ModeSymlink != 0 {
			if err := h.elf(filepath.Join(path, e.Name()), filepath.Join(path, e.Name())); err != nil {
				return err
			}
		}
	}

	return nil
}

// link adds a symlink in the image.
func (h *hostFiles) link(path, target string) {
	if !h.seen[path] {
		h.seen[path] = true
		h.files = append(h.files, entry{path: path, link: target, mode: 0o777})
	}
}

func (h *hostFiles) elf(hostPath, imagePath string) error {
	if h.seen[imagePath] {
		return nil
	}

	real, err := filepath.EvalSymlinks(filepath.Join(h.root, hostPath))
	if err != nil {
		return fmt.Errorf("%s: %w (is its Debian package installed? scripts/install-deps.sh installs it)", hostPath, err)
	}

	st, err := os.Stat(real)
	if err != nil {
		return err
	}

	h.seen[imagePath] = true

	// One file under two names (the loader is both PT_INTERP and a
	// DT_NEEDED of libc) is stored once.
	if first, ok := h.real[real]; ok {
		h.files = append(h.files, entry{path: imagePath, link: first, mode: 0o777})
		return nil
	}

	h.real[real] = imagePath
	h.files = append(h.files, entry{path: imagePath, src: real, mode: st.Mode().Perm()})

	f, err := elf.Open(real)
	if err != nil {
		return fmt.Errorf("%s: %w", hostPath, err)
	}
	defer f.Close()

	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err != nil {
				return fmt.Errorf("%s: interpreter: %w", hostPath, err)
			}

			interp := string(b[:len(b)-1])
			if err := h.elf(interp, interp); err != nil {
				return err
			}
		}
	}

	needed, err := f.ImportedLibraries()
	if err != nil {
		return fmt.Errorf("%s: %w", hostPath, err)
	}

	for _, lib := range needed {
		found := false

		for _, d := range libDirs {
			p := filepath.Join(d, lib)
			if _, err := os.Stat(filepath.Join(h.root, p)); err == nil {
				if err := h.elf(p, filepath.Join(libDirs[0], lib)); err != nil {
					return err
				}

				found = true

				break
			}
		}

		if !found {
			return fmt.Errorf("%s needs %s, which is in none of %v", hostPath, lib, libDirs)
		}
	}

	return nil
}

// entries returns the collected files sorted by path.
func (h *hostFiles) entries() []entry {
	out := slices.Clone(h.files)
	slices.SortFunc(out, func(a, b entry) int { return strings.Compare(a.path, b.path) })

	return out
}

// protocols is /etc/protocols for the netfilter images. nft names
// protocols through it: without it `nft --json list map` prints "6" where
// kube-proxy wrote "tcp", and kube-proxy's nftables mode, which on start
// reads its maps back and deletes what it does not recognise, deleted
// every element of service-ips it had just re-added (measured: a
// kube-proxy restart left every Service unrouted until the next full
// sync, an hour later). The entries are the IANA numbers netfilter rules
// name.
const protocols = `ip	0	IP
icmp	1	ICMP
igmp	2	IGMP
tcp	6	TCP
udp	17	UDP
ipv6	41	IPv6
gre	47	GRE
esp	50	IPSEC-ESP
ah	51	IPSEC-AH
ipv6-icmp	58	IPv6-ICMP
sctp	132	SCTP
udplite	136	UDPLite
`

// netfilterFiles is the iptables and nft userspace kube-proxy and flannel
// run (both exec iptables-restore or nft): Debian's iptables (nft backend
// by default, legacy beside it), its xtables extensions and nft, and the
// protocol names nft prints.
func netfilterFiles(h *hostFiles) error {
	h.files = append(h.files, entry{path: "/etc/protocols", mode: 0o644, data: protocols})
	h.seen["/etc/protocols"] = true

	for _, p := range []string{"/usr/sbin/xtables-nft-multi", "/usr/sbin/xtables-legacy-multi", "/usr/sbin/nft"} {
		if err := h.program(p); err != nil {
			return err
		}
	}

	if err := h.dir("/usr/lib/x86_64-linux-gnu/xtables"); err != nil {
		return err
	}

	for _, t := range []string{"iptables", "ip6tables"} {
		for _, suffix := range []string{"", "-save", "-restore"} {
			h.link("/usr/sbin/"+t+suffix, "xtables-nft-multi")
			h.link("/usr/sbin/"+t+"-nft"+suffix, "xtables-nft-multi")
			h.link("/usr/sbin/"+t+"-legacy"+suffix, "xtables-legacy-multi")
		}
	}

	return nil
}

// mountFiles are mount(8) and umount(8), which the kubelet's mount
// library runs for tmpfs, bind and subPath mounts.
func mountFiles(h *hostFiles) error {
	for _, p := range []string{"/usr/bin/mount", "/usr/bin/umount"} {
		if err := h.program(p); err != nil {
			return err
		}
	}

	return nil
}

// nfsFiles is the NFS client's mount helper, which mount(8) runs for an
// nfs volume or PersistentVolume (Talos's kubelet image carries it):
// mount.nfs, with its nfs4 and umount names, from Debian's nfs-common
// unpacked at root (debRoot), with the libraries it needs, and the
// transports libtirpc reads. NFSv4 needs nothing else; NFSv3's locking
// would need rpc.statd, which a kubelet image does not run (Talos's
// neither), so v3 volumes mount with nolock.
func nfsFiles(root string) (*hostFiles, error) {
	h := newHostFiles(root)
	if err := h.program("/sbin/mount.nfs"); err != nil {
		return nil, err
	}

	for _, name := range []string{"mount.nfs4", "umount.nfs", "umount.nfs4"} {
		h.link("/sbin/"+name, "mount.nfs")
	}

	h.files = append(h.files, entry{path: "/etc/netconfig", src: filepath.Join(root, "etc", "netconfig"), mode: 0o644})
	h.seen["/etc/netconfig"] = true

	return h, nil
}

// nfsLayer is nfsFiles from the nfs-common package apt would fetch.
func (b *builder) nfsLayer(ctx context.Context) (*layer, error) {
	root, _, err := b.debRoot(ctx, "nfs-common", []string{"nfs-common"})
	if err != nil {
		return nil, fmt.Errorf("layer nfs: %w", err)
	}

	h, err := nfsFiles(root)
	if err != nil {
		return nil, fmt.Errorf("layer nfs: %w", err)
	}

	return b.makeLayer("nfs", h.entries())
}

// hostLayer makes a layer of host files chosen by add.
func (b *builder) hostLayer(name string, add func(*hostFiles) error) (*layer, error) {
	h := newHostFiles(b.opts.HostRoot)
	if err := add(h); err != nil {
		return nil, fmt.Errorf("layer %s: %w", name, err)
	}

	return b.makeLayer(name, h.entries())
}
