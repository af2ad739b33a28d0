package containers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/remotes/docker"
	"github.com/containerd/containerd/v2/core/remotes/docker/config"
	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
)

// criManagedLabel marks an image as the CRI's own, as the CRI labels the
// images it pulls, so pulled and CRI-pulled images are treated alike.
const criManagedLabel = "io.cri-containerd.image"

// Images lists the images in a namespace of the containerd at addr,
// sorted by name, with each one's size for this node's platform.
func Images(ctx context.Context, addr, namespace string) ([]Image, error) {
	c, ctx, err := dialNamespace(ctx, addr, namespace)
	if err != nil {
		return nil, err
	}
	defer c.Close()

	imgs, err := c.ImageService().List(ctx)
	if err != nil {
		return nil, rpcError(addr, "list images", err)
	}

	out := make([]Image, 0, len(imgs))

	for _, img := range imgs {
		size, err := imageSize(ctx, c, img)
		if err != nil && !errors.Is(err, errImageGone) {
			return nil, rpcError(addr, "image "+img.Name, err)
		}

		out = append(out, Image{Name: img.Name, Digest: img.Target.Digest.String(), Size: size, CreatedAt: img.CreatedAt})
	}

	slices.SortFunc(out, func(a, b Image) int { return strings.Compare(a.Name, b.Name) })

	return out, nil
}

// Pull pulls ref into a namespace of the containerd at addr and unpacks
// it, resolving registries through hostsDir, the hosts.toml tree
// ("<hostsDir>/<registry>/hosts.toml") machined renders from
// machine.registries, so mirrors are used as the CRI would. In k8s.io
// the image also gets the CRI's aliases (name@digest and its ID), so the
// kubelet finds it already there.
func Pull(ctx context.Context, addr, namespace, ref, hostsDir string) (Image, error) {
	if namespace == "" {
		return Image{}, errorf(ErrInvalid, "a containerd namespace is required")
	}

	named, err := reference.ParseDockerRef(ref)
	if err != nil {
		return Image{}, errorf(ErrInvalid, "image reference %q: %v", ref, err)
	}

	c, ctx, err := dialNamespace(ctx, addr, namespace)
	if err != nil {
		return Image{}, err
	}
	defer c.Close()

	hosts := config.ConfigureHosts(ctx, config.HostOptions{HostDir: config.HostDirFromRoot(hostsDir)})

	opts := []client.RemoteOpt{
		client.WithPullUnpack,
		client.WithResolver(docker.NewResolver(docker.ResolverOptions{Hosts: hosts})),
	}

	if namespace == K8sNamespace {
		opts = append(opts, client.WithPullLabel(criManagedLabel, "managed"))
	}

	img, err := c.Pull(ctx, named.String(), opts...)
	if err != nil {
		return Image{}, pullError(named, hosts, err)
	}

	if namespace == K8sNamespace {
		if err := criAliases(ctx, c, named, img); err != nil {
			return Image{}, fmt.Errorf("pull %s: %w", named, err)
		}
	}

	size, err := img.Size(ctx)
	if err != nil {
		return Image{}, fmt.Errorf("pull %s: size: %w", named, err)
	}

	meta := img.Metadata()

	return Image{Name: meta.Name, Digest: meta.Target.Digest.String(), Size: size, CreatedAt: meta.CreatedAt}, nil
}

// pullError names the endpoints the pull went to: a mirror that does not
// have the image answers 404, and the resolver's error for that is only
// "<ref>: not found", which does not say which registry was asked.
func pullError(named reference.Named, hosts docker.RegistryHosts, err error) error {
	var tried []string

	if hs, herr := hosts(reference.Domain(named)); herr == nil {
		for _, h := range hs {
			// A mirror without fallback is also the server: once.
			if u := h.Scheme + "://" + h.Host + h.Path; h.Capabilities.Has(docker.HostCapabilityPull) && !slices.Contains(tried, u) {
				tried = append(tried, u)
			}
		}
	}

	msg := fmt.Sprintf("pull %s: %v", named, err)
	if len(tried) > 0 {
		msg = fmt.Sprintf("pull %s (tried %s): %v", named, strings.Join(tried, ", "), err)
	}

	if errdefs.IsNotFound(err) {
		return &kindError{kind: ErrNotFound, msg: msg, cause: err}
	}

	return fmt.Errorf("%s%w", strings.TrimSuffix(msg, err.Error()), err)
}

// criAliases names the image as the CRI does after a pull: by
// name@digest and by its ID (the config digest), beside its tag.
func criAliases(ctx context.Context, c *client.Client, named reference.Named, img client.Image) error {
	target := img.Target()

	cfg, err := img.Config(ctx)
	if err != nil {
		return fmt.Errorf("image config: %w", err)
	}

	names := []string{named.Name() + "@" + target.Digest.String(), cfg.Digest.String()}

	for _, name := range names {
		if name == img.Name() {
			continue
		}

		alias := images.Image{Name: name, Target: target, Labels: img.Labels()}

		if _, err := c.ImageService().Create(ctx, alias); err != nil {
			if !errdefs.IsAlreadyExists(err) {
				return fmt.Errorf("alias %s: %w", name, err)
			}

			if _, err := c.ImageService().Update(ctx, alias, "target", "labels"); err != nil {
				return fmt.Errorf("alias %s: %w", name, err)
			}
		}
	}

	return nil
}

// errImageGone is what a listed image whose content is gone reports.
var errImageGone = errors.New("image content missing")

// imageSize is what img takes for this node's platform.
func imageSize(ctx context.Context, c *client.Client, img images.Image) (int64, error) {
	size, err := client.NewImage(c, img).Size(ctx)
	if errdefs.IsNotFound(err) {
		return 0, errImageGone
	}

	return size, err
}
