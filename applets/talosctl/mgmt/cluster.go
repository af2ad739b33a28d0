package mgmt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/configs/generate"
	"github.com/talosbox/talosbox/initramfs"
	"github.com/talosbox/talosbox/internal/cluster/timeline"
	"github.com/talosbox/talosbox/internal/provision"
)

// Cluster defaults, as talosctl has them.
const (
	defaultClusterName = "talos-default"
	defaultSubnet      = "10.5.0.0/24"
	defaultNodeCPUs    = "2.0"
	defaultNodeMemory  = 2048 // MiB
)

func NewClusterCommand(g *global.Args) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "A collection of commands for managing local docker-based or QEMU-based clusters",
		Long: `Local clusters, made by one of two provisioners:

  docker  each node is a Docker container running talosbox as PID 1 in
          container mode, on a bridge network of its own. Every object
          (containers, network, volumes) carries the label
          talosbox.cluster.name=<name>, so destroy removes exactly what
          create made.
  qemu    each node is a QEMU virtual machine booting Debian's cloud kernel
          and the talosbox initramfs on the metal platform, with its own
          disk, on a private Ethernet segment (a vde_switch) where this host
          holds the gateway address on a tap interface. Its state (disks,
          console logs, pids) lives in --state/<name>. Needs root.`,
	}

	cmd.AddCommand(newClusterCreateCommand(g), newClusterDestroyCommand(g), newClusterShowCommand(g), newClusterLoadCommand(g), newClusterQEMULaunchCommand())

	return cmd
}

// clusterCreateFlags are `cluster create`'s flags.
type clusterCreateFlags struct {
	useVIP            bool
	endpoint          string
	forced            *forcedEndpoint // --endpoint, once plan has read it
	name              string
	installImage      string
	provisioner       string
	image             string
	binary            string
	imagesDir         string
	subnet            string
	controlPlanes     int
	workers           int
	cpus, cpusWorkers string
	memory, memWorker int
	apiPort           int
	patches           []string
	patchesCP         []string
	patchesWorker     []string
	registryMirrors   []string
	cacheDir          string // the image cache the nodes pull from (make images' OCI layout)
	imageCacheOn      bool
	kubernetesVersion string
	talosVersion      string
	wireguardCIDR     string
	skipBootstrap     bool
	wait              bool
	waitTimeout       time.Duration
	timings           bool

	// What plan makes of --talos-version and --wireguard-cidr; wireguard
	// is the zero Prefix without a mesh.
	contract  generate.Contract
	wireguard netip.Prefix

	// The qemu provisioner's.
	stateDir, kernelDir, vmlinuz, initrd string
	iso, diskImage                       string
	withUEFI                             bool
	diskMiB                              int64
}

