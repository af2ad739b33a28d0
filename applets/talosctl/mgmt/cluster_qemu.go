package mgmt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosbox/talosbox/boot/qemu"
	"github.com/talosbox/talosbox/initramfs"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/provision"
	"github.com/talosbox/talosbox/internal/provision/vm"
	"github.com/talosbox/talosbox/internal/version"
)

// defaultStateDir is talosctl's: ~/.talos/clusters.
func defaultStateDir(asked string) (string, error) {
	if asked != "" {
		return filepath.Abs(asked)
	}

	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the state directory: %w (use --state)", err)
	}

	return filepath.Join(home, ".talos", "clusters"), nil
}

// vmCPUs turns --cpus into a vCPU count: QEMU takes whole CPUs.
func vmCPUs(flag, s string) (int, error) {
	c, err := strconv.ParseFloat(s, 64)
	if err != nil || c <= 0 {
		return 0, fmt.Errorf("--%s %q: want a positive number of CPUs such as 2.0", flag, s)
	}

	return int(math.Ceil(c)), nil
}

// defaultKernelDir is where scripts/kernel.sh unpacked the kernel, found
// from wherever talosctl runs: $TALOSBOX_KERNEL_DIR, else beside the
// binary (_out/talosbox finds _out/kernel, as it finds _out/images), else
// the project's _out/kernel when run inside it.
func defaultKernelDir() string {
	if d := os.Getenv(qemu.KernelDirEnv); d != "" {
		return d
	}

	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}

	if err != nil {
		exe = ""
	}

	root, _ := qemu.RepoRoot()

	return kernelDirFor(exe, root)
}

// kernelDirFor picks the first of the binary's kernel dir and the
// project's that holds a kernel, else the first of them (the error names
// it).
func kernelDirFor(exe, root string) string {
	var tried []string

	if exe != "" {
		tried = append(tried, filepath.Join(filepath.Dir(exe), "kernel"))
	}

	if root != "" {
		tried = append(tried, filepath.Join(root, "_out", "kernel"))
	}

	for _, d := range tried {
		if _, err := qemu.FindKernel(d); err == nil {
			return d
		}
	}

	if len(tried) > 0 {
		return tried[0]
	}

	return filepath.Join("_out", "kernel")
}

// kernel resolves the kernel image and the modules directory the
// initramfs is built with.
func (f *clusterCreateFlags) kernel() (image, modules string, err error) {
	dir := f.kernelDir
	if dir == "" {
		dir = defaultKernelDir()
	}

	k, kerr := qemu.FindKernel(dir)

	image = f.vmlinuz
	if image == "" {
		if kerr != nil {
			return "", "", fmt.Errorf("qemu: %w (scripts/kernel.sh downloads Debian's cloud kernel; or pass --kernel-dir / --vmlinuz-path)", kerr)
		}

		image = k.Image
	}

	if f.initrd == "" {
		if kerr != nil {
			return "", "", fmt.Errorf("qemu: the initramfs needs the kernel's modules: %w (or pass --initrd-path)", kerr)
		}

		modules = k.ModulesDir
	}

	return image, modules, nil
}

func (f *clusterCreateFlags) vmRequest(cidr netip.Prefix, nodes []nodePlan) (vm.Request, error) {
	var image, modules string

	if f.iso == "" && f.diskImage == "" {
		var err error
		if image, modules, err = f.kernel(); err != nil {
			return vm.Request{}, err
		}
	}

	cpCPUs, err := vmCPUs("cpus", f.cpus)
	if err != nil {
		return vm.Request{}, err
	}

	wCPUs, err := vmCPUs("cpus-workers", f.cpusWorkers)
	if err != nil {
		return vm.Request{}, err
	}

	req := vm.Request{Name: f.name, CIDR: cidr, Kernel: image, Initrd: f.initrd, UEFI: f.withUEFI}

	if f.iso != "" {
		if req.ISO, err = filepath.Abs(f.iso); err != nil {
			return vm.Request{}, err
		}
	}

	if f.diskImage != "" {
		if req.DiskImage, err = filepath.Abs(f.diskImage); err != nil {
			return vm.Request{}, err
		}
	}

	if req.Initrd == "" && req.ISO == "" && req.DiskImage == "" {
		bin, err := f.nodeBinary()
		if err != nil {
			return vm.Request{}, err
		}

		rt, err := f.runtime(bin)
		switch {
		case err != nil && f.imagesDir != "":
			return vm.Request{}, fmt.Errorf("--images-dir: %w", err)
		case err != nil:
			fmt.Fprintf(os.Stderr, "warning: %v: the nodes will run no containers\n", err)
		}

		req.BuildInitrd = func(path string) error {
			_, err := initramfs.BuildFile(path, initramfs.Options{Binary: bin, ModulesDir: modules, Version: version.Tag, Runtime: rt})
			return err
		}
	}

	// Each node runs under a launcher, which boots it from its disk once
	// the install made the disk bootable.
	exe, err := os.Executable()
	if err != nil {
		return vm.Request{}, fmt.Errorf("node launcher: %w", err)
	}

	req.Launcher = []string{exe, "talosctl", "cluster", "qemu-launch"}

	// The host serves make images' output on the segment; the configs
	// name it as every registry's mirror (generate).
	if f.cacheDir != "" {
		req.ServeCache = []string{exe, "talosctl", "image", "cache-serve", "--image-cache-path", f.cacheDir}
	} else {
		fmt.Fprintln(os.Stderr, "warning: no image cache (make images): the nodes will run no kubelet")
	}

	for _, n := range nodes {
		nr := vm.NodeRequest{Name: n.name, Type: n.typ, IP: n.ip, CPUs: cpCPUs, MemoryMiB: f.memory, DiskMiB: f.diskMiB}
		if n.typ == provision.TypeWorker {
			nr.CPUs, nr.MemoryMiB = wCPUs, f.memWorker
		}

		req.Nodes = append(req.Nodes, nr)
	}

	return req, nil
}

