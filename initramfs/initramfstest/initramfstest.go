// Package initramfstest makes small stand-ins for an initramfs's inputs,
// so that tests need neither a downloaded kernel nor a built talosbox: an
// unpacked kernel tree whose modules are tiny ELF objects carrying only a
// .modinfo section (all the builder reads of them), and ELF executables
// with or without a dynamic loader.
package initramfstest

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Release is the kernel release of the fake kernel trees.
const Release = "6.1.0-99-test-amd64"

// NodeModules mirrors, for the node's default modules, the dependencies
// of Debian's 6.1 cloud kernel: module file -> names it depends on.
// ext2 is there so that a tree holds modules nobody asked for.
var NodeModules = map[string][]string{
	"kernel/drivers/virtio/virtio_ring.ko":               nil,
	"kernel/drivers/virtio/virtio.ko":                    {"virtio_ring"},
	"kernel/drivers/virtio/virtio_pci_modern_dev.ko":     nil,
	"kernel/drivers/virtio/virtio_pci_legacy_dev.ko":     nil,
	"kernel/drivers/virtio/virtio_pci.ko":                {"virtio_pci_modern_dev", "virtio_pci_legacy_dev", "virtio", "virtio_ring"},
	"kernel/net/core/failover.ko":                        nil,
	"kernel/drivers/net/net_failover.ko":                 {"failover"},
	"kernel/drivers/net/virtio_net.ko":                   {"net_failover", "virtio", "virtio_ring"},
	"kernel/drivers/block/virtio_blk.ko":                 {"virtio", "virtio_ring"},
	"kernel/drivers/char/hw_random/virtio-rng.ko":        {"virtio", "virtio_ring"},
	"kernel/drivers/virtio/virtio_balloon.ko":            {"virtio", "virtio_ring"},
	"kernel/drivers/md/dm-mod.ko":                        nil,
	"kernel/drivers/md/dm-crypt.ko":                      {"dm-mod"},
	"kernel/crypto/xts.ko":                               nil,
	"kernel/crypto/ecb.ko":                               nil,
	"kernel/fs/overlayfs/overlay.ko":                     nil,
	"kernel/lib/libcrc32c.ko":                            nil,
	"kernel/fs/xfs/xfs.ko":                               {"libcrc32c"},
	"kernel/net/tls/tls.ko":                              nil,
	"kernel/drivers/net/bonding/bonding.ko":              {"tls"},
	"kernel/net/llc/llc.ko":                              nil,
	"kernel/net/802/stp.ko":                              {"llc"},
	"kernel/net/802/garp.ko":                             {"stp", "llc"},
	"kernel/net/802/mrp.ko":                              nil,
	"kernel/net/8021q/8021q.ko":                          {"garp", "mrp"},
	"kernel/lib/crypto/libcurve25519-generic.ko":         nil,
	"kernel/arch/x86/crypto/curve25519-x86_64.ko":        {"libcurve25519-generic"},
	"kernel/lib/crypto/libchacha.ko":                     nil,
	"kernel/arch/x86/crypto/chacha-x86_64.ko":            {"libchacha"},
	"kernel/arch/x86/crypto/poly1305-x86_64.ko":          nil,
	"kernel/lib/crypto/libchacha20poly1305.ko":           {"chacha-x86_64", "libchacha", "poly1305-x86_64"},
	"kernel/net/ipv4/udp_tunnel.ko":                      nil,
	"kernel/net/ipv6/ip6_udp_tunnel.ko":                  nil,
	"kernel/drivers/net/wireguard/wireguard.ko":          {"curve25519-x86_64", "libchacha20poly1305", "chacha-x86_64", "poly1305-x86_64", "ip6_udp_tunnel", "udp_tunnel", "libcurve25519-generic"},
	"kernel/fs/ext2/ext2.ko":                             nil,
	"kernel/drivers/net/ethernet/intel/e1000e/e1000e.ko": nil,
	// Containers and Kubernetes (initramfs.KubernetesModules).
	"kernel/drivers/net/veth.ko":                   nil,
	"kernel/drivers/net/vxlan/vxlan.ko":            {"ip6_udp_tunnel", "udp_tunnel"},
	"kernel/net/bridge/br_netfilter.ko":            {"bridge", "stp", "llc"},
	"kernel/net/bridge/bridge.ko":                  {"stp", "llc"},
	"kernel/net/ipv4/netfilter/ip_tables.ko":       {"x_tables"},
	"kernel/net/ipv4/netfilter/ipt_REJECT.ko":      {"nf_reject_ipv4", "x_tables"},
	"kernel/net/ipv4/netfilter/iptable_filter.ko":  {"ip_tables", "x_tables"},
	"kernel/net/ipv4/netfilter/iptable_mangle.ko":  {"ip_tables", "x_tables"},
	"kernel/net/ipv4/netfilter/iptable_nat.ko":     {"nf_nat", "nf_conntrack", "libcrc32c", "nf_defrag_ipv6", "nf_defrag_ipv4", "ip_tables", "x_tables"},
	"kernel/net/ipv4/netfilter/nf_defrag_ipv4.ko":  nil,
	"kernel/net/ipv4/netfilter/nf_reject_ipv4.ko":  nil,
	"kernel/net/ipv4/netfilter/nft_fib_ipv4.ko":    {"nft_fib", "nf_tables", "libcrc32c", "nfnetlink"},
	"kernel/net/ipv6/netfilter/ip6_tables.ko":      {"x_tables"},
	"kernel/net/ipv6/netfilter/ip6t_REJECT.ko":     {"nf_reject_ipv6", "x_tables"},
	"kernel/net/ipv6/netfilter/ip6table_filter.ko": {"ip6_tables", "x_tables"},
	"kernel/net/ipv6/netfilter/ip6table_mangle.ko": {"ip6_tables", "x_tables"},
	"kernel/net/ipv6/netfilter/ip6table_nat.ko":    {"nf_nat", "nf_conntrack", "libcrc32c", "nf_defrag_ipv6", "nf_defrag_ipv4", "ip6_tables", "x_tables"},
	"kernel/net/ipv6/netfilter/nf_defrag_ipv6.ko":  nil,
	"kernel/net/ipv6/netfilter/nf_reject_ipv6.ko":  nil,
	"kernel/net/ipv6/netfilter/nft_fib_ipv6.ko":    {"nft_fib", "nf_tables", "libcrc32c", "nfnetlink"},
	"kernel/net/netfilter/ipset/ip_set.ko":         {"nfnetlink"},
	"kernel/net/netfilter/ipvs/ip_vs.ko":           {"nf_conntrack", "libcrc32c", "nf_defrag_ipv6", "nf_defrag_ipv4"},
	"kernel/net/netfilter/ipvs/ip_vs_rr.ko":        {"ip_vs", "nf_conntrack", "libcrc32c", "nf_defrag_ipv6", "nf_defrag_ipv4"},
	"kernel/net/netfilter/ipvs/ip_vs_sh.ko":        {"ip_vs", "nf_conntrack", "libcrc32c", "nf_defrag_ipv6", "nf_defrag_ipv4"},
	"kernel/net/netfilter/ipvs/ip_vs_wrr.ko":       {"ip_vs", "nf_conntrack", "libcrc32c", "nf_defrag_ipv6", "nf_defrag_ipv4"},
	"kernel/net/netfilter/nf_conntrack.ko":         {"libcrc32c", "nf_defrag_ipv6", "nf_defrag_ipv4"},
	"kernel/net/netfilter/nf_conntrack_netlink.ko": {"nf_conntrack", "libcrc32c", "nf_defrag_ipv6", "nf_defrag_ipv4", "nfnetlink"},
	"kernel/net/netfilter/nf_nat.ko":               {"nf_conntrack", "libcrc32c", "nf_defrag_ipv6", "nf_defrag_ipv4"},
	"kernel/net/netfilter/nf_tables.ko":            {"libcrc32c", "nfnetlink"},
	"kernel/net/netfilter/nfnetlink.ko":            nil,
	"kernel/net/netfilter/nfnetlink_log.ko":        {"nfnetlink"},
	"kernel/net/netfilter/nft_chain_nat.ko":        {"nf_nat", "nf_conntrack", "nf_defrag_ipv6", "nf_defrag_ipv4", "nf_tables", "libcrc32c", "nfnetlink"},
	"kernel/net/netfilter/nft_compat.ko":           {"x_tables", "nf_tables", "libcrc32c", "nfnetlink"},
	"kernel/net/netfilter/nft_ct.ko":               {"nf_conntrack", "nf_defrag_ipv6", "nf_defrag_ipv4", "nf_tables", "libcrc32c", "nfnetlink"},
	"kernel/net/netfilter/nft_fib.ko":              {"nf_tables", "libcrc32c", "nfnetlink"},
	"kernel/net/netfilter/nft_fib_inet.ko":         {"nft_fib_ipv4", "nft_fib_ipv6", "nft_fib", "nf_tables", "libcrc32c", "nfnetlink"},
	"kernel/net/netfilter/nft_limit.ko":            {"nf_tables", "libcrc32c", "nfnetlink"},
	"kernel/net/netfilter/nft_masq.ko":             {"nf_nat", "nf_conntrack", "nf_defrag_ipv6", "nf_defrag_ipv4", "nf_tables", "libcrc32c", "nfnetlink"},
	"kernel/net/netfilter/nft_nat.ko":              {"nf_nat", "nf_conntrack", "nf_defrag_ipv6", "nf_defrag_ipv4", "nf_tables", "libcrc32c", "nfnetlink"},
	"kernel/net/netfilter/nft_reject.ko":           {"nf_tables", "libcrc32c", "nfnetlink"},
	"kernel/net/netfilter/nft_numgen.ko":           {"nf_tables", "libcrc32c", "nfnetlink"},
	"kernel/net/netfilter/nft_objref.ko":           {"nf_tables", "libcrc32c", "nfnetlink"},
	"kernel/net/netfilter/nft_hash.ko":             {"nf_tables", "libcrc32c", "nfnetlink"},
	"kernel/net/netfilter/nft_redir.ko":            {"nf_nat", "nf_tables", "nf_conntrack", "libcrc32c", "nfnetlink"},
	"kernel/net/netfilter/nft_log.ko":              {"nf_tables", "libcrc32c", "nfnetlink"},
	"kernel/net/ipv4/netfilter/nft_reject_ipv4.ko": {"nf_reject_ipv4", "nft_reject", "nf_tables", "libcrc32c", "nfnetlink"},
	"kernel/net/ipv6/netfilter/nft_reject_ipv6.ko": {"nf_reject_ipv6", "nft_reject", "nf_tables", "libcrc32c", "nfnetlink"},
	"kernel/net/netfilter/nft_reject_inet.ko":      {"nft_reject", "nf_reject_ipv6", "nf_reject_ipv4", "nf_tables", "libcrc32c", "nfnetlink"},
	"kernel/net/netfilter/x_tables.ko":             nil,
	"kernel/net/netfilter/xt_CT.ko":                {"nf_conntrack", "libcrc32c", "nf_defrag_ipv6", "nf_defrag_ipv4", "x_tables"},
	"kernel/net/netfilter/xt_MASQUERADE.ko":        {"nf_nat", "nf_conntrack", "libcrc32c", "nf_defrag_ipv6", "nf_defrag_ipv4", "x_tables"},
	"kernel/net/netfilter/xt_NFLOG.ko":             {"x_tables"},
	"kernel/net/netfilter/xt_addrtype.ko":          {"x_tables"},
	"kernel/net/netfilter/xt_comment.ko":           {"x_tables"},
	"kernel/net/netfilter/xt_connmark.ko":          {"nf_conntrack", "libcrc32c", "nf_defrag_ipv6", "nf_defrag_ipv4", "x_tables"},
	"kernel/net/netfilter/xt_conntrack.ko":         {"nf_conntrack", "libcrc32c", "nf_defrag_ipv6", "nf_defrag_ipv4", "x_tables"},
	"kernel/net/netfilter/xt_limit.ko":             {"x_tables"},
	"kernel/net/netfilter/xt_mark.ko":              {"x_tables"},
	"kernel/net/netfilter/xt_multiport.ko":         {"x_tables"},
	"kernel/net/netfilter/xt_nat.ko":               {"nf_nat", "nf_conntrack", "libcrc32c", "nf_defrag_ipv6", "nf_defrag_ipv4", "x_tables"},
	"kernel/net/netfilter/xt_physdev.ko":           {"x_tables"},
	"kernel/net/netfilter/xt_set.ko":               {"ip_set", "nfnetlink", "x_tables"},
	"kernel/net/netfilter/xt_statistic.ko":         {"x_tables"},
	"kernel/net/netfilter/xt_tcpudp.ko":            {"x_tables"},
}

