package vm

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
)

// Nodes booted from an ISO take no kernel command line of ours, so no
// ip=: their addresses and hostnames come from a NoCloud seed each (a
// cidata ISO on a second disk, /dev/vdb), which an ISO made with
// `talosbox imager iso --platform nocloud` reads. The config still comes
// through maintenance mode, as with -kernel.

// checkISO refuses an ISO whose nodes would not read their seed: one that
// boots another platform would come up without an address.
func checkISO(iso string) error {
	if _, err := exec.LookPath("xorriso"); err != nil {
		return fmt.Errorf("--iso-path: xorriso (apt-get install xorriso) reads the ISO and writes each node's NoCloud seed: %w", err)
	}

	tmp, err := os.MkdirTemp("", "talosbox-iso-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	cfg := filepath.Join(tmp, "grub.cfg")
	if out, err := exec.Command("xorriso", "-osirrox", "on", "-indev", iso, "-extract", "/boot/grub/grub.cfg", cfg).CombinedOutput(); err != nil {
		return fmt.Errorf("--iso-path %s: not a talosbox ISO (no /boot/grub/grub.cfg): %w: %s", iso, err, bytes.TrimSpace(out))
	}

	b, err := os.ReadFile(cfg)
	if err != nil {
		return err
	}

	if !bytes.Contains(b, []byte("talos.platform=nocloud")) {
		return fmt.Errorf("--iso-path %s boots another platform than nocloud: its nodes would have no address on the segment; make one with talosbox imager iso --platform nocloud", iso)
	}

	return nil
}

// writeSeed makes a node's NoCloud seed: its hostname (meta-data) and its
// static address and gateway on the NIC with its MAC (network-config v2).
func writeSeed(path string, n *Node, prefix netip.Prefix, gateway netip.Addr) error {
	src, err := os.MkdirTemp(filepath.Dir(path), ".seed-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(src)

	files := map[string]string{
		"meta-data": fmt.Sprintf("instance-id: %s\nlocal-hostname: %s\n", n.UUID, n.Name),
		"network-config": fmt.Sprintf("version: 2\nethernets:\n  eth0:\n    match:\n      macaddress: %q\n    addresses: [%s]\n    gateway4: %s\n",
			n.MAC, netip.PrefixFrom(n.IP, prefix.Bits()), gateway),
	}

	for name, data := range files {
		if err := os.WriteFile(filepath.Join(src, name), []byte(data), 0o644); err != nil {
			return err
		}
	}

	if out, err := exec.Command("xorriso", "-as", "mkisofs", "-o", path, "-V", "cidata", "-J", "-r", src).CombinedOutput(); err != nil {
		return fmt.Errorf("node %s: NoCloud seed: xorriso: %w: %s", n.Name, err, bytes.TrimSpace(out))
	}

	return nil
}
