package mgmt

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/render"
)

type validateOptions struct {
	file, mode string
	strict     bool

	renderDir     string
	withSecrets   bool
	hostname      string
	nodeIPs       []string
	kernelCmdline string
	diskSize      string
}

func NewValidateCommand() *cobra.Command {
	var o validateOptions

	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Validate config",
		Long: `Decode the machine config strictly (an unknown field is an error with its line)
and check it for the given mode, printing every problem at once. Warnings are
printed too; --strict turns them into errors. A config is valid when a node can
also render everything it needs from it (static pods, kubelet, bootstrap
manifests, etcd, containerd, grub.cfg, machine.files): those renderers run too.

--render DIR writes what they render, without a node, so that a config change
can be reviewed and diffed before it is applied:

  static-pods/        the control plane's pods, as machined serves them to the kubelet
  manifests/          the bootstrap manifests and inline manifests (extra manifests
                      are listed in extra-manifests.yaml, not downloaded)
  services/           the kubelet's and etcd's command lines, the kubelet's image
  fs/                 files at their path on the node: the kubelet's configuration,
                      the control plane's config files, containerd and CRI configs,
                      the registry hosts tree, machine.files
  boot/               grub.cfg and the install disk's partitions (metal)
  sysctls.conf        machine.sysctls
  index.yaml          every file with its path and mode on the node, the
                      placeholders used and notes

What only a running node has is replaced by placeholders, listed in
index.yaml: its hostname (--hostname), addresses (--node-ip), kernel command
line (--kernel-cmdline) and disk size (--disk-size); the versions of the
certificates it generates and the static pod server's port. Secrets are
redacted as for an os:reader unless --with-secrets; every file is 0600. DIR
must be empty or hold an earlier render, whose files this one does not have
are removed.`,
		Example: `  talosctl validate --config controlplane.yaml --mode metal --render out/
  talosctl validate -c worker.yaml -m container --render out/ --node-ip 10.5.0.3 --hostname worker-1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runValidate(cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}

	cmd.Flags().StringVarP(&o.file, "config", "c", "", "the path of the config file")
	cmd.Flags().StringVarP(&o.mode, "mode", "m", "", "the mode to validate the config for (valid values are metal, container, and cloud)")
	cmd.Flags().BoolVar(&o.strict, "strict", false, "treat validation warnings as errors")
	cmd.Flags().StringVar(&o.renderDir, "render", "", "write what a node would render from the config into this directory")
	cmd.Flags().BoolVar(&o.withSecrets, "with-secrets", false, "with --render, write the config's secrets in clear instead of "+configs.Redacted)
	cmd.Flags().StringVar(&o.hostname, "hostname", "", "with --render, the node's hostname (default machine.network.hostname, else <cluster>-controlplane-1 or -worker-1)")
	cmd.Flags().StringSliceVar(&o.nodeIPs, "node-ip", nil, "with --render, the node's addresses (default: a control plane's endpoint IP, else the config's static addresses, else 192.0.2.10 or 192.0.2.20)")
	cmd.Flags().StringVar(&o.kernelCmdline, "kernel-cmdline", "", "with --render, the command line the node booted with, which grub.cfg starts from (default \""+render.DefaultKernelCmdline+"\")")
	cmd.Flags().StringVar(&o.diskSize, "disk-size", "", "with --render, the install disk's size, such as 8GiB or 512GB (default "+humanize.IBytes(render.DefaultDiskSize)+")")
	cmd.MarkFlagRequired("config") //nolint:errcheck
	cmd.MarkFlagRequired("mode")   //nolint:errcheck

	return cmd
}

func runValidate(stdout, stderr io.Writer, o validateOptions) error {
	m, err := configs.ParseMode(o.mode)
	if err != nil {
		return err
	}

	ropts, err := o.renderOptions(m)
	if err != nil {
		return err
	}

	data, err := os.ReadFile(o.file)
	if err != nil {
		return fmt.Errorf("read config: %w", err)
	}

	// configs' rules, then the renderers (on a config the rules accept:
	// on any other they would mostly repeat their findings), as the node
	// validates an apply, with the node's inputs given here.
	cfg, warnings, err := configs.Load(data, m, configs.WithStrict(o.strict), configs.WithChecks(render.Validate(
		render.WithHostname(ropts.Hostname), render.WithNodeIPs(ropts.NodeIPs...),
		render.WithKernelCmdline(ropts.KernelCmdline), render.WithDiskSize(ropts.DiskSize))))
	if cfg == nil {
		return fmt.Errorf("%s: decode: %w", o.file, err)
	}

	for _, w := range warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}

	if err != nil {
		if _, ok := errors.AsType[*configs.Errors](err); ok {
			return fmt.Errorf("%s is invalid for %s mode:\n%w", o.file, m, err)
		}

		return err
	}

	fmt.Fprintf(stdout, "%s is valid for %s mode\n", o.file, m)

	if o.renderDir == "" {
		return nil
	}

	arts, err := render.Render(cfg, ropts)
	if err != nil {
		return fmt.Errorf("%s: render: %w", o.file, err)
	}

	if err := arts.Write(o.renderDir); err != nil {
		return err
	}

	for _, a := range arts.List {
		fmt.Fprintf(stdout, "wrote %s\n", filepath.Join(o.renderDir, filepath.FromSlash(a.Path)))
	}

	secrets := "secrets redacted"
	if o.withSecrets {
		secrets = "secrets in clear"
	}

	fmt.Fprintf(stdout, "rendered %d files for %s mode into %s (%s; placeholders and notes in %s)\n",
		len(arts.List), m, o.renderDir, secrets, filepath.Join(o.renderDir, render.IndexPath))

	return nil
}

// renderOptions are the flags' node inputs, checked before anything is
// read so that a typo fails fast.
func (o validateOptions) renderOptions(m configs.Mode) (render.Options, error) {
	ro := render.Options{Mode: m, Hostname: o.hostname, KernelCmdline: o.kernelCmdline, WithSecrets: o.withSecrets}

	for _, s := range o.nodeIPs {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return ro, fmt.Errorf("--node-ip %q: %w", s, err)
		}

		ro.NodeIPs = append(ro.NodeIPs, a)
	}

	if o.diskSize != "" {
		n, err := humanize.ParseBytes(o.diskSize)
		if err != nil || n == 0 || n > 1<<62 {
			return ro, fmt.Errorf("--disk-size %q: want a size such as 8GiB", o.diskSize)
		}

		ro.DiskSize = int64(n)
	}

	return ro, nil
}
