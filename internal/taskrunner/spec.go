package taskrunner

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/defaults"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	ctrs "github.com/talosbox/talosbox/internal/containers"
)

// snapshotter is the snapshotter the client uses when none is named,
// which is the one containers.Pull unpacks into: the namespace's default
// label, else containerd's default. It is named explicitly from here on,
// so the stale snapshot is looked for where the container puts it.
func snapshotter(ctx context.Context, c *client.Client) (string, error) {
	label, err := c.GetLabel(ctx, defaults.DefaultSnapshotterNSLabel)
	if err != nil {
		return "", fmt.Errorf("reading the namespace's default snapshotter: %w", err)
	}

	return cmp.Or(label, defaults.DefaultSnapshotter), nil
}

// image returns the image, pulled through containers.Pull (so registry
// mirrors apply) when the namespace does not have it, and unpacked into
// sn.
func (r *runner) image(ctx context.Context, c *client.Client, sn string) (client.Image, error) {
	// Pull stores the image under its normalized name, e.g.
	// docker.io/library/busybox:latest for "busybox".
	named, err := reference.ParseDockerRef(r.o.Image)
	if err != nil {
		return nil, fmt.Errorf("image reference %q: %w", r.o.Image, err)
	}

	img, err := c.GetImage(ctx, named.String())
	if errdefs.IsNotFound(err) {
		pulled, perr := ctrs.Pull(ctx, r.o.Socket, r.o.Namespace, named.String(), r.o.HostsDir)
		if perr != nil {
			return nil, perr // it names the image and the registries tried
		}

		img, err = c.GetImage(ctx, pulled.Name)
	}

	if err != nil {
		return nil, fmt.Errorf("image %s: %w", named, err)
	}

	// An image can be there without its layers unpacked for this
	// snapshotter (imported, or unpacked for another one).
	unpacked, err := img.IsUnpacked(ctx, sn)
	if err != nil {
		return nil, fmt.Errorf("image %s: checking it is unpacked: %w", named, err)
	}

	if !unpacked {
		if err := img.Unpack(ctx, sn); err != nil {
			return nil, fmt.Errorf("image %s: unpacking into %s: %w", named, sn, err)
		}
	}

	return img, nil
}

// specOpts build the container's OCI spec on containerd's default one.
// Their order matters: the image config comes first, so that the
// options' args and env override it.
func (r *runner) specOpts(img client.Image) []oci.SpecOpts {
	o := r.o
	opts := []oci.SpecOpts{oci.WithImageConfig(img)}

	if len(o.Args) > 0 {
		opts = append(opts, oci.WithProcessArgs(o.Args...))
	}

	if len(o.Env) > 0 {
		opts = append(opts, oci.WithEnv(o.Env))
	}

	if o.HostNetwork {
		opts = append(opts, oci.WithHostNamespace(specs.NetworkNamespace))

		// Sharing the host's network means resolving names as the host
		// does, as Talos's runner and the CRI do for host-network
		// containers; a file the host lacks is left to the image.
		if exists("/etc/hosts") {
			opts = append(opts, oci.WithHostHostsFile)
		}

		if exists("/etc/resolv.conf") {
			opts = append(opts, oci.WithHostResolvconf)
		}
	}

	if o.HostPID {
		opts = append(opts, oci.WithHostNamespace(specs.PIDNamespace))
	}

	if o.Privileged {
		// Before the mounts: WithPrivileged makes every sysfs and cgroup
		// mount in the spec writable, and one the options give read-only
		// must stay so.
		opts = append(opts, oci.WithPrivileged, oci.WithAllDevicesAllowed, oci.WithHostDevices)
	}

	if len(o.Mounts) > 0 {
		opts = append(opts, withMounts(o.Mounts))
	}

	if o.CgroupsPath != "" {
		opts = append(opts, oci.WithCgroup(o.CgroupsPath))
	}

	if o.RootfsPropagation != "" {
		opts = append(opts, withRootfsPropagation(o.RootfsPropagation))
	}

	if o.OOMScoreAdj != 0 {
		opts = append(opts, withOOMScoreAdj(o.OOMScoreAdj))
	}

	return opts
}

// withMounts adds mounts, dropping the default mounts at the same
// destinations first, as the CRI does: a bind of the host's /dev or /sys
// replaces the default tmpfs or sysfs instead of being stacked on it.
func withMounts(mounts []specs.Mount) oci.SpecOpts {
	return func(ctx context.Context, c oci.Client, cnt *containers.Container, s *oci.Spec) error {
		s.Mounts = slices.DeleteFunc(s.Mounts, func(m specs.Mount) bool {
			return slices.ContainsFunc(mounts, func(n specs.Mount) bool { return n.Destination == m.Destination })
		})

		return oci.WithMounts(mounts)(ctx, c, cnt, s)
	}
}

// withRootfsPropagation sets the rootfs mount propagation; containerd
// has no helper for it. "shared" lets mounts made inside (the kubelet's
// volume mounts) reach the host.
func withRootfsPropagation(p string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}

		s.Linux.RootfsPropagation = p

		return nil
	}
}

// withOOMScoreAdj sets the process's OOM score adjustment; containerd has
// no helper for it.
func withOOMScoreAdj(adj int) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Process == nil {
			s.Process = &specs.Process{}
		}

		s.Process.OOMScoreAdj = &adj

		return nil
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