// DemandModules mirrors initramfs.DemandModules (the NFS and Ceph
// clients, softdog) with their dependencies in Debian's 6.1 cloud kernel; a tree
// written with them gets their aliases from Aliases.
var DemandModules = map[string][]string{
	"kernel/net/sunrpc/sunrpc.ko":             nil,
	"kernel/fs/netfs/netfs.ko":                nil,
	"kernel/fs/fscache/fscache.ko":            {"netfs"},
	"kernel/fs/nfs_common/grace.ko":           nil,
	"kernel/fs/lockd/lockd.ko":                {"grace", "sunrpc"},
	"kernel/fs/nfs_common/nfs_acl.ko":         {"sunrpc"},
	"kernel/net/dns_resolver/dns_resolver.ko": nil,
	"kernel/fs/nfs/nfs.ko":                    {"sunrpc", "fscache", "lockd"},
	"kernel/fs/nfs/nfsv3.ko":                  {"nfs", "lockd", "sunrpc", "nfs_acl"},
	"kernel/fs/nfs/nfsv4.ko":                  {"sunrpc", "nfs", "dns_resolver"},
	"kernel/net/ceph/libceph.ko":              {"libcrc32c"},
	"kernel/fs/ceph/ceph.ko":                  {"libceph", "fscache", "netfs"},
	"kernel/drivers/block/rbd.ko":             {"libceph"},
	"kernel/drivers/watchdog/watchdog.ko":     nil,
	"kernel/drivers/watchdog/softdog.ko":      {"watchdog"},
}

