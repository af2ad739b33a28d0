package talos

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/emptypb"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/internal/api/common"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/api/resource"
	"github.com/talosbox/talosbox/internal/resources/config"
)

// Runner runs a talosctl command line in this process, its output to out:
// the support bundle holds what the commands print, in their shapes.
type Runner func(ctx context.Context, args []string, out, errOut io.Writer) int

// supportFile is one file of a node's part of the bundle and the command
// that fills it.
type supportFile struct {
	name string
	args []string
	// optional files are left out when their command fails (etcd on a
	// worker) rather than reported.
	optional bool
}

// NewSupportCommand is `talosctl support`: what a bug report needs from
// each node, in one zip. Sensitive resources are fetched redacted, as
// os:reader sees them, and no Kubernetes secret is read, so the archive
// can be sent to others.
func NewSupportCommand(g *global.Args, run Runner) *cobra.Command {
	var (
		output       string
		workers      int
		verbose      bool
		noEncryption bool
	)

	cmd := &cobra.Command{
		Use:   "support",
		Short: "Dump debug information about the cluster",
		Long: `Generated bundle contains the following debug information:

- For each node:

	- Kernel logs.
	- All Talos internal services logs.
	- All kube-system pods logs.
	- Talos COSI resources without secrets.
	- COSI runtime state graph.
	- Processes snapshot.
	- IO pressure snapshot.
	- Mounts list.
	- PCI devices info.
	- Talos version.

- For the cluster:

	- Kubernetes nodes and kube-system pods manifests.

Secrets never enter the bundle: sensitive resources are as os:reader sees
them (secrets masked), and no Kubernetes Secret is read. talosbox does not
encrypt bundles (Talos encrypts to Sidero Labs' keys); --no-encryption is
accepted for Talos's command lines.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if workers < 1 {
				return fmt.Errorf("--num-workers: %d, want at least 1", workers)
			}

			_ = noEncryption

			return g.WithSession(false, func(s *global.Session) error {
				if len(s.Nodes) == 0 {
					return errors.New("no nodes: name them with -n (or in the talosconfig context)")
				}

				b := &bundle{g: g, s: s, run: run, workers: workers, progress: cmd.ErrOrStderr(), verbose: verbose}

				f, err := os.Create(output)
				if err != nil {
					return err
				}

				if err := b.write(cmd.Context(), f); err != nil {
					f.Close() //nolint:errcheck

					return err
				}

				if err := f.Close(); err != nil {
					return err
				}

				fmt.Fprintf(cmd.ErrOrStderr(), "Support bundle is written to %s\n", output)

				return nil
			})
		},
	}

	fl := cmd.Flags()
	fl.StringVarP(&output, "output", "O", "support.zip", "output file to write support archive to")
	fl.IntVarP(&workers, "num-workers", "w", 1, "number of workers per node")
	fl.BoolVarP(&verbose, "verbose", "v", false, "verbose output")
	fl.BoolVar(&noEncryption, "no-encryption", false, "do not encrypt the support bundle (talosbox never does)")

	return cmd
}

type bundle struct {
	g        *global.Args
	s        *global.Session
	run      Runner
	workers  int
	progress io.Writer
	verbose  bool

	mu  sync.Mutex
	zip *zip.Writer
}

func (b *bundle) write(ctx context.Context, w io.Writer) error {
	b.zip = zip.NewWriter(w)

	var wg sync.WaitGroup

	for _, node := range b.s.Nodes {
		wg.Add(1)

		go func() {
			defer wg.Done()
			b.node(ctx, node)
		}()
	}

	wg.Wait()

	b.cluster(ctx)

	return b.zip.Close()
}

// add writes one file of the archive.
func (b *bundle) add(name string, data []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()

	f, err := b.zip.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, Modified: time.Now()})
	if err == nil {
		_, err = f.Write(data)
	}

	if err != nil {
		fmt.Fprintf(b.progress, "support: %s: %v\n", name, err)
	}
}

// baseArgs points a command at one node with this invocation's client
// settings.
func (b *bundle) baseArgs(node string) []string {
	var args []string

	if b.g.Talosconfig != "" {
		args = append(args, "--talosconfig", b.g.Talosconfig)
	}

	if b.g.Context != "" {
		args = append(args, "--context", b.g.Context)
	}

	if len(b.g.Endpoints) > 0 {
		args = append(args, "-e", strings.Join(b.g.Endpoints, ","))
	}

	return append(args, "-n", node)
}

// node collects one node's files with the workers.
func (b *bundle) node(ctx context.Context, node string) {
	files := b.plan(ctx, node)

	var (
		errs []string
		mu   sync.Mutex
		next = make(chan supportFile)
		wg   sync.WaitGroup
		done int
	)

	for range b.workers {
		wg.Add(1)

		go func() {
			defer wg.Done()

			for f := range next {
				var out, errOut bytes.Buffer

				code := b.run(ctx, append(b.baseArgs(node), f.args...), &out, &errOut)

				mu.Lock()
				done++

				switch {
				case code == 0:
					b.add(path.Join(node, f.name), out.Bytes())
				case !f.optional:
					errs = append(errs, fmt.Sprintf("%s: talosctl %s: %s", f.name, strings.Join(f.args, " "), strings.TrimSpace(errOut.String())))
				}

				if b.verbose {
					fmt.Fprintf(b.progress, "%s: %d/%d %s\n", node, done, len(files), f.name)
				}
				mu.Unlock()
			}
		}()
	}

	for _, f := range files {
		next <- f
	}

	close(next)
	wg.Wait()

	if len(errs) > 0 {
		sort.Strings(errs)
		b.add(path.Join(node, "errors.log"), []byte(strings.Join(errs, "\n")+"\n"))
	}

	fmt.Fprintf(b.progress, "%s: collected %d of %d files\n", node, len(files)-len(errs), len(files))
}

// plan lists a node's files: fixed ones, then one per service, resource
// type and Kubernetes container the node has.
func (b *bundle) plan(ctx context.Context, node string) []supportFile {
	files := []supportFile{
		{name: "summary", args: []string{"version"}},
		{name: "dmesg.log", args: []string{"dmesg"}},
		{name: "controller-runtime.log", args: []string{"logs", "controller-runtime"}},
		{name: "dependencies.dot", args: []string{"inspect", "dependencies"}},
		{name: "mounts", args: []string{"mounts"}},
		{name: "processes", args: []string{"processes"}},
		{name: "memory", args: []string{"memory"}},
		{name: "io", args: []string{"read", "/proc/pressure/io"}, optional: true},
		{name: "netstat", args: []string{"netstat", "-a", "-p"}},
		{name: "services", args: []string{"service"}},
		{name: "containers", args: []string{"containers"}, optional: true},
		{name: "kubernetes-containers", args: []string{"containers", "-k"}, optional: true},
		{name: "kubernetes-stats", args: []string{"stats", "-k"}, optional: true},
		{name: "etcd-members", args: []string{"etcd", "members"}, optional: true},
		{name: "etcd-status", args: []string{"etcd", "status"}, optional: true},
		{name: "etcd-alarms", args: []string{"etcd", "alarm", "list"}, optional: true},
	}

	ctx, c := b.s.Reach(ctx, node)

	if resp, err := c.Machine.ServiceList(ctx, &emptypb.Empty{}); err == nil {
		for _, msg := range resp.GetMessages() {
			for _, svc := range msg.GetServices() {
				files = append(files,
					supportFile{name: "service-logs/" + svc.GetId() + ".log", args: []string{"logs", svc.GetId()}},
					supportFile{name: "service-logs/" + svc.GetId() + ".state", args: []string{"service", svc.GetId()}})
			}
		}
	}

	if resp, err := c.Resource.Definitions(ctx, &emptypb.Empty{}); err == nil {
		for _, d := range resp.GetDefinitions() {
			files = append(files, supportFile{name: "resources/" + strings.ToLower(d.GetType()) + ".yaml", args: []string{"get", d.GetType(), "-o", "yaml", "--redact"}})
		}
	}

	resp, err := c.Machine.Containers(ctx, &machine.ContainersRequest{Namespace: k8sNamespace, Driver: common.ContainerDriver_CRI})
	if err == nil {
		for _, msg := range resp.GetMessages() {
			for _, ctr := range msg.GetContainers() {
				if ctr.GetId() == ctr.GetPodId() {
					continue // a sandbox
				}

				// namespace/pod:container → kubernetes-logs/namespace/pod/container.log
				files = append(files, supportFile{
					name: "kubernetes-logs/" + strings.ReplaceAll(ctr.GetId(), ":", "/") + ".log", args: []string{"logs", "-k", ctr.GetId()},
				})
			}
		}
	}

	return files
}

// cluster adds what the Kubernetes API says of the cluster, when the
// nodes have one.
func (b *bundle) cluster(ctx context.Context) {
	if len(b.s.ControlPlanes) == 0 {
		b.s.ControlPlanes = b.controlPlanes(ctx)
	}

	kube, err := b.s.Kube(ctx)
	if err != nil {
		if b.verbose {
			fmt.Fprintf(b.progress, "cluster: no Kubernetes objects: %v\n", err)
		}

		return
	}

	for name, q := range map[string]struct {
		gvr schema.GroupVersionResource
		ns  string
	}{
		"nodes.yaml":       {schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, ""},
		"systemPods.yaml":  {schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "kube-system"},
		"daemonSets.yaml":  {schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"}, "kube-system"},
		"deployments.yaml": {schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "kube-system"},
		"events.yaml":      {schema.GroupVersionResource{Version: "v1", Resource: "events"}, ""},
	} {
		data, err := kube.ListYAML(ctx, q.gvr, q.ns)
		if err != nil {
			fmt.Fprintf(b.progress, "cluster: %s: %v\n", name, err)

			continue
		}

		b.add("kubernetesResources/"+name, data)
	}
}

// controlPlanes are the nodes whose machine type is a control plane's,
// which serve the admin kubeconfig.
func (b *bundle) controlPlanes(ctx context.Context) []string {
	var out []string

	for _, node := range b.s.Nodes {
		ctx, c := b.s.Reach(ctx, node)

		resp, err := c.Resource.Get(ctx, &resource.GetRequest{Type: config.MachineTypeType, Id: config.MachineTypeID})
		if err == nil && (strings.Contains(string(resp.GetResource().GetSpecYaml()), "controlplane") || strings.Contains(string(resp.GetResource().GetSpecYaml()), "machineType: init")) {
			out = append(out, node)
		}
	}

	return out
}
