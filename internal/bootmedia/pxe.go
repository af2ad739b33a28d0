package bootmedia

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The PXE assets' names, as Talos publishes them.
const (
	PXEKernel    = "vmlinuz-amd64"
	PXEInitramfs = "initramfs-amd64.xz"
	PXEScript    = "boot.ipxe"
)

// pxeScript is the iPXE script. Relative names resolve against the
// script's own URL, so the directory can be served as it is, over HTTP
// or TFTP.
const pxeScript = `#!ipxe
# talosbox %[1]s: boot a machine over the network with iPXE.
#
# Serve this directory over HTTP (or TFTP) and have iPXE chain this script
# (DHCP option 67, or at the iPXE prompt: chain http://SERVER/boot.ipxe).
# Without talos.config= the node waits in maintenance mode for
# talosctl apply-config --insecure; talosbox imager pxe --config-url adds it.
imgfree
kernel %[2]s%[3]s %[4]s
initrd %[2]s%[5]s
boot
`

// PXE writes the PXE assets into dir: the kernel, the initramfs and the
// iPXE script that boots them with the command line. baseURL, when not
// empty, is put before the file names in the script (e.g.
// http://10.0.0.1:8080/); empty keeps them relative to the script.
func PXE(o Options, dir, baseURL string) error {
	if err := o.defaults(); err != nil {
		return fmt.Errorf("pxe: %w", err)
	}

	cmdline, err := o.cmdline()
	if err != nil {
		return fmt.Errorf("pxe: %w", err)
	}

	if strings.ContainsAny(baseURL, " \t\n\"'$;") {
		return fmt.Errorf("pxe: base URL %q: spaces, quotes and $ cannot be written into an iPXE script", baseURL)
	}

	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}

	if err := copyFile(o.Kernel, filepath.Join(dir, PXEKernel)); err != nil {
		return fmt.Errorf("pxe: %w", err)
	}

	if err := o.writeInitramfs(filepath.Join(dir, PXEInitramfs)); err != nil {
		return fmt.Errorf("pxe: %w", err)
	}

	script := fmt.Sprintf(pxeScript, o.Version, baseURL, PXEKernel, cmdline, PXEInitramfs)
	if err := os.WriteFile(filepath.Join(dir, PXEScript), []byte(script), 0o644); err != nil {
		return err
	}

	fmt.Fprintf(o.Log, "pxe: %s, %s and %s in %s\n", PXEKernel, PXEInitramfs, PXEScript, dir)

	return stamp(dir, o.Epoch)
}