func newClusterCreateCommand(g *global.Args) *cobra.Command {
	f := &clusterCreateFlags{}

	cmd := &cobra.Command{
		Use:   "create [docker|qemu]",
		Short: "Creates a local docker-based or QEMU-based cluster",
		Long: `docker (the default): builds the node image FROM scratch from this binary (or
uses --image), creates a bridge network, generates secrets and machine
configs, starts one container per node and waits for the cluster to be
healthy. The API of the first control-plane node is published on 127.0.0.1.
No registry is ever contacted.

qemu: builds the node initramfs from this binary and the kernel modules of
Debian's cloud kernel (--kernel-dir, as scripts/kernel.sh unpacks it), starts
a private Ethernet segment with this host at its first address, and boots one
virtual machine per node (TCG unless TALOSBOX_QEMU_ACCEL=kvm) with a sparse
disk of --disk MiB. Each node comes up in maintenance mode with its address
from the kernel's ip=; its config is then applied over the segment, and the
node partitions its disk and keeps the config there. Needs root (the tap).

Either way a context named after the cluster is merged into the talosconfig,
etcd is bootstrapped and the health checks run. Interrupting it (Ctrl-C)
while nodes are being made removes what it has made so far.

--wireguard-cidr adds a WireGuard mesh, as Talos's provisioners make it: every
node gets its own key pair and a wg0 with the next address from the CIDR;
control planes listen on port 51111 at their node address and are every
node's peers, and have the workers as peers without an endpoint; every peer
has a 5s keepalive. --talos-version writes the configs of another Talos
(see 'gen config --help'): an older one's, or from v1.14 the Kubernetes
settings as documents; the nodes still run this program, which reads them.`,
		Example: `  talosctl cluster create
  talosctl cluster create --controlplanes 3 --workers 1 --name lab
  talosctl cluster create --config-patch @patch.yaml --registry-mirror docker.io=http://10.5.0.1:5000
  talosctl cluster create qemu --controlplanes 3 --workers 0 --memory 1024
  talosctl cluster create --wireguard-cidr 10.1.0.0/24
  talosctl cluster create --controlplanes 3 --use-vip
  talosctl cluster create --talos-version v1.14`,
		Args:      cobra.MaximumNArgs(1),
		ValidArgs: []string{"docker", "qemu"},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				f.provisioner = args[0]
			}

			return f.run(cmd.Context(), g, cmd.OutOrStdout())
		},
	}

	fl := cmd.Flags()
	fl.StringVar(&f.name, "name", defaultClusterName, "the name of the cluster")
	fl.StringVar(&f.provisioner, "provisioner", "docker", "the provisioner to use (docker or qemu)")
	fl.StringVar(&f.image, "image", "", "an existing local image to run instead of building one from --binary")
	fl.StringVar(&f.binary, "binary", "", "the static talosbox binary to build the node image from (default: this program)")
	fl.StringVar(&f.imagesDir, "images-dir", "", "the output of make images, whose runc and CNI plugins go into the nodes (default: images beside --binary)")
	fl.StringVar(&f.subnet, "subnet", defaultSubnet, "the CIDR of the cluster network")
	fl.IntVar(&f.controlPlanes, "controlplanes", 1, "the number of control plane nodes to create")
	fl.IntVar(&f.workers, "workers", 1, "the number of workers to create")
	fl.StringVar(&f.cpus, "cpus", defaultNodeCPUs, "the share of CPUs as fraction (each control plane)")
	fl.StringVar(&f.cpusWorkers, "cpus-workers", defaultNodeCPUs, "the share of CPUs as fraction (each worker)")
	fl.IntVar(&f.memory, "memory", defaultNodeMemory, "the limit on memory usage in MiB (each control plane)")
	fl.IntVar(&f.memWorker, "memory-workers", defaultNodeMemory, "the limit on memory usage in MiB (each worker)")
	fl.IntVar(&f.apiPort, "api-port", 0, "the host port on 127.0.0.1 for the first control plane's API (default: random)")
	fl.StringArrayVar(&f.patches, "config-patch", nil, "patch generated machineconfigs (applied to all node types), use @file to read a patch from file")
	fl.StringArrayVar(&f.patchesCP, "config-patch-control-plane", nil, "patch generated machineconfigs (applied to 'controlplane' type)")
	fl.StringArrayVar(&f.patchesWorker, "config-patch-worker", nil, "patch generated machineconfigs (applied to 'worker' type)")
	fl.BoolVar(&f.imageCacheOn, "image-cache", true, "serve make images' images to the nodes as every registry's mirror (qemu: from the host on the segment); without it QEMU nodes run no kubelet")
	fl.StringSliceVar(&f.registryMirrors, "registry-mirror", nil, "list of registry mirrors to use in format: <registry host>=<mirror URL>")
	fl.StringVar(&f.kubernetesVersion, "kubernetes-version", "", "desired kubernetes version to run (recorded in the machine configs)")
	fl.StringVar(&f.talosVersion, "talos-version", "", talosVersionUsage)
	fl.StringVar(&f.wireguardCIDR, "wireguard-cidr", "", "the CIDR of a WireGuard mesh between the nodes: each gets interface wg0 with the next address from it, in node order from the second host address (10.1.0.2, 10.1.0.3, ... for 10.1.0.0/24), control planes listen on port 51111, every node peers with them and they with the workers (Docker nodes need WireGuard in this machine's kernel)")
	fl.BoolVar(&f.useVIP, "use-vip", false, "use a virtual IP (the subnet's 50th address) for the control plane endpoint, shared by the control planes on eth0, instead of the first control plane's address: the cluster and its kubeconfig survive losing any one control plane")
	fl.StringVar(&f.endpoint, "endpoint", "", "use endpoint instead of provider defaults: the talosconfig's endpoint (host or host:port) and the kubeconfig's server (https://host:6443, or the https URL given), added to the certificates' SANs; for a load balancer, DNS name or forwarded address in front of the control planes")
	fl.BoolVar(&f.skipBootstrap, "skip-bootstrap", false, "skip bootstrapping etcd on the first control plane node")
	fl.BoolVar(&f.wait, "wait", true, "wait for the cluster to be ready before returning")
	fl.DurationVar(&f.waitTimeout, "wait-timeout", 20*time.Minute, "timeout to wait for the cluster to be ready")
	fl.BoolVar(&f.timings, "timings", true, "once healthy, print the timeline of the create: each step of this client, of the nodes' services and of Kubernetes' bring-up, as seconds since the start")
	fl.StringVar(&f.stateDir, "state", "", "qemu: directory path to store cluster state (default ~/.talos/clusters)")
	fl.Int64Var(&f.diskMiB, "disk", 6144, "qemu: the size of each node's disk in MiB")
	fl.StringVar(&f.kernelDir, "kernel-dir", "", "qemu: the unpacked Debian kernel package, whose modules go into the initramfs (default $TALOSBOX_KERNEL_DIR, then kernel/ beside the binary: _out/kernel for _out/talosbox, then the project's _out/kernel)")
	fl.StringVar(&f.vmlinuz, "vmlinuz-path", "", "qemu: the kernel image to boot (default: the one in --kernel-dir)")
	fl.StringVar(&f.initrd, "initrd-path", "", "qemu: an initramfs to boot instead of building one from this binary")
	fl.StringVar(&f.iso, "iso-path", "", "qemu: boot every node from this ISO (talosbox imager iso --platform nocloud: each node gets a NoCloud seed with its address and name) instead of a kernel and an initramfs; installed nodes boot from their disks")
	fl.StringVar(&f.iso, "iso", "", "qemu: the same as --iso-path")
	_ = fl.MarkHidden("iso")
	fl.StringVar(&f.diskImage, "disk-image-path", "", "qemu: make every node's disk from this disk image (talosbox imager metal --platform nocloud, raw or .zst) and boot from it; each node gets a NoCloud seed with its address and name")
	fl.StringVar(&f.diskImage, "disk-image", "", "qemu: the same as --disk-image-path")
	_ = fl.MarkHidden("disk-image")
	fl.BoolVar(&f.withUEFI, "with-uefi", false, "qemu: boot the nodes on UEFI (OVMF) instead of SeaBIOS (Talos's default is UEFI; SeaBIOS boots faster under emulation)")
	fl.StringVar(&f.installImage, "install-image", generate.DefaultInstallImage, "qemu: the installer image the nodes install to their disks (make installer puts it in the image cache); once installed, a node boots from its disk, so that upgrades take")

	return cmd
}

