package containers

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
)

// Import reads an image archive from r into a namespace of the containerd
// at addr and unpacks every image it names: a `docker save` archive
// (manifest.json, names from RepoTags) or an OCI image layout as a tar
// (index.json, names from io.containerd.image.name or a full reference in
// org.opencontainers.image.ref.name), as `ctr images import` and kind's
// `load docker-image` take them. In k8s.io each image is labelled and
// aliased as the CRI does after a pull, so the kubelet finds it already
// there and a pod with the default pull policy starts without a registry.
// Only this node's platform is imported.
func Import(ctx context.Context, addr, namespace string, r io.Reader) ([]Image, error) {
	if namespace == "" {
		return nil, errorf(ErrInvalid, "a containerd namespace is required")
	}

	c, ctx, err := dialNamespace(ctx, addr, namespace)
	if err != nil {
		return nil, err
	}
	defer c.Close()

	opts := []client.ImportOpt{client.WithImageRefTranslator(ociRefName)}
	if namespace == K8sNamespace {
		opts = append(opts, client.WithImageLabels(map[string]string{criManagedLabel: "managed"}))
	}

	imported, err := c.Import(ctx, r, opts...)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}

		// containerd's own failures (a full content store, a store it
		// cannot write) come back as its error kinds over gRPC; what the
		// archive reader in this process finds wrong is a plain error.
		if daemonFault(err) {
			return nil, fmt.Errorf("import: %w", err)
		}

		// What the stream held is not an image archive: the caller's
		// input, not the node, is at fault.
		return nil, &kindError{kind: ErrInvalid, msg: "import: not a docker save or OCI image archive: " + err.Error(), cause: err}
	}

	var out []Image

	for _, meta := range imported {
		// An unnamed OCI manifest (ref.name only a tag) has no name the CRI
		// could find; the ref translator gave it "" and Import skipped it.
		named, err := reference.ParseDockerRef(meta.Name)
		if err != nil {
			return nil, errorf(ErrInvalid, "import: the archive names image %q, which is not a reference: %v", meta.Name, err)
		}

		img := client.NewImage(c, meta)

		if err := img.Unpack(ctx, ""); err != nil {
			if errdefs.IsNotFound(err) {
				return nil, &kindError{kind: ErrInvalid, msg: fmt.Sprintf("import %s: the archive lacks this node's platform or a layer: %v", named, err), cause: err}
			}

			return nil, fmt.Errorf("import %s: unpack: %w", named, err)
		}

		if namespace == K8sNamespace {
			if err := criAliases(ctx, c, named, img); err != nil {
				return nil, fmt.Errorf("import %s: %w", named, err)
			}
		}

		size, err := img.Size(ctx)
		if err != nil {
			return nil, fmt.Errorf("import %s: size: %w", named, err)
		}

		out = append(out, Image{Name: meta.Name, Digest: meta.Target.Digest.String(), Size: size, CreatedAt: meta.CreatedAt})
	}

	if len(out) == 0 {
		return nil, errorf(ErrInvalid, "import: the archive names no image: an OCI layout needs a full reference (registry/name:tag) in io.containerd.image.name or org.opencontainers.image.ref.name")
	}

	return out, nil
}

// daemonFault says whether an import failed in containerd rather than in
// reading the archive.
func daemonFault(err error) bool {
	for _, is := range []func(error) bool{
		errdefs.IsUnknown, errdefs.IsInternal, errdefs.IsUnavailable, errdefs.IsResourceExhausted,
		errdefs.IsDataLoss, errdefs.IsAborted, errdefs.IsFailedPrecondition, errdefs.IsPermissionDenied,
	} {
		if is(err) {
			return true
		}
	}

	return false
}

// ociRefName keeps an OCI layout's org.opencontainers.image.ref.name only
// when it is a whole reference, normalized as the CRI names images
// ("myapp:dev" is docker.io/library/myapp:dev). The OCI spec lets it be a
// bare tag ("dev"), which names nothing the kubelet could ask for.
func ociRefName(name string) string {
	if !strings.ContainsAny(name, ":/@") {
		return ""
	}

	named, err := reference.ParseDockerRef(name)
	if err != nil {
		return ""
	}

	return named.String()
}

// Remove deletes an image by reference from a namespace of the containerd
// at addr, with the aliases the CRI gave it (name@digest and its ID) when
// no other name still points at the same image.
func Remove(ctx context.Context, addr, namespace, ref string) error {
	named, err := reference.ParseDockerRef(ref)
	if err != nil {
		return errorf(ErrInvalid, "image reference %q: %v", ref, err)
	}

	c, ctx, err := dialNamespace(ctx, addr, namespace)
	if err != nil {
		return err
	}
	defer c.Close()

	is := c.ImageService()

	meta, err := is.Get(ctx, named.String())
	if err != nil {
		if errdefs.IsNotFound(err) {
			return errorf(ErrNotFound, "image %s: not found", named)
		}

		return rpcError(addr, "image "+named.String(), err)
	}

	all, err := is.List(ctx)
	if err != nil {
		return rpcError(addr, "list images", err)
	}

	// Other tags of the same image keep the aliases.
	var aliases []string

	shared := false

	for _, other := range all {
		switch {
		case other.Name == meta.Name || other.Target.Digest != meta.Target.Digest:
		case isDigestName(other.Name) || strings.Contains(other.Name, "@"):
			aliases = append(aliases, other.Name)
		default:
			shared = true
		}
	}

	if !shared {
		for _, a := range aliases {
			if err := is.Delete(ctx, a); err != nil && !errdefs.IsNotFound(err) {
				return rpcError(addr, "remove "+a, err)
			}
		}
	}

	if err := is.Delete(ctx, meta.Name, images.SynchronousDelete()); err != nil && !errdefs.IsNotFound(err) {
		return rpcError(addr, "remove "+meta.Name, err)
	}

	return nil
}