// Aliases are the alias= fields of the fake modules that have any, as
// Debian's kernel has them.
var Aliases = map[string][]string{
	"kernel/fs/nfs/nfs.ko":                        {"nfs4", "fs-nfs4", "fs-nfs"},
	"kernel/fs/ceph/ceph.ko":                      {"fs-ceph"},
	"kernel/drivers/char/hw_random/virtio-rng.ko": {"virtio:d00000004v*"},
}

// Builtin is the fake kernel's modules.builtin.
const Builtin = "kernel/net/packet/af_packet.ko\nkernel/fs/ext4/ext4.ko\n"

// Kernel writes an unpacked kernel package into dir, as
// scripts/fetch-kernel.sh leaves one: boot/vmlinuz-<Release> and
// lib/modules/<Release>/ with the given modules (file -> dependency
// names) and modules.builtin. It returns the modules directory.
func Kernel(t testing.TB, dir string, modules map[string][]string) string {
	t.Helper()

	mods := filepath.Join(dir, "lib", "modules", Release)

	write(t, filepath.Join(dir, "boot", "vmlinuz-"+Release), []byte("not a bzImage"), 0o644)
	write(t, filepath.Join(mods, "modules.builtin"), []byte(Builtin), 0o644)

	for rel, deps := range modules {
		name := strings.TrimSuffix(filepath.Base(rel), ".ko")
		info := "license=GPL\x00depends=" + strings.Join(deps, ",") + "\x00"
		for _, a := range Aliases[rel] {
			info += "alias=" + a + "\x00"
		}

		info += "name=" + strings.ReplaceAll(name, "-", "_") + "\x00vermagic=" + Release + " SMP mod_unload\x00"
		write(t, filepath.Join(mods, filepath.FromSlash(rel)), Module(info), 0o644)
	}

	return mods
}