// nodeBinary is the static binary the nodes run (the image's or the
// initramfs's /init). A dynamically linked one would die in a FROM
// scratch image or as /init with a cryptic "no such file or directory".
func (f *clusterCreateFlags) nodeBinary() (string, error) {
	bin := f.binary
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("find this program to build the nodes from: %w (use --binary)", err)
		}

		bin = exe
	}

	bin, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return "", fmt.Errorf("--binary: %w", err)
	}

	return bin, initramfs.CheckStatic(bin)
}

// runQEMU provisions the virtual machines, configures them over the
// segment, and waits for the cluster like the docker path.
func (f *clusterCreateFlags) runQEMU(ctx context.Context, out io.Writer, st *stageTimer, tcPath string, cidr netip.Prefix, nodes []nodePlan, gen *generated) error {
	stateDir, err := defaultStateDir(f.stateDir)
	if err != nil {
		return err
	}

	req, err := f.vmRequest(cidr, nodes)
	if err != nil {
		return err
	}

	fmt.Fprintf(out, "creating segment %s and %d virtual machines (state in %s)\n", cidr, len(nodes), filepath.Join(stateDir, f.name))

	cluster, err := vm.Create(ctx, vm.Options{StateDir: stateDir}, req, func(s string) { fmt.Fprintln(out, s) })
	if err != nil {
		return fmt.Errorf("create cluster %q: %w", f.name, err)
	}

	st.done("machines")

	leftRunning := func(err error) error {
		return fmt.Errorf("%w\nthe cluster is left running: its consoles are %s/*/console.log; remove it with 'talosctl cluster destroy --name %s'", err, cluster.Dir(), f.name)
	}

	if err := applyMaintenance(ctx, out, nodes, f.waitTimeout); err != nil {
		return leftRunning(err)
	}

	st.done("apply")

	var endpoints []string

	for _, n := range nodes {
		if n.typ == provision.TypeControlPlane {
			endpoints = append(endpoints, n.ip.String())
		}
	}

	if f.forced != nil {
		endpoints = []string{f.forced.Talos}
	}

	if err := mergeClusterContext(tcPath, f.name, gen.talosconfig, endpoints, nodes[0].ip.String(), out); err != nil {
		return err
	}

	if !f.wait {
		fmt.Fprintf(out, "cluster %q created in %s\n", f.name, st.summary())
		return nil
	}

	if err := waitClusterHealthy(ctx, out, st.tl, gen.talosconfig, endpoints, nodes, !f.skipBootstrap, f.kubeServer(), f.waitTimeout); err != nil {
		return leftRunning(err)
	}

	st.done("health")
	f.healthy(out, st)

	return nil
}

// applyMaintenance gives every node its config through the insecure
// maintenance API on the segment, all nodes at once. A node's API answers
// only once it has booted; until then each attempt fails fast.
func applyMaintenance(ctx context.Context, out io.Writer, nodes []nodePlan, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs = make([]error, len(nodes))
	)

	start := time.Now()

	for i, n := range nodes {
		wg.Add(1)

		go func() {
			defer wg.Done()

			err := applyOne(ctx, n)
			if err != nil {
				errs[i] = fmt.Errorf("%s: apply config: %w", n.ip, err)
				return
			}

			mu.Lock()
			fmt.Fprintf(out, "applied the %s config to %s (%s) after %s\n", n.typ, n.name, n.ip, time.Since(start).Round(100*time.Millisecond))
			mu.Unlock()
		}()
	}

	wg.Wait()

	return errors.Join(errs...)
}

func applyOne(ctx context.Context, n nodePlan) error {
	addr := net.JoinHostPort(n.ip.String(), strconv.Itoa(constants.ApidPort))

	c, err := client.New(client.Options{Endpoints: []string{addr}, Insecure: true})
	if err != nil {
		return err
	}
	defer c.Close()

	tick := time.NewTicker(time.Second)
	defer tick.Stop()

	for {
		actx, acancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := c.ApplyConfiguration(actx, &machine.ApplyConfigurationRequest{Data: n.config, Mode: machine.ApplyConfigurationRequest_AUTO})

		acancel()

		switch status.Code(err) {
		case codes.OK:
			return nil
		case codes.Unavailable, codes.DeadlineExceeded:
			// not up yet
		default:
			return err // the node refused the config: retrying will not help
		}

		select {
		case <-ctx.Done():
			return fmt.Errorf("the maintenance API never answered: %w (last: %v)", ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// newClusterQEMULaunchCommand is the hidden launcher cluster create qemu
// runs for each node (Talos's qemu-launch).
func newClusterQEMULaunchCommand() *cobra.Command {
	var dir string

	cmd := &cobra.Command{
		Use:    "qemu-launch",
		Short:  "Run one QEMU node of a cluster, starting it again after each reboot (internal)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()

			return vm.Launch(ctx, dir, cmd.OutOrStdout())
		},
	}

	cmd.Flags().StringVar(&dir, "dir", "", "the node's state directory (launch.json)")
	_ = cmd.MarkFlagRequired("dir")

	return cmd
}