// nodePlan is one node to create: its name, type, address and config.
type nodePlan struct {
	name   string
	typ    string
	ip     netip.Addr
	config []byte
}

// plan validates the flags and lays the nodes out on the subnet: the
// gateway takes the first address, control planes the next ones, then
// workers, as talosctl does.
func (f *clusterCreateFlags) plan() (netip.Prefix, []nodePlan, error) {
	if f.provisioner != "docker" && f.provisioner != "qemu" {
		return netip.Prefix{}, nil, fmt.Errorf("unsupported provisioner %q: use docker or qemu", f.provisioner)
	}

	if f.provisioner == "qemu" && f.image != "" {
		return netip.Prefix{}, nil, errors.New("--image is for the docker provisioner: qemu nodes boot --initrd-path, or an initramfs built from --binary")
	}

	if f.provisioner == "docker" && (f.kernelDir+f.vmlinuz+f.initrd+f.iso+f.diskImage != "" || f.withUEFI) {
		return netip.Prefix{}, nil, errors.New("--kernel-dir, --vmlinuz-path, --initrd-path, --iso-path, --disk-image-path and --with-uefi are for the qemu provisioner (talosctl cluster create qemu)")
	}

	if f.iso != "" && f.initrd+f.vmlinuz != "" {
		return netip.Prefix{}, nil, errors.New("--iso-path boots the ISO's kernel and initramfs: give it without --vmlinuz-path and --initrd-path")
	}

	if f.diskImage != "" && f.initrd+f.vmlinuz+f.iso != "" {
		return netip.Prefix{}, nil, errors.New("--disk-image-path boots the image's kernel and initramfs: give it without --vmlinuz-path, --initrd-path and --iso-path")
	}

	if f.controlPlanes < 1 {
		return netip.Prefix{}, nil, errors.New("--controlplanes must be at least 1")
	}

	if f.workers < 0 {
		return netip.Prefix{}, nil, errors.New("--workers must not be negative")
	}

	if f.endpoint != "" {
		e, err := parseForcedEndpoint(f.endpoint)
		if err != nil {
			return netip.Prefix{}, nil, err
		}

		f.forced = &e
	}

	cidr, err := netip.ParsePrefix(f.subnet)
	if err != nil {
		return netip.Prefix{}, nil, fmt.Errorf("--subnet %q: %w", f.subnet, err)
	}

	if !cidr.Addr().Is4() || cidr != cidr.Masked() {
		return netip.Prefix{}, nil, fmt.Errorf("--subnet %q: want an IPv4 network address such as %s", f.subnet, defaultSubnet)
	}

	var nodes []nodePlan

	ip := cidr.Addr().Next().Next() // .1 is the gateway

	for i := 1; i <= f.controlPlanes+f.workers; i++ {
		if !cidr.Contains(ip) || !cidr.Contains(ip.Next()) { // keep the broadcast address free
			return netip.Prefix{}, nil, fmt.Errorf("--subnet %s is too small for %d nodes", cidr, f.controlPlanes+f.workers)
		}

		typ, n := provision.TypeControlPlane, i
		if i > f.controlPlanes {
			typ, n = provision.TypeWorker, i-f.controlPlanes
		}

		nodes = append(nodes, nodePlan{name: fmt.Sprintf("%s-%s-%d", f.name, typ, n), typ: typ, ip: ip})
		ip = ip.Next()
	}

	if vip := vipAddress(cidr); f.useVIP && (!cidr.Contains(vip.Next()) || !nodes[len(nodes)-1].ip.Less(vip)) {
		return netip.Prefix{}, nil, fmt.Errorf("--use-vip: the shared IP %s must be in --subnet %s and above every node's address (at most %d nodes)", vip, cidr, vipOffset-2)
	}

	if f.contract, err = parseTalosVersion(f.talosVersion); err != nil {
		return netip.Prefix{}, nil, err
	}

	if f.wireguardCIDR != "" {
		if f.wireguard, err = checkWireguardCIDR(f.wireguardCIDR, cidr, len(nodes)); err != nil {
			return netip.Prefix{}, nil, err
		}
	}

	return cidr, nodes, nil
}