// Executable writes a minimal x86-64 ELF executable at p; with interp
// it asks for a dynamic loader (a PT_INTERP header), as a cgo binary does.
func Executable(t testing.TB, p string, interp bool) {
	t.Helper()

	const (
		ehsize    = 64
		phentsize = 56
	)

	loader := []byte("/lib64/ld-linux-x86-64.so.2\x00")

	var progs []elf.Prog64

	dataOff := uint64(ehsize + 2*phentsize)

	if interp {
		progs = append(progs, elf.Prog64{Type: uint32(elf.PT_INTERP), Flags: uint32(elf.PF_R), Off: dataOff, Filesz: uint64(len(loader)), Memsz: uint64(len(loader)), Align: 1})
	}

	progs = append(progs, elf.Prog64{Type: uint32(elf.PT_LOAD), Flags: uint32(elf.PF_R | elf.PF_X), Vaddr: 0x400000, Paddr: 0x400000, Filesz: dataOff + uint64(len(loader)), Memsz: dataOff + uint64(len(loader)), Align: 0x1000})

	var b bytes.Buffer

	hdr := header(elf.ET_EXEC)
	hdr.Entry = 0x400000 + dataOff
	hdr.Phoff = ehsize
	hdr.Phentsize = phentsize
	hdr.Phnum = uint16(len(progs))
	put(&b, hdr)

	for _, p := range progs {
		put(&b, p)
	}

	for b.Len() < int(dataOff) {
		b.WriteByte(0)
	}

	b.Write(loader)
	write(t, p, b.Bytes(), 0o755)
}

