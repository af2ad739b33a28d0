package mgmt

import (
	"fmt"
	"net/netip"
	"os"

	"github.com/talosbox/talosbox/configs/generate"
	"github.com/talosbox/talosbox/internal/images"
	"github.com/talosbox/talosbox/internal/imagestore"
	"github.com/talosbox/talosbox/internal/provision"
	"github.com/talosbox/talosbox/internal/provision/vm"
)

// generated is what the cluster's nodes and client are made from.
type generated struct {
	talosconfig []byte
}

// generate makes the secrets and one config per node type, with the
// patches, and hands each node its config: the type's, plus the node's
// own wg0 with --wireguard-cidr.
func (f *clusterCreateFlags) generate(cidr netip.Prefix, nodes []nodePlan) (*generated, error) {
	endpoint, sans, patchesCP := nodes[0].ip, []string{"127.0.0.1"}, f.patchesCP

	// With --use-vip the endpoint is a shared IP the control planes
	// campaign for, as Talos's QEMU provisioner makes it: joining nodes,
	// KubePrism and the kubeconfig reach whichever holds it, so losing the
	// first control plane loses nothing. Its patch goes first: the user's
	// patches may change it.
	if f.useVIP {
		endpoint = vipAddress(cidr)
		sans = append(sans, endpoint.String())
		patchesCP = append([]string{fmt.Sprintf("machine:\n  network:\n    interfaces:\n      - interface: eth0\n        vip:\n          ip: %s\n", endpoint)}, patchesCP...)
	}

	if f.forced != nil {
		sans = append(sans, f.forced.Host)
	}

	opts := generate.Options{
		Contract:          f.contract,
		ClusterName:       f.name,
		InstallDisk:       f.installDisk(),
		InstallImage:      f.installImage,
		Endpoint:          "https://" + netip.AddrPortFrom(endpoint, 6443).String(),
		KubernetesVersion: f.kubernetesVersion,
		AdditionalSANs:    sans,
		RegistryMirrors:   map[string]string{},
	}

	// Nodes pull what make images built, unless told otherwise: Docker
	// nodes from the copy they serve themselves, QEMU nodes from the host,
	// which serves it on the segment. No registry is ever contacted.
	if f.imageCacheOn {
		f.cacheDir = f.imageCache()
	}

	if f.cacheDir != "" {
		mirror := images.CacheMirror
		if f.provisioner == "qemu" {
			mirror = vm.CacheMirror(cidr)
		}

		for _, host := range images.Registries() {
			opts.RegistryMirrors[host] = mirror
		}
	}

	// The default installer is used only where the cache holds it (make
	// installer): a pull that cannot succeed would only delay each install.
	if f.installImage == generate.DefaultInstallImage && f.provisioner == "qemu" && !cacheHolds(f.cacheDir, f.installImage) {
		fmt.Fprintf(os.Stderr, "warning: the image cache has no %s (make installer): the nodes boot from the kernel they are given, and cannot be upgraded\n", f.installImage)

		opts.NoInstallImage = true
	}

	for _, m := range f.registryMirrors {
		host, url, err := generate.ParseRegistryMirror(m)
		if err != nil {
			return nil, err
		}

		opts.RegistryMirrors[host] = url
	}

	out, err := generate.Generate(opts)
	if err != nil {
		return nil, err
	}

	cp, err := patchConfig(out.ControlPlane, f.patches, patchesCP)
	if err != nil {
		return nil, fmt.Errorf("controlplane: %w", err)
	}

	w, err := patchConfig(out.Worker, f.patches, f.patchesWorker)
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}

	for i := range nodes {
		nodes[i].config = w
		if nodes[i].typ == provision.TypeControlPlane {
			nodes[i].config = cp
		}
	}

	if f.wireguard.IsValid() {
		if err := withWireGuard(f.wireguard, nodes); err != nil {
			return nil, err
		}
	}

	tc, err := newTalosconfig(f.name, out.Secrets)
	if err != nil {
		return nil, err
	}

	return &generated{talosconfig: tc}, nil
}

// vipOffset is where the shared IP is in the subnet, as in Talos.
const vipOffset = 50

// kubeServer is the kubeconfig's server that --endpoint asks for, or ""
// for the cluster's own endpoint.
func (f *clusterCreateFlags) kubeServer() string {
	if f.forced == nil {
		return ""
	}

	return f.forced.Server
}

// vipAddress is the --use-vip shared IP: the subnet's 50th address.
func vipAddress(cidr netip.Prefix) netip.Addr {
	a := cidr.Masked().Addr()
	for range vipOffset {
		a = a.Next()
	}

	return a
}

// withWireGuard gives every node its own config: its type's with its wg0
// merged in, after the user's patches as Talos applies it.
func withWireGuard(cidr netip.Prefix, nodes []nodePlan) error {
	devs, err := wireguardDevices(cidr, nodes)
	if err != nil {
		return err
	}

	for i := range nodes {
		if nodes[i].config, err = withDevice(nodes[i].config, devs[i]); err != nil {
			return fmt.Errorf("%s: --wireguard-cidr: %w", nodes[i].name, err)
		}
	}

	return nil
}

// installDisk is the disk the configs name: a QEMU node's only disk is
// its first virtio disk; a container has none (generate's default).
func (f *clusterCreateFlags) installDisk() string {
	if f.provisioner == "qemu" {
		return "/dev/vda"
	}

	return ""
}

// cacheHolds says whether the OCI layout dir names ref.
func cacheHolds(dir, ref string) bool {
	if dir == "" {
		return false
	}

	st, err := imagestore.Open(dir)
	if err != nil {
		return false
	}

	_, ok := st.Lookup(ref)

	return ok
}