// stageTimer prints each stage as it ends, with its duration, and keeps
// them for the summary line; the timeline gets them too.
type stageTimer struct {
	out    io.Writer
	start  time.Time
	last   time.Time
	stages []string
	tl     *timeline.Timeline
}

func newStageTimer(out io.Writer) *stageTimer {
	tl := timeline.New()
	return &stageTimer{out: out, start: tl.Start(), last: tl.Start(), tl: tl}
}

func (st *stageTimer) done(name string) {
	st.tl.Mark("stage " + name + " done")

	now := time.Now()
	d := now.Sub(st.last).Round(time.Millisecond)
	st.last = now
	st.stages = append(st.stages, fmt.Sprintf("%s %s", name, d))
}

// healthy prints the closing line and, with --timings, the timeline.
func (f *clusterCreateFlags) healthy(out io.Writer, st *stageTimer) {
	fmt.Fprintf(out, "cluster %q is healthy: %s\n", f.name, st.summary())

	if f.timings {
		fmt.Fprintln(out, "timeline:")
		_ = st.tl.Write(out)
	}
}

func (st *stageTimer) summary() string {
	return fmt.Sprintf("%s (%s)", time.Since(st.start).Round(time.Millisecond), strings.Join(st.stages, ", "))
}

func (f *clusterCreateFlags) run(ctx context.Context, g *global.Args, out io.Writer) error {
	cidr, nodes, err := f.plan()
	if err != nil {
		return err
	}

	res, err := f.resources()
	if err != nil {
		return err
	}

	tcPath, err := g.TalosconfigPath()
	if err != nil {
		return err
	}

	st := newStageTimer(out)

	// Configs first: a bad patch must fail before anything exists.
	fmt.Fprintln(out, "generating PKI and tokens")

	gen, err := f.generate(cidr, nodes)
	if err != nil {
		return err
	}

	st.done("configs")

	if f.provisioner == "qemu" {
		return f.runQEMU(ctx, out, st, tcPath, cidr, nodes, gen)
	}

	return f.runDocker(ctx, out, st, tcPath, cidr, nodes, gen, res)
}