// Module returns a relocatable x86-64 ELF object whose only contents are
// a .modinfo section holding modinfo ("key=value\x00..."), which is what
// the module resolver reads of a .ko.
func Module(modinfo string) []byte {
	const (
		ehsize    = 64
		shentsize = 64
	)

	shstrtab := "\x00.modinfo\x00.shstrtab\x00"
	infoOff := uint64(ehsize)
	strOff := infoOff + uint64(len(modinfo))
	shOff := (strOff + uint64(len(shstrtab)) + 7) &^ 7

	var b bytes.Buffer

	hdr := header(elf.ET_REL)
	hdr.Shoff = shOff
	hdr.Shentsize = shentsize
	hdr.Shnum = 3
	hdr.Shstrndx = 2
	put(&b, hdr)
	b.WriteString(modinfo)
	b.WriteString(shstrtab)

	for uint64(b.Len()) < shOff {
		b.WriteByte(0)
	}

	put(&b, elf.Section64{})
	put(&b, elf.Section64{Name: 1, Type: uint32(elf.SHT_PROGBITS), Flags: uint64(elf.SHF_ALLOC), Off: infoOff, Size: uint64(len(modinfo)), Addralign: 1})
	put(&b, elf.Section64{Name: 10, Type: uint32(elf.SHT_STRTAB), Off: strOff, Size: uint64(len(shstrtab)), Addralign: 1})

	return b.Bytes()
}

func header(typ elf.Type) elf.Header64 {
	h := elf.Header64{Type: uint16(typ), Machine: uint16(elf.EM_X86_64), Version: uint32(elf.EV_CURRENT), Ehsize: 64}
	copy(h.Ident[:], elf.ELFMAG)
	h.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	h.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	h.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)

	return h
}

func put(b *bytes.Buffer, v any) {
	if err := binary.Write(b, binary.LittleEndian, v); err != nil {
		panic(err) // fixed-size structs into a buffer cannot fail
	}
}

func write(t testing.TB, p string, data []byte, perm os.FileMode) {
	t.Helper()

	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(p, data, perm); err != nil {
		t.Fatal(err)
	}
}