// imageCache is the OCI layout of make images the nodes serve as their
// registry mirror: --images-dir's, else the one beside the node binary;
// "" when there is none.
func (f *clusterCreateFlags) imageCache() string {
	dir := f.imagesDir
	if dir == "" {
		bin, err := f.nodeBinary()
		if err != nil {
			return ""
		}

		dir = filepath.Join(filepath.Dir(bin), "images")
	}

	oci, err := filepath.Abs(filepath.Join(dir, "oci"))
	if err != nil {
		return ""
	}

	if _, err := os.Stat(filepath.Join(oci, "index.json")); err != nil {
		return ""
	}

	return oci
}

// runtime finds runc and the CNI plugins for the nodes built from bin.
func (f *clusterCreateFlags) runtime(bin string) (initramfs.Runtime, error) {
	if f.imagesDir != "" {
		return initramfs.RuntimeIn(f.imagesDir)
	}

	return initramfs.RuntimeBeside(bin)
}

// runtimeFiles are runc, the CNI plugins and the runtime root (iptables
// for portmap) for the node image, by image path, and the root's
// symlinks. Without them (no make images yet) the nodes run, but no
// containers; an --images-dir that lacks them is an error.
func (f *clusterCreateFlags) runtimeFiles(bin string, warn io.Writer) (files, links map[string]string, err error) {
	rt, err := f.runtime(bin)
	if err != nil {
		if f.imagesDir != "" {
			return nil, nil, fmt.Errorf("--images-dir: %w", err)
		}

		fmt.Fprintf(warn, "warning: %v: the nodes will run no containers\n", err)

		return nil, nil, nil
	}

	static, err := rt.Files()
	if err != nil {
		return nil, nil, err
	}

	tree, treeLinks, err := rt.Tree()
	if err != nil {
		return nil, nil, err
	}

	// Archive names are relative; the image's are absolute.
	files, links = map[string]string{}, map[string]string{}

	for _, m := range []map[string]string{static, tree} {
		for name, src := range m {
			files["/"+name] = src
		}
	}

	for name, target := range treeLinks {
		links["/"+name] = target
	}

	return files, links, nil
}
